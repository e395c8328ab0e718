//! Eddy's catalog: the one transactional metadata store. Buckets, objects and their
//! versions, topics, partitions with their batches, consumer groups and committed offsets
//! all change through [`Catalog::commit`], one transaction at a time.
//!
//! The [`Catalog`] trait is the seam between the front ends and a backend, implemented
//! once over [`Backend`]:
//! - [`EmbeddedCatalog`], the single-process one, group-commits to the erasure-coded
//!   write-ahead log and materializes the tables in an embedded store (redb);
//! - [`pg::PgCatalog`] keeps the same tables in PostgreSQL for a cluster of nodes over
//!   shared drives (docs/scale-out.md).
//!
//! Both check and apply every operation with the same rules ([`apply`]) and answer every
//! read with the same code ([`read`]), over the byte tables of [`kv`].

pub mod apply;
pub mod checkpoint;
mod committer;
pub mod domain;
mod embedded;
pub mod error;
pub mod format;
pub mod kv;
pub mod metrics;
pub mod model;
pub mod orphans;
pub mod pg;
pub mod read;
mod reaper;
mod record;
mod store_open;
pub mod tables;
pub mod txn;
pub mod view;
pub mod wakeups;

use std::future::Future;
use std::pin::Pin;

use storage::BlobStore;

pub use domain::{ExpansionOp, GroupOp, IamOp, IcebergOp, KafkaOp, S3Op, TxnOp};
pub use embedded::{CatalogConfig, EmbeddedCatalog};
pub use error::{CatalogError, CatalogResult};
pub use metrics::CatalogMetrics;
pub use model::*;
pub use txn::{
    CommitOutcome, CompactedBatch, Lease, Op, OpOutcome, ProducerBatch, Transaction, TxnMarker,
};

/// A commit in flight; resolves once the transaction is durable and visible.
pub type CommitFuture = Pin<Box<dyn Future<Output = CatalogResult<CommitOutcome>> + Send>>;

/// The catalog's operations: the seam between the front ends and a backend (the
/// embedded store, or PostgreSQL for several nodes).
///
/// Contract every backend keeps:
/// - **Commit order.** [`Catalog::commit`] queues the transaction when it is *called*,
///   not when its future is first polled: two commits called one after the other from
///   one task are checked and applied in that order. The broker relies on this for a
///   connection's produce requests (their offsets follow the request order) and the S3
///   gateway for one key's event order.
/// - **Ack means durable.** A commit's future resolves `Ok` only once the transaction is
///   durable and visible to every reader of this catalog (on every node sharing it).
/// - **Committed reads.** Reads see committed state only, never a transaction in flight,
///   and a read that starts after a commit resolved sees it.
/// - **Reads are async** and may wait on the network (PostgreSQL): callers must not hold
///   a lock another task needs across them.
#[async_trait::async_trait]
pub trait Catalog: Send + Sync {
    /// Commits a transaction: all of its operations or none (see the ordering contract
    /// above: it is queued by this call).
    fn commit(&self, txn: Transaction) -> CommitFuture;
    /// Registers a long-polling reader on these partitions: it is woken by the commits
    /// that append to (or truncate) one of them, and only by those.
    fn watch_partitions(&self, partitions: &[wakeups::PartitionId]) -> wakeups::PartitionWaiter;
    /// The blob store that object data lives in.
    fn blobs(&self) -> &BlobStore;

