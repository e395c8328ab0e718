// One value of every stored type and every op variant, built from the live types. The
// same text compiles against the build of 2026-11-30, which is how `v1.golden` was made:
// its bytes are what that build wrote for these values (see `tests.rs`).

use crate::domain::{ExpansionOp, GroupOp, IamOp, IcebergOp, KafkaOp};
use std::collections::BTreeMap;

use crate::model::{
    BucketRecord, GroupRecord, ObjectData, ObjectVersion, OffsetRecord, PartRecord,
    PartitionState, ProducerState, TopicRecord, TopicTable, UploadRecord, Versioning,
};
use crate::domain::SchemaOp;
use crate::model::{SchemaRecord, SchemaReference, SubjectRecord, SubjectVersion};
use crate::model::ShareStateRecord;
use crate::txn::{Op, ProducerBatch};

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn blob(id: u128, len: u64) -> storage::BlobMeta {
    storage::BlobMeta {
        id: storage::BlobId(id),
        len,
    }
}

fn sample_bucket() -> BucketRecord {
    BucketRecord {
        name: "photos".into(),
        owner: "eddyadmin".into(),
        created_ms: 1_764_500_000_123,
        versioning: Versioning::Suspended,
        tags: map(&[("team", "eddy"), ("cost", "7")]),
        settings: [("notification".to_string(), b"{\"a\":1}".to_vec())].into(),
    }
}

fn sample_version() -> ObjectVersion {
    ObjectVersion {
        version_id: "0000000000000042-abc".into(),
        delete_marker: false,
        size: 5_242_880 + 100,
        etag: "0123456789abcdef0123456789abcdef-2".into(),
        last_modified_ms: 1_764_500_001_000,
        data: ObjectData::Blobs(vec![blob(u128::MAX - 5, 5_242_880), blob(7, 100)]),
        metadata: map(&[("content-type", "image/png"), ("x-amz-meta-a", "b")]),
        tags: map(&[("k", "v")]),
        checksums: map(&[("CRC32C", "AAAAAA==")]),
        parts: vec![5_242_880, 100],
        // Fields format 8 added: absent from format 1's encoding.
        owner: String::new(),
        lock: crate::model::ObjectLock::default(),
        encryption: None,
        part_checksums: Vec::new(),
        // Format 11 added: absent from every older format's values.
        acl: None,
    }
}

fn sample_inline_version() -> ObjectVersion {
    ObjectVersion {
        version_id: "null".into(),
        delete_marker: false,
        size: 3,
        etag: "acbd18db4cc2f85cedef654fccc4a4d8".into(),
        last_modified_ms: -1,
        data: ObjectData::Inline(b"foo".to_vec()),
        metadata: BTreeMap::new(),
        tags: BTreeMap::new(),
        checksums: BTreeMap::new(),
        parts: Vec::new(),
        owner: String::new(),
        lock: crate::model::ObjectLock::default(),
        encryption: None,
        part_checksums: Vec::new(),
        // Format 11 added: absent from every older format's values.
        acl: None,
    }
}

fn sample_upload() -> UploadRecord {
    UploadRecord {
        upload_id: "upload-1".into(),
        bucket: "photos".into(),
        key: "big.bin".into(),
        owner: "alice".into(),
        initiated_ms: 1_764_500_002_000,
        metadata: map(&[("content-type", "application/octet-stream")]),
        tags: map(&[("t", "1")]),
        checksum_algorithm: Some("SHA256".into()),
        checksum_type: None,
        lock: crate::model::ObjectLock::default(),
        encryption: None,
        acl: None,
    }
}

fn sample_part() -> PartRecord {
    PartRecord {
        part_number: 10_000,
        etag: "ffffffffffffffffffffffffffffffff".into(),
        size: 5_242_880,
        last_modified_ms: 1_764_500_003_000,
        blob: blob(1 << 100, 5_242_880),
        checksums: map(&[("SHA256", "x")]),
    }
}

fn sample_topic() -> TopicRecord {
    TopicRecord {
        name: "orders".into(),
        id: 0x0123_4567_89ab_cdef_0123_4567_89ab_cdef,
        partitions: 12,
        configs: map(&[("cleanup.policy", "compact"), ("retention.ms", "-1")]),
        created_ms: 1_764_500_004_000,
    }
}

fn sample_partition() -> PartitionState {
    PartitionState {
        next_offset: 1_000_000,
        log_start_offset: 17,
        bytes: 123_456_789,
    }
}

fn sample_producer() -> ProducerState {
    ProducerState {
        epoch: 3,
        recent: vec![(0, 9, 100), (10, 19, 110), (i32::MAX - 1, 0, u64::MAX)],
    }
}

fn sample_offset() -> OffsetRecord {
    OffsetRecord {
        offset: 42,
        leader_epoch: -1,
        metadata: Some("seventeen".into()),
        commit_ms: 1_764_500_005_000,
    }
}

fn sample_group() -> GroupRecord {
    GroupRecord {
        name: "readers".into(),
        state: vec![1, 2, 3, 0, 255],
    }
}

fn sample_table() -> TopicTable {
    TopicTable {
        topic_id: 99,
        generation: 4,
        bucket: "kafka".into(),
        prefix: "kafka_topics/orders-63/".into(),
        metadata_location: "s3://kafka/kafka_topics/orders-63/metadata/00004.metadata.json".into(),
        tabled: vec![10, 0, 3],
        start: vec![0, 0, 1],
    }
}

fn sample_producer_batch() -> ProducerBatch {
    ProducerBatch {
        producer_id: 1000,
        epoch: 0,
        first_sequence: 5,
        last_sequence: 9,
    }
}

