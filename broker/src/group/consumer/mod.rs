//! The coordinator side of the consumer group protocol (KIP-848): consumer groups in
//! memory while they have members, each with a driver task for its members' session
//! and revocation deadlines, and their durable state committed to the catalog before a
//! heartbeat's answer (a new epoch or assignment) goes out.
//!
//! Classic and consumer groups share one name space, as in Kafka. A group that has
//! classic members refuses consumer heartbeats (GROUP_ID_NOT_FOUND, "not a consumer
//! group") and the other way round (INCONSISTENT_GROUP_PROTOCOL); an empty group of
//! either kind becomes the other when a member of the other protocol joins, keeping its
//! committed offsets. The maps of both kinds are locked classic first, consumer second.

pub mod assignor;
pub mod durable;
pub mod state;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use catalog::GroupRecord;
use kafka_protocol::error::ResponseError;
use tokio::sync::Notify;

use super::durable::StoredGroup;
use super::{GroupCoordinator, Pending, ready};
use crate::error::from_catalog;
use durable::StoredConsumerGroup;
use state::{Beat, BeatAnswer, ConsumerGroup, Refusal, TopicMeta};

/// A consumer group in memory.
pub struct ConsumerSlot {
    group: Mutex<ConsumerGroup>,
    wake: Notify,
}

impl ConsumerSlot {
    fn lock(&self) -> MutexGuard<'_, ConsumerGroup> {
        // A panic while holding the lock is a bug; the group state is still usable.
        self.group.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The consumer groups in memory.
pub type ConsumerSlots = HashMap<String, Arc<ConsumerSlot>>;

/// What a stored group record holds.
pub(crate) enum StoredKind {
    /// A classic group.
    Classic(StoredGroup),
    /// A consumer-protocol group.
    Consumer(StoredConsumerGroup),
    /// A share group (KIP-932).
    Share(crate::group::share::state::StoredShareGroup),
}

impl StoredKind {
    /// Decodes a record; state this build cannot read (a newer format, or corrupt) is a
    /// storage error for the group's requests: taking it for an empty group would let
    /// the next change overwrite what a newer build stored.
    pub(crate) fn of(record: &GroupRecord) -> Result<Self, ResponseError> {
        if let Some(g) = StoredGroup::decode(&record.state) {
            return Ok(Self::Classic(g));
        }
        if let Some(g) = StoredConsumerGroup::decode(&record.state) {
            return Ok(Self::Consumer(g));
        }
        if let Some(g) = crate::group::share::state::StoredShareGroup::decode(&record.state) {
            return Ok(Self::Share(g));
        }
        tracing::error!(group = %record.name, "stored group state unreadable");
        Err(ResponseError::KafkaStorageError)
    }
}

/// What a group id names.
enum Lookup {
    /// A consumer-protocol group.
    Consumer(ConsumerGroup),
    /// A classic group.
    Classic,
    /// No group.
    Missing,
}

fn not_consumer(name: &str) -> Refusal {
    (
        ResponseError::GroupIdNotFound,
        format!("group {name} is not a consumer group"),
    )
}

impl GroupCoordinator {
    pub(crate) fn consumer_slots(&self) -> MutexGuard<'_, ConsumerSlots> {
        self.consumer_slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Every topic but the internal one, as the assignors see them.
    pub(crate) async fn topic_metas(&self) -> Result<Vec<TopicMeta>, ResponseError> {
        let topics = self.catalog.kafka().topics().await;
        Ok(topics
            .map_err(|e| from_catalog(&e))?
            .into_iter()
            .filter(|t| !crate::offsets_topic::is_internal(&t.name))
            .map(|t| TopicMeta {
                id: t.id,
                name: t.name,
                partitions: t.partitions,
            })
            .collect())
    }

