//! The classic group protocol's state machine for one group: joins, syncs, heartbeats,
//! leaves and the deadlines that expire members and end rebalances. It does no I/O:
//! answers go to the members' waiting requests over oneshot channels, and a change that
//! must be made durable is flagged for the coordinator to commit.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use tokio::sync::oneshot;

use super::durable::{StoredGroup, StoredMember};
use super::member::{JoinAnswer, JoinRequest, JoinedMember, Member, SyncAnswer, SyncResult};

/// The group coordinator's settings (Kafka's broker settings of the same names).
#[derive(Debug, Clone)]
pub struct GroupConfig {
    /// `group.initial.rebalance.delay.ms`: how long the first rebalance of an empty
    /// group waits for more members.
    pub initial_rebalance_delay: Duration,
    /// `group.min.session.timeout.ms`.
    pub min_session_timeout: Duration,
    /// `group.max.session.timeout.ms`.
    pub max_session_timeout: Duration,
    /// `offset.metadata.max.bytes`.
    pub max_metadata_bytes: usize,
    /// The consumer group protocol's (KIP-848) settings.
    pub consumer: crate::group::consumer::state::ConsumerConfig,
    /// Share groups' (KIP-932) settings.
    pub share: crate::group::share::state::ShareConfig,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            initial_rebalance_delay: Duration::from_millis(3000),
            min_session_timeout: Duration::from_millis(6000),
            max_session_timeout: Duration::from_millis(1_800_000),
            max_metadata_bytes: 4096,
            consumer: Default::default(),
            share: Default::default(),
        }
    }
}

/// Group states, named as DescribeGroups and ListGroups report them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No members (possibly committed offsets).
    Empty,
    /// Waiting for members to (re)join.
    PreparingRebalance,
    /// Waiting for the leader's assignment.
    CompletingRebalance,
    /// Members have their assignments.
    Stable,
    /// Being deleted.
    Dead,
}

impl Phase {
    /// The name Kafka uses.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Empty => "Empty",
            Phase::PreparingRebalance => "PreparingRebalance",
            Phase::CompletingRebalance => "CompletingRebalance",
            Phase::Stable => "Stable",
            Phase::Dead => "Dead",
        }
    }
}

/// How a JoinGroup proceeds.
#[derive(Debug)]
pub enum Joined {
    /// Answered at once.
    Now(JoinAnswer),
    /// Answered when the rebalance completes.
    Wait(oneshot::Receiver<JoinAnswer>),
}

/// How a SyncGroup proceeds.
#[derive(Debug)]
pub enum Synced {
    /// Answered at once.
    Now(SyncResult),
    /// Answered when the leader's assignment is durable.
    Wait(oneshot::Receiver<SyncResult>),
}

/// One consumer group.
#[derive(Debug)]
pub struct Group {
    /// Group id.
    pub name: String,
    /// State.
    pub phase: Phase,
    /// Generation: bumped by every completed rebalance.
    pub generation: i32,
    /// Protocol type of the members.
    pub protocol_type: Option<String>,
    /// The protocol selected for the generation.
    pub protocol_name: Option<String>,
    /// The leader's member id.
    pub leader: Option<String>,
    /// Members by id.
    pub members: BTreeMap<String, Member>,
    /// Static members: instance id to member id.
    statics: HashMap<String, String>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, until they join or expire.
    pending: HashMap<String, Instant>,
    /// When the rebalance in progress stops waiting for members.
    rebalance_deadline: Option<Instant>,
    /// The first rebalance of an empty group waits (up to this) for more members.
    initial_delay_end: Option<Instant>,
    /// When a generation whose leader has not sent its assignment gives up on it.
    sync_deadline: Option<Instant>,
    /// The leader's assignment is being made durable.
    assigning: bool,
    /// The durable state changed and must be committed.
    dirty: bool,
    /// Commits of this group's state in flight.
    pub persisting: usize,
}

