//! Share sessions (KIP-932): the partitions a share consumer fetches from, kept by the
//! broker between ShareFetch requests so that a request names only what changed. Epoch 0
//! opens a session, each request after it carries the next epoch, and -1 closes it (the
//! member's records are then given back). Sessions live in memory only: after a restart
//! a consumer is told SHARE_SESSION_NOT_FOUND and opens a new one.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use kafka_protocol::error::ResponseError;

/// A topic id and partition.
pub type Tp = (u128, u32);

/// What a request may do with its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Go on with these partitions; the second list holds those the session had and no
    /// longer has (forgotten, or left out of a session opened again), whose records the
    /// member holds must be given back.
    Open(Vec<Tp>, Vec<Tp>),
    /// The session closed; these were its partitions.
    Closed(Vec<Tp>),
}

struct Session {
    /// The epoch the next request must carry.
    next: i32,
    partitions: BTreeSet<Tp>,
}

/// The share sessions of this broker, by group and member.
pub struct ShareSessions {
    max: usize,
    map: Mutex<HashMap<(String, String), Session>>,
}

impl ShareSessions {
    /// Room for `max` sessions.
    pub fn new(max: usize) -> Self {
        Self {
            max,
            map: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request's step: `epoch` as sent, the partitions it adds and those it
    /// forgets. `fetch` is false for ShareAcknowledge, which cannot open a session.
    pub fn step(
        &self,
        group: &str,
        member: &str,
        epoch: i32,
        add: &[Tp],
        forget: &[Tp],
        fetch: bool,
    ) -> Result<Step, ResponseError> {
        // A panic while holding the lock is a bug; the map is still usable.
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let key = (group.to_string(), member.to_string());
        match epoch {
            0 if fetch => {
                if !map.contains_key(&key) && map.len() >= self.max {
                    return Err(ResponseError::ShareSessionLimitReached);
                }
                let partitions: BTreeSet<Tp> = add.iter().copied().collect();
                let dropped = map
                    .insert(
                        key,
                        Session {
                            next: 1,
                            partitions: partitions.clone(),
                        },
                    )
                    .map(|old| old.partitions.difference(&partitions).copied().collect())
                    .unwrap_or_default();
                Ok(Step::Open(add.to_vec(), dropped))
            }
            -1 => match map.remove(&key) {
                Some(s) => Ok(Step::Closed(s.partitions.into_iter().collect())),
                None => Err(ResponseError::ShareSessionNotFound),
            },
            e if e > 0 => {
                let Some(s) = map.get_mut(&key) else {
                    return Err(ResponseError::ShareSessionNotFound);
                };
                if s.next != e {
                    return Err(ResponseError::InvalidShareSessionEpoch);
                }
                s.next = if e == i32::MAX { 1 } else { e + 1 };
                s.partitions.extend(add.iter().copied());
                let mut dropped = Vec::new();
                for tp in forget {
                    if s.partitions.remove(tp) {
                        dropped.push(*tp);
                    }
                }
                Ok(Step::Open(s.partitions.iter().copied().collect(), dropped))
            }
            _ => Err(ResponseError::InvalidShareSessionEpoch),
        }
    }

    /// Ends every session of `member` (it left the group or its session ran out).
    pub fn forget_member(&self, group: &str, member: &str) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(&(group.to_string(), member.to_string()));
    }

    /// Sessions held.
    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether none are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_open_go_on_and_close() {
        let s = ShareSessions::new(1);
        assert_eq!(
            s.step("g", "m", 1, &[], &[], true),
            Err(ResponseError::ShareSessionNotFound)
        );
        assert_eq!(
            s.step("g", "m", 0, &[(1, 0)], &[], false),
            Err(ResponseError::InvalidShareSessionEpoch)
        );
        assert_eq!(
            s.step("g", "m", 0, &[(1, 0)], &[], true),
            Ok(Step::Open(vec![(1, 0)], vec![]))
        );
        assert_eq!(
            s.step("g", "other", 0, &[], &[], true),
            Err(ResponseError::ShareSessionLimitReached)
        );
        assert_eq!(
            s.step("g", "m", 2, &[], &[], true),
            Err(ResponseError::InvalidShareSessionEpoch)
        );
        assert_eq!(
            s.step("g", "m", 1, &[(1, 1)], &[(1, 0)], true),
            Ok(Step::Open(vec![(1, 1)], vec![(1, 0)]))
        );
        // Opened again without (1, 1): it is dropped too.
        assert_eq!(
            s.step("g", "m", 0, &[(1, 2)], &[], true),
            Ok(Step::Open(vec![(1, 2)], vec![(1, 1)]))
        );
        assert_eq!(
            s.step("g", "m", -1, &[], &[], false),
            Ok(Step::Closed(vec![(1, 2)]))
        );
        assert!(s.is_empty());
    }
}
