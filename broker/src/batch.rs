//! Kafka record batches (magic v2) as they arrive in produce requests: the fixed 61-byte
//! header is read and checked here (length, magic, CRC-32C, offsets, producer fields);
//! the records themselves, possibly compressed, are stored as sent.

use bytes::{Bytes, BytesMut};
use kafka_protocol::error::ResponseError;

/// Bytes of the batch header before the first record.
pub const HEADER_LEN: usize = 61;
const ATTR_TIMESTAMP_TYPE: i16 = 1 << 3;
const ATTR_TRANSACTIONAL: i16 = 1 << 4;
const ATTR_CONTROL: i16 = 1 << 5;

/// A checked batch.
#[derive(Debug, Clone)]
pub struct Batch {
    /// The whole batch.
    pub bytes: Bytes,
    /// Records in it.
    pub record_count: i32,
    /// Offsets it covers (last offset delta + 1).
    pub offset_count: u32,
    /// First timestamp.
    pub base_timestamp: i64,
    /// Largest timestamp.
    pub max_timestamp: i64,
    /// Producer id (-1 when not idempotent).
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// Sequence of the first record (-1 when not idempotent).
    pub base_sequence: i32,
    /// Part of a transaction.
    pub transactional: bool,
}

fn i16_at(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn i64_at(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

/// Why a partition's records were refused.
#[derive(Debug, Clone)]
pub struct Refusal {
    /// The Kafka error.
    pub error: ResponseError,
    /// A message for the client.
    pub message: String,
    /// The records that caused it, each as (its index in its batch, why): the produce
    /// response's `record_errors`, so clients report which record failed.
    pub records: Vec<(i32, String)>,
}

impl Refusal {
    /// INVALID_RECORD for the records named (index in their batch, why), with the
    /// message Kafka gives: the first three, and how many in all.
    pub fn invalid_records(records: Vec<(i32, String)>) -> Self {
        let shown: Vec<String> = records
            .iter()
            .take(3)
            .map(|(i, m)| format!("{{batch index {i}: {m}}}"))
            .collect();
        Refusal {
            error: ResponseError::InvalidRecord,
            message: format!(
                "One or more records have been rejected due to {} record errors in total, \
                 and only showing the first three errors at most: [{}]",
                records.len(),
                shown.join(", ")
            ),
            records,
        }
    }
}

fn refuse(error: ResponseError, message: impl Into<String>) -> Refusal {
    Refusal {
        error,
        message: message.into(),
        records: Vec::new(),
    }
}

/// Splits a partition's `records` into batches and checks each one; `max_batch_bytes` is
/// the topic's `max.message.bytes`.
pub fn parse(records: &Bytes, max_batch_bytes: usize) -> Result<Vec<Batch>, Refusal> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    if records.is_empty() {
        return Err(refuse(ResponseError::InvalidRecord, "no record batch"));
    }
    while pos < records.len() {
        let rest = &records[pos..];
        if rest.len() < HEADER_LEN {
            return Err(refuse(
                ResponseError::CorruptMessage,
                "truncated batch header",
            ));
        }
        let magic = rest[16] as i8;
        if magic != 2 {
            return Err(refuse(
                ResponseError::UnsupportedForMessageFormat,
                format!("message format v{magic}; only v2 record batches are accepted"),
            ));
        }
        let batch_len = i32_at(rest, 8);
        let total = usize::try_from(batch_len)
            .ok()
            .and_then(|l| l.checked_add(12))
            .filter(|t| *t >= HEADER_LEN && *t <= rest.len())
            .ok_or_else(|| refuse(ResponseError::CorruptMessage, "batch length out of bounds"))?;
        if total > max_batch_bytes {
            return Err(refuse(
                ResponseError::MessageTooLarge,
                format!("batch of {total} bytes exceeds max.message.bytes {max_batch_bytes}"),
            ));
        }
        let b = &rest[..total];
        let crc = u32::from_be_bytes([b[17], b[18], b[19], b[20]]);
        if crc32c::crc32c(&b[21..]) != crc {
            return Err(refuse(ResponseError::CorruptMessage, "batch CRC mismatch"));
        }
        let attributes = i16_at(b, 21);
        // Markers are the coordinator's to write, as in Kafka.
        if attributes & ATTR_CONTROL != 0 {
            return Err(refuse(
                ResponseError::InvalidRecord,
                "control batches are written by the transaction coordinator only",
            ));
        }
        let last_offset_delta = i32_at(b, 23);
        let record_count = i32_at(b, 57);
        // Producers number a batch's records 0..count; anything else would burn offsets.
        if record_count <= 0 || last_offset_delta != record_count - 1 {
            return Err(refuse(
                ResponseError::InvalidRecord,
                format!("{record_count} records with last offset delta {last_offset_delta}"),
            ));
        }
        let mut batch = Batch {
            bytes: records.slice(pos..pos + total),
            record_count,
            offset_count: last_offset_delta as u32 + 1,
            base_timestamp: i64_at(b, 27),
            max_timestamp: i64_at(b, 35),
            producer_id: i64_at(b, 43),
            producer_epoch: i16_at(b, 51),
            base_sequence: i32_at(b, 53),
            transactional: attributes & ATTR_TRANSACTIONAL != 0,
        };
        if batch.max_timestamp < batch.base_timestamp {
            batch.repair_max_timestamp()?;
        }
        out.push(batch);
        pos += total;
    }
    Ok(out)
}

/// A transaction marker: a control batch of one record whose key says commit or abort
/// (KIP-98's `EndTxnMarker`: key version 0 and type 1 commit / 0 abort, value version 0
/// and the coordinator epoch), base offset 0 until the catalog assigns one.
pub fn control_batch(producer_id: i64, epoch: i16, commit: bool, timestamp: i64) -> Bytes {
    // One record: attributes, timestamp delta 0, offset delta 0, a 4-byte key, a 6-byte
    // value, no headers; every varint here is a single byte.
    let mut record = vec![0u8, 0, 0, 8];
    record.extend_from_slice(&0i16.to_be_bytes());
    record.extend_from_slice(&i16::from(commit).to_be_bytes());
    record.push(12);
    record.extend_from_slice(&0i16.to_be_bytes());
    record.extend_from_slice(&0i32.to_be_bytes());
    record.push(0);
    let mut b = BytesMut::with_capacity(HEADER_LEN + 1 + record.len());
    b.extend_from_slice(&0i64.to_be_bytes());
    let len = (HEADER_LEN - 12 + 1 + record.len()) as i32;
    b.extend_from_slice(&len.to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes()); // partition leader epoch
    b.extend_from_slice(&[2]); // magic
    b.extend_from_slice(&0u32.to_be_bytes()); // CRC, set below
    b.extend_from_slice(&(ATTR_TRANSACTIONAL | ATTR_CONTROL).to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes()); // last offset delta
    b.extend_from_slice(&timestamp.to_be_bytes());
    b.extend_from_slice(&timestamp.to_be_bytes());
    b.extend_from_slice(&producer_id.to_be_bytes());
    b.extend_from_slice(&epoch.to_be_bytes());
    b.extend_from_slice(&(-1i32).to_be_bytes()); // base sequence
    b.extend_from_slice(&1i32.to_be_bytes()); // records
    // Record length as a zigzag varint (the record is shorter than 64 bytes).
    b.extend_from_slice(&[(record.len() as u8) << 1]);
    b.extend_from_slice(&record);
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b.freeze()
}

impl Batch {
    /// Whether an idempotent producer sent it.
    pub fn is_idempotent(&self) -> bool {
        self.producer_id >= 0 && self.base_sequence >= 0
    }

    /// Refuses a batch holding a record without a key, as Kafka does on compacted topics
    /// (compaction keeps the latest record per key; a keyless one has none).
    pub fn require_keys(&self) -> Result<(), Refusal> {
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut self.bytes.clone())
            .map_err(|e| {
                refuse(
                    ResponseError::CorruptMessage,
                    format!("records do not decode: {e}"),
                )
            })?;
        let keyless: Vec<(i32, String)> = set
            .records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.key.is_none())
            .map(|(i, _)| {
                (
                    i32::try_from(i).unwrap_or(i32::MAX),
                    "Compacted topic cannot accept message without key.".to_owned(),
                )
            })
            .collect();
        if keyless.is_empty() {
            return Ok(());
        }
        Err(Refusal::invalid_records(keyless))
    }

    /// Sets the header's largest timestamp from the records, as Kafka's log validator
    /// does, for a batch whose header has none: Sarama 1.22 leaves it at -1, and a
    /// batch that says its newest record is older than its first would be deleted by
    /// the first retention pass and never found by a time lookup. Only such batches
    /// are decoded (decompressed, within the same bound as [`Batch::require_keys`]).
    fn repair_max_timestamp(&mut self) -> Result<(), Refusal> {
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut self.bytes.clone())
            .map_err(|e| {
                refuse(
                    ResponseError::CorruptMessage,
                    format!("records do not decode: {e}"),
                )
            })?;
        let max = set
            .records
            .iter()
            .map(|r| r.timestamp)
            .max()
            .unwrap_or(self.base_timestamp)
            .max(self.base_timestamp);
        let mut b = BytesMut::from(&self.bytes[..]);
        b[35..43].copy_from_slice(&max.to_be_bytes());
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        self.bytes = b.freeze();
        self.max_timestamp = max;
        Ok(())
    }

    /// Sequence of the last record.
    pub fn last_sequence(&self) -> i32 {
        self.base_sequence.wrapping_add(self.record_count - 1) & i32::MAX
    }

    /// Stamps the batch with the broker's time (`LogAppendTime` topics): sets the
    /// timestamp type and both timestamps, and recomputes the CRC.
    pub fn stamp_log_append_time(&mut self, now_ms: i64) {
        let mut b = BytesMut::from(&self.bytes[..]);
        let attributes = i16_at(&b, 21) | ATTR_TIMESTAMP_TYPE;
        b[21..23].copy_from_slice(&attributes.to_be_bytes());
        b[27..35].copy_from_slice(&now_ms.to_be_bytes());
        b[35..43].copy_from_slice(&now_ms.to_be_bytes());
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        self.bytes = b.freeze();
        self.base_timestamp = now_ms;
        self.max_timestamp = now_ms;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(records: i32, extra: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; HEADER_LEN];
        b.extend_from_slice(extra);
        let len = (b.len() - 12) as i32;
        b[8..12].copy_from_slice(&len.to_be_bytes());
        b[16] = 2;
        b[23..27].copy_from_slice(&(records - 1).to_be_bytes());
        b[43..51].copy_from_slice(&(-1i64).to_be_bytes());
        b[53..57].copy_from_slice(&(-1i32).to_be_bytes());
        b[57..61].copy_from_slice(&records.to_be_bytes());
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }

    /// A batch header with these attributes over `records` bytes.
    fn compressed(attributes: i16, records: &[u8]) -> Batch {
        let mut b = batch(1, records);
        b[21..23].copy_from_slice(&attributes.to_be_bytes());
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        parse(&Bytes::from(b), 1 << 20).unwrap().remove(0)
    }

    #[test]
    fn a_batch_without_a_max_timestamp_gets_its_records_newest() {
        use kafka_protocol::records::{
            Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
        };
        let records: Vec<Record> = [5_000i64, 7_000, 6_000]
            .iter()
            .enumerate()
            .map(|(i, t)| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                // As the decoder gives them for a batch without a producer id (the
                // encoder starts a new batch where offset minus sequence changes).
                sequence: i as i32 - 1,
                timestamp: *t,
                key: None,
                value: Some(Bytes::from_static(b"v")),
                headers: Default::default(),
            })
            .collect();
        for compression in [Compression::None, Compression::Gzip] {
            let mut buf = BytesMut::new();
            let options = RecordEncodeOptions {
                version: 2,
                compression,
            };
            RecordBatchEncoder::encode(&mut buf, records.iter(), &options).unwrap();
            // As Sarama 1.22 sends it: the header's max timestamp left at -1.
            buf[35..43].copy_from_slice(&(-1i64).to_be_bytes());
            let crc = crc32c::crc32c(&buf[21..]);
            buf[17..21].copy_from_slice(&crc.to_be_bytes());
            let b = parse(&buf.freeze(), 1 << 20).unwrap().remove(0);
            assert_eq!((b.base_timestamp, b.max_timestamp), (5_000, 7_000));
            assert_eq!(i64_at(&b.bytes, 35), 7_000, "the stored header says so too");
            let again = parse(&b.bytes, 1 << 20).unwrap().remove(0);
            assert_eq!(again.max_timestamp, 7_000, "and its CRC still checks");
        }
    }

    #[test]
    fn a_compression_bomb_is_refused_not_expanded() {
        // Raw snappy whose header claims 4 GiB: refused before allocating it.
        let claim = compressed(2, &[0xf0, 0xff, 0xff, 0xff, 0x0f, 0, 0]);
        assert_eq!(
            claim.require_keys().unwrap_err().error,
            ResponseError::CorruptMessage
        );
        // 300 MiB of zeros in a 10 KiB zstd frame: decompression stops at the bound.
        let frame = zstd::bulk::compress(&vec![0u8; 300 << 20], 1).unwrap();
        assert!(frame.len() < 1 << 20);
        let bomb = compressed(4, &frame);
        let err = bomb.require_keys().unwrap_err();
        assert_eq!(err.error, ResponseError::CorruptMessage);
        assert!(err.message.contains("more than"), "{}", err.message);
    }

    #[test]
    fn checks_each_batch() {
        let two = [batch(3, b"abc"), batch(1, b"")].concat();
        let parsed = parse(&Bytes::from(two), 1 << 20).unwrap();
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].offset_count, 3);

        let mut bad = batch(1, b"xyz");
        bad[62] ^= 1;
        let err = parse(&Bytes::from(bad), 1 << 20).unwrap_err();
        assert_eq!(err.error, ResponseError::CorruptMessage);

        let big = batch(1, &[0u8; 100]);
        let err = parse(&Bytes::from(big), 100).unwrap_err();
        assert_eq!(err.error, ResponseError::MessageTooLarge);

        let err = parse(&Bytes::from(batch(1, b"")[..30].to_vec()), 1 << 20).unwrap_err();
        assert_eq!(err.error, ResponseError::CorruptMessage);
    }

    #[test]
    fn log_append_time_keeps_the_crc_valid() {
        let mut b = parse(&Bytes::from(batch(2, b"hi")), 1 << 20)
            .unwrap()
            .remove(0);
        b.stamp_log_append_time(1234);
        let again = parse(&b.bytes, 1 << 20).unwrap().remove(0);
        assert_eq!(again.max_timestamp, 1234);
    }

    #[test]
    fn a_marker_is_a_valid_control_batch_kafka_decoders_read() {
        let b = control_batch(42, 7, true, 1_700_000_000_000);
        assert_eq!(i16_at(&b, 21), ATTR_TRANSACTIONAL | ATTR_CONTROL);
        assert_eq!(
            crc32c::crc32c(&b[21..]),
            u32::from_be_bytes([b[17], b[18], b[19], b[20]])
        );
        assert_eq!(i32_at(&b, 8) as usize + 12, b.len());
        let mut bytes = b.clone();
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut bytes).unwrap();
        let r = &set.records[0];
        assert!(r.control && r.transactional);
        assert_eq!((r.producer_id, r.producer_epoch), (42, 7));
        assert_eq!(r.key.as_deref(), Some(&[0u8, 0, 0, 1][..]));
        assert_eq!(r.value.as_deref(), Some(&[0u8, 0, 0, 0, 0, 0][..]));
        let abort = control_batch(42, 7, false, 0);
        let mut bytes = abort.clone();
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut bytes).unwrap();
        assert_eq!(set.records[0].key.as_deref(), Some(&[0u8, 0, 0, 0][..]));
        // A client may not send one.
        assert_eq!(
            parse(&b, 1 << 20).unwrap_err().error,
            ResponseError::InvalidRecord
        );
    }
}
