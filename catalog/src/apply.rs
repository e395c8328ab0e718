//! Checking and applying operations inside one write transaction of either backend's
//! store: [`Tables`] sends each [`Op`] to its domain's check and apply
//! (`crate::domain`), and holds what every domain shares (the write transaction, the
//! log record's data section, side effects, typed table access).
//! `check_transaction` runs for every operation of a transaction before any is applied,
//! so a transaction either applies whole or not at all (an idempotent batch already
//! appended is left out, and the log records the transaction without it); `apply` is
//! deterministic, which is what lets recovery replay the log into the same state.

use storage::BlobMeta;
use storage::wal::LogPosition;

use crate::domain::KafkaOp;
use crate::domain::kafka::Sequences;
use crate::error::CatalogResult;
use crate::format::Stored;
use crate::kv::{KvWrite, Range};
use crate::tables::*;
use crate::txn::{Op, OpOutcome};

/// Longest S3 key, in bytes.
pub const MAX_KEY_LEN: usize = 1024;

/// Encodes a record in the store's format.
pub fn enc<T: Stored>(v: &T) -> CatalogResult<Vec<u8>> {
    v.encode()
}

/// Decodes a record of the store's format.
pub fn dec<T: Stored>(b: &[u8]) -> CatalogResult<T> {
    T::decode(b)
}

/// What checking a transaction found.
#[derive(Debug)]
pub struct Checked {
    /// Per operation: the base offset of a duplicate idempotent batch, left out.
    left_out: Vec<Option<u64>>,
}

impl Checked {
    /// What the log records of `txn` when some of its operations are left out: the
    /// transaction [`without`](crate::txn::Transaction::without) them (`None`: all apply,
    /// and the log records `txn` as it is).
    pub fn recorded(&self, txn: &crate::txn::Transaction) -> Option<crate::txn::Transaction> {
        self.left_out.iter().any(Option::is_some).then(|| {
            let out: Vec<bool> = self.left_out.iter().map(Option::is_some).collect();
            txn.without(&out)
        })
    }
}

/// The catalog's rules, applied through one backend's write transaction for the length of
/// one group commit.
pub struct Tables<'s> {
    pub(crate) s: &'s mut dyn KvWrite,
}

/// Side effects to carry out once the commit is durable.
#[derive(Debug, Default)]
pub struct Effects {
    /// Blobs no longer referenced.
    pub freed_blobs: Vec<BlobMeta>,
}

/// The data section of the log record being built: appended batches go here (base
/// offset already rewritten), and their index entries point at it.
pub struct LogCursor {
    /// Where the record will be.
    pub position: LogPosition,
    /// Batch bytes, in append order.
    pub data: Vec<u8>,
    /// Whether to copy bytes (false when replaying: they are in the log already).
    pub collect: bool,
    len: u64,
}

impl LogCursor {
    /// An empty data section for the record at `position`.
    pub fn new(position: LogPosition, collect: bool) -> Self {
        Self {
            position,
            data: Vec::new(),
            collect,
            len: 0,
        }
    }

    /// Adds a batch with its base offset rewritten; returns its offset in the payload.
    pub(crate) fn push(&mut self, batch: &[u8], base_offset: u64) -> u64 {
        let at = self.len;
        if self.collect {
            self.data.extend_from_slice(batch);
            let start = at as usize;
            self.data[start..start + 8].copy_from_slice(&(base_offset as i64).to_be_bytes());
        }
        self.len += batch.len() as u64;
        at
    }
}

pub(crate) fn get<T: Stored>(
    s: &mut dyn KvWrite,
    t: Table,
    key: &[u8],
) -> CatalogResult<Option<T>> {
    s.get(t, key)?.map(|v| dec(&v)).transpose()
}

pub(crate) fn put<T: Stored>(
    s: &mut dyn KvWrite,
    t: Table,
    key: &[u8],
    v: &T,
) -> CatalogResult<()> {
    s.put(t, key, enc(v)?.as_slice())
}

pub(crate) fn has_prefix(s: &mut dyn KvWrite, t: Table, prefix: &[u8]) -> CatalogResult<bool> {
    let end = prefix_end(prefix);
    Ok(!s.range(t, Range::prefix(prefix, &end).take(1))?.is_empty())
}

