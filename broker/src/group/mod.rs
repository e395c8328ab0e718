//! The group coordinator for the classic consumer group protocol. Each group's state
//! machine ([`state::Group`]) lives in memory while it has members; its durable part
//! (generation, members, assignments) and the committed offsets go through catalog
//! transactions. Groups with no members are only in the catalog, so memory grows with
//! active members, not with the number of groups ever seen.
//!
//! Every group in memory has one driver task that sleeps until the group's next
//! deadline (a session, the end of a join phase, a missing assignment) or until a
//! request changes it, and evicts the group when nothing is left to wait for.

pub mod consumer;
pub mod durable;
pub mod lag;
pub mod member;
pub mod share;
pub mod state;

use catalog::GroupOp;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use catalog::{Catalog, GroupRecord, Op, Transaction};
use kafka_protocol::error::ResponseError;
use tokio::sync::Notify;

use crate::Holdings;
use crate::error::from_catalog;
use crate::metrics::BrokerMetrics;
use consumer::{ConsumerSlots, StoredKind};
use member::{JoinAnswer, JoinRequest, SyncResult};
use state::{Group, GroupConfig, Joined, Phase, Synced};

/// A future answer.
pub type Pending<T> = Pin<Box<dyn Future<Output = T> + Send>>;

struct Slot {
    group: Mutex<Group>,
    wake: Notify,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, Group> {
        // A panic while holding the lock is a bug; the group state is still usable.
        self.group.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A group as DescribeGroups and ListGroups show it.
#[derive(Debug, Clone)]
pub struct GroupView {
    /// Group id.
    pub name: String,
    /// State name.
    pub state: &'static str,
    /// Protocol type ("" for a group with only committed offsets).
    pub protocol_type: String,
    /// Selected protocol, when stable.
    pub protocol_name: String,
    /// Members: id, instance id, client id, host, metadata, assignment (classic groups).
    pub members: Vec<MemberView>,
    /// `classic` or `consumer` (KIP-848), as ListGroups v5 reports it.
    pub group_type: &'static str,
}

/// A member as DescribeGroups shows it.
#[derive(Debug, Clone)]
pub struct MemberView {
    /// Member id.
    pub member_id: String,
    /// `group.instance.id`.
    pub instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client address.
    pub client_host: String,
    /// Metadata for the selected protocol.
    pub metadata: bytes::Bytes,
    /// Assignment.
    pub assignment: bytes::Bytes,
}

/// What an offset commit may do to a group.
#[derive(Debug, PartialEq, Eq)]
pub enum CommitCheck {
    /// A member of the current generation, or a group without members that exists.
    Allowed,
    /// A group that does not exist yet: the commit creates it (empty).
    CreatesGroup,
}

/// The coordinator of every group this broker's addresses coordinate.
pub struct GroupCoordinator {
    catalog: Arc<dyn Catalog>,
    config: GroupConfig,
    metrics: BrokerMetrics,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    consumer_slots: Mutex<ConsumerSlots>,
    /// Share groups (KIP-932), their partitions and sessions.
    pub shares: share::Shares,
    closed: AtomicBool,
    holdings: Holdings,
}

impl GroupCoordinator {
    /// A coordinator over `catalog` of the groups of the brokers `holdings` holds.
    pub fn new(
        catalog: Arc<dyn Catalog>,
        config: GroupConfig,
        metrics: BrokerMetrics,
        holdings: Holdings,
    ) -> Self {
        Self {
            shares: share::Shares::new(config.share.clone()),
            catalog,
            config,
            metrics,
            slots: Mutex::new(HashMap::new()),
            consumer_slots: Mutex::new(ConsumerSlots::new()),
            closed: AtomicBool::new(false),
            holdings,
        }
    }

    /// The settings.
    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    fn slots(&self) -> MutexGuard<'_, HashMap<String, Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Brings the groups (of both protocols) that have members in the catalog, are
    /// coordinated here and are not in memory yet into memory, so their members can go
    /// on heartbeating and the silent ones expire: at start, and on a cluster node for
    /// the groups of brokers it took over.
    pub async fn restore(self: &Arc<Self>) -> Result<usize, ResponseError> {
        let now = Instant::now();
        let mut n = self.restore_consumers().await? + self.restore_shares().await?;
        for record in stored_groups(self.catalog.as_ref()).await? {
            if !self.holdings.coordinates(&record.name) {
                continue;
            }
            let Ok(StoredKind::Classic(stored)) = StoredKind::of(&record) else {
                continue;
            };
            if stored.members.is_empty() {
                continue;
            }
            let slot = {
                let mut slots = self.slots();
                if slots.contains_key(&record.name) || self.consumer_group_in_use(&record.name) {
                    continue;
                }
                let slot = Arc::new(Slot {
                    group: Mutex::new(Group::restore(&record.name, stored, now)),
                    wake: Notify::new(),
                });
                slots.insert(record.name.clone(), slot.clone());
                slot
            };
            self.spawn_driver(slot);
            n += 1;
        }
        self.update_gauges();
        Ok(n)
    }

    /// Follows a change of the brokers held (a cluster node's leases): the groups of
    /// brokers no longer held leave memory without a write (their waiting members are
    /// told `NOT_COORDINATOR` and find the new coordinator), and the groups of brokers
    /// taken over come in from the catalog.
    pub async fn hand_over(self: &Arc<Self>) {
        let lost = self.take_unheld(&mut self.slots());
        for slot in &lost {
            slot.lock().close();
            slot.wake.notify_one();
        }
        let dropped =
            lost.len() + self.drop_unheld_consumer_groups() + self.drop_unheld_share_groups();
        if dropped > 0 {
            tracing::info!(
                groups = dropped,
                "groups of brokers no longer held left memory"
            );
        }
        match self.restore().await {
            Ok(n) if n > 0 => tracing::info!(groups = n, "took over groups with members"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "taking over groups failed"),
        }
        self.update_gauges();
    }

    /// Takes the groups of brokers no longer held out of `slots` (either protocol's).
    fn take_unheld<S>(&self, slots: &mut HashMap<String, Arc<S>>) -> Vec<Arc<S>> {
        let names: Vec<String> = slots
            .keys()
            .filter(|n| !self.holdings.coordinates(n))
            .cloned()
            .collect();
        names.iter().filter_map(|n| slots.remove(n)).collect()
    }

    /// A group in memory, loaded from the catalog or (with `create`) new.
    async fn slot(
        self: &Arc<Self>,
        name: &str,
        create: bool,
    ) -> Result<Option<Arc<Slot>>, ResponseError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(ResponseError::NotCoordinator);
        }
        if let Some(s) = self.slots().get(name) {
            return Ok(Some(s.clone()));
        }
        // Read before the maps are locked (a catalog read may wait on the network); a
        // group that another request brought into memory meanwhile wins.
        let record = self
            .catalog
            .groups()
            .group(name)
            .await
            .map_err(|e| from_catalog(&e))?;
        let mut slots = self.slots();
        if let Some(s) = slots.get(name) {
            return Ok(Some(s.clone()));
        }
        if self.consumer_group_in_use(name) || self.share_group_in_memory(name) {
            return Err(ResponseError::InconsistentGroupProtocol);
        }
        let group = match record.map(|r| StoredKind::of(&r)).transpose()? {
            Some(StoredKind::Share(_)) => return Err(ResponseError::InconsistentGroupProtocol),
            Some(StoredKind::Classic(stored)) => Group::restore(name, stored, Instant::now()),
            Some(StoredKind::Consumer(stored)) if !stored.members.is_empty() => {
                return Err(ResponseError::InconsistentGroupProtocol);
            }
            // An empty consumer group becomes a classic group, keeping its offsets.
            Some(StoredKind::Consumer(_)) | None if create => {
                self.forget_idle_consumer_group(name);
                Group::new(name)
            }
            _ => return Ok(None),
        };
        let slot = Arc::new(Slot {
            group: Mutex::new(group),
            wake: Notify::new(),
        });
        slots.insert(name.to_string(), slot.clone());
        drop(slots);
        self.spawn_driver(slot.clone());
        self.update_gauges();
        Ok(Some(slot))
    }

