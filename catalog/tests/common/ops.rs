//! Operations the catalog suites build, shared by both.

use catalog::{KafkaOp, S3Op};
use std::collections::BTreeMap;

use catalog::{BucketRecord, ObjectData, ObjectVersion, Op, TopicRecord, Versioning};

pub fn bucket(name: &str) -> Op {
    Op::S3(S3Op::CreateBucket(BucketRecord {
        name: name.into(),
        owner: "eddyadmin".into(),
        created_ms: 1,
        versioning: Versioning::Unversioned,
        tags: BTreeMap::new(),
        settings: BTreeMap::new(),
    }))
}

pub fn object(bucket: &str, key: &str, body: &[u8]) -> Op {
    object_with(
        bucket,
        key,
        body.len() as u64,
        ObjectData::Inline(body.to_vec()),
    )
}

pub fn object_with(bucket: &str, key: &str, size: u64, data: ObjectData) -> Op {
    Op::S3(S3Op::PutObject {
        bucket: bucket.into(),
        key: key.into(),
        version: ObjectVersion::new("null".into(), data, size, format!("etag-{size}"), 2),
        replace_null: true,
    })
}

pub fn topic(name: &str, id: u128, partitions: u32) -> Op {
    Op::Kafka(KafkaOp::CreateTopic(TopicRecord {
        name: name.into(),
        id,
        partitions,
        configs: BTreeMap::new(),
        created_ms: 3,
    }))
}

pub fn append(id: u128, partition: u32, count: u32, tag: u8) -> Op {
    let mut batch = vec![0u8; 8];
    batch.extend_from_slice(&[tag; 32]);
    Op::Kafka(KafkaOp::Append {
        topic_id: id,
        partition,
        offset_count: count,
        max_timestamp: 10,
        batch: batch.into(),
        producer: None,
        transactional_id: None,
    })
}

/// An idempotent producer's batch of `count` records from sequence `first` (epoch 0).
pub fn idempotent(id: u128, partition: u32, count: u32, producer: i64, first: i32) -> Op {
    let mut op = append(id, partition, count, first as u8);
    if let Op::Kafka(KafkaOp::Append { producer: p, .. }) = &mut op {
        *p = Some(catalog::ProducerBatch {
            producer_id: producer,
            epoch: 0,
            first_sequence: first,
            last_sequence: first + count as i32 - 1,
        });
    }
    op
}

pub fn topic_table(id: u128, generation: u64, tabled: Vec<u64>) -> catalog::TopicTable {
    catalog::TopicTable {
        topic_id: id,
        generation,
        bucket: "kafka".into(),
        prefix: "kafka_topics/t/".into(),
        metadata_location: format!("s3://kafka/kafka_topics/t/metadata/{generation}.json"),
        tabled,
        start: Vec::new(),
    }
}
