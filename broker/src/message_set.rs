//! Message sets: Kafka's record format before record batches (magic 0 and 1), which
//! Produce v0-2 and Fetch v0-3 carry. Kafka 4.0 removed those versions, but kafka-go 0.2
//! (Debian's) still produces and fetches with them. Eddy stores only v2 batches, so:
//! - a produced message set becomes one v2 batch before the produce handler sees it
//!   ([`to_batch`]);
//! - stored batches are written back as messages for a legacy fetch ([`from_batches`]).
//!
//! One entry is laid out as `offset i64, size i32`, then the message of `size` bytes:
//! `crc u32, magic i8, attributes i8, [timestamp i64, magic 1 only], key bytes,
//! value bytes` (bytes: `i32` length, -1 for null). The CRC-32 (IEEE) covers magic to the
//! end of the message. The low 3 bits of the attributes name a codec; a compressed
//! message's value is a message set of its own ("wrapper" and "inner" messages). Bit 3
//! is the timestamp type (log-append time).

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::compression::{Decompressor, Gzip, Lz4, Snappy};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

/// Why a message set could not be read or written.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MessageSetError {
    /// An entry runs past the end of the set (only a fetch may end in a partial one).
    #[error("truncated message at byte {0}")]
    Truncated(usize),
    /// A message's fields do not add up to its size.
    #[error("malformed message at byte {0}")]
    Malformed(usize),
    /// A message's CRC-32 does not match its bytes.
    #[error("CRC mismatch in the message at byte {0}")]
    Crc(usize),
    /// A magic byte other than 0 or 1.
    #[error("message format v{0} in a message set")]
    Magic(i8),
    /// A codec number that message sets do not have (zstd came with record batches).
    #[error("compression codec {0} in a message set")]
    Codec(i8),
    /// A compressed message inside a compressed message.
    #[error("a compressed message nested in another")]
    Nested,
    /// A wrapper's value did not decompress.
    #[error("decompressing a message set: {0}")]
    Decompress(String),
    /// No message at all.
    #[error("an empty message set")]
    Empty,
    /// The record batch encoder refused the records.
    #[error("encoding a record batch: {0}")]
    Encode(String),
}

/// Attribute bits of a message's codec.
const CODEC_MASK: i8 = 0x07;
/// Attribute bit of a log-append timestamp (magic 1).
const LOG_APPEND_TIME: i8 = 0x08;
/// `offset` and `size` before each message.
const ENTRY_HEADER: usize = 12;
/// The smallest message: CRC, magic, attributes and two null lengths.
const MIN_MESSAGE: usize = 4 + 1 + 1 + 4 + 4;

/// One message as read off the wire.
struct Message {
    magic: i8,
    attributes: i8,
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
}

fn nullable_bytes(m: &mut Bytes, at: usize) -> Result<Option<Bytes>, MessageSetError> {
    if m.remaining() < 4 {
        return Err(MessageSetError::Malformed(at));
    }
    let n = m.get_i32();
    if n == -1 {
        return Ok(None);
    }
    let n = usize::try_from(n)
        .ok()
        .filter(|n| *n <= m.remaining())
        .ok_or(MessageSetError::Malformed(at))?;
    Ok(Some(m.split_to(n)))
}

/// Reads the entry at `set`'s front; `at` is its position, for errors.
fn read(set: &mut Bytes, at: usize) -> Result<Message, MessageSetError> {
    if set.remaining() < ENTRY_HEADER {
        return Err(MessageSetError::Truncated(at));
    }
    let _offset = set.get_i64();
    let size = set.get_i32();
    let size = usize::try_from(size)
        .ok()
        .filter(|s| *s >= MIN_MESSAGE)
        .ok_or(MessageSetError::Malformed(at))?;
    if size > set.remaining() {
        return Err(MessageSetError::Truncated(at));
    }
    let mut m = set.split_to(size);
    let crc = m.get_u32();
    if crc32fast::hash(&m) != crc {
        return Err(MessageSetError::Crc(at));
    }
    let magic = m.get_i8();
    if !(0..=1).contains(&magic) {
        return Err(MessageSetError::Magic(magic));
    }
    let attributes = m.get_i8();
    let timestamp = if magic == 1 {
        if m.remaining() < 8 {
            return Err(MessageSetError::Malformed(at));
        }
        m.get_i64()
    } else {
        -1
    };
    let key = nullable_bytes(&mut m, at)?;
    let value = nullable_bytes(&mut m, at)?;
    if m.has_remaining() {
        return Err(MessageSetError::Malformed(at));
    }
    Ok(Message {
        magic,
        attributes,
        timestamp,
        key,
        value,
    })
}

