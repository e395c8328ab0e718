//! Fetch sessions (KIP-227): a consumer's partitions and fetch positions kept between its
//! fetches, so each request names only what changed and each response carries only the
//! partitions with news (records, or a moved high watermark, last stable offset or log
//! start, or an error). Sessions live in memory only: after a restart a client's next
//! incremental fetch gets FETCH_SESSION_ID_NOT_FOUND and it starts a new session. The
//! cache holds at most `slots` sessions; a new one evicts the least recently used only
//! when that one has been idle for [`EVICTABLE_AFTER`], else the fetch goes sessionless
//! (Kafka's rule, without its preference for larger sessions).
//!
//! Each partition also keeps the catalog's generation of it from before the read that
//! made its last answer ([`Known`]): while that generation holds and the consumer is at
//! the end, the answer would be the same, so the fetch skips reading the partition. A
//! consumer of 1,000 quiet partitions otherwise cost the same broker CPU per fetch with
//! sessions as without (6.6 ms, measured 2026-12-01).

use std::collections::HashMap;

use catalog::wakeups::PartitionId;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{FetchRequest, FetchResponse, TopicName};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

/// A session idle this long may be evicted for a new one (Kafka's
/// `min.incremental.fetch.session.eviction.ms` default).
pub const EVICTABLE_AFTER: Duration = Duration::from_secs(120);

/// Session epochs: -1 ends (or skips) a session, 0 starts one.
const FINAL_EPOCH: i32 = -1;
const INITIAL_EPOCH: i32 = 0;

/// One partition of a session.
#[derive(Debug, Clone)]
struct Cached {
    topic: TopicName,
    topic_id: uuid::Uuid,
    partition: i32,
    fetch_offset: i64,
    max_bytes: i32,
    /// High watermark, last stable offset and log start last sent (`None`: never).
    sent: Option<(i64, i64, i64)>,
    /// The partition's generation read before the read `sent` came from (`None`: not
    /// read, or answered with an error).
    generation: Option<u64>,
}

/// What a session last answered for a partition, with the partition's generation from
/// before that answer's read: while the generation holds, the partition is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    /// The generation read before the read.
    pub generation: u64,
    /// The high watermark answered.
    pub high_watermark: i64,
    /// The last stable offset answered.
    pub last_stable_offset: i64,
    /// The log start offset answered.
    pub log_start_offset: i64,
}

/// An incremental fetch as the full request it stands for.
#[derive(Debug)]
pub struct Incremental {
    /// Every partition of the session.
    pub request: FetchRequest,
    /// For each partition of `request` (same nesting), what was last answered for it.
    pub known: Vec<Vec<Option<Known>>>,
}

#[derive(Debug)]
struct Session {
    /// The epoch the next request must carry.
    epoch: i32,
    partitions: Vec<Cached>,
    last_used: Instant,
}

/// What a fetch request is, as far as sessions go.
#[derive(Debug)]
pub enum Plan {
    /// A full fetch with no session (session id 0 in the answer).
    Sessionless,
    /// A full fetch that starts session `id`.
    New(i32),
    /// An incremental fetch of session `id`: read its request, the session's partitions.
    Incremental(i32, Box<Incremental>),
    /// A top-level error.
    Refused(ResponseError),
}

/// The fetch session cache.
pub struct FetchSessions {
    slots: usize,
    inner: Mutex<Inner>,
    open: Gauge,
    evictions: Counter,
}

#[derive(Default)]
struct Inner {
    next_id: i32,
    sessions: HashMap<i32, Session>,
}

fn same(a: &Cached, topic: &TopicName, topic_id: uuid::Uuid, by_id: bool) -> bool {
    if by_id {
        a.topic_id == topic_id
    } else {
        a.topic == *topic
    }
}

