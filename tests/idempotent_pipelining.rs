//! An idempotent producer with requests in flight: a client writes many produce requests
//! of consecutive sequences for one partition back to back, before reading any answer
//! (librdkafka keeps up to 5 in flight, more under load), so each is planned while the
//! previous ones still wait in the commit queue. Every one must be appended, in order;
//! none may be refused as out of order. A request that really skips sequences is still
//! refused, when its commit is applied. A retry met only in the commit appends nothing
//! and lets the rest of its request commit.

use std::io::{Read, Write};
use std::net::TcpStream;

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, InitProducerIdRequest, InitProducerIdResponse, ProduceRequest,
    ProduceResponse, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

mod common;
use common::{Server, call, free_port, roundtrip};

const TOPIC: &str = "pipelined";
const REQUESTS: i32 = 200;
/// Records per batch (so sequences advance by this much per request).
const RECORDS: i32 = 3;

fn batch(producer_id: i64, first_sequence: i32) -> Bytes {
    let records: Vec<Record> = (0..RECORDS)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id,
            producer_epoch: 0,
            timestamp_type: TimestampType::Creation,
            offset: i64::from(i),
            sequence: first_sequence + i,
            timestamp: 1,
            key: None,
            value: Some(Bytes::from(format!("v{}", first_sequence + i))),
            headers: IndexMap::new(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &options).unwrap();
    buf.freeze()
}

fn produce_frame(correlation: i32, producer_id: i64, first_sequence: i32) -> Vec<u8> {
    produce_frame_for(correlation, producer_id, &[(0, first_sequence)])
}

/// A produce request of one batch per (partition, first sequence).
fn produce_frame_for(correlation: i32, producer_id: i64, batches: &[(i32, i32)]) -> Vec<u8> {
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
                .with_partition_data(
                    batches
                        .iter()
                        .map(|(partition, first)| {
                            PartitionProduceData::default()
                                .with_index(*partition)
                                .with_records(Some(batch(producer_id, *first)))
                        })
                        .collect(),
                ),
        ]);
    let mut buf = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(ApiKey::Produce as i16)
        .with_request_api_version(9)
        .with_correlation_id(correlation)
        .with_client_id(Some(StrBytes::from_static_str("pipeliner")))
        .encode(&mut buf, ApiKey::Produce.request_header_version(9))
        .unwrap();
    req.encode(&mut buf, 9).unwrap();
    let mut frame = (buf.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&buf);
    frame
}

fn read_response(s: &mut TcpStream) -> (i32, ProduceResponse) {
    let mut size = [0u8; 4];
    s.read_exact(&mut size).unwrap();
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    s.read_exact(&mut body).unwrap();
    let mut body = Bytes::from(body);
    let header =
        ResponseHeader::decode(&mut body, ApiKey::Produce.response_header_version(9)).unwrap();
    (
        header.correlation_id,
        ProduceResponse::decode(&mut body, 9).unwrap(),
    )
}

fn partition_answer(r: &ProduceResponse) -> (i16, i64) {
    answers(r)[0]
}

/// (error code, base offset) per partition, in request order.
fn answers(r: &ProduceResponse) -> Vec<(i16, i64)> {
    r.responses[0]
        .partition_responses
        .iter()
        .map(|p| (p.error_code, p.base_offset))
        .collect()
}

/// A server with the topic (of `partitions`) and an idempotent producer id.
fn serve(dir: &std::path::Path, partitions: i32) -> (Server, TcpStream, i64) {
    let port = free_port();
    let server = Server::start(dir, port, &["127.0.0.1"], &[]);
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_nodelay(true).unwrap();
    let create = CreateTopicsRequest::default().with_topics(vec![
        CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_num_partitions(partitions)
            .with_replication_factor(1),
    ]);
    call(&mut s, ApiKey::CreateTopics, 5, &create).unwrap();
    let init: InitProducerIdResponse = roundtrip(
        &mut s,
        ApiKey::InitProducerId,
        1,
        &InitProducerIdRequest::default()
            .with_transactional_id(None)
            .with_transaction_timeout_ms(-1),
    );
    let pid = init.producer_id.0;
    assert!(pid >= 0, "{init:?}");
    (server, s, pid)
}

