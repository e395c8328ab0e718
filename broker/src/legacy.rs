//! Request versions Kafka 4.0 removed (KIP-896) that clients still in use send:
//! OffsetCommit v0-1 (Sarama 1.22's default commits), DescribeConfigs v0 (Sarama's
//! `ListTopics`), ListOffsets v0 (Burrow, Sarama's `GetOffset`), CreateTopics v0-1
//! (kafka-go's `Conn`, Sarama below 0.11), and Produce v0-2 and Fetch v0-3 (kafka-go
//! 0.2's Writer and Reader), whose message sets `crate::message_set` converts to and
//! from record batches. kafka-protocol 0.18 no longer encodes them
//! (and keeps its primitive codecs private), so their few fixed-width fields, strings
//! and arrays are read and written here, every length checked against the bytes left;
//! each request becomes the modern request of the nearest
//! version the crate has ([`handler_version`]), the same handler serves it, and its
//! response is written back in the old layout.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, DescribeConfigsRequest, FetchRequest, GroupId,
    ListOffsetsRequest, OffsetCommitRequest, ProduceRequest, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};

use crate::message_set;

/// `config_source` of a default value (DescribeConfigs v1+), `is_default` in v0.
const DEFAULT_CONFIG: i8 = 5;

/// Why a legacy request did not decode.
pub type LegacyError = String;

/// The oldest version the crate encodes, per API with legacy versions here; `None` for
/// the others.
fn crate_min(key: ApiKey) -> Option<i16> {
    Some(match key {
        ApiKey::Produce => 3,
        ApiKey::Fetch => 4,
        ApiKey::OffsetCommit => 2,
        ApiKey::DescribeConfigs => 1,
        ApiKey::ListOffsets => 1,
        ApiKey::CreateTopics => 2,
        _ => return None,
    })
}

/// Whether `version` of `key` is read and written here.
pub fn is_legacy(key: ApiKey, version: i16) -> bool {
    crate_min(key).is_some_and(|min| (0..min).contains(&version))
}

/// The version the handler sees a legacy request as: the oldest one the crate has,
/// whose semantics the old version shares.
pub fn handler_version(key: ApiKey) -> i16 {
    crate_min(key).unwrap_or(0)
}

fn need(buf: &Bytes, n: usize) -> Result<(), LegacyError> {
    if buf.remaining() < n {
        return Err(format!(
            "truncated: {n} bytes wanted, {} left",
            buf.remaining()
        ));
    }
    Ok(())
}

fn int8(buf: &mut Bytes) -> Result<i8, LegacyError> {
    need(buf, 1)?;
    Ok(buf.get_i8())
}

fn int16(buf: &mut Bytes) -> Result<i16, LegacyError> {
    need(buf, 2)?;
    Ok(buf.get_i16())
}

fn int32(buf: &mut Bytes) -> Result<i32, LegacyError> {
    need(buf, 4)?;
    Ok(buf.get_i32())
}

fn int64(buf: &mut Bytes) -> Result<i64, LegacyError> {
    need(buf, 8)?;
    Ok(buf.get_i64())
}

/// An array's element count; -1 (null) is `None`.
fn nullable_count(buf: &mut Bytes) -> Result<Option<usize>, LegacyError> {
    let n = int32(buf)?;
    if n == -1 {
        return Ok(None);
    }
    // Every element takes at least a byte: never trust a count beyond what is left.
    usize::try_from(n)
        .ok()
        .filter(|n| *n <= buf.remaining())
        .map(Some)
        .ok_or_else(|| format!("array length {n} out of bounds"))
}

fn count(buf: &mut Bytes) -> Result<usize, LegacyError> {
    nullable_count(buf)?.ok_or_else(|| "null array".to_string())
}

fn nullable_string(buf: &mut Bytes) -> Result<Option<StrBytes>, LegacyError> {
    let n = int16(buf)?;
    if n == -1 {
        return Ok(None);
    }
    let n = usize::try_from(n).map_err(|_| format!("string length {n}"))?;
    need(buf, n)?;
    let bytes = buf.split_to(n);
    StrBytes::from_utf8(bytes)
        .map(Some)
        .map_err(|e| format!("string not UTF-8: {e}"))
}

