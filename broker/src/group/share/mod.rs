//! Share groups (KIP-932) on the coordinator: groups in memory while they have members,
//! each with a driver task for its members' sessions, their durable state (epoch,
//! members, configs) committed to the catalog's `GroupRecord` under its own version byte
//! (3) before a heartbeat's answer goes out. The records side, what partition leaders
//! do for ShareFetch and ShareAcknowledge, is [`records`].
//!
//! Share groups share the group name space with classic and consumer groups, as in
//! Kafka: a name that is another kind of group is refused (GROUP_ID_NOT_FOUND, "not a
//! share group"), and the other coordinators refuse a share group's name.

pub mod configs;
pub mod partition;
pub mod records;
pub mod session;
pub mod state;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use kafka_protocol::error::ResponseError;
use tokio::sync::Notify;

use super::consumer::StoredKind;
use super::{GroupCoordinator, Pending, ready};
use crate::error::from_catalog;
use configs::GroupConfigs;
use partition::Limits;
use records::{PartSlots, Tp};
use session::ShareSessions;
use state::{Refusal, ShareBeat, ShareBeatAnswer, ShareConfig, ShareGroup};

/// A share group in memory.
pub struct ShareSlot {
    group: Mutex<ShareGroup>,
    wake: Notify,
}

impl ShareSlot {
    fn lock(&self) -> MutexGuard<'_, ShareGroup> {
        // A panic while holding the lock is a bug; the group state is still usable.
        self.group.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Everything of share groups a broker keeps in memory.
pub struct Shares {
    config: ShareConfig,
    groups: Mutex<HashMap<String, Arc<ShareSlot>>>,
    /// Share partitions in use here (this node leads them).
    pub partitions: PartSlots,
    /// Share sessions of the consumers fetching here.
    pub sessions: ShareSessions,
}

impl Shares {
    /// Nothing in memory yet.
    pub fn new(config: ShareConfig) -> Self {
        Self {
            config,
            groups: Mutex::new(HashMap::new()),
            partitions: PartSlots::default(),
            sessions: ShareSessions::new(10_000),
        }
    }

    /// The broker's share group settings.
    pub fn config(&self) -> &ShareConfig {
        &self.config
    }

    fn groups(&self) -> MutexGuard<'_, HashMap<String, Arc<ShareSlot>>> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn not_share(name: &str) -> Refusal {
    (
        ResponseError::GroupIdNotFound,
        format!("group {name} is not a share group"),
    )
}

impl GroupCoordinator {
    /// Whether `name` is a share group in memory (the classic and consumer
    /// coordinators refuse its name).
    pub(crate) fn share_group_in_memory(&self, name: &str) -> bool {
        self.shares
            .groups()
            .get(name)
            .is_some_and(|s| !s.lock().dead)
    }

    /// A share group in memory: loaded from the catalog or (with `create`) new. Another
    /// kind of group of that name is refused.
    async fn share_slot(
        self: &Arc<Self>,
        name: &str,
        create: bool,
    ) -> Result<Option<Arc<ShareSlot>>, Refusal> {
        if self.closed.load(Ordering::Acquire) {
            return Err((ResponseError::NotCoordinator, String::new()));
        }
        if let Some(s) = self.shares.groups().get(name) {
            return Ok(Some(s.clone()));
        }
        let record = self
            .catalog
            .groups()
            .group(name)
            .await
            .map_err(|e| (from_catalog(&e), String::new()))?;
        let topics = self.topic_metas().await.map_err(|e| (e, String::new()))?;
        // Locked in the order of the other kinds: classic, consumer, share.
        let classic = self.slots();
        let consumers = self.consumer_slots();
        if classic.contains_key(name) || consumers.contains_key(name) {
            return Err(not_share(name));
        }
        let mut groups = self.shares.groups();
        if let Some(s) = groups.get(name) {
            return Ok(Some(s.clone()));
        }
        let group = match record.map(|r| StoredKind::of(&r)).transpose() {
            Err(e) => return Err((e, String::new())),
            Ok(Some(StoredKind::Share(stored))) => {
                ShareGroup::restore(name, stored, &topics, Instant::now(), &self.shares.config)
            }
            Ok(Some(_)) => return Err(not_share(name)),
            Ok(None) if create => ShareGroup::new(name),
            Ok(None) => return Ok(None),
        };
        let slot = Arc::new(ShareSlot {
            group: Mutex::new(group),
            wake: Notify::new(),
        });
        groups.insert(name.to_string(), slot.clone());
        drop(groups);
        drop(consumers);
        drop(classic);
        self.spawn_share_driver(slot.clone());
        Ok(Some(slot))
    }

