//! One share partition's record states (KIP-932), without I/O: the share-partition start
//! offset (below it every record is done with), the end of what was ever acquired, and
//! between them each offset's state (available, acquired by a member until a deadline,
//! acknowledged, archived) and delivery count. Acquisition, acknowledgement, lock
//! expiry and a leaving member's release are its only changes; the caller persists the
//! result of each ([`SharePartition::stored`]) before it answers.
//!
//! Offsets are acquired by stored batch, as Kafka does: offsets a batch holds no record
//! for (control records, compacted-away records) are acquired too, and the client
//! acknowledges them as gaps. Unlike Kafka's default mode, a fetch never acquires more
//! than it asked for: a batch larger than that is acquired in parts (and sent whole each
//! time; the client keeps the acquired offsets), because a consumer handed a whole
//! batch of thousands of records lets most of their locks run out before it gets to
//! them (seen with 5,000-record batches and a 4 s lock: almost every acknowledgement
//! came too late).

use std::collections::VecDeque;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A record's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// May be acquired (never delivered in this window, released, or its lock ran out).
    Available,
    /// Delivered to `holder`, locked until `deadline_ms` (wall clock, ms since the epoch,
    /// so a restarted broker keeps the lock).
    Acquired {
        /// The member holding it.
        holder: Arc<str>,
        /// When the lock runs out.
        deadline_ms: i64,
    },
    /// Accepted by a consumer: done.
    Acknowledged,
    /// Rejected, a gap, or delivered as often as allowed: done, never delivered again.
    Archived,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rec {
    state: State,
    deliveries: u16,
}

/// The limits of a share group, per partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How long an acquisition holds a record (`share.record.lock.duration.ms`).
    pub lock_ms: i64,
    /// Deliveries after which a record that comes back is archived
    /// (`group.share.delivery.count.limit`).
    pub delivery_limit: u16,
    /// Offsets the window between the start offset and the end may span before new
    /// records wait (`group.share.partition.max.record.locks`).
    pub max_in_flight: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            lock_ms: 30_000,
            delivery_limit: 5,
            max_in_flight: 2_000,
        }
    }
}

/// Acknowledgement types, as ShareFetch and ShareAcknowledge number them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckType {
    /// 0: the offset holds no record.
    Gap,
    /// 1: processed.
    Accept,
    /// 2: give it back for another delivery.
    Release,
    /// 3: unprocessable: never deliver again.
    Reject,
    /// 4 (ShareFetch and ShareAcknowledge v2, KIP-1222): keep holding it, its lock
    /// starting over.
    Renew,
}

impl AckType {
    /// The type of a wire value; `None` for an unknown one.
    pub fn of(v: i8) -> Option<Self> {
        match v {
            0 => Some(Self::Gap),
            1 => Some(Self::Accept),
            2 => Some(Self::Release),
            3 => Some(Self::Reject),
            4 => Some(Self::Renew),
            _ => None,
        }
    }
}

/// Why an acknowledgement was refused, whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AckError {
    /// Malformed: a range backwards, or types not one per offset (INVALID_REQUEST).
    Invalid(String),
    /// An offset not acquired by this member (any more) (INVALID_RECORD_STATE).
    NotHeld(u64),
}

/// Offsets acquired by one fetch, in runs of one delivery count.
pub type Acquired = Vec<(u64, u64, u16)>;

/// What [`SharePartition::acquire`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acquisition {
    /// The records acquired.
    pub runs: Acquired,
    /// Per batch given, whether it holds an acquired offset (the batches to send).
    pub used: Vec<bool>,
    /// Whether the state changed (records acquired, or gaps archived).
    pub changed: bool,
}

/// One share partition of one share group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePartition {
    start: u64,
    /// Offset `start + i`'s record; `start + recs.len()` is the end: the next offset
    /// never acquired.
    recs: VecDeque<Rec>,
}

impl SharePartition {
    /// A partition whose next record to deliver is at `start`.
    pub fn new(start: u64) -> Self {
        Self {
            start,
            recs: VecDeque::new(),
        }
    }

    /// The share-partition start offset: every record below it is done.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The next offset never acquired.
    pub fn end(&self) -> u64 {
        self.start + self.recs.len() as u64
    }

    /// A record's state and delivery count, for offsets in the window.
    pub fn state(&self, offset: u64) -> Option<(&State, u16)> {
        let i = offset.checked_sub(self.start)?;
        self.recs.get(i as usize).map(|r| (&r.state, r.deliveries))
    }

