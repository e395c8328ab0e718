//! One produce request is one transaction, across kill -9: concurrent raw clients send
//! produce requests that each span several partitions, every record carrying its
//! request's marker; the real `eddy` binary is killed at random moments. After each
//! restart, no request is present in some of its partitions and missing from others,
//! every acknowledged request is present, and nothing was invented.

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, FetchRequest, FetchResponse, ProduceRequest, ProduceResponse,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use rand::Rng;

mod common;
use common::{Server, call, free_port};

const PARTITIONS: i32 = 8;
const TOPIC: &str = "atomic";

fn batch(marker: &str) -> Bytes {
    let record = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: 1,
        key: None,
        value: Some(Bytes::from(marker.to_string())),
        headers: IndexMap::new(),
    };
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, [&record], &options).unwrap();
    buf.freeze()
}

fn create_topic(port: u16) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = CreateTopicsRequest::default().with_topics(vec![
        CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_num_partitions(PARTITIONS)
            .with_replication_factor(1),
    ]);
    call(&mut s, ApiKey::CreateTopics, 5, &req).unwrap();
}

/// Sends multi-partition requests until the connection dies; records sent and acked
/// markers.
fn writer(
    port: u16,
    round: usize,
    id: usize,
    sent: Arc<Mutex<BTreeSet<String>>>,
    acked: Arc<Mutex<BTreeSet<String>>>,
    acks: mpsc::Sender<()>,
    stop: Arc<AtomicBool>,
) {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return;
    };
    let mut rng = rand::rng();
    for seq in 0.. {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let mut parts: Vec<i32> = (0..PARTITIONS).collect();
        rand::seq::SliceRandom::shuffle(&mut parts[..], &mut rng);
        parts.truncate(rng.random_range(2..=4));
        parts.sort_unstable();
        let list: Vec<String> = parts.iter().map(i32::to_string).collect();
        let marker = format!("{round}-{id}-{seq}|{}", list.join(","));
        let data = parts
            .iter()
            .map(|p| {
                PartitionProduceData::default()
                    .with_index(*p)
                    .with_records(Some(batch(&marker)))
            })
            .collect();
        let req = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(10_000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
                    .with_partition_data(data),
            ]);
        sent.lock().unwrap().insert(marker.clone());
        let Ok(mut body) = call(&mut s, ApiKey::Produce, 9, &req) else {
            return;
        };
        let resp = ProduceResponse::decode(&mut body, 9).unwrap();
        let ok = resp
            .responses
            .iter()
            .flat_map(|t| &t.partition_responses)
            .all(|p| p.error_code == 0);
        assert!(ok, "produce refused: {resp:?}");
        acked.lock().unwrap().insert(marker);
        let _ = acks.send(());
    }
}

/// Every marker found, with the partitions it was found in.
fn read_back(port: u16) -> BTreeMap<String, BTreeSet<i32>> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut found: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
    for p in 0..PARTITIONS {
        let mut offset = 0i64;
        loop {
            let req = FetchRequest::default()
                .with_max_wait_ms(0)
                .with_min_bytes(1)
                .with_max_bytes(8 << 20)
                .with_topics(vec![
                    FetchTopic::default()
                        .with_topic(TopicName(StrBytes::from_static_str(TOPIC)))
                        .with_partitions(vec![
                            FetchPartition::default()
                                .with_partition(p)
                                .with_fetch_offset(offset)
                                .with_partition_max_bytes(8 << 20),
                        ]),
                ]);
            let mut body = call(&mut s, ApiKey::Fetch, 11, &req).unwrap();
            let resp = FetchResponse::decode(&mut body, 11).unwrap();
            let data = &resp.responses[0].partitions[0];
            assert_eq!(data.error_code, 0);
            let mut records = data.records.clone().unwrap_or_default();
            if records.is_empty() {
                assert_eq!(
                    offset, data.high_watermark,
                    "partition {p}: gap before the end"
                );
                break;
            }
            while !records.is_empty() {
                let set = RecordBatchDecoder::decode(&mut records).unwrap();
                for r in set.records {
                    let marker = String::from_utf8(r.value.unwrap().to_vec()).unwrap();
                    assert!(
                        found.entry(marker.clone()).or_default().insert(p),
                        "{marker} twice in partition {p} at offset {} (fetched from {offset})",
                        r.offset
                    );
                    offset = r.offset + 1;
                }
            }
        }
    }
    found
}

#[test]
fn produce_requests_stay_whole_across_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let sent = Arc::new(Mutex::new(BTreeSet::new()));
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let mut rng = rand::rng();
    let mut server = Server::start(dir.path(), port, &["127.0.0.1"], &[]);
    create_topic(server.kafka);
    for round in 0..6 {
        let (acks, acked_now) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..8)
            .map(|id| {
                let (sent, acked, acks, stop) =
                    (sent.clone(), acked.clone(), acks.clone(), stop.clone());
                std::thread::spawn(move || writer(port, round, id, sent, acked, acks, stop))
            })
            .collect();
        // Kill after a random number of acknowledged requests.
        drop(acks);
        let target = rng.random_range(20..400);
        for _ in 0..target {
            acked_now.recv().expect("writers stopped before the kill");
        }
        server.child.kill().unwrap();
        server.child.wait().unwrap();
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
        server = Server::start(dir.path(), port, &["127.0.0.1"], &[]);
        let found = read_back(port);
        let sent = sent.lock().unwrap();
        for (marker, parts) in &found {
            assert!(
                sent.contains(marker),
                "round {round}: {marker} was never sent"
            );
            let declared: BTreeSet<i32> = marker
                .split('|')
                .nth(1)
                .unwrap()
                .split(',')
                .map(|p| p.parse().unwrap())
                .collect();
            assert_eq!(parts, &declared, "round {round}: request {marker} is torn");
        }
        for marker in acked.lock().unwrap().iter() {
            assert!(
                found.contains_key(marker),
                "round {round}: acknowledged {marker} lost"
            );
        }
    }
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}
