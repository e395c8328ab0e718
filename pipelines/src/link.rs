//! One link over one partition of its source: read the events past the link's cursor,
//! deliver them to the function (retrying with backoff, `events_order` bounding how many
//! are in flight, batches when the function batches), then hand the whole window on in
//! one catalog transaction: the replies appended to the function's topic, the events
//! that failed every attempt appended to the dead-letter topic, and the cursor moved
//! from where it was read. If anything else moved the cursor first (another node, a
//! restart), the transaction fails whole and the window is read again, so each event
//! crosses each hop exactly once, whatever crashes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use catalog::{Catalog, CatalogError, Op, PipelineOp, TopicRecord, Transaction};
use futures::StreamExt;

use crate::deliver::{self, Failure};
use crate::event::{Event, Reply};
use crate::metrics::{FunctionLabels, LinkLabels, PipelineMetrics};
use crate::records::{self, OutRecord};
use crate::spec::{Function, Link, Pipeline};
use crate::trace::{self, Span};

/// Most events one window hands on.
const WINDOW: usize = 256;
/// Longest wait for new events before the cursor is read again (new events wake it
/// sooner).
const IDLE_WAIT: Duration = Duration::from_secs(2);

/// What a link worker needs.
pub struct LinkWorker {
    /// The catalog.
    pub catalog: Arc<dyn Catalog>,
    /// The HTTP client.
    pub client: reqwest::Client,
    /// Metrics.
    pub metrics: PipelineMetrics,
    /// `ce_type` prefix of the events Eddy makes.
    pub type_prefix: String,
    /// The deployed definition.
    pub pipeline: Arc<Pipeline>,
    /// The link.
    pub link: Link,
    /// Its function.
    pub function: Function,
    /// Where the function listens (its `url`, or an instance of its `command`).
    pub url: Arc<dyn Fn() -> Option<String> + Send + Sync>,
    /// The source partition.
    pub partition: u32,
    /// Whether this server runs it now.
    pub ownership: Arc<dyn crate::ownership::Ownership>,
    /// Where committed spans are exported too (none: not configured).
    pub otlp: Option<crate::otlp::Exporter>,
    /// What this worker last added to the link's `waiting` gauge (taken back when the
    /// worker stops).
    pub waiting: AtomicI64,
}

impl Drop for LinkWorker {
    fn drop(&mut self) {
        let mine = self.waiting.load(Ordering::Relaxed);
        self.metrics
            .waiting
            .get_or_create(&self.labels())
            .dec_by(mine);
    }
}

/// One event's fate.
enum Outcome {
    /// Handed on (the reply, if any link takes the function's replies), with the spans
    /// of its attempts.
    Reply(Event, Vec<Span>),
    /// Every attempt failed: the event and the last failure, to the dead-letter topic.
    Failed(Event, Failure, u32, String, Vec<Span>),
    /// Not for this link (its labels do not match).
    Skipped,
}

impl LinkWorker {
    fn labels(&self) -> LinkLabels {
        LinkLabels {
            pipeline: self.pipeline.name.clone(),
            link: self.link.name(),
        }
    }