/// Every live op variant once (format 1's legacy `UpdateBucket` is not a live op).
fn sample_ops() -> Vec<(&'static str, Op)> {
    vec![
        ("CreateBucket", Op::S3(S3Op::CreateBucket(sample_bucket()))),
        ("DeleteBucket", Op::S3(S3Op::DeleteBucket { name: "old".into() })),
        (
            "PutObject",
            Op::S3(S3Op::PutObject {
                bucket: "photos".into(),
                key: "a/b.png".into(),
                version: sample_version(),
                replace_null: true,
            }),
        ),
        (
            "PutObjectInline",
            Op::S3(S3Op::PutObject {
                bucket: "photos".into(),
                key: "tiny".into(),
                version: sample_inline_version(),
                replace_null: false,
            }),
        ),
        (
            "SetObjectTags",
            Op::S3(S3Op::SetObjectTags {
                bucket: "photos".into(),
                key: "a/b.png".into(),
                version_id: Some("v1".into()),
                tags: map(&[("x", "y")]),
            }),
        ),
        (
            "DeleteObjectVersion",
            Op::S3(S3Op::DeleteObjectVersion {
                bucket: "photos".into(),
                key: "a/b.png".into(),
                version_id: "v0".into(),
            }),
        ),
        (
            "ExpectEtag",
            Op::S3(S3Op::ExpectEtag {
                bucket: "photos".into(),
                key: "a/b.png".into(),
                etag: None,
            }),
        ),
        ("CreateTopic", Op::Kafka(KafkaOp::CreateTopic(sample_topic()))),
        ("UpdateTopic", Op::Kafka(KafkaOp::UpdateTopic(sample_topic()))),
        ("DeleteTopic", Op::Kafka(KafkaOp::DeleteTopic { name: "gone".into() })),
        (
            "Append",
            Op::Kafka(KafkaOp::Append {
                topic_id: 99,
                partition: 2,
                offset_count: 10,
                max_timestamp: 1_764_500_006_000,
                batch: bytes::Bytes::from_static(b"batch bytes are in the data section"),
                producer: Some(sample_producer_batch()),
                transactional_id: None,
            }),
        ),
        (
            "AppendPlain",
            Op::Kafka(KafkaOp::Append {
                topic_id: 99,
                partition: 0,
                offset_count: 1,
                max_timestamp: -1,
                batch: bytes::Bytes::from_static(b"x"),
                producer: None,
                transactional_id: None,
            }),
        ),
        (
            "TruncateBefore",
            Op::Kafka(KafkaOp::TruncateBefore {
                topic_id: 99,
                partition: 1,
                offset: 77,
            }),
        ),
        (
            "CommitOffset",
            Op::Group(GroupOp::CommitOffset {
                group: "readers".into(),
                topic: "orders".into(),
                partition: 3,
                offset: sample_offset(),
            }),
        ),
        (
            "DeleteOffset",
            Op::Group(GroupOp::DeleteOffset {
                group: "readers".into(),
                topic: "orders".into(),
                partition: 3,
            }),
        ),
        ("PutGroup", Op::Group(GroupOp::PutGroup(sample_group()))),
        ("DeleteGroup", Op::Group(GroupOp::DeleteGroup { name: "readers".into() })),
        ("CreateUpload", Op::S3(S3Op::CreateUpload(sample_upload()))),
        (
            "PutPart",
            Op::S3(S3Op::PutPart {
                bucket: "photos".into(),
                key: "big.bin".into(),
                upload_id: "upload-1".into(),
                part: sample_part(),
            }),
        ),
        (
            "DeleteUpload",
            Op::S3(S3Op::DeleteUpload {
                bucket: "photos".into(),
                key: "big.bin".into(),
                upload_id: "upload-1".into(),
                keep: vec![blob(5, 6), blob(7, 8)],
            }),
        ),
        ("AllocateProducerId", Op::Kafka(KafkaOp::AllocateProducerId)),
        (
            "PutTopicTable",
            Op::Iceberg(IcebergOp::PutTopicTable {
                topic: "orders".into(),
                expected: 3,
                table: sample_table(),
            }),
        ),
        (
            "ReplaceBucket",
            Op::S3(S3Op::ReplaceBucket {
                expected: sample_bucket(),
                record: BucketRecord {
                    versioning: Versioning::Enabled,
                    ..sample_bucket()
                },
            }),
        ),
    ]
}

/// The batches of `ops` in op order: the data section of a record holding them.
fn batches_of(ops: &[Op]) -> Vec<&bytes::Bytes> {
    let mut out = Vec::new();
    for op in ops {
        match op {
            Op::Kafka(KafkaOp::Append { batch, .. }) => out.push(batch),
            Op::Kafka(KafkaOp::CompactPartition { added, .. }) => out.extend(added.iter().map(|b| &b.batch)),
            Op::Txn(TxnOp::EndTxn { markers, .. }) => out.extend(markers.iter().map(|m| &m.batch)),
            _ => {}
        }
    }
    out
}

/// The data section of a record holding `ops`.
fn record_data(ops: &[Op]) -> Vec<u8> {
    batches_of(ops).into_iter().flat_map(|b| b.iter().copied()).collect()
}

/// A record payload as every format lays it out: the data section, the postcard header
/// `header` builds from the batch lengths, the header's length.
fn framed<H: serde::Serialize>(ops: &[Op], header: impl FnOnce(Vec<u32>) -> H) -> Vec<u8> {
    let lens = batches_of(ops).iter().map(|b| b.len() as u32).collect();
    let header = postcard::to_stdvec(&header(lens)).unwrap();
    let mut out = record_data(ops);
    out.extend_from_slice(&header);
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out
}

/// A record payload of format 1, as the builds before format 2 wrote it.
fn record_v1(ops: Vec<Op>) -> Vec<u8> {
    framed(&ops, |batch_lens| v1::RecordHeader {
        txns: vec![v1::Transaction {
            ops: ops.iter().filter_map(v1::op_for_record).collect(),
        }],
        batch_lens,
    })
}

/// A record payload of format 2, as the builds from format 2 to format 3 wrote it.
fn record_v2(ops: Vec<Op>) -> Vec<u8> {
    framed(&ops, |batch_lens| v2::RecordHeader {
        txns: vec![v2::Transaction {
            ops: ops.iter().map(v2::op_for_record).collect(),
        }],
        batch_lens,
    })
}

/// A record payload of format 3, as the builds from format 3 to format 4 wrote it.
fn record_v3(ops: Vec<Op>) -> Vec<u8> {
    framed(&ops, |batch_lens| super::v3::RecordHeader {
        txns: vec![super::v3::Transaction {
            ops: ops.iter().map(super::v3::op_for_record).collect(),
        }],
        batch_lens,
    })
}

/// A record payload of format 4, as the builds from format 4 to format 5 wrote it.
fn record_v4(ops: Vec<Op>) -> Vec<u8> {
    framed(&ops, |batch_lens| super::v4::RecordHeader {
        txns: vec![super::v4::Transaction {
            ops: ops.iter().map(super::v4::op_for_record).collect(),
        }],
        batch_lens,
    })
}

