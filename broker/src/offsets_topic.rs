//! `__consumer_offsets` as Kafka lays it out, for tools that read committed offsets from
//! the topic instead of asking for them (Burrow, some lag exporters). Eddy keeps
//! offsets in the catalog; with `--kafka-offsets-topic` every commit is also appended to
//! the topic in the same catalog transaction, as Kafka's group coordinator writes it:
//! the group's partition is `abs(java hashCode(group)) % 50`, the key is key version 1
//! (`[i16 1][group][topic][i32 partition]`) and the value version 3 (`[i16 3][i64
//! offset][i32 leader epoch][metadata][i64 commit timestamp]`), strings as `[i16
//! length][bytes]`. The topic is compacted, so it keeps the latest commit of each
//! partition; clients may read it but not write or delete it.

use bytes::{BufMut, Bytes, BytesMut};
use catalog::KafkaOp;
use catalog::{Catalog, OffsetRecord, Op, TopicRecord, Transaction};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

/// The topic's name.
pub const NAME: &str = "__consumer_offsets";
/// Its partitions (Kafka's `offsets.topic.num.partitions` default).
pub const PARTITIONS: u32 = 50;

/// The audit trail's topic (`eddy serve` appends to it; docs/security.md).
pub const AUDIT_TOPIC: &str = "__eddy_audit";

/// Whether `topic` is an internal topic clients may not write, create or delete: this
/// one, and the audit trail, which a client writing to it could forge.
pub fn is_internal(topic: &str) -> bool {
    topic == NAME || topic == AUDIT_TOPIC
}

/// The partition of a group's records: Kafka's `Utils.abs(groupId.hashCode) %
/// partitions`, with Java's `String.hashCode` over UTF-16 code units.
pub fn partition_of(group: &str) -> u32 {
    let h = group
        .encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)));
    // Kafka's Utils.abs maps i32::MIN to 0 rather than overflowing.
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs as u32 % PARTITIONS
}

/// Creates the topic if it does not exist (at start, when the flag is on).
pub async fn ensure(catalog: &dyn Catalog) -> Result<(), catalog::CatalogError> {
    if catalog.kafka().topic(NAME).await?.is_some() {
        return Ok(());
    }
    let record = TopicRecord {
        name: NAME.to_string(),
        id: uuid::Uuid::new_v4().as_u128(),
        partitions: PARTITIONS,
        configs: [("cleanup.policy".to_string(), "compact".to_string())].into(),
        created_ms: crate::context::now_ms(),
    };
    match catalog
        .commit(Transaction::new(vec![Op::Kafka(KafkaOp::CreateTopic(
            record,
        ))]))
        .await
    {
        Ok(_) => Ok(()),
        // Created concurrently (another node of this process): it exists.
        Err(_) if catalog.kafka().topic(NAME).await?.is_some() => Ok(()),
        Err(e) => Err(e),
    }
}

use crate::legacy::put_str;

/// The key of a committed offset (key version 1); `None` for a group id longer than a
/// Kafka string holds.
pub fn key(group: &str, topic: &str, partition: u32) -> Option<Bytes> {
    let mut b = BytesMut::new();
    b.put_i16(1);
    put_str(&mut b, group).ok()?;
    put_str(&mut b, topic).ok()?;
    b.put_i32(partition as i32);
    Some(b.freeze())
}

/// The value of a committed offset (value version 3); metadata is at most
/// `offset.metadata.max.bytes`, so it always fits.
pub fn value(o: &OffsetRecord) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(3);
    b.put_i64(o.offset);
    b.put_i32(o.leader_epoch);
    let _ = put_str(&mut b, o.metadata.as_deref().unwrap_or(""));
    b.put_i64(o.commit_ms);
    b.freeze()
}

/// The appends that mirror `commits` (group, topic, partition, offset; `None` deletes
/// it, a tombstone) into the topic `topic`: one batch per topic partition they fall in.
pub fn appends(
    topic: &TopicRecord,
    commits: &[(String, String, u32, Option<OffsetRecord>)],
) -> Vec<Op> {
    let mut by_partition: std::collections::BTreeMap<u32, Vec<Record>> = Default::default();
    let now = crate::context::now_ms();
    for (group, t, p, offset) in commits {
        let Some(key) = key(group, t, *p) else {
            tracing::warn!(%group, "a group id too long for __consumer_offsets is not mirrored");
            continue;
        };
        let records = by_partition
            .entry(partition_of(group) % topic.partitions.max(1))
            .or_default();
        let i = records.len() as i64;
        records.push(Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i,
            // The encoder starts a new batch where offset minus sequence changes.
            sequence: i as i32 - 1,
            timestamp: offset.as_ref().map_or(now, |o| o.commit_ms),
            key: Some(key),
            value: offset.as_ref().map(value),
            headers: Default::default(),
        });
    }
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    let mut ops = Vec::new();
    for (partition, records) in by_partition {
        let mut buf = BytesMut::new();
        if let Err(e) = RecordBatchEncoder::encode(&mut buf, records.iter(), &options) {
            tracing::error!(error = %e, "encoding an offsets topic batch failed");
            continue;
        }
        ops.push(Op::Kafka(KafkaOp::Append {
            topic_id: topic.id,
            partition,
            offset_count: records.len() as u32,
            max_timestamp: records.iter().map(|r| r.timestamp).max().unwrap_or(now),
            batch: buf.freeze(),
            producer: None,
            transactional_id: None,
        }));
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_javas_string_hash() {
        // "" hashes to 0; "a" to 97; "console-consumer-1" as Java computes it.
        assert_eq!(partition_of(""), 0);
        assert_eq!(partition_of("a"), 97 % 50);
        let java = "console-consumer-1"
            .chars()
            .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32));
        assert_eq!(partition_of("console-consumer-1"), java.unsigned_abs() % 50);
    }

    #[test]
    fn records_are_kafkas_key_1_and_value_3_in_one_batch_per_partition() {
        let topic = TopicRecord {
            name: NAME.into(),
            id: 7,
            partitions: PARTITIONS,
            configs: Default::default(),
            created_ms: 0,
        };
        let o = OffsetRecord {
            offset: 60,
            leader_epoch: -1,
            metadata: Some("m".into()),
            commit_ms: 1234,
        };
        let ops = appends(
            &topic,
            &[
                ("g".into(), "t".into(), 0, Some(o.clone())),
                ("g".into(), "t".into(), 1, None),
            ],
        );
        assert_eq!(ops.len(), 1);
        let Op::Kafka(KafkaOp::Append {
            partition, batch, ..
        }) = &ops[0]
        else {
            panic!("not an append")
        };
        assert_eq!(*partition, partition_of("g"));
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut batch.clone()).unwrap();
        assert_eq!(set.records.len(), 2);
        assert_eq!(
            set.records[0].key.as_deref(),
            Some(&[0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 0][..])
        );
        let v = set.records[0].value.clone().unwrap();
        assert_eq!(&v[..2], &[0, 3]);
        assert_eq!(i64::from_be_bytes(v[2..10].try_into().unwrap()), 60);
        assert!(
            set.records[1].value.is_none(),
            "a deleted offset is a tombstone"
        );
    }
}
