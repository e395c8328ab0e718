//! Eddy's Kafka protocol server. The wire codec is the `kafka-protocol` crate;
//! [`connection`] owns framing and ordering, [`api`] has one module per Kafka API, and
//! every change goes through one catalog transaction.

pub mod api;
mod audit;
pub mod authz;
pub mod batch;
pub mod cluster;
pub mod compaction;
pub mod configs;
pub mod connection;
pub mod context;
pub mod error;
pub mod fetch_session;
pub mod group;
pub mod holdings;
pub mod legacy;
pub mod message_set;
pub mod metrics;
pub mod offsets_topic;
pub mod quota;
pub mod retention;
pub mod sasl;
pub mod schema_validation;
pub mod txn;

use std::net::SocketAddr;
use std::sync::Arc;

use catalog::Catalog;
use tokio::sync::Semaphore;

pub use cluster::Cluster;
pub use holdings::Holdings;
pub use metrics::BrokerMetrics;

/// Which of the cluster's addresses this node holds, and at which epoch: a cluster node's
/// lease manager answers (a single node has none, and holds every address).
pub trait AddressLeases: Send + Sync + std::fmt::Debug {
    /// The epoch this node holds `address` at, or none.
    fn epoch(&self, address: SocketAddr) -> Option<i64>;
}

/// Broker settings.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// Every Kafka listener address (each is a broker).
    pub listeners: Vec<SocketAddr>,
    /// Largest request frame accepted, in bytes.
    pub max_frame_bytes: usize,
    /// Requests processed at once per connection (responses stay in order).
    pub max_in_flight: usize,
    /// Request bytes the whole process holds at once, from reading a frame until its
    /// response is written: when they are spent, connections stop reading (TCP pushes
    /// back on the clients) instead of the process growing.
    pub max_request_bytes_in_flight: usize,
    /// A connection that sends no request for this long is closed (Kafka's
    /// `connections.max.idle.ms`).
    pub idle_timeout: std::time::Duration,
    /// Create unknown topics on metadata requests and produce.
    pub auto_create_topics: bool,
    /// Partitions of auto-created topics and the `num.partitions` default.
    pub default_partitions: u32,
    /// Cluster id reported in metadata.
    pub cluster_id: String,
    /// The data dir, reported as every node's one log dir (DescribeLogDirs).
    pub log_dir: String,
    /// Group coordinator settings.
    pub groups: group::state::GroupConfig,
    /// How often consumer lag is measured for the metrics.
    pub lag_interval: std::time::Duration,
    /// How often retention deletes what topics no longer keep (Kafka's
    /// `log.retention.check.interval.ms`).
    pub retention_check_interval: std::time::Duration,
    /// How often compacted partitions are looked at (Kafka's `log.cleaner.backoff.ms`);
    /// a config change wakes the cleaner at once.
    pub compaction_check_interval: std::time::Duration,
    /// Memory bounds of one compaction pass.
    pub compaction: compaction::Limits,
    /// Transaction coordinator settings.
    pub txn: txn::TxnConfig,
    /// Fetch sessions kept at once (Kafka's `max.incremental.fetch.session.cache.slots`).
    pub fetch_session_slots: usize,
    /// The window client quotas are measured over.
    pub quota: quota::QuotaConfig,
    /// Mirror committed offsets into `__consumer_offsets` ([`offsets_topic`]).
    pub offsets_topic: bool,
    /// Listener classes (a security protocol and its addresses, see [`Cluster`]); empty
    /// for one plaintext class of every listener.
    pub listener_classes: Vec<(String, Vec<SocketAddr>)>,
    /// The security protocol of each listener class named otherwise (`INTERNAL`), for
    /// `listener.security.protocol.map`.
    pub listener_protocols: Vec<(String, String)>,
    /// What clients that reached a listener address are told to connect to (Kafka's
    /// `advertised.listeners`), by bound address; others advertise their own.
    pub advertised_listeners: Vec<(SocketAddr, String, u16)>,
    /// SASL mechanisms enabled on SASL listeners.
    pub sasl_mechanisms: Vec<sasl::Mechanism>,
    /// How long a SASL session lasts before re-authentication (Kafka's
    /// `connections.max.reauth.ms`); `None`: it does not expire.
    pub sasl_session_lifetime: Option<std::time::Duration>,
    /// Eddy's users and policies: SASL checks credentials and every request its
    /// principal's policies against it (`None`: a directory in memory with no users).
    pub directory: Option<Arc<iam::Directory>>,
    /// Whether a request no policy statement matches is refused (Kafka's
    /// `allow.everyone.if.no.acl.found=false`); by default it is allowed.
    pub deny_unless_allowed: bool,
    /// The broker view this broker serves (`default` without views): its name is in
    /// policy resources (`vast:kafka:topic:VIEW:TOPIC`).
    pub view: String,
    /// The principals allowed on this view (empty: every principal).
    pub view_users: Vec<String>,
    /// Per-view request metrics, shared by every view's broker.
    pub view_metrics: Option<metrics::ViewMetrics>,
    /// A cluster node's address leases: its Kafka writes are made under the lease of the
    /// address they came through (`catalog::Transaction::under`).
    pub address_leases: Option<Arc<dyn AddressLeases>>,
}

