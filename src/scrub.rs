//! The background scrub: the same verification and repair as `eddy heal`, paced slowly so
//! it never competes with clients, repeated on an interval.

use std::sync::Arc;
use std::time::Duration;

use catalog::Catalog;
use storage::heal::{HealOptions, NoProgress};
use tokio::sync::watch;

/// Pause between blobs while scrubbing.
const PACE: Duration = Duration::from_millis(20);

/// Starts the scrub loop on the background runtime; it ends when `stop` flips.
pub fn spawn(
    background: &crate::background::Background,
    catalog: Arc<dyn Catalog>,
    interval: Duration,
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
            let result = tokio::task::spawn_blocking(move || {
                storage::heal::heal(&blobs, options, &NoProgress)
            })
            .await;
            match result {
                Ok(Ok(r)) => tracing::info!(
                    blobs = r.blobs_checked,
                    healed = r.blobs_healed,
                    shards = r.shards_rebuilt,
                    log_rewritten = r.log_segments_rewritten,
                    unrecoverable = r.blobs_unrecoverable.len(),
                    "scrub finished"
                ),
                Ok(Err(e)) => tracing::error!(error = %e, "scrub failed"),
                Err(e) => tracing::error!(error = %e, "scrub task failed"),
            }
        }
    })
}
