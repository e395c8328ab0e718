//! Prometheus metrics of the Kafka API.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

/// Labels of a per-API metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApiLabels {
    /// Kafka API name.
    pub api: String,
}

/// Labels of a consumer group's lag on one topic.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct LagLabels {
    /// Group id.
    pub group: String,
    /// Topic name.
    pub topic: String,
}

/// Labels of a quota metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QuotaLabels {
    /// `produce`, `fetch` or `request`.
    pub quota: &'static str,
}

/// Labels of an outcome metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    /// `ok` or `failed`.
    pub outcome: &'static str,
}

/// Labels of a per-partition metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct PartitionLabels {
    /// Topic name.
    pub topic: String,
    /// Partition.
    pub partition: u32,
}

/// The broker's metrics.
#[derive(Clone)]
pub struct BrokerMetrics {
    /// Requests by API.
    pub requests: Family<ApiLabels, Counter>,
    /// Request latency by API, from decode to response.
    pub latency: Family<ApiLabels, Histogram>,
    /// Record bytes accepted by produce.
    pub produced_bytes: Counter,
    /// Record bytes returned by fetch.
    pub fetched_bytes: Counter,
    /// Open connections.
    pub connections: Gauge,
    /// Fetches parked, waiting for data on their partitions.
    pub fetches_parked: Gauge,
    /// Records acquired by share consumers (KIP-932), each delivery counted.
    pub share_acquired: Counter,
    /// Records share consumers acknowledged (any type).
    pub share_acknowledged: Counter,
    /// Connections closed for a malformed or oversized frame.
    pub bad_frames: Counter,
    /// Completed group rebalances (join phases ended).
    pub rebalances: Counter,
    /// Consumer groups held in memory (those with members or in flux).
    pub groups_in_memory: Gauge,
    /// Partition offsets committed.
    pub offset_commits: Counter,
    /// Records not yet consumed (high watermark minus committed offset) by group and
    /// topic, for groups with committed offsets.
    pub consumer_lag: Family<LagLabels, Gauge>,
    /// Records deleted by retention (offsets the log start moved past).
    pub retention_deleted_records: Counter,
    /// Batch bytes deleted by retention.
    pub retention_deleted_bytes: Counter,
    /// Retention passes completed (over every topic).
    pub retention_passes: Counter,
    /// Records removed by compaction.
    pub compaction_removed_records: Counter,
    /// Batch bytes compaction freed.
    pub compaction_removed_bytes: Counter,
    /// Compaction passes committed.
    pub compaction_passes: Counter,
    /// Compaction rounds completed (each looks at every compacted partition once).
    pub compaction_rounds: Counter,
    /// Dirty share of each compacted partition's cleanable bytes, as last looked at.
    pub compaction_dirty_ratio: Family<PartitionLabels, Gauge<f64, AtomicU64>>,
    /// Fetch sessions held.
    pub fetch_sessions: Gauge,
    /// Idle fetch sessions evicted for new ones.
    pub fetch_session_evictions: Counter,
    /// Transactions committed.
    pub txn_committed: Counter,
    /// Transactions aborted (by EndTxn, a timeout or a fencing InitProducerId).
    pub txn_aborted: Counter,
    /// Transactions the coordinator aborted because they ran past their timeout.
    pub txn_timed_out: Counter,
    /// Transactions open now.
    pub txn_open: Gauge,
    /// Time to write one transaction's markers and offsets (the EndTxn commit).
    pub txn_end_latency: Histogram,
    /// Request frame bytes by API.
    pub request_bytes: Family<ApiLabels, Counter>,
    /// Response frame bytes by API.
    pub response_bytes: Family<ApiLabels, Counter>,
    /// Responses that throttled their client, by quota.
    pub throttled: Family<QuotaLabels, Counter>,
    /// Throttle time given to clients, by quota.
    pub throttle_seconds: Family<QuotaLabels, Counter<f64, AtomicU64>>,
    /// SASL exchanges that ended, by outcome.
    pub sasl_authentications: Family<OutcomeLabels, Counter>,
    /// Connections closed for a request before authentication (or after the session
    /// lifetime) on a SASL listener.
    pub sasl_refused: Counter,
    /// Topics, groups and cluster actions refused by a policy.
    pub authz_refused: Counter,
}

