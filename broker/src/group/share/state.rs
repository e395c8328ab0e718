//! A share group's membership (KIP-932), without I/O: members join, heartbeat and leave
//! with ShareGroupHeartbeat, the group epoch moves with every change of membership,
//! subscription or subscribed topics' partitions, and every subscribed partition is
//! assigned to at least one member. Unlike a consumer group there is nothing to revoke:
//! members of a share group may share partitions (records, not partitions, are what a
//! member holds), so a member simply takes its new assignment at the group's epoch.
//! The group's dynamic configs (`share.*`) live here too, stored with the group.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kafka_protocol::error::ResponseError;
use serde::{Deserialize, Serialize};

use super::configs::GroupConfigs;
use crate::group::consumer::assignor::Partitions;
use crate::group::consumer::state::TopicMeta;

/// An error and its message.
pub type Refusal = (ResponseError, String);

/// Share group settings of the broker (Kafka's broker settings of the same names).
#[derive(Debug, Clone)]
pub struct ShareConfig {
    /// `group.share.session.timeout.ms`.
    pub session_timeout: Duration,
    /// `group.share.heartbeat.interval.ms`.
    pub heartbeat_interval: Duration,
    /// `group.share.record.lock.duration.ms`.
    pub lock_duration: Duration,
    /// `group.share.delivery.count.limit`.
    pub delivery_limit: u16,
    /// `group.share.partition.max.record.locks`.
    pub max_in_flight: u64,
    /// `group.share.max.size`.
    pub max_size: usize,
}

impl Default for ShareConfig {
    fn default() -> Self {
        Self {
            session_timeout: Duration::from_millis(45_000),
            heartbeat_interval: Duration::from_millis(5_000),
            lock_duration: Duration::from_millis(30_000),
            delivery_limit: 5,
            max_in_flight: 2_000,
            max_size: 200,
        }
    }
}

/// A member of a share group.
#[derive(Debug, Clone)]
pub struct ShareMember {
    /// Member id (chosen by the client).
    pub id: String,
    /// `client.rack`.
    pub rack_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client address.
    pub client_host: String,
    /// Subscribed topic names.
    pub names: BTreeSet<String>,
    /// The group epoch whose assignment the member was last given.
    pub epoch: i32,
    /// Its partitions at that epoch.
    pub assignment: Partitions,
    session_deadline: Instant,
}

/// A heartbeat, as the state machine needs it.
#[derive(Debug, Clone, Default)]
pub struct ShareBeat {
    /// Member id.
    pub member_id: String,
    /// 0 joins, -1 leaves, else the member's epoch.
    pub epoch: i32,
    /// `client.rack`.
    pub rack_id: Option<String>,
    /// Subscribed topic names; `None` when unchanged.
    pub names: Option<Vec<String>>,
    /// Client id.
    pub client_id: String,
    /// Client address.
    pub client_host: String,
}

/// What a heartbeat answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareBeatAnswer {
    /// The member's id.
    pub member_id: String,
    /// Its epoch (-1 after leaving).
    pub epoch: i32,
    /// Its partitions, when they are new to it.
    pub assignment: Option<Partitions>,
}

/// A share group.
#[derive(Debug, Clone)]
pub struct ShareGroup {
    /// Group id.
    pub name: String,
    /// Group epoch.
    pub epoch: i32,
    /// Members by id.
    pub members: BTreeMap<String, ShareMember>,
    /// The subscribed topics at the group epoch.
    pub topics: Vec<TopicMeta>,
    /// Dynamic configs set on the group.
    pub configs: GroupConfigs,
    dirty: bool,
    /// Deleted: requests that still hold it must not use it.
    pub dead: bool,
}