    /// Offsets currently acquired (any holder).
    pub fn acquired_count(&self) -> usize {
        self.recs
            .iter()
            .filter(|r| matches!(r.state, State::Acquired { .. }))
            .count()
    }

    /// A record that comes back (released, lock run out, holder gone): available again,
    /// or archived once delivered as often as allowed.
    fn come_back(rec: &mut Rec, limit: u16) {
        rec.state = if rec.deliveries >= limit {
            State::Archived
        } else {
            State::Available
        };
    }

    /// Moves the start past every done record at the front.
    fn advance(&mut self) {
        while let Some(r) = self.recs.front() {
            if !matches!(r.state, State::Acknowledged | State::Archived) {
                break;
            }
            self.recs.pop_front();
            self.start += 1;
        }
    }

    /// Gives back the records whose lock ran out by `now_ms`; whether any did.
    pub fn expire(&mut self, now_ms: i64, limits: &Limits) -> bool {
        let mut any = false;
        for r in &mut self.recs {
            if let State::Acquired { deadline_ms, .. } = r.state
                && deadline_ms <= now_ms
            {
                Self::come_back(r, limits.delivery_limit);
                any = true;
            }
        }
        self.advance();
        any
    }

    /// The earliest lock deadline, if anything is acquired.
    pub fn next_expiry(&self) -> Option<i64> {
        self.recs
            .iter()
            .filter_map(|r| match r.state {
                State::Acquired { deadline_ms, .. } => Some(deadline_ms),
                _ => None,
            })
            .min()
    }

    /// Gives back everything `member` holds (it left or its session ended); whether it
    /// held anything.
    pub fn release_member(&mut self, member: &str, limits: &Limits) -> bool {
        let mut any = false;
        for r in &mut self.recs {
            if matches!(&r.state, State::Acquired { holder, .. } if &**holder == member) {
                Self::come_back(r, limits.delivery_limit);
                any = true;
            }
        }
        self.advance();
        any
    }

    /// Forgets what is below the log's start (retention, DeleteRecords); whether the
    /// start moved.
    pub fn truncate_to(&mut self, log_start: u64) -> bool {
        if log_start <= self.start {
            return false;
        }
        let drop = (log_start - self.start).min(self.recs.len() as u64);
        self.recs.drain(..drop as usize);
        self.start = log_start;
        true
    }

    /// Moves the start to `offset` with nothing in flight (AlterShareGroupOffsets).
    pub fn reset(&mut self, offset: u64) {
        self.start = offset;
        self.recs.clear();
    }

    /// The first offset worth reading from for an acquisition: the first available
    /// record in the window, else the end.
    pub fn first_available(&self) -> u64 {
        self.recs
            .iter()
            .position(|r| r.state == State::Available)
            .map_or(self.end(), |i| self.start + i as u64)
    }

    /// Acquires for `member`, from the stored batches `batches` ((first offset, last
    /// offset) each, in order, as read from [`Self::first_available`]): the available
    /// records they cover in the window, then new records past the end, until
    /// `max_records` are acquired or the window is full. Available offsets no batch covers below the last batch read no
    /// longer exist in the log and are archived.
    pub fn acquire(
        &mut self,
        member: &str,
        batches: &[(u64, u64)],
        max_records: u64,
        now_ms: i64,
        limits: &Limits,
    ) -> Acquisition {
        let holder: Arc<str> = Arc::from(member);
        let mut offsets: Vec<(u64, u16)> = Vec::new();
        let mut used = vec![false; batches.len()];
        let mut changed = false;
        let max_records = max_records.max(1);
        let mut covered_to = self.first_available();
        for (bi, &(first, last)) in batches.iter().enumerate() {
            if offsets.len() as u64 >= max_records || last < self.start {
                continue;
            }
            // Offsets between the batches read that the log no longer holds.
            let first = first.max(self.start);
            for o in covered_to..first.min(self.end()) {
                let i = (o - self.start) as usize;
                if self.recs[i].state == State::Available {
                    self.recs[i].state = State::Archived;
                    changed = true;
                }
            }
            covered_to = covered_to.max(last + 1);
            if first >= self.end() && self.end() - self.start >= limits.max_in_flight {
                break;
            }
            for o in first..=last {
                if offsets.len() as u64 >= max_records {
                    break;
                }
                if o < self.end() {
                    let i = (o - self.start) as usize;
                    let r = &mut self.recs[i];
                    if r.state != State::Available {
                        continue;
                    }
                    r.deliveries = r.deliveries.saturating_add(1);
                    r.state = State::Acquired {
                        holder: holder.clone(),
                        deadline_ms: now_ms + limits.lock_ms,
                    };
                    offsets.push((o, r.deliveries));
                } else {
                    // Past the end: offsets between the end and the batch (a gap in the
                    // log) are done; the batch's own are acquired.
                    while self.end() < o {
                        self.recs.push_back(Rec {
                            state: State::Archived,
                            deliveries: 0,
                        });
                    }
                    self.recs.push_back(Rec {
                        state: State::Acquired {
                            holder: holder.clone(),
                            deadline_ms: now_ms + limits.lock_ms,
                        },
                        deliveries: 1,
                    });
                    offsets.push((o, 1));
                }
                used[bi] = true;
            }
        }
        self.advance();
        let mut runs: Acquired = Vec::new();
        for (o, d) in offsets {
            match runs.last_mut() {
                Some((_, last, dl)) if *last + 1 == o && *dl == d => *last = o,
                _ => runs.push((o, o, d)),
            }
        }
        Acquisition {
            changed: changed || !runs.is_empty(),
            runs,
            used,
        }
    }

