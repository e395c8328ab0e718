//! The transaction coordinator's state machine for one transactional id (KIP-98, and
//! KIP-890's transaction version 2): InitProducerId, AddPartitionsToTxn (explicit, or
//! implied by a version-2 produce), AddOffsetsToTxn (or implied by a version-2
//! TxnOffsetCommit), EndTxn (which in version 2 bumps the epoch) and the transaction
//! timeout, as Kafka's `TransactionMetadata` moves through its states. It
//! does no I/O and reads no clock: every call gets `now`, and a step that must write
//! markers and offsets returns an [`Effect`] for the coordinator to commit, after which it
//! calls [`TxnState::completed`]. Eddy writes one EndTxn's markers for all its partitions
//! and its offsets in one catalog transaction, so the `Prepare*` states last exactly as
//! long as that commit.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kafka_protocol::error::ResponseError;

/// A partition, by topic name.
pub type TopicPartition = (String, i32);

/// Where a transactional id stands, named as DescribeTransactions and ListTransactions
/// report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// A producer id and epoch, no transaction open.
    Empty,
    /// Partitions or offsets were added: a transaction is open.
    Ongoing,
    /// EndTxn(commit) is being written.
    PrepareCommit,
    /// EndTxn(abort), a timeout or a fencing InitProducerId is being written.
    PrepareAbort,
    /// The last transaction committed.
    CompleteCommit,
    /// The last transaction aborted.
    CompleteAbort,
}

impl Phase {
    /// The name Kafka uses.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Empty => "Empty",
            Phase::Ongoing => "Ongoing",
            Phase::PrepareCommit => "PrepareCommit",
            Phase::PrepareAbort => "PrepareAbort",
            Phase::CompleteCommit => "CompleteCommit",
            Phase::CompleteAbort => "CompleteAbort",
        }
    }

    fn completing(self) -> bool {
        matches!(self, Phase::PrepareCommit | Phase::PrepareAbort)
    }
}

/// Which of Kafka's transaction protocols a request follows. The request's version says
/// it (EndTxn v5+, Produce v12+, TxnOffsetCommit v5+ come only from a client that took
/// `transaction.version` 2 from ApiVersions), so clients of both are served at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// KIP-98: partitions and groups are added by their own requests; the epoch stays
    /// from one transaction to the next.
    V1,
    /// KIP-890: every EndTxn bumps the epoch, so a late request of an ended transaction
    /// is fenced instead of landing in the next one.
    V2,
}

/// What EndTxn needs done before it is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Commit the effect, then call [`TxnState::completed`].
    Effect(Effect),
    /// Store the state as it is now (a version-2 abort with nothing open: the epoch
    /// moved on, no markers).
    Store,
    /// Nothing: a retry of the EndTxn that completed last.
    Answered,
}

/// What the coordinator must make durable before the state machine goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Write a commit (or abort) marker into every partition and commit (or drop) the
    /// pending offsets of every group, all in one transaction; then call
    /// [`TxnState::completed`].
    End {
        /// Commit or abort.
        commit: bool,
        /// The producer id the markers carry.
        producer_id: i64,
        /// The epoch the markers carry (the bumped one when a timeout or a new producer
        /// aborts).
        epoch: i16,
        /// Every partition the transaction wrote to.
        partitions: BTreeSet<TopicPartition>,
        /// Every group whose offsets the transaction holds.
        groups: BTreeSet<String>,
    },
}

/// What InitProducerId answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Init {
    /// The producer id and its new epoch.
    Ready {
        /// Producer id.
        producer_id: i64,
        /// Its new epoch.
        epoch: i16,
    },
    /// An open transaction is being aborted first: the client retries
    /// (`CONCURRENT_TRANSACTIONS`), and the effect must be committed.
    AbortFirst(Effect),
}

/// One transactional id's coordinator state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnState {
    /// The producer id (-1 before the first InitProducerId).
    pub producer_id: i64,
    /// The current epoch (-1 before the first InitProducerId).
    pub epoch: i16,
    /// `transaction.timeout.ms` the producer asked for.
    pub timeout: Duration,
    /// Where it stands.
    pub phase: Phase,
    /// Partitions of the open transaction.
    pub partitions: BTreeSet<TopicPartition>,
    /// Groups whose offsets the open transaction holds.
    pub groups: BTreeSet<String>,
    /// When the open transaction began (its first AddPartitions or AddOffsets).
    pub started: Option<Instant>,
    /// Last change.
    pub updated: Instant,
    /// The producer id and epoch a version-2 EndTxn moves to once its effect is
    /// durable.
    pub next: Option<(i64, i16)>,
    /// The producer id before the last version-2 epoch overflow, so a retry of the
    /// EndTxn that took a new id is recognised. Kept in memory only: after a restart
    /// such a retry is refused with INVALID_PRODUCER_ID_MAPPING (once per 32,767
    /// transactions of an id, and only if the answer was lost).
    pub previous_producer_id: i64,
}