impl Group {
    /// A new, empty group.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            phase: Phase::Empty,
            generation: 0,
            protocol_type: None,
            protocol_name: None,
            leader: None,
            members: BTreeMap::new(),
            statics: HashMap::new(),
            pending: HashMap::new(),
            rebalance_deadline: None,
            initial_delay_end: None,
            sync_deadline: None,
            assigning: false,
            dirty: false,
            persisting: 0,
        }
    }

    /// A group restored from its stored state: members that keep heartbeating keep
    /// their generation and assignment; the others expire after their session timeout.
    pub fn restore(name: &str, stored: StoredGroup, now: Instant) -> Self {
        let mut g = Self::new(name);
        g.generation = stored.generation;
        g.protocol_type = stored.protocol_type;
        g.protocol_name = stored.protocol_name;
        g.leader = stored.leader;
        for m in stored.members {
            if let Some(i) = &m.instance_id {
                g.statics.insert(i.clone(), m.id.clone());
            }
            g.members.insert(
                m.id.clone(),
                Member {
                    id: m.id,
                    instance_id: m.instance_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    session_timeout: Duration::from_millis(m.session_timeout_ms.into()),
                    rebalance_timeout: Duration::from_millis(m.rebalance_timeout_ms.into()),
                    protocols: m
                        .protocols
                        .into_iter()
                        .map(|(n, d)| (n, Bytes::from(d)))
                        .collect(),
                    assignment: Bytes::from(m.assignment),
                    join_waiter: None,
                    sync_waiter: None,
                    last_seen: now,
                },
            );
        }
        if !g.members.is_empty() {
            g.phase = Phase::Stable;
        }
        g
    }

    /// The state to store.
    pub fn stored(&self) -> StoredGroup {
        StoredGroup {
            generation: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader: self.leader.clone(),
            members: self
                .members
                .values()
                .map(|m| StoredMember {
                    id: m.id.clone(),
                    instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    session_timeout_ms: millis(m.session_timeout),
                    rebalance_timeout_ms: millis(m.rebalance_timeout),
                    protocols: m
                        .protocols
                        .iter()
                        .map(|(n, d)| (n.clone(), d.to_vec()))
                        .collect(),
                    assignment: m.assignment.to_vec(),
                })
                .collect(),
        }
    }

    /// Takes the flag saying the durable state changed.
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Nothing to wait for and nothing in memory worth keeping.
    pub fn is_idle(&self) -> bool {
        self.members.is_empty()
            && self.pending.is_empty()
            && self.persisting == 0
            && !self.dirty
            && self.phase == Phase::Empty
    }

    /// The member id a static instance id maps to.
    pub fn static_member(&self, instance_id: &str) -> Option<&str> {
        self.statics.get(instance_id).map(String::as_str)
    }

    /// Checks that a request names a current member: a static member whose instance id
    /// now belongs to another member id is fenced.
    pub fn check_member(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Result<(), ResponseError> {
        if let Some(i) = instance_id {
            match self.statics.get(i) {
                Some(m) if m != member_id => return Err(ResponseError::FencedInstanceId),
                None => return Err(ResponseError::UnknownMemberId),
                _ => {}
            }
        }
        if self.members.contains_key(member_id) {
            Ok(())
        } else {
            Err(ResponseError::UnknownMemberId)
        }
    }

    /// Handles a JoinGroup.
    pub fn join(
        &mut self,
        req: JoinRequest,
        member_id: String,
        now: Instant,
        cfg: &GroupConfig,
    ) -> Joined {
        let refuse = |e: ResponseError| Joined::Now(JoinAnswer::refused(e, &req.member_id));
        if self.phase == Phase::Dead {
            return refuse(ResponseError::CoordinatorNotAvailable);
        }
        if req.session_timeout < cfg.min_session_timeout
            || req.session_timeout > cfg.max_session_timeout
        {
            return refuse(ResponseError::InvalidSessionTimeout);
        }
        if !self.accepts(&req) {
            return refuse(ResponseError::InconsistentGroupProtocol);
        }
        if req.member_id.is_empty() {
            if let Some(instance) = &req.instance_id {
                if let Some(old) = self.statics.get(instance).cloned() {
                    return self.replace_static(&old, member_id, req, now);
                }
                return self.add_member(member_id, req, now, cfg);
            }
            if req.require_known_member_id {
                let deadline = now + req.session_timeout;
                self.pending.insert(member_id.clone(), deadline);
                return Joined::Now(JoinAnswer::refused(
                    ResponseError::MemberIdRequired,
                    &member_id,
                ));
            }
            return self.add_member(member_id, req, now, cfg);
        }
        if self.pending.remove(&req.member_id).is_some() {
            let id = req.member_id.clone();
            return self.add_member(id, req, now, cfg);
        }
        if let Err(e) = self.check_member(&req.member_id, req.instance_id.as_deref()) {
            return refuse(e);
        }
        let id = req.member_id.clone();
        let (tx, rx) = oneshot::channel();
        match self.phase {
            Phase::PreparingRebalance => {
                if let Some(m) = self.members.get_mut(&id) {
                    m.update(&req, now);
                    m.fail_waiters(ResponseError::RebalanceInProgress);
                    m.join_waiter = Some(tx);
                }
                self.try_complete_join(now);
                Joined::Wait(rx)
            }
            Phase::CompletingRebalance | Phase::Stable => {
                let unchanged = self
                    .members
                    .get(&id)
                    .is_some_and(|m| m.protocols == req.protocols);
                let is_leader = self.leader.as_deref() == Some(id.as_str());
                if unchanged && (self.phase == Phase::CompletingRebalance || !is_leader) {
                    // A duplicate join, or a follower rejoining with nothing new: the
                    // current generation stands.
                    if let Some(m) = self.members.get_mut(&id) {
                        m.last_seen = now;
                    }
                    return Joined::Now(self.answer_for(&id, false));
                }
                if let Some(m) = self.members.get_mut(&id) {
                    m.update(&req, now);
                    m.join_waiter = Some(tx);
                }
                self.prepare_rebalance(now, cfg);
                Joined::Wait(rx)
            }
            Phase::Empty | Phase::Dead => refuse(ResponseError::UnknownMemberId),
        }
    }

    /// Whether a joining member's protocols fit the group.
    fn accepts(&self, req: &JoinRequest) -> bool {
        if req.protocol_type.is_empty() || req.protocols.is_empty() {
            return false;
        }
        let others: Vec<&Member> = self
            .members
            .values()
            .filter(|m| m.id != req.member_id)
            .collect();
        if others.is_empty() {
            return true;
        }
        self.protocol_type.as_deref() == Some(req.protocol_type.as_str())
            && req
                .protocols
                .iter()
                .any(|(name, _)| others.iter().all(|m| m.supports(name)))
    }

    fn add_member(
        &mut self,
        id: String,
        req: JoinRequest,
        now: Instant,
        cfg: &GroupConfig,
    ) -> Joined {
        let (tx, rx) = oneshot::channel();
        let mut member = Member::new(id.clone(), &req, now);
        member.join_waiter = Some(tx);
        if let Some(i) = &req.instance_id {
            self.statics.insert(i.clone(), id.clone());
        }
        if self.members.is_empty() {
            self.protocol_type = Some(req.protocol_type.clone());
        }
        self.members.insert(id, member);
        match self.phase {
            Phase::PreparingRebalance => {
                if let Some(end) = self.initial_delay_end {
                    // Members keep arriving: wait a little longer, within the bound.
                    self.rebalance_deadline = Some((now + cfg.initial_rebalance_delay).min(end));
                }
                self.try_complete_join(now);
            }
            _ => self.prepare_rebalance(now, cfg),
        }
        Joined::Wait(rx)
    }

    /// A static member rejoining under a new member id: the old id is fenced and the
    /// new one takes its place (and assignment); a stable group does not rebalance.
    fn replace_static(&mut self, old: &str, new: String, req: JoinRequest, now: Instant) -> Joined {
        let Some(mut member) = self.members.remove(old) else {
            return Joined::Now(JoinAnswer::refused(
                ResponseError::UnknownMemberId,
                &req.member_id,
            ));
        };
        member.fail_waiters(ResponseError::FencedInstanceId);
        let unchanged = member.protocols == req.protocols;
        member.id = new.clone();
        member.update(&req, now);
        if self.leader.as_deref() == Some(old) {
            self.leader = Some(new.clone());
        }
        if let Some(i) = &req.instance_id {
            self.statics.insert(i.clone(), new.clone());
        }
        self.members.insert(new.clone(), member);
        let (tx, rx) = oneshot::channel();
        match self.phase {
            Phase::Stable if unchanged => {
                self.dirty = true;
                let leader = self.leader.as_deref() == Some(new.as_str());
                Joined::Now(self.answer_for(&new, leader))
            }
            Phase::PreparingRebalance => {
                if let Some(m) = self.members.get_mut(&new) {
                    m.join_waiter = Some(tx);
                }
                self.try_complete_join(now);
                Joined::Wait(rx)
            }
            _ => {
                if let Some(m) = self.members.get_mut(&new) {
                    m.join_waiter = Some(tx);
                }
                self.prepare_rebalance_at(now, None);
                Joined::Wait(rx)
            }
        }
    }

    /// The join answer of the current generation for one member.
    fn answer_for(&self, id: &str, skip_assignment: bool) -> JoinAnswer {
        let leader = self.leader.clone().unwrap_or_default();
        let members = if leader == id {
            self.joined_members()
        } else {
            Vec::new()
        };
        JoinAnswer {
            error: None,
            generation: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader,
            member_id: id.to_string(),
            members,
            skip_assignment,
        }
    }

    fn joined_members(&self) -> Vec<JoinedMember> {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        self.members
            .values()
            .map(|m| JoinedMember {
                member_id: m.id.clone(),
                instance_id: m.instance_id.clone(),
                metadata: m.metadata(&protocol),
            })
            .collect()
    }

    fn max_rebalance_timeout(&self) -> Duration {
        self.members
            .values()
            .map(|m| m.rebalance_timeout)
            .max()
            .unwrap_or_default()
    }

    /// Starts a rebalance: every member must rejoin.
    fn prepare_rebalance(&mut self, now: Instant, cfg: &GroupConfig) {
        let initial = (self.phase == Phase::Empty).then_some(cfg.initial_rebalance_delay);
        self.prepare_rebalance_at(now, initial);
    }

    fn prepare_rebalance_at(&mut self, now: Instant, initial_delay: Option<Duration>) {
        if self.phase == Phase::CompletingRebalance {
            for m in self.members.values_mut() {
                m.answer_sync(Err(ResponseError::RebalanceInProgress));
            }
        }
        self.assigning = false;
        self.sync_deadline = None;
        let bound = self.max_rebalance_timeout();
        match initial_delay {
            Some(delay) if !delay.is_zero() => {
                self.rebalance_deadline = Some(now + delay.min(bound));
                self.initial_delay_end = Some(now + bound);
            }
            _ => {
                self.rebalance_deadline = Some(now + bound);
                self.initial_delay_end = None;
            }
        }
        self.phase = Phase::PreparingRebalance;
        self.try_complete_join(now);
    }

    fn try_complete_join(&mut self, now: Instant) {
        if self.phase == Phase::PreparingRebalance
            && self.initial_delay_end.is_none()
            && self.pending.is_empty()
            && self.members.values().all(|m| m.join_waiter.is_some())
        {
            self.complete_join(now);
        }
    }

    /// Ends the join phase: members that did not rejoin are dropped, the generation
    /// moves on, a protocol and a leader are chosen, and every member is answered.
    fn complete_join(&mut self, now: Instant) {
        let gone: Vec<String> = self
            .members
            .values()
            .filter(|m| m.join_waiter.is_none())
            .map(|m| m.id.clone())
            .collect();
        for id in gone {
            self.drop_member(&id);
        }
        self.rebalance_deadline = None;
        self.initial_delay_end = None;
        self.generation = self.generation.wrapping_add(1).max(1);
        self.dirty = true;
        if self.members.is_empty() {
            self.phase = Phase::Empty;
            self.protocol_name = None;
            self.leader = None;
            return;
        }
        self.protocol_name = self.select_protocol();
        if !self
            .leader
            .as_ref()
            .is_some_and(|l| self.members.contains_key(l))
        {
            self.leader = self.members.keys().next().cloned();
        }
        self.phase = Phase::CompletingRebalance;
        self.sync_deadline = Some(now + self.max_rebalance_timeout());
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let answer = self.answer_for(&id, false);
            if let Some(m) = self.members.get_mut(&id) {
                m.assignment = Bytes::new();
                m.last_seen = now;
                m.answer_join(answer);
            }
        }
    }

    /// The protocol every member supports that most members prefer.
    fn select_protocol(&self) -> Option<String> {
        let first = self.members.values().next()?;
        let candidates: Vec<&String> = first
            .protocols
            .iter()
            .map(|(n, _)| n)
            .filter(|n| self.members.values().all(|m| m.supports(n)))
            .collect();
        let mut votes: Vec<usize> = vec![0; candidates.len()];
        for m in self.members.values() {
            if let Some(i) = m
                .protocols
                .iter()
                .find_map(|(n, _)| candidates.iter().position(|c| *c == n))
            {
                votes[i] += 1;
            }
        }
        let best = votes.iter().copied().max()?;
        let i = votes.iter().position(|v| *v == best)?;
        candidates.get(i).map(|s| s.to_string())
    }

    /// Removes a member without rebalancing.
    fn drop_member(&mut self, id: &str) {
        if let Some(mut m) = self.members.remove(id) {
            m.fail_waiters(ResponseError::UnknownMemberId);
            if let Some(i) = &m.instance_id
                && self.statics.get(i).map(String::as_str) == Some(id)
            {
                self.statics.remove(i);
            }
        }
        if self.leader.as_deref() == Some(id) {
            self.leader = None;
        }
    }

    /// Removes a member (left or expired) and rebalances the others.
    pub fn remove_member(&mut self, id: &str, now: Instant) {
        self.drop_member(id);
        match self.phase {
            Phase::Stable | Phase::CompletingRebalance => self.prepare_rebalance_at(now, None),
            Phase::PreparingRebalance => self.try_complete_join(now),
            Phase::Empty | Phase::Dead => {}
        }
    }

    /// Handles a SyncGroup. For the leader, `Synced::Wait` comes with the group marked
    /// dirty: the coordinator commits the assignment, then calls [`Group::assigned`].
    #[allow(clippy::too_many_arguments)]
    pub fn sync(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        assignments: Vec<(String, Bytes)>,
        now: Instant,
    ) -> Synced {
        let refuse = |e| Synced::Now(Err(e));
        if self.phase == Phase::Dead {
            return refuse(ResponseError::CoordinatorNotAvailable);
        }
        if let Err(e) = self.check_member(member_id, instance_id) {
            return refuse(e);
        }
        if generation != self.generation {
            return refuse(ResponseError::IllegalGeneration);
        }
        if protocol_type.is_some_and(|p| Some(p) != self.protocol_type.as_deref())
            || protocol_name.is_some_and(|p| Some(p) != self.protocol_name.as_deref())
        {
            return refuse(ResponseError::InconsistentGroupProtocol);
        }
        match self.phase {
            Phase::Empty | Phase::Dead => refuse(ResponseError::UnknownMemberId),
            Phase::PreparingRebalance => refuse(ResponseError::RebalanceInProgress),
            Phase::Stable => Synced::Now(Ok(self.sync_answer(member_id))),
            Phase::CompletingRebalance => {
                let (tx, rx) = oneshot::channel();
                let is_leader = self.leader.as_deref() == Some(member_id);
                if let Some(m) = self.members.get_mut(member_id) {
                    m.answer_sync(Err(ResponseError::RebalanceInProgress));
                    m.sync_waiter = Some(tx);
                    m.last_seen = now;
                }
                if is_leader && !self.assigning {
                    let mut given: HashMap<String, Bytes> = assignments.into_iter().collect();
                    for m in self.members.values_mut() {
                        m.assignment = given.remove(&m.id).unwrap_or_default();
                    }
                    self.assigning = true;
                    self.dirty = true;
                }
                Synced::Wait(rx)
            }
        }
    }

    fn sync_answer(&self, member_id: &str) -> SyncAnswer {
        SyncAnswer {
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            assignment: self
                .members
                .get(member_id)
                .map(|m| m.assignment.clone())
                .unwrap_or_default(),
        }
    }

    /// The leader's assignment for `generation` is durable (or failed to be): members
    /// get their assignments and the group is stable, or everyone rejoins.
    pub fn assigned(&mut self, generation: i32, result: Result<(), ResponseError>, now: Instant) {
        if self.phase != Phase::CompletingRebalance
            || self.generation != generation
            || !self.assigning
        {
            return;
        }
        self.assigning = false;
        match result {
            Ok(()) => {
                self.phase = Phase::Stable;
                self.sync_deadline = None;
                let ids: Vec<String> = self.members.keys().cloned().collect();
                for id in ids {
                    let answer = self.sync_answer(&id);
                    if let Some(m) = self.members.get_mut(&id) {
                        m.last_seen = now;
                        m.answer_sync(Ok(answer));
                    }
                }
            }
            Err(e) => {
                for m in self.members.values_mut() {
                    m.assignment = Bytes::new();
                    m.answer_sync(Err(e));
                }
                self.prepare_rebalance_at(now, None);
            }
        }
    }

    /// Handles a Heartbeat.
    pub fn heartbeat(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        now: Instant,
    ) -> Result<(), ResponseError> {
        if self.phase == Phase::Dead {
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        self.check_member(member_id, instance_id)?;
        if generation != self.generation {
            return Err(ResponseError::IllegalGeneration);
        }
        if let Some(m) = self.members.get_mut(member_id) {
            m.last_seen = now;
        }
        match self.phase {
            Phase::Empty | Phase::Dead => Err(ResponseError::UnknownMemberId),
            Phase::PreparingRebalance => Err(ResponseError::RebalanceInProgress),
            Phase::CompletingRebalance | Phase::Stable => Ok(()),
        }
    }

    /// Handles one member of a LeaveGroup.
    pub fn leave(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        now: Instant,
    ) -> Result<(), ResponseError> {
        if self.phase == Phase::Dead {
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        let id = match instance_id {
            Some(i) => match self.statics.get(i) {
                None => return Err(ResponseError::UnknownMemberId),
                Some(m) if !member_id.is_empty() && m != member_id => {
                    return Err(ResponseError::FencedInstanceId);
                }
                Some(m) => m.clone(),
            },
            None => {
                if self.pending.remove(member_id).is_some() {
                    self.try_complete_join(now);
                    return Ok(());
                }
                member_id.to_string()
            }
        };
        if !self.members.contains_key(&id) {
            return Err(ResponseError::UnknownMemberId);
        }
        self.remove_member(&id, now);
        Ok(())
    }

    /// Marks the group deleted: members are told to rediscover the coordinator.
    pub fn kill(&mut self) {
        for m in self.members.values_mut() {
            m.fail_waiters(ResponseError::CoordinatorNotAvailable);
        }
        self.members.clear();
        self.statics.clear();
        self.pending.clear();
        self.phase = Phase::Dead;
    }

    /// Fails every waiting request (the server is stopping).
    pub fn close(&mut self) {
        for m in self.members.values_mut() {
            m.fail_waiters(ResponseError::NotCoordinator);
        }
    }

    /// The next moment something expires.
    pub fn next_deadline(&self) -> Option<Instant> {
        let members = self.members.values().filter_map(Member::session_deadline);
        let pending = self.pending.values().copied();
        members
            .chain(pending)
            .chain(self.rebalance_deadline)
            .chain(self.sync_deadline)
            .min()
    }

    /// Expires what is due at `now`: silent members, unclaimed member ids, the join
    /// phase of a rebalance, and a generation whose leader never sent its assignment.
    pub fn expire(&mut self, now: Instant) {
        let silent: Vec<String> = self
            .members
            .values()
            .filter(|m| m.session_deadline().is_some_and(|d| d <= now))
            .map(|m| m.id.clone())
            .collect();
        for id in silent {
            tracing::info!(group = %self.name, member = %id, "member session expired");
            self.remove_member(&id, now);
        }
        let before = self.pending.len();
        self.pending.retain(|_, d| *d > now);
        if self.pending.len() != before {
            self.try_complete_join(now);
        }
        if self.phase == Phase::PreparingRebalance
            && self.rebalance_deadline.is_some_and(|d| d <= now)
        {
            self.complete_join(now);
        }
        if self.phase == Phase::CompletingRebalance
            && self.sync_deadline.is_some_and(|d| d <= now)
            && !self.assigning
        {
            let silent: Vec<String> = self
                .members
                .values()
                .filter(|m| m.sync_waiter.is_none())
                .map(|m| m.id.clone())
                .collect();
            for id in &silent {
                self.drop_member(id);
            }
            self.prepare_rebalance_at(now, None);
        }
    }

    /// Topics the members subscribe to (consumer protocol groups only).
    pub fn subscribed_topics(&self) -> Vec<String> {
        use bytes::Buf;
        use kafka_protocol::messages::ConsumerProtocolSubscription;
        use kafka_protocol::protocol::Decodable;
        if self.protocol_type.as_deref() != Some("consumer") {
            return Vec::new();
        }
        let protocol = self.protocol_name.clone().unwrap_or_default();
        let mut topics = Vec::new();
        for m in self.members.values() {
            let mut data = m.metadata(&protocol);
            if data.len() < 2 {
                continue;
            }
            // Newer subscription versions only add fields at the end.
            let version = data.get_i16().clamp(0, 3);
            if let Ok(s) = ConsumerProtocolSubscription::decode(&mut data, version) {
                topics.extend(s.topics.into_iter().map(|t| t.to_string()));
            }
        }
        topics.sort();
        topics.dedup();
        topics
    }
}

fn millis(d: Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: &str, instance: Option<&str>, protocols: &[&str]) -> JoinRequest {
        JoinRequest {
            member_id: id.to_string(),
            instance_id: instance.map(str::to_string),
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            session_timeout: Duration::from_secs(10),
            rebalance_timeout: Duration::from_secs(30),
            protocol_type: "consumer".into(),
            protocols: protocols
                .iter()
                .map(|p| (p.to_string(), Bytes::from(p.to_string())))
                .collect(),
            require_known_member_id: false,
        }
    }

    fn cfg() -> GroupConfig {
        GroupConfig {
            initial_rebalance_delay: Duration::ZERO,
            ..GroupConfig::default()
        }
    }

    fn answer(j: Joined) -> JoinAnswer {
        match j {
            Joined::Now(a) => a,
            Joined::Wait(mut rx) => rx.try_recv().expect("answered"),
        }
    }

    #[test]
    fn the_protocol_all_support_that_most_prefer_wins() {
        let now = Instant::now();
        let mut g = Group::new("g");
        // Alone, a member gets its first choice at once.
        let a = answer(g.join(req("", None, &["x", "y"]), "a".into(), now, &cfg()));
        assert_eq!(a.protocol_name.as_deref(), Some("x"));
        // b prefers y; c only knows y: y is the only common one. a rejoins last, as
        // a client does once its heartbeat says a rebalance is on.
        let jb = g.join(req("", None, &["y", "x"]), "b".into(), now, &cfg());
        let jc = g.join(req("", None, &["y"]), "c".into(), now, &cfg());
        let ja = g.join(req("a", None, &["x", "y"]), "-".into(), now, &cfg());
        let (a, b, c) = (answer(ja), answer(jb), answer(jc));
        assert_eq!(a.generation, 2);
        assert_eq!(
            [a.protocol_name, b.protocol_name, c.protocol_name],
            [
                Some("y".to_string()),
                Some("y".to_string()),
                Some("y".to_string())
            ]
        );
        assert_eq!(a.members.len(), 3, "the leader stays and sees everyone");
        assert!(b.members.is_empty());
        // A member that shares no protocol with the group is refused.
        let d = answer(g.join(req("", None, &["z"]), "d".into(), now, &cfg()));
        assert_eq!(d.error, Some(ResponseError::InconsistentGroupProtocol));
    }

    #[test]
    fn a_silent_member_expires_and_the_rest_rebalance() {
        let t0 = Instant::now();
        let mut g = Group::new("g");
        let ja = g.join(req("", None, &["r"]), "a".into(), t0, &cfg());
        answer(ja);
        let jb = g.join(req("", None, &["r"]), "b".into(), t0, &cfg());
        let ja = g.join(req("a", None, &["r"]), "-".into(), t0, &cfg());
        answer(ja);
        answer(jb);
        let Synced::Wait(mut rb) = g.sync("b", None, 2, None, None, vec![], t0) else {
            panic!("follower waits for the leader");
        };
        let assignments = vec![
            ("a".into(), Bytes::from("A")),
            ("b".into(), Bytes::from("B")),
        ];
        let Synced::Wait(mut ra) = g.sync("a", None, 2, None, None, assignments, t0) else {
            panic!("leader waits for durability");
        };
        assert!(g.take_dirty());
        g.assigned(2, Ok(()), t0);
        assert_eq!(g.phase, Phase::Stable);
        assert_eq!(ra.try_recv().unwrap().unwrap().assignment, Bytes::from("A"));
        assert_eq!(rb.try_recv().unwrap().unwrap().assignment, Bytes::from("B"));

        // b stops heartbeating; a keeps on.
        let t1 = t0 + Duration::from_secs(8);
        assert_eq!(g.heartbeat("a", None, 2, t1), Ok(()));
        assert_eq!(g.next_deadline(), Some(t0 + Duration::from_secs(10)));
        g.expire(t0 + Duration::from_secs(10));
        assert!(!g.members.contains_key("b"));
        assert_eq!(g.phase, Phase::PreparingRebalance);
        assert_eq!(
            g.heartbeat("a", None, 2, t1),
            Err(ResponseError::RebalanceInProgress)
        );
        let a = answer(g.join(req("a", None, &["r"]), "-".into(), t1, &cfg()));
        assert_eq!((a.generation, a.members.len()), (3, 1));
    }

    #[test]
    fn a_static_member_rejoins_a_stable_group_without_a_rebalance() {
        let t0 = Instant::now();
        let mut g = Group::new("g");
        let a = answer(g.join(req("", Some("i"), &["r"]), "a1".into(), t0, &cfg()));
        assert_eq!(a.generation, 1);
        let _ = g.sync(
            "a1",
            Some("i"),
            1,
            None,
            None,
            vec![("a1".into(), "A".into())],
            t0,
        );
        g.assigned(1, Ok(()), t0);
        g.take_dirty();
        // The process restarts: a new member id, the same generation and assignment.
        let again = answer(g.join(req("", Some("i"), &["r"]), "a2".into(), t0, &cfg()));
        assert_eq!((again.error, again.generation), (None, 1));
        assert_eq!(again.member_id, "a2");
        assert!(again.skip_assignment, "the leader keeps the assignment");
        assert!(g.take_dirty(), "the new member id is stored");
        let Synced::Now(Ok(s)) = g.sync("a2", Some("i"), 1, None, None, vec![], t0) else {
            panic!("a stable group answers at once");
        };
        assert_eq!(s.assignment, Bytes::from("A"));
        // The old process is fenced.
        assert_eq!(
            g.heartbeat("a1", Some("i"), 1, t0),
            Err(ResponseError::FencedInstanceId)
        );
    }
}
