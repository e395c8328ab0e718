//! Every change to a pipeline's record goes through here: `apply` stores a new revision,
//! `deploy` checks a revision and makes it the running one (with the topics it needs and
//! its bucket triggers, in one transaction), `delete` marks it for the runtime to stop,
//! and the runtime reports status. Each change is built on the record it read and
//! retried when another change came first.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use catalog::{
    BucketRecord, Catalog, CatalogError, KafkaOp, Op, PipelineOp, PipelineRecord, PipelineRevision,
    PipelineStatus, S3Op, TopicRecord, Transaction,
};
use notify::{Destination, NotificationConfig, Rule};

use crate::error::PipelineError;
use crate::spec::{DEFAULT_BUCKET_EVENTS, Pipeline, TriggerKind};

/// Revisions a pipeline keeps (the deployed one is kept besides).
pub const KEPT_REVISIONS: usize = 20;

/// Attempts of a change that keeps losing to concurrent ones.
const ATTEMPTS: usize = 8;

/// What `apply` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The revision holding the definition.
    pub revision: u64,
    /// Whether the pipeline is new.
    pub created: bool,
    /// Whether the definition was the latest revision already (nothing stored).
    pub unchanged: bool,
}

/// The pipelines of one catalog.
#[derive(Clone)]
pub struct Pipelines {
    catalog: Arc<dyn Catalog>,
}

impl Pipelines {
    /// The pipelines `catalog` holds.
    pub fn new(catalog: Arc<dyn Catalog>) -> Self {
        Self { catalog }
    }

    /// The catalog the pipelines are in.
    pub fn catalog(&self) -> &Arc<dyn Catalog> {
        &self.catalog
    }

    /// The revision `deploy` would run (`revision`, default the newest) and its
    /// definition, for the checks a caller makes first.
    pub async fn deployable(
        &self,
        name: &str,
        revision: Option<u64>,
    ) -> Result<(u64, Pipeline), PipelineError> {
        revision_of(&self.get(name).await?, revision)
    }

    /// A pipeline's record.
    pub async fn get(&self, name: &str) -> Result<PipelineRecord, PipelineError> {
        self.catalog
            .pipelines()
            .pipeline(name)
            .await?
            .ok_or_else(|| PipelineError::NotFound(name.to_owned()))
    }

    /// Every pipeline.
    pub async fn list(&self) -> Result<Vec<PipelineRecord>, PipelineError> {
        Ok(self.catalog.pipelines().pipelines().await?)
    }

    /// Every cursor of a pipeline: (cursor, source partition, next offset or tick).
    pub async fn cursors(&self, name: &str) -> Result<Vec<(String, u32, u64)>, PipelineError> {
        Ok(self.catalog.pipelines().positions(name).await?)
    }

    /// About the `max` newest spans of a pipeline's traces.
    pub async fn spans(
        &self,
        name: &str,
        max: usize,
    ) -> Result<Vec<crate::trace::Span>, PipelineError> {
        self.get(name).await?;
        Ok(crate::traces::recent_spans(self.catalog.as_ref(), name, max).await?)
    }

    /// Stores `text` (YAML or JSON) as the newest revision of the pipeline it names (a new
    /// pipeline is a `Draft`). The running revision is untouched until the next deploy.
    pub async fn apply(&self, text: &str) -> Result<Applied, PipelineError> {
        let p = Pipeline::parse(text)?;
        let document = p.to_document();
        retrying(&p.name, || async {
            let stored = self.catalog.pipelines().pipeline(&p.name).await?;
            let created = stored.is_none();
            let mut record = stored.clone().unwrap_or_else(|| PipelineRecord {
                name: p.name.clone(),
                changes: 0,
                revisions: Vec::new(),
                deployed: None,
                status: PipelineStatus::Draft,
                reason: String::new(),
                status_ms: crate::now_ms(),
            });
            if record.status == PipelineStatus::Deleting {
                return Err(PipelineError::Conflict(p.name.clone()));
            }
            if let Some(latest) = record.revisions.last()
                && latest.document == document
            {
                return Ok(Applied {
                    revision: latest.number,
                    created: false,
                    unchanged: true,
                });
            }
            let revision = record.latest() + 1;
            record.revisions.push(PipelineRevision {
                number: revision,
                document: document.clone(),
                created_ms: crate::now_ms(),
            });
            trim(&mut record);
            self.put(stored.as_ref(), record, Vec::new()).await?;
            Ok(Applied {
                revision,
                created,
                unchanged: false,
            })
        })
        .await
    }

