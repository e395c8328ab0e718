//! What runs the deployed pipelines of a server: every second (and when the admin API
//! changes a pipeline) it reads the pipelines from the catalog, starts the deployed
//! revision of each (its `command` functions' instances, then one link worker per link
//! and source partition) and reports `Ready` or `Error`, restarts a pipeline deployed
//! again, stops one no longer deployed, and finishes deleting one marked `Deleting`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use catalog::{Catalog, PipelineRecord, PipelineStatus, Transaction};
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{Mutex, Notify, mpsc};
use tokio::task::JoinHandle;

use crate::instances::{Instances, LogLine};
use crate::lifecycle::Pipelines;
use crate::link::LinkWorker;
use crate::metrics::{FunctionLabels, LinkLabels, PipelineMetrics};
use crate::records::{self, OutRecord};
use crate::schedule::Cron;
use crate::spec::{Pipeline, TriggerKind};

/// How often the runtime looks at the catalog without being woken.
const RECONCILE_EVERY: Duration = Duration::from_secs(1);

/// The pipelines runtime of one server.
pub struct Runtime {
    catalog: Arc<dyn Catalog>,
    pipelines: Pipelines,
    client: reqwest::Client,
    metrics: PipelineMetrics,
    type_prefix: String,
    running: Mutex<HashMap<String, Running>>,
    wake: Notify,
    ownership: Arc<dyn crate::ownership::Ownership>,
    otlp: Option<crate::otlp::Exporter>,
}

/// A started revision.
struct Running {
    revision: u64,
    /// `status_ms` of the `InProgress` record it was started for: deploying the same
    /// revision again starts it again.
    started_for: i64,
    tasks: Vec<JoinHandle<()>>,
    instances: Vec<Arc<Instances>>,
    /// Per function with instances, the links that deliver to it and its instance
    /// gauge.
    feeds: Vec<(Arc<Instances>, Vec<LinkLabels>, Gauge)>,
}

impl Drop for Running {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        for i in &self.instances {
            i.stop();
        }
        for (_, _, gauge) in &self.feeds {
            gauge.set(0);
        }
    }
}

impl Runtime {
    /// A runtime over `catalog`; events it makes get types prefixed by `type_prefix`; it
    /// runs the cursors `ownership` gives this server.
    pub fn new(
        catalog: Arc<dyn Catalog>,
        type_prefix: &str,
        metrics: PipelineMetrics,
        ownership: Arc<dyn crate::ownership::Ownership>,
    ) -> Arc<Self> {
        Arc::new(Self {
            ownership,
            otlp: crate::otlp::Exporter::from_env(metrics.otlp_dropped.clone()),
            pipelines: Pipelines::new(catalog.clone()),
            catalog,
            client: reqwest::Client::new(),
            metrics,
            type_prefix: type_prefix.to_owned(),
            running: Mutex::new(HashMap::new()),
            wake: Notify::new(),
        })
    }