/// A record payload of format 5, as the builds of format 5 wrote it.
fn record_v5(ops: Vec<Op>) -> Vec<u8> {
    framed(&ops, |batch_lens| super::v5::RecordHeader {
        txns: vec![super::v5::Transaction {
            ops: ops.iter().map(super::v5::op_for_record).collect(),
        }],
        batch_lens,
    })
}

/// A record payload of format 7, as the builds of format 7 wrote it.
fn record_v7(ops: Vec<Op>) -> Vec<u8> {
    framed(&ops, |batch_lens| super::v7::RecordHeader {
        txns: vec![super::v7::Transaction {
            ops: ops.iter().map(super::v7::op_for_record).collect(),
        }],
        batch_lens,
    })
}

/// A record payload of format 8, as the builds of format 8 wrote it.
fn record_v8(ops: Vec<Op>) -> Vec<u8> {
    framed(&ops, |batch_lens| super::v8::RecordHeader {
        txns: vec![super::v8::Transaction {
            ops: ops.iter().map(super::v8::op_for_record).collect(),
        }],
        batch_lens,
    })
}

/// A record payload of format 12, as the builds of format 12 wrote it.
fn record_v12(ops: Vec<Op>) -> Vec<u8> {
    framed(&ops, |batch_lens| super::v12::RecordHeader {
        txns: vec![super::v12::Transaction {
            ops: ops.iter().map(super::v12::op_for_record).collect(),
        }],
        batch_lens,
    })
}

/// A record payload of format 11, as the builds of format 11 wrote it.
fn record_v11(ops: Vec<Op>) -> Vec<u8> {
    framed(&ops, |batch_lens| super::v11::RecordHeader {
        txns: vec![super::v11::Transaction {
            ops: ops.iter().map(super::v11::op_for_record).collect(),
        }],
        batch_lens,
    })
}

/// A record payload of format 10, as the builds of format 10 wrote it.
fn record_v10(ops: Vec<Op>) -> Vec<u8> {
    framed(&ops, |batch_lens| super::v10::RecordHeader {
        txns: vec![super::v10::Transaction {
            ops: ops.iter().map(super::v10::op_for_record).collect(),
        }],
        batch_lens,
    })
}

/// A record payload of format 9, as the builds of format 9 wrote it.
fn record_v9(ops: Vec<Op>) -> Vec<u8> {
    framed(&ops, |batch_lens| super::v9::RecordHeader {
        txns: vec![super::v9::Transaction {
            ops: ops.iter().map(super::v9::op_for_record).collect(),
        }],
        batch_lens,
    })
}

/// A record payload of format 6, as the builds of format 6 wrote it.
fn record_v6(ops: Vec<Op>) -> Vec<u8> {
    framed(&ops, |batch_lens| super::v6::RecordHeader {
        txns: vec![super::v6::Transaction {
            ops: ops.iter().map(super::v6::op_for_record).collect(),
        }],
        batch_lens,
    })
}

/// A compaction pass over one partition, the op format 2 added.
fn sample_compact() -> Op {
    Op::Kafka(KafkaOp::CompactPartition {
        topic_id: 0x1234_5678_9abc_def0_1122_3344_5566_7788,
        partition: 3,
        log_start: 10,
        expected_passes: 4,
        removed: vec![10, 20, 35],
        added: vec![crate::txn::CompactedBatch {
            base_offset: 22,
            last_offset: 29,
            max_timestamp: 1_764_500_000_123,
            batch: bytes::Bytes::from_static(b"a compacted batch's bytes"),
        }],
        state: sample_compaction(),
    })
}

fn sample_compaction() -> crate::model::CompactionState {
    crate::model::CompactionState {
        cleaned_to: 40,
        passes: 5,
        horizons: vec![
            crate::model::Horizon {
                end: 30,
                reached_ms: 1_764_500_000_000,
                tombstones: 2,
            },
            crate::model::Horizon {
                end: 40,
                reached_ms: 1_764_500_100_000,
                tombstones: 0,
            },
        ],
    }
}


/// Format 2's samples: the new op alone, every op in one record (written as format 2),
/// and the new value.
fn encoded_samples_v2() -> Vec<(String, Vec<u8>)> {
    let record = record_v2;
    let mut all: Vec<Op> = sample_ops().into_iter().map(|(_, op)| op).collect();
    all.push(sample_compact());
    vec![
        ("record CompactPartition".into(), record(vec![sample_compact()])),
        ("record all".into(), record(all)),
        (
            "value CompactionState".into(),
            crate::apply::enc(&sample_compaction()).unwrap(),
        ),
    ]
}

/// A live value in a frozen encoding that is no longer the store's (format 8 replaced
/// format 1's for object versions and uploads).
fn v1_enc<F: serde::Serialize + From<L>, L>(v: L) -> crate::CatalogResult<Vec<u8>> {
    Ok(postcard::to_stdvec(&F::from(v))?)
}

/// The samples as the log and the store hold them in format 1: each op as a one-op log
/// record, all ops in one record, and each stored value.
fn encoded_samples() -> Vec<(String, Vec<u8>)> {
    use crate::apply::enc;
    let record = record_v1;
    let mut out = Vec::new();
    for (name, op) in sample_ops() {
        out.push((format!("record {name}"), record(vec![op])));
    }
    let all = sample_ops().into_iter().map(|(_, op)| op).collect();
    out.push(("record all".into(), record(all)));
    let pointer = crate::checkpoint::CheckpointPointer {
        lsn: 12_345,
        blob: blob(3, 4),
    };
    let values = [
        ("BucketRecord", enc(&sample_bucket())),
        ("ObjectVersion", v1_enc::<super::v1::ObjectVersion, _>(sample_version())),
        (
            "ObjectVersionInline",
            v1_enc::<super::v1::ObjectVersion, _>(sample_inline_version()),
        ),
        ("UploadRecord", v1_enc::<super::v1::UploadRecord, _>(sample_upload())),
        ("PartRecord", enc(&sample_part())),
        ("TopicRecord", enc(&sample_topic())),
        ("PartitionState", enc(&sample_partition())),
        ("ProducerState", enc(&sample_producer())),
        ("OffsetRecord", enc(&sample_offset())),
        ("GroupRecord", enc(&sample_group())),
        ("TopicTable", enc(&sample_table())),
        ("CheckpointPointer", enc(&pointer)),
    ];
    for (name, bytes) in values {
        out.push((format!("value {name}"), bytes.unwrap()));
    }
    out
}

