//! Broker views: one catalog, several Kafka namespaces. A view's topics, groups,
//! transactional ids and expansion target namespaces are stored under names prefixed
//! with `\0VIEW\0`, which no client can spell (Kafka topic names cannot hold a NUL, and
//! names with one are refused here); [`ViewCatalog`] adds the prefix on the way in and
//! takes it off on the way out, so the broker and the tabler of a view see only its
//! names, unprefixed. The default view has no prefix and hides every prefixed name, so a
//! data dir without views reads as before. Buckets, objects, users and policies are
//! shared by every view.

use crate::domain::{ExpansionOp, GroupOp, IamOp, IcebergOp, KafkaOp, S3Op, TxnOp};
use std::sync::Arc;

use crate::wakeups;
use crate::{
    AbortedTxn, BatchInfo, BlobStore, BucketRecord, Catalog, CatalogError, CatalogResult,
    ClientQuotas, CommitFuture, CompactionState, Expansion, GroupRecord, ObjectVersion,
    OffsetRecord, Op, PartRecord, PartitionState, PolicyRecord, ProducerState, StoredBatch,
    TableRecord, TopicRecord, TopicTable, Transaction, TxnPartition, TxnRecord, UploadRecord,
    UserRecord,
};

/// A catalog as one view sees it.
pub struct ViewCatalog {
    inner: Arc<dyn Catalog>,
    /// `""` for the default view, else `\0NAME\0`.
    prefix: String,
}

impl ViewCatalog {
    /// The default view: every name without a prefix.
    pub fn default_view(inner: Arc<dyn Catalog>) -> Self {
        Self {
            inner,
            prefix: String::new(),
        }
    }

    /// The view `name`.
    pub fn named(inner: Arc<dyn Catalog>, name: &str) -> Self {
        Self {
            inner,
            prefix: format!("\0{name}\0"),
        }
    }

    /// The stored name of a client's name; `None` when it holds a NUL (no client name
    /// may reach another view's).
    fn wrap(&self, name: &str) -> Option<String> {
        (!name.contains('\0')).then(|| format!("{}{name}", self.prefix))
    }

    fn wrap_or_err(&self, name: &str) -> CatalogResult<String> {
        self.wrap(name)
            .ok_or_else(|| CatalogError::Invalid("a name may not hold a NUL character".into()))
    }

    /// The client's name of a stored name, if it is this view's.
    fn unwrap(&self, stored: &str) -> Option<String> {
        unwrap_name(&self.prefix, stored)
    }

    fn topic_out(&self, mut t: TopicRecord) -> Option<TopicRecord> {
        t.name = self.unwrap(&t.name)?;
        Some(t)
    }

    fn group_out(&self, mut g: GroupRecord) -> Option<GroupRecord> {
        g.name = self.unwrap(&g.name)?;
        Some(g)
    }

    fn txn_record(&self, mut r: TxnRecord, inward: bool) -> CatalogResult<TxnRecord> {
        let map = |n: &str| -> CatalogResult<String> {
            if inward {
                self.wrap_or_err(n)
            } else {
                self.unwrap(n)
                    .ok_or_else(|| CatalogError::Corrupt(format!("transaction names {n:?}")))
            }
        };
        for (topic, _) in &mut r.partitions {
            *topic = map(topic)?;
        }
        for g in &mut r.groups {
            *g = map(g)?;
        }
        Ok(r)
    }

    fn expansion(&self, mut e: Expansion, inward: bool) -> CatalogResult<Expansion> {
        for v in &mut e.versions {
            if let Some(spec) = &mut v.spec {
                spec.namespace = if inward {
                    self.wrap_or_err(&spec.namespace)?
                } else {
                    self.unwrap(&spec.namespace).ok_or_else(|| {
                        CatalogError::Corrupt(format!("expansion into {:?}", spec.namespace))
                    })?
                };
            }
        }
        Ok(e)
    }

