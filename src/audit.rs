//! The audit trail's writer: events from every protocol, reported through the
//! directory's sink, appended to the `__eddy_audit` topic of the default view (one
//! partition, kept 30 days unless its `retention.ms` is changed), so the trail is read
//! with any Kafka client and as the `kafka_topics.__eddy_audit` table. Each record's
//! value is the event as a JSON object, its key the principal. Events are batched (at
//! most 1,000, or what arrived within 100 ms) into one append; a request never waits
//! for the trail: when 10,000 events are queued, more are dropped and counted in the
//! log.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use catalog::{Catalog, KafkaOp, Op, TopicRecord, Transaction};
use iam::audit::{AuditEvent, AuditSink};
use tokio::sync::{mpsc, watch};

pub use broker::offsets_topic::AUDIT_TOPIC as TOPIC;

/// Events queued for the writer before more are dropped.
const QUEUE: usize = 10_000;
/// Most events in one append.
const BATCH: usize = 1_000;
/// How long a batch waits for more events after its first.
const LINGER: Duration = Duration::from_millis(100);
/// The topic's default retention: 30 days.
const RETENTION_MS: &str = "2592000000";

/// The sink the directory reports to.
pub struct AuditLog {
    tx: mpsc::Sender<AuditEvent>,
    dropped: AtomicU64,
}

impl AuditSink for AuditLog {
    fn record(&self, event: AuditEvent) {
        if self.tx.try_send(event).is_err() {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(
                    dropped = n,
                    "audit events dropped: the trail's writer is behind"
                );
            }
        }
    }
}

/// Creates the topic if it does not exist.
async fn ensure(catalog: &dyn Catalog) -> catalog::CatalogResult<TopicRecord> {
    if let Some(t) = catalog.kafka().topic(TOPIC).await? {
        return Ok(t);
    }
    let record = TopicRecord {
        name: TOPIC.to_owned(),
        id: uuid::Uuid::new_v4().as_u128(),
        partitions: 1,
        configs: [("retention.ms".to_owned(), RETENTION_MS.to_owned())].into(),
        created_ms: now_ms(),
    };
    let created = catalog
        .commit(Transaction::new(vec![Op::Kafka(KafkaOp::CreateTopic(
            record.clone(),
        ))]))
        .await;
    match created {
        Ok(_) => Ok(record),
        // Made meanwhile by another node: that one.
        Err(e) => catalog.kafka().topic(TOPIC).await?.ok_or(e),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Starts the writer over `catalog` (the default view); it drains what is queued when
/// `stop` flips.
pub async fn start(
    catalog: Arc<dyn Catalog>,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<(Arc<AuditLog>, tokio::task::JoinHandle<()>)> {
    let topic = ensure(catalog.as_ref()).await?;
    let (tx, mut rx) = mpsc::channel(QUEUE);
    let log = Arc::new(AuditLog {
        tx,
        dropped: AtomicU64::new(0),
    });
    let task = tokio::spawn(async move {
        loop {
            let first = tokio::select! {
                e = rx.recv() => e,
                _ = stop.changed() => None,
            };
            let Some(first) = first else {
                // Stopping: what is queued goes out, then the writer ends.
                let mut rest = Vec::new();
                while let Ok(e) = rx.try_recv() {
                    rest.push(e);
                }
                for chunk in rest.chunks(BATCH) {
                    append(catalog.as_ref(), &topic, chunk).await;
                }
                break;
            };
            let mut batch = vec![first];
            let deadline = tokio::time::Instant::now() + LINGER;
            while batch.len() < BATCH {
                match tokio::time::timeout_at(deadline, rx.recv()).await {
                    Ok(Some(e)) => batch.push(e),
                    _ => break,
                }
            }
            append(catalog.as_ref(), &topic, &batch).await;
        }
    });
    Ok((log, task))
}

/// Appends one batch of events; a failure is logged and the events lost (the trail
/// must not stop the server).
async fn append(catalog: &dyn Catalog, topic: &TopicRecord, events: &[AuditEvent]) {
    let records: Vec<pipelines::records::OutRecord> = events
        .iter()
        .map(|e| pipelines::records::OutRecord {
            key: e.principal.as_deref().map(|p| Bytes::from(p.to_owned())),
            value: Bytes::from(serde_json::to_vec(e).unwrap_or_default()),
            headers: Vec::new(),
            timestamp_ms: e.time_ms,
        })
        .collect();
    let done = match pipelines::records::append(topic.id, 0, &records) {
        Ok(op) => catalog.commit(Transaction::new(vec![op])).await.map(|_| ()),
        Err(e) => Err(e),
    };
    if let Err(e) = done {
        tracing::warn!(error = %e, events = events.len(), "audit events not appended");
    }
}