    /// Brings the share groups with members in the catalog that are coordinated here and
    /// not in memory yet into memory, so members that go on heartbeating keep their
    /// partitions and the silent ones expire (see `GroupCoordinator::restore`).
    pub(crate) async fn restore_shares(self: &Arc<Self>) -> Result<usize, ResponseError> {
        let topics = self.topic_metas().await?;
        let mut n = 0;
        for record in super::stored_groups(self.catalog.as_ref()).await? {
            if !self.holdings.coordinates(&record.name) {
                continue;
            }
            let Ok(StoredKind::Share(stored)) = StoredKind::of(&record) else {
                continue;
            };
            if stored.members.is_empty() {
                continue;
            }
            let slot = {
                let mut groups = self.shares.groups();
                if groups.contains_key(&record.name) {
                    continue;
                }
                let g = ShareGroup::restore(
                    &record.name,
                    stored,
                    &topics,
                    Instant::now(),
                    &self.shares.config,
                );
                let slot = Arc::new(ShareSlot {
                    group: Mutex::new(g),
                    wake: Notify::new(),
                });
                groups.insert(record.name.clone(), slot.clone());
                slot
            };
            self.spawn_share_driver(slot);
            n += 1;
        }
        Ok(n)
    }

    fn spawn_share_driver(self: &Arc<Self>, slot: Arc<ShareSlot>) {
        let me = self.clone();
        tokio::spawn(async move { me.drive_share(slot).await });
    }

    /// Expires members whose session ran out (giving back their records), and drops
    /// the group from memory once it has none.
    async fn drive_share(self: Arc<Self>, slot: Arc<ShareSlot>) {
        loop {
            let (deadline, dead, empty) = {
                let g = slot.lock();
                (g.next_deadline(), g.dead, g.members.is_empty())
            };
            if dead || (empty && self.evict_share(&slot)) {
                return;
            }
            match deadline {
                Some(d) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(d.into()) => {}
                        _ = slot.wake.notified() => {}
                    }
                }
                None => slot.wake.notified().await,
            }
            if self.closed.load(Ordering::Acquire) || slot.lock().dead {
                return;
            }
            let topics = match self.topic_metas().await {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!(error = ?e, "share group round: topics unreadable, retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            let (gone, persist, name, limits) = {
                let mut g = slot.lock();
                let gone = g.expire(Instant::now(), &topics);
                let limits = g.configs.limits(&self.shares.config);
                (gone, self.persist_share(&mut g), g.name.clone(), limits)
            };
            if let Some(p) = persist {
                let _ = p.await;
            }
            for member in gone {
                tracing::info!(group = %name, member = %member, "share group member's session ran out");
                self.release_member(&name, &member, limits).await;
            }
        }
    }

