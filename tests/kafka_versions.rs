//! Every version of every API the broker advertises answers: ApiVersions is asked for
//! the table, then one real request goes to the real server at every advertised version
//! of every API, and each response must decode at that version, carry the request's
//! correlation id and leave the connection open. Versions just outside each advertised
//! range get the refusal Kafka gives (ApiVersions: UNSUPPORTED_VERSION in v0; any other
//! API: the connection closed).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use common::{Server, free_port, roundtrip};

/// A request of `key` at `version` that changes nothing.
fn request(key: ApiKey, version: i16) -> RequestKind {
    let s = StrBytes::from_static_str;
    match key {
        // acks=0 would get no response.
        ApiKey::Produce => RequestKind::Produce(
            ProduceRequest::default()
                .with_acks(-1)
                .with_timeout_ms(1000),
        ),
        ApiKey::Fetch => RequestKind::Fetch(
            FetchRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_max_wait_ms(0)
                .with_max_bytes(1 << 20)
                .with_session_epoch(-1),
        ),
        ApiKey::ListOffsets => {
            RequestKind::ListOffsets(ListOffsetsRequest::default().with_replica_id(BrokerId(-1)))
        }
        ApiKey::Metadata => RequestKind::Metadata(MetadataRequest::default()),
        ApiKey::ApiVersions => RequestKind::ApiVersions(
            ApiVersionsRequest::default()
                .with_client_software_name(s("eddy-test"))
                .with_client_software_version(s("1")),
        ),
        ApiKey::CreateTopics => {
            RequestKind::CreateTopics(CreateTopicsRequest::default().with_timeout_ms(1000))
        }
        ApiKey::DeleteTopics => {
            RequestKind::DeleteTopics(DeleteTopicsRequest::default().with_timeout_ms(1000))
        }
        ApiKey::DeleteRecords => {
            RequestKind::DeleteRecords(DeleteRecordsRequest::default().with_timeout_ms(1000))
        }
        ApiKey::InitProducerId => RequestKind::InitProducerId(
            InitProducerIdRequest::default()
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        ),
        ApiKey::DescribeConfigs => RequestKind::DescribeConfigs(DescribeConfigsRequest::default()),
        ApiKey::AlterConfigs => RequestKind::AlterConfigs(AlterConfigsRequest::default()),
        ApiKey::IncrementalAlterConfigs => {
            RequestKind::IncrementalAlterConfigs(IncrementalAlterConfigsRequest::default())
        }
        ApiKey::CreatePartitions => {
            RequestKind::CreatePartitions(CreatePartitionsRequest::default().with_timeout_ms(1000))
        }
        ApiKey::DescribeCluster => RequestKind::DescribeCluster(DescribeClusterRequest::default()),
        ApiKey::FindCoordinator if version >= 4 => RequestKind::FindCoordinator(
            FindCoordinatorRequest::default().with_coordinator_keys(vec![s("walk")]),
        ),
        ApiKey::FindCoordinator => {
            RequestKind::FindCoordinator(FindCoordinatorRequest::default().with_key(s("walk")))
        }
        // An unknown member of an unknown group: refused with an error code.
        ApiKey::JoinGroup => RequestKind::JoinGroup(
            JoinGroupRequest::default()
                .with_group_id(GroupId(s("walk")))
                .with_session_timeout_ms(10_000)
                .with_rebalance_timeout_ms(10_000)
                .with_member_id(s("nobody"))
                .with_protocol_type(s("consumer")),
        ),
        ApiKey::SyncGroup => RequestKind::SyncGroup(
            SyncGroupRequest::default()
                .with_group_id(GroupId(s("walk")))
                .with_member_id(s("nobody")),
        ),
        ApiKey::Heartbeat => RequestKind::Heartbeat(
            HeartbeatRequest::default()
                .with_group_id(GroupId(s("walk")))
                .with_member_id(s("nobody")),
        ),
        ApiKey::LeaveGroup if version >= 3 => RequestKind::LeaveGroup(
            LeaveGroupRequest::default()
                .with_group_id(GroupId(s("walk")))
                .with_members(vec![
                    leave_group_request::MemberIdentity::default().with_member_id(s("nobody")),
                ]),
        ),
        ApiKey::LeaveGroup => RequestKind::LeaveGroup(
            LeaveGroupRequest::default()
                .with_group_id(GroupId(s("walk")))
                .with_member_id(s("nobody")),
        ),
        ApiKey::OffsetCommit => RequestKind::OffsetCommit(
            OffsetCommitRequest::default()
                .with_group_id(GroupId(s("walk")))
                .with_generation_id_or_member_epoch(-1),
        ),
        ApiKey::OffsetFetch if version >= 8 => {
            RequestKind::OffsetFetch(OffsetFetchRequest::default().with_groups(vec![
                offset_fetch_request::OffsetFetchRequestGroup::default()
                    .with_group_id(GroupId(s("walk")))
                    .with_member_epoch(-1),
            ]))
        }
        ApiKey::OffsetFetch => RequestKind::OffsetFetch(
            OffsetFetchRequest::default().with_group_id(GroupId(s("walk"))),
        ),
        ApiKey::DescribeGroups => RequestKind::DescribeGroups(
            DescribeGroupsRequest::default().with_groups(vec![GroupId(s("walk"))]),
        ),
        ApiKey::ListGroups => RequestKind::ListGroups(ListGroupsRequest::default()),
        ApiKey::DeleteGroups => RequestKind::DeleteGroups(DeleteGroupsRequest::default()),
        ApiKey::OffsetDelete => RequestKind::OffsetDelete(
            OffsetDeleteRequest::default().with_group_id(GroupId(s("walk"))),
        ),
        ApiKey::DescribeTopicPartitions => {
            RequestKind::DescribeTopicPartitions(DescribeTopicPartitionsRequest::default())
        }
        ApiKey::GetTelemetrySubscriptions => {
            RequestKind::GetTelemetrySubscriptions(GetTelemetrySubscriptionsRequest::default())
        }
        ApiKey::PushTelemetry => RequestKind::PushTelemetry(PushTelemetryRequest::default()),
        // On this plaintext listener: ILLEGAL_SASL_STATE, as Kafka answers.
        ApiKey::SaslHandshake => {
            RequestKind::SaslHandshake(SaslHandshakeRequest::default().with_mechanism(s("PLAIN")))
        }
        ApiKey::SaslAuthenticate => {
            RequestKind::SaslAuthenticate(SaslAuthenticateRequest::default())
        }
        ApiKey::DescribeLogDirs => RequestKind::DescribeLogDirs(DescribeLogDirsRequest::default()),
        ApiKey::ElectLeaders => RequestKind::ElectLeaders(
            ElectLeadersRequest::default().with_topic_partitions(Some(Vec::new())),
        ),
        ApiKey::ListPartitionReassignments => {
            RequestKind::ListPartitionReassignments(ListPartitionReassignmentsRequest::default())
        }
        ApiKey::AlterPartitionReassignments => {
            RequestKind::AlterPartitionReassignments(AlterPartitionReassignmentsRequest::default())
        }
        // Transactions of an id never initialised: refused with an error code.
        ApiKey::AddPartitionsToTxn => RequestKind::AddPartitionsToTxn(
            AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(TransactionalId(s("walk")))
                .with_v3_and_below_producer_id(ProducerId(7)),
        ),
        ApiKey::AddOffsetsToTxn => RequestKind::AddOffsetsToTxn(
            AddOffsetsToTxnRequest::default()
                .with_transactional_id(TransactionalId(s("walk")))
                .with_group_id(GroupId(s("walk"))),
        ),
        ApiKey::EndTxn => RequestKind::EndTxn(
            EndTxnRequest::default().with_transactional_id(TransactionalId(s("walk"))),
        ),
        ApiKey::TxnOffsetCommit => RequestKind::TxnOffsetCommit(
            TxnOffsetCommitRequest::default()
                .with_transactional_id(TransactionalId(s("walk")))
                .with_group_id(GroupId(s("walk")))
                .with_generation_id(-1),
        ),
        ApiKey::DescribeProducers => {
            RequestKind::DescribeProducers(DescribeProducersRequest::default())
        }
        ApiKey::DescribeTransactions => RequestKind::DescribeTransactions(
            DescribeTransactionsRequest::default()
                .with_transactional_ids(vec![TransactionalId(s("walk"))]),
        ),
        ApiKey::ListTransactions => RequestKind::ListTransactions(
            ListTransactionsRequest::default().with_duration_filter(-1),
        ),
        // A join that fails its checks (no subscription), so the walk leaves no group.
        ApiKey::ConsumerGroupHeartbeat => RequestKind::ConsumerGroupHeartbeat(
            ConsumerGroupHeartbeatRequest::default()
                .with_group_id(GroupId(s("walk")))
                .with_member_id(s("walk-member"))
                .with_rebalance_timeout_ms(1000),
        ),
        ApiKey::ConsumerGroupDescribe => RequestKind::ConsumerGroupDescribe(
            ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(s("walk"))]),
        ),
        ApiKey::DescribeClientQuotas => {
            RequestKind::DescribeClientQuotas(DescribeClientQuotasRequest::default())
        }
        // Validate only: the walk changes nothing.
        ApiKey::AlterClientQuotas => RequestKind::AlterClientQuotas(
            AlterClientQuotasRequest::default().with_validate_only(true),
        ),
        ApiKey::DescribeUserScramCredentials => {
            RequestKind::DescribeUserScramCredentials(DescribeUserScramCredentialsRequest::default())
        }
        // The walk's client is ANONYMOUS: refused, so nothing changes.
        ApiKey::AlterUserScramCredentials => {
            RequestKind::AlterUserScramCredentials(AlterUserScramCredentialsRequest::default())
        }
        ApiKey::CreateAcls => RequestKind::CreateAcls(CreateAclsRequest::default()),
        ApiKey::DescribeAcls => RequestKind::DescribeAcls(DescribeAclsRequest::default()),
        ApiKey::DeleteAcls => RequestKind::DeleteAcls(DeleteAclsRequest::default()),
        // Share groups: a leave of a member never seen, a session never opened, and the
        // offsets of a group that does not exist, so the walk leaves nothing.
        ApiKey::ShareGroupHeartbeat => RequestKind::ShareGroupHeartbeat(
            ShareGroupHeartbeatRequest::default()
                .with_group_id(GroupId(s("walk")))
                .with_member_id(s("walk-member"))
                .with_member_epoch(-1),
        ),
        ApiKey::ShareGroupDescribe => RequestKind::ShareGroupDescribe(
            ShareGroupDescribeRequest::default().with_group_ids(vec![GroupId(s("walk"))]),
        ),
        ApiKey::ShareFetch => RequestKind::ShareFetch(
            ShareFetchRequest::default()
                .with_group_id(Some(GroupId(s("walk"))))
                .with_member_id(Some(s("walk-member")))
                .with_share_session_epoch(1),
        ),
        ApiKey::ShareAcknowledge => RequestKind::ShareAcknowledge(
            ShareAcknowledgeRequest::default()
                .with_group_id(Some(GroupId(s("walk"))))
                .with_member_id(Some(s("walk-member")))
                .with_share_session_epoch(1),
        ),
        ApiKey::DescribeShareGroupOffsets => RequestKind::DescribeShareGroupOffsets(
            DescribeShareGroupOffsetsRequest::default().with_groups(vec![
                kafka_protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup::default()
                    .with_group_id(GroupId(s("walk"))),
            ]),
        ),
        ApiKey::AlterShareGroupOffsets => RequestKind::AlterShareGroupOffsets(
            AlterShareGroupOffsetsRequest::default().with_group_id(GroupId(s("walk"))),
        ),
        ApiKey::DeleteShareGroupOffsets => RequestKind::DeleteShareGroupOffsets(
            DeleteShareGroupOffsetsRequest::default().with_group_id(GroupId(s("walk"))),
        ),
        other => panic!("no walk request for {other:?}: add one"),
    }
}