fn codec(attributes: i8) -> Result<Compression, MessageSetError> {
    Ok(match attributes & CODEC_MASK {
        0 => Compression::None,
        1 => Compression::Gzip,
        2 => Compression::Snappy,
        3 => Compression::Lz4,
        other => return Err(MessageSetError::Codec(other)),
    })
}

/// The decompressed inner message set of a wrapper (bounded by the codec crate's
/// `MAX_DECOMPRESSED`, so a small bomb cannot take the process's memory).
fn decompress(codec: Compression, mut value: Bytes) -> Result<Bytes, MessageSetError> {
    let all = |b: &mut Bytes| Ok(b.split_to(b.len()));
    match codec {
        Compression::Gzip => Gzip::decompress(&mut value, all),
        Compression::Snappy => Snappy::decompress(&mut value, all),
        Compression::Lz4 => Lz4::decompress(&mut value, all),
        _ => return Err(MessageSetError::Nested),
    }
    .map_err(|e| MessageSetError::Decompress(e.to_string()))
}

/// An lz4 frame with its header checksum recomputed. Kafka clients before 0.10 computed
/// it over the frame's magic number too (KAFKA-3160), and Kafka still accepts such
/// frames in magic 0 messages, which is where those clients put them; the checksum
/// guards only the frame descriptor, and the message's CRC-32 covers all of it anyway.
fn lz4_frame_checksum_fixed(frame: Bytes) -> Bytes {
    const MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];
    if frame.len() < 7 || frame[..4] != MAGIC {
        return frame;
    }
    let flags = frame[4];
    // FLG and BD, then the content size (FLG bit 3) and the dictionary id (bit 0).
    let descriptor =
        2 + if flags & 0x08 != 0 { 8 } else { 0 } + if flags & 0x01 != 0 { 4 } else { 0 };
    let at = 4 + descriptor;
    if frame.len() <= at {
        return frame;
    }
    let mut fixed = BytesMut::from(&frame[..]);
    fixed[at] = (xxhash_rust::xxh32::xxh32(&frame[4..at], 0) >> 8) as u8;
    fixed.freeze()
}

/// A produced message as a v2 record; `now_ms` is the timestamp of a message that has
/// none (magic 0, or -1), so time-based retention and lookups see when it arrived where
/// Kafka would store -1.
fn record(m: Message, now_ms: i64) -> Record {
    Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: if m.magic == 0 || m.timestamp < 0 {
            now_ms
        } else {
            m.timestamp
        },
        key: m.key,
        value: m.value,
        headers: Default::default(),
    }
}

/// Converts a produced message set into one v2 record batch, compressed with the codec
/// of its first compressed message (uncompressed if it has none), as Kafka's log
/// validator converts one. Offsets are the batch's own 0..n: the broker assigns them.
pub fn to_batch(set: &Bytes, now_ms: i64) -> Result<Bytes, MessageSetError> {
    let mut records = Vec::new();
    let mut compression = Compression::None;
    let mut rest = set.clone();
    while rest.has_remaining() {
        let at = set.len() - rest.remaining();
        let m = read(&mut rest, at)?;
        let c = codec(m.attributes)?;
        if c == Compression::None {
            records.push(record(m, now_ms));
            continue;
        }
        if compression == Compression::None {
            compression = c;
        }
        let mut value = m.value.unwrap_or_default();
        if c == Compression::Lz4 && m.magic == 0 {
            value = lz4_frame_checksum_fixed(value);
        }
        let inner = decompress(c, value)?;
        let mut inner_rest = inner.clone();
        while inner_rest.has_remaining() {
            let inner_at = inner.len() - inner_rest.remaining();
            let im = read(&mut inner_rest, inner_at)?;
            if im.attributes & CODEC_MASK != 0 {
                return Err(MessageSetError::Nested);
            }
            records.push(record(im, now_ms));
        }
    }
    if records.is_empty() {
        return Err(MessageSetError::Empty);
    }
    for (i, r) in records.iter_mut().enumerate() {
        r.offset = i as i64;
        // The encoder starts a new batch where offset minus sequence changes.
        r.sequence = i as i32 - 1;
    }
    let mut out = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut out,
        records.iter(),
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .map_err(|e| MessageSetError::Encode(e.to_string()))?;
    Ok(out.freeze())
}

