//! Crash safety: a child process commits multi-partition transactions from many writers
//! and is SIGKILLed at random moments, 20 rounds on the same drives. After every kill the
//! recovered catalog must hold every acknowledged transaction, whole (all its partitions
//! and its object), and nothing that was never submitted or only partly there.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use catalog::{Catalog, CatalogConfig, EmbeddedCatalog};
use rand::Rng;
use storage::DriveSetConfig;

const TOPIC_ID: u128 = 0xc4a5;
const PARTITIONS: u32 = 8;

struct Seen {
    partitions: BTreeSet<u32>,
    declared: BTreeSet<u32>,
}

/// Reads back every batch and object; panics on anything torn, duplicated or corrupt.
async fn recovered(dir: &Path) -> (BTreeMap<String, Seen>, BTreeSet<String>) {
    let catalog =
        EmbeddedCatalog::open(CatalogConfig::new(DriveSetConfig::under(dir, 4, 2))).unwrap();
    let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
    for p in 0..PARTITIONS {
        let Some(state) = catalog.kafka().partition(TOPIC_ID, p).await.unwrap() else {
            continue;
        };
        let mut next = 0;
        let mut last_end = 0;
        while next < state.next_offset {
            let batches = catalog
                .kafka()
                .read_batches(TOPIC_ID, p, next, 1 << 20)
                .await
                .unwrap();
            assert!(
                !batches.is_empty(),
                "partition {p}: offsets {next}.. missing"
            );
            for b in batches {
                assert!(
                    b.base_offset >= last_end,
                    "partition {p}: overlapping offsets"
                );
                assert_eq!(&b.bytes[..8], &(b.base_offset as i64).to_be_bytes());
                let text =
                    String::from_utf8_lossy(&b.bytes[8..b.bytes.len().min(200)]).into_owned();
                let fields: Vec<&str> = text.splitn(5, '|').collect();
                assert_eq!(fields[0], "EDDYTXN", "partition {p}: foreign bytes");
                let (id, parts, filler) = (fields[1], fields[2], fields[3]);
                let declared: BTreeSet<u32> =
                    parts.split(',').map(|s| s.parse().unwrap()).collect();
                let header = format!("EDDYTXN|{id}|{parts}|{filler}|").len();
                assert_eq!(
                    b.bytes.len(),
                    8 + header + filler.parse::<usize>().unwrap(),
                    "{id}: length"
                );
                let seed = id
                    .bytes()
                    .fold(0u64, |h, c| h.wrapping_mul(31).wrapping_add(u64::from(c)));
                for (i, byte) in b.bytes[8 + header..].iter().enumerate() {
                    let want = (seed.wrapping_add(i as u64).wrapping_mul(0x9e37_79b9) >> 24) as u8;
                    assert_eq!(*byte, want, "{id}: corrupt byte {i}");
                }
                let entry = seen.entry(id.to_string()).or_insert_with(|| Seen {
                    partitions: BTreeSet::new(),
                    declared: declared.clone(),
                });
                assert!(
                    entry.partitions.insert(p),
                    "{id} appears twice in partition {p}"
                );
                last_end = b.last_offset + 1;
                next = b.last_offset + 1;
            }
        }
    }
    let objects: BTreeSet<String> = catalog
        .s3()
        .list_objects("crash", "", None, usize::MAX)
        .await
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    (seen, objects)
}

#[test]
fn kill_9_at_random_moments_loses_and_invents_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rng();
    let mut submitted = BTreeSet::new();
    let mut acked = BTreeSet::new();
    let mut total_present = 0;
    for round in 0..20 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_eddy-commit-loop"))
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        // Kill after a random number of acknowledgements: the moment varies with the
        // load, the fsyncs and the checkpoints in flight.
        let kill_after = rng.random_range(1..200);
        let mut acks_this_round = 0;
        let mut ready = false;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if line == "READY" {
                ready = true;
            } else if let Some(id) = line.strip_prefix("SUBMIT ") {
                submitted.insert(id.to_string());
            } else if let Some(id) = line.strip_prefix("ACK ") {
                acked.insert(id.to_string());
                acks_this_round += 1;
                if acks_this_round == kill_after {
                    child.kill().unwrap();
                }
            }
        }
        assert!(ready, "round {round}: the writer did not start");
        child.wait().unwrap();
        // Lines written before the kill may still arrive; the loop above drained them.

        let (seen, objects) = tokio::runtime::Runtime::new()
            .unwrap()
            .block_on(recovered(dir.path()));
        for (id, s) in &seen {
            assert_eq!(s.partitions, s.declared, "round {round}: {id} is torn");
            assert!(
                submitted.contains(id),
                "round {round}: {id} was never submitted"
            );
            assert!(objects.contains(id), "round {round}: {id} lacks its object");
        }
        for id in &objects {
            assert!(
                seen.contains_key(id),
                "round {round}: object {id} without its batches"
            );
        }
        for id in &acked {
            assert!(
                seen.contains_key(id),
                "round {round}: acknowledged {id} was lost"
            );
        }
        total_present = seen.len();
    }
    assert!(acked.len() >= 20, "only {} acks in 20 rounds", acked.len());
    eprintln!(
        "20 rounds: {} submitted, {} acknowledged, {} present",
        submitted.len(),
        acked.len(),
        total_present
    );
}