/// Removes every key starting with `prefix`, calling `each` on the values.
pub(crate) fn remove_prefix(
    s: &mut dyn KvWrite,
    t: Table,
    prefix: &[u8],
    mut each: impl FnMut(&[u8]) -> CatalogResult<()>,
) -> CatalogResult<()> {
    let end = prefix_end(prefix);
    for (k, v) in s.range(t, Range::prefix(prefix, &end))? {
        each(&v)?;
        s.remove(t, &k)?;
    }
    Ok(())
}

impl<'s> Tables<'s> {
    /// The rules over one write transaction.
    pub fn new(s: &'s mut dyn KvWrite) -> Self {
        Self { s }
    }

    /// Reads a meta counter.
    pub fn counter(&mut self, name: &[u8]) -> CatalogResult<u64> {
        Ok(self
            .s
            .get(META, name)?
            .and_then(|v| v.as_slice().try_into().ok().map(u64::from_be_bytes))
            .unwrap_or(0))
    }

    /// Sets a meta counter.
    pub fn set_counter(&mut self, name: &[u8], value: u64) -> CatalogResult<()> {
        self.s.put(META, name, value.to_be_bytes().as_slice())?;
        Ok(())
    }

    /// Checks every operation of a transaction against the current state, in order,
    /// before any is applied: what [`Tables::apply_checked`] then applies, or the error
    /// that refuses the whole transaction. An idempotent batch that repeats one already
    /// appended is no error: it is marked to be left out, and the rest commits (failing
    /// the transaction for it answered the request's other partitions with the
    /// duplicate's error, which clients take for success).
    pub fn check_transaction(&mut self, ops: &[Op]) -> CatalogResult<Checked> {
        let mut sequences = Sequences::default();
        let mut left_out = Vec::with_capacity(ops.len());
        for op in ops {
            self.check(op)?;
            left_out.push(match op {
                Op::Kafka(KafkaOp::Append {
                    topic_id,
                    partition,
                    producer: Some(p),
                    ..
                }) => sequences.check(self, p, *topic_id, *partition)?,
                _ => None,
            });
        }
        Ok(Checked { left_out })
    }

    /// Applies a transaction that passed [`Tables::check_transaction`]: one outcome per
    /// operation, [`OpOutcome::Duplicate`] for those left out.
    pub fn apply_checked(
        &mut self,
        ops: &[Op],
        checked: &Checked,
        effects: &mut Effects,
        log: &mut LogCursor,
    ) -> CatalogResult<Vec<OpOutcome>> {
        ops.iter()
            .zip(&checked.left_out)
            .map(|(op, dup)| match dup {
                Some(base_offset) => Ok(OpOutcome::Duplicate {
                    base_offset: *base_offset,
                }),
                None => self.apply(op, effects, log),
            })
            .collect()
    }

    /// Checks that `op` can apply to the current state (an idempotent batch's sequence
    /// aside: [`Tables::check_transaction`] checks those across the transaction).
    fn check(&mut self, op: &Op) -> CatalogResult<()> {
        match op {
            Op::S3(op) => self.check_s3(op),
            Op::Kafka(op) => self.check_kafka(op),
            Op::Group(op) => self.check_groups(op),
            Op::Txn(op) => self.check_transactions(op),
            Op::Iam(op) => self.check_iam(op),
            Op::Iceberg(op) => self.check_iceberg(op),
            Op::Expansion(op) => self.check_expansion(op),
            Op::Pipeline(op) => self.check_pipelines(op),
            Op::Schema(op) => self.check_schemas(op),
        }
    }

    /// Applies an operation that passed [`Tables::check`].
    pub fn apply(
        &mut self,
        op: &Op,
        effects: &mut Effects,
        log: &mut LogCursor,
    ) -> CatalogResult<OpOutcome> {
        match op {
            Op::S3(op) => self.apply_s3(op, effects, log),
            Op::Kafka(op) => self.apply_kafka(op, effects, log),
            Op::Group(op) => self.apply_groups(op, effects, log),
            Op::Txn(op) => self.apply_transactions(op, effects, log),
            Op::Iam(op) => self.apply_iam(op, effects, log),
            Op::Iceberg(op) => self.apply_iceberg(op, effects, log),
            Op::Expansion(op) => self.apply_expansion(op, effects, log),
            Op::Pipeline(op) => self.apply_pipelines(op, effects, log),
            Op::Schema(op) => self.apply_schemas(op, effects, log),
        }
    }
}