/// Offsets of a v2 batch header's fields (see `crate::batch`).
const BATCH_PRODUCER_ID: usize = 43;
const BATCH_MAX_TIMESTAMP: usize = 35;
const BATCH_ATTRIBUTES: usize = 21;
const BATCH_HEADER: usize = 61;
const ATTR_TRANSACTIONAL: i16 = 0x10;
const ATTR_CONTROL: i16 = 0x20;
const ATTR_LOG_APPEND_TIME: i16 = 0x08;

/// An aborted transaction of a fetch response: its producer and first offset.
#[derive(Debug, Clone, Copy)]
pub struct Aborted {
    /// The producer whose transaction was aborted.
    pub producer_id: i64,
    /// The transaction's first offset in the partition.
    pub first_offset: i64,
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(x)
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

/// Writes one message entry of `magic` (0 or 1).
fn write(out: &mut BytesMut, magic: i8, offset: i64, timestamp: Option<(i64, bool)>, r: &Record) {
    let key_len = r.key.as_ref().map_or(0, Bytes::len);
    let value_len = r.value.as_ref().map_or(0, Bytes::len);
    let size = MIN_MESSAGE + if magic == 1 { 8 } else { 0 } + key_len + value_len;
    out.put_i64(offset);
    out.put_i32(size as i32);
    let crc_at = out.len();
    out.put_u32(0);
    out.put_i8(magic);
    let (ts, log_append) = timestamp.unwrap_or((-1, false));
    out.put_i8(if magic == 1 && log_append {
        LOG_APPEND_TIME
    } else {
        0
    });
    if magic == 1 {
        out.put_i64(ts);
    }
    for b in [&r.key, &r.value] {
        match b {
            Some(b) => {
                out.put_i32(b.len() as i32);
                out.put_slice(b);
            }
            None => out.put_i32(-1),
        }
    }
    let crc = crc32fast::hash(&out[crc_at + 4..]);
    out[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Writes stored v2 batches as a message set of `magic` (0 for Fetch v0-1, 1 for
/// v2-3) for a client that cannot read batches: uncompressed, headers dropped (messages
/// have none, as Kafka drops them), control batches and the records of `aborted`
/// transactions left out (a legacy client has no isolation level to drop them itself,
/// so it is served committed data only). Records before `from` (the fetch offset, inside
/// the first batch) are left out. Messages are written while the output stays within
/// `budget` bytes (the fetch's limit for the partition), and always the first, so a
/// consumer moves on; none is cut in half. A batch that does not decode ends the set
/// there.
pub fn from_batches(
    stored: &Bytes,
    magic: i8,
    aborted: &[Aborted],
    from: i64,
    budget: usize,
) -> Bytes {
    let mut out = BytesMut::new();
    let mut aborted: Vec<Aborted> = aborted.to_vec();
    aborted.sort_by_key(|a| a.first_offset);
    let mut next_aborted = 0;
    // Producers whose current transaction was aborted (until their abort marker).
    let mut aborting: Vec<i64> = Vec::new();
    let mut rest = stored.clone();
    'batches: while rest.len() >= BATCH_HEADER {
        let len = i32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]);
        let Some(total) = usize::try_from(len)
            .ok()
            .and_then(|l| l.checked_add(12))
            .filter(|t| *t >= BATCH_HEADER && *t <= rest.len())
        else {
            break;
        };
        let batch = rest.split_to(total);
        let base_offset = be_i64(&batch, 0);
        let attributes = be_i16(&batch, BATCH_ATTRIBUTES);
        let producer_id = be_i64(&batch, BATCH_PRODUCER_ID);
        while next_aborted < aborted.len() && aborted[next_aborted].first_offset <= base_offset {
            aborting.push(aborted[next_aborted].producer_id);
            next_aborted += 1;
        }
        if attributes & ATTR_CONTROL != 0 {
            // A marker ends its producer's transaction, aborted or not.
            aborting.retain(|p| *p != producer_id);
            continue;
        }
        if attributes & ATTR_TRANSACTIONAL != 0 && aborting.contains(&producer_id) {
            continue;
        }
        let log_append = attributes & ATTR_LOG_APPEND_TIME != 0;
        let max_timestamp = be_i64(&batch, BATCH_MAX_TIMESTAMP);
        let set = match RecordBatchDecoder::decode(&mut batch.clone()) {
            Ok(set) => set,
            Err(e) => {
                tracing::warn!(base_offset, error = %e, "a stored batch did not decode for a legacy fetch");
                break;
            }
        };
        for r in set.records.iter().filter(|r| r.offset >= from) {
            let timestamp = (magic == 1).then_some(if log_append {
                (max_timestamp, true)
            } else {
                (r.timestamp, false)
            });
            let before = out.len();
            write(&mut out, magic, r.offset, timestamp, r);
            if before > 0 && out.len() > budget {
                out.truncate(before);
                break 'batches;
            }
        }
    }
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::compression::Compressor;

    fn message(magic: i8, attributes: i8, ts: i64, key: Option<&[u8]>, value: &[u8]) -> Vec<u8> {
        let mut m = BytesMut::new();
        m.put_i8(magic);
        m.put_i8(attributes);
        if magic == 1 {
            m.put_i64(ts);
        }
        match key {
            Some(k) => {
                m.put_i32(k.len() as i32);
                m.put_slice(k);
            }
            None => m.put_i32(-1),
        }
        m.put_i32(value.len() as i32);
        m.put_slice(value);
        let mut e = BytesMut::new();
        e.put_i64(0);
        e.put_i32(m.len() as i32 + 4);
        e.put_u32(crc32fast::hash(&m));
        e.put_slice(&m);
        e.to_vec()
    }

    fn decode(batch: &Bytes) -> Vec<Record> {
        RecordBatchDecoder::decode_all(&mut batch.clone())
            .unwrap()
            .into_iter()
            .flat_map(|s| s.records)
            .collect()
    }

    #[test]
    fn a_message_set_becomes_one_batch_with_its_keys_values_and_times() {
        let set: Vec<u8> = [
            message(1, 0, 1_000, Some(b"k0"), b"v0"),
            message(1, 0, 2_000, None, b"v1"),
            message(0, 0, 0, Some(b"k2"), b"v2"),
        ]
        .concat();
        let batch = to_batch(&Bytes::from(set), 9_000).unwrap();
        let parsed = crate::batch::parse(&batch, usize::MAX).unwrap();
        assert_eq!(parsed.len(), 1, "one batch");
        assert_eq!(parsed[0].record_count, 3);
        let records = decode(&batch);
        let got: Vec<_> = records
            .iter()
            .map(|r| (r.offset, r.timestamp, r.key.clone(), r.value.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 1_000, Some(Bytes::from("k0")), Some(Bytes::from("v0"))),
                (1, 2_000, None, Some(Bytes::from("v1"))),
                // Magic 0 has no timestamp: the broker's receive time.
                (2, 9_000, Some(Bytes::from("k2")), Some(Bytes::from("v2"))),
            ]
        );
    }