/// Epochs go up to here; past it a producer gets a new producer id (Kafka's rule).
pub const MAX_EPOCH: i16 = i16::MAX - 1;

impl TxnState {
    /// A transactional id seen for the first time.
    pub fn new(now: Instant) -> Self {
        Self {
            producer_id: -1,
            epoch: -1,
            timeout: Duration::from_secs(60),
            phase: Phase::Empty,
            partitions: BTreeSet::new(),
            groups: BTreeSet::new(),
            started: None,
            updated: now,
            next: None,
            previous_producer_id: -1,
        }
    }

    /// Whether a version-2 EndTxn from here needs a fresh producer id (its epoch is
    /// exhausted).
    pub fn end_needs_id(&self) -> bool {
        self.epoch >= MAX_EPOCH
    }

    /// The end of the open transaction, its markers at `epoch`.
    fn end_effect(&self, commit: bool, epoch: i16) -> Effect {
        Effect::End {
            commit,
            producer_id: self.producer_id,
            epoch,
            partitions: self.partitions.clone(),
            groups: self.groups.clone(),
        }
    }

    /// InitProducerId with this id. `fresh_id` is a newly allocated producer id, used the
    /// first time and when the epoch is exhausted. An open transaction is aborted first,
    /// under a bumped epoch, so the previous producer is fenced.
    pub fn init(
        &mut self,
        timeout: Duration,
        fresh_id: impl FnOnce() -> i64,
        now: Instant,
    ) -> Result<Init, ResponseError> {
        if self.phase.completing() {
            return Err(ResponseError::ConcurrentTransactions);
        }
        if self.phase == Phase::Ongoing {
            self.bump_for_abort();
            self.phase = Phase::PrepareAbort;
            self.updated = now;
            return Ok(Init::AbortFirst(self.end_effect(false, self.epoch)));
        }
        self.timeout = timeout;
        self.bump(fresh_id);
        self.phase = Phase::Empty;
        self.partitions.clear();
        self.groups.clear();
        self.started = None;
        self.updated = now;
        Ok(Init::Ready {
            producer_id: self.producer_id,
            epoch: self.epoch,
        })
    }

    /// The epoch an abort that fences the producer writes: one more, within the same
    /// producer id, since the markers must name the producer id of the records they end
    /// (an exhausted epoch stays; the next InitProducerId takes a new id).
    fn bump_for_abort(&mut self) {
        if self.epoch < MAX_EPOCH {
            self.epoch += 1;
        }
    }

    fn bump(&mut self, fresh_id: impl FnOnce() -> i64) {
        if self.producer_id < 0 || self.epoch >= MAX_EPOCH {
            self.producer_id = fresh_id();
            self.epoch = 0;
        } else {
            self.epoch += 1;
        }
    }

    /// Refuses a request of a producer that is not the current one.
    fn check_producer(&self, producer_id: i64, epoch: i16) -> Result<(), ResponseError> {
        if producer_id != self.producer_id {
            return Err(ResponseError::InvalidProducerIdMapping);
        }
        if epoch < self.epoch {
            return Err(ResponseError::ProducerFenced);
        }
        if epoch > self.epoch {
            return Err(ResponseError::InvalidProducerEpoch);
        }
        Ok(())
    }

    fn begin(&mut self, now: Instant) -> Result<(), ResponseError> {
        match self.phase {
            Phase::PrepareCommit | Phase::PrepareAbort => {
                Err(ResponseError::ConcurrentTransactions)
            }
            Phase::Ongoing => Ok(()),
            Phase::Empty | Phase::CompleteCommit | Phase::CompleteAbort => {
                self.phase = Phase::Ongoing;
                self.partitions.clear();
                self.groups.clear();
                self.started = Some(now);
                Ok(())
            }
        }
    }