    /// An op with this view's names stored.
    fn op_in(&self, op: Op) -> CatalogResult<Op> {
        Ok(match op {
            Op::Kafka(KafkaOp::CreateTopic(mut t)) => {
                t.name = self.wrap_or_err(&t.name)?;
                Op::Kafka(KafkaOp::CreateTopic(t))
            }
            Op::Kafka(KafkaOp::UpdateTopic(mut t)) => {
                t.name = self.wrap_or_err(&t.name)?;
                Op::Kafka(KafkaOp::UpdateTopic(t))
            }
            Op::Kafka(KafkaOp::DeleteTopic { name }) => Op::Kafka(KafkaOp::DeleteTopic {
                name: self.wrap_or_err(&name)?,
            }),
            Op::Group(GroupOp::CommitOffset {
                group,
                topic,
                partition,
                offset,
            }) => Op::Group(GroupOp::CommitOffset {
                group: self.wrap_or_err(&group)?,
                topic: self.wrap_or_err(&topic)?,
                partition,
                offset,
            }),
            Op::Group(GroupOp::DeleteOffset {
                group,
                topic,
                partition,
            }) => Op::Group(GroupOp::DeleteOffset {
                group: self.wrap_or_err(&group)?,
                topic: self.wrap_or_err(&topic)?,
                partition,
            }),
            Op::Group(GroupOp::PutGroup(mut g)) => {
                g.name = self.wrap_or_err(&g.name)?;
                Op::Group(GroupOp::PutGroup(g))
            }
            Op::Group(GroupOp::DeleteGroup { name }) => Op::Group(GroupOp::DeleteGroup {
                name: self.wrap_or_err(&name)?,
            }),
            Op::Iceberg(IcebergOp::PutTopicTable {
                topic,
                expected,
                table,
            }) => Op::Iceberg(IcebergOp::PutTopicTable {
                topic: self.wrap_or_err(&topic)?,
                expected,
                table,
            }),
            Op::Expansion(ExpansionOp::PutExpansion {
                topic,
                source,
                expected,
                expansion,
            }) => Op::Expansion(ExpansionOp::PutExpansion {
                topic: self.wrap_or_err(&topic)?,
                source,
                expected,
                expansion: expansion.map(|e| self.expansion(e, true)).transpose()?,
            }),
            Op::Iceberg(IcebergOp::PutTable {
                namespace,
                name,
                expected,
                table,
            }) => Op::Iceberg(IcebergOp::PutTable {
                namespace: self.wrap_or_err(&namespace)?,
                name,
                expected,
                table,
            }),
            Op::Txn(TxnOp::PutTxn { id, record }) => Op::Txn(TxnOp::PutTxn {
                id: self.wrap_or_err(&id)?,
                record: self.txn_record(record, true)?,
            }),
            Op::Txn(TxnOp::DropTxn { id }) => Op::Txn(TxnOp::DropTxn {
                id: self.wrap_or_err(&id)?,
            }),
            Op::Txn(TxnOp::TxnOffsetCommit {
                id,
                producer_id,
                epoch,
                group,
                topic,
                partition,
                offset,
            }) => Op::Txn(TxnOp::TxnOffsetCommit {
                id: self.wrap_or_err(&id)?,
                producer_id,
                epoch,
                group: self.wrap_or_err(&group)?,
                topic: self.wrap_or_err(&topic)?,
                partition,
                offset,
            }),
            Op::Txn(TxnOp::EndTxn {
                id,
                producer_id,
                epoch,
                commit,
                markers,
                record,
            }) => Op::Txn(TxnOp::EndTxn {
                id: self.wrap_or_err(&id)?,
                producer_id,
                epoch,
                commit,
                markers,
                record: self.txn_record(record, true)?,
            }),
            Op::Kafka(KafkaOp::Append {
                topic_id,
                partition,
                offset_count,
                max_timestamp,
                batch,
                producer,
                transactional_id,
            }) => Op::Kafka(KafkaOp::Append {
                topic_id,
                partition,
                offset_count,
                max_timestamp,
                batch,
                producer,
                transactional_id: transactional_id
                    .map(|id| self.wrap_or_err(&id))
                    .transpose()?,
            }),
            // Objects, buckets, uploads, partitions by id, quotas, users and policies
            // are shared by every view.
            other @ (Op::S3(S3Op::CreateBucket(_))
            | Op::S3(S3Op::DeleteBucket { .. })
            | Op::S3(S3Op::PutObject { .. })
            | Op::S3(S3Op::SetObjectTags { .. })
            | Op::S3(S3Op::DeleteObjectVersion { .. })
            | Op::S3(S3Op::ExpectEtag { .. })
            | Op::S3(S3Op::ExpectUnlocked { .. })
            | Op::S3(S3Op::SetObjectRetention { .. })
            | Op::S3(S3Op::SetObjectLegalHold { .. })
            | Op::Kafka(KafkaOp::TruncateBefore { .. })
            | Op::S3(S3Op::CreateUpload(_))
            | Op::S3(S3Op::PutPart { .. })
            | Op::S3(S3Op::DeleteUpload { .. })
            | Op::Kafka(KafkaOp::AllocateProducerId)
            | Op::Kafka(KafkaOp::CompactPartition { .. })
            | Op::Kafka(KafkaOp::PutQuotas { .. })
            | Op::Iam(IamOp::PutUser { .. })
            | Op::Iam(IamOp::PutPolicy { .. })
            | Op::S3(S3Op::PutBucketPolicy { .. })
            | Op::S3(S3Op::PutBucketConfig { .. })
            | Op::S3(S3Op::ReplaceBucket { .. })) => other,
        })
    }
}