    #[test]
    fn a_compressed_wrapper_is_unwrapped_and_its_codec_kept() {
        let inner: Vec<u8> = [
            message(1, 0, 5, Some(b"a"), b"1"),
            message(1, 0, 6, Some(b"b"), b"2"),
        ]
        .concat();
        for (attr, codec) in [
            (1, Compression::Gzip),
            (2, Compression::Snappy),
            (3, Compression::Lz4),
        ] {
            let mut compressed = BytesMut::new();
            let packed = |b: &mut BytesMut| -> anyhow::Result<()> {
                b.put_slice(&inner);
                Ok(())
            };
            match codec {
                Compression::Gzip => Gzip::compress(&mut compressed, packed),
                Compression::Snappy => Snappy::compress(&mut compressed, packed),
                _ => Lz4::compress(&mut compressed, packed),
            }
            .unwrap();
            let set = message(1, attr, 6, None, &compressed);
            let batch = to_batch(&Bytes::from(set), 0).unwrap();
            let set = RecordBatchDecoder::decode(&mut batch.clone()).unwrap();
            assert_eq!(set.compression, codec);
            let values: Vec<_> = set.records.iter().map(|r| r.value.clone()).collect();
            assert_eq!(values, vec![Some(Bytes::from("1")), Some(Bytes::from("2"))]);
        }
    }

