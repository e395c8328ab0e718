//! Prometheus metrics of pipelines, per link (`pipeline`, `link`) and per function
//! (`pipeline`, `function`), registered under `eddy_pipeline`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Labels of a link's metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct LinkLabels {
    /// The pipeline.
    pub pipeline: String,
    /// The link (`from-to`).
    pub link: String,
}

/// Labels of a function's metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct FunctionLabels {
    /// The pipeline.
    pub pipeline: String,
    /// The function.
    pub function: String,
}

/// What an operator watches.
#[derive(Clone)]
pub struct PipelineMetrics {
    /// Events handed on (a reply committed, or the function succeeded with nowhere to
    /// send its reply).
    pub delivered: Family<LinkLabels, Counter>,
    /// Failed attempts (each retry counts).
    pub failed_attempts: Family<LinkLabels, Counter>,
    /// Events that went to the dead-letter topic.
    pub dead_lettered: Family<LinkLabels, Counter>,
    /// Events being delivered now.
    pub in_flight: Family<LinkLabels, Gauge>,
    /// Events of the source not yet handed on (summed over the link's partitions, each as
    /// of its last read).
    pub waiting: Family<LinkLabels, Gauge>,
    /// Seconds from sending an event to a successful answer.
    pub latency: Family<FunctionLabels, Histogram>,
    /// Running instances of `command` functions.
    pub instances: Family<FunctionLabels, Gauge>,
    /// Spans not exported over OTLP because the export queue was full.
    pub otlp_dropped: Counter,
}

impl Default for PipelineMetrics {
    fn default() -> Self {
        Self {
            delivered: Family::default(),
            failed_attempts: Family::default(),
            dead_lettered: Family::default(),
            in_flight: Family::default(),
            waiting: Family::default(),
            latency: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0001, 2.0, 20))
            }),
            instances: Family::default(),
            otlp_dropped: Counter::default(),
        }
    }
}

impl PipelineMetrics {
    /// Registers the metrics (prefix them with `eddy_pipeline`).
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "delivered",
            "Events a link handed on",
            self.delivered.clone(),
        );
        r.register(
            "failed_attempts",
            "Failed delivery attempts (non-2xx, timeout, connection), retries included",
            self.failed_attempts.clone(),
        );
        r.register(
            "dead_lettered",
            "Events sent to the dead-letter topic after their last attempt failed",
            self.dead_lettered.clone(),
        );
        r.register(
            "in_flight",
            "Events being delivered now",
            self.in_flight.clone(),
        );
        r.register(
            "waiting",
            "Events of a link's source not yet handed on",
            self.waiting.clone(),
        );
        r.register(
            "latency_seconds",
            "Time from sending an event to a function's successful answer",
            self.latency.clone(),
        );
        r.register(
            "instances",
            "Running instances of functions Eddy runs (command:)",
            self.instances.clone(),
        );
        r.register(
            "otlp_dropped_spans",
            "Spans not exported over OTLP because the export queue was full (the traces topic keeps them)",
            self.otlp_dropped.clone(),
        );
    }
}