    fn spawn_driver(self: &Arc<Self>, slot: Arc<Slot>) {
        let me = self.clone();
        tokio::spawn(async move { me.drive(slot).await });
    }

    async fn drive(self: Arc<Self>, slot: Arc<Slot>) {
        loop {
            let (deadline, idle) = {
                let g = slot.lock();
                (g.next_deadline(), g.is_idle())
            };
            if idle && self.evict(&slot) {
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
            if self.closed.load(Ordering::Acquire) || !self.in_memory(&slot) {
                return;
            }
            let persist = {
                let mut g = slot.lock();
                let before = g.generation;
                g.expire(Instant::now());
                if g.generation != before {
                    self.metrics.rebalances.inc();
                }
                self.persist(&slot, &mut g)
            };
            if let Some(p) = persist {
                tokio::spawn(p);
            }
        }
    }

    /// Whether `slot` is still the group's slot in memory (not handed over, evicted or
    /// replaced by a consumer group).
    fn in_memory(&self, slot: &Arc<Slot>) -> bool {
        let name = slot.lock().name.clone();
        self.slots()
            .get(&name)
            .is_some_and(|s| Arc::ptr_eq(s, slot))
    }

    /// Drops an idle group from memory (its state is in the catalog).
    fn evict(&self, slot: &Arc<Slot>) -> bool {
        let mut slots = self.slots();
        let g = slot.lock();
        if !g.is_idle() {
            return false;
        }
        if slots.get(&g.name).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            slots.remove(&g.name);
        }
        drop(g);
        drop(slots);
        self.update_gauges();
        true
    }