    /// Applies one acknowledgement batch of `member`: `types` holds one type for every
    /// offset of `first..=last`, or one for all. All or nothing: an offset this member
    /// does not hold refuses the whole batch. A renewal at `now_ms` locks the record
    /// for another lock duration. Returns how many offsets were acknowledged (renewals
    /// are not).
    pub fn acknowledge(
        &mut self,
        member: &str,
        first: i64,
        last: i64,
        types: &[AckType],
        now_ms: i64,
        limits: &Limits,
    ) -> Result<u64, AckError> {
        if first < 0 || last < first {
            return Err(AckError::Invalid(format!(
                "acknowledgement range {first}..={last} is invalid"
            )));
        }
        let (first, last) = (first as u64, last as u64);
        let n = last - first + 1;
        if types.is_empty() || (types.len() != 1 && types.len() as u64 != n) {
            return Err(AckError::Invalid(format!(
                "{} acknowledge types for {n} offsets",
                types.len()
            )));
        }
        for o in first..=last {
            match self.state(o) {
                Some((State::Acquired { holder, .. }, _)) if &**holder == member => {}
                _ => return Err(AckError::NotHeld(o)),
            }
        }
        let mut acknowledged = 0;
        for (k, o) in (first..=last).enumerate() {
            let t = if types.len() == 1 { types[0] } else { types[k] };
            let r = &mut self.recs[(o - self.start) as usize];
            match t {
                AckType::Accept => r.state = State::Acknowledged,
                AckType::Gap | AckType::Reject => r.state = State::Archived,
                AckType::Release => Self::come_back(r, limits.delivery_limit),
                AckType::Renew => {
                    if let State::Acquired { deadline_ms, .. } = &mut r.state {
                        *deadline_ms = now_ms + limits.lock_ms;
                    }
                    continue;
                }
            }
            acknowledged += 1;
        }
        self.advance();
        Ok(acknowledged)
    }

    /// The durable form.
    pub fn stored(&self) -> StoredSharePartition {
        let mut runs: Vec<StoredRun> = Vec::new();
        for (i, r) in self.recs.iter().enumerate() {
            let o = self.start + i as u64;
            let (state, holder, deadline_ms) = match &r.state {
                State::Available => (0, None, 0),
                State::Acquired {
                    holder,
                    deadline_ms,
                } => (1, Some(holder.to_string()), *deadline_ms),
                State::Acknowledged => (2, None, 0),
                State::Archived => (3, None, 0),
            };
            match runs.last_mut() {
                Some(run)
                    if run.last + 1 == o
                        && run.state == state
                        && run.deliveries == r.deliveries
                        && run.holder == holder
                        && run.deadline_ms == deadline_ms =>
                {
                    run.last = o
                }
                _ => runs.push(StoredRun {
                    first: o,
                    last: o,
                    state,
                    deliveries: r.deliveries,
                    holder,
                    deadline_ms,
                }),
            }
        }
        StoredSharePartition {
            start: self.start,
            end: self.end(),
            runs,
        }
    }