impl FetchSessions {
    /// A cache of at most `slots` sessions, reporting into these metrics.
    pub fn new(slots: usize, open: Gauge, evictions: Counter) -> Self {
        Self {
            slots,
            inner: Mutex::new(Inner::default()),
            open,
            evictions,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Decides what `req` is and updates its session. `by_id`: the request names topics
    /// by id (v13+).
    pub fn plan(&self, req: &FetchRequest, by_id: bool, now: Instant) -> Plan {
        let mut inner = self.lock();
        let plan = match (req.session_id, req.session_epoch) {
            (0, FINAL_EPOCH) => Plan::Sessionless,
            (id, FINAL_EPOCH) => {
                inner.sessions.remove(&id);
                Plan::Sessionless
            }
            (id, INITIAL_EPOCH) => {
                if id != 0 {
                    inner.sessions.remove(&id);
                }
                self.create(&mut inner, req, by_id, now)
            }
            (id, epoch) => match inner.sessions.get_mut(&id) {
                None => Plan::Refused(ResponseError::FetchSessionIdNotFound),
                Some(s) if s.epoch != epoch => {
                    Plan::Refused(ResponseError::InvalidFetchSessionEpoch)
                }
                Some(s) => {
                    update(s, req, by_id);
                    s.epoch = s.epoch.checked_add(1).unwrap_or(1);
                    s.last_used = now;
                    Plan::Incremental(id, Box::new(request_of(s, req)))
                }
            },
        };
        self.open.set(inner.sessions.len() as i64);
        plan
    }

    fn create(&self, inner: &mut Inner, req: &FetchRequest, by_id: bool, now: Instant) -> Plan {
        if inner.sessions.len() >= self.slots {
            let idle = inner
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.last_used)
                .filter(|(_, s)| now.saturating_duration_since(s.last_used) >= EVICTABLE_AFTER)
                .map(|(id, _)| *id);
            match idle {
                Some(id) => {
                    inner.sessions.remove(&id);
                    self.evictions.inc();
                }
                None => return Plan::Sessionless,
            }
        }
        // Ids are positive and never 0 (no session); a wrapped counter starts over.
        let mut id = inner.next_id;
        loop {
            id = if (1..i32::MAX).contains(&id) {
                id + 1
            } else {
                1
            };
            if !inner.sessions.contains_key(&id) {
                break;
            }
        }
        inner.next_id = id;
        let mut s = Session {
            epoch: 1,
            partitions: Vec::new(),
            last_used: now,
        };
        update(&mut s, req, by_id);
        inner.sessions.insert(id, s);
        Plan::New(id)
    }

    /// Called with the response about to go out for session `id`: records what it tells
    /// the client (with the `generations` its partitions were read at) and, for an
    /// incremental fetch, leaves out the partitions with no news.
    pub fn sent(
        &self,
        id: i32,
        resp: &mut FetchResponse,
        incremental: bool,
        generations: &HashMap<PartitionId, u64>,
    ) {
        let mut inner = self.lock();
        let Some(s) = inner.sessions.get_mut(&id) else {
            return;
        };
        resp.session_id = id;
        // Responses list partitions in the session's order, so the next one is looked
        // for first: a search from the start each time was quadratic in the partitions.
        let mut next = 0;
        for t in resp.responses.iter_mut() {
            let topic_id = t.topic_id.as_u128();
            t.partitions.retain(|p| {
                let matches = |c: &Cached| {
                    c.partition == p.partition_index
                        && (c.topic == t.topic
                            || (!c.topic_id.is_nil() && c.topic_id == t.topic_id))
                };
                let n = s.partitions.len();
                let Some(i) = (0..n)
                    .map(|i| (next + i) % n)
                    .find(|&i| matches(&s.partitions[i]))
                else {
                    return true;
                };
                next = i + 1;
                let c = &mut s.partitions[i];
                let now = (p.high_watermark, p.last_stable_offset, p.log_start_offset);
                let news = c.sent != Some(now)
                    || p.error_code != 0
                    || p.records.as_ref().is_some_and(|r| !r.is_empty());
                c.sent = Some(now);
                c.generation = if p.error_code == 0 {
                    generations
                        .get(&(topic_id, p.partition_index as u32))
                        .copied()
                } else {
                    None
                };
                news || !incremental
            });
        }
        resp.responses.retain(|t| !t.partitions.is_empty());
    }
}

/// Applies a request's partitions (added or moved) and forgotten topics to a session.
fn update(s: &mut Session, req: &FetchRequest, by_id: bool) {
    for t in &req.topics {
        for p in &t.partitions {
            let found = s
                .partitions
                .iter_mut()
                .find(|c| c.partition == p.partition && same(c, &t.topic, t.topic_id, by_id));
            match found {
                Some(c) => {
                    c.fetch_offset = p.fetch_offset;
                    c.max_bytes = p.partition_max_bytes;
                }
                None => s.partitions.push(Cached {
                    topic: t.topic.clone(),
                    topic_id: t.topic_id,
                    partition: p.partition,
                    fetch_offset: p.fetch_offset,
                    max_bytes: p.partition_max_bytes,
                    sent: None,
                    generation: None,
                }),
            }
        }
    }
    for f in &req.forgotten_topics_data {
        s.partitions.retain(|c| {
            !(same(c, &f.topic, f.topic_id, by_id) && f.partitions.contains(&c.partition))
        });
    }
}

/// The full request an incremental fetch stands for: every partition of the session,
/// with what was last answered for each.
fn request_of(s: &Session, req: &FetchRequest) -> Incremental {
    let mut topics: Vec<FetchTopic> = Vec::new();
    let mut known: Vec<Vec<Option<Known>>> = Vec::new();
    for c in &s.partitions {
        let k = match (c.generation, c.sent) {
            (Some(generation), Some((hw, lso, start))) => Some(Known {
                generation,
                high_watermark: hw,
                last_stable_offset: lso,
                log_start_offset: start,
            }),
            _ => None,
        };
        let p = FetchPartition::default()
            .with_partition(c.partition)
            .with_current_leader_epoch(-1)
            .with_fetch_offset(c.fetch_offset)
            .with_last_fetched_epoch(-1)
            .with_log_start_offset(-1)
            .with_partition_max_bytes(c.max_bytes);
        match (topics.last_mut(), known.last_mut()) {
            (Some(t), Some(ks)) if t.topic == c.topic && t.topic_id == c.topic_id => {
                t.partitions.push(p);
                ks.push(k);
            }
            _ => {
                topics.push(
                    FetchTopic::default()
                        .with_topic(c.topic.clone())
                        .with_topic_id(c.topic_id)
                        .with_partitions(vec![p]),
                );
                known.push(vec![k]);
            }
        }
    }
    let request = FetchRequest::default()
        .with_max_wait_ms(req.max_wait_ms)
        .with_min_bytes(req.min_bytes)
        .with_max_bytes(req.max_bytes)
        .with_isolation_level(req.isolation_level)
        .with_session_id(req.session_id)
        .with_session_epoch(req.session_epoch)
        .with_topics(topics);
    Incremental { request, known }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::fetch_request::ForgottenTopic;
    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
    use kafka_protocol::protocol::StrBytes;

    fn name(s: &'static str) -> TopicName {
        TopicName(StrBytes::from_static_str(s))
    }

    fn req(id: i32, epoch: i32, parts: &[(&'static str, i32, i64)]) -> FetchRequest {
        let mut topics: Vec<FetchTopic> = Vec::new();
        for (t, p, o) in parts {
            let fp = FetchPartition::default()
                .with_partition(*p)
                .with_fetch_offset(*o)
                .with_partition_max_bytes(1000);
            match topics.last_mut() {
                Some(x) if x.topic == name(t) => x.partitions.push(fp),
                _ => topics.push(
                    FetchTopic::default()
                        .with_topic(name(t))
                        .with_partitions(vec![fp]),
                ),
            }
        }
        FetchRequest::default()
            .with_session_id(id)
            .with_session_epoch(epoch)
            .with_topics(topics)
    }

    fn resp(parts: &[(&'static str, i32, i64, bool)]) -> FetchResponse {
        FetchResponse::default().with_responses(
            parts
                .iter()
                .map(|(t, p, hw, data)| {
                    FetchableTopicResponse::default()
                        .with_topic(name(t))
                        .with_partitions(vec![
                            PartitionData::default()
                                .with_partition_index(*p)
                                .with_high_watermark(*hw)
                                .with_last_stable_offset(*hw)
                                .with_log_start_offset(0)
                                .with_records(Some(if *data {
                                    bytes::Bytes::from_static(b"x")
                                } else {
                                    bytes::Bytes::new()
                                })),
                        ])
                })
                .collect(),
        )
    }

    fn partitions(r: &FetchResponse) -> Vec<(String, i32)> {
        r.responses
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(move |p| (t.topic.to_string(), p.partition_index))
            })
            .collect()
    }

    #[test]
    fn a_session_keeps_its_partitions_and_answers_only_news() {
        let c = FetchSessions::new(10, Gauge::default(), Counter::default());
        let t0 = Instant::now();
        let Plan::New(id) = c.plan(
            &req(0, 0, &[("a", 0, 5), ("a", 1, 7), ("b", 0, 0)]),
            false,
            t0,
        ) else {
            panic!()
        };
        let mut full = resp(&[("a", 0, 9, true), ("a", 1, 7, false), ("b", 0, 0, false)]);
        // a/0 and a/1 were read at generations 3 and 4 (the test's topics have no ids).
        let generations = HashMap::from([((0, 0), 3), ((0, 1), 4)]);
        c.sent(id, &mut full, false, &generations);
        assert_eq!(full.session_id, id);
        assert_eq!(partitions(&full).len(), 3, "a full answer names everything");

        // Epoch 1: a/0 moved on, b/0 forgotten; the fetch covers a/0 and a/1.
        let mut inc = req(id, 1, &[("a", 0, 9)]);
        inc.forgotten_topics_data = vec![
            ForgottenTopic::default()
                .with_topic(name("b"))
                .with_partitions(vec![0]),
        ];
        let Plan::Incremental(_, r) = c.plan(&inc, false, t0) else {
            panic!()
        };
        let asked: Vec<(String, i32, i64)> = r
            .request
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(move |p| (t.topic.to_string(), p.partition, p.fetch_offset))
            })
            .collect();
        assert_eq!(asked, vec![("a".into(), 0, 9), ("a".into(), 1, 7)]);
        // What each was last answered, with the generation it was read at.
        let known = |generation, hw| Known {
            generation,
            high_watermark: hw,
            last_stable_offset: hw,
            log_start_offset: 0,
        };
        assert_eq!(r.known, vec![vec![Some(known(3, 9)), Some(known(4, 7))]]);
        // Only a/1's high watermark moved: only it is answered.
        let mut answer = resp(&[("a", 0, 9, false), ("a", 1, 8, false)]);
        c.sent(id, &mut answer, true, &HashMap::from([((0, 1), 5)]));
        assert_eq!(partitions(&answer), vec![("a".into(), 1)]);
        // a/0 was not read this time (no generation given): it must be read next time.
        let Plan::Incremental(_, r) = c.plan(&req(id, 2, &[]), false, t0) else {
            panic!()
        };
        assert_eq!(r.known, vec![vec![None, Some(known(5, 8))]]);

        // A replayed epoch, an unknown session: refused.
        assert!(matches!(
            c.plan(&req(id, 1, &[]), false, t0),
            Plan::Refused(ResponseError::InvalidFetchSessionEpoch)
        ));
        assert!(matches!(
            c.plan(&req(id + 7, 1, &[]), false, t0),
            Plan::Refused(ResponseError::FetchSessionIdNotFound)
        ));
        // Epoch -1 closes it.
        assert!(matches!(
            c.plan(&req(id, -1, &[]), false, t0),
            Plan::Sessionless
        ));
        assert!(matches!(
            c.plan(&req(id, 2, &[]), false, t0),
            Plan::Refused(ResponseError::FetchSessionIdNotFound)
        ));
    }

    #[test]
    fn a_full_cache_evicts_only_idle_sessions() {
        let evictions = Counter::default();
        let c = FetchSessions::new(1, Gauge::default(), evictions.clone());
        let t0 = Instant::now();
        assert!(matches!(
            c.plan(&req(0, 0, &[("a", 0, 0)]), false, t0),
            Plan::New(_)
        ));
        assert!(matches!(
            c.plan(
                &req(0, 0, &[("a", 0, 0)]),
                false,
                t0 + Duration::from_secs(5)
            ),
            Plan::Sessionless
        ));
        assert!(matches!(
            c.plan(&req(0, 0, &[("a", 0, 0)]), false, t0 + EVICTABLE_AFTER),
            Plan::New(_)
        ));
        assert_eq!(evictions.get(), 1);
    }
}
