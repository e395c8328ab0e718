//! What every Kafka API handler shares: its request's context ([`Ctx`]: the broker, the
//! connection's addresses, principal and the request's version), the reply it makes
//! ([`Reply`]), committing a handler's ops under the node's address lease, and the small
//! conversions between catalog values and protocol ones. Lower layers (groups,
//! transactions, retention, authorization) use it too, so it stands below `api`.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use kafka_protocol::messages::ResponseKind;

use crate::Broker;

/// A response in the making; `None` sends nothing (produce with acks=0).
pub type Reply = Pin<Box<dyn Future<Output = Option<ResponseKind>> + Send>>;

/// What a handler knows of its request.
#[derive(Clone)]
pub struct Ctx {
    /// The broker.
    pub broker: Arc<Broker>,
    /// This connection's node id.
    pub node: i32,
    /// The address the client reached us on.
    pub local: SocketAddr,
    /// The client's address.
    pub peer: SocketAddr,
    /// The version the handler serves: the request's, or for a version Kafka 4.0 removed
    /// the oldest the codec has (`crate::legacy::handler_version`).
    pub version: i16,
    /// The version on the wire, where a handler answers a removed version differently
    /// (Fetch v0-3's message sets).
    pub wire_version: i16,
    /// Client id from the request header.
    pub client_id: Option<String>,
    /// The connection's authenticated principal (`None`: `ANONYMOUS`).
    pub principal: Option<std::sync::Arc<str>>,
    /// Whether the connection is over TLS (`aws:SecureTransport` in policies).
    pub secure: bool,
}

impl Ctx {
    /// Whether this node leads the partition (on a cluster node: through an address
    /// whose lease it still holds).
    pub fn leads(&self, topic: &str, partition: i32) -> bool {
        self.broker.cluster.leader(topic, partition) == self.node
            && self.broker.holdings.holds(self.node)
    }

    /// The leases a write through this connection is made under: in a cluster, its
    /// address at the epoch this node holds it, or at none (-1, which the catalog refuses
    /// as fenced) once the node lost it; nothing on a single node.
    pub fn leases(&self) -> Vec<catalog::Lease> {
        match &self.broker.config.address_leases {
            None => Vec::new(),
            Some(l) => vec![catalog::Lease {
                address: self.local.to_string(),
                epoch: l.epoch(self.local).unwrap_or(-1),
            }],
        }
    }

    /// Whether this node coordinates the group (on a cluster node: through an address
    /// whose lease it still holds).
    pub fn coordinates(&self, group: &str) -> bool {
        self.broker.cluster.coordinator(group) == self.node && self.broker.holdings.holds(self.node)
    }
}

/// A response that is ready now.
pub fn ready(r: ResponseKind) -> Reply {
    Box::pin(std::future::ready(Some(r)))
}

/// Submits `ops` as one transaction, if there are any; the future yields the Kafka
/// error of a failed commit.
pub fn commit_ops(
    catalog: &dyn catalog::Catalog,
    ops: Vec<catalog::Op>,
) -> impl Future<Output = Option<kafka_protocol::error::ResponseError>> + Send + use<> {
    commit_under(catalog, ops, Vec::new())
}

/// [`commit_ops`] under a cluster node's `leases` (`catalog::Transaction::under`).
pub fn commit_under(
    catalog: &dyn catalog::Catalog,
    ops: Vec<catalog::Op>,
    leases: Vec<catalog::Lease>,
) -> impl Future<Output = Option<kafka_protocol::error::ResponseError>> + Send + use<> {
    let commit =
        (!ops.is_empty()).then(|| catalog.commit(catalog::Transaction::new(ops).under(leases)));
    async move {
        match commit {
            Some(c) => c.await.err().map(|e| crate::error::from_catalog(&e)),
            None => None,
        }
    }
}

/// A part's result once its transaction is done: a part that passed its checks fails
/// with the transaction.
pub fn unless_failed<T>(
    r: Result<T, kafka_protocol::error::ResponseError>,
    failed: Option<kafka_protocol::error::ResponseError>,
) -> Result<T, kafka_protocol::error::ResponseError> {
    match (r, failed) {
        (Ok(_), Some(e)) => Err(e),
        (r, _) => r,
    }
}

/// Kafka's topic UUID for a catalog topic id.
pub fn uuid(id: u128) -> uuid::Uuid {
    uuid::Uuid::from_u128(id)
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A protocol string.
pub fn sb(s: &str) -> kafka_protocol::protocol::StrBytes {
    kafka_protocol::protocol::StrBytes::from_string(s.to_string())
}

/// A protocol topic name.
pub fn topic_name(s: &str) -> kafka_protocol::messages::TopicName {
    kafka_protocol::messages::TopicName(sb(s))
}

/// Splits a catalog lookup into what was found and, when the catalog could not be read,
/// the error to answer with: a storage error, never "unknown topic" (which a client
/// retries as if the topic were still being created).
pub(crate) fn found<T>(
    lookup: catalog::CatalogResult<Option<T>>,
) -> (Option<T>, Option<kafka_protocol::error::ResponseError>) {
    match lookup {
        Ok(found) => (found, None),
        Err(e) => (None, Some(crate::error::from_catalog(&e))),
    }
}