/// Sends `req` at `version` with `correlation`; the response body, or `None` when the
/// server closed the connection instead.
fn send(
    s: &mut TcpStream,
    key: ApiKey,
    version: i16,
    correlation: i32,
    req: &RequestKind,
) -> Option<Bytes> {
    let mut buf = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation)
        .with_client_id(Some(StrBytes::from_static_str("eddy-walk")))
        .encode(&mut buf, key.request_header_version(version))
        .unwrap();
    match broker::legacy::sample(key, version) {
        // The versions Kafka 4.0 removed: the codec has no encoder for them.
        Some(body) => buf.extend_from_slice(&body),
        None => req
            .encode(&mut buf, version)
            .unwrap_or_else(|e| panic!("{key:?} v{version}: encoding the request: {e}")),
    }
    let mut frame = (buf.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&buf);
    s.write_all(&frame).ok()?;
    let mut size = [0u8; 4];
    s.read_exact(&mut size).ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    s.read_exact(&mut body).ok()?;
    let mut body = Bytes::from(body);
    let header = ResponseHeader::decode(&mut body, key.response_header_version(version))
        .unwrap_or_else(|e| panic!("{key:?} v{version}: response header: {e}"));
    assert_eq!(header.correlation_id, correlation, "{key:?} v{version}");
    Some(body)
}

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