    /// Runs until aborted.
    pub async fn run(self) {
        let source = self.pipeline.topic_of(&self.link.from);
        loop {
            match self.step(&source).await {
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(
                        pipeline = %self.pipeline.name,
                        link = %self.link.name(),
                        partition = self.partition,
                        error = %e,
                        "pipeline link could not hand events on; retrying"
                    );
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    /// Hands one window on, or waits for events. `Ok(true)` when the cursor moved.
    async fn step(&self, source: &str) -> Result<bool, CatalogError> {
        let key = crate::ownership::key(&self.pipeline.name, &self.link.name(), self.partition);
        let Some(leases) = self.ownership.owns(&key) else {
            // Another server runs it; look again later (it may die).
            tokio::time::sleep(IDLE_WAIT).await;
            return Ok(false);
        };
        let topic = self
            .catalog
            .kafka()
            .topic(source)
            .await?
            .ok_or_else(|| CatalogError::UnknownTopic(source.to_owned()))?;
        // Registered before reading, so an append after the read still wakes it.
        let waiter = self.catalog.watch_partitions(&[(topic.id, self.partition)]);
        let cursor = self.link.name();
        let at = self
            .catalog
            .pipelines()
            .position(&self.pipeline.name, &cursor, self.partition)
            .await?;
        let read = records::read(self.catalog.as_ref(), &topic, self.partition, at).await?;
        // The link's gauge sums its partitions: each worker adds its own change.
        let waiting = read.end.saturating_sub(at) as i64;
        let before = self.waiting.swap(waiting, Ordering::Relaxed);
        self.metrics
            .waiting
            .get_or_create(&self.labels())
            .inc_by(waiting - before);
        if read.next == at {
            let _ = tokio::time::timeout(IDLE_WAIT, waiter.changed()).await;
            return Ok(false);
        }
        // A function that batches waits, up to its timeout, for a batch to fill.
        if let Some(b) = self.function.batching
            && read.records.len() < b.max_size as usize
            && let Some(first) = read.records.first()
        {
            let age = crate::now_ms().saturating_sub(first.timestamp_ms).max(0) as u64;
            if age < b.timeout_ms {
                let left = Duration::from_millis(b.timeout_ms - age);
                let _ = tokio::time::timeout(left, waiter.changed()).await;
                if self.more_than(&topic, read.records.len(), at).await? {
                    return Ok(false);
                }
            }
        }
        let mut records = read.records;
        let mut next = read.next;
        if records.len() > WINDOW {
            records.truncate(WINDOW);
            next = records.last().map_or(next, |r| r.offset + 1);
        }
        let events: Vec<Event> = records
            .iter()
            .map(|r| Event::from_record(r, &topic.name, self.partition, &self.type_prefix))
            .collect();
        // A trigger's publish is the root of each event's trace, recorded by the first
        // link leaving the trigger.
        let mut spans = Vec::new();
        let first_from_trigger = self.pipeline.trigger(&self.link.from).is_some()
            && self
                .pipeline
                .links
                .iter()
                .find(|l| l.from == self.link.from)
                .is_some_and(|l| l.to == self.link.to);
        if first_from_trigger {
            for (e, r) in events.iter().zip(&records) {
                let t = e.attrs.get("traceparent").map_or("", String::as_str);
                spans.extend(Span::root(
                    t,
                    format!("publish {}", self.link.from),
                    e.id(),
                    r.timestamp_ms,
                ));
            }
        }
        let outcomes = self.deliver_all(events).await;
        self.hand_on(&cursor, at, next, outcomes, spans, leases)
            .await
    }

    /// Whether the partition now holds more than `had` events past `at` (a batch can
    /// fill further).
    async fn more_than(
        &self,
        topic: &TopicRecord,
        had: usize,
        at: u64,
    ) -> Result<bool, CatalogError> {
        let again = records::read(self.catalog.as_ref(), topic, self.partition, at).await?;
        Ok(again.records.len() > had)
    }

    /// Delivers a window's events, in flight as the link allows, results in order.
    async fn deliver_all(&self, events: Vec<Event>) -> Vec<Outcome> {
        let from_function = self.pipeline.function(&self.link.from).is_some();
        let (mine, skipped): (Vec<(usize, Event)>, Vec<usize>) = {
            let mut mine = Vec::new();
            let mut skipped = Vec::new();
            for (i, e) in events.into_iter().enumerate() {
                if from_function && !e.has_labels(&self.link.labels) {
                    skipped.push(i);
                } else {
                    mine.push((i, e));
                }
            }
            (mine, skipped)
        };
        let total = mine.len() + skipped.len();
        let mut out: Vec<Option<Outcome>> = (0..total).map(|_| None).collect();
        for i in skipped {
            out[i] = Some(Outcome::Skipped);
        }
        let size = self.function.batching.map_or(1, |b| b.max_size as usize);
        let units: Vec<Vec<(usize, Event)>> =
            mine.into_iter()
                .fold(Vec::<Vec<(usize, Event)>>::new(), |mut acc, item| {
                    match acc.last_mut() {
                        Some(last) if last.len() < size => last.push(item),
                        _ => acc.push(vec![item]),
                    }
                    acc
                });
        let results: Vec<Vec<(usize, Outcome)>> = futures::stream::iter(units)
            .map(|unit| self.deliver_unit(unit))
            .buffered(self.link.in_flight())
            .collect()
            .await;
        for (i, o) in results.into_iter().flatten() {
            out[i] = Some(o);
        }
        out.into_iter()
            .map(|o| o.unwrap_or(Outcome::Skipped))
            .collect()
    }

    /// Delivers one event (or one batch), retrying with backoff.
    async fn deliver_unit(&self, unit: Vec<(usize, Event)>) -> Vec<(usize, Outcome)> {
        let labels = self.labels();
        let flabels = FunctionLabels {
            pipeline: self.pipeline.name.clone(),
            function: self.function.name.clone(),
        };
        let in_flight = self.metrics.in_flight.get_or_create(&labels).clone();
        in_flight.inc_by(unit.len() as i64);
        let mut attempt = 0u32;
        let mut spans: Vec<Vec<Span>> = vec![Vec::new(); unit.len()];
        let parents: Vec<String> = unit
            .iter()
            .map(|(_, e)| {
                e.attrs
                    .get("traceparent")
                    .cloned()
                    .unwrap_or_else(|| trace::traceparent_of(e.id()))
            })
            .collect();
        let (result, url, children) = loop {
            attempt += 1;
            let url = (self.url)();
            // Each attempt is a span of the event's trace, the function's parent.
            let children: Vec<String> = parents.iter().map(|p| trace::child_of(p)).collect();
            let started_ms = crate::now_ms();
            let sent = Instant::now();
            let result = match &url {
                None => Err(Failure::Connection(format!(
                    "function {} has no ready instance",
                    self.function.name
                ))),
                Some(url) => self.send(url, &unit, &children).await,
            };
            let took = sent.elapsed().as_secs_f64() * 1000.0;
            for (i, (_, e)) in unit.iter().enumerate() {
                if let Some(mut s) = Span::under(
                    &parents[i],
                    &children[i],
                    format!("deliver {}", self.function.name),
                    &self.link.name(),
                    e.id(),
                ) {
                    s.attempt = attempt;
                    s.start_ms = started_ms;
                    s.duration_ms = took;
                    if let Err(f) = &result {
                        s.status = "error".into();
                        s.code = Some(f.code());
                    }
                    spans[i].push(s);
                }
            }
            match result {
                Ok(replies) => {
                    self.metrics
                        .latency
                        .get_or_create(&flabels)
                        .observe(sent.elapsed().as_secs_f64());
                    break (Ok(replies), url, children);
                }
                Err(f) => {
                    self.metrics.failed_attempts.get_or_create(&labels).inc();
                    tracing::debug!(
                        pipeline = %self.pipeline.name,
                        link = %self.link.name(),
                        attempt,
                        code = %f.code(),
                        "delivery attempt failed"
                    );
                    if attempt > self.link.retries() {
                        break (Err(f), url, children);
                    }
                    tokio::time::sleep(self.link.backoff(attempt)).await;
                }
            }
        };
        in_flight.dec_by(unit.len() as i64);
        match result {
            Ok(replies) => unit
                .into_iter()
                .zip(replies)
                .zip(spans.into_iter().zip(children))
                .map(|(((i, e), r), (spans, child))| {
                    let mut next = e.reply(&self.function.name, &self.type_prefix, r);
                    // The next hop's spans hang under the attempt that made the reply.
                    next.attrs.insert("traceparent".into(), child);
                    (i, Outcome::Reply(next, spans))
                })
                .collect(),
            Err(f) => {
                let dest = url.unwrap_or_else(|| self.function.name.clone());
                unit.into_iter()
                    .zip(spans.into_iter().zip(children))
                    .map(|((i, e), (mut spans, child))| {
                        spans.extend(Span::under(
                            &child,
                            &trace::child_of(&child),
                            "dead-letter".into(),
                            &self.link.name(),
                            e.id(),
                        ));
                        (
                            i,
                            Outcome::Failed(e, f.clone(), attempt, dest.clone(), spans),
                        )
                    })
                    .collect()
            }
        }
    }

    /// One attempt: the events of a unit, each with a span of its own.
    async fn send(
        &self,
        url: &str,
        unit: &[(usize, Event)],
        spans: &[String],
    ) -> Result<Vec<Reply>, Failure> {
        let timeout = self.function.timeout();
        let spanned: Vec<Event> = unit
            .iter()
            .zip(spans)
            .map(|((_, e), span)| {
                let mut e = e.clone();
                e.attrs.insert("traceparent".into(), span.clone());
                e
            })
            .collect();
        if self.function.batching.is_some() {
            let refs: Vec<&Event> = spanned.iter().collect();
            deliver::send_batch(&self.client, url, timeout, &refs).await
        } else {
            let e = &spanned[0];
            deliver::send_one(&self.client, url, timeout, e)
                .await
                .map(|r| vec![r])
        }
    }

    /// Commits a window's hand-off: replies, dead letters and the cursor, together.
    async fn hand_on(
        &self,
        cursor: &str,
        at: u64,
        next: u64,
        outcomes: Vec<Outcome>,
        mut spans: Vec<Span>,
        leases: Vec<catalog::Lease>,
    ) -> Result<bool, CatalogError> {
        let now = crate::now_ms();
        let reply_topic = if self.pipeline.has_links_from(&self.link.to) {
            let name = self.pipeline.topic_of(&self.link.to);
            Some(
                self.catalog
                    .kafka()
                    .topic(&name)
                    .await?
                    .ok_or(CatalogError::UnknownTopic(name))?,
            )
        } else {
            None
        };
        let dlq_name = self.pipeline.dead_letter_topic();
        let dlq = self
            .catalog
            .kafka()
            .topic(dlq_name)
            .await?
            .ok_or_else(|| CatalogError::UnknownTopic(dlq_name.to_owned()))?;
        let mut rows: BTreeMap<(u128, u32), Vec<OutRecord>> = BTreeMap::new();
        let (mut delivered, mut dead) = (0u64, 0u64);
        for o in outcomes {
            match o {
                Outcome::Skipped => {}
                Outcome::Reply(e, s) => {
                    spans.extend(s);
                    delivered += 1;
                    if let Some(t) = &reply_topic {
                        rows.entry((t.id, self.partition_in(&e, t)))
                            .or_default()
                            .push(e.to_record(Vec::new(), now));
                    }
                }
                Outcome::Failed(e, f, attempts, dest, s) => {
                    spans.extend(s);
                    dead += 1;
                    let data = f.data();
                    let data = data.slice(..data.len().min(deliver::ERROR_DATA_CAP));
                    let s = |v: String| Bytes::from(v);
                    let extra = vec![
                        ("ce_knativeerrorcode".to_owned(), s(f.code())),
                        (
                            "ce_knativeerrordata".to_owned(),
                            s(base64_simd::STANDARD.encode_to_string(&data)),
                        ),
                        ("ce_knativeerrordest".to_owned(), s(dest)),
                        ("eddy_pipeline".to_owned(), s(self.pipeline.name.clone())),
                        ("eddy_link".to_owned(), s(self.link.name())),
                        ("eddy_function".to_owned(), s(self.function.name.clone())),
                        ("eddy_attempts".to_owned(), s(attempts.to_string())),
                    ];
                    rows.entry((dlq.id, self.partition_in(&e, &dlq)))
                        .or_default()
                        .push(e.to_record(extra, now));
                }
            }
        }
        // The window's spans commit with its hand-off: a trace holds each committed
        // attempt once.
        let exported = self.otlp.as_ref().map(|_| spans.clone());
        let traces_name = self.pipeline.traces_topic();
        if !spans.is_empty()
            && let Some(t) = self.catalog.kafka().topic(&traces_name).await?
        {
            for s in spans {
                let key = Bytes::from(s.trace_id.clone());
                let p = notify::partition::partition_for(&key, t.partitions);
                rows.entry((t.id, p)).or_default().push(OutRecord {
                    key: Some(key),
                    value: Bytes::from(serde_json::to_vec(&s).unwrap_or_default()),
                    headers: Vec::new(),
                    timestamp_ms: s.start_ms,
                });
            }
        }
        let mut ops = Vec::with_capacity(rows.len() + 1);
        for ((topic_id, partition), records) in rows {
            ops.push(records::append(topic_id, partition, &records)?);
        }
        ops.push(Op::Pipeline(PipelineOp::Advance {
            pipeline: self.pipeline.name.clone(),
            cursor: cursor.to_owned(),
            partition: self.partition,
            expected: at,
            next,
        }));
        // Under the lease that gave this server the cursor: a server that lost it cannot
        // hand on (the PostgreSQL catalog checks it in the same transaction).
        match self.catalog.commit(Transaction { ops, leases }).await {
            Ok(_) => {
                if let (Some(otlp), Some(spans)) = (&self.otlp, exported) {
                    otlp.send(&self.pipeline.name, spans);
                }
                let labels = self.labels();
                self.metrics
                    .delivered
                    .get_or_create(&labels)
                    .inc_by(delivered);
                self.metrics
                    .dead_lettered
                    .get_or_create(&labels)
                    .inc_by(dead);
                Ok(true)
            }
            // Someone else handed this window on first: read again from where they left.
            Err(CatalogError::PreconditionFailed(m)) => {
                tracing::debug!(reason = %m, "pipeline window already handed on elsewhere");
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// The partition of `topic` an event goes to: its key's, as Kafka's default
    /// partitioner puts it (one object's events stay in one partition), or the source
    /// partition's when it has no key.
    fn partition_in(&self, e: &Event, topic: &TopicRecord) -> u32 {
        match &e.key {
            Some(k) => notify::partition::partition_for(k, topic.partitions),
            None => self.partition % topic.partitions.max(1),
        }
    }
}