impl Default for BrokerMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            latency: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0001, 2.0, 18))
            }),
            produced_bytes: Counter::default(),
            fetched_bytes: Counter::default(),
            connections: Gauge::default(),
            fetches_parked: Gauge::default(),
            share_acquired: Counter::default(),
            share_acknowledged: Counter::default(),
            bad_frames: Counter::default(),
            rebalances: Counter::default(),
            groups_in_memory: Gauge::default(),
            offset_commits: Counter::default(),
            consumer_lag: Family::default(),
            retention_deleted_records: Counter::default(),
            retention_deleted_bytes: Counter::default(),
            retention_passes: Counter::default(),
            compaction_removed_records: Counter::default(),
            compaction_removed_bytes: Counter::default(),
            compaction_passes: Counter::default(),
            compaction_rounds: Counter::default(),
            compaction_dirty_ratio: Family::default(),
            fetch_sessions: Gauge::default(),
            fetch_session_evictions: Counter::default(),
            txn_committed: Counter::default(),
            txn_aborted: Counter::default(),
            txn_timed_out: Counter::default(),
            txn_open: Gauge::default(),
            txn_end_latency: Histogram::new(exponential_buckets(0.0001, 2.0, 18)),
            request_bytes: Family::default(),
            response_bytes: Family::default(),
            throttled: Family::default(),
            throttle_seconds: Family::default(),
            sasl_authentications: Family::default(),
            sasl_refused: Counter::default(),
            authz_refused: Counter::default(),
        }
    }
}

impl BrokerMetrics {
    /// Registers the metrics (prefix them with `eddy_kafka`).
    pub fn register(&self, r: &mut Registry) {
        r.register("requests", "Kafka requests by API", self.requests.clone());
        r.register(
            "request_seconds",
            "Kafka request latency by API",
            self.latency.clone(),
        );
        r.register(
            "produced_bytes",
            "Record batch bytes accepted by produce",
            self.produced_bytes.clone(),
        );
        r.register(
            "fetched_bytes",
            "Record batch bytes returned by fetch",
            self.fetched_bytes.clone(),
        );
        r.register(
            "connections",
            "Open Kafka connections",
            self.connections.clone(),
        );
        r.register(
            "fetches_parked",
            "Fetches waiting for commits to their partitions (long-poll)",
            self.fetches_parked.clone(),
        );
        r.register(
            "share_records_acquired",
            "Records acquired by share group consumers, each delivery counted",
            self.share_acquired.clone(),
        );
        r.register(
            "share_records_acknowledged",
            "Records share group consumers acknowledged (accepted, released, rejected or gaps)",
            self.share_acknowledged.clone(),
        );
        r.register(
            "bad_frames",
            "Connections closed for a malformed or oversized request",
            self.bad_frames.clone(),
        );
        r.register(
            "group_rebalances",
            "Consumer group rebalances completed",
            self.rebalances.clone(),
        );
        r.register(
            "groups_in_memory",
            "Consumer groups held in memory (with members or changing)",
            self.groups_in_memory.clone(),
        );
        r.register(
            "offset_commits",
            "Consumer group partition offsets committed",
            self.offset_commits.clone(),
        );
        r.register(
            "consumer_lag",
            "Records behind the high watermark, by consumer group and topic",
            self.consumer_lag.clone(),
        );
        r.register(
            "retention_deleted_records",
            "Records deleted by retention.ms / retention.bytes",
            self.retention_deleted_records.clone(),
        );
        r.register(
            "retention_deleted_bytes",
            "Record batch bytes deleted by retention.ms / retention.bytes",
            self.retention_deleted_bytes.clone(),
        );
        r.register(
            "retention_passes",
            "Retention passes completed over every topic",
            self.retention_passes.clone(),
        );
        r.register(
            "compaction_removed_records",
            "Records removed by log compaction (superseded, expired tombstones, keyless)",
            self.compaction_removed_records.clone(),
        );
        r.register(
            "compaction_removed_bytes",
            "Record batch bytes freed by log compaction",
            self.compaction_removed_bytes.clone(),
        );
        r.register(
            "compaction_passes",
            "Log compaction passes committed (one per partition cleaned)",
            self.compaction_passes.clone(),
        );
        r.register(
            "compaction_rounds",
            "Log compaction rounds completed over every compacted partition",
            self.compaction_rounds.clone(),
        );
        r.register(
            "compaction_dirty_ratio",
            "Dirty share of a compacted partition's cleanable bytes",
            self.compaction_dirty_ratio.clone(),
        );
        r.register(
            "fetch_sessions",
            "Fetch sessions (KIP-227) held in the cache",
            self.fetch_sessions.clone(),
        );
        r.register(
            "fetch_session_evictions",
            "Idle fetch sessions evicted to make room for new ones",
            self.fetch_session_evictions.clone(),
        );
        r.register(
            "transactions_committed",
            "Transactions committed",
            self.txn_committed.clone(),
        );
        r.register(
            "transactions_aborted",
            "Transactions aborted (EndTxn, timeout or a fencing InitProducerId)",
            self.txn_aborted.clone(),
        );
        r.register(
            "transactions_timed_out",
            "Transactions aborted by the coordinator for running past their timeout",
            self.txn_timed_out.clone(),
        );
        r.register(
            "transactions_open",
            "Transactions open now",
            self.txn_open.clone(),
        );
        r.register(
            "transaction_end_seconds",
            "Time to commit one transaction's markers and offsets",
            self.txn_end_latency.clone(),
        );
        r.register(
            "request_bytes",
            "Kafka request frame bytes by API",
            self.request_bytes.clone(),
        );
        r.register(
            "response_bytes",
            "Kafka response frame bytes by API",
            self.response_bytes.clone(),
        );
        r.register(
            "throttled",
            "Responses that throttled their client for a client quota, by quota",
            self.throttled.clone(),
        );
        r.register(
            "throttle_seconds",
            "Throttle time given to clients for client quotas, by quota",
            self.throttle_seconds.clone(),
        );
        r.register(
            "sasl_authentications",
            "SASL exchanges that ended, by outcome (ok, failed)",
            self.sasl_authentications.clone(),
        );
        r.register(
            "sasl_refused_requests",
            "Connections closed for a request sent before SASL authentication or after the session lifetime",
            self.sasl_refused.clone(),
        );
        r.register(
            "authorization_refusals",
            "Topics, groups and cluster actions of Kafka requests refused by a policy",
            self.authz_refused.clone(),
        );
    }
}