impl BrokerConfig {
    /// The brokers these listeners make: one plaintext class of [`Self::listeners`]
    /// unless [`Self::listener_classes`] names classes.
    pub fn cluster(&self) -> Cluster {
        let cluster = if self.listener_classes.is_empty() {
            Cluster::new(self.listeners.clone())
        } else {
            // Checked when the configuration was made (`Cluster::with_classes`).
            Cluster::with_classes(self.listener_classes.clone())
                .unwrap_or_else(|_| Cluster::new(self.listeners.clone()))
        };
        cluster.with_advertised(
            self.advertised_listeners.clone(),
            self.listener_protocols.clone(),
        )
    }

    /// Defaults for these listeners.
    pub fn new(listeners: Vec<SocketAddr>) -> Self {
        Self {
            listeners,
            max_frame_bytes: 100 << 20,
            max_in_flight: 16,
            max_request_bytes_in_flight: 256 << 20,
            idle_timeout: std::time::Duration::from_secs(600),
            auto_create_topics: false,
            default_partitions: 1,
            cluster_id: "eddy".into(),
            log_dir: "eddy-data".into(),
            groups: Default::default(),
            lag_interval: std::time::Duration::from_secs(10),
            retention_check_interval: std::time::Duration::from_secs(300),
            compaction_check_interval: std::time::Duration::from_secs(15),
            compaction: compaction::Limits {
                map_bytes: 64 << 20,
                max_pass_bytes: 16 << 20,
            },
            txn: txn::TxnConfig::default(),
            fetch_session_slots: 1000,
            quota: quota::QuotaConfig::default(),
            listener_classes: Vec::new(),
            listener_protocols: Vec::new(),
            advertised_listeners: Vec::new(),
            sasl_mechanisms: sasl::Mechanism::ALL.to_vec(),
            sasl_session_lifetime: None,
            directory: None,
            deny_unless_allowed: false,
            view: authz::DEFAULT_VIEW.to_owned(),
            view_users: Vec::new(),
            view_metrics: None,
            offsets_topic: false,
            address_leases: None,
        }
    }
}

/// The broker: shared by every listener and connection.
pub struct Broker {
    /// The catalog everything is stored in.
    pub catalog: Arc<dyn Catalog>,
    /// The brokers and leader placement.
    pub cluster: Cluster,
    /// Which brokers' work this node does (all of them but on a cluster node).
    pub holdings: Holdings,
    /// Settings.
    pub config: BrokerConfig,
    /// Metrics.
    pub metrics: BrokerMetrics,
    /// The consumer group coordinator.
    pub groups: Arc<group::GroupCoordinator>,
    /// The transaction coordinator.
    pub txns: Arc<txn::TxnCoordinator>,
    /// Fetch sessions (KIP-227).
    pub fetch_sessions: fetch_session::FetchSessions,
    /// Client quotas and the rates they are enforced on.
    pub quotas: quota::Quotas,
    /// The request bytes still free of [`BrokerConfig::max_request_bytes_in_flight`], in
    /// permits of one byte.
    pub request_budget: Arc<Semaphore>,
    /// Wakes the log cleaner (a topic's configs changed).
    pub compaction_wake: tokio::sync::Notify,
    /// Seals topic tables, so DeleteRecords can wait for an expansion to read what it
    /// removes (none: tables are not served).
    pub table_sealer: std::sync::OnceLock<Arc<dyn TableSealer>>,
    /// Checks records of topics with schema validation on (none: no registry served,
    /// and such topics refuse every produce).
    pub schema_validator: std::sync::OnceLock<Arc<dyn schema_validation::SchemaValidator>>,
    /// SASL mechanisms, session lifetime and the users' credentials.
    pub sasl: Arc<sasl::Sasl>,
    /// Users and policies.
    pub directory: Arc<iam::Directory>,
}