/// The ops format 3 added: an expansion with a dropped and a current version (one with a
/// backfill), and a table put and dropped.
fn sample_expansion_ops() -> Vec<(&'static str, Op)> {
    vec![
        (
            "PutExpansion",
            Op::Expansion(ExpansionOp::PutExpansion {
                topic: "orders".into(),
                source: "value".into(),
                expected: 2,
                expansion: Some(sample_expansion()),
            }),
        ),
        (
            "DropExpansion",
            Op::Expansion(ExpansionOp::PutExpansion {
                topic: "orders".into(),
                source: "key".into(),
                expected: 7,
                expansion: None,
            }),
        ),
        (
            "PutTable",
            Op::Iceberg(IcebergOp::PutTable {
                namespace: "expanded".into(),
                name: "orders_rows".into(),
                expected: 4,
                table: Some(sample_table_record()),
            }),
        ),
        (
            "DropTable",
            Op::Iceberg(IcebergOp::PutTable {
                namespace: "expanded".into(),
                name: "old_rows".into(),
                expected: 9,
                table: None,
            }),
        ),
    ]
}

fn sample_expansion_spec() -> crate::model::ExpansionSpec {
    crate::model::ExpansionSpec {
        namespace: "expanded".into(),
        table: "orders_rows".into(),
        format: "json".into(),
        schema: r#"{"type":"struct","fields":[{"id":1,"name":"id","required":false,"type":"long"}]}"#
            .into(),
        flatten_path: true,
        flatten_delimiter: "__".into(),
        copy_source_column: false,
        missing_values_output: true,
        excess_values_output: false,
    }
}

fn sample_expansion() -> crate::model::Expansion {
    crate::model::Expansion {
        topic_id: 0x1234_5678_9abc_def0_1122_3344_5566_7788,
        changes: 3,
        versions: vec![
            crate::model::ExpansionVersion {
                from: vec![10, 0, 7],
                spec: None,
                backfill: vec![],
            },
            crate::model::ExpansionVersion {
                from: vec![12, 3, 7],
                spec: Some(sample_expansion_spec()),
                backfill: vec![0, 1, 7],
            },
        ],
    }
}

fn sample_table_record() -> crate::model::TableRecord {
    crate::model::TableRecord {
        generation: 5,
        bucket: "kafka".into(),
        prefix: "expanded/orders_rows/".into(),
        metadata_location: "s3://kafka/expanded/orders_rows/metadata/00005-x.metadata.json"
            .into(),
    }
}

/// Format 3's samples: each new op alone, every op of every format in one record, and
/// the new values.
fn encoded_samples_v3() -> Vec<(String, Vec<u8>)> {
    let record = record_v3;
    let mut out = Vec::new();
    for (name, op) in sample_expansion_ops() {
        out.push((format!("record {name}"), record(vec![op])));
    }
    out.push(("record all".into(), record(all_ops_v3())));
    out.push((
        "value Expansion".into(),
        crate::apply::enc(&sample_expansion()).unwrap(),
    ));
    out.push((
        "value TableRecord".into(),
        crate::apply::enc(&sample_table_record()).unwrap(),
    ));
    out
}

/// Every sample op of formats 1 to 3.
fn all_ops_v3() -> Vec<Op> {
    let mut all: Vec<Op> = sample_ops().into_iter().map(|(_, op)| op).collect();
    all.push(sample_compact());
    all.extend(sample_expansion_ops().into_iter().map(|(_, op)| op));
    all
}


fn sample_txn_record() -> crate::model::TxnRecord {
    crate::model::TxnRecord {
        producer_id: 4242,
        epoch: 3,
        timeout_ms: 60_000,
        phase: crate::model::TxnPhase::Ongoing,
        partitions: vec![("orders".into(), 0), ("audit".into(), 5)],
        groups: vec!["billing".into()],
        started_ms: 1_764_500_000_000,
        updated_ms: 1_764_500_000_500,
    }
}

fn sample_txn_partition() -> crate::model::TxnPartition {
    crate::model::TxnPartition {
        open: vec![
            crate::model::OpenTxn {
                producer_id: 4242,
                first_offset: 17,
            },
            crate::model::OpenTxn {
                producer_id: 7,
                first_offset: 30,
            },
        ],
        max_aborted_span: 12,
    }
}

fn sample_aborted_txn() -> crate::model::AbortedTxn {
    crate::model::AbortedTxn {
        producer_id: 4242,
        first_offset: 5,
        last_offset: 17,
    }
}

/// The ops format 4 added: a transactional append, a coordinator state, a held offset
/// and an EndTxn with two markers.
fn sample_txn_ops() -> Vec<(&'static str, Op)> {
    vec![
        (
            "AppendTxn",
            Op::Kafka(KafkaOp::Append {
                topic_id: 99,
                partition: 2,
                offset_count: 3,
                max_timestamp: 1_764_500_006_000,
                batch: bytes::Bytes::from_static(b"a transactional batch"),
                producer: Some(ProducerBatch {
                    producer_id: 4242,
                    epoch: 3,
                    first_sequence: 10,
                    last_sequence: 12,
                }),
                transactional_id: Some("payments-1".into()),
            }),
        ),
        (
            "PutTxn",
            Op::Txn(TxnOp::PutTxn {
                id: "payments-1".into(),
                record: sample_txn_record(),
            }),
        ),
        (
            "DropTxn",
            Op::Txn(TxnOp::DropTxn {
                id: "payments-0".into(),
            }),
        ),
        (
            "TxnOffsetCommit",
            Op::Txn(TxnOp::TxnOffsetCommit {
                id: "payments-1".into(),
                producer_id: 4242,
                epoch: 3,
                group: "billing".into(),
                topic: "orders".into(),
                partition: 0,
                offset: sample_offset(),
            }),
        ),
        (
            "EndTxn",
            Op::Txn(TxnOp::EndTxn {
                id: "payments-1".into(),
                producer_id: 4242,
                epoch: 4,
                commit: false,
                markers: vec![
                    crate::txn::TxnMarker {
                        topic_id: 99,
                        partition: 2,
                        timestamp: 1_764_500_007_000,
                        batch: bytes::Bytes::from_static(b"an abort marker"),
                    },
                    crate::txn::TxnMarker {
                        topic_id: 100,
                        partition: 5,
                        timestamp: 1_764_500_007_000,
                        batch: bytes::Bytes::from_static(b"another"),
                    },
                ],
                record: crate::model::TxnRecord {
                    epoch: 4,
                    phase: crate::model::TxnPhase::CompleteAbort,
                    partitions: vec![],
                    groups: vec![],
                    started_ms: -1,
                    ..sample_txn_record()
                },
            }),
        ),
    ]
}

