//! The request decoder on every API and version we serve, then on many mutations of those
//! frames: valid frames decode, and no frame panics. With `EDDY_WRITE_CORPUS=1` the valid
//! frames are written to `fuzz/corpus/kafka_request` as the fuzzer's seeds.

use broker::api::{SERVED, supported};
use broker::connection::decode;
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{RequestHeader, RequestKind};
use kafka_protocol::protocol::{Encodable, StrBytes};

fn default_request(api: kafka_protocol::messages::ApiKey) -> RequestKind {
    use kafka_protocol::messages::*;
    match api {
        ApiKey::Produce => RequestKind::Produce(ProduceRequest::default().with_acks(-1)),
        ApiKey::Fetch => RequestKind::Fetch(FetchRequest::default()),
        ApiKey::ListOffsets => RequestKind::ListOffsets(ListOffsetsRequest::default()),
        ApiKey::Metadata => RequestKind::Metadata(MetadataRequest::default()),
        ApiKey::ApiVersions => RequestKind::ApiVersions(ApiVersionsRequest::default()),
        ApiKey::CreateTopics => RequestKind::CreateTopics(CreateTopicsRequest::default()),
        ApiKey::DeleteTopics => RequestKind::DeleteTopics(DeleteTopicsRequest::default()),
        ApiKey::DeleteRecords => RequestKind::DeleteRecords(DeleteRecordsRequest::default()),
        ApiKey::InitProducerId => RequestKind::InitProducerId(InitProducerIdRequest::default()),
        ApiKey::DescribeConfigs => RequestKind::DescribeConfigs(DescribeConfigsRequest::default()),
        ApiKey::AlterConfigs => RequestKind::AlterConfigs(AlterConfigsRequest::default()),
        ApiKey::IncrementalAlterConfigs => {
            RequestKind::IncrementalAlterConfigs(IncrementalAlterConfigsRequest::default())
        }
        ApiKey::CreatePartitions => {
            RequestKind::CreatePartitions(CreatePartitionsRequest::default())
        }
        ApiKey::DescribeCluster => RequestKind::DescribeCluster(DescribeClusterRequest::default()),
        ApiKey::FindCoordinator => RequestKind::FindCoordinator(FindCoordinatorRequest::default()),
        ApiKey::JoinGroup => RequestKind::JoinGroup(
            JoinGroupRequest::default()
                .with_group_id(GroupId(StrBytes::from_static_str("g")))
                .with_session_timeout_ms(10_000)
                .with_protocol_type(StrBytes::from_static_str("consumer"))
                .with_protocols(vec![
                    join_group_request::JoinGroupRequestProtocol::default()
                        .with_name(StrBytes::from_static_str("range"))
                        .with_metadata(Bytes::from_static(b"\x00\x01meta")),
                ]),
        ),
        ApiKey::SyncGroup => {
            RequestKind::SyncGroup(SyncGroupRequest::default().with_assignments(vec![
                sync_group_request::SyncGroupRequestAssignment::default()
                    .with_member_id(StrBytes::from_static_str("m"))
                    .with_assignment(Bytes::from_static(b"assignment")),
            ]))
        }
        ApiKey::Heartbeat => RequestKind::Heartbeat(HeartbeatRequest::default()),
        ApiKey::LeaveGroup => RequestKind::LeaveGroup(LeaveGroupRequest::default()),
        ApiKey::OffsetCommit => RequestKind::OffsetCommit(OffsetCommitRequest::default()),
        ApiKey::OffsetFetch => RequestKind::OffsetFetch(OffsetFetchRequest::default()),
        ApiKey::DescribeGroups => RequestKind::DescribeGroups(DescribeGroupsRequest::default()),
        ApiKey::ListGroups => RequestKind::ListGroups(ListGroupsRequest::default()),
        ApiKey::DeleteGroups => RequestKind::DeleteGroups(DeleteGroupsRequest::default()),
        ApiKey::OffsetDelete => RequestKind::OffsetDelete(OffsetDeleteRequest::default()),
        ApiKey::DescribeTopicPartitions => {
            RequestKind::DescribeTopicPartitions(DescribeTopicPartitionsRequest::default())
        }
        ApiKey::GetTelemetrySubscriptions => {
            RequestKind::GetTelemetrySubscriptions(GetTelemetrySubscriptionsRequest::default())
        }
        ApiKey::PushTelemetry => RequestKind::PushTelemetry(PushTelemetryRequest::default()),
        ApiKey::SaslHandshake => RequestKind::SaslHandshake(SaslHandshakeRequest::default()),
        ApiKey::SaslAuthenticate => {
            RequestKind::SaslAuthenticate(SaslAuthenticateRequest::default())
        }
        ApiKey::DescribeLogDirs => RequestKind::DescribeLogDirs(DescribeLogDirsRequest::default()),
        ApiKey::ElectLeaders => RequestKind::ElectLeaders(ElectLeadersRequest::default()),
        ApiKey::ListPartitionReassignments => {
            RequestKind::ListPartitionReassignments(ListPartitionReassignmentsRequest::default())
        }
        ApiKey::AlterPartitionReassignments => {
            RequestKind::AlterPartitionReassignments(AlterPartitionReassignmentsRequest::default())
        }
        ApiKey::AddPartitionsToTxn => {
            RequestKind::AddPartitionsToTxn(AddPartitionsToTxnRequest::default())
        }
        ApiKey::AddOffsetsToTxn => RequestKind::AddOffsetsToTxn(AddOffsetsToTxnRequest::default()),
        ApiKey::EndTxn => RequestKind::EndTxn(EndTxnRequest::default()),
        ApiKey::TxnOffsetCommit => RequestKind::TxnOffsetCommit(TxnOffsetCommitRequest::default()),
        ApiKey::DescribeProducers => {
            RequestKind::DescribeProducers(DescribeProducersRequest::default())
        }
        ApiKey::DescribeTransactions => {
            RequestKind::DescribeTransactions(DescribeTransactionsRequest::default())
        }
        ApiKey::ListTransactions => {
            RequestKind::ListTransactions(ListTransactionsRequest::default())
        }
        ApiKey::ConsumerGroupHeartbeat => {
            RequestKind::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatRequest::default())
        }
        ApiKey::ConsumerGroupDescribe => {
            RequestKind::ConsumerGroupDescribe(ConsumerGroupDescribeRequest::default())
        }
        ApiKey::DescribeClientQuotas => {
            RequestKind::DescribeClientQuotas(DescribeClientQuotasRequest::default())
        }
        ApiKey::AlterClientQuotas => {
            RequestKind::AlterClientQuotas(AlterClientQuotasRequest::default())
        }
        ApiKey::DescribeUserScramCredentials => {
            RequestKind::DescribeUserScramCredentials(DescribeUserScramCredentialsRequest::default())
        }
        ApiKey::AlterUserScramCredentials => {
            RequestKind::AlterUserScramCredentials(AlterUserScramCredentialsRequest::default())
        }
        ApiKey::CreateAcls => RequestKind::CreateAcls(CreateAclsRequest::default()),
        ApiKey::DescribeAcls => RequestKind::DescribeAcls(DescribeAclsRequest::default()),
        ApiKey::DeleteAcls => RequestKind::DeleteAcls(DeleteAclsRequest::default()),
        ApiKey::ShareGroupHeartbeat => {
            RequestKind::ShareGroupHeartbeat(ShareGroupHeartbeatRequest::default())
        }
        ApiKey::ShareGroupDescribe => {
            RequestKind::ShareGroupDescribe(ShareGroupDescribeRequest::default())
        }
        ApiKey::ShareFetch => RequestKind::ShareFetch(ShareFetchRequest::default()),
        ApiKey::ShareAcknowledge => {
            RequestKind::ShareAcknowledge(ShareAcknowledgeRequest::default())
        }
        ApiKey::DescribeShareGroupOffsets => {
            RequestKind::DescribeShareGroupOffsets(DescribeShareGroupOffsetsRequest::default())
        }
        ApiKey::AlterShareGroupOffsets => {
            RequestKind::AlterShareGroupOffsets(AlterShareGroupOffsetsRequest::default())
        }
        ApiKey::DeleteShareGroupOffsets => {
            RequestKind::DeleteShareGroupOffsets(DeleteShareGroupOffsetsRequest::default())
        }
        other => panic!("no sample for {other:?}"),
    }
}