    /// Makes `revision` (default: the newest) the running one, after checking it can run:
    /// a trigger, a link, a link from a trigger, every bucket and topic it reads exists.
    /// Creates the topics it writes (trigger events, replies, dead letters) and installs
    /// its bucket triggers, all with the record in one transaction; a failed check
    /// changes nothing.
    pub async fn deploy(
        &self,
        name: &str,
        revision: Option<u64>,
    ) -> Result<PipelineRecord, PipelineError> {
        retrying(name, || async {
            let stored = self.get(name).await?;
            if stored.status == PipelineStatus::Deleting {
                return Err(PipelineError::NotDeployable(format!(
                    "{name} is being deleted"
                )));
            }
            let (number, p) = revision_of(&stored, revision)?;
            p.check_deployable()?;
            let mut ops = Vec::new();
            for t in &p.triggers {
                if t.kind == TriggerKind::Topic {
                    let topic = p.topic_of(&t.name);
                    if self.catalog.kafka().topic(&topic).await?.is_none() {
                        return Err(PipelineError::NotDeployable(format!(
                            "trigger {}: topic {topic} does not exist",
                            t.name
                        )));
                    }
                }
            }
            for topic in made_topics(&p) {
                if self.catalog.kafka().topic(&topic).await?.is_none() {
                    ops.push(Op::Kafka(KafkaOp::CreateTopic(TopicRecord {
                        name: topic,
                        id: uuid::Uuid::new_v4().as_u128(),
                        partitions: p.partitions(),
                        configs: BTreeMap::new(),
                        created_ms: crate::now_ms(),
                    })));
                }
            }
            let mut buckets = bucket_rules(&p)?;
            // Buckets the running revision triggers on and this one does not lose its rules.
            if let Some(old) = stored.deployed.and_then(|n| stored.revision(n)) {
                let old = Pipeline::from_document(&old.document)?;
                for b in bucket_rules(&old)?.into_keys() {
                    buckets.entry(b).or_default();
                }
            }
            for (bucket, rules) in buckets {
                let Some(record) = self.catalog.s3().bucket(&bucket).await? else {
                    if rules.is_empty() {
                        continue;
                    }
                    return Err(PipelineError::NotDeployable(format!(
                        "bucket {bucket} does not exist"
                    )));
                };
                ops.push(with_rules(&record, name, rules)?);
            }
            let mut record = stored.clone();
            record.deployed = Some(number);
            record.status = PipelineStatus::InProgress;
            record.reason = String::new();
            record.status_ms = crate::now_ms();
            self.put(Some(&stored), record.clone(), ops).await?;
            record.changes += 1;
            Ok(record)
        })
        .await
    }

    /// Starts deleting a pipeline: its bucket triggers go at once, its status becomes
    /// `Deleting`, and the runtime stops it and removes the record ([`Pipelines::remove`]).
    /// Its topics stay (their events are data).
    pub async fn delete(&self, name: &str) -> Result<PipelineRecord, PipelineError> {
        retrying(name, || async {
            let stored = self.get(name).await?;
            let mut ops = Vec::new();
            if let Some(rev) = stored.deployed.and_then(|n| stored.revision(n)) {
                let p = Pipeline::from_document(&rev.document)?;
                for bucket in bucket_rules(&p)?.into_keys() {
                    if let Some(record) = self.catalog.s3().bucket(&bucket).await? {
                        ops.push(with_rules(&record, name, Vec::new())?);
                    }
                }
            }
            let mut record = stored.clone();
            record.status = PipelineStatus::Deleting;
            record.reason = String::new();
            record.status_ms = crate::now_ms();
            self.put(Some(&stored), record.clone(), ops).await?;
            record.changes += 1;
            Ok(record)
        })
        .await
    }

    /// Removes a pipeline the runtime has stopped (with its cursors).
    pub async fn remove(&self, stored: &PipelineRecord) -> Result<(), PipelineError> {
        let op = Op::Pipeline(PipelineOp::PutPipeline {
            name: stored.name.clone(),
            expected: stored.changes,
            record: None,
        });
        self.catalog.commit(Transaction::new(vec![op])).await?;
        Ok(())
    }

    /// The runtime's report on a deployed revision: stored unless the record moved on to
    /// another revision (or is being deleted) meanwhile, or already says so.
    pub async fn report(
        &self,
        name: &str,
        revision: u64,
        status: PipelineStatus,
        reason: &str,
    ) -> Result<(), PipelineError> {
        retrying(name, || async {
            let stored = self.get(name).await?;
            if stored.deployed != Some(revision)
                || stored.status == PipelineStatus::Deleting
                || (stored.status == status && stored.reason == reason)
            {
                return Ok(());
            }
            let mut record = stored.clone();
            record.status = status;
            record.reason = reason.to_owned();
            record.status_ms = crate::now_ms();
            self.put(Some(&stored), record, Vec::new()).await
        })
        .await
    }

