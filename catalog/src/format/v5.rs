//! Catalog format 5, frozen (first written by the build that added client quotas):
//! what format 5 adds to format 4, and nothing else.
//!
//! - **Log record payloads**: the same layout as formats 1 to 4, each op an [`Op`]:
//!   variant 0 wraps a format-4 op unchanged (which may itself wrap an older one),
//!   variant 1 is [`Op::PutQuotas`].
//! - **Store values**: [`ClientQuotas`] in `client_quotas` (checkpoint tag 23), keyed by
//!   the postcard bytes of its [`QuotaEntity`], which format-5 stores add. Every older
//!   value keeps its encoding.
//!
//! Nothing here may change; the next format gets a module of its own.

use serde::{Deserialize, Serialize};

use super::v4;
use crate::{model, txn};

/// A log record op of format 5, by variant index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// 0: a format-4 op, encoded as format 4 encodes it.
    V4(v4::Op),
    /// 1: `txn::KafkaOp::PutQuotas`.
    PutQuotas {
        entity: QuotaEntity,
        values: Vec<(String, f64)>,
    },
}

/// `model::QuotaEntity`: each part absent, the default (`Some(None)`) or a name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaEntity {
    pub user: Option<Option<String>>,
    pub client_id: Option<Option<String>>,
    pub ip: Option<Option<String>>,
}

/// `model::ClientQuotas`: the entity (so a scan needs no key decoding) and its values
/// by quota key, in key order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientQuotas {
    pub entity: QuotaEntity,
    pub values: Vec<(String, f64)>,
}

/// `txn::Transaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    pub ops: Vec<Op>,
}

/// The header of a format-5 log record payload.
#[derive(Debug, Serialize, Deserialize)]
pub struct RecordHeader {
    /// The group's transactions, with every batch left empty.
    pub txns: Vec<Transaction>,
    /// The lengths of the batches in the data section, in op order.
    pub batch_lens: Vec<u32>,
}

twin!(QuotaEntity <=> model::QuotaEntity { user, client_id, ip });

impl From<ClientQuotas> for model::ClientQuotas {
    fn from(v: ClientQuotas) -> Self {
        Self {
            entity: v.entity.into(),
            values: v.values.into_iter().collect(),
        }
    }
}

impl From<model::ClientQuotas> for ClientQuotas {
    fn from(v: model::ClientQuotas) -> Self {
        Self {
            entity: v.entity.into(),
            values: v.values.into_iter().collect(),
        }
    }
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
            Op::V4(op) => op.into(),
            Op::PutQuotas { entity, values } => txn::Op::Kafka(txn::KafkaOp::PutQuotas {
                entity: entity.into(),
                values: values.into_iter().collect(),
            }),
        }
    }
}

/// The format-5 form of a live op for a log record, its batches left out (their bytes go
/// to the record's data section).
pub fn op_for_record(op: &txn::Op) -> Op {
    match op {
        txn::Op::Kafka(txn::KafkaOp::PutQuotas { entity, values }) => Op::PutQuotas {
            entity: entity.clone().into(),
            values: values.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        },
        // Format 4 carries every other op.
        other => Op::V4(v4::op_for_record(other)),
    }
}
