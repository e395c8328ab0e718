//! One member of a classic consumer group, and what the group sends back to it.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use tokio::sync::oneshot;

/// A member as the JoinGroup request describes it.
#[derive(Debug, Clone)]
pub struct JoinRequest {
    /// Member id; empty for a member joining for the first time.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    /// Client id from the request header.
    pub client_id: String,
    /// Address the client connects from.
    pub client_host: String,
    /// How long the member may go without a heartbeat.
    pub session_timeout: Duration,
    /// How long a rebalance waits for the member to rejoin.
    pub rebalance_timeout: Duration,
    /// Protocol type (`consumer`, `connect`, ...).
    pub protocol_type: String,
    /// Protocols in the member's order of preference, with their opaque metadata.
    pub protocols: Vec<(String, Bytes)>,
    /// v4+: a new dynamic member must first fetch a member id (MEMBER_ID_REQUIRED).
    pub require_known_member_id: bool,
}

/// A member the leader is told about in its JoinGroup response.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinedMember {
    /// Member id.
    pub member_id: String,
    /// Its `group.instance.id`.
    pub instance_id: Option<String>,
    /// Its metadata for the selected protocol.
    pub metadata: Bytes,
}

/// The JoinGroup response for one member.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinAnswer {
    /// `None` when the member joined.
    pub error: Option<ResponseError>,
    /// The new generation.
    pub generation: i32,
    /// The group's protocol type.
    pub protocol_type: Option<String>,
    /// The selected protocol.
    pub protocol_name: Option<String>,
    /// The leader's member id.
    pub leader: String,
    /// The member's (possibly new) id.
    pub member_id: String,
    /// Every member, for the leader; empty for the others.
    pub members: Vec<JoinedMember>,
    /// The leader keeps the current assignment (a static leader rejoining).
    pub skip_assignment: bool,
}

impl JoinAnswer {
    /// A refusal that tells the member its id (MEMBER_ID_REQUIRED) or nothing.
    pub fn refused(error: ResponseError, member_id: &str) -> Self {
        Self {
            error: Some(error),
            generation: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            member_id: member_id.to_string(),
            members: Vec::new(),
            skip_assignment: false,
        }
    }
}

/// A SyncGroup response: the member's assignment.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncAnswer {
    /// The group's protocol type.
    pub protocol_type: Option<String>,
    /// The selected protocol.
    pub protocol_name: Option<String>,
    /// The member's assignment, as the leader sent it.
    pub assignment: Bytes,
}

/// What a waiting SyncGroup gets.
pub type SyncResult = Result<SyncAnswer, ResponseError>;

/// A group member.
#[derive(Debug)]
pub struct Member {
    /// Member id.
    pub id: String,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client address.
    pub client_host: String,
    /// Session timeout.
    pub session_timeout: Duration,
    /// Rebalance timeout.
    pub rebalance_timeout: Duration,
    /// Supported protocols in preference order, with metadata.
    pub protocols: Vec<(String, Bytes)>,
    /// The assignment of the current generation.
    pub assignment: Bytes,
    /// Its JoinGroup waiting for the rebalance to complete.
    pub join_waiter: Option<oneshot::Sender<JoinAnswer>>,
    /// Its SyncGroup waiting for the leader's assignment.
    pub sync_waiter: Option<oneshot::Sender<SyncResult>>,
    /// Last heartbeat (or join, or sync).
    pub last_seen: Instant,
}

impl Member {
    /// A member from its join request.
    pub fn new(id: String, req: &JoinRequest, now: Instant) -> Self {
        Self {
            id,
            instance_id: req.instance_id.clone(),
            client_id: req.client_id.clone(),
            client_host: req.client_host.clone(),
            session_timeout: req.session_timeout,
            rebalance_timeout: req.rebalance_timeout,
            protocols: req.protocols.clone(),
            assignment: Bytes::new(),
            join_waiter: None,
            sync_waiter: None,
            last_seen: now,
        }
    }

    /// Takes the join request's settings (a rejoin may change them).
    pub fn update(&mut self, req: &JoinRequest, now: Instant) {
        self.client_id.clone_from(&req.client_id);
        self.client_host.clone_from(&req.client_host);
        self.session_timeout = req.session_timeout;
        self.rebalance_timeout = req.rebalance_timeout;
        self.protocols.clone_from(&req.protocols);
        self.last_seen = now;
    }

    /// Its metadata for `protocol`.
    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(n, _)| n == protocol)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }

    /// Whether it supports `protocol`.
    pub fn supports(&self, protocol: &str) -> bool {
        self.protocols.iter().any(|(n, _)| n == protocol)
    }

    /// When its session ends without a heartbeat; members waiting in a join or sync
    /// stay alive (the rebalance and sync deadlines cover them).
    pub fn session_deadline(&self) -> Option<Instant> {
        if self.join_waiter.is_some() || self.sync_waiter.is_some() {
            None
        } else {
            Some(self.last_seen + self.session_timeout)
        }
    }

    /// Answers a waiting JoinGroup.
    pub fn answer_join(&mut self, answer: JoinAnswer) {
        if let Some(w) = self.join_waiter.take() {
            let _ = w.send(answer);
        }
    }

    /// Answers a waiting SyncGroup.
    pub fn answer_sync(&mut self, answer: SyncResult) {
        if let Some(w) = self.sync_waiter.take() {
            let _ = w.send(answer);
        }
    }

    /// Fails whatever it is waiting for.
    pub fn fail_waiters(&mut self, error: ResponseError) {
        let id = self.id.clone();
        self.answer_join(JoinAnswer::refused(error, &id));
        self.answer_sync(Err(error));
    }
}