    /// Brings the consumer groups with members in the catalog that are coordinated here
    /// and not in memory yet into memory (see `GroupCoordinator::restore`).
    pub(crate) async fn restore_consumers(self: &Arc<Self>) -> Result<usize, ResponseError> {
        let now = Instant::now();
        let cfg = &self.config.consumer;
        let mut n = 0;
        for record in super::stored_groups(self.catalog.as_ref()).await? {
            if !self.holdings.coordinates(&record.name) {
                continue;
            }
            let Ok(StoredKind::Consumer(stored)) = StoredKind::of(&record) else {
                continue;
            };
            if stored.members.is_empty() {
                continue;
            }
            let slot = {
                let classic = self.slots();
                let mut slots = self.consumer_slots();
                if classic.contains_key(&record.name) || slots.contains_key(&record.name) {
                    continue;
                }
                let slot = Arc::new(ConsumerSlot {
                    group: Mutex::new(ConsumerGroup::restore(&record.name, stored, now, cfg)),
                    wake: Notify::new(),
                });
                slots.insert(record.name.clone(), slot.clone());
                slot
            };
            self.spawn_consumer_driver(slot);
            n += 1;
        }
        Ok(n)
    }

    /// Drops the consumer groups of brokers no longer held from memory, without a write;
    /// returns how many.
    pub(crate) fn drop_unheld_consumer_groups(&self) -> usize {
        let lost = self.take_unheld(&mut self.consumer_slots());
        for slot in &lost {
            slot.lock().kill();
            slot.wake.notify_one();
        }
        lost.len()
    }

    /// A consumer group in memory: loaded from the catalog, converted from an empty
    /// classic group, or (with `create`) new.
    async fn consumer_slot(
        self: &Arc<Self>,
        name: &str,
        create: bool,
    ) -> Result<Option<Arc<ConsumerSlot>>, Refusal> {
        if self.closed.load(Ordering::Acquire) {
            return Err((ResponseError::NotCoordinator, String::new()));
        }
        if let Some(s) = self.consumer_slots().get(name) {
            return Ok(Some(s.clone()));
        }
        // Read before the maps are locked (a catalog read may wait on the network); a
        // group that another request brought into memory meanwhile wins.
        let record = self
            .catalog
            .groups()
            .group(name)
            .await
            .map_err(|e| (from_catalog(&e), String::new()))?;
        let mut classic = self.slots();
        let mut slots = self.consumer_slots();
        if let Some(s) = slots.get(name) {
            return Ok(Some(s.clone()));
        }
        if self.share_group_in_memory(name) {
            return Err(not_consumer(name));
        }
        if let Some(c) = classic.get(name).cloned() {
            let mut g = c.lock();
            if !g.members.is_empty() || g.persisting > 0 {
                return Err(not_consumer(name));
            }
            if !create {
                return Ok(None);
            }
            // An empty classic group becomes a consumer group; its driver sees itself
            // gone from the map and ends.
            g.phase = super::state::Phase::Dead;
            drop(g);
            classic.remove(name);
            c.wake.notify_one();
        }
        let cfg = &self.config.consumer;
        let group = match record.map(|r| StoredKind::of(&r)).transpose() {
            Err(e) => return Err((e, String::new())),
            Ok(Some(StoredKind::Consumer(stored))) => {
                ConsumerGroup::restore(name, stored, Instant::now(), cfg)
            }
            Ok(Some(StoredKind::Classic(stored))) if !stored.members.is_empty() => {
                return Err(not_consumer(name));
            }
            Ok(Some(StoredKind::Share(_))) => return Err(not_consumer(name)),
            Ok(Some(StoredKind::Classic(_))) | Ok(None) if create => ConsumerGroup::new(name),
            Ok(_) => return Ok(None),
        };
        let slot = Arc::new(ConsumerSlot {
            group: Mutex::new(group),
            wake: Notify::new(),
        });
        slots.insert(name.to_string(), slot.clone());
        drop(slots);
        drop(classic);
        self.spawn_consumer_driver(slot.clone());
        Ok(Some(slot))
    }