    /// AddPartitionsToTxn.
    pub fn add_partitions(
        &mut self,
        producer_id: i64,
        epoch: i16,
        partitions: impl IntoIterator<Item = TopicPartition>,
        now: Instant,
    ) -> Result<(), ResponseError> {
        self.check_producer(producer_id, epoch)?;
        self.begin(now)?;
        self.partitions.extend(partitions);
        self.updated = now;
        Ok(())
    }

    /// AddOffsetsToTxn.
    pub fn add_offsets(
        &mut self,
        producer_id: i64,
        epoch: i16,
        group: &str,
        now: Instant,
    ) -> Result<(), ResponseError> {
        self.check_producer(producer_id, epoch)?;
        self.begin(now)?;
        self.groups.insert(group.to_owned());
        self.updated = now;
        Ok(())
    }

    /// Whether a transactional produce to `partition` may go in (KIP-890's check: the
    /// partition must be in the open transaction).
    pub fn check_produce(
        &self,
        producer_id: i64,
        epoch: i16,
        partition: &TopicPartition,
    ) -> Result<(), ResponseError> {
        self.check_producer(producer_id, epoch)?;
        if self.phase != Phase::Ongoing || !self.partitions.contains(partition) {
            return Err(ResponseError::InvalidTxnState);
        }
        Ok(())
    }

    /// Whether a TxnOffsetCommit for `group` may go in.
    pub fn check_offset_commit(
        &self,
        producer_id: i64,
        epoch: i16,
        group: &str,
    ) -> Result<(), ResponseError> {
        self.check_producer(producer_id, epoch)?;
        if self.phase != Phase::Ongoing || !self.groups.contains(group) {
            return Err(ResponseError::InvalidTxnState);
        }
        Ok(())
    }

    /// EndTxn. `fresh_id` is a newly allocated producer id, used by a version-2 end
    /// whose epoch is exhausted ([`Self::end_needs_id`]).
    pub fn end(
        &mut self,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        flow: Flow,
        fresh_id: impl FnOnce() -> i64,
        now: Instant,
    ) -> Result<End, ResponseError> {
        if flow == Flow::V2 {
            return self.end_v2(producer_id, epoch, commit, fresh_id, now);
        }
        self.check_producer(producer_id, epoch)?;
        match (self.phase, commit) {
            (Phase::Ongoing, _) => Ok(End::Effect(self.prepare_end(commit, epoch, now))),
            (Phase::CompleteCommit, true) | (Phase::CompleteAbort, false) => Ok(End::Answered),
            (Phase::PrepareCommit, true) | (Phase::PrepareAbort, false) => {
                Err(ResponseError::ConcurrentTransactions)
            }
            _ => Err(ResponseError::InvalidTxnState),
        }
    }

    fn prepare_end(&mut self, commit: bool, marker_epoch: i16, now: Instant) -> Effect {
        self.phase = if commit {
            Phase::PrepareCommit
        } else {
            Phase::PrepareAbort
        };
        self.updated = now;
        self.end_effect(commit, marker_epoch)
    }

    /// The producer id and epoch after a version-2 end: the next epoch, or a fresh id
    /// at epoch 0 when this one is exhausted (Kafka's rule).
    fn bumped(&self, fresh_id: impl FnOnce() -> i64) -> (i64, i16) {
        if self.end_needs_id() {
            (fresh_id(), 0)
        } else {
            (self.producer_id, self.epoch + 1)
        }
    }

