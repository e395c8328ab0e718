//! Log compaction for topics whose `cleanup.policy` contains `compact`, with the promises
//! of Kafka's log cleaner: the latest record of every key survives at its original offset,
//! order never changes, a consumer that keeps up with the head sees every record,
//! tombstones stay readable `delete.retention.ms` after compaction first reaches them and
//! then go, and the head is never compacted ([`dirty`] says what the head is here).
//!
//! A background task looks at every compacted partition each check interval, and at once
//! when a topic's configs change ([`Broker::compaction_wake`]). A due partition gets one
//! pass ([`clean`]), committed as one catalog transaction that frees the replaced batches'
//! log space; the topic's Iceberg table then drops the removed rows in a snapshot of its
//! own.

pub mod clean;
pub mod dirty;
pub mod keymap;
pub mod policy;

use std::sync::Arc;
use std::time::Duration;

use catalog::{CatalogError, Transaction};
use tokio::sync::watch;

use crate::Broker;
use crate::context::now_ms;
use crate::metrics::PartitionLabels;

pub use clean::Limits;
pub use policy::Policy;

/// What one round over every compacted partition did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    /// Passes committed.
    pub passes: u64,
    /// Whether a partition has cleanable work left that a pass could not take.
    pub more: bool,
}

/// Looks at every compacted partition once and commits the passes due.
pub async fn round(broker: &Arc<Broker>) -> Result<Round, CatalogError> {
    let catalog = broker.catalog.clone();
    let limits = broker.config.compaction;
    let mut out = Round::default();
    let topics = catalog.kafka().topics().await?;
    for topic in topics {
        let Some(policy) = Policy::of(&topic.configs) else {
            continue;
        };
        for partition in 0..topic.partitions {
            // A partition's compaction is its leader's work.
            if !broker.holdings.leads(&topic.name, partition as i32) {
                continue;
            }
            // Examining decodes every dirty batch: on a blocking thread, which waits
            // there for the catalog's reads.
            let examined = tokio::task::spawn_blocking({
                let catalog = catalog.clone();
                let topic = topic.clone();
                let runtime = tokio::runtime::Handle::current();
                move || {
                    runtime.block_on(clean::examine(
                        catalog.as_ref(),
                        &topic,
                        partition,
                        &policy,
                        now_ms(),
                        limits,
                    ))
                }
            })
            .await
            .map_err(|e| CatalogError::Store(format!("compaction planning failed: {e}")))??;
            broker
                .metrics
                .compaction_dirty_ratio
                .get_or_create(&PartitionLabels {
                    topic: topic.name.clone(),
                    partition,
                })
                .set(examined.ratio);
            let Some(pass) = examined.pass else {
                continue;
            };
            let leases = broker.holdings.under_leader(&topic.name, partition as i32);
            match catalog
                .commit(Transaction::new(vec![pass.op]).under(leases))
                .await
            {
                Ok(_) => {
                    tracing::info!(
                        topic = %topic.name,
                        partition,
                        records = pass.records,
                        bytes = pass.bytes,
                        "compaction pass"
                    );
                    broker
                        .metrics
                        .compaction_removed_records
                        .inc_by(pass.records);
                    broker.metrics.compaction_removed_bytes.inc_by(pass.bytes);
                    broker.metrics.compaction_passes.inc();
                    out.passes += 1;
                    out.more |= pass.more;
                }
                // The partition moved on since planning (retention, DeleteRecords, a
                // deleted topic): the next round plans it afresh.
                Err(
                    e @ (CatalogError::PreconditionFailed(_)
                    | CatalogError::UnknownTopic(_)
                    | CatalogError::UnknownPartition { .. }),
                ) => {
                    tracing::debug!(topic = %topic.name, partition, error = %e, "compaction pass outdated");
                    out.more = true;
                }
                Err(e) => return Err(e),
            }
        }
    }
    broker.metrics.compaction_rounds.inc();
    Ok(out)
}

/// Runs compaction rounds every `every`, at once when woken, until `shutdown` flips.
pub async fn run(broker: Arc<Broker>, every: Duration, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = broker.compaction_wake.notified() => {}
            _ = shutdown.changed() => return,
        }
        // Work a pass could not take (its byte bound) continues at once.
        loop {
            match round(&broker).await {
                Ok(r) if r.more && r.passes > 0 => continue,
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "compaction round failed");
                    break;
                }
            }
        }
    }
}