/// Labels of a per-view, per-API metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ViewApiLabels {
    /// The broker view.
    pub view: String,
    /// Kafka API name.
    pub api: String,
}

/// Labels of a per-view metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ViewLabels {
    /// The broker view.
    pub view: String,
}

/// What each broker view serves (the documents' per-view analytics): requests and their
/// latency by API, request bytes, and record bytes produced and fetched. One set for
/// every view, labelled by view, registered once.
#[derive(Clone, Debug)]
pub struct ViewMetrics {
    /// Requests by view and API.
    pub requests: Family<ViewApiLabels, Counter>,
    /// Request latency by view and API.
    pub latency: Family<ViewApiLabels, Histogram>,
    /// Request bytes by view.
    pub request_bytes: Family<ViewLabels, Counter>,
    /// Record bytes produced, by view.
    pub produced_bytes: Family<ViewLabels, Counter>,
    /// Record bytes fetched, by view.
    pub fetched_bytes: Family<ViewLabels, Counter>,
}

impl Default for ViewMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            latency: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0001, 2.0, 18))
            }),
            request_bytes: Family::default(),
            produced_bytes: Family::default(),
            fetched_bytes: Family::default(),
        }
    }
}

impl ViewMetrics {
    /// Registers them (the caller gives the `eddy_kafka_view` prefix).
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "requests",
            "Kafka requests by broker view and API",
            self.requests.clone(),
        );
        r.register(
            "request_seconds",
            "Kafka request latency by broker view and API",
            self.latency.clone(),
        );
        r.register(
            "request_bytes",
            "Kafka request bytes by broker view",
            self.request_bytes.clone(),
        );
        r.register(
            "produced_bytes",
            "Record bytes produced, by broker view",
            self.produced_bytes.clone(),
        );
        r.register(
            "fetched_bytes",
            "Record bytes fetched, by broker view",
            self.fetched_bytes.clone(),
        );
    }
}
