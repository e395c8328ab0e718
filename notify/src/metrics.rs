//! Prometheus metrics of bucket notifications.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;

/// Counters an operator watches.
#[derive(Debug, Clone, Default)]
pub struct NotifyMetrics {
    /// Event records committed.
    pub events: Counter,
    /// Events not written because their configuration's topic no longer exists.
    pub dropped: Counter,
    /// Commits rebuilt because a notification topic was deleted or recreated between
    /// building a change's rows and committing them.
    pub rebuilds: Counter,
}

impl NotifyMetrics {
    /// Registers the metrics (prefix them with `eddy_notify`).
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "events",
            "Bucket notification records committed",
            self.events.clone(),
        );
        r.register(
            "dropped_events",
            "Bucket notification events dropped because their topic no longer exists",
            self.dropped.clone(),
        );
        r.register(
            "rebuilt_commits",
            "Object changes whose event rows were rebuilt because their topic changed before the commit",
            self.rebuilds.clone(),
        );
    }
}
