//! The payload of one log record (one group commit): the appended batch bytes first, then
//! the transactions with those bytes left out, then the header's length.
//!
//! `[batch data][postcard header][u32 LE header length]` (format 1: the header is
//! [`v1::RecordHeader`]; the log frame names the format, see `crate::format`).
//!
//! Batches come first so their offsets in the payload are known while the group is being
//! applied, before the header is encoded; the catalog's batch index points at them, and
//! fetches read them straight from the log.

use bytes::Bytes;

use crate::error::{CatalogError, CatalogResult};
use crate::format::{self, v1};
use crate::txn::{Op, Transaction};

/// Builds a record payload (in [`format::RECORD_FORMAT`]) from the batch data section and
/// the accepted transactions.
pub fn encode(mut data: Vec<u8>, txns: &[&Transaction]) -> CatalogResult<Vec<u8>> {
    let mut batch_lens = Vec::new();
    let txns = txns
        .iter()
        .map(|t| {
            for op in &t.ops {
                if let Op::Append { batch, .. } = op {
                    batch_lens.push(batch.len() as u32);
                }
            }
            v1::Transaction {
                ops: t.ops.iter().map(v1::op_for_record).collect(),
            }
        })
        .collect();
    let header = postcard::to_stdvec(&v1::RecordHeader { txns, batch_lens })?;
    data.extend_from_slice(&header);
    data.extend_from_slice(&(header.len() as u32).to_le_bytes());
    Ok(data)
}

/// Splits a record payload of `format` back into its transactions, batches included (as
/// slices of the payload, not copies).
pub fn decode(lsn: u64, format: u16, payload: Vec<u8>) -> CatalogResult<Vec<Transaction>> {
    format::check_record_format(lsn, format)?;
    // Format 1 is the only one so far; the next adds its arm here.
    decode_v1(payload)
}

fn decode_v1(payload: Vec<u8>) -> CatalogResult<Vec<Transaction>> {
    let corrupt = |what: &str| CatalogError::Corrupt(format!("log record: {what}"));
    let n = payload.len();
    let header_len = payload
        .get(n.saturating_sub(4)..)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| corrupt("too short"))? as usize;
    let data_len = n
        .checked_sub(4 + header_len)
        .ok_or_else(|| corrupt("header length"))?;
    let header: v1::RecordHeader = postcard::from_bytes(&payload[data_len..n - 4])?;
    let data = Bytes::from(payload).slice(..data_len);
    let mut lens = header.batch_lens.into_iter();
    let mut at = 0usize;
    let mut txns: Vec<Transaction> = header.txns.into_iter().map(Into::into).collect();
    for op in txns.iter_mut().flat_map(|t| t.ops.iter_mut()) {
        if let Op::Append { batch, .. } = op {
            let len = lens.next().ok_or_else(|| corrupt("batch count"))? as usize;
            let end = at.checked_add(len).filter(|e| *e <= data_len);
            *batch = data.slice(at..end.ok_or_else(|| corrupt("batch bounds"))?);
            at += len;
        }
    }
    Ok(txns)
}
