//! Reads of topics, partitions, their batches and producers, and client quotas. Topics
//! are the view's (by name and by id); partitions are read by topic id, which only a
//! topic of the view gives.

use super::all;
use super::{Kafka, Reads};
use crate::error::CatalogResult;
use crate::model::{
    BatchInfo, ClientQuotas, CompactionState, PartitionState, ProducerState, StoredBatch,
    TopicRecord,
};
use crate::read;
use crate::tables;

impl Reads<'_, Kafka> {
    /// One topic by name.
    pub async fn topic(&self, name: &str) -> CatalogResult<Option<TopicRecord>> {
        let Some(stored) = self.names.stored(name) else {
            return Ok(None);
        };
        let found: Option<TopicRecord> =
            read::get(self.kv, tables::TOPICS, stored.as_bytes()).await?;
        Ok(found.and_then(|t| self.names.topic_out(t)))
    }

    /// One topic by id.
    pub async fn topic_by_id(&self, id: u128) -> CatalogResult<Option<TopicRecord>> {
        let Some(name) = read::get_raw(self.kv, tables::TOPIC_IDS, &id.to_be_bytes()).await? else {
            return Ok(None);
        };
        let found: Option<TopicRecord> = read::get(self.kv, tables::TOPICS, &name).await?;
        Ok(found.and_then(|t| self.names.topic_out(t)))
    }

    /// Every topic, by name.
    pub async fn topics(&self) -> CatalogResult<Vec<TopicRecord>> {
        let found: Vec<TopicRecord> = all(self.kv, tables::TOPICS).await?;
        Ok(found
            .into_iter()
            .filter_map(|t| self.names.topic_out(t))
            .collect())
    }

    /// One partition's state.
    pub async fn partition(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<PartitionState>> {
        self.of_partition(tables::PARTITIONS, topic_id, partition)
            .await
    }

    /// Where log compaction stands in a partition (none before its first pass).
    pub async fn compaction(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<CompactionState>> {
        self.of_partition(tables::COMPACTION, topic_id, partition)
            .await
    }

    /// Batches from the one holding `from_offset` on, until `max_bytes` is reached (at
    /// least one batch is returned when any exists).
    pub async fn read_batches(
        &self,
        topic_id: u128,
        partition: u32,
        from_offset: u64,
        max_bytes: usize,
    ) -> CatalogResult<Vec<StoredBatch>> {
        read::read_batches(
            self.kv,
            self.log,
            topic_id,
            partition,
            from_offset,
            max_bytes,
        )
        .await
    }

    /// Offsets and timestamps of up to `limit` batches from the one holding
    /// `from_offset` on, without reading their bytes.
    pub async fn batch_index(
        &self,
        topic_id: u128,
        partition: u32,
        from_offset: u64,
        limit: usize,
    ) -> CatalogResult<Vec<BatchInfo>> {
        read::batch_index(self.kv, topic_id, partition, from_offset, limit).await
    }

    /// An idempotent producer's state on one partition.
    pub async fn producer_state(
        &self,
        producer_id: i64,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<ProducerState>> {
        read::get(
            self.kv,
            tables::PRODUCERS,
            &tables::producer_key(producer_id, topic_id, partition),
        )
        .await
    }

    /// Every idempotent producer's state on one partition, by producer id.
    pub async fn producers_of(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Vec<(i64, ProducerState)>> {
        read::producers_of(self.kv, &tables::partition_key(topic_id, partition)).await
    }

    /// A partition's state and its last stable offset (the first offset of its earliest
    /// open transaction, or its end), read together.
    pub async fn stable_partition(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<(PartitionState, u64)>> {
        read::stable_partition(self.kv, &tables::partition_key(topic_id, partition)).await
    }

    /// Every entity's client quotas.
    pub async fn client_quotas(&self) -> CatalogResult<Vec<ClientQuotas>> {
        all(self.kv, tables::CLIENT_QUOTAS).await
    }
}
