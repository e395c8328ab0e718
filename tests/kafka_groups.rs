//! Consumer groups spoken raw with the kafka-protocol codec against the real binary:
//! a two-member group on Kafka Connect's `connect` protocol through join, sync and a
//! rebalance (protocol selection across members, metadata and assignments passed
//! through untouched); coordinator placement over three listener addresses; the
//! offset APIs' edge cases; and many groups with memory bound to active members.

mod common;

use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use common::{Server, free_port, roundtrip};

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn connect(host: &str, port: u16) -> TcpStream {
    let c = TcpStream::connect((host, port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    c
}

fn code(e: ResponseError) -> i16 {
    e.code()
}

/// One raw group member on its own connection.
struct Member {
    conn: TcpStream,
    group: String,
    id: String,
    generation: i32,
    protocols: Vec<(&'static str, Bytes)>,
    protocol_type: &'static str,
    session_ms: i32,
}

impl Member {
    fn new(
        port: u16,
        group: &str,
        protocol_type: &'static str,
        protocols: Vec<(&'static str, Bytes)>,
    ) -> Self {
        Self {
            conn: connect("127.0.0.1", port),
            group: group.into(),
            id: String::new(),
            generation: -1,
            protocols,
            protocol_type,
            session_ms: 10_000,
        }
    }

    fn join_request(&self) -> JoinGroupRequest {
        JoinGroupRequest::default()
            .with_group_id(GroupId(s(&self.group)))
            .with_session_timeout_ms(self.session_ms)
            .with_rebalance_timeout_ms(20_000)
            .with_member_id(s(&self.id))
            .with_protocol_type(s(self.protocol_type))
            .with_protocols(
                self.protocols
                    .iter()
                    .map(|(n, m)| {
                        JoinGroupRequestProtocol::default()
                            .with_name(s(n))
                            .with_metadata(m.clone())
                    })
                    .collect(),
            )
    }

    /// Joins (fetching a member id first, as v4+ requires) and returns the response.
    fn join(&mut self) -> JoinGroupResponse {
        loop {
            let req = self.join_request();
            let r: JoinGroupResponse = roundtrip(&mut self.conn, ApiKey::JoinGroup, 7, &req);
            if r.error_code == code(ResponseError::MemberIdRequired) {
                assert!(self.id.is_empty());
                self.id = r.member_id.to_string();
                continue;
            }
            assert_eq!(r.error_code, 0, "join failed");
            self.id = r.member_id.to_string();
            self.generation = r.generation_id;
            return r;
        }
    }

    fn sync(&mut self, assignments: Vec<(String, Bytes)>) -> SyncGroupResponse {
        let req = SyncGroupRequest::default()
            .with_group_id(GroupId(s(&self.group)))
            .with_generation_id(self.generation)
            .with_member_id(s(&self.id))
            .with_protocol_type(Some(s(self.protocol_type)))
            .with_assignments(
                assignments
                    .into_iter()
                    .map(|(m, a)| {
                        SyncGroupRequestAssignment::default()
                            .with_member_id(s(&m))
                            .with_assignment(a)
                    })
                    .collect(),
            );
        roundtrip(&mut self.conn, ApiKey::SyncGroup, 5, &req)
    }

    fn heartbeat(&mut self) -> i16 {
        let req = HeartbeatRequest::default()
            .with_group_id(GroupId(s(&self.group)))
            .with_generation_id(self.generation)
            .with_member_id(s(&self.id));
        let r: HeartbeatResponse = roundtrip(&mut self.conn, ApiKey::Heartbeat, 4, &req);
        r.error_code
    }

    fn leave(&mut self) -> LeaveGroupResponse {
        let req = LeaveGroupRequest::default()
            .with_group_id(GroupId(s(&self.group)))
            .with_members(vec![MemberIdentity::default().with_member_id(s(&self.id))]);
        roundtrip(&mut self.conn, ApiKey::LeaveGroup, 5, &req)
    }

    /// Heartbeats until told to rejoin.
    fn await_rebalance(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let e = self.heartbeat();
            if e == code(ResponseError::RebalanceInProgress) {
                return;
            }
            assert_eq!(e, 0);
            thread::sleep(Duration::from_millis(100));
        }
        panic!("no rebalance announced");
    }
}

fn no_delay() -> &'static [&'static str] {
    &["--kafka-group-initial-rebalance-delay-ms", "0"]
}

#[test]
fn connect_protocol_group_joins_syncs_and_rebalances() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), free_port(), &["127.0.0.1"], no_delay());
    let port = server.kafka;
    let group = "connect-cluster";
    let meta1 = Bytes::from_static(b"\x00\x01worker-1 url=http://w1:8083 offset=-1");
    let meta2 = Bytes::from_static(b"\x00\x01worker-2 url=http://w2:8083 offset=-1");
    // Worker 1 prefers `sessioned`; worker 2 only knows the older two.
    let mut w1 = Member::new(
        port,
        group,
        "connect",
        vec![
            ("sessioned", meta1.clone()),
            ("compatible", meta1.clone()),
            ("default", meta1.clone()),
        ],
    );
    let mut w2 = Member::new(
        port,
        group,
        "connect",
        vec![("compatible", meta2.clone()), ("default", meta2.clone())],
    );

    // Alone, worker 1 leads generation 1 on its preferred protocol.
    let j = w1.join();
    assert_eq!(j.generation_id, 1);
    assert_eq!(j.leader.as_str(), w1.id);
    assert_eq!(j.protocol_name.as_deref(), Some("sessioned"));
    assert_eq!(j.members.len(), 1);
    let a1 = Bytes::from_static(b"assignment: connectors=[a,b] tasks=[a-0,b-0]");
    let r = w1.sync(vec![(w1.id.clone(), a1.clone())]);
    assert_eq!(r.error_code, 0);
    assert_eq!(r.assignment, a1);
    assert_eq!(r.protocol_type.as_deref(), Some("connect"));

    // Worker 2 joins: its JoinGroup waits for worker 1 to rejoin.
    let joining = thread::spawn(move || {
        let j = w2.join();
        (w2, j)
    });
    w1.await_rebalance();
    let j1 = w1.join();
    let (mut w2, j2) = joining.join().unwrap();
    assert_eq!(j1.generation_id, 2);
    assert_eq!(j2.generation_id, 2);
    assert_eq!(j1.protocol_name.as_deref(), Some("compatible"));
    assert_eq!(j2.protocol_name.as_deref(), Some("compatible"));
    assert_eq!(j1.leader.as_str(), w1.id, "the leader stays");
    assert!(j2.members.is_empty(), "only the leader sees the members");
    let mut seen: Vec<(String, Bytes)> = j1
        .members
        .iter()
        .map(|m| (m.member_id.to_string(), m.metadata.clone()))
        .collect();
    seen.sort();
    let mut want = vec![
        (w1.id.clone(), meta1.clone()),
        (w2.id.clone(), meta2.clone()),
    ];
    want.sort();
    assert_eq!(seen, want, "metadata passes through untouched");

    // The follower's SyncGroup waits for the leader's assignment.
    let a2 = Bytes::from(vec![7u8; 300_000]);
    let a1b = Bytes::from_static(b"assignment: connectors=[a] tasks=[a-0]");
    let w2_id = w2.id.clone();
    let following = thread::spawn(move || {
        let r = w2.sync(vec![]);
        (w2, r)
    });
    let r1 = w1.sync(vec![(w1.id.clone(), a1b.clone()), (w2_id, a2.clone())]);
    let (mut w2, r2) = following.join().unwrap();
    assert_eq!((r1.error_code, r2.error_code), (0, 0));
    assert_eq!(r1.assignment, a1b);
    assert_eq!(r2.assignment, a2, "a 300 kB assignment arrives whole");
    assert_eq!(r2.protocol_name.as_deref(), Some("compatible"));
    assert_eq!(w1.heartbeat(), 0);
    assert_eq!(w2.heartbeat(), 0);

    // Worker 2 leaves: worker 1 rebalances alone into generation 3.
    let left = w2.leave();
    assert_eq!(left.error_code, 0);
    assert_eq!(left.members[0].error_code, 0);
    w1.await_rebalance();
    let j = w1.join();
    assert_eq!(j.generation_id, 3);
    assert_eq!(j.members.len(), 1);
    assert_eq!(j.protocol_name.as_deref(), Some("sessioned"));

    // Stale generations and unknown members are told so.
    w2.generation = 2;
    assert_eq!(w2.heartbeat(), code(ResponseError::UnknownMemberId));
    w1.generation = 2;
    assert_eq!(w1.heartbeat(), code(ResponseError::IllegalGeneration));
}