    fn update_gauges(&self) {
        let slots = self.slots();
        self.metrics.groups_in_memory.set(slots.len() as i64);
    }

    /// Commits the group's durable state if it changed. Called with the group locked,
    /// so commits of one group reach the log in the order its changes were made; the
    /// returned future completes when the state is durable.
    fn persist(
        &self,
        slot: &Arc<Slot>,
        g: &mut Group,
    ) -> Option<Pending<Result<(), ResponseError>>> {
        if !g.take_dirty() {
            return None;
        }
        g.persisting += 1;
        let store = self.store_state(&g.name, g.stored().encode());
        let slot = slot.clone();
        Some(Box::pin(async move {
            let result = store.await;
            slot.lock().persisting -= 1;
            slot.wake.notify_one();
            result
        }))
    }

    /// Commits a group's encoded state (either protocol's); logs a failure.
    fn store_state(
        &self,
        name: &str,
        state: Vec<u8>,
    ) -> impl Future<Output = Result<(), ResponseError>> + Send + use<> {
        let record = GroupRecord {
            name: name.to_string(),
            state,
        };
        // Under the coordinator's lease: a node that lost it cannot overwrite what the
        // group's new coordinator stores.
        let leases = self.holdings.under_coordinator(name);
        let commit = self
            .catalog
            .commit(Transaction::new(vec![Op::Group(GroupOp::PutGroup(record))]).under(leases));
        async move {
            let result = commit.await.map(|_| ()).map_err(|e| from_catalog(&e));
            if let Err(e) = &result {
                tracing::warn!(error = %e, "storing a group's state failed");
            }
            result
        }
    }

    /// Handles a JoinGroup.
    pub async fn join(self: &Arc<Self>, name: &str, req: JoinRequest) -> Pending<JoinAnswer> {
        let slot = match self.slot(name, true).await {
            Ok(Some(s)) => s,
            Ok(None) => return unreachable_join(&req),
            Err(e) => return ready(JoinAnswer::refused(e, &req.member_id)),
        };
        let (joined, persist) = {
            let mut g = slot.lock();
            let new_id = format!(
                "{}-{}",
                if req.client_id.is_empty() {
                    "member"
                } else {
                    &req.client_id
                },
                uuid::Uuid::new_v4()
            );
            let before = g.generation;
            let joined = g.join(req, new_id, Instant::now(), &self.config);
            if g.generation != before {
                self.metrics.rebalances.inc();
            }
            (joined, self.persist(&slot, &mut g))
        };
        slot.wake.notify_one();
        Box::pin(async move {
            let persisted = match persist {
                Some(p) => p.await,
                None => Ok(()),
            };
            match joined {
                Joined::Now(answer) => match persisted {
                    Err(e) if answer.error.is_none() => JoinAnswer::refused(e, &answer.member_id),
                    _ => answer,
                },
                Joined::Wait(rx) => rx
                    .await
                    .unwrap_or_else(|_| JoinAnswer::refused(ResponseError::NotCoordinator, "")),
            }
        })
    }

    /// Handles a SyncGroup.
    #[allow(clippy::too_many_arguments)]
    pub async fn sync(
        self: &Arc<Self>,
        name: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        assignments: Vec<(String, bytes::Bytes)>,
    ) -> Pending<SyncResult> {
        let slot = match self.slot(name, false).await {
            Ok(Some(s)) => s,
            Ok(None) => return ready(Err(ResponseError::UnknownMemberId)),
            Err(e) => return ready(Err(e)),
        };
        let (synced, persist, generation) = {
            let mut g = slot.lock();
            let synced = g.sync(
                member_id,
                instance_id,
                generation,
                protocol_type,
                protocol_name,
                assignments,
                Instant::now(),
            );
            (synced, self.persist(&slot, &mut g), g.generation)
        };
        slot.wake.notify_one();
        Box::pin(async move {
            if let Some(p) = persist {
                // The leader's assignment: members get it once it is durable.
                let result = p.await;
                slot.lock().assigned(generation, result, Instant::now());
                slot.wake.notify_one();
            }
            match synced {
                Synced::Now(r) => r,
                Synced::Wait(rx) => rx.await.unwrap_or(Err(ResponseError::RebalanceInProgress)),
            }
        })
    }

