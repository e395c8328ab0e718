//! The transaction coordinator: one [`TxnState`] per transactional id, held in memory and
//! stored in the catalog after every change (`PutTxn`), so a restart finds each id where
//! it was. A step that ends a transaction commits its markers, its offsets and the new
//! state as one `EndTxn` catalog transaction; until that is durable the id answers
//! CONCURRENT_TRANSACTIONS. Each call does its checks and submits its catalog transaction
//! before it returns its future, so requests reach the catalog in the order they came;
//! InitProducerId and EndTxn answer once theirs is durable, AddPartitionsToTxn and
//! AddOffsetsToTxn at once (see [`TxnCoordinator::put_in_background`]).

use catalog::{KafkaOp, TxnOp};
use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use catalog::{Catalog, Op, OpOutcome, TopicRecord, Transaction, TxnMarker, TxnPhase, TxnRecord};
use kafka_protocol::error::ResponseError;

use super::state::{Effect, End, Flow, Init, MAX_EPOCH, Phase, TopicPartition, TxnState};
use crate::error::from_catalog;
use crate::{BrokerMetrics, Holdings};

/// Coordinator settings.
#[derive(Debug, Clone)]
pub struct TxnConfig {
    /// The longest `transaction.timeout.ms` a producer may ask (Kafka's
    /// `transaction.max.timeout.ms`).
    pub max_timeout: Duration,
    /// How often timed-out transactions are looked for (Kafka's
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`), and expired ids.
    pub abort_interval: Duration,
    /// A transactional id with no transaction open and no change for this long is
    /// forgotten (Kafka's `transactional.id.expiration.ms`): what keeps the ids any
    /// client may make up from growing the coordinator without bound.
    pub id_expiration: Duration,
    /// The `transaction.version` feature level offered in ApiVersions (1 or 2): at 2,
    /// Kafka 4 clients use KIP-890's protocol ([`Flow::V2`]).
    pub version: i16,
}

impl Default for TxnConfig {
    fn default() -> Self {
        Self {
            max_timeout: Duration::from_secs(900),
            abort_interval: Duration::from_secs(10),
            id_expiration: Duration::from_secs(7 * 24 * 3600),
            version: 2,
        }
    }
}

/// The transaction coordinator.
pub struct TxnCoordinator {
    catalog: Arc<dyn Catalog>,
    config: TxnConfig,
    metrics: BrokerMetrics,
    ids: Mutex<HashMap<String, TxnState>>,
    holdings: Holdings,
}

fn now_ms() -> i64 {
    crate::context::now_ms()
}

/// The stored form of a state at `now` (`now_ms` on the wall clock). A `Prepare*` state
/// is stored as what it was before: its commit is the one that moves it on.
fn record_of(s: &TxnState, now: Instant, now_ms: i64) -> TxnRecord {
    let ago = |t: Instant| now_ms - now.saturating_duration_since(t).as_millis() as i64;
    TxnRecord {
        producer_id: s.producer_id,
        epoch: s.epoch,
        timeout_ms: u32::try_from(s.timeout.as_millis()).unwrap_or(u32::MAX),
        phase: match s.phase {
            Phase::Empty => TxnPhase::Empty,
            Phase::Ongoing | Phase::PrepareCommit | Phase::PrepareAbort => TxnPhase::Ongoing,
            Phase::CompleteCommit => TxnPhase::CompleteCommit,
            Phase::CompleteAbort => TxnPhase::CompleteAbort,
        },
        partitions: s
            .partitions
            .iter()
            .map(|(t, p)| (t.clone(), *p as u32))
            .collect(),
        groups: s.groups.iter().cloned().collect(),
        started_ms: s.started.map_or(-1, ago),
        updated_ms: ago(s.updated),
    }
}

/// The live state of a stored record, its wall-clock times mapped onto `now`.
fn state_of(r: &TxnRecord, now: Instant, now_ms: i64) -> TxnState {
    let at = |ms: i64| {
        let ago = Duration::from_millis(now_ms.saturating_sub(ms).max(0) as u64);
        now.checked_sub(ago).unwrap_or(now)
    };
    let mut s = TxnState::new(now);
    s.producer_id = r.producer_id;
    s.epoch = r.epoch;
    s.timeout = Duration::from_millis(u64::from(r.timeout_ms));
    s.phase = match r.phase {
        TxnPhase::Empty => Phase::Empty,
        TxnPhase::Ongoing => Phase::Ongoing,
        TxnPhase::CompleteCommit => Phase::CompleteCommit,
        TxnPhase::CompleteAbort => Phase::CompleteAbort,
    };
    s.partitions = r
        .partitions
        .iter()
        .map(|(t, p)| (t.clone(), *p as i32))
        .collect();
    s.groups = r.groups.iter().cloned().collect();
    s.started = (r.started_ms >= 0).then(|| at(r.started_ms));
    s.updated = at(r.updated_ms);
    s
}

/// Whether a state counts in `eddy_kafka_transactions_open`.
fn is_open(s: &TxnState) -> bool {
    matches!(
        s.phase,
        Phase::Ongoing | Phase::PrepareCommit | Phase::PrepareAbort
    )
}

/// A commit the coordinator waits for, and what to do with the id's state after it.
type Pending = Option<catalog::CommitFuture>;

/// What an EndTxn waits for before it is answered.
enum EndWait {
    /// Its markers and offsets.
    Markers(catalog::CommitFuture),
    /// The state alone (a version-2 abort with nothing open).
    State(catalog::CommitFuture),
    /// Nothing (a retry).
    Nothing,
}

/// Topic records by name, as [`Coordinator::topics_of`] read them (`None`: no such topic).
type Topics = HashMap<String, Option<TopicRecord>>;

/// Whether `topics` holds every topic of `s`'s partitions; when not, partitions were added
/// since they were read, and the caller reads them again.
fn covers(topics: &Topics, s: &TxnState) -> bool {
    s.partitions.iter().all(|(t, _)| topics.contains_key(t))
}

impl TxnCoordinator {
    /// A coordinator over `catalog` of the ids of the brokers `holdings` holds.
    pub fn new(
        catalog: Arc<dyn Catalog>,
        config: TxnConfig,
        metrics: BrokerMetrics,
        holdings: Holdings,
    ) -> Self {
        Self {
            catalog,
            config,
            metrics,
            ids: Mutex::new(HashMap::new()),
            holdings,
        }
    }

    /// Settings.
    pub fn config(&self) -> &TxnConfig {
        &self.config
    }

    /// Loads every stored transactional id coordinated here that is not in memory yet;
    /// returns how many have a transaction open (they run on toward their timeouts, as
    /// before the restart or the takeover).
    pub async fn restore(&self) -> catalog::CatalogResult<usize> {
        let (now, ms) = (Instant::now(), now_ms());
        let stored = self.catalog.txns().all().await?;
        let mut ids = self.lock();
        let mut loaded_open = 0;
        for (id, r) in stored {
            if self.holdings.coordinates(&id)
                && let std::collections::hash_map::Entry::Vacant(v) = ids.entry(id)
            {
                let s = state_of(&r, now, ms);
                loaded_open += usize::from(is_open(&s));
                v.insert(s);
            }
        }
        let open = ids.values().filter(|s| is_open(s)).count();
        self.metrics.txn_open.set(open as i64);
        Ok(loaded_open)
    }

    /// Follows a change of the brokers held (a cluster node's leases): the ids of
    /// brokers no longer held leave memory (the new coordinator reads them from the
    /// catalog), and those of brokers taken over come in; returns how many of those have
    /// a transaction open.
    pub async fn hand_over(&self) -> catalog::CatalogResult<usize> {
        {
            let mut ids = self.lock();
            let before = ids.len();
            ids.retain(|id, _| self.holdings.coordinates(id));
            if ids.len() < before {
                tracing::info!(
                    ids = before - ids.len(),
                    "transactional ids of brokers no longer held left memory"
                );
            }
        }
        self.restore().await
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, TxnState>> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on `id`'s state (loaded from the catalog, or new), under the lock. On a
    /// cluster node, for an id another node coordinates (a produce or offset commit of
    /// its transaction reached this one), `f` runs on the catalog's state as read now
    /// and nothing is kept: the coordinator's changes are not seen here otherwise.
    async fn with<R>(
        &self,
        id: &str,
        f: impl FnOnce(&mut TxnState) -> R,
    ) -> Result<R, ResponseError> {
        if !self.holdings.coordinates(id) {
            let stored = self.stored(id).await?;
            let (now, ms) = (Instant::now(), now_ms());
            let mut s = stored.map_or_else(|| TxnState::new(now), |r| state_of(&r, now, ms));
            return Ok(f(&mut s));
        }
        if !self.lock().contains_key(id) {
            // Read outside the lock (a catalog read may wait on the network); a state
            // another request loaded meanwhile wins, being at least as new.
            let stored = self.stored(id).await?;
            let (now, ms) = (Instant::now(), now_ms());
            let s = stored.map_or_else(|| TxnState::new(now), |r| state_of(&r, now, ms));
            if let std::collections::hash_map::Entry::Vacant(v) = self.lock().entry(id.to_owned()) {
                self.metrics.txn_open.inc_by(i64::from(is_open(&s)));
                v.insert(s);
            }
        }
        let mut ids = self.lock();
        let s = ids.get_mut(id).ok_or(ResponseError::UnknownServerError)?;
        let was = is_open(s);
        let out = f(s);
        // The gauge moves with each change: counting every id on each call would cost
        // every transactional produce batch a walk over all ids.
        self.metrics
            .txn_open
            .inc_by(i64::from(is_open(s)) - i64::from(was));
        Ok(out)
    }

    /// Forgets the in-memory state of `id`, so the next request reads the catalog's:
    /// after a failed commit, memory may be ahead of what is durable.
    /// A transactional id's state as the catalog holds it.
    async fn stored(&self, id: &str) -> Result<Option<TxnRecord>, ResponseError> {
        self.catalog
            .txns()
            .txn(id)
            .await
            .map_err(|e| from_catalog(&e))
    }

    fn forget(&self, id: &str) {
        if let Some(s) = self.lock().remove(id) {
            self.metrics.txn_open.dec_by(i64::from(is_open(&s)));
        }
    }

    /// Submits the `PutTxn` of a state.
    fn put(&self, id: &str, s: &TxnState) -> catalog::CommitFuture {
        let record = record_of(s, Instant::now(), now_ms());
        let op = Op::Txn(TxnOp::PutTxn {
            id: id.to_owned(),
            record,
        });
        self.catalog
            .commit(Transaction::new(vec![op]).under(self.holdings.under_coordinator(id)))
    }

    /// The topics of the partitions of `id`'s transaction (of every id's, with `None`),
    /// read before the state is locked: an `EndTxn` is submitted under the lock, so its
    /// commit is queued in order with the id's other writes, and needs their ids.
    async fn topics_of(&self, id: Option<&str>) -> Result<Topics, ResponseError> {
        let names: BTreeSet<String> = {
            let ids = self.lock();
            let states: Vec<&TxnState> = match id {
                Some(id) => ids.get(id).into_iter().collect(),
                None => ids.values().collect(),
            };
            states
                .into_iter()
                .flat_map(|s| s.partitions.iter().map(|(t, _)| t.clone()))
                .collect()
        };
        let mut topics = Topics::new();
        for name in names {
            let t = self
                .catalog
                .kafka()
                .topic(&name)
                .await
                .map_err(|e| from_catalog(&e))?;
            topics.insert(name, t);
        }
        Ok(topics)
    }

    /// Submits the `EndTxn` of an effect; `s` is the state in its `Prepare*` phase and
    /// `topics` holds every topic of its partitions ([`covers`]). A partition whose topic
    /// is gone gets no marker.
    fn submit_end(
        &self,
        id: &str,
        s: &TxnState,
        effect: &Effect,
        topics: &Topics,
    ) -> catalog::CommitFuture {
        let Effect::End {
            commit,
            producer_id,
            epoch,
            partitions,
            ..
        } = effect;
        let ts = now_ms();
        let markers = partitions
            .iter()
            .filter_map(|(topic, p)| {
                let t = topics.get(topic)?.as_ref()?;
                t.has_partition(*p).then(|| TxnMarker {
                    topic_id: t.id,
                    partition: *p as u32,
                    timestamp: ts,
                    batch: crate::batch::control_batch(*producer_id, *epoch, *commit, ts),
                })
            })
            .collect();
        let mut after = s.clone();
        let now = Instant::now();
        after.completed(now);
        let op = Op::Txn(TxnOp::EndTxn {
            id: id.to_owned(),
            producer_id: *producer_id,
            epoch: *epoch,
            commit: *commit,
            markers,
            record: record_of(&after, now, ts),
        });
        self.catalog
            .commit(Transaction::new(vec![op]).under(self.holdings.under_coordinator(id)))
    }

    /// Waits for an `EndTxn` and moves the state on (or forgets it when the commit failed).
    async fn finish_end(
        &self,
        id: &str,
        commit: bool,
        c: catalog::CommitFuture,
    ) -> Result<(), ResponseError> {
        let started = Instant::now();
        let r = c.await;
        self.metrics
            .txn_end_latency
            .observe(started.elapsed().as_secs_f64());
        match r {
            Ok(_) => {
                self.with(id, |s| s.completed(Instant::now())).await?;
                if commit {
                    self.metrics.txn_committed.inc();
                } else {
                    self.metrics.txn_aborted.inc();
                }
                Ok(())
            }
            Err(e) => {
                tracing::warn!(id, error = %e, "ending a transaction failed");
                self.forget(id);
                Err(from_catalog(&e))
            }
        }
    }

    /// Lets a `PutTxn` that only adds partitions or a group become durable on its own:
    /// the answer need not wait for it. The records (or offsets) the producer sends next
    /// are submitted after it, and the log applies and persists commits in the order they
    /// were submitted, so none of them can be durable without it; if it fails, the
    /// catalog has failed and refuses every later write (measured: this wait was 1.4-2.4
    /// ms of every transaction, docs/benchmarks.md).
    fn put_in_background(self: &Arc<Self>, id: &str, c: Pending) {
        let Some(c) = c else { return };
        let (this, id) = (self.clone(), id.to_owned());
        tokio::spawn(async move {
            if let Err(e) = c.await {
                tracing::warn!(id, error = %e, "storing a transaction's partitions failed");
                this.forget(&id);
            }
        });
    }

    /// The answer to a request that submitted `put`. On a single node it need not wait
    /// ([`Self::put_in_background`]). On a cluster node it waits: the producer's next
    /// records may go to another node, which checks them against the catalog's state of
    /// the id, and commits of two nodes have no order between them.
    fn answer_after_put(
        self: &Arc<Self>,
        id: &str,
        put: Result<Pending, ResponseError>,
    ) -> impl Future<Output = Result<(), ResponseError>> + Send + use<> {
        let waits = self.holdings.is_cluster();
        let put = put.map(|c| {
            if waits {
                c
            } else {
                self.put_in_background(id, c);
                None
            }
        });
        let (this, id) = (self.clone(), id.to_owned());
        async move { this.finish_put(&id, put?).await }
    }

    /// Waits for a `PutTxn`.
    async fn finish_put(&self, id: &str, c: Pending) -> Result<(), ResponseError> {
        let Some(c) = c else { return Ok(()) };
        c.await.map(|_| ()).map_err(|e| {
            self.forget(id);
            from_catalog(&e)
        })
    }

    /// InitProducerId with a transactional id: the producer id and its new epoch. An open
    /// transaction of the previous producer is aborted first (which fences it).
    pub async fn init(
        self: &Arc<Self>,
        id: String,
        timeout_ms: i32,
    ) -> impl Future<Output = Result<(i64, i16), ResponseError>> + Send + use<> {
        let this = self.clone();
        async move {
            let timeout = u64::try_from(timeout_ms)
                .ok()
                .filter(|t| *t > 0)
                .map(Duration::from_millis)
                .filter(|t| *t <= this.config.max_timeout)
                .ok_or(ResponseError::InvalidTransactionTimeout)?;
            let mut fresh: Option<i64> = None;
            // Each turn either answers, allocates an id, or aborts the open transaction;
            // the last two happen at most once each.
            for _ in 0..8 {
                enum Step {
                    NeedId,
                    Put((i64, i16), catalog::CommitFuture),
                    Abort(catalog::CommitFuture),
                    Retry,
                }
                let topics = this.topics_of(Some(&id)).await?;
                let step = this
                    .with(&id, |s| {
                        if !covers(&topics, s) {
                            return Ok(Step::Retry);
                        }
                        let needs_id = s.producer_id < 0 || s.epoch >= MAX_EPOCH;
                        if s.phase != Phase::Ongoing && needs_id && fresh.is_none() {
                            return Ok(Step::NeedId);
                        }
                        match s.init(timeout, || fresh.take().unwrap_or(-1), Instant::now())? {
                            Init::Ready { producer_id, epoch } => {
                                Ok(Step::Put((producer_id, epoch), this.put(&id, s)))
                            }
                            Init::AbortFirst(effect) => {
                                Ok(Step::Abort(this.submit_end(&id, s, &effect, &topics)))
                            }
                        }
                    })
                    .await??;
                match step {
                    Step::NeedId => fresh = Some(this.allocate().await?),
                    Step::Put(ready, c) => {
                        this.finish_put(&id, Some(c)).await?;
                        return Ok(ready);
                    }
                    Step::Abort(c) => this.finish_end(&id, false, c).await?,
                    Step::Retry => {}
                }
            }
            Err(ResponseError::ConcurrentTransactions)
        }
    }

    async fn allocate(&self) -> Result<i64, ResponseError> {
        let out = self
            .catalog
            .commit(Transaction::new(vec![Op::Kafka(
                KafkaOp::AllocateProducerId,
            )]))
            .await
            .map_err(|e| from_catalog(&e))?;
        match out.ops.first() {
            Some(OpOutcome::ProducerId(id)) => Ok(*id),
            _ => Err(ResponseError::UnknownServerError),
        }
    }

    /// AddPartitionsToTxn.
    pub async fn add_partitions(
        self: &Arc<Self>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: Vec<TopicPartition>,
    ) -> impl Future<Output = Result<(), ResponseError>> + Send + use<> {
        let submitted = self.with(id, |s| {
            let before = s.partitions.len();
            let was = s.phase;
            s.add_partitions(producer_id, epoch, partitions, Instant::now())?;
            // A retry that adds nothing new needs no write.
            Ok((was != s.phase || s.partitions.len() != before).then(|| self.put(id, s)))
        });
        self.answer_after_put(id, submitted.await.and_then(|r| r))
    }

    /// AddOffsetsToTxn.
    pub async fn add_offsets(
        self: &Arc<Self>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        group: &str,
    ) -> impl Future<Output = Result<(), ResponseError>> + Send + use<> {
        let submitted = self.with(id, |s| {
            let before = s.groups.len();
            let was = s.phase;
            s.add_offsets(producer_id, epoch, group, Instant::now())?;
            Ok((was != s.phase || s.groups.len() != before).then(|| self.put(id, s)))
        });
        self.answer_after_put(id, submitted.await.and_then(|r| r))
    }

    /// Whether a transactional produce to `partition` may go in.
    pub async fn check_produce(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partition: &TopicPartition,
    ) -> Result<(), ResponseError> {
        self.with(id, |s| s.check_produce(producer_id, epoch, partition))
            .await?
    }

    /// Whether a TxnOffsetCommit for `group` may go in.
    pub async fn check_offset_commit(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        group: &str,
    ) -> Result<(), ResponseError> {
        self.with(id, |s| s.check_offset_commit(producer_id, epoch, group))
            .await?
    }

    /// Whether `id`'s transaction is coordinated on this node: only here may a
    /// version-2 produce or offset commit add to it.
    pub fn coordinates(&self, id: &str) -> bool {
        self.holdings.coordinates(id)
    }

    /// EndTxn: answers the producer id and epoch the producer goes on with (the bumped
    /// ones in version 2). Awaiting this submits the `EndTxn` (two phases, as
    /// [`Self::add_partitions`]).
    pub async fn end(
        self: &Arc<Self>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        flow: Flow,
    ) -> impl Future<Output = Result<(i64, i16), ResponseError>> + Send + use<> {
        let submitted = self
            .submit_end_of(id, producer_id, epoch, commit, flow)
            .await;
        let (this, id) = (self.clone(), id.to_owned());
        async move {
            let (wait, after) = submitted?;
            match wait {
                EndWait::Markers(c) => this.finish_end(&id, commit, c).await?,
                EndWait::State(c) => this.finish_put(&id, Some(c)).await?,
                EndWait::Nothing => {}
            }
            Ok(after)
        }
    }

    /// EndTxn's state change and its commit, if it needs one, with the producer id and
    /// epoch to answer.
    async fn submit_end_of(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        flow: Flow,
    ) -> Result<(EndWait, (i64, i16)), ResponseError> {
        enum Step {
            Retry,
            NeedId,
            Done(EndWait, (i64, i16)),
        }
        let mut fresh: Option<i64> = None;
        // Each turn answers, or reads the topics again, or allocates an id (once).
        for _ in 0..8 {
            let topics = self.topics_of(Some(id)).await?;
            let step = self
                .with(id, |s| {
                    if !covers(&topics, s) {
                        return Ok(Step::Retry);
                    }
                    if flow == Flow::V2 && s.end_needs_id() && fresh.is_none() {
                        return Ok(Step::NeedId);
                    }
                    let fresh_id = || fresh.take().unwrap_or(-1);
                    let wait =
                        match s.end(producer_id, epoch, commit, flow, fresh_id, Instant::now())? {
                            End::Effect(effect) => {
                                EndWait::Markers(self.submit_end(id, s, &effect, &topics))
                            }
                            End::Store => EndWait::State(self.put(id, s)),
                            End::Answered => EndWait::Nothing,
                        };
                    Ok(Step::Done(wait, s.next.unwrap_or((s.producer_id, s.epoch))))
                })
                .await??;
            match step {
                Step::Done(wait, after) => return Ok((wait, after)),
                // Only at an exhausted epoch: the id is taken before the state is
                // locked, as InitProducerId does.
                Step::NeedId => fresh = Some(self.allocate().await?),
                Step::Retry => {}
            }
        }
        Err(ResponseError::ConcurrentTransactions)
    }

    /// Aborts every transaction past its timeout (bumping its epoch, which fences its
    /// producer); returns how many.
    pub async fn abort_timed_out(&self) -> usize {
        let topics = match self.topics_of(None).await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(error = ?e, "reading the topics of open transactions failed");
                return 0;
            }
        };
        let now = Instant::now();
        let due: Vec<(String, catalog::CommitFuture)> = {
            let mut ids = self.lock();
            ids.iter_mut()
                // One whose partitions grew since is aborted on the next pass.
                .filter(|(_, s)| covers(&topics, s))
                .filter_map(|(id, s)| {
                    let effect = s.expire(now)?;
                    tracing::info!(
                        id,
                        producer_id = s.producer_id,
                        "transaction timed out: aborting"
                    );
                    Some((id.clone(), self.submit_end(id, s, &effect, &topics)))
                })
                .collect()
        };
        let mut n = 0;
        for (id, c) in due {
            if self.finish_end(&id, false, c).await.is_ok() {
                self.metrics.txn_timed_out.inc();
                n += 1;
            }
        }
        n
    }

    /// Forgets the ids with no transaction open that have not changed for
    /// [`TxnConfig::id_expiration`]; returns how many.
    pub async fn drop_expired(&self) -> usize {
        let now = Instant::now();
        let expiration = self.config.id_expiration;
        let dropped: Vec<(String, catalog::CommitFuture)> = {
            let mut ids = self.lock();
            let expired: Vec<String> = ids
                .iter()
                .filter(|(_, s)| {
                    !is_open(s) && now.saturating_duration_since(s.updated) >= expiration
                })
                .map(|(id, _)| id.clone())
                .collect();
            expired
                .into_iter()
                .map(|id| {
                    ids.remove(&id);
                    let op = Op::Txn(TxnOp::DropTxn { id: id.clone() });
                    let leases = self.holdings.under_coordinator(&id);
                    let c = self
                        .catalog
                        .commit(Transaction::new(vec![op]).under(leases));
                    (id, c)
                })
                .collect()
        };
        let mut n = 0;
        for (id, c) in dropped {
            match c.await {
                Ok(_) => n += 1,
                Err(e) => {
                    tracing::warn!(id, error = %e, "forgetting an expired transactional id failed")
                }
            }
        }
        if n > 0 {
            tracing::info!(ids = n, "expired transactional ids forgotten");
        }
        n
    }

    /// One id's state, for DescribeTransactions.
    pub async fn describe(&self, id: &str) -> Result<Option<TxnState>, ResponseError> {
        let known = self.lock().get(id).cloned();
        match known {
            Some(s) => Ok(Some(s)),
            None => Ok(self
                .catalog
                .txns()
                .txn(id)
                .await
                .map_err(|e| from_catalog(&e))?
                .map(|r| state_of(&r, Instant::now(), now_ms()))),
        }
    }

    /// Every id's state, for ListTransactions.
    pub async fn list(&self) -> Result<Vec<(String, TxnState)>, ResponseError> {
        let (now, ms) = (Instant::now(), now_ms());
        let stored = self.catalog.txns().all().await;
        let mut all: HashMap<String, TxnState> = stored
            .map_err(|e| from_catalog(&e))?
            .into_iter()
            .map(|(id, r)| (id, state_of(&r, now, ms)))
            .collect();
        for (id, s) in self.lock().iter() {
            all.insert(id.clone(), s.clone());
        }
        let mut out: Vec<_> = all.into_iter().collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}

/// Aborts timed-out transactions and forgets expired ids every `every` until shutdown.
pub async fn run(
    coordinator: Arc<TxnCoordinator>,
    every: Duration,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = shutdown.changed() => return,
        }
        coordinator.abort_timed_out().await;
        coordinator.drop_expired().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_state_comes_back_with_its_times() {
        let now = Instant::now();
        let ms = 1_800_000_000_000;
        let mut s = TxnState::new(now);
        s.producer_id = 9;
        s.epoch = 3;
        s.phase = Phase::Ongoing;
        s.partitions.insert(("a".into(), 2));
        s.groups.insert("g".into());
        s.started = Some(now);
        let r = record_of(&s, now + Duration::from_secs(5), ms);
        assert_eq!(r.started_ms, ms - 5000);
        assert_eq!(r.phase, TxnPhase::Ongoing);
        let later = now + Duration::from_secs(60);
        let back = state_of(&r, later, ms + 55_000);
        assert_eq!(back.partitions, s.partitions);
        assert_eq!(back.groups, s.groups);
        assert_eq!(back.started, Some(later - Duration::from_secs(60)));
        // A commit in flight is stored as still open.
        s.phase = Phase::PrepareCommit;
        assert_eq!(record_of(&s, now, ms).phase, TxnPhase::Ongoing);
    }
}
