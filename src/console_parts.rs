//! What the web console (the `console` crate) takes from this binary: the S3 front its
//! S3 requests go through ([`crate::s3::S3Front`]), the node's status for the overview
//! page (drives with health and capacity, the Kafka addresses and who holds them), and
//! the sampler of its live graphs over the node's own metrics.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::metrics::Metrics;
use crate::node_catalog::NodeCatalog;

#[async_trait::async_trait]
impl console::S3Front for crate::s3::S3Front {
    async fn call(&self, req: http::Request<s3s::Body>, peer: SocketAddr) -> console::Reply {
        match self.handle(req, peer).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = ?e, "an S3 request of the console failed");
                let mut r = http::Response::new(s3s::Body::from(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>InternalError</Code><Message>the request failed</Message></Error>".to_owned(),
                ));
                *r.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
                r
            }
        }
    }

    async fn would_allow(&self, user: &str, action: &str, bucket: &str, key: Option<&str>) -> bool {
        self.would_allow(user, action, bucket, key).await
    }

    fn host(&self) -> String {
        self.host()
    }
}

/// The overview page's node status.
pub struct NodeView {
    /// The node's catalog and drives.
    pub catalog: Arc<NodeCatalog>,
    /// The erasure code, as `k+m`.
    pub erasure: String,
    /// The cluster's Kafka addresses and the leases this node holds (a PostgreSQL
    /// cluster), or this node's own addresses.
    pub addresses: Addresses,
    /// The background scrub's progress (the heal backlog).
    pub scrub: crate::scrub::ScrubMetrics,
    /// The broker views besides the default one, as the config gives them.
    pub views: Vec<crate::config::ViewConfig>,
}

/// Whose Kafka addresses the overview lists.
pub enum Addresses {
    /// A single node: all of them are its own.
    Own(Vec<SocketAddr>),
    /// A cluster node: the cluster's, with the leases it holds.
    Cluster(Vec<SocketAddr>, Arc<crate::cluster::Epochs>),
}

#[async_trait::async_trait]
impl console::NodeStatus for NodeView {
    async fn status(&self) -> serde_json::Value {
        let health = self.catalog.drives().health();
        let status = self.catalog.state(&health);
        let drives: Vec<_> = health
            .into_iter()
            .map(|h| {
                let space = crate::metrics::drive_space(&h.path);
                serde_json::json!({
                    "index": h.index,
                    "path": h.path.display().to_string(),
                    "online": h.online,
                    "errors": h.errors,
                    "capacity_bytes": space.map(|s| s.0),
                    "free_bytes": space.map(|s| s.1),
                })
            })
            .collect();
        let nodes: Vec<_> = match &self.addresses {
            Addresses::Own(addrs) => addrs
                .iter()
                .map(|a| serde_json::json!({"address": a.to_string(), "holder": "this node"}))
                .collect(),
            Addresses::Cluster(addrs, epochs) => addrs
                .iter()
                .map(|a| {
                    let epoch = broker::AddressLeases::epoch(epochs.as_ref(), *a);
                    serde_json::json!({
                        "address": a.to_string(),
                        "holder": if epoch.is_some() { "this node" } else { "another node" },
                        "epoch": epoch,
                    })
                })
                .collect(),
        };
        serde_json::json!({
            "status": status,
            "catalog": match &*self.catalog {
                NodeCatalog::Embedded(_) => "embedded",
                NodeCatalog::Postgres(_) => "PostgreSQL",
            },
            "erasure": self.erasure,
            "heal_backlog": self.scrub.backlog.get(),
            "unrecoverable_blobs": self.scrub.unrecoverable.get(),
            "drives": drives,
            "nodes": nodes,
        })
    }

    fn views(&self) -> serde_json::Value {
        self.views
            .iter()
            .map(|v| {
                serde_json::json!({
                    "name": v.name,
                    "listeners": v.kafka_listen.iter().map(|l| format!("{}://{}", l.name, l.addr)).collect::<Vec<_>>(),
                    "bucket": v.bucket,
                    "users": v.users,
                })
            })
            .collect()
    }
}

/// Samples the node's metrics for the console's graphs until `stop` flips.
pub async fn sample(
    overview: Arc<console::overview::Overview>,
    metrics: Arc<Metrics>,
    catalog: Arc<NodeCatalog>,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    overview
        .run(|| metrics.render(catalog.drives()), stop)
        .await;
}
