//! The background scrub: the same verification and repair as `eddy heal`, paced slowly so
//! it never competes with clients, repeated on an interval. Its progress is in
//! [`ScrubMetrics`]: the heal backlog (blobs of the running pass not yet verified), what
//! passes rebuilt, and what they could not.

use std::sync::Arc;
use std::time::Duration;

use catalog::Catalog;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use storage::heal::{HealOptions, Progress};
use tokio::sync::watch;

/// The scrub's metrics (prefix `eddy_scrub`).
#[derive(Default, Clone)]
pub struct ScrubMetrics {
    /// Blobs of the running pass not verified yet (0 between passes).
    pub backlog: Gauge,
    /// Passes finished.
    pub passes: Counter,
    /// Blobs with a shard rebuilt.
    pub healed: Counter,
    /// Shards rebuilt or patched.
    pub shards_rebuilt: Counter,
    /// Blobs the last pass could not rebuild (more than `m` shards lost).
    pub unrecoverable: Gauge,
}

impl ScrubMetrics {
    /// Adds them to `r`.
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "backlog_blobs",
            "Heal backlog: blobs the running scrub pass has yet to verify (0 between passes)",
            self.backlog.clone(),
        );
        r.register("passes", "Scrub passes finished", self.passes.clone());
        r.register(
            "healed_blobs",
            "Blobs a scrub found damaged and rebuilt",
            self.healed.clone(),
        );
        r.register(
            "shards_rebuilt",
            "Shards a scrub rebuilt or patched",
            self.shards_rebuilt.clone(),
        );
        r.register(
            "unrecoverable_blobs",
            "Blobs the last scrub pass could not rebuild (more than m shards lost)",
            self.unrecoverable.clone(),
        );
    }
}

impl Progress for ScrubMetrics {
    fn total(&self, blobs: u64) {
        self.backlog.set(i64::try_from(blobs).unwrap_or(i64::MAX));
    }
    fn tick(&self) {
        if self.backlog.get() > 0 {
            self.backlog.dec();
        }
    }
}

/// Pause between blobs while scrubbing.
const PACE: Duration = Duration::from_millis(20);

/// Starts the scrub loop on the background runtime; it ends when `stop` flips.
pub fn spawn(
    background: &crate::background::Background,
    catalog: Arc<dyn Catalog>,
    interval: Duration,
    metrics: ScrubMetrics,
    mut stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    background.spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = stop.changed() => return,
            }
            let blobs = catalog.blobs().clone();
            let options = HealOptions {
                include_active_segment: false,
                pause: Some(PACE),
                // Blobs being written right now have no trailer yet.
                keep_unfinished: true,
            };
            let progress = metrics.clone();
            let result = tokio::task::spawn_blocking(move || {
                storage::heal::heal(&blobs, options, &progress)
            })
            .await;
            metrics.backlog.set(0);
            match result {
                Ok(Ok(r)) => {
                    metrics.passes.inc();
                    metrics.healed.inc_by(r.blobs_healed);
                    metrics.shards_rebuilt.inc_by(r.shards_rebuilt);
                    metrics
                        .unrecoverable
                        .set(i64::try_from(r.blobs_unrecoverable.len()).unwrap_or(i64::MAX));
                    tracing::info!(
                        blobs = r.blobs_checked,
                        healed = r.blobs_healed,
                        shards = r.shards_rebuilt,
                        log_rewritten = r.log_segments_rewritten,
                        unrecoverable = r.blobs_unrecoverable.len(),
                        "scrub finished"
                    )
                }
                Ok(Err(e)) => tracing::error!(error = %e, "scrub failed"),
                Err(e) => tracing::error!(error = %e, "scrub task failed"),
            }
        }
    })
}