    /// Handles a Heartbeat.
    pub async fn heartbeat(
        self: &Arc<Self>,
        name: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> Result<(), ResponseError> {
        let slot = self
            .slot(name, false)
            .await?
            .ok_or(ResponseError::UnknownMemberId)?;
        slot.lock()
            .heartbeat(member_id, instance_id, generation, Instant::now())
    }

    /// Handles a LeaveGroup: one result per member, answered once the group's new
    /// state is durable.
    pub async fn leave(
        self: &Arc<Self>,
        name: &str,
        members: Vec<(String, Option<String>)>,
    ) -> Pending<Result<Vec<Result<(), ResponseError>>, ResponseError>> {
        let slot = match self.slot(name, false).await {
            Ok(Some(s)) => s,
            Ok(None) => return ready(Err(ResponseError::UnknownMemberId)),
            Err(e) => return ready(Err(e)),
        };
        let (results, persist) = {
            let mut g = slot.lock();
            let now = Instant::now();
            let results: Vec<_> = members
                .iter()
                .map(|(id, instance)| g.leave(id, instance.as_deref(), now))
                .collect();
            (results, self.persist(&slot, &mut g))
        };
        slot.wake.notify_one();
        Box::pin(async move {
            if let Some(p) = persist {
                p.await?;
            }
            Ok(results)
        })
    }

    /// Checks an offset commit against the group: a member of the current generation,
    /// or (generation < 0) a group with no members.
    pub async fn check_commit(
        self: &Arc<Self>,
        name: &str,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Result<CommitCheck, ResponseError> {
        if let Some(g) = self.consumer_group(name).await? {
            // Consumer-protocol members commit with their member epoch; a standalone
            // commit needs a group without members.
            if generation < 0 && member_id.is_empty() {
                return if g.members.is_empty() {
                    Ok(CommitCheck::Allowed)
                } else {
                    Err(ResponseError::UnknownMemberId)
                };
            }
            return g
                .check_member_epoch(member_id, generation)
                .map(|_| CommitCheck::Allowed);
        }
        let in_memory = self.slots().get(name).cloned();
        let Some(slot) = in_memory else {
            let exists = self
                .catalog
                .groups()
                .group(name)
                .await
                .map_err(|e| from_catalog(&e))?
                .is_some();
            return match (exists, generation < 0) {
                (true, true) => Ok(CommitCheck::Allowed),
                (false, true) => Ok(CommitCheck::CreatesGroup),
                (true, false) => Err(ResponseError::UnknownMemberId),
                (false, false) => Err(ResponseError::IllegalGeneration),
            };
        };
        let g = slot.lock();
        match g.phase {
            Phase::Dead => return Err(ResponseError::CoordinatorNotAvailable),
            Phase::Empty if generation < 0 => return Ok(CommitCheck::Allowed),
            _ => {}
        }
        if generation < 0 && member_id.is_empty() {
            // A standalone commit into a group that has members.
            return Err(ResponseError::UnknownMemberId);
        }
        g.check_member(member_id, instance_id)?;
        if g.phase == Phase::CompletingRebalance {
            return Err(ResponseError::RebalanceInProgress);
        }
        if generation != g.generation {
            return Err(ResponseError::IllegalGeneration);
        }
        Ok(CommitCheck::Allowed)
    }

    /// A group's view; `None` when it does not exist.
    pub async fn describe(
        self: &Arc<Self>,
        name: &str,
    ) -> Result<Option<GroupView>, ResponseError> {
        if let Some(slot) = self.slots().get(name).cloned() {
            return Ok(Some(view(&slot.lock())));
        }
        if self.consumer_slots().contains_key(name) || self.share_group_in_memory(name) {
            return Err(ResponseError::GroupIdNotFound);
        }
        match self
            .catalog
            .groups()
            .group(name)
            .await
            .map_err(|e| from_catalog(&e))?
        {
            Some(record) => match StoredKind::of(&record)? {
                StoredKind::Classic(stored) => {
                    Ok(Some(view(&Group::restore(name, stored, Instant::now()))))
                }
                // Kafka's DescribeGroups answers only for classic groups.
                StoredKind::Consumer(_) | StoredKind::Share(_) => {
                    Err(ResponseError::GroupIdNotFound)
                }
            },
            None => Ok(None),
        }
    }

    /// Every group coordinated by `node` (of `brokers`), with its state.
    pub async fn list(
        self: &Arc<Self>,
        coordinates: impl Fn(&str) -> bool,
    ) -> Result<Vec<GroupView>, ResponseError> {
        let mut out: HashMap<String, GroupView> = HashMap::new();
        for record in stored_groups(self.catalog.as_ref()).await? {
            if !coordinates(&record.name) {
                continue;
            }
            let v = match StoredKind::of(&record)? {
                StoredKind::Classic(stored) => {
                    view(&Group::restore(&record.name, stored, Instant::now()))
                }
                StoredKind::Consumer(stored) => {
                    consumer_view(&consumer::state::ConsumerGroup::restore(
                        &record.name,
                        stored,
                        Instant::now(),
                        &self.config.consumer,
                    ))
                }
                StoredKind::Share(stored) => share_view(&share::state::ShareGroup::restore(
                    &record.name,
                    stored,
                    &[],
                    Instant::now(),
                    &self.config.share,
                )),
            };
            out.insert(record.name.clone(), v);
        }
        let in_memory: Vec<Arc<Slot>> = self.slots().values().cloned().collect();
        for slot in in_memory {
            let g = slot.lock();
            if coordinates(&g.name) && g.phase != Phase::Dead {
                out.insert(g.name.clone(), view(&g));
            }
        }
        for g in self.consumer_groups_in_memory() {
            if coordinates(&g.name) {
                out.insert(g.name.clone(), consumer_view(&g));
            }
        }
        for g in self.share_groups_in_memory() {
            if coordinates(&g.name) {
                out.insert(g.name.clone(), share_view(&g));
            }
        }
        let mut groups: Vec<GroupView> = out.into_values().collect();
        groups.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(groups)
    }

    /// Deletes groups with no members, with their committed offsets, in one
    /// transaction: GROUP_ID_NOT_FOUND for unknown groups, NON_EMPTY_GROUP for groups
    /// with members.
    pub async fn delete(
        self: &Arc<Self>,
        names: Vec<String>,
    ) -> Pending<Vec<(String, Result<(), ResponseError>)>> {
        let mut ops = Vec::new();
        let mut results = Vec::new();
        let mut killed = Vec::new();
        let mut killed_consumers = Vec::new();
        let mut killed_shares = Vec::new();
        for name in names {
            let r = self.deletable(&name).await;
            if r.is_ok() {
                ops.push(Op::Group(GroupOp::DeleteGroup { name: name.clone() }));
                if let Some(slot) = self.slots().get(&name).cloned() {
                    slot.lock().kill();
                    killed.push(slot);
                }
                killed_consumers.extend(self.kill_consumer_group(&name));
                killed_shares.extend(self.kill_share_group(&name));
            }
            results.push((name, r));
        }
        let mut leases: Vec<catalog::Lease> = results
            .iter()
            .filter(|(_, r)| r.is_ok())
            .flat_map(|(name, _)| self.holdings.under_coordinator(name))
            .collect();
        leases.sort_by(|a, b| a.address.cmp(&b.address));
        leases.dedup();
        let commit = crate::context::commit_under(self.catalog.as_ref(), ops, leases);
        let me = self.clone();
        Box::pin(async move {
            let failed = commit.await;
            for slot in killed {
                let mut g = slot.lock();
                // The group is gone from the catalog; an empty group can be forgotten.
                g.phase = Phase::Empty;
                drop(g);
                me.evict(&slot);
                slot.wake.notify_one();
            }
            for slot in killed_consumers {
                me.forget_consumer_slot(&slot);
            }
            for slot in killed_shares {
                me.forget_share_slot(&slot);
            }
            results
                .into_iter()
                .map(|(n, r)| (n, crate::context::unless_failed(r, failed)))
                .collect()
        })
    }

    async fn deletable(self: &Arc<Self>, name: &str) -> Result<(), ResponseError> {
        match self.describe_share(name).await {
            Ok(g) if g.members.is_empty() => return Ok(()),
            Ok(_) => return Err(ResponseError::NonEmptyGroup),
            Err(_) => {}
        }
        if let Some(g) = self.consumer_group(name).await? {
            return if g.members.is_empty() {
                Ok(())
            } else {
                Err(ResponseError::NonEmptyGroup)
            };
        }
        if let Some(slot) = self.slots().get(name).cloned() {
            let g = slot.lock();
            return match g.phase {
                Phase::Dead => Err(ResponseError::GroupIdNotFound),
                Phase::Empty if g.members.is_empty() => Ok(()),
                _ => Err(ResponseError::NonEmptyGroup),
            };
        }
        match self
            .catalog
            .groups()
            .group(name)
            .await
            .map_err(|e| from_catalog(&e))?
        {
            Some(_) => Ok(()),
            None if !self
                .catalog
                .groups()
                .offsets(name)
                .await
                .map_err(|e| from_catalog(&e))?
                .is_empty() =>
            {
                Ok(())
            }
            None => Err(ResponseError::GroupIdNotFound),
        }
    }

    /// Topics the group's members subscribe to, if it has members; `None` when the
    /// group does not exist.
    pub async fn subscriptions(
        self: &Arc<Self>,
        name: &str,
    ) -> Result<Option<Vec<String>>, ResponseError> {
        if let Some(g) = self.consumer_group(name).await? {
            return Ok(Some(g.subscribed_topic_names()));
        }
        if let Some(slot) = self.slots().get(name).cloned() {
            let g = slot.lock();
            if g.phase == Phase::Dead {
                return Ok(None);
            }
            if !g.members.is_empty() && g.protocol_type.as_deref() != Some("consumer") {
                // Only consumer subscriptions can be read; other groups must be empty.
                return Err(ResponseError::NonEmptyGroup);
            }
            return Ok(Some(g.subscribed_topics()));
        }
        let exists = self
            .catalog
            .groups()
            .group(name)
            .await
            .map_err(|e| from_catalog(&e))?
            .is_some()
            || !self
                .catalog
                .groups()
                .offsets(name)
                .await
                .map_err(|e| from_catalog(&e))?
                .is_empty();
        Ok(exists.then(Vec::new))
    }

    /// Fails every waiting JoinGroup and SyncGroup (the server is stopping), so
    /// connections can drain.
    pub fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let slots: Vec<Arc<Slot>> = self.slots().values().cloned().collect();
        for slot in slots {
            slot.lock().close();
            slot.wake.notify_one();
        }
        self.close_consumers();
        self.close_shares();
    }
}

/// Every group the catalog holds (this node's and the others').
async fn stored_groups(catalog: &dyn Catalog) -> Result<Vec<GroupRecord>, ResponseError> {
    catalog.groups().all().await.map_err(|e| from_catalog(&e))
}

fn share_view(g: &share::state::ShareGroup) -> GroupView {
    GroupView {
        name: g.name.clone(),
        state: g.state_name(),
        protocol_type: "share".into(),
        protocol_name: String::new(),
        members: Vec::new(),
        group_type: "share",
    }
}

fn consumer_view(g: &consumer::state::ConsumerGroup) -> GroupView {
    GroupView {
        name: g.name.clone(),
        state: g.state_name(),
        protocol_type: "consumer".into(),
        protocol_name: String::new(),
        members: Vec::new(),
        group_type: "consumer",
    }
}

fn view(g: &Group) -> GroupView {
    let stable = g.phase == Phase::Stable;
    let protocol = g.protocol_name.clone().unwrap_or_default();
    GroupView {
        name: g.name.clone(),
        state: g.phase.name(),
        protocol_type: g.protocol_type.clone().unwrap_or_default(),
        protocol_name: if stable {
            protocol.clone()
        } else {
            String::new()
        },
        members: g
            .members
            .values()
            .map(|m| MemberView {
                member_id: m.id.clone(),
                instance_id: m.instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                // Kafka shows metadata and assignments only for a stable group.
                metadata: if stable {
                    m.metadata(&protocol)
                } else {
                    Default::default()
                },
                assignment: if stable {
                    m.assignment.clone()
                } else {
                    Default::default()
                },
            })
            .collect(),
        group_type: "classic",
    }
}

fn ready<T: Send + 'static>(v: T) -> Pending<T> {
    Box::pin(std::future::ready(v))
}

fn unreachable_join(req: &JoinRequest) -> Pending<JoinAnswer> {
    // `slot(_, true)` always yields a group; answer like an unavailable coordinator.
    ready(JoinAnswer::refused(
        ResponseError::CoordinatorNotAvailable,
        &req.member_id,
    ))
}
