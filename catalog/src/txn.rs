//! Transactions: lists of operations that commit all together or not at all.

pub use crate::domain::{
    ExpansionOp, GroupOp, IamOp, IcebergOp, KafkaOp, PipelineOp, S3Op, SchemaOp, TxnOp,
};
pub use crate::model::ProducerBatch;

/// One change. Operations in a transaction are checked against the state before the
/// transaction, then applied in order; an operation cannot depend on an earlier one in
/// the same transaction (create a topic, then append to it, in two transactions).
///
/// This is the live type, free to change: the log stores ops in a versioned format of
/// their own (`crate::format`).
// Unboxed on purpose: an op is as large as before the domains were nested (an S3
// version's record), and boxing would add an allocation to every op of every commit.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Buckets, objects, versions, uploads and bucket settings ([`crate::domain::s3`]).
    S3(S3Op),
    /// Topics, partitions, their batches, producer ids and client quotas ([`crate::domain::kafka`]).
    Kafka(KafkaOp),
    /// Consumer groups and their committed offsets ([`crate::domain::groups`]).
    Group(GroupOp),
    /// Kafka transactions ([`crate::domain::transactions`]).
    Txn(TxnOp),
    /// Users and identity policies ([`crate::domain::iam`]).
    Iam(IamOp),
    /// Topic tables and other Iceberg tables ([`crate::domain::iceberg`]).
    Iceberg(IcebergOp),
    /// Blob expansions ([`crate::domain::expansion`]).
    Expansion(ExpansionOp),
    /// Function pipelines and their cursors ([`crate::domain::pipelines`]).
    Pipeline(PipelineOp),
    /// The schema registry's schemas and subjects ([`crate::domain::schemas`]).
    Schema(SchemaOp),
}

impl From<S3Op> for Op {
    fn from(op: S3Op) -> Self {
        Op::S3(op)
    }
}

impl From<KafkaOp> for Op {
    fn from(op: KafkaOp) -> Self {
        Op::Kafka(op)
    }
}

impl From<GroupOp> for Op {
    fn from(op: GroupOp) -> Self {
        Op::Group(op)
    }
}

impl From<TxnOp> for Op {
    fn from(op: TxnOp) -> Self {
        Op::Txn(op)
    }
}

impl From<IamOp> for Op {
    fn from(op: IamOp) -> Self {
        Op::Iam(op)
    }
}

impl From<IcebergOp> for Op {
    fn from(op: IcebergOp) -> Self {
        Op::Iceberg(op)
    }
}

impl From<ExpansionOp> for Op {
    fn from(op: ExpansionOp) -> Self {
        Op::Expansion(op)
    }
}

impl From<SchemaOp> for Op {
    fn from(op: SchemaOp) -> Self {
        Op::Schema(op)
    }
}

impl From<PipelineOp> for Op {
    fn from(op: PipelineOp) -> Self {
        Op::Pipeline(op)
    }
}

/// A record batch rewritten by compaction: the records it keeps, at their offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactedBatch {
    /// Offset of its first record (its base offset field holds it).
    pub base_offset: u64,
    /// Offset of its last record.
    pub last_offset: u64,
    /// Its largest timestamp.
    pub max_timestamp: i64,
    /// The batch bytes.
    pub batch: bytes::Bytes,
}

/// A transaction marker for one partition: a control batch of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMarker {
    /// Topic id.
    pub topic_id: u128,
    /// Partition.
    pub partition: u32,
    /// Its timestamp.
    pub timestamp: i64,
    /// The control batch (base offset overwritten at commit).
    pub batch: bytes::Bytes,
}

/// Operations that commit together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transaction {
    /// In order.
    pub ops: Vec<Op>,
    /// The address leases the transaction is made under (a cluster node's Kafka work):
    /// it commits only while its node still holds every one of them at its epoch. A
    /// precondition of the commit, not stored in the log.
    pub leases: Vec<Lease>,
}

/// A cluster address held at an epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The address, as the cluster's address list spells it.
    pub address: String,
    /// The epoch it is held at.
    pub epoch: i64,
}

impl Transaction {
    /// A transaction of these operations.
    pub fn new(ops: Vec<Op>) -> Self {
        Self {
            ops,
            leases: Vec::new(),
        }
    }

    /// The same transaction, made under `leases`.
    pub fn under(self, leases: Vec<Lease>) -> Self {
        Self { leases, ..self }
    }

    /// The same transaction without the operations `left_out` marks (one flag per
    /// operation): what the log records of it, so recovery replays only what was
    /// applied.
    pub fn without(&self, left_out: &[bool]) -> Self {
        Self {
            ops: self
                .ops
                .iter()
                .zip(left_out)
                .filter(|(_, out)| !**out)
                .map(|(op, _)| op.clone())
                .collect(),
            leases: self.leases.clone(),
        }
    }

    /// Approximate size, for batching.
    pub fn approx_bytes(&self) -> usize {
        self.ops
            .iter()
            .map(|op| match op {
                Op::Kafka(KafkaOp::Append { batch, .. }) => batch.len() + 64,
                Op::Kafka(KafkaOp::CompactPartition { added, .. }) => {
                    added.iter().map(|b| b.batch.len() + 64).sum::<usize>() + 128
                }
                Op::Txn(TxnOp::EndTxn { markers, .. }) => {
                    markers.iter().map(|m| m.batch.len() + 64).sum::<usize>() + 128
                }
                Op::S3(S3Op::PutObject { version, .. }) => match &version.data {
                    crate::model::ObjectData::Inline(d) => d.len() + 256,
                    _ => 256,
                },
                Op::Schema(SchemaOp::PutSchema { record, .. }) => record.schema.len() + 256,
                Op::Group(GroupOp::PutShareState { group, state, .. }) => {
                    group.len() + state.state.len() + 128
                }
                _ => 128,
            })
            .sum()
    }
}

/// What one operation produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpOutcome {
    /// Nothing to report.
    Done,
    /// A batch was appended at this base offset.
    Appended {
        /// Offset of its first record.
        base_offset: u64,
        /// The partition's log start offset after the append (Produce answers it, and
        /// reading it again would cost a PostgreSQL catalog a transaction).
        log_start_offset: u64,
    },
    /// A producer id was allocated.
    ProducerId(i64),
    /// An idempotent batch that was appended before (a retry of one of its producer's
    /// last batches on the partition): left out of the transaction, whose other
    /// operations commit; it was appended at this base offset.
    Duplicate {
        /// Offset of its first record, where it was first appended.
        base_offset: u64,
    },
}

/// What a committed transaction produced, one outcome per operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitOutcome {
    /// The log record that holds it.
    pub lsn: u64,
    /// Per operation, in order.
    pub ops: Vec<OpOutcome>,
}