    fn evict_share(&self, slot: &Arc<ShareSlot>) -> bool {
        let mut groups = self.shares.groups();
        let g = slot.lock();
        if !g.members.is_empty() {
            return false;
        }
        if groups.get(&g.name).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            groups.remove(&g.name);
        }
        true
    }

    /// Commits the group's durable state if it changed; called with the group locked,
    /// so its commits reach the log in the order of its changes.
    fn persist_share(&self, g: &mut ShareGroup) -> Option<Pending<Result<(), ResponseError>>> {
        if !g.take_dirty() || g.dead {
            return None;
        }
        Some(Box::pin(self.store_state(&g.name, g.stored().encode())))
    }

    /// Gives back what a member that left holds in this node's share partitions of the
    /// group, and ends its share session.
    async fn release_member(self: &Arc<Self>, group: &str, member: &str, limits: Limits) {
        self.shares.sessions.forget_member(group, member);
        self.give_back(group, member, None, &limits).await;
    }

    /// Gives back what `member` holds in partitions its share session forgot (its
    /// assignment moved them to other members, who would otherwise wait for the locks).
    pub async fn release_forgotten(
        self: &Arc<Self>,
        group: &str,
        member: &str,
        forgotten: &[Tp],
        limits: Limits,
    ) {
        self.give_back(group, member, Some(forgotten), &limits)
            .await;
    }

    /// Gives back what `member` holds in this node's share partitions of `group` (in
    /// `only` of them, if given); when that cannot be committed, the locks run out
    /// instead.
    async fn give_back(&self, group: &str, member: &str, only: Option<&[Tp]>, limits: &Limits) {
        let released = self
            .shares
            .partitions
            .release_member(
                self.catalog.as_ref(),
                &self.holdings,
                group,
                member,
                only,
                limits,
            )
            .await;
        if let Err(e) = released {
            tracing::warn!(group, member, partitions = ?only, error = %e, "giving back a member's records failed; their locks run out instead");
        }
    }

    /// Gives back what `member` holds here when its share session closes.
    pub async fn release_at_close(self: &Arc<Self>, group: &str, member: &str, limits: Limits) {
        self.release_member(group, member, limits).await;
    }

    /// Handles a ShareGroupHeartbeat: the answer and the heartbeat interval, once what
    /// the answer says is durable.
    pub async fn share_heartbeat(
        self: &Arc<Self>,
        name: &str,
        beat: ShareBeat,
    ) -> Pending<Result<(ShareBeatAnswer, Duration), Refusal>> {
        let slot = match self.share_slot(name, beat.epoch == 0).await {
            Ok(Some(s)) => s,
            Ok(None) => {
                return ready(Err((
                    ResponseError::UnknownMemberId,
                    format!("member {} is not in group {name}", beat.member_id),
                )));
            }
            Err(e) => return ready(Err(e)),
        };
        let topics = match self.topic_metas().await {
            Ok(t) => t,
            Err(e) => return ready(Err((e, String::new()))),
        };
        let leaving = (beat.epoch == -1).then(|| beat.member_id.clone());
        let (answer, persist, limits) = {
            let mut g = slot.lock();
            if g.dead {
                return ready(Err((ResponseError::CoordinatorNotAvailable, String::new())));
            }
            let limits = g.configs.limits(&self.shares.config);
            let answer = g
                .heartbeat(beat, &topics, Instant::now(), &self.shares.config)
                .map(|a| (a, g.configs.heartbeat_interval(&self.shares.config)));
            (answer, self.persist_share(&mut g), limits)
        };
        slot.wake.notify_one();
        let me = self.clone();
        let name = name.to_string();
        Box::pin(async move {
            if let Some(p) = persist
                && let Err(e) = p.await
            {
                return Err((e, "storing the group's state failed".into()));
            }
            if let Some(member) = leaving {
                me.release_member(&name, &member, limits).await;
            }
            answer
        })
    }

    /// A share group as it is now (in memory, or as stored); `Err` GROUP_ID_NOT_FOUND
    /// for an unknown group or another kind.
    pub async fn describe_share(self: &Arc<Self>, name: &str) -> Result<ShareGroup, Refusal> {
        if let Some(s) = self.shares.groups().get(name).cloned() {
            let g = s.lock();
            if !g.dead {
                return Ok(g.clone());
            }
        }
        let record = self
            .catalog
            .groups()
            .group(name)
            .await
            .map_err(|e| (from_catalog(&e), String::new()))?;
        match record.map(|r| StoredKind::of(&r)).transpose() {
            Err(e) => Err((e, String::new())),
            Ok(Some(StoredKind::Share(stored))) => {
                let topics = self.topic_metas().await.map_err(|e| (e, String::new()))?;
                Ok(ShareGroup::restore(
                    name,
                    stored,
                    &topics,
                    Instant::now(),
                    &self.shares.config,
                ))
            }
            Ok(Some(_)) => Err(not_share(name)),
            Ok(None) => Err((
                ResponseError::GroupIdNotFound,
                format!("group {name} not found"),
            )),
        }
    }

    /// The configs of a share group (those of the broker for a group that does not
    /// exist yet); `Err` for another kind of group.
    pub async fn share_configs(self: &Arc<Self>, name: &str) -> Result<GroupConfigs, Refusal> {
        match self.describe_share(name).await {
            Ok(g) => Ok(g.configs),
            Err((ResponseError::GroupIdNotFound, m)) if m.ends_with("not found") => {
                Ok(GroupConfigs::default())
            }
            Err(e) => Err(e),
        }
    }

    /// Changes a share group's configs (creating the group, empty, if it does not exist
    /// yet, as Kafka does): each `(key, Some(value))` sets, `(key, None)` removes. All or
    /// nothing; the future completes when the change is durable.
    pub async fn alter_share_configs(
        self: &Arc<Self>,
        name: &str,
        changes: Vec<(String, Option<String>)>,
    ) -> Pending<Result<(), Refusal>> {
        let slot = match self.share_slot(name, true).await {
            Ok(Some(s)) => s,
            Ok(None) => return ready(Err((ResponseError::GroupIdNotFound, String::new()))),
            Err(e) => return ready(Err(e)),
        };
        let persist = {
            let mut g = slot.lock();
            let mut configs = g.configs.clone();
            for (k, v) in &changes {
                if let Err(m) = configs.set(k, v.as_deref()) {
                    return ready(Err((ResponseError::InvalidConfig, m)));
                }
            }
            g.configs = configs;
            g.touch();
            self.persist_share(&mut g)
        };
        slot.wake.notify_one();
        Box::pin(async move {
            if let Some(p) = persist {
                p.await.map_err(|e| (e, String::new()))?;
            }
            Ok(())
        })
    }

    /// The share groups in memory.
    pub(crate) fn share_groups_in_memory(&self) -> Vec<ShareGroup> {
        let slots: Vec<Arc<ShareSlot>> = self.shares.groups().values().cloned().collect();
        slots
            .into_iter()
            .map(|s| s.lock().clone())
            .filter(|g| !g.dead)
            .collect()
    }

    /// Marks a share group in memory deleted; its slot, to forget once the deletion is
    /// durable.
    pub(crate) fn kill_share_group(&self, name: &str) -> Option<Arc<ShareSlot>> {
        let slot = self.shares.groups().get(name).cloned()?;
        slot.lock().dead = true;
        self.shares.partitions.forget_group(name);
        Some(slot)
    }

    /// Forgets a killed share group.
    pub(crate) fn forget_share_slot(&self, slot: &Arc<ShareSlot>) {
        let mut groups = self.shares.groups();
        let g = slot.lock();
        if groups.get(&g.name).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            groups.remove(&g.name);
        }
        drop(g);
        slot.wake.notify_one();
    }

    /// Drops the share groups of brokers no longer held from memory, and every share
    /// partition (those of partitions still led here are loaded again on their next
    /// use); returns how many groups.
    pub(crate) fn drop_unheld_share_groups(&self) -> usize {
        self.shares.partitions.forget_all();
        let lost = self.take_unheld(&mut self.shares.groups());
        for slot in &lost {
            slot.lock().dead = true;
            slot.wake.notify_one();
        }
        lost.len()
    }

    /// Wakes every share group's driver (the server is stopping).
    pub(crate) fn close_shares(&self) {
        let slots: Vec<Arc<ShareSlot>> = self.shares.groups().values().cloned().collect();
        for slot in slots {
            slot.wake.notify_one();
        }
    }
}

