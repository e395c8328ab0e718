//! Catalog format 13, frozen (first written by the build that added share groups,
//! KIP-932): what format 13 adds to format 12, and nothing else.
//!
//! - **Log record payloads**: the same layout as formats 1 to 12, each op an [`Op`]:
//!   variant 0 wraps a format-12 op unchanged (which may itself wrap an older one),
//!   variant 1 is [`Op::PutShareState`], variant 2 [`Op::DeleteShareState`].
//! - **Store values**: [`ShareStateRecord`] in `share_states` (checkpoint tag 35), keyed
//!   by `[u16 BE length][group][u128 BE topic id][u32 BE partition]` (the `offsets`
//!   table's group prefix, so one group's states are one prefix). Every older value
//!   keeps its encoding. From format 13 on, format 1's `DeleteGroup` also removes the
//!   group's share states (a store of an older format has none).
//!
//! Nothing here may change; the next format gets a module of its own.

use serde::{Deserialize, Serialize};

use super::v12;
use crate::{model, txn};

/// A log record op of format 13, by variant index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// 0: a format-12 op, encoded as format 12 encodes it.
    V12(Box<v12::Op>),
    /// 1: `txn::GroupOp::PutShareState`.
    PutShareState {
        group: String,
        topic_id: u128,
        partition: u32,
        state: ShareStateRecord,
    },
    /// 2: `txn::GroupOp::DeleteShareState`.
    DeleteShareState {
        group: String,
        topic_id: u128,
        partition: u32,
    },
}

/// `model::ShareStateRecord`: the broker's bytes, a varint length then the bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareStateRecord {
    pub state: Vec<u8>,
}

twin!(ShareStateRecord <=> model::ShareStateRecord { state });

/// `txn::Transaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    pub ops: Vec<Op>,
}

/// The header of a format-13 log record payload.
#[derive(Debug, Serialize, Deserialize)]
pub struct RecordHeader {
    /// The group's transactions, with every batch left empty.
    pub txns: Vec<Transaction>,
    /// The lengths of the batches in the data section, in op order.
    pub batch_lens: Vec<u32>,
}

impl From<Transaction> for txn::Transaction {
    fn from(v: Transaction) -> Self {
        Self::new(v.ops.into_iter().map(Into::into).collect())
    }
}

/// The live op, every batch empty (the record decoder fills them from the data section).
impl From<Op> for txn::Op {
    fn from(v: Op) -> Self {
        match v {
            Op::V12(op) => (*op).into(),
            Op::PutShareState {
                group,
                topic_id,
                partition,
                state,
            } => txn::Op::Group(txn::GroupOp::PutShareState {
                group,
                topic_id,
                partition,
                state: state.into(),
            }),
            Op::DeleteShareState {
                group,
                topic_id,
                partition,
            } => txn::Op::Group(txn::GroupOp::DeleteShareState {
                group,
                topic_id,
                partition,
            }),
        }
    }
}

/// The format-13 form of a live op for a log record, its batches left out (their bytes
/// go to the record's data section).
pub fn op_for_record(op: &txn::Op) -> Op {
    match op {
        txn::Op::Group(txn::GroupOp::PutShareState {
            group,
            topic_id,
            partition,
            state,
        }) => Op::PutShareState {
            group: group.clone(),
            topic_id: *topic_id,
            partition: *partition,
            state: state.clone().into(),
        },
        txn::Op::Group(txn::GroupOp::DeleteShareState {
            group,
            topic_id,
            partition,
        }) => Op::DeleteShareState {
            group: group.clone(),
            topic_id: *topic_id,
            partition: *partition,
        },
        // Format 12 carries every other op.
        other => Op::V12(Box::new(v12::op_for_record(other))),
    }
}