/// Every sample op of formats 1 to 4.
fn all_ops_v4() -> Vec<Op> {
    let mut all = all_ops_v3();
    all.extend(sample_txn_ops().into_iter().map(|(_, op)| op));
    all
}

/// Format 4's samples: each new op alone, every op of every format in one record, and
/// the new values.
fn encoded_samples_v4() -> Vec<(String, Vec<u8>)> {
    let record = record_v4;
    let mut out = Vec::new();
    for (name, op) in sample_txn_ops() {
        out.push((format!("record {name}"), record(vec![op])));
    }
    out.push(("record all".into(), record(all_ops_v4())));
    let values = [
        ("TxnRecord", crate::apply::enc(&sample_txn_record())),
        ("TxnPartition", crate::apply::enc(&sample_txn_partition())),
        ("AbortedTxn", crate::apply::enc(&sample_aborted_txn())),
    ];
    for (name, bytes) in values {
        out.push((format!("value {name}"), bytes.unwrap()));
    }
    out
}

fn sample_quotas() -> crate::model::ClientQuotas {
    crate::model::ClientQuotas {
        entity: sample_quota_entity(),
        values: [
            ("producer_byte_rate".to_string(), 1_048_576.0),
            ("request_percentage".to_string(), 12.5),
        ]
        .into(),
    }
}

fn sample_quota_entity() -> crate::model::QuotaEntity {
    crate::model::QuotaEntity {
        user: Some(Some("alice".into())),
        client_id: Some(None),
        ip: None,
    }
}

/// The op format 5 added: an entity's quotas set, and another's removed.
fn sample_quota_ops() -> Vec<(&'static str, Op)> {
    vec![
        (
            "PutQuotas",
            Op::Kafka(KafkaOp::PutQuotas {
                entity: sample_quota_entity(),
                values: sample_quotas().values,
            }),
        ),
        (
            "PutQuotas removed",
            Op::Kafka(KafkaOp::PutQuotas {
                entity: crate::model::QuotaEntity {
                    user: None,
                    client_id: Some(Some("batch-job".into())),
                    ip: None,
                },
                values: BTreeMap::new(),
            }),
        ),
    ]
}

/// Every sample op of formats 1 to 5.
fn all_ops_v5() -> Vec<Op> {
    let mut all = all_ops_v4();
    all.extend(sample_quota_ops().into_iter().map(|(_, op)| op));
    all
}

/// Format 5's samples: each new op alone, every op of every format in one record, and
/// the new value.
fn encoded_samples_v5() -> Vec<(String, Vec<u8>)> {
    let record = record_v5;
    let mut out = Vec::new();
    for (name, op) in sample_quota_ops() {
        out.push((format!("record {name}"), record(vec![op])));
    }
    out.push(("record all".into(), record(all_ops_v5())));
    out.push((
        "value ClientQuotas".into(),
        crate::apply::enc(&sample_quotas()).unwrap(),
    ));
    out
}

fn sample_user() -> crate::model::UserRecord {
    use crate::model::{ScramCredential, ScramMechanism};
    crate::model::UserRecord {
        name: "alice".into(),
        s3_secret: Some("alice-secret-key".into()),
        scram: vec![
            ScramCredential {
                mechanism: ScramMechanism::Sha256,
                salt: vec![1, 2, 3, 4],
                iterations: 4096,
                stored_key: vec![0xaa; 32],
                server_key: vec![0xbb; 32],
            },
            ScramCredential {
                mechanism: ScramMechanism::Sha512,
                salt: vec![5, 6, 7, 8],
                iterations: 8192,
                stored_key: vec![0xcc; 64],
                server_key: vec![0xdd; 64],
            },
        ],
        from_config: true,
    }
}

fn sample_policy() -> crate::model::PolicyRecord {
    crate::model::PolicyRecord {
        name: "readers".into(),
        document: r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"KafkaRead","Resource":"*"}]}"#.into(),
        attached: vec!["alice".into(), "*".into()],
    }
}