impl GroupCoordinator {
    /// The start offset of each share partition of `name` that has one (DescribeShare-
    /// GroupOffsets); `Err` for an unknown group or another kind.
    pub async fn share_offsets(self: &Arc<Self>, name: &str) -> Result<Vec<(Tp, u64)>, Refusal> {
        self.describe_share(name).await?;
        self.shares
            .partitions
            .start_offsets(self.catalog.as_ref(), name)
            .await
            .map_err(|e| (e, String::new()))
    }

    /// Sets share partitions' start offsets, or (`None`) deletes their state, of an empty
    /// share group (AlterShareGroupOffsets, DeleteShareGroupOffsets), in one transaction;
    /// records in flight are forgotten. `NON_EMPTY_GROUP` while the group has members.
    pub async fn reset_share_offsets(
        self: &Arc<Self>,
        name: &str,
        changes: Vec<(Tp, Option<u64>)>,
    ) -> Result<(), Refusal> {
        let g = self.describe_share(name).await?;
        if !g.members.is_empty() {
            return Err((
                ResponseError::NonEmptyGroup,
                format!("share group {name} has members"),
            ));
        }
        let ops: Vec<catalog::Op> = changes
            .into_iter()
            .map(|((topic_id, partition), offset)| {
                catalog::Op::Group(match offset {
                    Some(o) => catalog::GroupOp::PutShareState {
                        group: name.to_string(),
                        topic_id,
                        partition,
                        state: catalog::ShareStateRecord {
                            state: partition::SharePartition::new(o).stored().encode(),
                        },
                    },
                    None => catalog::GroupOp::DeleteShareState {
                        group: name.to_string(),
                        topic_id,
                        partition,
                    },
                })
            })
            .collect();
        let commit = crate::context::commit_under(
            self.catalog.as_ref(),
            ops,
            self.holdings.under_coordinator(name),
        );
        self.shares.partitions.forget_group(name);
        match commit.await {
            Some(e) => Err((e, String::new())),
            None => Ok(()),
        }
    }

    /// The share partitions of `name` with a stored state.
    pub async fn share_partitions(self: &Arc<Self>, name: &str) -> Result<Vec<Tp>, Refusal> {
        Ok(self
            .catalog
            .groups()
            .share_states(name)
            .await
            .map_err(|e| (from_catalog(&e), String::new()))?
            .into_iter()
            .map(|(t, p, _)| (t, p))
            .collect())
    }
}