fn coordinator(host: &str, port: u16, group: &str) -> i32 {
    let mut c = connect(host, port);
    let r: FindCoordinatorResponse = roundtrip(
        &mut c,
        ApiKey::FindCoordinator,
        4,
        &FindCoordinatorRequest::default()
            .with_key_type(0)
            .with_coordinator_keys(vec![s(group)]),
    );
    assert_eq!(r.coordinators[0].error_code, 0);
    r.coordinators[0].node_id.0
}

#[test]
fn coordinators_and_offsets_over_three_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let hosts = ["127.0.0.1", "127.0.0.2", "127.0.0.3"];
    let _server = Server::start(dir.path(), port, &hosts, no_delay());
    let group = "offsets-group";
    let node = coordinator(hosts[0], port, group);
    for h in hosts {
        assert_eq!(coordinator(h, port, group), node, "every address agrees");
    }
    let right = hosts[node as usize];
    let wrong = hosts[(node as usize + 1) % 3];

    // Group requests to another address: NOT_COORDINATOR.
    let mut m = Member::new(port, group, "consumer", vec![("range", Bytes::new())]);
    m.conn = connect(wrong, port);
    let req = m.join_request();
    let r: JoinGroupResponse = roundtrip(&mut m.conn, ApiKey::JoinGroup, 7, &req);
    assert_eq!(r.error_code, code(ResponseError::NotCoordinator));

    let mut c = connect(right, port);
    let topic = "offsets-topic";
    let created: CreateTopicsResponse = roundtrip(
        &mut c,
        ApiKey::CreateTopics,
        5,
        &CreateTopicsRequest::default().with_topics(vec![
            CreatableTopic::default()
                .with_name(TopicName(s(topic)))
                .with_num_partitions(3)
                .with_replication_factor(1),
        ]),
    );
    assert_eq!(created.topics[0].error_code, 0);

    // A standalone commit (generation -1) with metadata, to an unknown partition too.
    let commit = |c: &mut TcpStream, generation: i32, member: &str| -> OffsetCommitResponse {
        let parts = [(0, 42, Some("checkpoint-a")), (1, 7, None), (9, 1, None)];
        roundtrip(
            c,
            ApiKey::OffsetCommit,
            8,
            &OffsetCommitRequest::default()
                .with_group_id(GroupId(s(group)))
                .with_generation_id_or_member_epoch(generation)
                .with_member_id(s(member))
                .with_topics(vec![
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(s(topic)))
                        .with_partitions(
                            parts
                                .iter()
                                .map(|(p, o, meta)| {
                                    OffsetCommitRequestPartition::default()
                                        .with_partition_index(*p)
                                        .with_committed_offset(*o)
                                        .with_committed_metadata(meta.map(s))
                                })
                                .collect(),
                        ),
                ]),
        )
    };
    let r = commit(&mut c, 3, "nobody");
    assert!(
        r.topics[0]
            .partitions
            .iter()
            .all(|p| p.error_code == code(ResponseError::IllegalGeneration)),
        "a generation of a group that does not exist"
    );
    let r = commit(&mut c, -1, "");
    let errors: Vec<i16> = r.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(
        errors,
        vec![0, 0, code(ResponseError::UnknownTopicOrPartition)]
    );

    // OffsetFetch v8 for two groups at once: ours and one with nothing committed.
    let fetch = |c: &mut TcpStream| -> OffsetFetchResponse {
        roundtrip(
            c,
            ApiKey::OffsetFetch,
            8,
            &OffsetFetchRequest::default().with_groups(vec![
                OffsetFetchRequestGroup::default()
                    .with_group_id(GroupId(s(group)))
                    .with_topics(Some(vec![
                        OffsetFetchRequestTopics::default()
                            .with_name(TopicName(s(topic)))
                            .with_partition_indexes(vec![0, 1, 2]),
                    ])),
                OffsetFetchRequestGroup::default().with_group_id(GroupId(s("other"))),
            ]),
        )
    };
    let r = fetch(&mut c);
    let got: Vec<(i32, i64, Option<String>)> = r.groups[0].topics[0]
        .partitions
        .iter()
        .map(|p| {
            (
                p.partition_index,
                p.committed_offset,
                p.metadata.as_ref().map(|m| m.to_string()),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (0, 42, Some("checkpoint-a".into())),
            (1, 7, Some(String::new())),
            (2, -1, Some(String::new())),
        ]
    );
    assert_eq!(r.groups[1].group_id.as_str(), "other");
    assert!(r.groups[1].topics.is_empty());
    let wrong_fetch = fetch(&mut connect(wrong, port));
    assert_eq!(
        wrong_fetch.groups[0].error_code,
        code(ResponseError::NotCoordinator)
    );

    // OffsetDelete removes partition 0's offset; the group has no members.
    let delete_offset = |c: &mut TcpStream, partition: i32| -> OffsetDeleteResponse {
        roundtrip(
            c,
            ApiKey::OffsetDelete,
            0,
            &OffsetDeleteRequest::default()
                .with_group_id(GroupId(s(group)))
                .with_topics(vec![
                    OffsetDeleteRequestTopic::default()
                        .with_name(TopicName(s(topic)))
                        .with_partitions(vec![
                            OffsetDeleteRequestPartition::default().with_partition_index(partition),
                        ]),
                ]),
        )
    };
    let r = delete_offset(&mut c, 0);
    assert_eq!(r.error_code, 0);
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
    let r = fetch(&mut c);
    assert_eq!(r.groups[0].topics[0].partitions[0].committed_offset, -1);
    assert_eq!(r.groups[0].topics[0].partitions[1].committed_offset, 7);

    // A member subscribed to the topic blocks deleting its offsets.
    let subscription = {
        use kafka_protocol::protocol::Encodable;
        let mut b = bytes::BytesMut::new();
        b.extend_from_slice(&1i16.to_be_bytes());
        ConsumerProtocolSubscription::default()
            .with_topics(vec![s(topic)])
            .encode(&mut b, 1)
            .unwrap();
        b.freeze()
    };
    let mut m = Member::new(port, group, "consumer", vec![("range", subscription)]);
    m.conn = connect(right, port);
    m.join();
    let r = delete_offset(&mut c, 1);
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        code(ResponseError::GroupSubscribedToTopic)
    );
    // And a standalone commit into a group with members is refused.
    let r = commit(&mut c, -1, "");
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        code(ResponseError::UnknownMemberId)
    );
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn groups_in_memory(http: u16) -> i64 {
    use std::io::{Read, Write};
    let mut c = TcpStream::connect(("127.0.0.1", http)).unwrap();
    c.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut body = String::new();
    c.read_to_string(&mut body).unwrap();
    body.lines()
        .find_map(|l| l.strip_prefix("eddy_kafka_groups_in_memory "))
        .and_then(|v| v.trim().parse().ok())
        .expect("groups gauge in /metrics")
}