    /// From the durable form; `None` when it does not hold together (runs out of order
    /// or outside the window, an unknown state).
    pub fn restore(s: StoredSharePartition) -> Option<Self> {
        if s.end < s.start || s.end - s.start > 1 << 24 {
            return None;
        }
        let mut recs: VecDeque<Rec> = (s.start..s.end)
            .map(|_| Rec {
                state: State::Available,
                deliveries: 0,
            })
            .collect();
        let mut next = s.start;
        for run in s.runs {
            if run.first < next || run.last < run.first || run.last >= s.end {
                return None;
            }
            let state = match (run.state, run.holder) {
                (0, None) => State::Available,
                (1, Some(h)) => State::Acquired {
                    holder: Arc::from(h),
                    deadline_ms: run.deadline_ms,
                },
                (2, None) => State::Acknowledged,
                (3, None) => State::Archived,
                _ => return None,
            };
            for o in run.first..=run.last {
                recs[(o - s.start) as usize] = Rec {
                    state: state.clone(),
                    deliveries: run.deliveries,
                };
            }
            next = run.last + 1;
        }
        Some(Self {
            start: s.start,
            recs,
        })
    }
}

/// Format version of a stored share partition, its first byte.
pub const VERSION: u8 = 1;

/// A share partition as stored in the catalog's share states: the window in runs of
/// equal records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSharePartition {
    /// Start offset.
    pub start: u64,
    /// End offset (exclusive).
    pub end: u64,
    /// Runs of records in the window, in order; offsets no run covers are available and
    /// never delivered.
    pub runs: Vec<StoredRun>,
}

/// Consecutive offsets in one state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredRun {
    /// First offset.
    pub first: u64,
    /// Last offset (inclusive).
    pub last: u64,
    /// 0 available, 1 acquired, 2 acknowledged, 3 archived.
    pub state: u8,
    /// Delivery count.
    pub deliveries: u16,
    /// The holder of acquired records.
    pub holder: Option<String>,
    /// The lock's deadline of acquired records (ms since the epoch), else 0.
    pub deadline_ms: i64,
}

impl StoredSharePartition {
    /// Its bytes: the version, then postcard.
    pub fn encode(&self) -> Vec<u8> {
        crate::group::durable::encode_versioned(VERSION, self)
    }

