//! Which server runs which cursor. A server alone runs them all. In a cluster, each
//! cursor (a link over one source partition, or a schedule) belongs to one of the
//! cluster's Kafka addresses, by a hash of its key, and the server holding that
//! address's lease runs it: its hand-offs commit under the lease, so a server that lost
//! it (paused, cut off) cannot commit, and when a server dies the server that takes its
//! addresses takes its cursors, from where they were.

use catalog::Lease;

/// Decides which cursors this server runs.
pub trait Ownership: Send + Sync {
    /// `Some(leases)`: this server runs the cursor `key`, committing under `leases`;
    /// `None`: another server does.
    fn owns(&self, key: &str) -> Option<Vec<Lease>>;
}

/// A server alone: every cursor is its own.
pub struct Alone;

impl Ownership for Alone {
    fn owns(&self, _key: &str) -> Option<Vec<Lease>> {
        Some(Vec::new())
    }
}

/// Which of `n` slots a cursor's key falls in (Kafka's default partitioner, so it stays
/// the same across builds).
pub fn slot(key: &str, n: usize) -> usize {
    notify::partition::partition_for(key.as_bytes(), u32::try_from(n.max(1)).unwrap_or(1)) as usize
}

/// A cursor's key.
pub fn key(pipeline: &str, cursor: &str, partition: u32) -> String {
    format!("{pipeline}/{cursor}/{partition}")
}