    #[test]
    fn a_magic_0_lz4_wrapper_with_kafka_0_9s_header_checksum_is_read() {
        let inner = message(0, 0, 0, None, b"old");
        let mut frame = BytesMut::new();
        Lz4::compress(&mut frame, |b: &mut BytesMut| -> anyhow::Result<()> {
            b.put_slice(&inner);
            Ok(())
        })
        .unwrap();
        let flags = frame[4];
        let at = 6 + if flags & 0x08 != 0 { 8 } else { 0 } + if flags & 0x01 != 0 { 4 } else { 0 };
        // KAFKA-3160: the checksum taken over the magic number too.
        frame[at] = (xxhash_rust::xxh32::xxh32(&frame[..at], 0) >> 8) as u8;
        let set = message(0, 3, 0, None, &frame);
        let batch = to_batch(&Bytes::from(set.clone()), 7).unwrap();
        let values: Vec<_> = decode(&batch).into_iter().map(|r| r.value).collect();
        assert_eq!(values, vec![Some(Bytes::from("old"))]);
        // In magic 1 the frame must be right, as in Kafka.
        let v1 = message(1, 3, 0, None, &frame);
        assert!(matches!(
            to_batch(&Bytes::from(v1), 7),
            Err(MessageSetError::Decompress(_))
        ));
    }

    #[test]
    fn bad_message_sets_are_refused_with_their_reason() {
        let good = message(1, 0, 1, None, b"v");
        let mut bad_crc = good.clone();
        let last = bad_crc.len() - 1;
        bad_crc[last] ^= 1;
        assert_eq!(
            to_batch(&Bytes::from(bad_crc), 0),
            Err(MessageSetError::Crc(0))
        );
        let cut = Bytes::from(good[..good.len() - 1].to_vec());
        assert_eq!(to_batch(&cut, 0), Err(MessageSetError::Truncated(0)));
        assert_eq!(to_batch(&Bytes::new(), 0), Err(MessageSetError::Empty));
        let zstd = message(1, 4, 1, None, b"v");
        assert_eq!(
            to_batch(&Bytes::from(zstd), 0),
            Err(MessageSetError::Codec(4))
        );
        let magic2 = {
            let mut m = message(1, 0, 1, None, b"v");
            m[16] = 2;
            let crc = crc32fast::hash(&m[16..]);
            m[12..16].copy_from_slice(&crc.to_be_bytes());
            m
        };
        assert_eq!(
            to_batch(&Bytes::from(magic2), 0),
            Err(MessageSetError::Magic(2))
        );
        // A value length beyond the message.
        let mut long = message(1, 0, 1, None, b"v");
        let n = long.len();
        long[n - 5..n - 1].copy_from_slice(&100i32.to_be_bytes());
        let crc = crc32fast::hash(&long[16..]);
        long[12..16].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(
            to_batch(&Bytes::from(long), 0),
            Err(MessageSetError::Malformed(0))
        );
    }

