//! Storage throughput on real drives: blob streaming write/read and group commit at
//! several writer counts and transaction sizes. Prints one table row per case.
//!
//! `cargo bench --bench throughput -- [DIR]` (DIR defaults to a temp dir; put it on the
//! disk you measure). `bench/storage.sh` runs it next to a raw `dd` baseline. No
//! checkpoint runs within a 6 s case: the first waits `checkpoint_min_gap` (30 s) from
//! the catalog's open. `EDDY_BENCH_NO_CHECKPOINT=1` turns them off all the same.

use catalog::KafkaOp;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use catalog::{Catalog, CatalogConfig, EmbeddedCatalog, Op, TopicRecord, Transaction};
use storage::{BlobStore, DriveSet, DriveSetConfig};

const BLOB_BYTES: usize = 512 << 20;
const COMMIT_SECONDS: u64 = 6;

fn fresh(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn blobs(root: &Path) {
    let dir = fresh(root, "blobs");
    let set = Arc::new(DriveSet::open(&DriveSetConfig::under(&dir, 4, 2)).unwrap());
    let store = BlobStore::new(set, storage::blob::DEFAULT_SHARD_SIZE).unwrap();
    let chunk: Vec<u8> = (0..1u64 << 20).map(|i| ((i * 7919) >> 5) as u8).collect();
    let started = Instant::now();
    let mut w = store.create().unwrap();
    for _ in 0..BLOB_BYTES / chunk.len() {
        w.write(&chunk).unwrap();
    }
    let meta = w.finish().unwrap();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "blob write (streamed, fsync'd)   {:>8.1} MB/s  ({} MiB in {secs:.2}s)",
        BLOB_BYTES as f64 / 1e6 / secs,
        BLOB_BYTES >> 20
    );
    let started = Instant::now();
    let r = store.open(meta.id).unwrap();
    let mut n = 0usize;
    for c in r.chunks(0, r.len()).unwrap() {
        n += c.unwrap().len();
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "blob read (page cache warm)      {:>8.1} MB/s",
        n as f64 / 1e6 / secs
    );
    let _ = std::fs::remove_dir_all(dir.join("drive-0"));
    let _ = std::fs::remove_dir_all(dir.join("drive-1"));
    let started = Instant::now();
    let r = store.open(meta.id).unwrap();
    let mut n = 0usize;
    for c in r.chunks(0, r.len()).unwrap() {
        n += c.unwrap().len();
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "blob read, 2 data drives lost    {:>8.1} MB/s  (reconstructing every stripe)",
        n as f64 / 1e6 / secs
    );
    let _ = std::fs::remove_dir_all(&dir);
}

async fn group_commit(root: &Path, writers: usize, size: usize) {
    let dir = fresh(root, "commit");
    let mut cfg = CatalogConfig::new(DriveSetConfig::under(&dir, 4, 2));
    if std::env::var_os("EDDY_BENCH_NO_CHECKPOINT").is_some() {
        cfg.checkpoint_bytes = u64::MAX;
    }
    let catalog = EmbeddedCatalog::open(cfg).unwrap();
    let topic = Op::Kafka(KafkaOp::CreateTopic(TopicRecord {
        name: "bench".into(),
        id: 1,
        partitions: 256,
        configs: BTreeMap::new(),
        created_ms: 0,
    }));
    catalog.commit(Transaction::new(vec![topic])).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(COMMIT_SECONDS);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let catalog = catalog.clone();
        tasks.push(tokio::spawn(async move {
            let batch = bytes::Bytes::from(vec![w as u8; size]);
            let mut n = 0u64;
            while Instant::now() < deadline {
                let op = Op::Kafka(KafkaOp::Append {
                    topic_id: 1,
                    partition: (w % 256) as u32,
                    offset_count: 1,
                    max_timestamp: 0,
                    batch: batch.clone(),
                    producer: None,
                    transactional_id: None,
                });
                catalog.commit(Transaction::new(vec![op])).await.unwrap();
                n += 1;
            }
            n
        }));
    }
    let mut commits = 0;
    for t in tasks {
        commits += t.await.unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    let groups = catalog.metrics().group_commits.get();
    println!(
        "group commit {writers:>3} writers {:>3} KiB  {:>9.0} commits/s {:>8.1} MB/s  ({:.1} txns per log record)",
        size >> 10,
        commits as f64 / secs,
        (commits as usize * size) as f64 / 1e6 / secs,
        commits as f64 / groups.max(1) as f64
    );
    catalog.shutdown();
    drop(catalog);
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let arg = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let tmp = tempfile::tempdir().unwrap();
    let root = arg
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&root).unwrap();
    println!("data on {}", root.display());
    blobs(&root);
    let rt = tokio::runtime::Runtime::new().unwrap();
    for size in [1 << 10, 64 << 10] {
        for writers in [1, 16, 256] {
            rt.block_on(group_commit(&root, writers, size));
        }
    }
}