    /// Commits `record` (built on `stored`) with `ops`.
    async fn put(
        &self,
        stored: Option<&PipelineRecord>,
        mut record: PipelineRecord,
        mut ops: Vec<Op>,
    ) -> Result<(), PipelineError> {
        let expected = stored.map_or(0, |s| s.changes);
        record.changes = expected + 1;
        ops.push(Op::Pipeline(PipelineOp::PutPipeline {
            name: record.name.clone(),
            expected,
            record: Some(record),
        }));
        self.catalog.commit(Transaction::new(ops)).await?;
        Ok(())
    }
}

/// Runs `f` again while it loses to a concurrent change (a stale record, a bucket changed
/// meanwhile, a topic made by someone else first).
async fn retrying<T, F, Fut>(name: &str, f: F) -> Result<T, PipelineError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, PipelineError>>,
{
    for _ in 0..ATTEMPTS {
        match f().await {
            Err(PipelineError::Catalog(
                CatalogError::PreconditionFailed(_) | CatalogError::TopicExists(_),
            )) => continue,
            other => return other,
        }
    }
    Err(PipelineError::Conflict(name.to_owned()))
}

/// A stored revision (`revision`, default the newest) and its definition.
fn revision_of(
    stored: &PipelineRecord,
    revision: Option<u64>,
) -> Result<(u64, Pipeline), PipelineError> {
    let number = revision.unwrap_or(stored.latest());
    let rev = stored.revision(number).ok_or_else(|| {
        PipelineError::NotDeployable(format!("{} has no revision {number}", stored.name))
    })?;
    Ok((number, Pipeline::from_document(&rev.document)?))
}

/// Drops the oldest revisions past [`KEPT_REVISIONS`], never the deployed one.
fn trim(record: &mut PipelineRecord) {
    while record.revisions.len() > KEPT_REVISIONS {
        let Some(i) = record
            .revisions
            .iter()
            .position(|r| Some(r.number) != record.deployed)
        else {
            break;
        };
        record.revisions.remove(i);
    }
}

/// The topics a pipeline writes: each bucket or schedule trigger's, each function's with
/// a link leaving it, the dead-letter topic.
pub fn made_topics(p: &Pipeline) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for t in &p.triggers {
        if t.kind != TriggerKind::Topic {
            out.insert(p.topic_of(&t.name));
        }
    }
    for f in &p.functions {
        if p.has_links_from(&f.name) {
            out.insert(p.topic_of(&f.name));
        }
    }
    if p.functions.iter().any(|f| f.command.is_some()) {
        out.insert(p.logs_topic());
    }
    out.insert(p.traces_topic());
    out.insert(p.dead_letter_topic().to_owned());
    out
}

/// Each triggered bucket's notification rules.
fn bucket_rules(p: &Pipeline) -> Result<BTreeMap<String, Vec<Rule>>, PipelineError> {
    let mut out: BTreeMap<String, Vec<Rule>> = BTreeMap::new();
    for t in &p.triggers {
        let (TriggerKind::Bucket, Some(bucket)) = (t.kind, &t.bucket) else {
            continue;
        };
        let topic = p.topic_of(&t.name);
        out.entry(bucket.clone()).or_default().push(Rule {
            id: format!("pipeline:{}:{}", p.name, t.name),
            destination: Destination::Topic,
            arn: topic.clone(),
            topic,
            events: t
                .events
                .clone()
                .unwrap_or_else(|| vec![DEFAULT_BUCKET_EVENTS.to_owned()]),
            prefix: t.prefix.clone(),
            suffix: t.suffix.clone(),
        });
    }
    Ok(out)
}

/// `ReplaceBucket` of `record` with the pipeline's rules set to `rules` (none: removed).
fn with_rules(
    record: &BucketRecord,
    pipeline: &str,
    rules: Vec<Rule>,
) -> Result<Op, PipelineError> {
    let config = NotificationConfig::for_pipeline(rules)
        .map_err(|e| PipelineError::Invalid(e.to_string()))?;
    let mut new = record.clone();
    config.store_pipeline(pipeline, &mut new.settings);
    Ok(Op::S3(S3Op::ReplaceBucket {
        expected: record.clone(),
        record: new,
    }))
}