impl ShareGroup {
    /// An empty group.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            epoch: 0,
            members: BTreeMap::new(),
            topics: Vec::new(),
            configs: GroupConfigs::default(),
            dirty: true,
            dead: false,
        }
    }

    /// `Empty`, `Stable`, or `Dead`, as ShareGroupDescribe and ListGroups say.
    pub fn state_name(&self) -> &'static str {
        if self.dead {
            "Dead"
        } else if self.members.is_empty() {
            "Empty"
        } else {
            "Stable"
        }
    }

    /// Whether the durable state changed since the last call.
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Marks the durable state changed (a config set).
    pub fn touch(&mut self) {
        self.dirty = true;
    }

    /// Handles a heartbeat at `now` with the catalog's `topics`.
    pub fn heartbeat(
        &mut self,
        beat: ShareBeat,
        topics: &[TopicMeta],
        now: Instant,
        cfg: &ShareConfig,
    ) -> Result<ShareBeatAnswer, Refusal> {
        let session = self.configs.session_timeout(cfg);
        match beat.epoch {
            -1 => {
                if self.members.remove(&beat.member_id).is_some() {
                    self.bump(topics);
                }
                return Ok(ShareBeatAnswer {
                    member_id: beat.member_id,
                    epoch: -1,
                    assignment: None,
                });
            }
            0 => {
                if !self.members.contains_key(&beat.member_id) {
                    if self.members.len() >= cfg.max_size {
                        return Err((
                            ResponseError::GroupMaxSizeReached,
                            format!("share group {} has {} members", self.name, cfg.max_size),
                        ));
                    }
                    let Some(names) = &beat.names else {
                        return Err((
                            ResponseError::InvalidRequest,
                            "SubscribedTopicNames must be set in first request".into(),
                        ));
                    };
                    self.members.insert(
                        beat.member_id.clone(),
                        ShareMember {
                            id: beat.member_id.clone(),
                            rack_id: beat.rack_id.clone(),
                            client_id: beat.client_id.clone(),
                            client_host: beat.client_host.clone(),
                            names: names.iter().cloned().collect(),
                            epoch: 0,
                            assignment: Partitions::new(),
                            session_deadline: now + session,
                        },
                    );
                    self.bump(topics);
                }
            }
            e if e < 0 => {
                return Err((
                    ResponseError::InvalidRequest,
                    format!("MemberEpoch {e} is invalid"),
                ));
            }
            e => {
                let Some(m) = self.members.get(&beat.member_id) else {
                    return Err((
                        ResponseError::UnknownMemberId,
                        format!("member {} is not in group {}", beat.member_id, self.name),
                    ));
                };
                if e > m.epoch {
                    return Err((
                        ResponseError::FencedMemberEpoch,
                        format!("member epoch {e} is ahead of {}", m.epoch),
                    ));
                }
            }
        }
        let mut changed = false;
        if let Some(m) = self.members.get_mut(&beat.member_id) {
            m.session_deadline = now + session;
            if let Some(names) = &beat.names {
                let names: BTreeSet<String> = names.iter().cloned().collect();
                if names != m.names {
                    m.names = names;
                    changed = true;
                }
            }
            if beat.rack_id.is_some() && beat.rack_id != m.rack_id {
                m.rack_id = beat.rack_id.clone();
            }
        }
        if changed || self.subscribed(topics) != self.topics {
            self.bump(topics);
        }
        let epoch = self.epoch;
        let m = self
            .members
            .get_mut(&beat.member_id)
            .ok_or((ResponseError::UnknownMemberId, String::new()))?;
        let assignment = (m.epoch != epoch || beat.epoch == 0).then(|| m.assignment.clone());
        m.epoch = epoch;
        Ok(ShareBeatAnswer {
            member_id: m.id.clone(),
            epoch,
            assignment,
        })
    }

    /// The catalog's topics that some member subscribes to, by id.
    fn subscribed(&self, topics: &[TopicMeta]) -> Vec<TopicMeta> {
        let names: BTreeSet<&str> = self
            .members
            .values()
            .flat_map(|m| m.names.iter().map(String::as_str))
            .collect();
        let mut out: Vec<TopicMeta> = topics
            .iter()
            .filter(|t| names.contains(t.name.as_str()))
            .cloned()
            .collect();
        out.sort_by_key(|t| t.id);
        out
    }

    /// A new group epoch and its assignment.
    fn bump(&mut self, topics: &[TopicMeta]) {
        self.epoch += 1;
        self.topics = self.subscribed(topics);
        self.assign();
        self.dirty = true;
    }

    /// Spreads each subscribed topic's partitions over the members that subscribe to
    /// it: with fewer members than partitions each partition goes to one member, with
    /// more each member gets one partition, so every partition has a member and every
    /// member a partition.
    fn assign(&mut self) {
        for m in self.members.values_mut() {
            m.assignment = Partitions::new();
        }
        for t in &self.topics {
            let ids: Vec<String> = self
                .members
                .values()
                .filter(|m| m.names.contains(&t.name))
                .map(|m| m.id.clone())
                .collect();
            let (n, p) = (ids.len(), t.partitions as usize);
            if n == 0 || p == 0 {
                continue;
            }
            for (i, id) in ids.iter().enumerate() {
                let parts: BTreeSet<u32> = if n <= p {
                    (0..p).filter(|k| k % n == i).map(|k| k as u32).collect()
                } else {
                    BTreeSet::from([(i % p) as u32])
                };
                if let Some(m) = self.members.get_mut(id) {
                    m.assignment.insert(t.id, parts);
                }
            }
        }
    }

    /// Removes the members whose session ran out by `now`; their ids.
    pub fn expire(&mut self, now: Instant, topics: &[TopicMeta]) -> Vec<String> {
        let gone: Vec<String> = self
            .members
            .values()
            .filter(|m| m.session_deadline <= now)
            .map(|m| m.id.clone())
            .collect();
        for id in &gone {
            self.members.remove(id);
        }
        if !gone.is_empty() {
            self.bump(topics);
        }
        gone
    }

    /// When the next member's session runs out.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.members.values().map(|m| m.session_deadline).min()
    }

    /// The durable form.
    pub fn stored(&self) -> StoredShareGroup {
        StoredShareGroup {
            epoch: self.epoch,
            configs: self.configs.stored(),
            members: self
                .members
                .values()
                .map(|m| StoredShareMember {
                    id: m.id.clone(),
                    rack_id: m.rack_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    names: m.names.iter().cloned().collect(),
                })
                .collect(),
        }
    }

    /// From the durable form at `now` (members' sessions start over) with the catalog's
    /// `topics`: the same members and topics give the same assignment at the same epoch,
    /// so members heartbeating through a restart keep their partitions.
    pub fn restore(
        name: &str,
        stored: StoredShareGroup,
        topics: &[TopicMeta],
        now: Instant,
        cfg: &ShareConfig,
    ) -> Self {
        let mut g = Self::new(name);
        g.dirty = false;
        g.epoch = stored.epoch;
        g.configs = GroupConfigs::restore(stored.configs);
        let session = g.configs.session_timeout(cfg);
        for m in stored.members {
            g.members.insert(
                m.id.clone(),
                ShareMember {
                    id: m.id,
                    rack_id: m.rack_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    names: m.names.into_iter().collect(),
                    epoch: stored.epoch,
                    assignment: Partitions::new(),
                    session_deadline: now + session,
                },
            );
        }
        g.topics = g.subscribed(topics);
        g.assign();
        g
    }
}