    /// Whether `name` is a consumer group with members (in memory or stored), for the
    /// classic coordinator's refusal. Called with the classic map locked.
    pub(crate) fn consumer_group_in_use(&self, name: &str) -> bool {
        self.consumer_slots()
            .get(name)
            .is_some_and(|s| !s.lock().is_idle())
    }

    /// Drops an idle consumer group from memory so a classic member may take the name.
    /// Called with the classic map locked.
    pub(crate) fn forget_idle_consumer_group(&self, name: &str) {
        let mut slots = self.consumer_slots();
        if let Some(s) = slots.get(name).cloned() {
            let mut g = s.lock();
            if g.is_idle() {
                g.kill();
                drop(g);
                slots.remove(name);
                s.wake.notify_one();
            }
        }
    }

    fn spawn_consumer_driver(self: &Arc<Self>, slot: Arc<ConsumerSlot>) {
        let me = self.clone();
        tokio::spawn(async move { me.drive_consumer(slot).await });
    }

    async fn drive_consumer(self: Arc<Self>, slot: Arc<ConsumerSlot>) {
        loop {
            let (deadline, idle, dead) = {
                let g = slot.lock();
                (g.next_deadline(), g.is_idle(), g.dead)
            };
            if dead || (idle && self.evict_consumer(&slot)) {
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
            // An unreadable topic list is not an empty one: assignments computed from
            // it would take every member's partitions away, so the round waits instead.
            let topics = match self.topic_metas().await {
                Ok(topics) => topics,
                Err(e) => {
                    tracing::warn!(error = ?e, "consumer group round: topics unreadable, retrying");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    continue;
                }
            };
            let persist = {
                let mut g = slot.lock();
                if g.expire(Instant::now(), &topics) {
                    self.metrics.rebalances.inc();
                }
                self.persist_consumer(&slot, &mut g)
            };
            if let Some(p) = persist {
                tokio::spawn(p);
            }
        }
    }

    fn evict_consumer(&self, slot: &Arc<ConsumerSlot>) -> bool {
        let mut slots = self.consumer_slots();
        let g = slot.lock();
        if !g.is_idle() {
            return false;
        }
        if slots.get(&g.name).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            slots.remove(&g.name);
        }
        true
    }

