//! Drive loss and bitrot on a 4+2 set: with drives removed and blocks corrupted (never
//! more than `m` bad shards in one stripe), everything reads back exactly; `eddy heal`
//! then restores full redundancy, proven by losing two other drives and reading again.

use catalog::{KafkaOp, S3Op};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use catalog::{
    BucketRecord, Catalog, CatalogConfig, EmbeddedCatalog, ObjectData, ObjectVersion, Op,
    TopicRecord, Transaction, Versioning,
};
use rand::{Rng, SeedableRng};
use storage::DriveSetConfig;

const TOPIC: u128 = 42;

fn open(dir: &Path) -> Arc<EmbeddedCatalog> {
    EmbeddedCatalog::open(CatalogConfig::new(DriveSetConfig::under(dir, 4, 2))).unwrap()
}

fn body(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len).map(|_| rng.random()).collect()
}

const SIZES: [usize; 6] = [0, 1, 4096, 1 << 20, 3 << 20, (5 << 20) + 12345];

fn version(data: ObjectData, size: usize) -> ObjectVersion {
    ObjectVersion::new("null".into(), data, size as u64, String::new(), 0)
}

async fn populate(c: &EmbeddedCatalog) {
    let setup = vec![
        Op::S3(S3Op::CreateBucket(BucketRecord {
            name: "b".into(),
            owner: "eddyadmin".into(),
            created_ms: 0,
            versioning: Versioning::Unversioned,
            tags: BTreeMap::new(),
            settings: BTreeMap::new(),
        })),
        Op::Kafka(KafkaOp::CreateTopic(TopicRecord {
            name: "t".into(),
            id: TOPIC,
            partitions: 3,
            configs: BTreeMap::new(),
            created_ms: 0,
        })),
    ];
    c.commit(Transaction::new(setup)).await.unwrap();
    for (i, size) in SIZES.iter().enumerate() {
        let data = body(*size, i as u64);
        let blobs = c.blobs().clone();
        let meta = tokio::task::spawn_blocking(move || blobs.put(&data))
            .await
            .unwrap()
            .unwrap();
        let ops = vec![
            Op::S3(S3Op::PutObject {
                bucket: "b".into(),
                key: format!("blob-{i}"),
                version: version(ObjectData::Blobs(vec![meta]), *size),
                replace_null: true,
            }),
            Op::Kafka(KafkaOp::Append {
                topic_id: TOPIC,
                partition: i as u32 % 3,
                offset_count: 1,
                max_timestamp: 0,
                batch: body(1000 + i, 100 + i as u64).into(),
                producer: None,
                transactional_id: None,
            }),
        ];
        c.commit(Transaction::new(ops)).await.unwrap();
        if i == 2 {
            // Some state in a checkpoint, the rest only in the log.
            tokio::task::block_in_place(|| c.checkpoint().unwrap());
        }
    }
}

/// Reads every object and batch back and compares with what was written.
async fn verify(dir: &Path) {
    let c = open(dir);
    for (i, size) in SIZES.iter().enumerate() {
        let Some(v) = c.s3().object("b", &format!("blob-{i}")).await.unwrap() else {
            let mut partitions = Vec::new();
            for p in 0..3 {
                partitions.push(c.kafka().partition(TOPIC, p).await.unwrap());
            }
            panic!("blob-{i} missing; partitions {partitions:?}");
        };
        let ObjectData::Blobs(blobs) = &v.data else {
            panic!("blob-{i} is not blob-backed")
        };
        let got = c.blobs().get(blobs[0].id).unwrap();
        assert!(got == body(*size, i as u64), "blob-{i} differs");
    }
    for i in 0..SIZES.len() {
        let p = i as u32 % 3;
        let batches = c
            .kafka()
            .read_batches(TOPIC, p, 0, usize::MAX)
            .await
            .unwrap();
        let want = body(1000 + i, 100 + i as u64);
        assert!(
            batches.iter().any(|b| b.bytes[8..] == want[8..]),
            "batch {i} missing from partition {p}"
        );
    }
}

fn drive(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("drive-{i}"))
}

fn heal(dir: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["heal", "--data-dir"])
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "heal failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn files_under(root: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(entries) = std::fs::read_dir(root) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                files_under(&p, out);
            } else {
                out.push(p);
            }
        }
    }
}

fn flip_random_byte(path: &Path, rng: &mut impl Rng) {
    let mut bytes = std::fs::read(path).unwrap();
    if bytes.is_empty() {
        return;
    }
    let i = rng.random_range(0..bytes.len());
    bytes[i] ^= 0xa5;
    std::fs::write(path, bytes).unwrap();
}

/// Full redundancy: any two other drives can go and everything still reads.
async fn prove_full_redundancy(dir: &Path, lose: [usize; 2]) {
    let saved = dir.join("saved");
    std::fs::create_dir_all(&saved).unwrap();
    for i in lose {
        std::fs::rename(drive(dir, i), saved.join(i.to_string())).unwrap();
    }
    verify(dir).await;
    for i in lose {
        std::fs::remove_dir_all(drive(dir, i)).ok();
        std::fs::rename(saved.join(i.to_string()), drive(dir, i)).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn lost_and_corrupt_drives_read_back_exactly_and_heal() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let c = open(dir);
    populate(&c).await;
    drop(c);
    verify(dir).await;

    // Two whole drives gone, one of them holding the store's file.
    std::fs::remove_dir_all(drive(dir, 0)).unwrap();
    std::fs::remove_dir_all(drive(dir, 4)).unwrap();
    verify(dir).await;
    let report = heal(dir);
    assert!(
        report.contains("drives formatted:        [0, 4]"),
        "{report}"
    );
    assert!(report.contains("healed"), "{report}");
    prove_full_redundancy(dir, [1, 5]).await;
    let again = heal(dir);
    assert!(again.contains(", 0 healed (0 shards rebuilt)"), "{again}");

    // One drive gone and random blocks corrupt on two others, never both in one blob, so
    // no stripe has more than two bad shards.
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    std::fs::remove_dir_all(drive(dir, 2)).unwrap();
    let mut blob_files = Vec::new();
    files_under(&drive(dir, 3).join("blobs"), &mut blob_files);
    for f in &blob_files {
        let victim = if rng.random_bool(0.5) { 3 } else { 5 };
        let rel = f.strip_prefix(drive(dir, 3)).unwrap();
        flip_random_byte(&drive(dir, victim).join(rel), &mut rng);
    }
    let mut segments = Vec::new();
    files_under(&drive(dir, 3).join("wal"), &mut segments);
    for s in &segments {
        flip_random_byte(s, &mut rng);
    }
    verify(dir).await;
    let report = heal(dir);
    assert!(report.contains("drives formatted:        [2]"), "{report}");
    prove_full_redundancy(dir, [0, 1]).await;
    prove_full_redundancy(dir, [3, 5]).await;
    let again = heal(dir);
    assert!(again.contains(", 0 healed (0 shards rebuilt)"), "{again}");
    assert!(again.contains("0 drive copies rewritten"), "{again}");
}
