//! Broker views: one catalog, several Kafka namespaces. A view's topics, groups,
//! transactional ids and expansion target namespaces are stored under names prefixed
//! with `\0VIEW\0` ([`crate::reads::names`] has the rules). [`ViewCatalog`] adds the
//! prefix to the names of the ops it commits, and tells the reads its prefix
//! ([`Catalog::view`]), which take it off on the way out; so the broker and the tabler
//! of a view see only its names, unprefixed. Buckets, objects, users and policies are
//! shared by every view.

use std::sync::Arc;

use crate::domain::{ExpansionOp, GroupOp, IamOp, IcebergOp, KafkaOp, S3Op, TxnOp};
use crate::reads::names::Names;
use crate::{BlobStore, Catalog, CatalogResult, CommitFuture, Op, Transaction, kv, read, wakeups};

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

    fn names(&self) -> Names<'_> {
        Names(Some(&self.prefix))
    }

    /// An op with this view's names stored.
    fn op_in(&self, op: Op) -> CatalogResult<Op> {
        Ok(match op {
            Op::Kafka(KafkaOp::CreateTopic(mut t)) => {
                t.name = self.names().stored_or_err(&t.name)?;
                Op::Kafka(KafkaOp::CreateTopic(t))
            }
            Op::Kafka(KafkaOp::UpdateTopic(mut t)) => {
                t.name = self.names().stored_or_err(&t.name)?;
                Op::Kafka(KafkaOp::UpdateTopic(t))
            }
            Op::Kafka(KafkaOp::DeleteTopic { name }) => Op::Kafka(KafkaOp::DeleteTopic {
                name: self.names().stored_or_err(&name)?,
            }),
            Op::Group(GroupOp::CommitOffset {
                group,
                topic,
                partition,
                offset,
            }) => Op::Group(GroupOp::CommitOffset {
                group: self.names().stored_or_err(&group)?,
                topic: self.names().stored_or_err(&topic)?,
                partition,
                offset,
            }),
            Op::Group(GroupOp::DeleteOffset {
                group,
                topic,
                partition,
            }) => Op::Group(GroupOp::DeleteOffset {
                group: self.names().stored_or_err(&group)?,
                topic: self.names().stored_or_err(&topic)?,
                partition,
            }),
            Op::Group(GroupOp::PutGroup(mut g)) => {
                g.name = self.names().stored_or_err(&g.name)?;
                Op::Group(GroupOp::PutGroup(g))
            }
            Op::Group(GroupOp::DeleteGroup { name }) => Op::Group(GroupOp::DeleteGroup {
                name: self.names().stored_or_err(&name)?,
            }),
            Op::Group(GroupOp::PutShareState {
                group,
                topic_id,
                partition,
                state,
            }) => Op::Group(GroupOp::PutShareState {
                group: self.names().stored_or_err(&group)?,
                topic_id,
                partition,
                state,
            }),
            Op::Group(GroupOp::DeleteShareState {
                group,
                topic_id,
                partition,
            }) => Op::Group(GroupOp::DeleteShareState {
                group: self.names().stored_or_err(&group)?,
                topic_id,
                partition,
            }),
            Op::Iceberg(IcebergOp::PutTopicTable {
                topic,
                expected,
                table,
            }) => Op::Iceberg(IcebergOp::PutTopicTable {
                topic: self.names().stored_or_err(&topic)?,
                expected,
                table,
            }),
            Op::Expansion(ExpansionOp::PutExpansion {
                topic,
                source,
                expected,
                expansion,
            }) => Op::Expansion(ExpansionOp::PutExpansion {
                topic: self.names().stored_or_err(&topic)?,
                source,
                expected,
                expansion: expansion
                    .map(|e| self.names().expansion(e, true))
                    .transpose()?,
            }),
            Op::Iceberg(IcebergOp::PutTable {
                namespace,
                name,
                expected,
                table,
            }) => Op::Iceberg(IcebergOp::PutTable {
                namespace: self.names().stored_or_err(&namespace)?,
                name,
                expected,
                table,
            }),
            Op::Iceberg(IcebergOp::PutNamespace {
                namespace,
                expected,
                record,
            }) => Op::Iceberg(IcebergOp::PutNamespace {
                namespace: self.names().stored_or_err(&namespace)?,
                expected,
                record,
            }),
            Op::Iceberg(IcebergOp::PutView {
                namespace,
                name,
                expected,
                view,
            }) => Op::Iceberg(IcebergOp::PutView {
                namespace: self.names().stored_or_err(&namespace)?,
                name,
                expected,
                view,
            }),
            Op::Iceberg(IcebergOp::ForgetTable {
                namespace,
                name,
                expected,
            }) => Op::Iceberg(IcebergOp::ForgetTable {
                namespace: self.names().stored_or_err(&namespace)?,
                name,
                expected,
            }),
            Op::Iceberg(IcebergOp::ForgetView {
                namespace,
                name,
                expected,
            }) => Op::Iceberg(IcebergOp::ForgetView {
                namespace: self.names().stored_or_err(&namespace)?,
                name,
                expected,
            }),
            Op::Txn(TxnOp::PutTxn { id, record }) => Op::Txn(TxnOp::PutTxn {
                id: self.names().stored_or_err(&id)?,
                record: self.names().txn_record(record, true)?,
            }),
            Op::Txn(TxnOp::DropTxn { id }) => Op::Txn(TxnOp::DropTxn {
                id: self.names().stored_or_err(&id)?,
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
                id: self.names().stored_or_err(&id)?,
                producer_id,
                epoch,
                group: self.names().stored_or_err(&group)?,
                topic: self.names().stored_or_err(&topic)?,
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
                id: self.names().stored_or_err(&id)?,
                producer_id,
                epoch,
                commit,
                markers,
                record: self.names().txn_record(record, true)?,
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
                    .map(|id| self.names().stored_or_err(&id))
                    .transpose()?,
            }),
            // Objects, buckets, uploads, partitions by id, quotas, users, policies,
            // pipelines and the schema registry are shared by every view.
            other @ (Op::S3(S3Op::CreateBucket(_))
            | Op::Pipeline(_)
            | Op::Schema(_)
            | Op::S3(S3Op::DeleteBucket { .. })
            | Op::S3(S3Op::PutObject { .. })
            | Op::S3(S3Op::SetObjectTags { .. })
            | Op::S3(S3Op::SetObjectAcl { .. })
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

impl Catalog for ViewCatalog {
    fn commit(&self, txn: Transaction) -> CommitFuture {
        let leases = txn.leases;
        let ops: CatalogResult<Vec<Op>> = txn.ops.into_iter().map(|op| self.op_in(op)).collect();
        match ops {
            Ok(ops) => {
                let commit = self.inner.commit(Transaction::new(ops).under(leases));
                let prefix = self.prefix.clone();
                Box::pin(async move { commit.await.map_err(|e| Names(Some(&prefix)).error_out(e)) })
            }
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }

    fn watch_partitions(&self, partitions: &[wakeups::PartitionId]) -> wakeups::PartitionWaiter {
        self.inner.watch_partitions(partitions)
    }

    fn partition_generations(&self, partitions: &[wakeups::PartitionId]) -> Vec<u64> {
        self.inner.partition_generations(partitions)
    }

    fn blobs(&self) -> &BlobStore {
        self.inner.blobs()
    }

    fn kv(&self) -> &dyn kv::KvRead {
        self.inner.kv()
    }

    fn log(&self) -> &dyn read::BatchLog {
        self.inner.log()
    }

    fn view(&self) -> Option<&str> {
        Some(&self.prefix)
    }
}