/// The client's name of a stored name under `prefix`, if it is that view's.
fn unwrap_name(prefix: &str, stored: &str) -> Option<String> {
    if prefix.is_empty() {
        (!stored.starts_with('\0')).then(|| stored.to_owned())
    } else {
        stored.strip_prefix(prefix).map(str::to_owned)
    }
}

/// A catalog error with the view's names as its clients know them.
fn error_out(prefix: &str, e: CatalogError) -> CatalogError {
    let strip = |n: String| unwrap_name(prefix, &n).unwrap_or(n);
    match e {
        CatalogError::UnknownTopic(n) => CatalogError::UnknownTopic(strip(n)),
        CatalogError::TopicExists(n) => CatalogError::TopicExists(strip(n)),
        other => other,
    }
}

#[async_trait::async_trait]
impl Catalog for ViewCatalog {
    fn commit(&self, txn: Transaction) -> CommitFuture {
        let leases = txn.leases;
        let ops: CatalogResult<Vec<Op>> = txn.ops.into_iter().map(|op| self.op_in(op)).collect();
        match ops {
            Ok(ops) => {
                let commit = self.inner.commit(Transaction::new(ops).under(leases));
                let prefix = self.prefix.clone();
                Box::pin(async move { commit.await.map_err(|e| error_out(&prefix, e)) })
            }
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }

    fn watch_partitions(&self, partitions: &[wakeups::PartitionId]) -> wakeups::PartitionWaiter {
        self.inner.watch_partitions(partitions)
    }

    fn blobs(&self) -> &BlobStore {
        self.inner.blobs()
    }

    async fn bucket(&self, name: &str) -> CatalogResult<Option<BucketRecord>> {
        self.inner.bucket(name).await
    }

    async fn buckets(&self) -> CatalogResult<Vec<BucketRecord>> {
        self.inner.buckets().await
    }

    async fn object(&self, bucket: &str, key: &str) -> CatalogResult<Option<ObjectVersion>> {
        self.inner.object(bucket, key).await
    }

    async fn object_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: &str,
    ) -> CatalogResult<Option<ObjectVersion>> {
        self.inner.object_version(bucket, key, version_id).await
    }