    /// One bucket.
    async fn bucket(&self, name: &str) -> CatalogResult<Option<BucketRecord>>;
    /// Every bucket, by name.
    async fn buckets(&self) -> CatalogResult<Vec<BucketRecord>>;
    /// The current version of an object (none when deleted or behind a delete marker).
    async fn object(&self, bucket: &str, key: &str) -> CatalogResult<Option<ObjectVersion>>;
    /// One version of an object, delete markers included.
    async fn object_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: &str,
    ) -> CatalogResult<Option<ObjectVersion>>;
    /// Up to `limit` current objects whose keys start with `prefix` and sort after
    /// `start_after`, in byte order. Cost grows with `limit`, not with the bucket.
    async fn list_objects(
        &self,
        bucket: &str,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> CatalogResult<Vec<(String, ObjectVersion)>>;
    /// Up to `limit` versions (newest first within a key) of keys starting with `prefix`,
    /// from key `start_key` (inclusive) on.
    async fn list_versions(
        &self,
        bucket: &str,
        prefix: &str,
        start_key: Option<&str>,
        limit: usize,
    ) -> CatalogResult<Vec<(String, ObjectVersion)>>;

    /// One in-progress multipart upload.
    async fn upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> CatalogResult<Option<UploadRecord>>;
    /// Up to `limit` in-progress uploads of keys starting with `prefix`, ordered by key
    /// then upload id, strictly after `after` (a key marker, with an upload id marker or
    /// not: without one, every upload of that key is skipped).
    async fn list_uploads(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<(&str, Option<&str>)>,
        limit: usize,
    ) -> CatalogResult<Vec<UploadRecord>>;
    /// Up to `limit` parts of an upload numbered above `after`, in order.
    async fn parts(
        &self,
        upload_id: &str,
        after: u32,
        limit: usize,
    ) -> CatalogResult<Vec<PartRecord>>;

    /// One topic by name.
    async fn topic(&self, name: &str) -> CatalogResult<Option<TopicRecord>>;
    /// One topic by id.
    async fn topic_by_id(&self, id: u128) -> CatalogResult<Option<TopicRecord>>;
    /// Every topic, by name.
    async fn topics(&self) -> CatalogResult<Vec<TopicRecord>>;
    /// One partition's state.
    async fn partition(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<PartitionState>>;
    /// Where a topic's Iceberg table stands (none before its first snapshot).
    async fn topic_table(&self, topic: &str) -> CatalogResult<Option<TopicTable>>;
    /// Where log compaction stands in a partition (none before its first pass).
    async fn compaction(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<CompactionState>>;
    /// A topic's expansions, by source column.
    async fn expansions(&self, topic: &str) -> CatalogResult<Vec<(String, Expansion)>>;
    /// A table outside `kafka_topics`.
    async fn other_table(&self, namespace: &str, name: &str) -> CatalogResult<Option<TableRecord>>;
    /// Every table outside `kafka_topics`, as (namespace, name, record), in that order.
    async fn other_tables(&self) -> CatalogResult<Vec<(String, String, TableRecord)>>;
    /// The first offset of a partition that the topic's expansions have not read yet
    /// (none without an expansion): retention, DeleteRecords and compaction remove
    /// nothing from it on ([`model::expanded_to`]).
    async fn expanded_to(&self, topic: &TopicRecord, partition: u32) -> CatalogResult<Option<u64>> {
        let expansions = self.expansions(&topic.name).await?;
        if expansions.is_empty() {
            return Ok(None);
        }
        let table = self.topic_table(&topic.name).await?;
        Ok(model::expanded_to(
            &expansions,
            table.as_ref(),
            topic.id,
            partition,
        ))
    }
    /// Batches from the one holding `from_offset` on, until `max_bytes` is reached (at
    /// least one batch is returned when any exists).
    async fn read_batches(
        &self,
        topic_id: u128,
        partition: u32,
        from_offset: u64,
        max_bytes: usize,
    ) -> CatalogResult<Vec<StoredBatch>>;

    /// Offsets and timestamps of up to `limit` batches from the one holding
    /// `from_offset` on, without reading their bytes.
    async fn batch_index(
        &self,
        topic_id: u128,
        partition: u32,
        from_offset: u64,
        limit: usize,
    ) -> CatalogResult<Vec<BatchInfo>>;
    /// An idempotent producer's state on one partition.
    async fn producer_state(
        &self,
        producer_id: i64,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<ProducerState>>;

    /// A committed offset.
    async fn offset(
        &self,
        group: &str,
        topic: &str,
        partition: u32,
    ) -> CatalogResult<Option<OffsetRecord>>;
    /// Every committed offset of a group as (topic, partition, offset).
    async fn offsets(&self, group: &str) -> CatalogResult<Vec<(String, u32, OffsetRecord)>>;
    /// A group's stored state.
    async fn group(&self, name: &str) -> CatalogResult<Option<GroupRecord>>;
    /// Every stored group.
    async fn groups(&self) -> CatalogResult<Vec<GroupRecord>>;
    /// A transactional id's stored coordinator state.
    async fn txn(&self, id: &str) -> CatalogResult<Option<TxnRecord>>;
    /// Every transactional id's stored state.
    async fn txns(&self) -> CatalogResult<Vec<(String, TxnRecord)>>;
    /// Every entity's client quotas.
    async fn client_quotas(&self) -> CatalogResult<Vec<ClientQuotas>>;
    /// Every user, by name.
    async fn users(&self) -> CatalogResult<Vec<UserRecord>>;
    /// Every named identity policy, by name.
    async fn policies(&self) -> CatalogResult<Vec<PolicyRecord>>;
    /// Every bucket policy, by bucket.
    async fn bucket_policies(&self) -> CatalogResult<Vec<BucketPolicy>>;
    /// One of a bucket's sub-resource configurations.
    async fn bucket_config(
        &self,
        bucket: &str,
        kind: BucketConfigKind,
    ) -> CatalogResult<Option<BucketConfig>>;
    /// Every bucket's configuration of one kind.
    async fn bucket_configs(&self, kind: BucketConfigKind) -> CatalogResult<Vec<BucketConfig>>;
    /// A partition's open transactions.
    async fn txn_partition(&self, topic_id: u128, partition: u32) -> CatalogResult<TxnPartition>;
    /// A partition's state and its last stable offset (the first offset of its earliest
    /// open transaction, or its end), read together.
    async fn stable_partition(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<(PartitionState, u64)>>;
    /// The aborted transactions with records in `from..to` of a partition, oldest marker
    /// first: what a read_committed fetch of that range must drop.
    async fn aborted_txns(
        &self,
        topic_id: u128,
        partition: u32,
        from: u64,
        to: u64,
    ) -> CatalogResult<Vec<AbortedTxn>>;
    /// Whether an open transaction holds an offset of this group's partition.
    async fn has_pending_txn_offset(
        &self,
        group: &str,
        topic: &str,
        partition: u32,
    ) -> CatalogResult<bool>;
    /// Every idempotent producer's state on one partition, by producer id.
    async fn producers_of(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Vec<(i64, ProducerState)>>;
}

/// What a catalog backend provides: commits, wakeups, blobs, and the bytes of its tables
/// and logs. [`Catalog`] is implemented once over it, so every backend answers every read
/// with the same code ([`read`]) and checks and applies every commit with the same rules
/// ([`apply`]).
pub trait Backend: Send + Sync {
    /// Queues a transaction: [`Catalog::commit`], with its ordering contract.
    fn submit(&self, txn: Transaction) -> CommitFuture;
    /// [`Catalog::watch_partitions`].
    fn watch(&self, partitions: &[wakeups::PartitionId]) -> wakeups::PartitionWaiter;
    /// [`Catalog::blobs`].
    fn blob_store(&self) -> &BlobStore;
    /// Snapshots of committed state.
    fn kv(&self) -> &dyn kv::KvRead;
    /// Where stored batches' bytes are.
    fn log(&self) -> &dyn read::BatchLog;
}

/// The reads of [`Catalog`], written once for every [`Backend`].
#[async_trait::async_trait]
impl<B: Backend> Catalog for B {
    fn commit(&self, txn: Transaction) -> CommitFuture {
        self.submit(txn)
    }

    fn watch_partitions(&self, partitions: &[wakeups::PartitionId]) -> wakeups::PartitionWaiter {
        self.watch(partitions)
    }

    fn blobs(&self) -> &BlobStore {
        self.blob_store()
    }

    async fn bucket(&self, name: &str) -> CatalogResult<Option<BucketRecord>> {
        read::get(self.kv(), tables::BUCKETS, name.as_bytes()).await
    }

    async fn buckets(&self) -> CatalogResult<Vec<BucketRecord>> {
        read::scan(self.kv(), tables::BUCKETS, b"", usize::MAX)
            .await
            .map(|v| v.into_iter().map(|(_, b)| b).collect())
    }

    async fn object(&self, bucket: &str, key: &str) -> CatalogResult<Option<ObjectVersion>> {
        read::get(self.kv(), tables::OBJECTS, &tables::object_key(bucket, key)).await
    }

    async fn object_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: &str,
    ) -> CatalogResult<Option<ObjectVersion>> {
        let prefix = tables::versions_prefix(bucket, key);
        let versions: Vec<(Vec<u8>, ObjectVersion)> =
            read::scan(self.kv(), tables::VERSIONS, &prefix, usize::MAX).await?;
        Ok(versions
            .into_iter()
            .map(|(_, v)| v)
            .find(|v| v.version_id == version_id))
    }

    async fn list_objects(
        &self,
        bucket: &str,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> CatalogResult<Vec<(String, ObjectVersion)>> {
        read::list_objects(self.kv(), bucket, prefix, start_after, limit).await
    }

    async fn list_versions(
        &self,
        bucket: &str,
        prefix: &str,
        start_key: Option<&str>,
        limit: usize,
    ) -> CatalogResult<Vec<(String, ObjectVersion)>> {
        read::list_versions(self.kv(), bucket, prefix, start_key, limit).await
    }

    async fn upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> CatalogResult<Option<UploadRecord>> {
        read::get(
            self.kv(),
            tables::UPLOADS,
            &tables::upload_key(bucket, key, upload_id),
        )
        .await
    }

    async fn list_uploads(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<(&str, Option<&str>)>,
        limit: usize,
    ) -> CatalogResult<Vec<UploadRecord>> {
        read::list_uploads(self.kv(), bucket, prefix, after, limit).await
    }

    async fn parts(
        &self,
        upload_id: &str,
        after: u32,
        limit: usize,
    ) -> CatalogResult<Vec<PartRecord>> {
        read::parts(self.kv(), upload_id, after, limit).await
    }

    async fn topic(&self, name: &str) -> CatalogResult<Option<TopicRecord>> {
        read::get(self.kv(), tables::TOPICS, name.as_bytes()).await
    }

    async fn topic_by_id(&self, id: u128) -> CatalogResult<Option<TopicRecord>> {
        match read::get_raw(self.kv(), tables::TOPIC_IDS, &id.to_be_bytes()).await? {
            Some(name) => self.topic(&String::from_utf8_lossy(&name)).await,
            None => Ok(None),
        }
    }

    async fn topic_table(&self, topic: &str) -> CatalogResult<Option<TopicTable>> {
        read::get(self.kv(), tables::TOPIC_TABLES, topic.as_bytes()).await
    }

    async fn topics(&self) -> CatalogResult<Vec<TopicRecord>> {
        read::scan(self.kv(), tables::TOPICS, b"", usize::MAX)
            .await
            .map(|v| v.into_iter().map(|(_, t)| t).collect())
    }

    async fn compaction(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<CompactionState>> {
        read::get(
            self.kv(),
            tables::COMPACTION,
            &tables::partition_key(topic_id, partition),
        )
        .await
    }

    async fn expansions(&self, topic: &str) -> CatalogResult<Vec<(String, Expansion)>> {
        let found: Vec<(Vec<u8>, Expansion)> = read::scan(
            self.kv(),
            tables::EXPANSIONS,
            &tables::expansions_prefix(topic),
            usize::MAX,
        )
        .await?;
        Ok(found
            .into_iter()
            .filter_map(|(k, e)| Some((tables::expansion_source(topic, &k)?, e)))
            .collect())
    }

    async fn other_table(&self, namespace: &str, name: &str) -> CatalogResult<Option<TableRecord>> {
        read::get(
            self.kv(),
            tables::OTHER_TABLES,
            &tables::table_key(namespace, name),
        )
        .await
    }

    async fn other_tables(&self) -> CatalogResult<Vec<(String, String, TableRecord)>> {
        let found: Vec<(Vec<u8>, TableRecord)> =
            read::scan(self.kv(), tables::OTHER_TABLES, b"", usize::MAX).await?;
        Ok(found
            .into_iter()
            .filter_map(|(k, t)| {
                let (namespace, name) = tables::table_of_key(&k)?;
                Some((namespace, name, t))
            })
            .collect())
    }

    async fn partition(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<PartitionState>> {
        read::get(
            self.kv(),
            tables::PARTITIONS,
            &tables::partition_key(topic_id, partition),
        )
        .await
    }

    async fn read_batches(
        &self,
        topic_id: u128,
        partition: u32,
        from_offset: u64,
        max_bytes: usize,
    ) -> CatalogResult<Vec<StoredBatch>> {
        read::read_batches(
            self.kv(),
            self.log(),
            topic_id,
            partition,
            from_offset,
            max_bytes,
        )
        .await
    }

    async fn batch_index(
        &self,
        topic_id: u128,
        partition: u32,
        from_offset: u64,
        limit: usize,
    ) -> CatalogResult<Vec<BatchInfo>> {
        read::batch_index(self.kv(), topic_id, partition, from_offset, limit).await
    }

    async fn producer_state(
        &self,
        producer_id: i64,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<ProducerState>> {
        read::get(
            self.kv(),
            tables::PRODUCERS,
            &tables::producer_key(producer_id, topic_id, partition),
        )
        .await
    }

    async fn offset(
        &self,
        group: &str,
        topic: &str,
        partition: u32,
    ) -> CatalogResult<Option<OffsetRecord>> {
        read::get(
            self.kv(),
            tables::OFFSETS,
            &tables::offset_key(group, topic, partition),
        )
        .await
    }

    async fn offsets(&self, group: &str) -> CatalogResult<Vec<(String, u32, OffsetRecord)>> {
        read::offsets(self.kv(), group).await
    }

    async fn group(&self, name: &str) -> CatalogResult<Option<GroupRecord>> {
        read::get(self.kv(), tables::GROUPS, name.as_bytes()).await
    }

    async fn groups(&self) -> CatalogResult<Vec<GroupRecord>> {
        read::scan(self.kv(), tables::GROUPS, b"", usize::MAX)
            .await
            .map(|v| v.into_iter().map(|(_, g)| g).collect())
    }

    async fn txn(&self, id: &str) -> CatalogResult<Option<TxnRecord>> {
        read::get(self.kv(), tables::TXNS, id.as_bytes()).await
    }

    async fn txns(&self) -> CatalogResult<Vec<(String, TxnRecord)>> {
        read::scan(self.kv(), tables::TXNS, b"", usize::MAX)
            .await
            .map(|v| {
                v.into_iter()
                    .map(|(k, r)| (String::from_utf8_lossy(&k).into_owned(), r))
                    .collect()
            })
    }

    async fn client_quotas(&self) -> CatalogResult<Vec<ClientQuotas>> {
        read::scan(self.kv(), tables::CLIENT_QUOTAS, b"", usize::MAX)
            .await
            .map(|v| v.into_iter().map(|(_, q)| q).collect())
    }

    async fn users(&self) -> CatalogResult<Vec<UserRecord>> {
        read::scan(self.kv(), tables::USERS, b"", usize::MAX)
            .await
            .map(|v| v.into_iter().map(|(_, u)| u).collect())
    }

    async fn policies(&self) -> CatalogResult<Vec<PolicyRecord>> {
        read::scan(self.kv(), tables::POLICIES, b"", usize::MAX)
            .await
            .map(|v| v.into_iter().map(|(_, p)| p).collect())
    }

    async fn bucket_policies(&self) -> CatalogResult<Vec<BucketPolicy>> {
        read::scan(self.kv(), tables::BUCKET_POLICIES, b"", usize::MAX)
            .await
            .map(|v| v.into_iter().map(|(_, p)| p).collect())
    }

    async fn bucket_config(
        &self,
        bucket: &str,
        kind: BucketConfigKind,
    ) -> CatalogResult<Option<BucketConfig>> {
        read::get(
            self.kv(),
            tables::BUCKET_CONFIGS,
            &BucketConfig::key(bucket, kind),
        )
        .await
    }

    async fn bucket_configs(&self, kind: BucketConfigKind) -> CatalogResult<Vec<BucketConfig>> {
        read::scan::<BucketConfig>(self.kv(), tables::BUCKET_CONFIGS, b"", usize::MAX)
            .await
            .map(|v| {
                v.into_iter()
                    .map(|(_, c)| c)
                    .filter(|c| c.kind == kind)
                    .collect()
            })
    }

    async fn txn_partition(&self, topic_id: u128, partition: u32) -> CatalogResult<TxnPartition> {
        Ok(read::get(
            self.kv(),
            tables::TXN_PARTITIONS,
            &tables::partition_key(topic_id, partition),
        )
        .await?
        .unwrap_or_default())
    }

    async fn stable_partition(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<(PartitionState, u64)>> {
        read::stable_partition(self.kv(), &tables::partition_key(topic_id, partition)).await
    }

    async fn aborted_txns(
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
            self.kv(),
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

    async fn has_pending_txn_offset(
        &self,
        group: &str,
        topic: &str,
        partition: u32,
    ) -> CatalogResult<bool> {
        let prefix = tables::offset_key(group, topic, partition);
        let found: Vec<(Vec<u8>, OffsetRecord)> =
            read::scan(self.kv(), tables::TXN_OFFSETS, &prefix, 1).await?;
        Ok(!found.is_empty())
    }

    async fn producers_of(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Vec<(i64, ProducerState)>> {
        read::producers_of(self.kv(), &tables::partition_key(topic_id, partition)).await
    }
}
