//! The payload of one log record (one group commit): the appended batch bytes first, then
//! the transactions with those bytes left out, then the header's length.
//!
//! `[batch data][postcard header][u32 LE header length]`
//!
//! Batches come first so their offsets in the payload are known while the group is being
//! applied, before the header is encoded; the catalog's batch index points at them, and
//! fetches read them straight from the log.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::error::{CatalogError, CatalogResult};
use crate::txn::{Op, Transaction};

#[derive(Serialize, Deserialize)]
struct Header {
    txns: Vec<Transaction>,
    batch_lens: Vec<u32>,
}

/// Builds a record payload from the batch data section and the accepted transactions.
pub fn encode(mut data: Vec<u8>, txns: &[&Transaction]) -> CatalogResult<Vec<u8>> {
    let mut batch_lens = Vec::new();
    let txns = txns
        .iter()
        .map(|t| {
            let ops = t
                .ops
                .iter()
                .map(|op| match op {
                    Op::Append {
                        topic_id,
                        partition,
                        offset_count,
                        max_timestamp,
                        batch,
                        producer,
                    } => {
                        batch_lens.push(batch.len() as u32);
                        Op::Append {
                            topic_id: *topic_id,
                            partition: *partition,
                            offset_count: *offset_count,
                            max_timestamp: *max_timestamp,
                            batch: Bytes::new(),
                            producer: *producer,
                        }
                    }
                    other => other.clone(),
                })
                .collect();
            Transaction { ops }
        })
        .collect();
    let header = postcard::to_stdvec(&Header { txns, batch_lens })?;
    data.extend_from_slice(&header);
    data.extend_from_slice(&(header.len() as u32).to_le_bytes());
    Ok(data)
}

/// Splits a record payload back into its transactions, batches included (as slices of
/// the payload, not copies).
pub fn decode(payload: Vec<u8>) -> CatalogResult<Vec<Transaction>> {
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
    let header: Header = postcard::from_bytes(&payload[data_len..n - 4])?;
    let data = Bytes::from(payload).slice(..data_len);
    let mut lens = header.batch_lens.into_iter();
    let mut at = 0usize;
    let mut txns = header.txns;
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
