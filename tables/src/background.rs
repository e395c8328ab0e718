//! The background tabler: seals a topic's table once its untabled data is old enough
//! or large enough, so files stay reasonably large while tables stay fresh. Loading a
//! table seals on demand besides, so readers never wait for this loop. Of a cluster's
//! nodes, one seals a topic in the background: the one its [`Sealer`] names.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::Tabler;

/// When the background tabler seals a topic.
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    /// How often topics are looked at.
    pub check_every: Duration,
    /// Seal once the oldest untabled data seen is this old.
    pub max_age: Duration,
    /// Seal once this many bytes were stored since the last seal.
    pub max_bytes: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            check_every: Duration::from_secs(1),
            max_age: Duration::from_secs(30),
            max_bytes: 64 << 20,
        }
    }
}

/// Whether this node seals a topic's table in the background (a cluster node: the one
/// serving its partition 0's leader; a single node: every topic). Two nodes sealing one
/// topic at once would each do the work, and the table's generation check would refuse
/// the second.
pub type Sealer = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// A [`Sealer`] of every topic.
pub fn every_topic() -> Sealer {
    Arc::new(|_| true)
}

/// What the loop remembers of a topic between checks.
#[derive(Default)]
struct Seen {
    /// When untabled data was first seen since the last seal.
    behind_since: Option<Instant>,
    /// Stored bytes of the topic when its table last caught up.
    bytes_when_caught_up: u64,
}

/// Runs until `stop` flips, sealing the topics `seals` names.
pub async fn run(
    tabler: Arc<Tabler>,
    limits: Thresholds,
    seals: Sealer,
    mut stop: watch::Receiver<bool>,
) {
    let mut seen: HashMap<u128, Seen> = HashMap::new();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(limits.check_every) => {}
            _ = stop.changed() => return,
        }
        let topics = match tabler.catalog().kafka().topics().await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(error = %e, "background tabler: listing topics failed");
                continue;
            }
        };
        seen.retain(|id, _| topics.iter().any(|t| t.id == *id && seals(&t.name)));
        for topic in topics.into_iter().filter(|t| seals(&t.name)) {
            let mut stored = 0u64;
            for p in 0..topic.partitions {
                if let Ok(Some(st)) = tabler.catalog().kafka().partition(topic.id, p).await {
                    stored += st.bytes;
                }
            }
            let s = seen.entry(topic.id).or_default();
            match tabler.behind(&topic).await {
                Ok(true) => {}
                Ok(false) => {
                    s.behind_since = None;
                    s.bytes_when_caught_up = stored;
                    continue;
                }
                Err(e) => {
                    tracing::warn!(topic = %topic.name, error = %e, "background tabler");
                    continue;
                }
            }
            let since = *s.behind_since.get_or_insert_with(Instant::now);
            let due = since.elapsed() >= limits.max_age
                || stored.saturating_sub(s.bytes_when_caught_up) >= limits.max_bytes;
            if !due {
                continue;
            }
            match tabler.seal_background(&topic.name).await {
                Ok(_) => {
                    s.behind_since = None;
                    s.bytes_when_caught_up = stored;
                }
                // A topic deleted while its seal ran leaves nothing to seal (its files
                // went with it): not worth a warning.
                Err(e) => match tabler.catalog().kafka().topic(&topic.name).await {
                    Ok(Some(t)) if t.id == topic.id => {
                        tracing::warn!(topic = %topic.name, error = %e, "background seal failed")
                    }
                    _ => {
                        tracing::debug!(topic = %topic.name, error = %e, "seal of a deleted topic")
                    }
                },
            }
        }
    }
}