    fn stored(records: &[(&str, i64)], base: i64, txn: Option<i64>) -> Bytes {
        let records: Vec<Record> = records
            .iter()
            .enumerate()
            .map(|(i, (v, ts))| Record {
                transactional: txn.is_some(),
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: txn.unwrap_or(-1),
                producer_epoch: if txn.is_some() { 0 } else { -1 },
                timestamp_type: TimestampType::Creation,
                offset: base + i as i64,
                sequence: i as i32,
                timestamp: *ts,
                key: Some(Bytes::from(format!("k{v}"))),
                value: Some(Bytes::copy_from_slice(v.as_bytes())),
                headers: [(
                    kafka_protocol::protocol::StrBytes::from_static_str("h"),
                    Some(Bytes::from("x")),
                )]
                .into_iter()
                .collect(),
            })
            .collect();
        let mut out = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut out,
            records.iter(),
            &RecordEncodeOptions {
                version: 2,
                compression: Compression::Gzip,
            },
        )
        .unwrap();
        out.freeze()
    }

    fn messages(set: &Bytes) -> Vec<(i64, i8, i64, Vec<u8>)> {
        let mut rest = set.clone();
        let mut out = Vec::new();
        while rest.has_remaining() {
            let offset = i64::from_be_bytes(rest[..8].try_into().unwrap());
            let m = read(&mut rest, 0).unwrap();
            out.push((offset, m.magic, m.timestamp, m.value.unwrap().to_vec()));
        }
        out
    }

    #[test]
    fn stored_batches_come_back_as_messages_of_the_asked_magic() {
        let stored = [
            stored(&[("a", 10), ("b", 11)], 5, None),
            stored(&[("c", 12)], 9, None),
        ]
        .concat();
        let stored = Bytes::from(stored);
        let v1 = from_batches(&stored, 1, &[], 0, usize::MAX);
        assert_eq!(
            messages(&v1),
            vec![
                (5, 1, 10, b"a".to_vec()),
                (6, 1, 11, b"b".to_vec()),
                (9, 1, 12, b"c".to_vec())
            ]
        );
        let v0 = from_batches(&stored, 0, &[], 0, usize::MAX);
        assert_eq!(
            messages(&v0)
                .iter()
                .map(|m| (m.0, m.1, m.2))
                .collect::<Vec<_>>(),
            vec![(5, 0, -1), (6, 0, -1), (9, 0, -1)]
        );
        // Each message converts back into the same record.
        let again = decode(&to_batch(&v1, 0).unwrap());
        assert_eq!(
            again.iter().map(|r| r.timestamp).collect::<Vec<_>>(),
            vec![10, 11, 12]
        );
    }

    #[test]
    fn the_budget_keeps_whole_messages_and_always_the_first() {
        let stored = stored(&[("a", 1), ("b", 2), ("c", 3)], 0, None);
        let one = from_batches(&stored, 1, &[], 0, 1);
        assert_eq!(messages(&one).len(), 1);
        let entry = one.len();
        let two = from_batches(&stored, 1, &[], 0, 2 * entry + 1);
        assert_eq!(messages(&two).len(), 2);
        // A fetch from inside the batch starts at its offset, so a client whose budget
        // holds less than the batch still moves on.
        let rest = from_batches(&stored, 1, &[], 1, entry);
        assert_eq!(
            messages(&rest).iter().map(|m| m.0).collect::<Vec<_>>(),
            vec![1]
        );
    }

    #[test]
    fn aborted_transactions_and_markers_are_left_out() {
        let marker = |pid: i64, offset: i64| -> Bytes {
            let r = Record {
                transactional: true,
                control: true,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: pid,
                producer_epoch: 0,
                timestamp_type: TimestampType::Creation,
                offset,
                sequence: -1,
                timestamp: 0,
                key: Some(Bytes::from_static(&[0, 0, 0, 0])),
                value: Some(Bytes::from_static(&[0, 0, 0, 0, 0, 0])),
                headers: Default::default(),
            };
            let mut out = BytesMut::new();
            RecordBatchEncoder::encode(
                &mut out,
                [r].iter(),
                &RecordEncodeOptions {
                    version: 2,
                    compression: Compression::None,
                },
            )
            .unwrap();
            out.freeze()
        };
        let log = Bytes::from(
            [
                stored(&[("plain", 0)], 0, None),
                stored(&[("aborted", 0)], 1, Some(7)),
                stored(&[("committed", 0)], 2, Some(8)),
                marker(7, 3),
                marker(8, 4),
                stored(&[("later", 0)], 5, Some(7)),
                marker(7, 6),
            ]
            .concat(),
        );
        let aborted = [Aborted {
            producer_id: 7,
            first_offset: 1,
        }];
        let got: Vec<_> = messages(&from_batches(&log, 1, &aborted, 0, usize::MAX))
            .into_iter()
            .map(|m| (m.0, String::from_utf8(m.3).unwrap()))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, "plain".to_string()),
                (2, "committed".to_string()),
                (5, "later".to_string())
            ]
        );
    }
}