    /// Runs until the task is aborted.
    pub fn spawn(self: &Arc<Self>) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                if let Err(e) = this.reconcile().await {
                    tracing::warn!(error = %e, "pipelines: could not read the catalog");
                }
                let _ = tokio::time::timeout(RECONCILE_EVERY, this.wake.notified()).await;
            }
        })
    }

    /// Stops every pipeline this server runs (the server is stopping).
    pub fn shutdown(&self) {
        if let Ok(mut running) = self.running.try_lock() {
            running.clear();
        }
    }

    /// Looks at the catalog now (a pipeline was changed on this server).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    async fn reconcile(&self) -> Result<(), crate::error::PipelineError> {
        let list = self.pipelines.list().await?;
        let mut running = self.running.lock().await;
        running.retain(|name, _| list.iter().any(|p| p.name == *name));
        for rec in list {
            match (rec.status, rec.deployed) {
                (PipelineStatus::Deleting, _) => {
                    running.remove(&rec.name);
                    if let Err(e) = self.pipelines.remove(&rec).await {
                        tracing::debug!(pipeline = %rec.name, error = %e, "pipeline removal raced a change");
                    }
                }
                (_, Some(rev)) => {
                    let fresh = running.get(&rec.name).is_some_and(|r| {
                        r.revision == rev
                            && !(rec.status == PipelineStatus::InProgress
                                && r.started_for != rec.status_ms)
                    });
                    if !fresh {
                        running.remove(&rec.name);
                        let started = self.start(&rec, rev).await;
                        running.insert(rec.name.clone(), started);
                    }
                }
                (_, None) => {
                    running.remove(&rec.name);
                }
            }
        }
        for r in running.values() {
            for (inst, links, gauge) in &r.feeds {
                let in_flight: i64 = links
                    .iter()
                    .map(|l| self.metrics.in_flight.get_or_create(l).get())
                    .sum();
                inst.scale(usize::try_from(in_flight).unwrap_or(0)).await;
                gauge.set(inst.count() as i64);
            }
        }
        Ok(())
    }

    /// Starts a revision and reports how that went.
    async fn start(&self, rec: &PipelineRecord, rev: u64) -> Running {
        let mut running = Running {
            revision: rev,
            started_for: rec.status_ms,
            tasks: Vec::new(),
            instances: Vec::new(),
            feeds: Vec::new(),
        };
        let outcome = self.start_parts(rec, rev, &mut running).await;
        let (status, reason) = match &outcome {
            Ok(()) => (PipelineStatus::Ready, String::new()),
            Err(reason) => {
                tracing::warn!(pipeline = %rec.name, revision = rev, %reason, "pipeline failed to start");
                // Nothing half-started keeps running (a dropped handle would not stop
                // its task).
                for t in running.tasks.drain(..) {
                    t.abort();
                }
                for i in running.instances.drain(..) {
                    i.stop();
                }
                for (_, _, gauge) in running.feeds.drain(..) {
                    gauge.set(0);
                }
                (PipelineStatus::Error, reason.clone())
            }
        };
        if let Err(e) = self.pipelines.report(&rec.name, rev, status, &reason).await {
            tracing::warn!(pipeline = %rec.name, error = %e, "could not store the pipeline's status");
        }
        running
    }

    async fn start_parts(
        &self,
        rec: &PipelineRecord,
        rev: u64,
        running: &mut Running,
    ) -> Result<(), String> {
        let doc = rec
            .revision(rev)
            .ok_or_else(|| format!("revision {rev} is gone"))?;
        let p = Arc::new(Pipeline::from_document(&doc.document).map_err(|e| e.to_string())?);
        let (log_tx, log_rx) = mpsc::unbounded_channel();
        if p.functions.iter().any(|f| f.command.is_some()) {
            running.tasks.push(tokio::spawn(ship_logs(
                self.catalog.clone(),
                p.clone(),
                log_rx,
            )));
        }
        let mut urls: HashMap<String, Arc<dyn Fn() -> Option<String> + Send + Sync>> =
            HashMap::new();
        for f in &p.functions {
            if let Some(url) = &f.url {
                let url = url.clone();
                urls.insert(f.name.clone(), Arc::new(move || Some(url.clone())));
            } else {
                let inst = Instances::start(f, log_tx.clone()).await?;
                let gauge = self.metrics.instances.get_or_create(&FunctionLabels {
                    pipeline: p.name.clone(),
                    function: f.name.clone(),
                });
                gauge.set(inst.count() as i64);
                running.instances.push(inst.clone());
                let links = p
                    .links
                    .iter()
                    .filter(|l| l.to == f.name)
                    .map(|l| LinkLabels {
                        pipeline: p.name.clone(),
                        link: l.name(),
                    })
                    .collect();
                running.feeds.push((inst.clone(), links, gauge.clone()));
                urls.insert(f.name.clone(), Arc::new(move || inst.url()));
            }
        }
        for t in &p.triggers {
            if t.kind == TriggerKind::Schedule {
                let cron = Cron::parse(t.cron.as_deref().unwrap_or_default())?;
                running.tasks.push(tokio::spawn(crate::ticks::run(
                    self.catalog.clone(),
                    p.clone(),
                    t.name.clone(),
                    cron,
                    self.type_prefix.clone(),
                    self.ownership.clone(),
                )));
            }
        }
        for link in &p.links {
            let source = p.topic_of(&link.from);
            let topic = self
                .catalog
                .kafka()
                .topic(&source)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("link {}: topic {source} does not exist", link.name()))?;
            let function = p
                .function(&link.to)
                .ok_or_else(|| format!("link {}: no function {}", link.name(), link.to))?;
            let url = urls
                .get(&link.to)
                .cloned()
                .ok_or_else(|| format!("function {} did not start", link.to))?;
            for partition in 0..topic.partitions {
                let w = LinkWorker {
                    catalog: self.catalog.clone(),
                    client: self.client.clone(),
                    metrics: self.metrics.clone(),
                    type_prefix: self.type_prefix.clone(),
                    pipeline: p.clone(),
                    link: link.clone(),
                    function: function.clone(),
                    url: url.clone(),
                    partition,
                    ownership: self.ownership.clone(),
                    otlp: self.otlp.clone(),
                    waiting: Default::default(),
                };
                running.tasks.push(tokio::spawn(w.run()));
            }
        }
        Ok(())
    }
}

/// Appends what `command` instances print to the pipeline's logs topic, a batch every
/// half second (JSON lines: function, port, stream, line).
async fn ship_logs(
    catalog: Arc<dyn Catalog>,
    p: Arc<Pipeline>,
    mut rx: mpsc::UnboundedReceiver<LogLine>,
) {
    let name = p.logs_topic();
    loop {
        let Some(first) = rx.recv().await else {
            return;
        };
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut lines = vec![first];
        while let Ok(l) = rx.try_recv() {
            lines.push(l);
        }
        let Ok(Some(topic)) = catalog.kafka().topic(&name).await else {
            continue;
        };
        let now = crate::now_ms();
        let recs: Vec<OutRecord> = lines
            .into_iter()
            .map(|l| OutRecord {
                key: Some(Bytes::from(l.function.clone())),
                value: Bytes::from(
                    serde_json::json!({
                        "function": l.function, "port": l.port, "stream": l.stream, "line": l.line,
                    })
                    .to_string(),
                ),
                headers: Vec::new(),
                timestamp_ms: now,
            })
            .collect();
        let Ok(op) = records::append(topic.id, 0, &recs) else {
            continue;
        };
        if let Err(e) = catalog.commit(Transaction::new(vec![op])).await {
            tracing::warn!(pipeline = %p.name, error = %e, "could not keep function logs");
        }
    }
}
