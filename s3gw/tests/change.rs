//! A change whose commit fails deletes the blobs it brought in before it reports the
//! failure, and leaves the catalog as it was.

use catalog::{KafkaOp, S3Op};
use std::collections::BTreeMap;
use std::sync::Arc;

use catalog::{
    BucketRecord, Catalog, CatalogConfig, EmbeddedCatalog, ObjectData, ObjectVersion, Op,
    Transaction, Versioning,
};
use s3gw::Gateway;
use s3gw::bucket_settings::Bucket;
use s3gw::change::{Change, Event};
use storage::DriveSetConfig;

#[tokio::test(flavor = "multi_thread")]
async fn failed_commit_deletes_the_new_blobs() {
    let dir = tempfile::tempdir().unwrap();
    let cat =
        EmbeddedCatalog::open(CatalogConfig::new(DriveSetConfig::under(dir.path(), 4, 2))).unwrap();
    cat.commit(Transaction::new(vec![Op::S3(S3Op::CreateBucket(
        BucketRecord {
            name: "b".into(),
            owner: "admin".into(),
            created_ms: 0,
            versioning: Versioning::Unversioned,
            tags: BTreeMap::new(),
            settings: BTreeMap::new(),
        },
    ))]))
    .await
    .unwrap();
    let gw = Gateway::new(
        cat.clone() as Arc<dyn Catalog>,
        Arc::new(iam::Directory::in_memory(&[])),
    );
    let b = Bucket::decode(cat.s3().bucket("b").await.unwrap().unwrap());
    let blob = cat.blobs().put(&[7u8; 100_000]).unwrap();
    let version = ObjectVersion::new(
        "null".into(),
        ObjectData::Blobs(vec![blob]),
        100_000,
        "e".into(),
        1,
    );
    let err = Change::new()
        .expect_etag("b", "k", Some("not-there".into()))
        .put_version(Event::Put, &b, "k", version.clone(), true)
        .owns(&[blob])
        .commit(&gw)
        .await
        .unwrap_err();
    assert_eq!(err.code().as_str(), "PreconditionFailed");
    assert!(cat.blobs().open(blob.id).is_err(), "the blob was deleted");
    assert!(cat.s3().object("b", "k").await.unwrap().is_none());

    // The same change without the failing condition commits and keeps its blob.
    let blob2 = cat.blobs().put(&[8u8; 100_000]).unwrap();
    let mut v2 = version;
    v2.data = ObjectData::Blobs(vec![blob2]);
    Change::new()
        .put_version(Event::Put, &b, "k", v2, true)
        .owns(&[blob2])
        .commit(&gw)
        .await
        .unwrap();
    assert_eq!(cat.blobs().get(blob2.id).unwrap(), vec![8u8; 100_000]);
}

/// A change's event rows are part of its transaction: a change that fails appends
/// nothing, one that commits appends its record, in the partition of its key.
#[tokio::test(flavor = "multi_thread")]
async fn event_rows_commit_with_the_change_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let cat =
        EmbeddedCatalog::open(CatalogConfig::new(DriveSetConfig::under(dir.path(), 4, 2))).unwrap();
    let topic = catalog::TopicRecord {
        name: "events".into(),
        id: 7,
        partitions: 3,
        configs: BTreeMap::new(),
        created_ms: 0,
    };
    let config = notify::NotificationConfig::validate(
        vec![notify::RuleSpec {
            arn: "arn:aws:sns:us-east-1:eddy:events".into(),
            events: vec!["s3:ObjectCreated:*".into()],
            ..Default::default()
        }],
        |t| t == "events",
    )
    .unwrap();
    let mut settings = BTreeMap::new();
    config.store(&mut settings);
    cat.commit(Transaction::new(vec![
        Op::S3(S3Op::CreateBucket(BucketRecord {
            name: "b".into(),
            owner: "admin".into(),
            created_ms: 0,
            versioning: Versioning::Unversioned,
            tags: BTreeMap::new(),
            settings,
        })),
        Op::Kafka(KafkaOp::CreateTopic(topic.clone())),
    ]))
    .await
    .unwrap();
    let gw = Gateway::new(
        cat.clone() as Arc<dyn Catalog>,
        Arc::new(iam::Directory::in_memory(&[])),
    );
    let b = Bucket::decode(cat.s3().bucket("b").await.unwrap().unwrap());
    let version = ObjectVersion::new(
        "null".into(),
        ObjectData::Inline(b"abc".to_vec()),
        3,
        "e".into(),
        1,
    );
    let appended = async || {
        let mut n = 0u64;
        for p in 0..3 {
            n += cat
                .kafka()
                .partition(topic.id, p)
                .await
                .unwrap()
                .unwrap()
                .next_offset;
        }
        n
    };
    let err = Change::new()
        .expect_etag("b", "k", Some("not-there".into()))
        .put_version(Event::Put, &b, "k", version.clone(), true)
        .commit(&gw)
        .await
        .unwrap_err();
    assert_eq!(err.code().as_str(), "PreconditionFailed");
    assert_eq!(appended().await, 0, "a failed change appended its event");

    Change::new()
        .put_version(Event::Put, &b, "k", version, true)
        .commit(&gw)
        .await
        .unwrap();
    assert_eq!(appended().await, 1);
    let p = notify::partition::partition_for(b"b/k", 3);
    let batches = cat
        .kafka()
        .read_batches(topic.id, p, 0, 1 << 20)
        .await
        .unwrap();
    assert_eq!(batches.len(), 1);
    let mut bytes = batches[0].bytes.clone();
    let decoded = kafka_protocol::records::RecordBatchDecoder::decode(&mut bytes).unwrap();
    assert_eq!(decoded.records[0].key.as_deref(), Some(&b"b/k"[..]));
    let value: serde_json::Value =
        serde_json::from_slice(decoded.records[0].value.as_ref().unwrap()).unwrap();
    assert_eq!(value["Records"][0]["eventName"], "ObjectCreated:Put");
}
