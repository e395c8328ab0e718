//! The consumer group protocol's (KIP-848) state machine for one group: heartbeats that
//! join, leave and report owned partitions, the group epoch that every change of
//! membership, subscription or subscribed topic metadata bumps, the target assignment
//! the server-side assignor computes for it, and each member's reconciliation toward
//! its target. It does no I/O and takes the time as an argument.
//!
//! The invariant everything here keeps: a partition is held (assigned, or being
//! revoked) by at most one member at any time. A member first gives up what its target
//! no longer holds, keeping its epoch; only then does it move to the target epoch, and
//! it gets only the target partitions that no other member still holds. Those it gets
//! on a later heartbeat, once their holder has let them go.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use kafka_protocol::error::ResponseError;

use super::assignor::{self, Assignor, MemberSpec, Partitions};
use super::durable::{StoredConsumerGroup, StoredConsumerMember};

/// The consumer group protocol's settings (Kafka's broker settings of the same names).
#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    /// `group.consumer.session.timeout.ms`.
    pub session_timeout: Duration,
    /// `group.consumer.heartbeat.interval.ms`.
    pub heartbeat_interval: Duration,
    /// `group.consumer.max.size`.
    pub max_size: usize,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        Self {
            session_timeout: Duration::from_millis(45_000),
            heartbeat_interval: Duration::from_millis(5_000),
            max_size: usize::MAX,
        }
    }
}

/// A topic as the assignor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMeta {
    /// Topic id.
    pub id: u128,
    /// Name.
    pub name: String,
    /// Partition count.
    pub partitions: u32,
}

/// What a member subscribes to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subscription {
    /// Topic names.
    pub names: BTreeSet<String>,
    /// A regular expression (RE2 syntax) matched against whole topic names.
    pub regex: Option<String>,
}

/// A member of a consumer group.
#[derive(Debug, Clone)]
pub struct Member {
    /// Member id (chosen by the client from v1, by the coordinator in v0).
    pub id: String,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    /// `client.rack`.
    pub rack_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client address.
    pub client_host: String,
    /// How long the member may take to revoke partitions.
    pub rebalance_timeout: Duration,
    /// Subscription.
    pub subscription: Subscription,
    /// The server assignor the member asked for.
    pub assignor: Option<String>,
    /// Member epoch.
    pub epoch: i32,
    /// The epoch before the last bump (a heartbeat whose answer was lost uses it).
    pub previous_epoch: i32,
    /// Partitions the member holds.
    pub assigned: Partitions,
    /// Partitions the member was told to give up and has not yet.
    pub revoking: Partitions,
    /// When the member is dropped for not heartbeating.
    session_deadline: Instant,
    /// When the member is dropped for not revoking.
    revoke_deadline: Option<Instant>,
    /// A static member that left with epoch -2: it keeps its partitions until its
    /// instance rejoins or its session expires.
    pub left: bool,
}

/// A heartbeat, as the state machine needs it.
#[derive(Debug, Clone, Default)]
pub struct Beat {
    /// Member id; empty on a v0 join.
    pub member_id: String,
    /// Member epoch: 0 joins, -1 leaves, -2 leaves a static member for now.
    pub epoch: i32,
    /// `group.instance.id`.
    pub instance_id: Option<String>,
    /// `client.rack`.
    pub rack_id: Option<String>,
    /// Rebalance timeout, ms; -1 when unchanged.
    pub rebalance_timeout_ms: i32,
    /// Subscribed topic names; `None` when unchanged.
    pub names: Option<Vec<String>>,
    /// Subscribed regex; `None` when unchanged, empty to drop it.
    pub regex: Option<String>,
    /// Server assignor; `None` when unchanged.
    pub assignor: Option<String>,
    /// Partitions the member owns; `None` when unchanged.
    pub owned: Option<Partitions>,
    /// Client id.
    pub client_id: String,
    /// Client address.
    pub client_host: String,
}

/// A heartbeat's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct BeatAnswer {
    /// Member id.
    pub member_id: String,
    /// Member epoch.
    pub epoch: i32,
    /// The member's assignment, when it changed or the member's view of it differs.
    pub assignment: Option<Partitions>,
}

/// The heartbeat interval while a group settles.
pub const SETTLING_HEARTBEAT: Duration = Duration::from_millis(250);
/// How long after a change of its epoch a group counts as settling.
pub const SETTLING: Duration = Duration::from_secs(3);

/// A refused heartbeat: the error and its message.
pub type Refusal = (ResponseError, String);

/// One consumer group.
#[derive(Debug, Clone)]
pub struct ConsumerGroup {
    /// Group id.
    pub name: String,
    /// Group epoch.
    pub epoch: i32,
    /// The group epoch the target assignment was computed for.
    pub assignment_epoch: i32,
    /// The assignor of the target assignment.
    pub assignor: Assignor,
    /// Members by id.
    pub members: BTreeMap<String, Member>,
    /// Target assignment by member id.
    pub target: BTreeMap<String, Partitions>,
    /// Subscribed topics' metadata at the group epoch, by topic id.
    pub topics: BTreeMap<u128, TopicMeta>,
    statics: HashMap<String, String>,
    /// When the group epoch last moved.
    changed_at: Option<Instant>,
    /// Set when the group was deleted.
    pub dead: bool,
    dirty: bool,
    /// Commits of this group's state in flight.
    pub persisting: usize,
}

