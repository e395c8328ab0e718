//! The payload of one log record (one group commit): the appended batch bytes first, then
//! the transactions with those bytes left out, then the header's length.
//!
//! `[batch data][postcard header][u32 LE header length]`; the header is a
//! [`v1::RecordHeader`] in format 1, a [`v2::RecordHeader`] in format 2, a
//! [`v3::RecordHeader`] in format 3, a [`v4::RecordHeader`] in format 4, a
//! [`v5::RecordHeader`] in format 5, a [`v6::RecordHeader`] in format 6, a
//! [`v7::RecordHeader`] in format 7, a [`v8::RecordHeader`] in format 8, a
//! [`v9::RecordHeader`] in format 9, a [`v10::RecordHeader`] in format 10, a
//! [`v11::RecordHeader`] in format 11, a [`v12::RecordHeader`] in format 12 and a
//! [`v13::RecordHeader`] in format 13 (the log frame names the format, see
//! `crate::format`).
//!
//! Batches come first so their offsets in the payload are known while the group is being
//! applied, before the header is encoded; the catalog's batch index points at them, and
//! fetches read them straight from the log.

use crate::domain::{KafkaOp, TxnOp};
use bytes::Bytes;

use crate::error::{CatalogError, CatalogResult};
use crate::format::{self, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13};
use crate::txn::{Op, Transaction};

/// Builds a record payload (in [`format::RECORD_FORMAT`], 13) from the batch data section
/// and the accepted transactions.
pub fn encode(mut data: Vec<u8>, txns: &[&Transaction]) -> CatalogResult<Vec<u8>> {
    let mut batch_lens = Vec::new();
    let txns = txns
        .iter()
        .map(|t| {
            for op in &t.ops {
                for_each_batch(op, |batch| batch_lens.push(batch.len() as u32));
            }
            v13::Transaction {
                ops: t.ops.iter().map(v13::op_for_record).collect(),
            }
        })
        .collect();
    let header = postcard::to_stdvec(&v13::RecordHeader { txns, batch_lens })?;
    data.extend_from_slice(&header);
    data.extend_from_slice(&(header.len() as u32).to_le_bytes());
    Ok(data)
}

/// Calls `f` on each batch an op puts in the data section, in order.
fn for_each_batch(op: &Op, mut f: impl FnMut(&Bytes)) {
    match op {
        Op::Kafka(KafkaOp::Append { batch, .. }) => f(batch),
        Op::Kafka(KafkaOp::CompactPartition { added, .. }) => {
            added.iter().for_each(|b| f(&b.batch))
        }
        Op::Txn(TxnOp::EndTxn { markers, .. }) => markers.iter().for_each(|m| f(&m.batch)),
        _ => {}
    }
}

/// Splits a record payload of `format` back into its transactions, batches included (as
/// slices of the payload, not copies).
pub fn decode(lsn: u64, format: u16, payload: Vec<u8>) -> CatalogResult<Vec<Transaction>> {
    format::check_record_format(lsn, format)?;
    let (header, data) = split(&payload)?;
    let (txns, lens): (Vec<Transaction>, Vec<u32>) = match format {
        1 => {
            let h: v1::RecordHeader = postcard::from_bytes(header)?;
            (h.txns.into_iter().map(Into::into).collect(), h.batch_lens)
        }
        2 => {
            let h: v2::RecordHeader = postcard::from_bytes(header)?;
            (h.txns.into_iter().map(Into::into).collect(), h.batch_lens)
        }
        3 => {
            let h: v3::RecordHeader = postcard::from_bytes(header)?;
            (h.txns.into_iter().map(Into::into).collect(), h.batch_lens)
        }
        4 => {
            let h: v4::RecordHeader = postcard::from_bytes(header)?;
            (h.txns.into_iter().map(Into::into).collect(), h.batch_lens)
        }
        5 => {
            let h: v5::RecordHeader = postcard::from_bytes(header)?;
            (h.txns.into_iter().map(Into::into).collect(), h.batch_lens)
        }
        6 => {
            let h: v6::RecordHeader = postcard::from_bytes(header)?;
            (h.txns.into_iter().map(Into::into).collect(), h.batch_lens)
        }
        7 => {
            let h: v7::RecordHeader = postcard::from_bytes(header)?;
            (h.txns.into_iter().map(Into::into).collect(), h.batch_lens)
        }
        8 => {
            let h: v8::RecordHeader = postcard::from_bytes(header)?;
            (h.txns.into_iter().map(Into::into).collect(), h.batch_lens)
        }
        9 => {
            let h: v9::RecordHeader = postcard::from_bytes(header)?;
            (h.txns.into_iter().map(Into::into).collect(), h.batch_lens)
        }
        10 => {
            let h: v10::RecordHeader = postcard::from_bytes(header)?;
            (h.txns.into_iter().map(Into::into).collect(), h.batch_lens)
        }
        11 => {
            let h: v11::RecordHeader = postcard::from_bytes(header)?;
            (h.txns.into_iter().map(Into::into).collect(), h.batch_lens)
        }
        12 => {
            let h: v12::RecordHeader = postcard::from_bytes(header)?;
            (h.txns.into_iter().map(Into::into).collect(), h.batch_lens)
        }
        _ => {
            let h: v13::RecordHeader = postcard::from_bytes(header)?;
            (h.txns.into_iter().map(Into::into).collect(), h.batch_lens)
        }
    };
    let data = Bytes::from(payload).slice(..data);
    fill_batches(txns, lens, data)
}

fn corrupt(what: &str) -> CatalogError {
    CatalogError::Corrupt(format!("log record: {what}"))
}

/// The header bytes and the data section's length.
fn split(payload: &[u8]) -> CatalogResult<(&[u8], usize)> {
    let n = payload.len();
    let header_len = payload
        .get(n.saturating_sub(4)..)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| corrupt("too short"))? as usize;
    let data_len = n
        .checked_sub(4 + header_len)
        .ok_or_else(|| corrupt("header length"))?;
    Ok((&payload[data_len..n - 4], data_len))
}

/// Points every batch of the decoded ops at its bytes in the data section (same order in
/// every format: op order, an op's batches in order).
fn fill_batches(
    mut txns: Vec<Transaction>,
    lens: Vec<u32>,
    data: Bytes,
) -> CatalogResult<Vec<Transaction>> {
    let mut lens = lens.into_iter();
    let mut at = 0usize;
    let mut next = || -> CatalogResult<Bytes> {
        let len = lens.next().ok_or_else(|| corrupt("batch count"))? as usize;
        let end = at.checked_add(len).filter(|e| *e <= data.len());
        let b = data.slice(at..end.ok_or_else(|| corrupt("batch bounds"))?);
        at += len;
        Ok(b)
    };
    for op in txns.iter_mut().flat_map(|t| t.ops.iter_mut()) {
        match op {
            Op::Kafka(KafkaOp::Append { batch, .. }) => *batch = next()?,
            Op::Kafka(KafkaOp::CompactPartition { added, .. }) => {
                for b in added {
                    b.batch = next()?;
                }
            }
            Op::Txn(TxnOp::EndTxn { markers, .. }) => {
                for m in markers {
                    m.batch = next()?;
                }
            }
            _ => {}
        }
    }
    Ok(txns)
}