#[test]
fn every_advertised_version_of_every_api_answers() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let _server = Server::start(dir.path(), port, &["127.0.0.1"], &[]);
    let mut s = connect(port);
    let versions: ApiVersionsResponse = roundtrip(
        &mut s,
        ApiKey::ApiVersions,
        3,
        &ApiVersionsRequest::default(),
    );
    assert_eq!(versions.error_code, 0);
    let mut correlation = 0;
    let mut walked = 0;
    for api in &versions.api_keys {
        let key = ApiKey::try_from(api.api_key).expect("an API key kafka-protocol knows");
        for version in api.min_version..=api.max_version {
            let req = request(key, version);
            correlation += 1;
            let mut body = send(&mut s, key, version, correlation, &req)
                .unwrap_or_else(|| panic!("{key:?} v{version}: the connection was closed"));
            if broker::legacy::is_legacy(key, version) {
                // (Its layout is checked by the legacy module's tests and the clients'.)
                assert!(!body.is_empty(), "{key:?} v{version}: an empty response");
                walked += 1;
                continue;
            }
            ResponseKind::decode(key, &mut body, version)
                .unwrap_or_else(|e| panic!("{key:?} v{version}: the response: {e}"));
            assert!(
                body.is_empty(),
                "{key:?} v{version}: {} bytes after the response",
                body.len()
            );
            walked += 1;
        }
        // One past the top: Kafka closes the connection (ApiVersions answers in v0).
        let above = api.max_version + 1;
        let req = request(key, api.max_version);
        // (Only where the codec can encode that version at all.)
        if key != ApiKey::ApiVersions && req.encode(&mut BytesMut::new(), above).is_ok() {
            let mut fresh = connect(port);
            correlation += 1;
            assert!(
                send(&mut fresh, key, above, correlation, &req).is_none(),
                "{key:?} v{above} is not advertised but was answered"
            );
        }
    }
    // Every API served, Kafka 4's newest versions among them.
    assert!(walked > 150, "walked only {walked} versions");
    let max = |k: ApiKey| {
        versions
            .api_keys
            .iter()
            .find(|a| a.api_key == k as i16)
            .map(|a| a.max_version)
    };
    assert_eq!(max(ApiKey::Metadata), Some(13));
    assert_eq!(max(ApiKey::Fetch), Some(18));
    assert_eq!(max(ApiKey::OffsetCommit), Some(9));
    assert_eq!(max(ApiKey::OffsetFetch), Some(9));
    assert_eq!(max(ApiKey::ListOffsets), Some(10));
}

