//! Which stored batches belong to aborted transactions: a topic table (and every
//! expansion's target) holds what read_committed consumers see, so the batches of an
//! aborted transaction are left out, as the client drops them by the fetch response's
//! aborted-transactions list. Sealing stops at the last stable offset, so no open
//! transaction's batch is ever read here.

use catalog::{AbortedTxn, Catalog, PartitionState, StoredBatch};

use crate::TableResult;

/// The aborted transactions of one partition's offsets `from..to`.
pub struct Aborted(Vec<AbortedTxn>);

impl Aborted {
    /// Those of `from..to` of a partition.
    pub fn of(
        catalog: &dyn Catalog,
        topic_id: u128,
        partition: u32,
        (from, to): (u64, u64),
    ) -> TableResult<Self> {
        Ok(Self(catalog.aborted_txns(topic_id, partition, from, to)?))
    }

    /// Whether `b` is a batch of an aborted transaction.
    pub fn holds(&self, b: &StoredBatch) -> bool {
        b.is_aborted(&self.0)
    }
}

/// Where sealing a partition stops: its last stable offset (the first offset of its
/// earliest open transaction, or its end).
pub fn stable_end(
    catalog: &dyn Catalog,
    topic_id: u128,
    partition: u32,
    st: &PartitionState,
) -> TableResult<u64> {
    Ok(catalog
        .txn_partition(topic_id, partition)?
        .last_stable_offset(st.next_offset))
}
