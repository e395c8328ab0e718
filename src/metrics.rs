//! The process's Prometheus registry: catalog commit metrics, drive health and space,
//! HTTP request counts per listener and S3 requests per operation, and topic sizes and
//! consumer group lag read from the catalog at each scrape.

use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use storage::DriveSet;

/// Labels of a per-drive metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DriveLabels {
    /// Drive index.
    pub drive: String,
    /// Drive path.
    pub path: String,
}

/// Labels of an HTTP request count.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// Which listener (s3, http).
    pub listener: String,
    /// Response status code.
    pub status: String,
}

/// Labels of an S3 request count.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct S3Labels {
    /// s3s's name of the operation (`GetObject`); `Unknown` when the request was refused
    /// before it was resolved (a bad signature), `Preflight` for a CORS preflight.
    pub operation: String,
    /// Response status code.
    pub status: String,
}

/// Labels of a per-topic gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TopicLabels {
    /// The topic.
    pub topic: String,
}

/// Labels of a consumer group's lag on one topic.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupLagLabels {
    /// The group.
    pub group: String,
    /// The topic.
    pub topic: String,
}

/// Every metric the server exports.
pub struct Metrics {
    registry: Mutex<Registry>,
    drive_online: Family<DriveLabels, Gauge>,
    drive_errors: Family<DriveLabels, Gauge>,
    drive_capacity: Family<DriveLabels, Gauge>,
    drive_free: Family<DriveLabels, Gauge>,
    /// HTTP requests by listener and status.
    requests: Family<RequestLabels, Counter>,
    /// S3 requests by operation and status.
    s3_requests: Family<S3Labels, Counter>,
    /// Stored bytes per topic (the default view's).
    topic_bytes: Family<TopicLabels, Gauge>,
    /// Per group and topic: records between the committed offsets and the ends.
    group_lag: Family<GroupLagLabels, Gauge>,
    /// Every listener's accept loop.
    pub listeners: listener::ListenerMetrics,
}

impl Metrics {
    /// Registers the catalog's metrics, the listeners' (made before the catalog opened,
    /// with the listeners' TLS) and the server's own.
    pub fn new(catalog: &catalog::CatalogMetrics, listeners: listener::ListenerMetrics) -> Self {
        let mut registry = Registry::with_prefix("eddy");
        catalog.register(registry.sub_registry_with_prefix("catalog"));
        let drive_online = Family::<DriveLabels, Gauge>::default();
        let drive_errors = Family::<DriveLabels, Gauge>::default();
        let drive_capacity = Family::<DriveLabels, Gauge>::default();
        let drive_free = Family::<DriveLabels, Gauge>::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let s3_requests = Family::<S3Labels, Counter>::default();
        let topic_bytes = Family::<TopicLabels, Gauge>::default();
        let group_lag = Family::<GroupLagLabels, Gauge>::default();
        registry.register(
            "kafka_topic_bytes",
            "Bytes of record batches a topic stores, over its partitions (read at each scrape)",
            topic_bytes.clone(),
        );
        registry.register(
            "kafka_group_lag",
            "Records a consumer group has yet to consume of a topic: over the partitions it committed offsets for, the end offset minus the committed one (read at each scrape)",
            group_lag.clone(),
        );
        registry.register(
            "drive_online",
            "1 when the drive is formatted and usable",
            drive_online.clone(),
        );
        registry.register(
            "drive_errors",
            "I/O errors on the drive since start",
            drive_errors.clone(),
        );
        registry.register(
            "drive_capacity_bytes",
            "Size of the file system the drive is on",
            drive_capacity.clone(),
        );
        registry.register(
            "drive_free_bytes",
            "Bytes free for Eddy on the file system the drive is on",
            drive_free.clone(),
        );
        registry.register(
            "http_requests",
            "Requests answered, by listener and status",
            requests.clone(),
        );
        registry.register(
            "s3_requests",
            "S3 requests answered, by operation and status",
            s3_requests.clone(),
        );
        listeners.register(&mut registry);
        Self {
            registry: Mutex::new(registry),
            drive_online,
            drive_errors,
            drive_capacity,
            drive_free,
            requests,
            s3_requests,
            topic_bytes,
            group_lag,
            listeners,
        }
    }