fn frames() -> Vec<(String, Bytes)> {
    let mut out = Vec::new();
    for api in SERVED {
        let (min, max) = supported(*api).unwrap();
        for version in min..=max {
            let mut buf = BytesMut::new();
            RequestHeader::default()
                .with_request_api_key(*api as i16)
                .with_request_api_version(version)
                .with_correlation_id(42)
                .with_client_id(Some(StrBytes::from_static_str("corpus")))
                .encode(&mut buf, api.request_header_version(version))
                .unwrap();
            match broker::legacy::sample(*api, version) {
                Some(body) => buf.extend_from_slice(&body),
                None => default_request(*api).encode(&mut buf, version).unwrap(),
            }
            out.push((format!("{api:?}-v{version}"), buf.freeze()));
        }
    }
    out
}

#[test]
fn every_served_version_decodes_and_no_mutation_panics() {
    let frames = frames();
    for (name, frame) in &frames {
        decode(frame.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    if std::env::var_os("EDDY_WRITE_CORPUS").is_some() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/kafka_request");
        std::fs::create_dir_all(&dir).unwrap();
        for (name, frame) in &frames {
            std::fs::write(dir.join(name), frame).unwrap();
        }
    }
    // Deterministic mutations: flips, truncations, insertions, length-field smashing.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut rejected = 0;
    for round in 0..40_000 {
        let (_, base) = &frames[round % frames.len()];
        let mut f = base.to_vec();
        for _ in 0..1 + next() % 4 {
            let r = next();
            match r % 4 {
                0 if !f.is_empty() => {
                    let i = (r >> 8) as usize % f.len();
                    f[i] ^= 1 << ((r >> 40) % 8);
                }
                1 => f.truncate((r >> 8) as usize % (f.len() + 1)),
                2 => {
                    let i = (r >> 8) as usize % (f.len() + 1);
                    f.insert(i, (r >> 32) as u8);
                }
                _ if f.len() >= 4 => {
                    let i = (r >> 8) as usize % (f.len() - 3);
                    f[i..i + 4].copy_from_slice(&((r >> 32) as i32 | i32::MIN >> 1).to_be_bytes());
                }
                _ => {}
            }
        }
        if decode(Bytes::from(f)).is_err() {
            rejected += 1;
        }
    }
    assert!(
        rejected > 1000,
        "mutations should mostly be rejected, {rejected} were"
    );
}