/// Brings a topic's table, and so the topic's expansions, up to the topic's end.
pub trait TableSealer: Send + Sync {
    /// Seals `topic`'s committed records into its table.
    fn seal<'a>(
        &'a self,
        topic: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>>;
}

impl Broker {
    /// Before records of `topic` are removed (DeleteRecords, DeleteTopics): when it has
    /// an expansion, seals its table, so the expansion has read them. A failure is only
    /// logged: the catalog refuses to remove what an expansion has not read.
    pub async fn seal_expanded(&self, topic: &str) {
        let Some(sealer) = self.table_sealer.get() else {
            return;
        };
        if self
            .catalog
            .iceberg()
            .expansions(topic)
            .await
            .is_ok_and(|e| !e.is_empty())
            && let Err(e) = sealer.seal(topic).await
        {
            tracing::warn!(topic, error = %e, "sealing an expanded topic before removing records failed");
        }
    }

    /// Brings the coordinators in line with the brokers this node now holds (a cluster
    /// node's leases changed): the groups and transactional ids of brokers it lost are
    /// dropped from memory, and those of brokers it gained that have members or an open
    /// transaction are loaded from the catalog, their timers running from now.
    pub async fn hand_over(&self) {
        self.groups.hand_over().await;
        match self.txns.hand_over().await {
            Ok(n) if n > 0 => tracing::info!(open = n, "took over open transactions"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "taking over transactions failed"),
        }
    }

    /// A broker over `catalog`. Call inside the runtime: groups that had members when
    /// the server stopped come back with their session timers running.
    pub async fn new(catalog: Arc<dyn Catalog>, mut config: BrokerConfig) -> Arc<Self> {
        let directory = config
            .directory
            .take()
            .unwrap_or_else(|| Arc::new(iam::Directory::in_memory(&[])));
        directory.set_kafka_deny_unless_allowed(config.deny_unless_allowed);
        let sasl = Arc::new(
            sasl::Sasl::new(
                config.sasl_mechanisms.clone(),
                config.sasl_session_lifetime,
                directory.clone(),
            )
            .with_allowed(config.view_users.clone()),
        );
        let metrics = BrokerMetrics::default();
        let holdings = Holdings::new(config.cluster(), config.address_leases.clone());
        let groups = Arc::new(group::GroupCoordinator::new(
            catalog.clone(),
            config.groups.clone(),
            metrics.clone(),
            holdings.clone(),
        ));
        match groups.restore().await {
            Ok(n) if n > 0 => tracing::info!(groups = n, "restored consumer groups with members"),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "restoring consumer groups failed"),
        }
        let txns = Arc::new(txn::TxnCoordinator::new(
            catalog.clone(),
            config.txn.clone(),
            metrics.clone(),
            holdings.clone(),
        ));
        match txns.restore().await {
            Ok(n) if n > 0 => tracing::info!(open = n, "restored open transactions"),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "restoring transactions failed"),
        }
        let fetch_sessions = fetch_session::FetchSessions::new(
            config.fetch_session_slots,
            metrics.fetch_sessions.clone(),
            metrics.fetch_session_evictions.clone(),
        );
        let stored_quotas = catalog.kafka().client_quotas().await.unwrap_or_else(|e| {
            tracing::error!(error = %e, "reading the client quotas failed; none are enforced");
            Vec::new()
        });
        let quotas = quota::Quotas::new(config.quota.clone(), stored_quotas);
        // A frame larger than the budget could never be read.
        let budget = config
            .max_request_bytes_in_flight
            .max(config.max_frame_bytes)
            .min(Semaphore::MAX_PERMITS);
        Arc::new(Self {
            catalog,
            cluster: config.cluster(),
            holdings,
            config,
            metrics,
            groups,
            txns,
            fetch_sessions,
            quotas,
            request_budget: Arc::new(Semaphore::new(budget)),
            compaction_wake: tokio::sync::Notify::new(),
            table_sealer: std::sync::OnceLock::new(),
            schema_validator: std::sync::OnceLock::new(),
            sasl,
            directory,
        })
    }
}