fn string(buf: &mut Bytes) -> Result<StrBytes, LegacyError> {
    nullable_string(buf)?.ok_or_else(|| "null string".to_string())
}

fn nullable_bytes(buf: &mut Bytes) -> Result<Option<Bytes>, LegacyError> {
    let n = int32(buf)?;
    if n == -1 {
        return Ok(None);
    }
    let n = usize::try_from(n).map_err(|_| format!("bytes length {n}"))?;
    need(buf, n)?;
    Ok(Some(buf.split_to(n)))
}

/// A v2 batch header whose CRC cannot match: what a produced message set that did not
/// convert is replaced with, so the produce handler answers its partition
/// CORRUPT_MESSAGE (Produce v0-2 responses carry no error message to say more).
fn corrupt_batch() -> Bytes {
    let mut b = BytesMut::zeroed(61);
    b[8..12].copy_from_slice(&49i32.to_be_bytes());
    b[16] = 2;
    b.freeze()
}

/// A produced message set as the v2 batch the produce handler takes.
fn converted(records: Option<Bytes>, now_ms: i64) -> Option<Bytes> {
    let records = records?;
    Some(match message_set::to_batch(&records, now_ms) {
        Ok(batch) => batch,
        // The handler refuses an empty one as Kafka does (INVALID_RECORD).
        Err(message_set::MessageSetError::Empty) => Bytes::new(),
        Err(e) => {
            tracing::debug!(error = %e, "a produced message set did not convert");
            corrupt_batch()
        }
    })
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Decodes the body of a legacy request into the modern request its handler takes.
pub fn decode(key: ApiKey, version: i16, buf: &mut Bytes) -> Result<RequestKind, LegacyError> {
    let request = match key {
        ApiKey::Produce => {
            let acks: i16 = int16(buf)?;
            let timeout_ms: i32 = int32(buf)?;
            let now = now_ms();
            let mut topic_data = Vec::new();
            for _ in 0..count(buf)? {
                let name = TopicName(string(buf)?);
                let mut partition_data = Vec::new();
                for _ in 0..count(buf)? {
                    let index: i32 = int32(buf)?;
                    let records = converted(nullable_bytes(buf)?, now);
                    partition_data.push(
                        PartitionProduceData::default()
                            .with_index(index)
                            .with_records(records),
                    );
                }
                topic_data.push(
                    TopicProduceData::default()
                        .with_name(name)
                        .with_partition_data(partition_data),
                );
            }
            RequestKind::Produce(
                ProduceRequest::default()
                    .with_acks(acks)
                    .with_timeout_ms(timeout_ms)
                    .with_topic_data(topic_data),
            )
        }
        ApiKey::Fetch => {
            let replica_id: i32 = int32(buf)?;
            let max_wait_ms: i32 = int32(buf)?;
            let min_bytes: i32 = int32(buf)?;
            // Before v3 only the per-partition limits bound a response, as in Kafka.
            let max_bytes: i32 = if version >= 3 { int32(buf)? } else { i32::MAX };
            let mut topics = Vec::new();
            for _ in 0..count(buf)? {
                let topic = TopicName(string(buf)?);
                let mut partitions = Vec::new();
                for _ in 0..count(buf)? {
                    let partition: i32 = int32(buf)?;
                    let fetch_offset: i64 = int64(buf)?;
                    let partition_max_bytes: i32 = int32(buf)?;
                    partitions.push(
                        FetchPartition::default()
                            .with_partition(partition)
                            .with_current_leader_epoch(-1)
                            .with_fetch_offset(fetch_offset)
                            .with_last_fetched_epoch(-1)
                            .with_log_start_offset(-1)
                            .with_partition_max_bytes(partition_max_bytes),
                    );
                }
                topics.push(
                    FetchTopic::default()
                        .with_topic(topic)
                        .with_partitions(partitions),
                );
            }
            // These versions have no isolation level and their clients cannot drop
            // aborted records: they read committed data only (the records of aborted
            // transactions are left out when the batches become messages).
            RequestKind::Fetch(
                FetchRequest::default()
                    .with_replica_id(BrokerId(replica_id))
                    .with_max_wait_ms(max_wait_ms)
                    .with_min_bytes(min_bytes)
                    .with_max_bytes(max_bytes)
                    .with_isolation_level(1)
                    .with_session_epoch(-1)
                    .with_topics(topics),
            )
        }
        ApiKey::OffsetCommit => {
            let group_id = GroupId(string(buf)?);
            let (generation, member_id) = if version >= 1 {
                (int32(buf)?, string(buf)?)
            } else {
                (-1, StrBytes::default())
            };
            let mut topics = Vec::new();
            for _ in 0..count(buf)? {
                let name = TopicName(string(buf)?);
                let mut partitions = Vec::new();
                for _ in 0..count(buf)? {
                    let partition_index: i32 = int32(buf)?;
                    let committed_offset: i64 = int64(buf)?;
                    if version >= 1 {
                        // The commit time the client asks for: the broker's is kept, as
                        // Kafka keeps it for -1 (what Sarama sends).
                        let _commit_timestamp: i64 = int64(buf)?;
                    }
                    partitions.push(
                        OffsetCommitRequestPartition::default()
                            .with_partition_index(partition_index)
                            .with_committed_offset(committed_offset)
                            .with_committed_leader_epoch(-1)
                            .with_committed_metadata(nullable_string(buf)?),
                    );
                }
                topics.push(
                    OffsetCommitRequestTopic::default()
                        .with_name(name)
                        .with_partitions(partitions),
                );
            }
            RequestKind::OffsetCommit(
                OffsetCommitRequest::default()
                    .with_group_id(group_id)
                    .with_generation_id_or_member_epoch(generation)
                    .with_member_id(member_id)
                    .with_retention_time_ms(-1)
                    .with_topics(topics),
            )
        }
        ApiKey::DescribeConfigs => {
            let mut resources = Vec::new();
            for _ in 0..count(buf)? {
                let resource_type: i8 = int8(buf)?;
                let resource_name = string(buf)?;
                let configuration_keys = match nullable_count(buf)? {
                    None => None,
                    Some(n) => Some((0..n).map(|_| string(buf)).collect::<Result<Vec<_>, _>>()?),
                };
                resources.push(
                    DescribeConfigsResource::default()
                        .with_resource_type(resource_type)
                        .with_resource_name(resource_name)
                        .with_configuration_keys(configuration_keys),
                );
            }
            RequestKind::DescribeConfigs(
                DescribeConfigsRequest::default().with_resources(resources),
            )
        }
        ApiKey::ListOffsets => {
            let replica_id: i32 = int32(buf)?;
            let mut topics = Vec::new();
            for _ in 0..count(buf)? {
                let name = TopicName(string(buf)?);
                let mut partitions = Vec::new();
                for _ in 0..count(buf)? {
                    let partition_index: i32 = int32(buf)?;
                    let timestamp: i64 = int64(buf)?;
                    // v0 could ask for several offsets before a time; one is answered,
                    // as Kafka has since message format v1.
                    let _max_num_offsets: i32 = int32(buf)?;
                    partitions.push(
                        ListOffsetsPartition::default()
                            .with_partition_index(partition_index)
                            .with_current_leader_epoch(-1)
                            .with_timestamp(timestamp),
                    );
                }
                topics.push(
                    ListOffsetsTopic::default()
                        .with_name(name)
                        .with_partitions(partitions),
                );
            }
            RequestKind::ListOffsets(
                ListOffsetsRequest::default()
                    .with_replica_id(BrokerId(replica_id))
                    .with_topics(topics),
            )
        }
        ApiKey::CreateTopics => {
            let mut topics = Vec::new();
            for _ in 0..count(buf)? {
                let name = TopicName(string(buf)?);
                let num_partitions: i32 = int32(buf)?;
                let replication_factor: i16 = int16(buf)?;
                let mut assignments = Vec::new();
                for _ in 0..count(buf)? {
                    let partition_index: i32 = int32(buf)?;
                    let mut broker_ids = Vec::new();
                    for _ in 0..count(buf)? {
                        broker_ids.push(BrokerId(int32(buf)?));
                    }
                    assignments.push(
                        CreatableReplicaAssignment::default()
                            .with_partition_index(partition_index)
                            .with_broker_ids(broker_ids),
                    );
                }
                let mut configs = Vec::new();
                for _ in 0..count(buf)? {
                    configs.push(
                        CreatableTopicConfig::default()
                            .with_name(string(buf)?)
                            .with_value(nullable_string(buf)?),
                    );
                }
                topics.push(
                    CreatableTopic::default()
                        .with_name(name)
                        .with_num_partitions(num_partitions)
                        .with_replication_factor(replication_factor)
                        .with_assignments(assignments)
                        .with_configs(configs),
                );
            }
            let timeout_ms: i32 = int32(buf)?;
            let validate_only: bool = if version >= 1 { int8(buf)? != 0 } else { false };
            RequestKind::CreateTopics(
                CreateTopicsRequest::default()
                    .with_topics(topics)
                    .with_timeout_ms(timeout_ms)
                    .with_validate_only(validate_only),
            )
        }
        other => return Err(format!("{other:?} v{version} is not a legacy version")),
    };
    if bytes::Buf::has_remaining(buf) {
        return Err(format!(
            "{} bytes after the request",
            bytes::Buf::remaining(buf)
        ));
    }
    Ok(request)
}

/// A Kafka `STRING`: `[i16 length][bytes]`; longer than `i16::MAX` bytes is an error.
pub(crate) fn put_str(out: &mut BytesMut, s: &str) -> Result<(), String> {
    out.put_i16(i16::try_from(s.len()).map_err(|_| "string too long".to_string())?);
    out.put_slice(s.as_bytes());
    Ok(())
}

fn put_nullable_str(out: &mut BytesMut, s: Option<&StrBytes>) -> Result<(), String> {
    match s {
        Some(s) => put_str(out, s),
        None => {
            out.put_i16(-1);
            Ok(())
        }
    }
}

fn put_len(out: &mut BytesMut, n: usize) -> Result<(), String> {
    out.put_i32(i32::try_from(n).map_err(|_| "array too long".to_string())?);
    Ok(())
}

/// Encodes the response to a legacy request in its old layout.
pub fn encode(
    key: ApiKey,
    version: i16,
    response: &ResponseKind,
    out: &mut BytesMut,
) -> Result<(), String> {
    match response {
        ResponseKind::Produce(r) => {
            put_len(out, r.responses.len())?;
            for t in &r.responses {
                put_str(out, &t.name)?;
                put_len(out, t.partition_responses.len())?;
                for p in &t.partition_responses {
                    out.put_i32(p.index);
                    out.put_i16(p.error_code);
                    out.put_i64(p.base_offset);
                    if version >= 2 {
                        out.put_i64(p.log_append_time_ms);
                    }
                }
            }
            if version >= 1 {
                out.put_i32(r.throttle_time_ms);
            }
            Ok(())
        }
        ResponseKind::Fetch(r) => {
            if version >= 1 {
                out.put_i32(r.throttle_time_ms);
            }
            put_len(out, r.responses.len())?;
            for t in &r.responses {
                put_str(out, &t.topic)?;
                put_len(out, t.partitions.len())?;
                for p in &t.partitions {
                    out.put_i32(p.partition_index);
                    out.put_i16(p.error_code);
                    // What the client may read: committed data.
                    out.put_i64(if p.last_stable_offset >= 0 {
                        p.last_stable_offset
                    } else {
                        p.high_watermark
                    });
                    // The handler wrote them as messages (`message_set::from_batches`).
                    let messages = p.records.clone().unwrap_or_default();
                    put_len(out, messages.len())?;
                    out.put_slice(&messages);
                }
            }
            Ok(())
        }
        // v0 and v1 share v2's layout.
        ResponseKind::OffsetCommit(r) => r.encode(out, 2).map_err(|e| e.to_string()),
        ResponseKind::DescribeConfigs(r) => {
            out.put_i32(r.throttle_time_ms);
            put_len(out, r.results.len())?;
            for res in &r.results {
                out.put_i16(res.error_code);
                put_nullable_str(out, res.error_message.as_ref())?;
                out.put_i8(res.resource_type);
                put_str(out, &res.resource_name)?;
                put_len(out, res.configs.len())?;
                for c in &res.configs {
                    put_str(out, &c.name)?;
                    put_nullable_str(out, c.value.as_ref())?;
                    out.put_u8(u8::from(c.read_only));
                    out.put_u8(u8::from(c.config_source == DEFAULT_CONFIG));
                    out.put_u8(u8::from(c.is_sensitive));
                }
            }
            Ok(())
        }
        ResponseKind::ListOffsets(r) => {
            put_len(out, r.topics.len())?;
            for t in &r.topics {
                put_str(out, &t.name)?;
                put_len(out, t.partitions.len())?;
                for p in &t.partitions {
                    out.put_i32(p.partition_index);
                    out.put_i16(p.error_code);
                    if p.error_code == 0 && p.offset >= 0 {
                        out.put_i32(1);
                        out.put_i64(p.offset);
                    } else {
                        out.put_i32(0);
                    }
                }
            }
            Ok(())
        }
        ResponseKind::CreateTopics(r) => {
            put_len(out, r.topics.len())?;
            for t in &r.topics {
                put_str(out, &t.name)?;
                out.put_i16(t.error_code);
                if version >= 1 {
                    put_nullable_str(out, t.error_message.as_ref())?;
                }
            }
            Ok(())
        }
        _ => Err(format!("no legacy encoding of {key:?} v{version}")),
    }
}

/// A minimal valid body of each legacy request version (for the decoder corpus and the
/// every-version walk): one of each element, names `walk`, nothing that changes state
/// (a standalone commit to no partition, a validate-only or zero-partition create).
pub fn sample(key: ApiKey, version: i16) -> Option<Vec<u8>> {
    let mut b = BytesMut::new();
    let s = |b: &mut BytesMut, v: &str| put_str(b, v).ok();
    match key {
        ApiKey::Produce => {
            // One message (magic 1, key "k", value "v") to partition 0 of "walk".
            let mut m = BytesMut::new();
            m.put_i8(1);
            m.put_i8(0);
            m.put_i64(0);
            m.put_i32(1);
            m.put_u8(b'k');
            m.put_i32(1);
            m.put_u8(b'v');
            b.put_i16(1);
            b.put_i32(1000);
            b.put_i32(1);
            s(&mut b, "walk")?;
            b.put_i32(1);
            b.put_i32(0);
            b.put_i32(12 + 4 + m.len() as i32);
            b.put_i64(0);
            b.put_i32(4 + m.len() as i32);
            b.put_u32(crc32fast::hash(&m));
            b.put_slice(&m);
        }
        ApiKey::Fetch => {
            b.put_i32(-1);
            b.put_i32(0);
            b.put_i32(1);
            if version >= 3 {
                b.put_i32(1 << 20);
            }
            b.put_i32(1);
            s(&mut b, "walk")?;
            b.put_i32(1);
            b.put_i32(0);
            b.put_i64(0);
            b.put_i32(1 << 20);
        }
        ApiKey::OffsetCommit => {
            s(&mut b, "walk")?;
            if version >= 1 {
                b.put_i32(-1);
                s(&mut b, "")?;
            }
            b.put_i32(0);
        }
        ApiKey::DescribeConfigs => {
            b.put_i32(1);
            b.put_i8(2);
            s(&mut b, "walk")?;
            b.put_i32(-1);
        }
        ApiKey::ListOffsets => {
            b.put_i32(-1);
            b.put_i32(1);
            s(&mut b, "walk")?;
            b.put_i32(1);
            b.put_i32(0);
            b.put_i64(-1);
            b.put_i32(1);
        }
        ApiKey::CreateTopics => {
            b.put_i32(0);
            b.put_i32(1000);
            if version >= 1 {
                b.put_u8(1);
            }
        }
        _ => return None,
    }
    is_legacy(key, version).then(|| b.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::describe_configs_response::{
        DescribeConfigsResourceResult, DescribeConfigsResult,
    };
    use kafka_protocol::messages::list_offsets_response::{
        ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
    };
    use kafka_protocol::messages::{DescribeConfigsResponse, ListOffsetsResponse};

    #[test]
    fn every_sample_decodes_and_nothing_trails() {
        for key in [
            ApiKey::Produce,
            ApiKey::Fetch,
            ApiKey::OffsetCommit,
            ApiKey::DescribeConfigs,
            ApiKey::ListOffsets,
            ApiKey::CreateTopics,
        ] {
            for version in 0..handler_version(key) {
                let body = sample(key, version).unwrap();
                decode(key, version, &mut Bytes::from(body.clone())).unwrap();
                let mut longer = body;
                longer.push(0);
                assert!(decode(key, version, &mut Bytes::from(longer)).is_err());
            }
        }
    }

    #[test]
    fn an_offset_commit_v1_carries_its_member_and_offsets() {
        let mut b = BytesMut::new();
        put_str(&mut b, "g").unwrap();
        b.put_i32(7);
        put_str(&mut b, "m-1").unwrap();
        b.put_i32(1);
        put_str(&mut b, "t").unwrap();
        b.put_i32(1);
        b.put_i32(3);
        b.put_i64(42);
        b.put_i64(-1);
        put_str(&mut b, "meta").unwrap();
        let RequestKind::OffsetCommit(r) =
            decode(ApiKey::OffsetCommit, 1, &mut b.freeze()).unwrap()
        else {
            panic!("not an OffsetCommit");
        };
        assert_eq!(r.generation_id_or_member_epoch, 7);
        assert_eq!(r.member_id.as_str(), "m-1");
        let p = &r.topics[0].partitions[0];
        assert_eq!((p.partition_index, p.committed_offset), (3, 42));
        assert_eq!(p.committed_metadata.as_deref(), Some("meta"));
    }

    #[test]
    fn a_huge_count_is_refused_not_allocated() {
        let mut b = BytesMut::new();
        put_str(&mut b, "g").unwrap();
        b.put_i32(i32::MAX);
        assert!(decode(ApiKey::OffsetCommit, 0, &mut b.freeze()).is_err());
    }

    #[test]
    fn old_responses_have_their_old_layouts() {
        let r = ResponseKind::ListOffsets(ListOffsetsResponse::default().with_topics(vec![
            ListOffsetsTopicResponse::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(vec![
                    ListOffsetsPartitionResponse::default()
                        .with_partition_index(0)
                        .with_offset(99),
                ]),
        ]));
        let mut out = BytesMut::new();
        encode(ApiKey::ListOffsets, 0, &r, &mut out).unwrap();
        let want: Vec<u8> = [
            &1i32.to_be_bytes()[..],
            &1i16.to_be_bytes(),
            b"t",
            &1i32.to_be_bytes(),
            &0i32.to_be_bytes(),
            &0i16.to_be_bytes(),
            &1i32.to_be_bytes(),
            &99i64.to_be_bytes(),
        ]
        .concat();
        assert_eq!(out.to_vec(), want);

        let r = ResponseKind::DescribeConfigs(DescribeConfigsResponse::default().with_results(
            vec![DescribeConfigsResult::default()
                .with_resource_type(2)
                .with_resource_name(StrBytes::from_static_str("t"))
                .with_configs(vec![DescribeConfigsResourceResult::default()
                    .with_name(StrBytes::from_static_str("k"))
                    .with_value(Some(StrBytes::from_static_str("v")))
                    .with_config_source(DEFAULT_CONFIG)])],
        ));
        let mut out = BytesMut::new();
        encode(ApiKey::DescribeConfigs, 0, &r, &mut out).unwrap();
        // ... name "k", value "v", read_only 0, is_default 1, is_sensitive 0.
        assert!(out.ends_with(&[0, 1, b'k', 0, 1, b'v', 0, 1, 0]));
    }
}