/// Many groups, each with one member that joins, syncs, commits and leaves: every group
/// and its offsets stay listed, and none stays in memory once its members are gone.
/// `EDDY_GROUPS` sets the count (10,000 for the benchmark in docs/benchmarks.md).
#[test]
fn many_groups_keep_memory_for_active_members_only() {
    let n: usize = std::env::var("EDDY_GROUPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), free_port(), &["127.0.0.1"], no_delay());
    let port = server.kafka;
    let before = rss_kib(server.pid());
    let started = Instant::now();
    let mut members: Vec<Member> = Vec::with_capacity(n);
    for i in 0..n {
        let mut m = Member::new(
            port,
            &format!("g-{i:05}"),
            "consumer",
            vec![("range", Bytes::new())],
        );
        // Long enough that no member expires while the others join.
        m.session_ms = 600_000;
        if let Some(prev) = members.last() {
            // One connection for all: these requests never wait on each other.
            m.conn = prev.conn.try_clone().unwrap();
        }
        m.join();
        let id = m.id.clone();
        assert_eq!(m.sync(vec![(id, Bytes::from_static(b"a"))]).error_code, 0);
        members.push(m);
    }
    let joined = started.elapsed();
    let active = rss_kib(server.pid());
    assert_eq!(groups_in_memory(server.http), n as i64);
    for m in &mut members {
        assert_eq!(m.leave().error_code, 0);
    }
    let mut c = connect("127.0.0.1", port);
    let listed: ListGroupsResponse =
        roundtrip(&mut c, ApiKey::ListGroups, 4, &ListGroupsRequest::default());
    assert_eq!(listed.groups.len(), n);
    assert!(
        listed
            .groups
            .iter()
            .all(|g| g.group_state.as_str() == "Empty")
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while groups_in_memory(server.http) != 0 {
        assert!(Instant::now() < deadline, "empty groups stayed in memory");
        thread::sleep(Duration::from_millis(50));
    }
    let after = rss_kib(server.pid());
    eprintln!(
        "{n} groups: joined+synced in {:.2}s ({:.0} groups/s); RSS {before} KiB at start, \
         {active} KiB with {n} active members, {after} KiB after they left",
        joined.as_secs_f64(),
        n as f64 / joined.as_secs_f64()
    );
}