/// A retry sent right behind its first send, in a request that also carries a new batch
/// for another partition (the Java client and franz-go put every partition of a broker
/// in one request): the retry is planned while the first send may still wait in the
/// commit queue, and meets it only in the commit. It is answered at its first offset
/// and appends nothing; the new batch is appended. (When the commit failed the whole
/// request for the duplicate, the new batch was answered as a duplicate too, which
/// clients count as delivered: lost.)
#[test]
fn a_retry_sharing_a_request_with_new_batches_lets_them_commit() {
    const PAIRS: i32 = 20;
    let dir = tempfile::tempdir().unwrap();
    let (_server, mut s, pid) = serve(dir.path(), 2 * PAIRS);
    let mut frames = Vec::new();
    for k in 0..PAIRS {
        let (first, other) = (2 * k, 2 * k + 1);
        frames.extend(produce_frame_for(2 * k, pid, &[(first, 0)]));
        frames.extend(produce_frame_for(2 * k + 1, pid, &[(first, 0), (other, 0)]));
    }
    s.write_all(&frames).unwrap();
    for k in 0..PAIRS {
        let (_, first) = read_response(&mut s);
        assert_eq!(answers(&first), vec![(0, 0)], "pair {k}: the first send");
        let (_, retry) = read_response(&mut s);
        assert_eq!(
            answers(&retry),
            vec![(0, 0), (0, 0)],
            "pair {k}: the retry at its first offset, the new batch appended"
        );
    }
    // Each partition's next batch lands right after one batch: the retry appended
    // nothing, and the new batch is there.
    let next: Vec<(i32, i32)> = (0..2 * PAIRS).map(|p| (p, RECORDS)).collect();
    s.write_all(&produce_frame_for(1000, pid, &next)).unwrap();
    let (_, r) = read_response(&mut s);
    assert!(
        answers(&r).iter().all(|a| *a == (0, i64::from(RECORDS))),
        "{:?}",
        answers(&r)
    );
}

#[test]
fn pipelined_idempotent_requests_are_all_appended_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, mut s, pid) = serve(dir.path(), 1);

    // Every request written before any answer is read.
    let frames: Vec<u8> = (0..REQUESTS)
        .flat_map(|i| produce_frame(i, pid, i * RECORDS))
        .collect();
    s.write_all(&frames).unwrap();
    for i in 0..REQUESTS {
        let (correlation, r) = read_response(&mut s);
        assert_eq!(correlation, i, "answers come in request order");
        assert_eq!(
            partition_answer(&r),
            (0, i64::from(i * RECORDS)),
            "request {i} (sequence {})",
            i * RECORDS
        );
    }

    // A real gap (a sequence skipped) is still refused, and appends nothing.
    let next = REQUESTS * RECORDS;
    s.write_all(&produce_frame(1000, pid, next + 7)).unwrap();
    let (_, r) = read_response(&mut s);
    assert_eq!(
        partition_answer(&r).0,
        45,
        "OUT_OF_ORDER_SEQUENCE_NUMBER: {r:?}"
    );
    // The next in sequence goes right after the last appended offset.
    s.write_all(&produce_frame(1001, pid, next)).unwrap();
    let (_, r) = read_response(&mut s);
    assert_eq!(partition_answer(&r), (0, i64::from(next)));
    // A retry of an appended batch is a duplicate: a success at its first offset, as
    // Kafka answers it, and nothing appended.
    s.write_all(&produce_frame(1002, pid, next)).unwrap();
    let (_, r) = read_response(&mut s);
    assert_eq!(
        partition_answer(&r),
        (0, i64::from(next)),
        "the retry's answer"
    );
    s.write_all(&produce_frame(1003, pid, next + RECORDS))
        .unwrap();
    let (_, r) = read_response(&mut s);
    assert_eq!(
        partition_answer(&r),
        (0, i64::from(next + RECORDS)),
        "the retry appended nothing"
    );
}