    /// Commits the group's durable state if it changed; called with the group locked,
    /// so its commits reach the log in the order of its changes.
    fn persist_consumer(
        &self,
        slot: &Arc<ConsumerSlot>,
        g: &mut ConsumerGroup,
    ) -> Option<Pending<Result<(), ResponseError>>> {
        if !g.take_dirty() || g.dead {
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

    /// Handles a ConsumerGroupHeartbeat: the answer and the heartbeat interval to give
    /// the member, once what the answer says is durable.
    pub async fn consumer_heartbeat(
        self: &Arc<Self>,
        name: &str,
        beat: Beat,
    ) -> Pending<Result<(BeatAnswer, std::time::Duration), Refusal>> {
        let joining = beat.epoch == 0;
        let slot = match self.consumer_slot(name, joining).await {
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
        let new_id = uuid::Uuid::new_v4().to_string();
        let (answer, persist) = {
            let mut g = slot.lock();
            let before = g.epoch;
            let now = Instant::now();
            let answer = g
                .heartbeat(beat, new_id, &topics, now, &self.config.consumer)
                .map(|a| (a, g.heartbeat_interval(now, &self.config.consumer)));
            if g.epoch != before {
                self.metrics.rebalances.inc();
            }
            (answer, self.persist_consumer(&slot, &mut g))
        };
        slot.wake.notify_one();
        Box::pin(async move {
            if let Some(p) = persist
                && let Err(e) = p.await
            {
                return Err((e, "storing the group's state failed".into()));
            }
            answer
        })
    }

    /// What `name` is: a consumer group (in memory, or as stored), a classic group, or
    /// nothing (a group being deleted counts as nothing).
    async fn lookup(self: &Arc<Self>, name: &str) -> Result<Lookup, ResponseError> {
        if let Some(slot) = self.consumer_slots().get(name).cloned() {
            let g = slot.lock();
            return Ok(if g.dead {
                Lookup::Missing
            } else {
                Lookup::Consumer(g.clone())
            });
        }
        if self.slots().contains_key(name) {
            return Ok(Lookup::Classic);
        }
        Ok(
            match self
                .catalog
                .groups()
                .group(name)
                .await
                .map_err(|e| from_catalog(&e))?
            {
                None => Lookup::Missing,
                Some(record) => match StoredKind::of(&record)? {
                    StoredKind::Consumer(stored) => Lookup::Consumer(ConsumerGroup::restore(
                        name,
                        stored,
                        Instant::now(),
                        &self.config.consumer,
                    )),
                    // Not a consumer group either: refused as a classic one is.
                    StoredKind::Classic(_) | StoredKind::Share(_) => Lookup::Classic,
                },
            },
        )
    }

    /// A consumer group's state, for ConsumerGroupDescribe: `Err` GROUP_ID_NOT_FOUND
    /// for an unknown or classic group.
    pub async fn describe_consumer(self: &Arc<Self>, name: &str) -> Result<ConsumerGroup, Refusal> {
        match self.lookup(name).await.map_err(|e| (e, String::new()))? {
            Lookup::Consumer(g) => Ok(g),
            Lookup::Classic => Err(not_consumer(name)),
            Lookup::Missing => Err((
                ResponseError::GroupIdNotFound,
                format!("group {name} not found"),
            )),
        }
    }

    /// The consumer group of `name` if it is one (in memory or stored), for the
    /// checks of offset commits and fetches and for listings.
    pub(crate) async fn consumer_group(
        self: &Arc<Self>,
        name: &str,
    ) -> Result<Option<ConsumerGroup>, ResponseError> {
        Ok(match self.lookup(name).await? {
            Lookup::Consumer(g) => Some(g),
            Lookup::Classic | Lookup::Missing => None,
        })
    }

    /// Checks an OffsetFetch (v9) of a consumer-protocol member at `epoch`; a fetch
    /// naming a member of a group that is not a consumer group is not checked.
    pub async fn check_member_fetch(
        self: &Arc<Self>,
        name: &str,
        member_id: &str,
        epoch: i32,
    ) -> Result<(), ResponseError> {
        match self.consumer_group(name).await? {
            Some(g) => g.check_member_epoch(member_id, epoch),
            None => Ok(()),
        }
    }

    /// The consumer groups in memory.
    pub(crate) fn consumer_groups_in_memory(&self) -> Vec<ConsumerGroup> {
        let slots: Vec<Arc<ConsumerSlot>> = self.consumer_slots().values().cloned().collect();
        slots
            .into_iter()
            .map(|s| s.lock().clone())
            .filter(|g| !g.dead)
            .collect()
    }

    /// Marks a consumer group in memory deleted; returns its slot to forget once the
    /// deletion is durable.
    pub(crate) fn kill_consumer_group(&self, name: &str) -> Option<Arc<ConsumerSlot>> {
        let slot = self.consumer_slots().get(name).cloned()?;
        slot.lock().kill();
        Some(slot)
    }

    /// Forgets a killed consumer group.
    pub(crate) fn forget_consumer_slot(&self, slot: &Arc<ConsumerSlot>) {
        let mut slots = self.consumer_slots();
        let g = slot.lock();
        if slots.get(&g.name).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            slots.remove(&g.name);
        }
        drop(g);
        slot.wake.notify_one();
    }

    /// Wakes every consumer group's driver (the server is stopping).
    pub(crate) fn close_consumers(&self) {
        let slots: Vec<Arc<ConsumerSlot>> = self.consumer_slots().values().cloned().collect();
        for slot in slots {
            slot.wake.notify_one();
        }
    }
}