    /// EndTxn of a version-2 client: the markers carry the next epoch and the producer
    /// goes on with it (or with a fresh id), so nothing it sent under the ended
    /// transaction's epoch can go in after it. The epoch a retry carries is the one
    /// before the bump.
    fn end_v2(
        &mut self,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        fresh_id: impl FnOnce() -> i64,
        now: Instant,
    ) -> Result<End, ResponseError> {
        let same = |outcome: bool| {
            if outcome == commit {
                Ok(End::Answered)
            } else {
                Err(ResponseError::InvalidTxnState)
            }
        };
        let retry = (producer_id == self.producer_id && epoch == self.epoch.wrapping_sub(1))
            || (producer_id == self.previous_producer_id && epoch >= MAX_EPOCH && self.epoch == 0);
        match self.phase {
            // A commit of what the coordinator aborted (its timeout) is a fenced
            // producer's, as in version 1.
            Phase::CompleteAbort if retry && commit => return Err(ResponseError::ProducerFenced),
            Phase::CompleteCommit | Phase::CompleteAbort if retry => {
                return same(self.phase == Phase::CompleteCommit);
            }
            Phase::PrepareCommit | Phase::PrepareAbort => {
                self.check_producer(producer_id, epoch)?;
                return Err(if (self.phase == Phase::PrepareCommit) == commit {
                    ResponseError::ConcurrentTransactions
                } else {
                    ResponseError::InvalidTxnState
                });
            }
            _ => {}
        }
        self.check_producer(producer_id, epoch)?;
        if self.phase == Phase::Ongoing {
            self.next = Some(self.bumped(fresh_id));
            // The markers carry the epoch after this one even when the id is exhausted
            // (32,767, one above MAX_EPOCH): they must fence this epoch's records.
            return Ok(End::Effect(self.prepare_end(commit, epoch + 1, now)));
        }
        if commit {
            return Err(ResponseError::InvalidTxnState);
        }
        // An abort with nothing open (every produce of it failed before reaching a
        // partition): the epoch moves on all the same, which fences what is in flight.
        let (id, next) = self.bumped(fresh_id);
        if id != self.producer_id {
            self.previous_producer_id = self.producer_id;
        }
        self.producer_id = id;
        self.epoch = next;
        self.phase = Phase::CompleteAbort;
        self.updated = now;
        Ok(End::Store)
    }

    /// The transaction timed out at `now`: it is aborted under a bumped epoch, which
    /// fences its producer. `None` when nothing is due.
    pub fn expire(&mut self, now: Instant) -> Option<Effect> {
        let started = self.started?;
        if self.phase != Phase::Ongoing || now.saturating_duration_since(started) < self.timeout {
            return None;
        }
        self.bump_for_abort();
        self.phase = Phase::PrepareAbort;
        self.updated = now;
        Some(self.end_effect(false, self.epoch))
    }

    /// The effect of a `Prepare*` state is durable.
    pub fn completed(&mut self, now: Instant) {
        if self.phase.completing()
            && let Some((id, epoch)) = self.next.take()
        {
            if id != self.producer_id {
                self.previous_producer_id = self.producer_id;
            }
            self.producer_id = id;
            self.epoch = epoch;
        }
        self.phase = match self.phase {
            Phase::PrepareCommit => Phase::CompleteCommit,
            Phase::PrepareAbort => Phase::CompleteAbort,
            other => other,
        };
        if !self.phase.completing() {
            self.partitions.clear();
            self.groups.clear();
            self.started = None;
        }
        self.updated = now;
    }

