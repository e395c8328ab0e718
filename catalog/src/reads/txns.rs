//! Reads of transactions: the coordinator's state by transactional id (the view's), a
//! partition's open and aborted transactions, and offsets a transaction holds.

use super::{Reads, Txns};
use crate::error::CatalogResult;
use crate::model::{AbortedTxn, OffsetRecord, TxnPartition, TxnRecord};
use crate::{read, tables};

impl Reads<'_, Txns> {
    /// A transactional id's stored coordinator state.
    pub async fn txn(&self, id: &str) -> CatalogResult<Option<TxnRecord>> {
        let Some(stored) = self.names.stored(id) else {
            return Ok(None);
        };
        let found: Option<TxnRecord> = read::get(self.kv, tables::TXNS, stored.as_bytes()).await?;
        found.map(|r| self.names.txn_record(r, false)).transpose()
    }

    /// Every transactional id's stored state.
    pub async fn all(&self) -> CatalogResult<Vec<(String, TxnRecord)>> {
        let found: Vec<(Vec<u8>, TxnRecord)> =
            read::scan(self.kv, tables::TXNS, b"", usize::MAX).await?;
        found
            .into_iter()
            .filter_map(|(k, r)| Some((self.names.client(&String::from_utf8_lossy(&k))?, r)))
            .map(|(id, r)| Ok((id, self.names.txn_record(r, false)?)))
            .collect()
    }

    /// A partition's open transactions.
    pub async fn txn_partition(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<TxnPartition> {
        let found = self
            .of_partition(tables::TXN_PARTITIONS, topic_id, partition)
            .await?;
        Ok(found.unwrap_or_default())
    }

    /// The aborted transactions with records in `from..to` of a partition, oldest marker
    /// first: what a read_committed fetch of that range must drop.
    pub async fn aborted_txns(
        &self,
        topic_id: u128,
        partition: u32,
        from: u64,
        to: u64,
    ) -> CatalogResult<Vec<AbortedTxn>> {
        // An aborted transaction with records in the range has its marker at or past
        // `from` and at most the longest span past `to`, so this range holds every one.
        let span = self
            .txn_partition(topic_id, partition)
            .await?
            .max_aborted_span;
        read::aborted_txns(
            self.kv,
            tables::batch_key(topic_id, partition, from),
            tables::batch_key(
                topic_id,
                partition,
                to.saturating_add(span).saturating_add(1),
            ),
        )
        .await
        .map(|v| v.into_iter().filter(|a| a.first_offset < to).collect())
    }

    /// Whether an open transaction holds an offset of this group's partition.
    pub async fn has_pending_txn_offset(
        &self,
        group: &str,
        topic: &str,
        partition: u32,
    ) -> CatalogResult<bool> {
        let (Some(g), Some(t)) = (self.names.stored(group), self.names.stored(topic)) else {
            return Ok(false);
        };
        let prefix = tables::offset_key(&g, &t, partition);
        let found: Vec<(Vec<u8>, OffsetRecord)> =
            read::scan(self.kv, tables::TXN_OFFSETS, &prefix, 1).await?;
        Ok(!found.is_empty())
    }
}