fn bad(message: impl Into<String>) -> Refusal {
    (ResponseError::InvalidRequest, message.into())
}

fn full_match(regex: &str) -> Result<regex::Regex, Refusal> {
    regex::Regex::new(&format!("^(?:{regex})$")).map_err(|e| {
        (
            ResponseError::InvalidRegularExpression,
            format!("invalid regular expression {regex:?}: {e}"),
        )
    })
}

fn subtract(a: &Partitions, b: &Partitions) -> Partitions {
    let mut out = Partitions::new();
    for (t, ps) in a {
        let rest: BTreeSet<u32> = match b.get(t) {
            Some(other) => ps.difference(other).copied().collect(),
            None => ps.clone(),
        };
        if !rest.is_empty() {
            out.insert(*t, rest);
        }
    }
    out
}

fn intersect(a: &Partitions, b: &Partitions) -> Partitions {
    let mut out = Partitions::new();
    for (t, ps) in a {
        if let Some(other) = b.get(t) {
            let both: BTreeSet<u32> = ps.intersection(other).copied().collect();
            if !both.is_empty() {
                out.insert(*t, both);
            }
        }
    }
    out
}

fn is_subset(a: &Partitions, b: &Partitions) -> bool {
    subtract(a, b).is_empty()
}

impl ConsumerGroup {
    /// A new, empty group.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            epoch: 0,
            assignment_epoch: 0,
            assignor: Assignor::ALL[0],
            members: BTreeMap::new(),
            target: BTreeMap::new(),
            topics: BTreeMap::new(),
            statics: HashMap::new(),
            changed_at: None,
            dead: false,
            dirty: false,
            persisting: 0,
        }
    }

    /// The state name ConsumerGroupDescribe and ListGroups report.
    pub fn state_name(&self) -> &'static str {
        if self.dead {
            "Dead"
        } else if self.members.is_empty() {
            "Empty"
        } else if self.epoch > self.assignment_epoch {
            "Assigning"
        } else if self.members.values().any(|m| {
            m.epoch != self.assignment_epoch
                || !m.revoking.is_empty()
                || self.target.get(&m.id).is_some_and(|t| *t != m.assigned)
        }) {
            "Reconciling"
        } else {
            "Stable"
        }
    }

    /// Whether the durable state changed since the last call (and clears the flag).
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Nothing left to keep in memory: no members and nothing being stored.
    pub fn is_idle(&self) -> bool {
        self.members.is_empty() && self.persisting == 0 && !self.dirty
    }

    /// The member of an id, if it is live (a static member that left is not).
    pub fn live_member(&self, id: &str) -> Option<&Member> {
        self.members.get(id).filter(|m| !m.left)
    }

    /// Handles a heartbeat. `new_id` is the id a v0 joiner without one gets; `topics`
    /// is every topic that exists.
    pub fn heartbeat(
        &mut self,
        beat: Beat,
        new_id: String,
        topics: &[TopicMeta],
        now: Instant,
        cfg: &ConsumerConfig,
    ) -> Result<BeatAnswer, Refusal> {
        if self.dead {
            return Err((
                ResponseError::CoordinatorNotAvailable,
                "the group is being deleted".into(),
            ));
        }
        // `is_new`: a member the group did not have (a static member's new incarnation
        // is not one: it takes its predecessor's place without a rebalance).
        let (id, is_new) = match beat.epoch {
            -1 => return self.leave(&beat.member_id, topics),
            -2 => return self.leave_static(&beat, topics),
            0 => self.join(&beat, new_id, now, cfg)?,
            e if e > 0 => {
                self.check_epoch(&beat)?;
                (beat.member_id.clone(), false)
            }
            e => return Err(bad(format!("member epoch {e} is not valid"))),
        };
        let member = self
            .members
            .get_mut(&id)
            .ok_or((ResponseError::UnknownMemberId, String::new()))?;
        member.session_deadline = now + cfg.session_timeout;
        member.client_id.clone_from(&beat.client_id);
        member.client_host.clone_from(&beat.client_host);
        if beat.rebalance_timeout_ms > 0 {
            member.rebalance_timeout = Duration::from_millis(beat.rebalance_timeout_ms as u64);
        }
        if beat.rack_id.is_some() && member.rack_id != beat.rack_id {
            member.rack_id.clone_from(&beat.rack_id);
            self.dirty = true;
        }
        let mut subscription = member.subscription.clone();
        if let Some(names) = &beat.names {
            subscription.names = names.iter().cloned().collect();
        }
        if let Some(regex) = &beat.regex {
            subscription.regex = (!regex.is_empty()).then(|| regex.clone());
        }
        let assignor_changed = beat.assignor.is_some() && beat.assignor != member.assignor;
        if assignor_changed {
            member.assignor.clone_from(&beat.assignor);
        }
        if subscription != member.subscription || assignor_changed || is_new {
            member.subscription = subscription;
            self.bump();
        }
        let before = self.epoch;
        self.refresh(topics)?;
        if self.epoch != before || is_new {
            self.changed_at = Some(now);
        }
        Ok(self.reconcile(&id, beat.owned.as_ref(), beat.epoch == 0, now))
    }

    /// The heartbeat interval to give a member now: the configured one once the group is
    /// stable, and [`SETTLING_HEARTBEAT`] while it is not or changed in the last
    /// [`SETTLING`]. A member learns of a new target, or of partitions freed for it, only
    /// from a heartbeat's answer; at Kafka's 5 s interval a group of 10 joining at once
    /// took one or two intervals (5 and 10 s measured) to settle, nearly all of it spent
    /// waiting for the next heartbeat.
    pub fn heartbeat_interval(&self, now: Instant, cfg: &ConsumerConfig) -> Duration {
        let recent = self
            .changed_at
            .is_some_and(|t| now.saturating_duration_since(t) < SETTLING);
        if recent || self.state_name() != "Stable" {
            cfg.heartbeat_interval.min(SETTLING_HEARTBEAT)
        } else {
            cfg.heartbeat_interval
        }
    }

    fn check_epoch(&self, beat: &Beat) -> Result<(), Refusal> {
        let Some(member) = self.live_member(&beat.member_id) else {
            return Err((
                ResponseError::UnknownMemberId,
                format!("member {} is not in the group", beat.member_id),
            ));
        };
        if beat.epoch == member.epoch {
            return Ok(());
        }
        // The answer that moved the member to its epoch was lost: the member may go on
        // from the previous one while it owns nothing it should not.
        let lost_answer = beat.epoch == member.previous_epoch
            && beat
                .owned
                .as_ref()
                .is_some_and(|owned| is_subset(owned, &member.assigned));
        if lost_answer {
            return Ok(());
        }
        Err((
            ResponseError::FencedMemberEpoch,
            format!(
                "member epoch {} is fenced, the member's epoch is {}",
                beat.epoch, member.epoch
            ),
        ))
    }

    fn join(
        &mut self,
        beat: &Beat,
        new_id: String,
        now: Instant,
        cfg: &ConsumerConfig,
    ) -> Result<(String, bool), Refusal> {
        if beat.rebalance_timeout_ms < 0 {
            return Err(bad("RebalanceTimeoutMs must be set when joining"));
        }
        if beat.names.is_none() && beat.regex.is_none() {
            return Err(bad(
                "SubscribedTopicNames or SubscribedTopicRegex must be set when joining",
            ));
        }
        if beat.owned.as_ref().is_some_and(|o| !o.is_empty()) {
            return Err(bad("TopicPartitions must be empty when joining"));
        }
        if let Some(a) = beat.assignor.as_deref()
            && Assignor::from_name(a).is_none()
        {
            let served: Vec<&str> = Assignor::ALL.iter().map(|a| a.name()).collect();
            return Err((
                ResponseError::UnsupportedAssignor,
                format!(
                    "assignor {a} is not served; the server assignors are {}",
                    served.join(", ")
                ),
            ));
        }
        if let Some(r) = beat.regex.as_deref().filter(|r| !r.is_empty()) {
            full_match(r)?;
        }
        let id = if beat.member_id.is_empty() {
            new_id
        } else {
            beat.member_id.clone()
        };
        let mut inherited: Option<Member> = None;
        if let Some(instance) = &beat.instance_id
            && let Some(old_id) = self.statics.get(instance).cloned()
            && old_id != id
        {
            match self.members.get(&old_id) {
                Some(old) if !old.left => {
                    return Err((
                        ResponseError::UnreleasedInstanceId,
                        format!("instance {instance} is still used by member {old_id}"),
                    ));
                }
                _ => inherited = self.members.remove(&old_id),
            }
            if let Some(target) = self.target.remove(&old_id) {
                self.target.insert(id.clone(), target);
            }
        }
        if !self.members.contains_key(&id) && self.members.len() >= cfg.max_size {
            return Err((
                ResponseError::GroupMaxSizeReached,
                format!("the group has its maximum of {} members", cfg.max_size),
            ));
        }
        let rebalance_timeout = Duration::from_millis(beat.rebalance_timeout_ms as u64);
        let is_new = inherited.is_none() && !self.members.contains_key(&id);
        let member = match (inherited, self.members.remove(&id)) {
            // A static member's new incarnation takes over its partitions and epoch.
            (Some(old), _) => Member {
                id: id.clone(),
                left: false,
                rebalance_timeout,
                ..old
            },
            // A member rejoining under its id keeps what it holds; the answer tells it.
            (None, Some(old)) => Member {
                left: false,
                rebalance_timeout,
                ..old
            },
            (None, None) => Member {
                id: id.clone(),
                instance_id: beat.instance_id.clone(),
                rack_id: beat.rack_id.clone(),
                client_id: beat.client_id.clone(),
                client_host: beat.client_host.clone(),
                rebalance_timeout,
                subscription: Subscription::default(),
                assignor: None,
                epoch: 0,
                previous_epoch: 0,
                assigned: Partitions::new(),
                revoking: Partitions::new(),
                session_deadline: now + cfg.session_timeout,
                revoke_deadline: None,
                left: false,
            },
        };
        if let Some(instance) = &member.instance_id {
            self.statics.insert(instance.clone(), id.clone());
        }
        self.members.insert(id.clone(), member);
        self.dirty = true;
        Ok((id, is_new))
    }

    fn leave(&mut self, member_id: &str, topics: &[TopicMeta]) -> Result<BeatAnswer, Refusal> {
        if !self.members.contains_key(member_id) {
            return Err((
                ResponseError::UnknownMemberId,
                format!("member {member_id} is not in the group"),
            ));
        }
        self.remove(member_id);
        self.refresh(topics)?;
        Ok(BeatAnswer {
            member_id: member_id.to_string(),
            epoch: -1,
            assignment: None,
        })
    }

    fn leave_static(&mut self, beat: &Beat, topics: &[TopicMeta]) -> Result<BeatAnswer, Refusal> {
        let Some(member) = self.members.get_mut(&beat.member_id) else {
            return Err((
                ResponseError::UnknownMemberId,
                format!("member {} is not in the group", beat.member_id),
            ));
        };
        if member.instance_id.is_none() {
            return self.leave(&beat.member_id, topics);
        }
        member.left = true;
        self.dirty = true;
        Ok(BeatAnswer {
            member_id: beat.member_id.clone(),
            epoch: -2,
            assignment: None,
        })
    }

    fn remove(&mut self, id: &str) {
        if let Some(m) = self.members.remove(id)
            && let Some(instance) = &m.instance_id
            && self.statics.get(instance).is_some_and(|i| i == id)
        {
            self.statics.remove(instance);
        }
        self.target.remove(id);
        self.bump();
    }

    fn bump(&mut self) {
        self.epoch = self.epoch.max(self.assignment_epoch) + 1;
        self.dirty = true;
    }

    /// Re-reads the subscribed topics' metadata (bumping the epoch when it changed) and
    /// computes the target assignment if the epoch moved past it.
    fn refresh(&mut self, topics: &[TopicMeta]) -> Result<(), Refusal> {
        let mut regexes = Vec::new();
        let mut names = BTreeSet::new();
        for m in self.members.values() {
            names.extend(m.subscription.names.iter().cloned());
            if let Some(r) = &m.subscription.regex {
                regexes.push(full_match(r)?);
            }
        }
        let subscribed: BTreeMap<u128, TopicMeta> = topics
            .iter()
            .filter(|t| names.contains(&t.name) || regexes.iter().any(|r| r.is_match(&t.name)))
            .map(|t| (t.id, t.clone()))
            .collect();
        if subscribed != self.topics {
            self.topics = subscribed;
            if !self.members.is_empty() {
                self.bump();
            }
        }
        if self.epoch > self.assignment_epoch {
            self.assign();
        }
        Ok(())
    }

    fn member_topics(&self, m: &Member) -> BTreeSet<u128> {
        let regex = m
            .subscription
            .regex
            .as_deref()
            .and_then(|r| full_match(r).ok());
        self.topics
            .values()
            .filter(|t| {
                m.subscription.names.contains(&t.name)
                    || regex.as_ref().is_some_and(|r| r.is_match(&t.name))
            })
            .map(|t| t.id)
            .collect()
    }

    fn assign(&mut self) {
        // The most asked-for assignor wins; ties and no preference go to the default.
        let mut votes: BTreeMap<usize, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(i) = m
                .assignor
                .as_deref()
                .and_then(|a| Assignor::ALL.iter().position(|x| x.name() == a))
            {
                *votes.entry(i).or_default() += 1;
            }
        }
        let best = votes
            .iter()
            .max_by_key(|(i, n)| (**n, std::cmp::Reverse(**i)))
            .map_or(0, |(i, _)| *i);
        self.assignor = Assignor::ALL[best];
        let specs: Vec<MemberSpec> = self
            .members
            .values()
            .map(|m| MemberSpec {
                id: m.id.clone(),
                instance_id: m.instance_id.clone(),
                topics: self.member_topics(m),
            })
            .collect();
        let counts: BTreeMap<u128, u32> =
            self.topics.values().map(|t| (t.id, t.partitions)).collect();
        self.target = assignor::assign(self.assignor, &specs, &counts, &self.target);
        self.assignment_epoch = self.epoch;
        self.dirty = true;
    }

    /// Partitions held by members other than `id`.
    fn held_by_others(&self, id: &str) -> Partitions {
        let mut out = Partitions::new();
        for m in self.members.values().filter(|m| m.id != id) {
            for (t, ps) in m.assigned.iter().chain(m.revoking.iter()) {
                out.entry(*t).or_default().extend(ps.iter().copied());
            }
        }
        out
    }

    fn reconcile(
        &mut self,
        id: &str,
        owned: Option<&Partitions>,
        joined: bool,
        now: Instant,
    ) -> BeatAnswer {
        let target = self.target.get(id).cloned().unwrap_or_default();
        let held = self.held_by_others(id);
        let assignment_epoch = self.assignment_epoch;
        let Some(m) = self.members.get_mut(id) else {
            return BeatAnswer {
                member_id: id.to_string(),
                epoch: 0,
                assignment: None,
            };
        };
        let before = (m.epoch, m.assigned.clone(), m.revoking.clone());
        if !m.revoking.is_empty() && owned.is_some_and(|o| intersect(o, &m.revoking).is_empty()) {
            m.revoking.clear();
            m.revoke_deadline = None;
        }
        if m.revoking.is_empty() {
            let to_revoke = subtract(&m.assigned, &target);
            if !to_revoke.is_empty() {
                m.assigned = intersect(&m.assigned, &target);
                m.revoking = to_revoke;
                m.revoke_deadline = Some(now + m.rebalance_timeout);
            } else {
                if m.epoch != assignment_epoch {
                    m.previous_epoch = m.epoch;
                    m.epoch = assignment_epoch;
                }
                m.assigned = subtract(&target, &held);
            }
        }
        let changed = before != (m.epoch, m.assigned.clone(), m.revoking.clone());
        if changed {
            self.dirty = true;
        }
        let differs = owned.is_some_and(|o| *o != m.assigned);
        BeatAnswer {
            member_id: m.id.clone(),
            epoch: m.epoch,
            assignment: (changed || differs || joined).then(|| m.assigned.clone()),
        }
    }

    /// Drops members whose session or revocation time ran out; `topics` is every topic
    /// that exists. Returns whether anything changed.
    pub fn expire(&mut self, now: Instant, topics: &[TopicMeta]) -> bool {
        let gone: Vec<String> = self
            .members
            .values()
            .filter(|m| m.session_deadline <= now || m.revoke_deadline.is_some_and(|d| d <= now))
            .map(|m| m.id.clone())
            .collect();
        for id in &gone {
            tracing::info!(group = %self.name, member = %id, "consumer group member expired");
            self.remove(id);
        }
        if !gone.is_empty() {
            self.changed_at = Some(now);
        }
        if !gone.is_empty() {
            // A regex that no longer compiles cannot be stored; the join refused it.
            let _ = self.refresh(topics);
        }
        !gone.is_empty()
    }

    /// Re-reads the subscribed topics' metadata outside a heartbeat (a topic created
    /// or grown): returns whether the group epoch moved.
    pub fn notice_topics(&mut self, topics: &[TopicMeta]) -> bool {
        let before = self.epoch;
        let _ = self.refresh(topics);
        self.epoch != before
    }

    /// The next time `expire` has work.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.members
            .values()
            .flat_map(|m| std::iter::once(m.session_deadline).chain(m.revoke_deadline))
            .min()
    }

    /// Checks an OffsetCommit or OffsetFetch of a member at `epoch`.
    pub fn check_member_epoch(&self, member_id: &str, epoch: i32) -> Result<(), ResponseError> {
        let m = self
            .live_member(member_id)
            .ok_or(ResponseError::UnknownMemberId)?;
        if epoch == m.epoch {
            Ok(())
        } else if epoch > m.epoch {
            Err(ResponseError::FencedMemberEpoch)
        } else {
            Err(ResponseError::StaleMemberEpoch)
        }
    }

    /// Every topic the members subscribe to by name or through a regex, that exists.
    pub fn subscribed_topic_names(&self) -> Vec<String> {
        let mut names: BTreeSet<String> = self
            .members
            .values()
            .flat_map(|m| m.subscription.names.iter().cloned())
            .collect();
        names.extend(self.topics.values().map(|t| t.name.clone()));
        names.into_iter().collect()
    }

    /// Marks the group deleted.
    pub fn kill(&mut self) {
        self.dead = true;
    }

    /// The durable state.
    pub fn stored(&self) -> StoredConsumerGroup {
        let list = |p: &Partitions| -> Vec<(u128, Vec<u32>)> {
            p.iter()
                .map(|(t, ps)| (*t, ps.iter().copied().collect()))
                .collect()
        };
        StoredConsumerGroup {
            epoch: self.epoch,
            assignment_epoch: self.assignment_epoch,
            assignor: self.assignor.name().to_string(),
            topics: self
                .topics
                .values()
                .map(|t| (t.id, t.name.clone(), t.partitions))
                .collect(),
            members: self
                .members
                .values()
                .map(|m| StoredConsumerMember {
                    id: m.id.clone(),
                    instance_id: m.instance_id.clone(),
                    rack_id: m.rack_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout.as_millis() as u32,
                    names: m.subscription.names.iter().cloned().collect(),
                    regex: m.subscription.regex.clone(),
                    assignor: m.assignor.clone(),
                    epoch: m.epoch,
                    previous_epoch: m.previous_epoch,
                    assigned: list(&m.assigned),
                    revoking: list(&m.revoking),
                    target: self.target.get(&m.id).map(list).unwrap_or_default(),
                    left: m.left,
                })
                .collect(),
        }
    }

    /// A group from its durable state; every member gets a fresh session (and a
    /// member that was revoking a fresh rebalance timeout) from `now`.
    pub fn restore(
        name: &str,
        stored: StoredConsumerGroup,
        now: Instant,
        cfg: &ConsumerConfig,
    ) -> Self {
        let set = |v: &[(u128, Vec<u32>)]| -> Partitions {
            v.iter()
                .map(|(t, ps)| (*t, ps.iter().copied().collect()))
                .collect()
        };
        let mut g = Self::new(name);
        g.epoch = stored.epoch;
        g.assignment_epoch = stored.assignment_epoch;
        g.assignor = Assignor::from_name(&stored.assignor).unwrap_or(Assignor::ALL[0]);
        g.topics = stored
            .topics
            .into_iter()
            .map(|(id, name, partitions)| {
                (
                    id,
                    TopicMeta {
                        id,
                        name,
                        partitions,
                    },
                )
            })
            .collect();
        for m in stored.members {
            let rebalance_timeout = Duration::from_millis(u64::from(m.rebalance_timeout_ms));
            let revoking = set(&m.revoking);
            if let Some(instance) = &m.instance_id {
                g.statics.insert(instance.clone(), m.id.clone());
            }
            g.target.insert(m.id.clone(), set(&m.target));
            g.members.insert(
                m.id.clone(),
                Member {
                    id: m.id,
                    instance_id: m.instance_id,
                    rack_id: m.rack_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    rebalance_timeout,
                    subscription: Subscription {
                        names: m.names.into_iter().collect(),
                        regex: m.regex,
                    },
                    assignor: m.assignor,
                    epoch: m.epoch,
                    previous_epoch: m.previous_epoch,
                    assigned: set(&m.assigned),
                    revoke_deadline: (!revoking.is_empty()).then(|| now + rebalance_timeout),
                    revoking,
                    session_deadline: now + cfg.session_timeout,
                    left: m.left,
                },
            );
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: u128 = 7;

    fn topics(n: u32) -> Vec<TopicMeta> {
        vec![TopicMeta {
            id: T,
            name: "t".into(),
            partitions: n,
        }]
    }

    fn join(id: &str) -> Beat {
        Beat {
            member_id: id.into(),
            epoch: 0,
            rebalance_timeout_ms: 30_000,
            names: Some(vec!["t".into()]),
            owned: Some(Partitions::new()),
            ..Default::default()
        }
    }

    fn beat(id: &str, epoch: i32, owned: &Partitions) -> Beat {
        Beat {
            member_id: id.into(),
            epoch,
            rebalance_timeout_ms: -1,
            owned: Some(owned.clone()),
            ..Default::default()
        }
    }

    /// Every partition held by at most one member.
    fn check_exclusive(g: &ConsumerGroup) {
        let mut seen = BTreeSet::new();
        for m in g.members.values() {
            for (t, ps) in m.assigned.iter().chain(m.revoking.iter()) {
                for p in ps {
                    assert!(seen.insert((*t, *p)), "partition {t}/{p} held twice");
                }
            }
        }
    }

    /// Clients that do what they are told: heartbeat until nothing changes.
    fn settle(
        g: &mut ConsumerGroup,
        owned: &mut BTreeMap<String, (i32, Partitions)>,
        now: Instant,
        cfg: &ConsumerConfig,
    ) {
        for _ in 0..20 {
            let mut changed = false;
            for id in owned.keys().cloned().collect::<Vec<_>>() {
                let (epoch, have) = owned[&id].clone();
                let a = g
                    .heartbeat(beat(&id, epoch, &have), String::new(), &topics(6), now, cfg)
                    .unwrap();
                check_exclusive(g);
                let next = (a.epoch, a.assignment.clone().unwrap_or(have.clone()));
                if next != owned[&id] {
                    changed = true;
                    owned.insert(id, next);
                }
            }
            if !changed {
                return;
            }
        }
        panic!("the group did not settle");
    }

    #[test]
    fn members_converge_with_every_partition_owned_once() {
        let cfg = ConsumerConfig::default();
        let now = Instant::now();
        let mut g = ConsumerGroup::new("g");
        let mut owned = BTreeMap::new();
        for id in ["a", "b", "c"] {
            let a = g
                .heartbeat(join(id), String::new(), &topics(6), now, &cfg)
                .unwrap();
            check_exclusive(&g);
            owned.insert(id.to_string(), (a.epoch, a.assignment.unwrap_or_default()));
            settle(&mut g, &mut owned, now, &cfg);
        }
        assert_eq!(g.state_name(), "Stable");
        let counts: Vec<usize> = owned.values().map(|(_, p)| assignor_count(p)).collect();
        assert_eq!(counts, vec![2, 2, 2]);
        let epochs: BTreeSet<i32> = owned.values().map(|(e, _)| *e).collect();
        assert_eq!(epochs, BTreeSet::from([g.epoch]));
    }

    fn assignor_count(p: &Partitions) -> usize {
        p.values().map(BTreeSet::len).sum()
    }

    #[test]
    fn a_new_member_waits_for_partitions_until_their_holder_revokes() {
        let cfg = ConsumerConfig::default();
        let now = Instant::now();
        let mut g = ConsumerGroup::new("g");
        let a = g
            .heartbeat(join("a"), String::new(), &topics(4), now, &cfg)
            .unwrap();
        assert_eq!(assignor_count(a.assignment.as_ref().unwrap()), 4);
        let b = g
            .heartbeat(join("b"), String::new(), &topics(4), now, &cfg)
            .unwrap();
        // a still holds everything: b moves to the new epoch with nothing yet.
        assert_eq!(b.assignment, Some(Partitions::new()));
        let a_owned = a.assignment.unwrap();
        let a2 = g
            .heartbeat(
                beat("a", a.epoch, &a_owned),
                String::new(),
                &topics(4),
                now,
                &cfg,
            )
            .unwrap();
        assert_eq!(a2.epoch, a.epoch, "revoking keeps the epoch");
        let kept = a2.assignment.unwrap();
        assert_eq!(assignor_count(&kept), 2);
        check_exclusive(&g);
        // a reports the revocation done, then b gets the rest.
        let a3 = g
            .heartbeat(
                beat("a", a.epoch, &kept),
                String::new(),
                &topics(4),
                now,
                &cfg,
            )
            .unwrap();
        assert_eq!(a3.epoch, g.epoch);
        let b2 = g
            .heartbeat(
                beat("b", b.epoch, &Partitions::new()),
                String::new(),
                &topics(4),
                now,
                &cfg,
            )
            .unwrap();
        assert_eq!(assignor_count(b2.assignment.as_ref().unwrap()), 2);
        check_exclusive(&g);
    }

    #[test]
    fn fenced_stale_and_unknown_members_are_refused() {
        let cfg = ConsumerConfig::default();
        let now = Instant::now();
        let mut g = ConsumerGroup::new("g");
        let a = g
            .heartbeat(join("a"), String::new(), &topics(2), now, &cfg)
            .unwrap();
        let err = g
            .heartbeat(
                beat("a", a.epoch + 5, &Partitions::new()),
                String::new(),
                &topics(2),
                now,
                &cfg,
            )
            .unwrap_err();
        assert_eq!(err.0, ResponseError::FencedMemberEpoch);
        let err = g
            .heartbeat(
                beat("zz", 3, &Partitions::new()),
                String::new(),
                &topics(2),
                now,
                &cfg,
            )
            .unwrap_err();
        assert_eq!(err.0, ResponseError::UnknownMemberId);
        assert_eq!(g.check_member_epoch("a", a.epoch), Ok(()));
        assert_eq!(
            g.check_member_epoch("a", a.epoch - 1),
            Err(ResponseError::StaleMemberEpoch)
        );
    }

    #[test]
    fn session_expiry_frees_partitions_and_bumps_the_epoch() {
        let cfg = ConsumerConfig::default();
        let now = Instant::now();
        let mut g = ConsumerGroup::new("g");
        g.heartbeat(join("a"), String::new(), &topics(2), now, &cfg)
            .unwrap();
        let b = g
            .heartbeat(join("b"), String::new(), &topics(2), now, &cfg)
            .unwrap();
        let epoch = g.epoch;
        let later = now + cfg.session_timeout / 2;
        g.heartbeat(
            beat("b", b.epoch, &Partitions::new()),
            String::new(),
            &topics(2),
            later,
            &cfg,
        )
        .unwrap();
        assert!(g.expire(now + cfg.session_timeout, &topics(2)));
        assert!(!g.members.contains_key("a"));
        assert!(g.epoch > epoch);
        let b2 = g
            .heartbeat(
                beat("b", b.epoch, &Partitions::new()),
                String::new(),
                &topics(2),
                later,
                &cfg,
            )
            .unwrap();
        assert_eq!(assignor_count(b2.assignment.as_ref().unwrap()), 2);
    }

    #[test]
    fn a_static_member_rejoins_with_its_partitions_and_a_second_instance_is_refused() {
        let cfg = ConsumerConfig::default();
        let now = Instant::now();
        let mut g = ConsumerGroup::new("g");
        let mut first = join("a1");
        first.instance_id = Some("i".into());
        let a = g
            .heartbeat(first, String::new(), &topics(3), now, &cfg)
            .unwrap();
        let owned = a.assignment.clone().unwrap();
        let mut dup = join("a2");
        dup.instance_id = Some("i".into());
        let err = g
            .heartbeat(dup.clone(), String::new(), &topics(3), now, &cfg)
            .unwrap_err();
        assert_eq!(err.0, ResponseError::UnreleasedInstanceId);
        let mut leave = beat("a1", a.epoch, &owned);
        leave.epoch = -2;
        assert_eq!(
            g.heartbeat(leave, String::new(), &topics(3), now, &cfg)
                .unwrap()
                .epoch,
            -2
        );
        let epoch = g.epoch;
        let back = g
            .heartbeat(dup, String::new(), &topics(3), now, &cfg)
            .unwrap();
        assert_eq!(
            back.assignment,
            Some(owned),
            "the new incarnation gets its partitions"
        );
        assert!(!g.members.contains_key("a1"));
        // Same subscription: the group did not rebalance for the restart.
        assert_eq!(g.target["a2"], back.assignment.unwrap());
        assert_eq!(g.epoch, epoch);
    }

    #[test]
    fn a_regex_subscription_picks_up_a_new_topic() {
        let cfg = ConsumerConfig::default();
        let now = Instant::now();
        let mut g = ConsumerGroup::new("g");
        let mut j = join("a");
        j.names = None;
        j.regex = Some("ev-.*".into());
        let mut all = vec![TopicMeta {
            id: 1,
            name: "ev-1".into(),
            partitions: 1,
        }];
        let a = g.heartbeat(j, String::new(), &all, now, &cfg).unwrap();
        assert_eq!(
            a.assignment.clone().unwrap().keys().collect::<Vec<_>>(),
            vec![&1]
        );
        all.push(TopicMeta {
            id: 2,
            name: "ev-2".into(),
            partitions: 2,
        });
        all.push(TopicMeta {
            id: 3,
            name: "other".into(),
            partitions: 2,
        });
        let a2 = g
            .heartbeat(
                beat("a", a.epoch, &a.assignment.unwrap()),
                String::new(),
                &all,
                now,
                &cfg,
            )
            .unwrap();
        let got = a2.assignment.unwrap();
        assert_eq!(got.keys().copied().collect::<Vec<_>>(), vec![1, 2]);
        assert!(a2.epoch > a.epoch);
    }

    #[test]
    fn bad_joins_get_the_protocol_errors() {
        let cfg = ConsumerConfig::default();
        let now = Instant::now();
        let mut g = ConsumerGroup::new("g");
        let mut j = join("a");
        j.assignor = Some("sticky".into());
        assert_eq!(
            g.heartbeat(j, String::new(), &topics(1), now, &cfg)
                .unwrap_err()
                .0,
            ResponseError::UnsupportedAssignor
        );
        let mut j = join("a");
        j.regex = Some("(".into());
        assert_eq!(
            g.heartbeat(j, String::new(), &topics(1), now, &cfg)
                .unwrap_err()
                .0,
            ResponseError::InvalidRegularExpression
        );
        let mut j = join("a");
        j.names = None;
        assert_eq!(
            g.heartbeat(j, String::new(), &topics(1), now, &cfg)
                .unwrap_err()
                .0,
            ResponseError::InvalidRequest
        );
    }

    #[test]
    fn a_settling_group_is_asked_to_heartbeat_often_and_a_stable_one_at_the_interval() {
        let cfg = ConsumerConfig::default();
        let now = Instant::now();
        let mut g = ConsumerGroup::new("g");
        let a = g
            .heartbeat(join("a"), String::new(), &topics(2), now, &cfg)
            .unwrap();
        assert_eq!(g.heartbeat_interval(now, &cfg), SETTLING_HEARTBEAT);
        let later = now + SETTLING;
        g.heartbeat(
            beat("a", a.epoch, &a.assignment.unwrap()),
            String::new(),
            &topics(2),
            later,
            &cfg,
        )
        .unwrap();
        assert_eq!(g.state_name(), "Stable");
        assert_eq!(g.heartbeat_interval(later, &cfg), cfg.heartbeat_interval);
        g.heartbeat(join("b"), String::new(), &topics(2), later, &cfg)
            .unwrap();
        assert_eq!(g.heartbeat_interval(later, &cfg), SETTLING_HEARTBEAT);
    }

    #[test]
    fn stored_state_round_trips() {
        let cfg = ConsumerConfig::default();
        let now = Instant::now();
        let mut g = ConsumerGroup::new("g");
        let mut owned = BTreeMap::new();
        for id in ["a", "b"] {
            let a = g
                .heartbeat(join(id), String::new(), &topics(6), now, &cfg)
                .unwrap();
            owned.insert(id.to_string(), (a.epoch, a.assignment.unwrap_or_default()));
        }
        let stored = g.stored();
        let back = ConsumerGroup::restore("g", stored.clone(), now, &cfg);
        assert_eq!(back.stored(), stored);
        assert_eq!(back.state_name(), g.state_name());
    }
}