/// ApiVersions v5 (KIP-1242): a client naming the cluster and node it means is answered
/// normally when they are this broker's, and REBOOTSTRAP_REQUIRED (129) in v5 when
/// either is another's.
#[test]
fn api_versions_v5_checks_the_cluster_and_node_a_client_names() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let _server = Server::start(dir.path(), port, &["127.0.0.1"], &[]);
    let mut s = connect(port);
    let metadata: MetadataResponse =
        roundtrip(&mut s, ApiKey::Metadata, 12, &MetadataRequest::default());
    let cluster = metadata.cluster_id.expect("a cluster id");
    assert_eq!(cluster.len(), 22, "a Kafka-style id: {cluster}");
    let node = metadata.brokers[0].node_id;
    let ask = |s: &mut TcpStream, cluster: &StrBytes, node: i32| -> ApiVersionsResponse {
        let req = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("eddy-walk"))
            .with_client_software_version(StrBytes::from_static_str("1"))
            .with_cluster_id(Some(cluster.clone()))
            .with_node_id(node.into());
        roundtrip(s, ApiKey::ApiVersions, 5, &req)
    };
    let right = ask(&mut s, &cluster, *node);
    assert_eq!(right.error_code, 0);
    assert!(!right.api_keys.is_empty());
    let other_node = ask(&mut s, &cluster, *node + 1);
    assert_eq!(other_node.error_code, 129);
    assert!(other_node.api_keys.is_empty());
    let other_cluster = ask(
        &mut s,
        &StrBytes::from_static_str("AAAAAAAAAAAAAAAAAAAAAA"),
        *node,
    );
    assert_eq!(other_cluster.error_code, 129);
}