    /// The effect of a `Prepare*` state failed to commit: the state is as before it, so
    /// the client's retry (or the next expiry check) tries again.
    pub fn failed(&mut self) {
        self.next = None;
        if self.phase.completing() {
            self.phase = Phase::Ongoing;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(t: &str, p: i32) -> TopicPartition {
        (t.to_owned(), p)
    }

    fn end_effect(r: Result<End, ResponseError>) -> Effect {
        match r {
            Ok(End::Effect(e)) => e,
            other => panic!("{other:?}"),
        }
    }

    fn ready(s: &mut TxnState, now: Instant) -> (i64, i16) {
        match s.init(Duration::from_secs(10), || 7, now).unwrap() {
            Init::Ready { producer_id, epoch } => (producer_id, epoch),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn commit_across_partitions_with_offsets() {
        let t0 = Instant::now();
        let mut s = TxnState::new(t0);
        let (pid, e) = ready(&mut s, t0);
        assert_eq!((pid, e), (7, 0));
        s.add_partitions(pid, e, [tp("a", 0), tp("b", 1)], t0)
            .unwrap();
        s.add_offsets(pid, e, "g", t0).unwrap();
        assert_eq!(s.phase, Phase::Ongoing);
        s.check_produce(pid, e, &tp("a", 0)).unwrap();
        // KIP-890: a partition not in the transaction is refused.
        assert_eq!(
            s.check_produce(pid, e, &tp("a", 1)),
            Err(ResponseError::InvalidTxnState)
        );
        s.check_offset_commit(pid, e, "g").unwrap();
        assert!(s.check_offset_commit(pid, e, "other").is_err());
        let effect = end_effect(s.end(pid, e, true, Flow::V1, || -1, t0));
        assert_eq!(
            effect,
            Effect::End {
                commit: true,
                producer_id: 7,
                epoch: 0,
                partitions: [tp("a", 0), tp("b", 1)].into(),
                groups: ["g".to_owned()].into(),
            }
        );
        // While the markers are written, the producer waits.
        assert_eq!(
            s.add_partitions(pid, e, [tp("a", 0)], t0),
            Err(ResponseError::ConcurrentTransactions)
        );
        assert_eq!(
            s.end(pid, e, true, Flow::V1, || -1, t0),
            Err(ResponseError::ConcurrentTransactions)
        );
        s.completed(t0);
        assert_eq!(s.phase, Phase::CompleteCommit);
        assert!(s.partitions.is_empty() && s.groups.is_empty());
        // A retried EndTxn of the same outcome succeeds; the other is refused.
        assert_eq!(s.end(pid, e, true, Flow::V1, || -1, t0), Ok(End::Answered));
        assert_eq!(
            s.end(pid, e, false, Flow::V1, || -1, t0),
            Err(ResponseError::InvalidTxnState)
        );
        // The next transaction starts afresh.
        s.add_partitions(pid, e, [tp("c", 0)], t0).unwrap();
        assert_eq!(s.partitions, [tp("c", 0)].into());
    }

    #[test]
    fn a_new_producer_fences_the_old_one_after_aborting_its_transaction() {
        let t0 = Instant::now();
        let mut s = TxnState::new(t0);
        let (pid, old) = ready(&mut s, t0);
        s.add_partitions(pid, old, [tp("a", 0)], t0).unwrap();
        let Init::AbortFirst(effect) = s.init(Duration::from_secs(10), || 99, t0).unwrap() else {
            panic!("an open transaction must be aborted first");
        };
        assert_eq!(
            effect,
            Effect::End {
                commit: false,
                producer_id: 7,
                epoch: 1,
                partitions: [tp("a", 0)].into(),
                groups: BTreeSet::new(),
            }
        );
        assert_eq!(
            s.init(Duration::from_secs(10), || 99, t0),
            Err(ResponseError::ConcurrentTransactions)
        );
        s.completed(t0);
        let (pid2, new) = ready(&mut s, t0);
        assert_eq!((pid2, new), (7, 2));
        // The zombie's requests are fenced.
        assert_eq!(
            s.add_partitions(pid, old, [tp("a", 0)], t0),
            Err(ResponseError::ProducerFenced)
        );
        assert_eq!(
            s.end(pid, old, true, Flow::V1, || -1, t0),
            Err(ResponseError::ProducerFenced)
        );
        assert_eq!(
            s.check_produce(pid, old, &tp("a", 0)),
            Err(ResponseError::ProducerFenced)
        );
        assert_eq!(
            s.add_partitions(12, new, [tp("a", 0)], t0),
            Err(ResponseError::InvalidProducerIdMapping)
        );
        assert_eq!(
            s.add_partitions(pid, new + 1, [tp("a", 0)], t0),
            Err(ResponseError::InvalidProducerEpoch)
        );
    }

    #[test]
    fn a_timed_out_transaction_is_aborted_and_its_producer_fenced() {
        let t0 = Instant::now();
        let mut s = TxnState::new(t0);
        let (pid, e) = ready(&mut s, t0);
        assert_eq!(s.expire(t0 + Duration::from_secs(60)), None, "nothing open");
        s.add_partitions(pid, e, [tp("a", 0)], t0).unwrap();
        assert_eq!(s.expire(t0 + Duration::from_secs(9)), None);
        let effect = s.expire(t0 + Duration::from_secs(10)).unwrap();
        assert!(matches!(
            effect,
            Effect::End {
                commit: false,
                epoch: 1,
                ..
            }
        ));
        s.completed(t0);
        assert_eq!(s.phase, Phase::CompleteAbort);
        assert_eq!(
            s.end(pid, e, true, Flow::V1, || -1, t0),
            Err(ResponseError::ProducerFenced)
        );
    }

    #[test]
    fn an_exhausted_epoch_takes_a_new_producer_id_and_a_failed_end_can_be_retried() {
        let t0 = Instant::now();
        let mut s = TxnState::new(t0);
        ready(&mut s, t0);
        s.epoch = MAX_EPOCH;
        let Init::Ready { producer_id, epoch } = s.init(Duration::from_secs(1), || 42, t0).unwrap()
        else {
            panic!()
        };
        assert_eq!((producer_id, epoch), (42, 0));
        s.add_partitions(42, 0, [tp("a", 0)], t0).unwrap();
        end_effect(s.end(42, 0, false, Flow::V1, || -1, t0));
        s.failed();
        assert_eq!(s.phase, Phase::Ongoing);
        assert!(matches!(
            s.end(42, 0, false, Flow::V1, || -1, t0),
            Ok(End::Effect(_))
        ));
        // Ending with nothing open is refused.
        s.completed(t0);
        let mut fresh = TxnState::new(t0);
        let (pid, e) = ready(&mut fresh, t0);
        assert_eq!(
            fresh.end(pid, e, true, Flow::V1, || -1, t0),
            Err(ResponseError::InvalidTxnState)
        );
    }

    #[test]
    fn a_version_2_end_bumps_the_epoch_and_fences_the_ended_transaction() {
        let t0 = Instant::now();
        let mut s = TxnState::new(t0);
        let (pid, e) = ready(&mut s, t0);
        s.add_partitions(pid, e, [tp("a", 0)], t0).unwrap();
        let effect = end_effect(s.end(pid, e, true, Flow::V2, || -1, t0));
        // The markers carry the next epoch, so they fence this epoch's records.
        assert!(matches!(
            effect,
            Effect::End {
                epoch: 1,
                producer_id: 7,
                ..
            }
        ));
        // A retry while the markers are written waits.
        assert_eq!(
            s.end(pid, e, true, Flow::V2, || -1, t0),
            Err(ResponseError::ConcurrentTransactions)
        );
        s.completed(t0);
        assert_eq!((s.producer_id, s.epoch), (7, 1));
        // A retry of the same end is answered; the other outcome is refused.
        assert_eq!(s.end(pid, e, true, Flow::V2, || -1, t0), Ok(End::Answered));
        assert_eq!(
            s.end(pid, e, false, Flow::V2, || -1, t0),
            Err(ResponseError::InvalidTxnState)
        );
        // A late produce of the ended transaction is fenced, not put in the next one.
        assert_eq!(
            s.add_partitions(pid, e, [tp("a", 0)], t0),
            Err(ResponseError::ProducerFenced)
        );
        // The next transaction runs at the new epoch; an abort with nothing open moves
        // the epoch on without markers.
        assert_eq!(s.end(pid, 1, false, Flow::V2, || -1, t0), Ok(End::Store));
        assert_eq!((s.epoch, s.phase), (2, Phase::CompleteAbort));
        assert_eq!(
            s.end(pid, 2, true, Flow::V2, || -1, t0),
            Err(ResponseError::InvalidTxnState),
            "nothing open to commit"
        );
        // A version-1 client of the same id keeps its epoch.
        s.add_partitions(pid, 2, [tp("a", 0)], t0).unwrap();
        end_effect(s.end(pid, 2, true, Flow::V1, || -1, t0));
        s.completed(t0);
        assert_eq!(s.epoch, 2);
    }

    #[test]
    fn a_version_2_end_at_an_exhausted_epoch_takes_a_new_producer_id() {
        let t0 = Instant::now();
        let mut s = TxnState::new(t0);
        ready(&mut s, t0);
        s.epoch = MAX_EPOCH;
        assert!(s.end_needs_id());
        s.add_partitions(7, MAX_EPOCH, [tp("a", 0)], t0).unwrap();
        let effect = end_effect(s.end(7, MAX_EPOCH, false, Flow::V2, || 42, t0));
        assert!(matches!(
            effect,
            Effect::End {
                producer_id: 7,
                epoch: i16::MAX,
                ..
            }
        ));
        s.completed(t0);
        assert_eq!((s.producer_id, s.epoch), (42, 0));
        // The retry under the old id is recognised.
        assert_eq!(
            s.end(7, MAX_EPOCH, false, Flow::V2, || -1, t0),
            Ok(End::Answered)
        );
        // A failed end leaves nothing of its bump behind.
        s.add_partitions(42, 0, [tp("a", 0)], t0).unwrap();
        end_effect(s.end(42, 0, true, Flow::V2, || -1, t0));
        s.failed();
        assert_eq!((s.producer_id, s.epoch, s.next), (42, 0, None));
    }

    #[test]
    fn a_version_2_commit_after_the_coordinator_aborted_is_fenced() {
        let t0 = Instant::now();
        let mut s = TxnState::new(t0);
        let (pid, e) = ready(&mut s, t0);
        s.add_partitions(pid, e, [tp("a", 0)], t0).unwrap();
        s.expire(t0 + Duration::from_secs(10)).unwrap();
        s.completed(t0);
        assert_eq!(
            s.end(pid, e, true, Flow::V2, || -1, t0),
            Err(ResponseError::ProducerFenced)
        );
    }
}