fn sample_bucket_policy() -> crate::model::BucketPolicy {
    crate::model::BucketPolicy {
        bucket: "photos".into(),
        document: r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/public/*"}]}"#.into(),
    }
}

/// The ops format 6 added: each set and removed.
fn sample_iam_ops() -> Vec<(&'static str, Op)> {
    vec![
        (
            "PutUser",
            Op::Iam(IamOp::PutUser {
                name: "alice".into(),
                record: Some(sample_user()),
            }),
        ),
        (
            "PutUser removed",
            Op::Iam(IamOp::PutUser {
                name: "bob".into(),
                record: None,
            }),
        ),
        (
            "PutPolicy",
            Op::Iam(IamOp::PutPolicy {
                name: "readers".into(),
                record: Some(sample_policy()),
            }),
        ),
        (
            "PutPolicy removed",
            Op::Iam(IamOp::PutPolicy {
                name: "writers".into(),
                record: None,
            }),
        ),
        (
            "PutBucketPolicy",
            Op::S3(S3Op::PutBucketPolicy {
                bucket: "photos".into(),
                document: Some(sample_bucket_policy().document),
            }),
        ),
        (
            "PutBucketPolicy removed",
            Op::S3(S3Op::PutBucketPolicy {
                bucket: "photos".into(),
                document: None,
            }),
        ),
    ]
}

/// Every sample op of formats 1 to 6.
fn all_ops_v6() -> Vec<Op> {
    let mut all = all_ops_v5();
    all.extend(sample_iam_ops().into_iter().map(|(_, op)| op));
    all
}

/// Format 6's samples: each new op alone, every op of every format in one record, and
/// the new values.
fn encoded_samples_v6() -> Vec<(String, Vec<u8>)> {
    let record = record_v6;
    let mut out = Vec::new();
    for (name, op) in sample_iam_ops() {
        out.push((format!("record {name}"), record(vec![op])));
    }
    out.push(("record all".into(), record(all_ops_v6())));
    out.push((
        "value UserRecord".into(),
        crate::apply::enc(&sample_user()).unwrap(),
    ));
    out.push((
        "value PolicyRecord".into(),
        crate::apply::enc(&sample_policy()).unwrap(),
    ));
    out.push((
        "value BucketPolicy".into(),
        crate::apply::enc(&sample_bucket_policy()).unwrap(),
    ));
    out
}

fn sample_bucket_config() -> crate::model::BucketConfig {
    crate::model::BucketConfig {
        bucket: "photos".into(),
        kind: crate::model::BucketConfigKind::Lifecycle,
        document: "<LifecycleConfiguration><Rule><ID>old</ID><Status>Enabled</Status><Filter><Prefix>tmp/</Prefix></Filter><Expiration><Days>7</Days></Expiration></Rule></LifecycleConfiguration>".into(),
    }
}

/// The op format 7 added: each kind set, and one removed.
fn sample_bucket_config_ops() -> Vec<(&'static str, Op)> {
    use crate::model::BucketConfigKind;
    vec![
        (
            "PutBucketConfig lifecycle",
            Op::S3(S3Op::PutBucketConfig {
                bucket: "photos".into(),
                kind: BucketConfigKind::Lifecycle,
                document: Some(sample_bucket_config().document),
            }),
        ),
        (
            "PutBucketConfig cors",
            Op::S3(S3Op::PutBucketConfig {
                bucket: "photos".into(),
                kind: BucketConfigKind::Cors,
                document: Some("<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>".into()),
            }),
        ),
        (
            "PutBucketConfig removed",
            Op::S3(S3Op::PutBucketConfig {
                bucket: "photos".into(),
                kind: BucketConfigKind::Cors,
                document: None,
            }),
        ),
    ]
}

/// Every sample op of formats 1 to 7.
fn all_ops_v7() -> Vec<Op> {
    let mut all = all_ops_v6();
    all.extend(sample_bucket_config_ops().into_iter().map(|(_, op)| op));
    all
}

/// Format 7's samples: each new op alone, every op of every format in one record, and
/// the new value.
fn encoded_samples_v7() -> Vec<(String, Vec<u8>)> {
    let record = record_v7;
    let mut out = Vec::new();
    for (name, op) in sample_bucket_config_ops() {
        out.push((format!("record {name}"), record(vec![op])));
    }
    out.push(("record all".into(), record(all_ops_v7())));
    out.push((
        "value BucketConfig".into(),
        crate::apply::enc(&sample_bucket_config()).unwrap(),
    ));
    out
}

/// An object version with every field format 8 added: an SSE-S3 data key, a compliance
/// retention and a legal hold, and its writer.
fn sample_version_v8() -> ObjectVersion {
    use crate::model::{Encryption, LockMode, ObjectLock, Retention};
    ObjectVersion {
        owner: "alice".into(),
        lock: ObjectLock {
            retention: Some(Retention {
                mode: LockMode::Compliance,
                until_ms: 1_796_000_000_000,
            }),
            legal_hold: true,
        },
        encryption: Some(Encryption::S3 {
            key_id: "master-1".into(),
            wrapped_key: (0u8..60).collect(),
        }),
        part_checksums: vec![map(&[("CRC32C", "AAAAAA==")]), map(&[("CRC32C", "BBBBBB==")])],
        ..sample_version()
    }
}

/// An upload with an SSE-C key's MD5 and a governance retention for its object.
fn sample_upload_v8() -> UploadRecord {
    use crate::model::{Encryption, LockMode, ObjectLock, Retention};
    UploadRecord {
        lock: ObjectLock {
            retention: Some(Retention {
                mode: LockMode::Governance,
                until_ms: 1_765_000_000_000,
            }),
            legal_hold: false,
        },
        encryption: Some(Encryption::Customer {
            key_md5: "zZ5FnqxwIh8KaTGd/Wnq5A==".into(),
        }),
        ..sample_upload()
    }
}

/// The ops format 8 added or changed: puts of the new records, the lock guard, a
/// retention set and removed, a legal hold.
fn sample_lock_ops() -> Vec<(&'static str, Op)> {
    use crate::model::{LockMode, Retention};
    vec![
        (
            "PutObject v8",
            Op::S3(S3Op::PutObject {
                bucket: "photos".into(),
                key: "locked.png".into(),
                version: sample_version_v8(),
                replace_null: false,
            }),
        ),
        ("CreateUpload v8", Op::S3(S3Op::CreateUpload(sample_upload_v8()))),
        (
            "ExpectUnlocked",
            Op::S3(S3Op::ExpectUnlocked {
                bucket: "photos".into(),
                key: "locked.png".into(),
                version_id: "0000000000000042-abc".into(),
                now_ms: 1_764_600_000_000,
                bypass_governance: true,
            }),
        ),
        (
            "SetObjectRetention",
            Op::S3(S3Op::SetObjectRetention {
                bucket: "photos".into(),
                key: "locked.png".into(),
                version_id: "0000000000000042-abc".into(),
                retention: Some(Retention {
                    mode: LockMode::Governance,
                    until_ms: 1_770_000_000_000,
                }),
                now_ms: 1_764_600_000_001,
                bypass_governance: false,
            }),
        ),
        (
            "SetObjectRetention removed",
            Op::S3(S3Op::SetObjectRetention {
                bucket: "photos".into(),
                key: "locked.png".into(),
                version_id: "null".into(),
                retention: None,
                now_ms: 1_764_600_000_002,
                bypass_governance: true,
            }),
        ),
        (
            "SetObjectLegalHold",
            Op::S3(S3Op::SetObjectLegalHold {
                bucket: "photos".into(),
                key: "locked.png".into(),
                version_id: "0000000000000042-abc".into(),
                on: true,
            }),
        ),
    ]
}

/// Every sample op of formats 1 to 8 (format 1's `PutObject` and `CreateUpload` now
/// encode as format 8's).
fn all_ops_v8() -> Vec<Op> {
    let mut all = all_ops_v7();
    all.extend(sample_lock_ops().into_iter().map(|(_, op)| op));
    all
}

/// Format 8's samples: each new op alone, every op of every format in one record, and
/// the re-encoded values.
fn encoded_samples_v8() -> Vec<(String, Vec<u8>)> {
    use crate::apply::enc;
    let record = record_v8;
    let mut out = Vec::new();
    for (name, op) in sample_lock_ops() {
        out.push((format!("record {name}"), record(vec![op])));
    }
    out.push(("record all".into(), record(all_ops_v8())));
    let values = [
        ("ObjectVersion", enc(&sample_version_v8())),
        ("ObjectVersion plain", enc(&sample_version())),
        ("ObjectVersionInline", enc(&sample_inline_version())),
        ("UploadRecord", enc(&sample_upload_v8())),
    ];
    for (name, bytes) in values {
        out.push((format!("value {name}"), bytes.unwrap()));
    }
    out
}

/// A pipeline with two revisions, the first deployed, in error.
fn sample_pipeline() -> crate::model::PipelineRecord {
    use crate::model::{PipelineRecord, PipelineRevision, PipelineStatus};
    PipelineRecord {
        name: "thumbnails".into(),
        changes: 3,
        revisions: vec![
            PipelineRevision {
                number: 1,
                document: r#"{"name":"thumbnails","triggers":[]}"#.into(),
                created_ms: 1_764_800_000_000,
            },
            PipelineRevision {
                number: 2,
                document: r#"{"name":"thumbnails","links":[]}"#.into(),
                created_ms: 1_764_800_000_500,
            },
        ],
        deployed: Some(1),
        status: PipelineStatus::Error,
        reason: "function index exited: Traceback".into(),
        status_ms: 1_764_800_001_000,
    }
}

fn sample_pipeline_ops() -> Vec<(&'static str, Op)> {
    use crate::domain::PipelineOp;
    vec![
        (
            "PutPipeline",
            Op::Pipeline(PipelineOp::PutPipeline {
                name: "thumbnails".into(),
                expected: 2,
                record: Some(sample_pipeline()),
            }),
        ),
        (
            "PutPipeline removed",
            Op::Pipeline(PipelineOp::PutPipeline {
                name: "thumbnails".into(),
                expected: 3,
                record: None,
            }),
        ),
        (
            "Advance",
            Op::Pipeline(PipelineOp::Advance {
                pipeline: "thumbnails".into(),
                cursor: "uploads-thumbnail".into(),
                partition: 2,
                expected: 41,
                next: 42,
            }),
        ),
    ]
}

/// Every sample op of formats 1 to 9.
fn all_ops_v9() -> Vec<Op> {
    let mut all = all_ops_v8();
    all.extend(sample_pipeline_ops().into_iter().map(|(_, op)| op));
    all
}

/// Format 9's samples: each new op alone, every op of every format in one record, and
/// the new values.
fn encoded_samples_v9() -> Vec<(String, Vec<u8>)> {
    use crate::apply::enc;
    let record = record_v9;
    let mut out = Vec::new();
    for (name, op) in sample_pipeline_ops() {
        out.push((format!("record {name}"), record(vec![op])));
    }
    out.push(("record all".into(), record(all_ops_v9())));
    out.push((
        "value PipelineRecord".into(),
        enc(&sample_pipeline()).unwrap(),
    ));
    out.push((
        "value PipelinePosition".into(),
        enc(&crate::model::PipelinePosition { next: 42 }).unwrap(),
    ));
    out
}

/// A namespace with a location and a comment.
fn sample_namespace() -> crate::model::NamespaceRecord {
    crate::model::NamespaceRecord {
        generation: 4,
        owner: "alice".into(),
        properties: [
            ("comment".to_owned(), "sales data".to_owned()),
            ("location".to_owned(), "s3://warehouse/sales".to_owned()),
        ]
        .into_iter()
        .collect(),
    }
}

fn sample_user_table_ops() -> Vec<(&'static str, Op)> {
    use crate::domain::IcebergOp;
    let view = crate::model::TableRecord {
        generation: 2,
        bucket: "warehouse".into(),
        prefix: "sales/top_customers-0f1e/".into(),
        metadata_location: "s3://warehouse/sales/top_customers-0f1e/metadata/00001-ab.metadata.json"
            .into(),
    };
    vec![
        (
            "PutNamespace",
            Op::Iceberg(IcebergOp::PutNamespace {
                namespace: "sales\u{1f}eu".into(),
                expected: 3,
                record: Some(sample_namespace()),
            }),
        ),
        (
            "PutNamespace dropped",
            Op::Iceberg(IcebergOp::PutNamespace {
                namespace: "sales".into(),
                expected: 4,
                record: None,
            }),
        ),
        (
            "PutView",
            Op::Iceberg(IcebergOp::PutView {
                namespace: "sales".into(),
                name: "top_customers".into(),
                expected: 1,
                view: Some(view),
            }),
        ),
        (
            "PutView dropped",
            Op::Iceberg(IcebergOp::PutView {
                namespace: "sales".into(),
                name: "top_customers".into(),
                expected: 2,
                view: None,
            }),
        ),
        (
            "ForgetTable",
            Op::Iceberg(IcebergOp::ForgetTable {
                namespace: "sales".into(),
                name: "orders".into(),
                expected: 7,
            }),
        ),
        (
            "ForgetView",
            Op::Iceberg(IcebergOp::ForgetView {
                namespace: "sales".into(),
                name: "top_customers".into(),
                expected: 3,
            }),
        ),
    ]
}

/// Every sample op of formats 1 to 10.
fn all_ops_v10() -> Vec<Op> {
    let mut all = all_ops_v9();
    all.extend(sample_user_table_ops().into_iter().map(|(_, op)| op));
    all
}

/// Format 10's samples: each new op alone, every op of every format in one record, and
/// the new value.
fn encoded_samples_v10() -> Vec<(String, Vec<u8>)> {
    use crate::apply::enc;
    let record = record_v10;
    let mut out = Vec::new();
    for (name, op) in sample_user_table_ops() {
        out.push((format!("record {name}"), record(vec![op])));
    }
    out.push(("record all".into(), record(all_ops_v10())));
    out.push((
        "value NamespaceRecord".into(),
        enc(&sample_namespace()).unwrap(),
    ));
    out
}

/// An object ACL as the S3 gateway encodes it (the catalog keeps it as given).
const SAMPLE_ACL: &str = r#"{"owner":"alice","grants":[["alice","FULL_CONTROL"],["*","READ"]]}"#;

fn sample_acl_ops() -> Vec<(&'static str, Op)> {
    vec![
        (
            "SetObjectAcl",
            Op::S3(S3Op::SetObjectAcl {
                bucket: "photos".into(),
                key: "cat.png".into(),
                version_id: Some("0000000000000042-abc".into()),
                acl: Some(SAMPLE_ACL.into()),
            }),
        ),
        (
            "SetObjectAcl current cleared",
            Op::S3(S3Op::SetObjectAcl {
                bucket: "photos".into(),
                key: "cat.png".into(),
                version_id: None,
                acl: None,
            }),
        ),
        (
            "PutObject with an ACL",
            Op::S3(S3Op::PutObject {
                bucket: "photos".into(),
                key: "cat.png".into(),
                version: sample_version_v11(),
                replace_null: false,
            }),
        ),
    ]
}

/// A format-8 version with an ACL.
fn sample_version_v11() -> ObjectVersion {
    ObjectVersion {
        acl: Some(SAMPLE_ACL.into()),
        ..sample_version_v8()
    }
}

/// An upload whose object will get an ACL.
fn sample_upload_v11() -> UploadRecord {
    UploadRecord {
        acl: Some(SAMPLE_ACL.into()),
        ..sample_upload_v8()
    }
}

/// Every sample op of formats 1 to 11.
fn all_ops_v11() -> Vec<Op> {
    let mut all = all_ops_v10();
    all.extend(sample_acl_ops().into_iter().map(|(_, op)| op));
    all
}

/// Format 11's samples: each new op alone, every op of every format in one record, and
/// the values that now carry an ACL.
fn encoded_samples_v11() -> Vec<(String, Vec<u8>)> {
    use crate::apply::enc;
    let record = record_v11;
    let mut out = Vec::new();
    for (name, op) in sample_acl_ops() {
        out.push((format!("record {name}"), record(vec![op])));
    }
    out.push(("record all".into(), record(all_ops_v11())));
    out.push((
        "value ObjectVersion".into(),
        enc(&sample_version_v11()).unwrap(),
    ));
    out.push((
        "value UploadRecord".into(),
        enc(&sample_upload_v11()).unwrap(),
    ));
    out
}

fn sample_schema() -> SchemaRecord {
    SchemaRecord {
        schema_type: "AVRO".into(),
        schema: r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}"#
            .into(),
        references: vec![SchemaReference {
            name: "com.example.Money".into(),
            subject: "money-value".into(),
            version: 2,
        }],
        fingerprint: vec![0xab; 32],
    }
}

fn sample_subject() -> SubjectRecord {
    SubjectRecord {
        changes: 3,
        versions: vec![
            SubjectVersion {
                version: 1,
                id: 7,
                deleted: true,
            },
            SubjectVersion {
                version: 2,
                id: 9,
                deleted: false,
            },
        ],
        compatibility: Some("FULL_TRANSITIVE".into()),
        mode: None,
    }
}

fn sample_schema_ops() -> Vec<(&'static str, Op)> {
    vec![
        (
            "PutSchema",
            Op::Schema(SchemaOp::PutSchema {
                id: 9,
                record: sample_schema(),
            }),
        ),
        (
            "PutSubject",
            Op::Schema(SchemaOp::PutSubject {
                subject: "orders-value".into(),
                expected: 2,
                record: Some(sample_subject()),
            }),
        ),
        (
            "PutSubject removed",
            Op::Schema(SchemaOp::PutSubject {
                subject: "orders-value".into(),
                expected: 3,
                record: None,
            }),
        ),
    ]
}

/// Every sample op of formats 1 to 12.
fn all_ops_v12() -> Vec<Op> {
    let mut all = all_ops_v11();
    all.extend(sample_schema_ops().into_iter().map(|(_, op)| op));
    all
}

/// Format 12's samples: each new op alone, every op of every format in one record, and
/// the new values.
fn encoded_samples_v12() -> Vec<(String, Vec<u8>)> {
    use crate::apply::enc;
    let record = record_v12;
    let mut out = Vec::new();
    for (name, op) in sample_schema_ops() {
        out.push((format!("record {name}"), record(vec![op])));
    }
    out.push(("record all".into(), record(all_ops_v12())));
    out.push(("value SchemaRecord".into(), enc(&sample_schema()).unwrap()));
    out.push(("value SubjectRecord".into(), enc(&sample_subject()).unwrap()));
    out
}

fn sample_share_state() -> ShareStateRecord {
    ShareStateRecord {
        state: vec![1, 0x2a, 0, 0xff, 7, 0x80, 0x01],
    }
}

fn sample_share_state_ops() -> Vec<(&'static str, Op)> {
    vec![
        (
            "PutShareState",
            Op::Group(GroupOp::PutShareState {
                group: "sharers".into(),
                topic_id: 0x0123_4567_89ab_cdef_0011_2233_4455_6677,
                partition: 5,
                state: sample_share_state(),
            }),
        ),
        (
            "DeleteShareState",
            Op::Group(GroupOp::DeleteShareState {
                group: "sharers".into(),
                topic_id: 0x0123_4567_89ab_cdef_0011_2233_4455_6677,
                partition: 5,
            }),
        ),
    ]
}

/// Every sample op of formats 1 to 13.
fn all_ops_v13() -> Vec<Op> {
    let mut all = all_ops_v12();
    all.extend(sample_share_state_ops().into_iter().map(|(_, op)| op));
    all
}

/// Format 13's samples: each new op alone, every op of every format in one record, and
/// the new value.
fn encoded_samples_v13() -> Vec<(String, Vec<u8>)> {
    use crate::apply::enc;
    let record = |ops: Vec<Op>| {
        crate::record::encode(record_data(&ops), &[&crate::txn::Transaction::new(ops)]).unwrap()
    };
    let mut out = Vec::new();
    for (name, op) in sample_share_state_ops() {
        out.push((format!("record {name}"), record(vec![op])));
    }
    out.push(("record all".into(), record(all_ops_v13())));
    out.push(("value ShareStateRecord".into(), enc(&sample_share_state()).unwrap()));
    out
}