    /// Reads topic sizes and group lag from `catalog` (the default view) into their
    /// gauges; a topic or group gone since the last scrape leaves them. Read per scrape
    /// rather than kept current: one read of each partition and group, a few ms for a
    /// thousand topics, against work on every produce and commit.
    pub async fn refresh_kafka(
        &self,
        catalog: &dyn catalog::Catalog,
    ) -> catalog::CatalogResult<()> {
        let kafka = catalog.kafka();
        let mut sizes = Vec::new();
        let mut ends = std::collections::HashMap::new();
        for t in kafka.topics().await? {
            let mut bytes = 0u64;
            for p in 0..t.partitions {
                if let Some(st) = kafka.partition(t.id, p).await? {
                    bytes = bytes.saturating_add(st.bytes);
                    ends.insert((t.name.clone(), p), st.next_offset);
                }
            }
            sizes.push((t.name, bytes));
        }
        let mut lags: std::collections::BTreeMap<(String, String), u64> = Default::default();
        let groups = catalog.groups();
        for g in groups.all().await? {
            for (topic, p, o) in groups.offsets(&g.name).await? {
                let Some(end) = ends.get(&(topic.clone(), p)) else {
                    continue;
                };
                let committed = u64::try_from(o.offset).unwrap_or(0);
                *lags.entry((g.name.clone(), topic)).or_default() += end.saturating_sub(committed);
            }
        }
        self.topic_bytes.clear();
        for (topic, bytes) in sizes {
            self.topic_bytes
                .get_or_create(&TopicLabels { topic })
                .set(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
        self.group_lag.clear();
        for ((group, topic), lag) in lags {
            self.group_lag
                .get_or_create(&GroupLagLabels { group, topic })
                .set(i64::try_from(lag).unwrap_or(i64::MAX));
        }
        Ok(())
    }

    /// Counts one HTTP request answered by `listener` with `status`.
    pub fn count_request(&self, listener: &str, status: u16) {
        self.requests
            .get_or_create(&RequestLabels {
                listener: listener.into(),
                status: status.to_string(),
            })
            .inc();
    }

    /// Counts one S3 request of `operation` answered with `status`.
    pub fn count_s3(&self, operation: &str, status: u16) {
        self.s3_requests
            .get_or_create(&S3Labels {
                operation: operation.into(),
                status: status.to_string(),
            })
            .inc();
    }

    /// Adds the Kafka API's metrics (prefix `eddy_kafka`).
    pub fn register_kafka(&self, broker: &broker::BrokerMetrics) {
        let mut registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        broker.register(registry.sub_registry_with_prefix("kafka"));
    }

    /// Adds the per-view Kafka metrics (prefix `eddy_kafka_view`).
    pub fn register_kafka_views(&self, views: &broker::metrics::ViewMetrics) {
        let mut registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        views.register(registry.sub_registry_with_prefix("kafka_view"));
    }

    /// Adds the bucket notification metrics (prefix `eddy_notify`).
    pub fn register_notify(&self, notify: &notify::NotifyMetrics) {
        let mut registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        notify.register(registry.sub_registry_with_prefix("notify"));
    }

    /// Adds the lifecycle worker's metrics (prefix `eddy_s3_lifecycle`).
    pub fn register_lifecycle(&self, lifecycle: &s3gw::lifecycle::worker::LifecycleMetrics) {
        let mut registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        lifecycle.register(registry.sub_registry_with_prefix("s3_lifecycle"));
    }

    /// Adds the function pipelines' metrics (prefix `eddy_pipeline`).
    pub fn register_pipelines(&self, pipelines: &pipelines::PipelineMetrics) {
        let mut registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        pipelines.register(registry.sub_registry_with_prefix("pipeline"));
    }

    /// Adds the schema registry's metrics (prefix `eddy_schema_registry`).
    pub fn register_registry(&self, metrics: &registry::metrics::RegistryMetrics) {
        let mut registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        metrics.register(registry.sub_registry_with_prefix("schema_registry"));
    }

    /// Adds the bucket usage gauges (prefix `eddy_bucket`).
    pub fn register_usage(&self, usage: &crate::usage::UsageMetrics) {
        let mut registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        usage.register(registry.sub_registry_with_prefix("bucket"));
    }

    /// Adds the background scrub's metrics (prefix `eddy_scrub`).
    pub fn register_scrub(&self, scrub: &crate::scrub::ScrubMetrics) {
        let mut registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        scrub.register(registry.sub_registry_with_prefix("scrub"));
    }

    /// Adds the topic tables' metrics.
    pub fn register_tables(&self, tables: &tables::TableMetrics) {
        let mut registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        tables.register(registry.sub_registry_with_prefix("tables"));
    }

    /// The text exposition, with drive gauges read fresh.
    pub fn render(&self, drives: &DriveSet) -> String {
        for h in drives.health() {
            let labels = DriveLabels {
                drive: h.index.to_string(),
                path: h.path.display().to_string(),
            };
            self.drive_online
                .get_or_create(&labels)
                .set(i64::from(h.online));
            self.drive_errors
                .get_or_create(&labels)
                .set(h.errors as i64);
            // A drive whose file system cannot be asked keeps its last figures.
            if let Some((capacity, free)) = drive_space(&h.path) {
                self.drive_capacity
                    .get_or_create(&labels)
                    .set(i64::try_from(capacity).unwrap_or(i64::MAX));
                self.drive_free
                    .get_or_create(&labels)
                    .set(i64::try_from(free).unwrap_or(i64::MAX));
            }
        }
        let mut out = String::new();
        let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry) {
            tracing::warn!(error = %e, "metrics encoding failed");
        }
        out
    }
}

/// The size of the file system a drive is on and the bytes free on it for Eddy (not the
/// root's reserve), or `None` when it cannot be asked.
pub fn drive_space(path: &std::path::Path) -> Option<(u64, u64)> {
    let fs = rustix::fs::statvfs(path).ok()?;
    Some((
        fs.f_blocks.saturating_mul(fs.f_frsize),
        fs.f_bavail.saturating_mul(fs.f_frsize),
    ))
}