/// Format version of a stored share group, the first byte of `GroupRecord::state`
/// (1 is the classic group's, 2 the consumer group's).
pub const VERSION: u8 = 3;

/// A share group as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredShareGroup {
    /// Group epoch.
    pub epoch: i32,
    /// Dynamic configs set on the group: name, value.
    pub configs: Vec<(String, String)>,
    /// Members.
    pub members: Vec<StoredShareMember>,
}

/// A member as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredShareMember {
    /// Member id.
    pub id: String,
    /// `client.rack`.
    pub rack_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client address.
    pub client_host: String,
    /// Subscribed topic names.
    pub names: Vec<String>,
}

impl StoredShareGroup {
    /// Encodes for `GroupRecord::state`.
    pub fn encode(&self) -> Vec<u8> {
        crate::group::durable::encode_versioned(VERSION, self)
    }

    /// Decodes `GroupRecord::state`; `None` for another format.
    pub fn decode(state: &[u8]) -> Option<Self> {
        crate::group::durable::decode_versioned(VERSION, state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topics() -> Vec<TopicMeta> {
        vec![TopicMeta {
            id: 7,
            name: "t".into(),
            partitions: 2,
        }]
    }

    fn join(id: &str) -> ShareBeat {
        ShareBeat {
            member_id: id.into(),
            epoch: 0,
            names: Some(vec!["t".into()]),
            ..Default::default()
        }
    }

    #[test]
    fn more_members_than_partitions_all_get_one() {
        let cfg = ShareConfig::default();
        let now = Instant::now();
        let mut g = ShareGroup::new("g");
        for id in ["a", "b", "c", "d"] {
            let a = g.heartbeat(join(id), &topics(), now, &cfg).unwrap();
            assert!(a.assignment.is_some());
        }
        assert_eq!(g.epoch, 4);
        let mut counts = [0; 2];
        for m in g.members.values() {
            let parts = &m.assignment[&7];
            assert_eq!(parts.len(), 1);
            counts[*parts.iter().next().unwrap() as usize] += 1;
        }
        assert_eq!(counts, [2, 2]);
        // A member behind the group epoch gets its new assignment.
        let a = g
            .heartbeat(
                ShareBeat {
                    member_id: "a".into(),
                    epoch: 1,
                    ..Default::default()
                },
                &topics(),
                now,
                &cfg,
            )
            .unwrap();
        assert_eq!((a.epoch, a.assignment.is_some()), (4, true));
        let again = g
            .heartbeat(
                ShareBeat {
                    member_id: "a".into(),
                    epoch: 4,
                    ..Default::default()
                },
                &topics(),
                now,
                &cfg,
            )
            .unwrap();
        assert_eq!(again.assignment, None);
    }

    #[test]
    fn unknown_fenced_and_expired_members() {
        let cfg = ShareConfig::default();
        let now = Instant::now();
        let mut g = ShareGroup::new("g");
        g.heartbeat(join("a"), &topics(), now, &cfg).unwrap();
        let beat = |id: &str, epoch| ShareBeat {
            member_id: id.into(),
            epoch,
            ..Default::default()
        };
        assert_eq!(
            g.heartbeat(beat("x", 1), &topics(), now, &cfg)
                .unwrap_err()
                .0,
            ResponseError::UnknownMemberId
        );
        assert_eq!(
            g.heartbeat(beat("a", 9), &topics(), now, &cfg)
                .unwrap_err()
                .0,
            ResponseError::FencedMemberEpoch
        );
        let gone = g.expire(now + cfg.session_timeout, &topics());
        assert_eq!(gone, vec!["a".to_string()]);
        assert_eq!(g.state_name(), "Empty");
    }

    #[test]
    fn a_restored_group_assigns_the_same() {
        let cfg = ShareConfig::default();
        let now = Instant::now();
        let mut g = ShareGroup::new("g");
        g.heartbeat(join("a"), &topics(), now, &cfg).unwrap();
        g.heartbeat(join("b"), &topics(), now, &cfg).unwrap();
        let stored = g.stored();
        let bytes = stored.encode();
        assert_eq!(bytes[0], 3);
        let back = StoredShareGroup::decode(&bytes).unwrap();
        assert_eq!(back, stored);
        let r = ShareGroup::restore("g", back, &topics(), now, &cfg);
        assert_eq!(r.epoch, g.epoch);
        for (id, m) in &g.members {
            assert_eq!(r.members[id].assignment, m.assignment);
        }
    }
}