    async fn list_objects(
        &self,
        bucket: &str,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> CatalogResult<Vec<(String, ObjectVersion)>> {
        self.inner
            .list_objects(bucket, prefix, start_after, limit)
            .await
    }

    async fn list_versions(
        &self,
        bucket: &str,
        prefix: &str,
        start_key: Option<&str>,
        limit: usize,
    ) -> CatalogResult<Vec<(String, ObjectVersion)>> {
        self.inner
            .list_versions(bucket, prefix, start_key, limit)
            .await
    }

    async fn upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> CatalogResult<Option<UploadRecord>> {
        self.inner.upload(bucket, key, upload_id).await
    }

    async fn list_uploads(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<(&str, Option<&str>)>,
        limit: usize,
    ) -> CatalogResult<Vec<UploadRecord>> {
        self.inner.list_uploads(bucket, prefix, after, limit).await
    }

    async fn parts(
        &self,
        upload_id: &str,
        after: u32,
        limit: usize,
    ) -> CatalogResult<Vec<PartRecord>> {
        self.inner.parts(upload_id, after, limit).await
    }

    async fn topic(&self, name: &str) -> CatalogResult<Option<TopicRecord>> {
        let Some(stored) = self.wrap(name) else {
            return Ok(None);
        };
        Ok(self
            .inner
            .topic(&stored)
            .await?
            .and_then(|t| self.topic_out(t)))
    }

    async fn topic_by_id(&self, id: u128) -> CatalogResult<Option<TopicRecord>> {
        Ok(self
            .inner
            .topic_by_id(id)
            .await?
            .and_then(|t| self.topic_out(t)))
    }

    async fn topics(&self) -> CatalogResult<Vec<TopicRecord>> {
        Ok(self
            .inner
            .topics()
            .await?
            .into_iter()
            .filter_map(|t| self.topic_out(t))
            .collect())
    }

    async fn partition(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<PartitionState>> {
        self.inner.partition(topic_id, partition).await
    }

    async fn topic_table(&self, topic: &str) -> CatalogResult<Option<TopicTable>> {
        match self.wrap(topic) {
            Some(t) => self.inner.topic_table(&t).await,
            None => Ok(None),
        }
    }

    async fn compaction(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<CompactionState>> {
        self.inner.compaction(topic_id, partition).await
    }

    async fn expansions(&self, topic: &str) -> CatalogResult<Vec<(String, Expansion)>> {
        let Some(t) = self.wrap(topic) else {
            return Ok(Vec::new());
        };
        self.inner
            .expansions(&t)
            .await?
            .into_iter()
            .map(|(source, e)| Ok((source, self.expansion(e, false)?)))
            .collect()
    }

    async fn other_table(&self, namespace: &str, name: &str) -> CatalogResult<Option<TableRecord>> {
        match self.wrap(namespace) {
            Some(ns) => self.inner.other_table(&ns, name).await,
            None => Ok(None),
        }
    }

    async fn other_tables(&self) -> CatalogResult<Vec<(String, String, TableRecord)>> {
        Ok(self
            .inner
            .other_tables()
            .await?
            .into_iter()
            .filter_map(|(ns, name, t)| Some((self.unwrap(&ns)?, name, t)))
            .collect())
    }

    async fn read_batches(
        &self,
        topic_id: u128,
        partition: u32,
        from_offset: u64,
        max_bytes: usize,
    ) -> CatalogResult<Vec<StoredBatch>> {
        self.inner
            .read_batches(topic_id, partition, from_offset, max_bytes)
            .await
    }

    async fn batch_index(
        &self,
        topic_id: u128,
        partition: u32,
        from_offset: u64,
        limit: usize,
    ) -> CatalogResult<Vec<BatchInfo>> {
        self.inner
            .batch_index(topic_id, partition, from_offset, limit)
            .await
    }

    async fn producer_state(
        &self,
        producer_id: i64,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<ProducerState>> {
        self.inner
            .producer_state(producer_id, topic_id, partition)
            .await
    }

    async fn offset(
        &self,
        group: &str,
        topic: &str,
        partition: u32,
    ) -> CatalogResult<Option<OffsetRecord>> {
        match (self.wrap(group), self.wrap(topic)) {
            (Some(g), Some(t)) => self.inner.offset(&g, &t, partition).await,
            _ => Ok(None),
        }
    }

    async fn offsets(&self, group: &str) -> CatalogResult<Vec<(String, u32, OffsetRecord)>> {
        let Some(g) = self.wrap(group) else {
            return Ok(Vec::new());
        };
        Ok(self
            .inner
            .offsets(&g)
            .await?
            .into_iter()
            .filter_map(|(t, p, o)| Some((self.unwrap(&t)?, p, o)))
            .collect())
    }

    async fn group(&self, name: &str) -> CatalogResult<Option<GroupRecord>> {
        let Some(g) = self.wrap(name) else {
            return Ok(None);
        };
        Ok(self.inner.group(&g).await?.and_then(|g| self.group_out(g)))
    }

    async fn groups(&self) -> CatalogResult<Vec<GroupRecord>> {
        Ok(self
            .inner
            .groups()
            .await?
            .into_iter()
            .filter_map(|g| self.group_out(g))
            .collect())
    }

    async fn txn(&self, id: &str) -> CatalogResult<Option<TxnRecord>> {
        let Some(stored) = self.wrap(id) else {
            return Ok(None);
        };
        self.inner
            .txn(&stored)
            .await?
            .map(|r| self.txn_record(r, false))
            .transpose()
    }

    async fn txns(&self) -> CatalogResult<Vec<(String, TxnRecord)>> {
        self.inner
            .txns()
            .await?
            .into_iter()
            .filter_map(|(id, r)| self.unwrap(&id).map(|id| (id, r)))
            .map(|(id, r)| Ok((id, self.txn_record(r, false)?)))
            .collect()
    }

    async fn client_quotas(&self) -> CatalogResult<Vec<ClientQuotas>> {
        self.inner.client_quotas().await
    }

    async fn users(&self) -> CatalogResult<Vec<UserRecord>> {
        self.inner.users().await
    }

    async fn policies(&self) -> CatalogResult<Vec<PolicyRecord>> {
        self.inner.policies().await
    }

    async fn bucket_policies(&self) -> CatalogResult<Vec<crate::BucketPolicy>> {
        self.inner.bucket_policies().await
    }

    async fn bucket_config(
        &self,
        bucket: &str,
        kind: crate::BucketConfigKind,
    ) -> CatalogResult<Option<crate::BucketConfig>> {
        self.inner.bucket_config(bucket, kind).await
    }

    async fn bucket_configs(
        &self,
        kind: crate::BucketConfigKind,
    ) -> CatalogResult<Vec<crate::BucketConfig>> {
        self.inner.bucket_configs(kind).await
    }

    async fn txn_partition(&self, topic_id: u128, partition: u32) -> CatalogResult<TxnPartition> {
        self.inner.txn_partition(topic_id, partition).await
    }

    async fn stable_partition(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<(PartitionState, u64)>> {
        self.inner.stable_partition(topic_id, partition).await
    }

    async fn aborted_txns(
        &self,
        topic_id: u128,
        partition: u32,
        from: u64,
        to: u64,
    ) -> CatalogResult<Vec<AbortedTxn>> {
        self.inner.aborted_txns(topic_id, partition, from, to).await
    }

    async fn has_pending_txn_offset(
        &self,
        group: &str,
        topic: &str,
        partition: u32,
    ) -> CatalogResult<bool> {
        match (self.wrap(group), self.wrap(topic)) {
            (Some(g), Some(t)) => self.inner.has_pending_txn_offset(&g, &t, partition).await,
            _ => Ok(false),
        }
    }

    async fn producers_of(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Vec<(i64, ProducerState)>> {
        self.inner.producers_of(topic_id, partition).await
    }
}
