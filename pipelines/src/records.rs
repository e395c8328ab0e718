//! A link's source read as a read_committed consumer reads it (up to the last stable
//! offset, aborted transactions and control batches left out), and events written back
//! as Kafka record batches for the hand-off to append.

use bytes::Bytes;
use catalog::{Catalog, CatalogError, KafkaOp, Op, TopicRecord};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::RecordBatchDecoder;

/// Most bytes of batches one read takes.
const READ_BYTES: usize = 1 << 20;

/// One record of a source partition.
#[derive(Debug, Clone)]
pub struct SourceRecord {
    /// Its offset.
    pub offset: u64,
    /// Its timestamp, ms since the epoch.
    pub timestamp_ms: i64,
    /// Its key.
    pub key: Option<Bytes>,
    /// Its value.
    pub value: Option<Bytes>,
    /// Its headers, in order.
    pub headers: Vec<(String, Bytes)>,
}

/// What one read of a partition found.
#[derive(Debug, Default)]
pub struct Read {
    /// Its data records from the position on, in offset order.
    pub records: Vec<SourceRecord>,
    /// Where the next read starts: past every offset read (control batches and aborted
    /// records included), or the log start when the position fell below it.
    pub next: u64,
    /// The partition's end (its next offset) when it was read.
    pub end: u64,
}

/// Reads committed records of `topic`'s `partition` from offset `from`, at most about
/// [`READ_BYTES`] of batches.
pub async fn read(
    catalog: &dyn Catalog,
    topic: &TopicRecord,
    partition: u32,
    from: u64,
) -> Result<Read, CatalogError> {
    let Some((state, stable)) = catalog
        .kafka()
        .stable_partition(topic.id, partition)
        .await?
    else {
        return Err(CatalogError::UnknownPartition {
            topic: topic.name.clone(),
            partition,
        });
    };
    let from = from.max(state.log_start_offset);
    let mut out = Read {
        records: Vec::new(),
        next: from,
        end: state.next_offset,
    };
    if from >= stable {
        return Ok(out);
    }
    let batches = catalog
        .kafka()
        .read_batches(topic.id, partition, from, READ_BYTES)
        .await?;
    let aborted = catalog
        .txns()
        .aborted_txns(topic.id, partition, from, stable)
        .await?;
    for b in batches {
        if b.last_offset >= stable {
            break;
        }
        out.next = b.last_offset + 1;
        let control = b.bytes.get(22).is_some_and(|a| a & (1 << 5) != 0);
        if control || b.is_aborted(&aborted) {
            continue;
        }
        let mut buf = b.bytes.clone();
        let set = RecordBatchDecoder::decode(&mut buf).map_err(|e| {
            CatalogError::Corrupt(format!(
                "{} partition {partition} batch at {}: {e}",
                topic.name, b.base_offset
            ))
        })?;
        for r in set.records {
            let Ok(offset) = u64::try_from(r.offset) else {
                continue;
            };
            if offset < from {
                continue;
            }
            out.records.push(SourceRecord {
                offset,
                timestamp_ms: r.timestamp,
                key: r.key,
                value: r.value,
                headers: r
                    .headers
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.unwrap_or_default()))
                    .collect(),
            });
        }
    }
    Ok(out)
}

/// A record to append.
#[derive(Debug, Clone)]
pub struct OutRecord {
    /// Its key.
    pub key: Option<Bytes>,
    /// Its value.
    pub value: Bytes,
    /// Its headers, in order.
    pub headers: Vec<(String, Bytes)>,
    /// Its timestamp, ms since the epoch.
    pub timestamp_ms: i64,
}

/// One partition's records as the `KafkaOp::Append` that adds them (uncompressed,
/// CreateTime; the catalog assigns the offsets at commit).
pub fn append(topic_id: u128, partition: u32, records: &[OutRecord]) -> Result<Op, CatalogError> {
    let plain = records
        .iter()
        .map(|r| notify::record::PlainRecord {
            key: r.key.clone(),
            value: Some(r.value.clone()),
            headers: r
                .headers
                .iter()
                .map(|(k, v)| (StrBytes::from_string(k.clone()), v.clone()))
                .collect(),
            timestamp_ms: r.timestamp_ms,
        })
        .collect();
    let b = notify::record::encode_plain(plain, false)
        .map_err(|e| CatalogError::Invalid(format!("encoding a batch: {e}")))?;
    Ok(Op::Kafka(KafkaOp::Append {
        topic_id,
        partition,
        offset_count: b.offset_count,
        max_timestamp: b.max_timestamp,
        batch: b.bytes,
        producer: None,
        transactional_id: None,
    }))
}