    /// Reads [`Self::encode`]'s bytes; `None` for another version or corrupt bytes.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        crate::group::durable::decode_versioned(VERSION, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Limits = Limits {
        lock_ms: 1_000,
        delivery_limit: 3,
        max_in_flight: 100,
    };

    #[test]
    fn acquires_at_most_what_was_asked_and_acknowledges() {
        let mut p = SharePartition::new(0);
        let got = p.acquire("a", &[(0, 4), (5, 9)], 3, 0, &L);
        // Part of a batch: the batch is sent whole, the client keeps the offsets held.
        assert_eq!(got.runs, vec![(0, 2, 1)]);
        assert_eq!(got.used, vec![true, false]);
        let got = p.acquire("b", &[(0, 4), (5, 9)], 10, 0, &L);
        assert_eq!(got.runs, vec![(3, 9, 1)]);
        assert_eq!(got.used, vec![true, true]);
        assert_eq!(
            p.acknowledge("a", 5, 5, &[AckType::Accept], 0, &L),
            Err(AckError::NotHeld(5))
        );
        p.acknowledge("a", 0, 2, &[AckType::Accept], 0, &L).unwrap();
        assert_eq!(p.start(), 3);
        p.acknowledge(
            "b",
            3,
            9,
            &[
                AckType::Accept,
                AckType::Release,
                AckType::Reject,
                AckType::Gap,
                AckType::Accept,
                AckType::Accept,
                AckType::Accept,
            ],
            0,
            &L,
        )
        .unwrap();
        // 4 was released: the start stops there.
        assert_eq!((p.start(), p.end()), (4, 10));
        assert_eq!(p.first_available(), 4);
        let got = p.acquire("a", &[(0, 4), (5, 9), (10, 11)], 1, 0, &L);
        assert_eq!(got.runs, vec![(4, 4, 2)]);
        assert_eq!(got.used, vec![true, false, false]);
    }

    #[test]
    fn locks_expire_and_the_limit_archives() {
        let mut p = SharePartition::new(10);
        for round in 1..=3u16 {
            let Acquisition { runs, .. } = p.acquire("a", &[(10, 10)], 1, 0, &L);
            assert_eq!(runs, vec![(10, 10, round)]);
            assert_eq!(p.next_expiry(), Some(1_000));
            assert!(!p.expire(999, &L));
            assert!(p.expire(1_000, &L));
        }
        // Delivered 3 times: archived, and the start moves past it.
        assert_eq!(p.start(), 11);
        let Acquisition { runs, .. } = p.acquire("a", &[(11, 12)], 5, 0, &L);
        assert_eq!(runs, vec![(11, 12, 1)]);
        assert!(p.release_member("a", &L));
        assert_eq!(p.state(11), Some((&State::Available, 1)));
        assert_eq!(
            p.acknowledge("a", 11, 12, &[AckType::Accept], 0, &L),
            Err(AckError::NotHeld(11))
        );
    }

    #[test]
    fn a_renewal_keeps_the_lock_going() {
        let mut p = SharePartition::new(0);
        p.acquire("a", &[(0, 1)], 10, 0, &L);
        assert_eq!(p.acknowledge("a", 0, 1, &[AckType::Renew], 900, &L), Ok(0));
        assert_eq!(p.next_expiry(), Some(1_900));
        assert!(!p.expire(1_500, &L));
        assert_eq!(
            p.acknowledge("a", 0, 1, &[AckType::Renew, AckType::Accept], 1_500, &L),
            Ok(1)
        );
        assert!(p.expire(2_500, &L));
        assert_eq!(p.state(0), Some((&State::Available, 1)));
        assert_eq!(p.start(), 0);
    }

    #[test]
    fn gaps_and_a_full_window() {
        let mut p = SharePartition::new(0);
        // Offsets 3-4 are in no batch: archived when acquired past.
        let Acquisition { runs, .. } = p.acquire("a", &[(0, 2), (5, 6)], 10, 0, &L);
        assert_eq!(runs, vec![(0, 2, 1), (5, 6, 1)]);
        assert_eq!(p.state(3), Some((&State::Archived, 0)));
        let small = Limits {
            max_in_flight: 7,
            ..L
        };
        let Acquisition { runs, .. } = p.acquire("a", &[(7, 8)], 10, 0, &small);
        assert!(runs.is_empty());
        p.acknowledge("a", 0, 2, &[AckType::Accept], 0, &L).unwrap();
        let Acquisition { runs, .. } = p.acquire("a", &[(7, 8)], 10, 0, &small);
        assert_eq!(runs, vec![(7, 8, 1)]);
        assert!(p.truncate_to(6));
        assert_eq!((p.start(), p.end()), (6, 9));
    }

    #[test]
    fn bad_acknowledgements_change_nothing() {
        let mut p = SharePartition::new(0);
        p.acquire("a", &[(0, 3)], 10, 0, &L);
        let before = p.clone();
        assert!(matches!(
            p.acknowledge("a", 2, 1, &[AckType::Accept], 0, &L),
            Err(AckError::Invalid(_))
        ));
        assert!(matches!(
            p.acknowledge("a", 0, 3, &[AckType::Accept, AckType::Accept], 0, &L),
            Err(AckError::Invalid(_))
        ));
        assert_eq!(
            p.acknowledge("a", 2, 4, &[AckType::Accept], 0, &L),
            Err(AckError::NotHeld(4))
        );
        assert_eq!(p, before);
    }

    #[test]
    fn stored_state_round_trips_and_its_bytes_are_frozen() {
        let mut p = SharePartition::new(5);
        p.acquire("m", &[(5, 7)], 10, 100, &L);
        p.acknowledge("m", 5, 5, &[AckType::Accept], 0, &L).unwrap();
        p.acknowledge("m", 7, 7, &[AckType::Release], 0, &L)
            .unwrap();
        let stored = p.stored();
        let bytes = stored.encode();
        assert_eq!(
            bytes,
            [
                1, 6, 8, 2, // version, start 6, end 8, two runs
                6, 6, 1, 1, 1, 1, b'm', 0x98, 0x11, // 6: acquired by m until 1100
                7, 7, 0, 1, 0, 0, // 7: available, delivered once
            ]
        );
        let back = StoredSharePartition::decode(&bytes).unwrap();
        assert_eq!(SharePartition::restore(back), Some(p));
        assert_eq!(StoredSharePartition::decode(&[2, 0, 0, 0]), None);
        let bad = StoredSharePartition {
            start: 5,
            end: 4,
            runs: vec![],
        };
        assert_eq!(SharePartition::restore(bad), None);
    }
}
