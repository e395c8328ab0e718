//! Test harness for the crash test: commits transactions in a loop from many concurrent
//! writers and reports each one on stdout (`SUBMIT <id>` before, `ACK <id>` after its
//! commit returns), so a test can SIGKILL it at any moment and then check that every
//! acknowledged transaction is present and whole and that nothing else is.
//!
//! Each transaction appends one batch to each of 1-4 partitions of topic `crash` and puts
//! object `<id>` in bucket `crash`. Every batch carries a self-describing marker
//! (see [`marker`]) followed by filler derived from the id, so a reader can tell exactly
//! which transaction it belongs to and that its bytes are intact.
//!
//! Usage: `eddy-commit-loop <data-dir>`

use catalog::{KafkaOp, S3Op};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use catalog::{
    BucketRecord, Catalog, CatalogConfig, EmbeddedCatalog, ObjectData, ObjectVersion, Op,
    TopicRecord, Transaction, Versioning,
};
use storage::{DriveSetConfig, WalConfig};

/// Partitions of the test topic.
pub const PARTITIONS: u32 = 8;
const WRITERS: usize = 16;
const TOPIC_ID: u128 = 0xc4a5;

fn marker(id: &str, partitions: &[u32], filler: usize) -> Vec<u8> {
    let parts: Vec<String> = partitions.iter().map(u32::to_string).collect();
    let mut b = vec![0u8; 8];
    b.extend_from_slice(format!("EDDYTXN|{id}|{}|{filler}|", parts.join(",")).as_bytes());
    let seed = id
        .bytes()
        .fold(0u64, |h, c| h.wrapping_mul(31).wrapping_add(u64::from(c)));
    b.extend(
        (0..filler as u64)
            .map(|i| (seed.wrapping_add(i).wrapping_mul(0x9e37_79b9)) >> 24)
            .map(|x| x as u8),
    );
    b
}

#[tokio::main]
async fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: eddy-commit-loop <data-dir>");
    let mut config = CatalogConfig::new(DriveSetConfig::under(std::path::Path::new(&dir), 4, 2));
    // Small segments, each zero-filled ahead whatever its records' size, and frequent
    // checkpoints, so kills also land in rotations, zero fills and checkpoints.
    config.wal = WalConfig {
        segment_bytes: 1 << 20,
        zero_fill_below_record_bytes: u64::MAX,
        ..config.wal
    };
    config.checkpoint_bytes = 2 << 20;
    config.checkpoint_min_gap = std::time::Duration::ZERO;
    let catalog = EmbeddedCatalog::open(config).expect("open catalog");
    let setup = [
        Op::S3(S3Op::CreateBucket(BucketRecord {
            name: "crash".into(),
            owner: "eddyadmin".into(),
            created_ms: 0,
            versioning: Versioning::Unversioned,
            tags: BTreeMap::new(),
            settings: BTreeMap::new(),
        })),
        Op::Kafka(KafkaOp::CreateTopic(TopicRecord {
            name: "crash".into(),
            id: TOPIC_ID,
            partitions: PARTITIONS,
            configs: BTreeMap::new(),
            created_ms: 0,
        })),
    ];
    for op in setup {
        // Exists already after the first round.
        let _ = catalog.commit(Transaction::new(vec![op])).await;
    }
    println!("READY");
    let run = std::process::id();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let catalog: Arc<EmbeddedCatalog> = catalog.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::from_os_rng();
            for seq in 0u64.. {
                use rand::Rng;
                let id = format!("{run}-{w}-{seq}");
                let mut partitions: Vec<u32> = (0..PARTITIONS).collect();
                rand::seq::SliceRandom::shuffle(&mut partitions[..], &mut rng);
                partitions.truncate(rng.random_range(1..=4));
                partitions.sort_unstable();
                let filler = [100, 1000, 8192, 65536][rng.random_range(0..4)];
                let mut ops: Vec<Op> = partitions
                    .iter()
                    .map(|&p| {
                        Op::Kafka(KafkaOp::Append {
                            topic_id: TOPIC_ID,
                            partition: p,
                            offset_count: 1 + (seq % 5) as u32,
                            max_timestamp: seq as i64,
                            batch: marker(&id, &partitions, filler).into(),
                            producer: None,
                            transactional_id: None,
                        })
                    })
                    .collect();
                ops.push(Op::S3(S3Op::PutObject {
                    bucket: "crash".into(),
                    key: id.clone(),
                    version: ObjectVersion::new(
                        "null".into(),
                        ObjectData::Inline(id.clone().into_bytes()),
                        id.len() as u64,
                        id.clone(),
                        0,
                    ),
                    replace_null: true,
                }));
                println!("SUBMIT {id}");
                catalog.commit(Transaction::new(ops)).await.expect("commit");
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "ACK {id}");
                let _ = out.flush();
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}
