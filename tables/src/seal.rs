//! Sealing a topic's table: the committed log data not yet in it becomes one Parquet
//! data file per Kafka partition and one new Iceberg snapshot (manifest, manifest list,
//! `metadata.json`), published in one catalog transaction together with the new tabled
//! offsets. Files are written by the iceberg crate's writers into an in-memory
//! `FileIO`, then stored as objects of the broker bucket in that same transaction, so a
//! snapshot and its files appear together or not at all.

use catalog::{IcebergOp, S3Op};
use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::RecordBatch;
use catalog::{Catalog, Op, TopicRecord, TopicTable, Transaction};
use iceberg::arrow::schema_to_arrow_schema;
use iceberg::io::FileIO;
use iceberg::spec::{
    DataFile, FormatVersion, Literal, ManifestList, ManifestListWriter, ManifestWriterBuilder,
    Operation, Snapshot, Struct, Summary, TableMetadata, TableMetadataBuilder,
};
use iceberg::writer::file_writer::{FileWriter, FileWriterBuilder, ParquetWriterBuilder};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::objects::{self, NewObjects};
use crate::rows::RowBuilder;
pub use crate::schema::NAMESPACE;
use crate::schema::{topic_partition_spec, topic_schema};
use crate::{TableError, TableResult, now_ms};

mod expand;
mod log_rows;
mod repair;
mod rewrite;
mod snapshot;

pub use repair::{TableCheck, TableRepair};

use log_rows::*;
use rewrite::*;
pub(crate) use snapshot::new_snapshot_id;
use snapshot::*;

/// A snapshot whose parent lists this many manifests merges them into one, so scan
/// planning reads a bounded number of manifests however many seals there were.
pub const MAX_MANIFESTS: usize = 8;

/// Summary property of a merging snapshot: the manifests it replaced (comma-separated),
/// deleted once no older snapshot that lists them is left.
pub(crate) const REPLACED_MANIFESTS: &str = "eddy.replaced-manifests";

/// Summary property of a snapshot that dropped data files (DeleteRecords, retention):
/// those files, deleted once no older snapshot that lists them is left.
pub(crate) const REMOVED_FILES: &str = "eddy.removed-files";

/// Data files below this size are small: when manifests merge, a partition's small
/// files are rewritten into one once there are this many of them.
const SMALL_FILE_BYTES: u64 = 16 << 20;
/// ... and below this many rows. Compressible topics make files that are small on disk
/// but hold up to a whole snapshot's 64 MiB of records each (65,536 rows of 1 KiB):
/// rewriting those would pass every such row through Parquet twice (the tabler used
/// 40 % less CPU at half load without it, docs/benchmarks-history.md) for no fewer
/// files worth having. The files of short, age-triggered seals stay below it and are
/// merged.
const SMALL_FILE_ROWS: u64 = 1 << 15;
/// How many small files of a partition make a rewrite worth it.
const COMPACT_FILES: usize = 4;
/// Most bytes of small files one seal on load rewrites.
const FOREGROUND_REWRITE_BYTES: u64 = 4 << 20;
/// Most bytes of small files one background seal rewrites.
const BACKGROUND_REWRITE_BYTES: u64 = 64 << 20;
/// Least bytes of data files one snapshot after compaction rewrites (more when the seal's
/// own bound is larger); the table catches up over several snapshots.
const COMPACTED_REWRITE_BYTES: u64 = 16 << 20;

/// Turns committed log data into table snapshots, one topic at a time.
pub struct Tabler {
    catalog: Arc<dyn Catalog>,
    bucket: String,
    /// Most record bytes one snapshot takes in (larger tails take several snapshots).
    max_snapshot_bytes: usize,
    /// Snapshots older than this are expired (the current one never is); readers that
    /// loaded the table less than this long ago can still plan their scans.
    snapshot_max_age_ms: i64,
    locks: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Per topic id: the compaction passes its table's files reflect, as last seen.
    reflected: std::sync::Mutex<HashMap<u128, Vec<u64>>>,
    metrics: crate::TableMetrics,
    /// Writers' schemas of typed expansions' records, by id.
    writers: Arc<crate::expansion::registered::Writers>,
}

impl Tabler {
    /// A tabler writing the tables of `catalog`'s topics into `bucket`.
    pub fn new(catalog: Arc<dyn Catalog>, bucket: String) -> Self {
        Self {
            writers: Arc::new(crate::expansion::registered::Writers::new(catalog.clone())),
            catalog,
            bucket,
            max_snapshot_bytes: 64 << 20,
            snapshot_max_age_ms: 10 * 60 * 1000,
            locks: std::sync::Mutex::new(HashMap::new()),
            reflected: std::sync::Mutex::new(HashMap::new()),
            metrics: crate::TableMetrics::default(),
        }
    }

    /// Expires snapshots older than `age` (default 10 minutes).
    pub fn with_snapshot_max_age(mut self, age: std::time::Duration) -> Self {
        self.snapshot_max_age_ms = age.as_millis().min(i64::MAX as u128) as i64;
        self
    }

    /// The tabler's metrics.
    pub fn metrics(&self) -> &crate::TableMetrics {
        &self.metrics
    }

    /// The catalog.
    pub fn catalog(&self) -> &Arc<dyn Catalog> {
        &self.catalog
    }

    /// Writers' schemas of typed expansions' records.
    pub(crate) fn writers(&self) -> &Arc<crate::expansion::registered::Writers> {
        &self.writers
    }

    /// The bucket (= warehouse) holding the tables.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Key prefix of a topic table's files.
    pub fn prefix(topic: &str) -> String {
        format!("{NAMESPACE}/{topic}/")
    }

    pub(crate) fn lock_for(&self, topic: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.retain(|_, l| Arc::strong_count(l) > 1);
        locks.entry(topic.to_owned()).or_default().clone()
    }

    /// Brings the topic's table up to the partitions' high watermarks as they are when
    /// the call starts (or later), and returns its state. Fails with
    /// [`TableError::NoSuchTable`] when there is no such topic.
    pub async fn seal(&self, topic: &str) -> TableResult<TopicTable> {
        self.seal_with(topic, FOREGROUND_REWRITE_BYTES).await
    }

    /// [`Tabler::seal`] for the background tabler, which may rewrite more small files
    /// per snapshot since nobody waits for it.
    pub async fn seal_background(&self, topic: &str) -> TableResult<TopicTable> {
        self.seal_with(topic, BACKGROUND_REWRITE_BYTES).await
    }

    async fn seal_with(&self, topic: &str, max_rewrite_bytes: u64) -> TableResult<TopicTable> {
        let lock = self.lock_for(topic);
        let _one = lock.lock().await;
        let started = std::time::Instant::now();
        loop {
            let (table, more) = match self.seal_step(topic, max_rewrite_bytes).await {
                Ok(r) => r,
                Err(e) => {
                    if !matches!(e, TableError::NoSuchTable(_)) {
                        self.metrics.seal_errors.inc();
                    }
                    return Err(e);
                }
            };
            if !more {
                self.metrics
                    .seal_seconds
                    .observe(started.elapsed().as_secs_f64());
                return Ok(table);
            }
        }
    }

    /// The topic's record: [`TableError::NoSuchTable`] (its table's name) when there is
    /// no such topic.
    pub(crate) async fn topic_record(&self, topic: &str) -> TableResult<TopicRecord> {
        self.catalog
            .kafka()
            .topic(topic)
            .await?
            .ok_or_else(|| TableError::NoSuchTable(format!("{NAMESPACE}.{topic}")))
    }

    /// The table's current state without sealing (none before its first snapshot).
    pub async fn current(&self, topic: &TopicRecord) -> TableResult<Option<TopicTable>> {
        Ok(self
            .catalog
            .iceberg()
            .topic_table(&topic.name)
            .await?
            .filter(|t| t.topic_id == topic.id))
    }

    /// Whether the topic has committed data its table does not hold yet, compaction
    /// removed records the table still holds, or an expansion has a backfill to run.
    pub async fn behind(&self, topic: &TopicRecord) -> TableResult<bool> {
        let table = self.current(topic).await?;
        let passes = compaction_passes(self.catalog.as_ref(), topic).await?;
        let reflected = {
            let r = self.reflected.lock().unwrap_or_else(|p| p.into_inner());
            r.get(&topic.id).cloned()
        };
        let compacted = match reflected {
            Some(r) => r != passes,
            // Not looked at since the start: a seal step reads what the table reflects.
            None => passes.iter().any(|p| *p > 0),
        };
        if table.is_some() && compacted {
            return Ok(true);
        }
        // A backfill still to run is work for the background too.
        let backfilling = self
            .catalog
            .iceberg()
            .expansions(&topic.name)
            .await?
            .iter()
            .any(|(_, e)| {
                e.topic_id == topic.id
                    && e.versions.iter().any(|v| {
                        v.spec.is_some()
                            && v.backfill
                                .iter()
                                .enumerate()
                                .any(|(p, b)| *b < v.from(p as u32))
                    })
            });
        if backfilling {
            return Ok(true);
        }
        for p in 0..topic.partitions {
            let Some((st, end)) = self.catalog.kafka().stable_partition(topic.id, p).await? else {
                continue;
            };
            let tabled = table
                .as_ref()
                .and_then(|t| t.tabled.get(p as usize).copied())
                .unwrap_or(0)
                .max(st.log_start_offset);
            if tabled < end {
                return Ok(true);
            }
        }
        Ok(table.is_none())
    }

    /// Reads a table file stored in the bucket.
    pub async fn read_file(&self, location: &str) -> TableResult<Vec<u8>> {
        let key = objects::key_of(&self.bucket, location)
            .ok_or_else(|| TableError::MissingFile(location.to_owned()))?
            .to_owned();
        let catalog = self.catalog.clone();
        let bucket = self.bucket.clone();
        blocking(move || wait(objects::read(catalog.as_ref(), &bucket, &key))).await
    }

    pub(crate) async fn read_metadata(&self, location: &str) -> TableResult<TableMetadata> {
        let bytes = self.read_file(location).await?;
        serde_json::from_slice(&bytes)
            .map_err(|e| TableError::CorruptMetadata(location.to_owned(), e.to_string()))
    }

    /// One snapshot's worth of sealing; `true` when more is left to seal.
    async fn seal_step(
        &self,
        topic: &str,
        max_rewrite_bytes: u64,
    ) -> TableResult<(TopicTable, bool)> {
        let t = self.topic_record(topic).await?;
        let current = self.current(&t).await?;
        // Read before the log, so a pass committed meanwhile is seen again next step.
        let passes_now = compaction_passes(self.catalog.as_ref(), &t).await?;
        let table_location =
            objects::location(&self.bucket, Self::prefix(topic).trim_end_matches('/'));
        let (metadata, previous_location) = match &current {
            Some(c) => (
                self.read_metadata(&c.metadata_location).await?,
                Some(c.metadata_location.clone()),
            ),
            None => (new_metadata(&table_location, &t, &passes_now)?, None),
        };
        let arrow_schema = Arc::new(schema_to_arrow_schema(metadata.current_schema())?);
        let tabled = current
            .as_ref()
            .map(|c| c.tabled.clone())
            .unwrap_or_default();
        let old_start = current
            .as_ref()
            .map(|c| c.start.clone())
            .unwrap_or_default();
        let mut start = vec![0u64; t.partitions as usize];
        let mut truncate = Vec::new();
        for p in 0..t.partitions {
            let before = old_start.get(p as usize).copied().unwrap_or(0);
            let log_start = self
                .catalog
                .kafka()
                .partition(t.id, p)
                .await?
                .map_or(0, |st| st.log_start_offset);
            start[p as usize] = before.max(log_start);
            if log_start > before {
                truncate.push((p, log_start));
            }
        }
        if let Some(c) = &current
            && !truncate.is_empty()
            && metadata.current_snapshot().is_some()
        {
            // Records deleted from the log leave the table first, in a snapshot of their
            // own; appends follow in the next step.
            let io = FileIO::new_with_memory();
            let rewrite = Rewrite::Truncate(&truncate);
            // Every straddling file at once: the new start must hold for the whole table.
            let rewritten = self
                .write_rewrite(
                    &io,
                    &metadata,
                    &table_location,
                    &rewrite,
                    arrow_schema,
                    u64::MAX,
                )
                .await?
                .snapshot;
            let table = self
                .publish_rewrite(
                    &io,
                    &t,
                    c,
                    &metadata,
                    previous_location,
                    rewritten,
                    None,
                    start,
                )
                .await?;
            return Ok((table, true));
        }
        // Records compaction removed leave the table in a snapshot of their own too.
        let passes = passes_now;
        let reflected = reflected_passes(&metadata, t.partitions);
        if let Some(c) = &current
            && passes != reflected
        {
            let compacted: Vec<u32> = (0..t.partitions)
                .filter(|p| passes[*p as usize] != reflected[*p as usize])
                .collect();
            let io = FileIO::new_with_memory();
            let rewritten = match metadata.current_snapshot() {
                Some(_) => {
                    let rewrite = Rewrite::Compact {
                        topic: &t,
                        partitions: &compacted,
                    };
                    self.write_rewrite(
                        &io,
                        &metadata,
                        &table_location,
                        &rewrite,
                        arrow_schema,
                        max_rewrite_bytes.max(COMPACTED_REWRITE_BYTES),
                    )
                    .await?
                }
                None => Rewritten {
                    snapshot: None,
                    complete: true,
                },
            };
            // The passes are recorded once every file was checked; until then the next
            // step checks again (the files already rewritten keep their counts).
            let complete = rewritten.complete;
            let table = self
                .publish_rewrite(
                    &io,
                    &t,
                    c,
                    &metadata,
                    previous_location,
                    rewritten.snapshot,
                    complete.then_some(&passes[..]),
                    start,
                )
                .await?;
            if complete {
                self.reflected(&t, passes);
            }
            return Ok((table, true));
        }
        self.reflected(&t, passes.clone());
        // A table being rebuilt by a repair leaves expansions out until it is back where
        // it was (their targets hold those records' rows already).
        let until = repair::rebuild_until(&metadata);
        let expansions = match until {
            Some(_) => expand::StepExpansions::default(),
            None => expand::StepExpansions::load(self, &t).await?,
        };
        let mut collected = {
            let catalog = self.catalog.clone();
            let t = t.clone();
            let max = self.max_snapshot_bytes;
            let until = until.clone();
            blocking(move || {
                collect(
                    catalog.as_ref(),
                    &t,
                    &tabled,
                    arrow_schema,
                    max,
                    expansions,
                    until.as_deref(),
                )
            })
            .await?
        };
        let rebuilt = until
            .as_ref()
            .is_some_and(|u| repair::reached(&collected.tabled, u));
        // The steps after the rebuild go on past it, with the expansions.
        collected.more |= rebuilt;
        if let Some(c) = &current
            && !rebuilt
            && collected.files.is_empty()
            && collected.tabled == c.tabled
            && start == c.start
            && !collected.expansions.changes(&collected.tabled)
        {
            return Ok((c.clone(), collected.more));
        }
        let expansions = std::mem::take(&mut collected.expansions);

        let io = FileIO::new_with_memory();
        let mut written: Vec<(String, &'static str)> = Vec::new();
        let mut builder =
            TableMetadataBuilder::new_from_metadata(metadata.clone(), previous_location);
        if rebuilt {
            builder = repair::done_rebuilding(builder)?;
        }
        let mut removed: Vec<String> = Vec::new();
        // The expansions' rows first: their snapshots commit with the topic's.
        let staged = expansions
            .write(self, &io, &t, &collected.tabled, max_rewrite_bytes)
            .await?;
        if !collected.files.is_empty() {
            let (snapshot, files) = self
                .write_snapshot(
                    &io,
                    &metadata,
                    &table_location,
                    collected.files,
                    max_rewrite_bytes,
                )
                .await?;
            written.extend(files);
            let (expired, unreferenced) = self.expired(&metadata, &snapshot);
            builder = builder.set_branch_snapshot(snapshot, "main")?;
            if !expired.is_empty() {
                builder = builder.remove_snapshots(&expired);
                removed.extend(unreferenced);
            }
        }
        let table = self
            .publish(
                &io,
                &t,
                current.as_ref(),
                builder,
                written,
                removed,
                collected.tabled,
                start,
                staged,
            )
            .await?;
        Ok((table, collected.more))
    }

    /// Remembers the compaction passes a topic's table reflects, for [`Tabler::behind`].
    fn reflected(&self, topic: &TopicRecord, passes: Vec<u64>) {
        let mut r = self.reflected.lock().unwrap_or_else(|p| p.into_inner());
        r.insert(topic.id, passes);
    }

    /// Writes the new `metadata.json` and commits it with the new files, the deletion
    /// of files no snapshot needs any more, the expansions' staged changes and the new
    /// table state, in one transaction.
    #[allow(clippy::too_many_arguments)]
    async fn publish(
        &self,
        io: &FileIO,
        t: &TopicRecord,
        current: Option<&TopicTable>,
        builder: TableMetadataBuilder,
        mut written: Vec<(String, &'static str)>,
        mut removed: Vec<String>,
        tabled: Vec<u64>,
        start: Vec<u64>,
        staged: expand::Staged,
    ) -> TableResult<TopicTable> {
        let topic = t.name.as_str();
        let table_location =
            objects::location(&self.bucket, Self::prefix(topic).trim_end_matches('/'));
        let generation = current.map_or(0, |c| c.generation);
        let (metadata_location, expired) = self
            .write_metadata(io, builder, &table_location, generation)
            .await?;
        removed.extend(expired);
        written.push((metadata_location.clone(), "application/json"));
        written.extend(staged.written);
        removed.extend(staged.removed);
        let counters = staged.counters;
        let table = TopicTable {
            topic_id: t.id,
            generation: generation + 1,
            bucket: self.bucket.clone(),
            prefix: Self::prefix(topic),
            metadata_location,
            tabled,
            start,
        };
        let mut ops = staged.ops;
        ops.push(Op::Iceberg(IcebergOp::PutTopicTable {
            topic: topic.to_owned(),
            expected: generation,
            table: table.clone(),
        }));
        let bytes = self.commit_files(io, written, removed, ops).await?;
        self.metrics.snapshots.inc();
        for (label, c) in &counters {
            self.metrics.expansion(label, c);
        }
        tracing::debug!(
            topic,
            generation = table.generation,
            bytes,
            "table snapshot committed"
        );
        Ok(table)
    }
}

/// Waits on the current runtime for a future (a catalog read) from inside blocking work
/// ([`blocking`]): such threads belong to the runtime but are not its workers, so this
/// parks only the one thread.
pub fn wait<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Handle::current().block_on(f)
}

/// Runs blocking catalog or storage work off the async threads.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> TableResult<T> + Send + 'static,
) -> TableResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| TableError::Task(e.to_string()))?
}

#[cfg(test)]
mod tests {
    use super::file_range;

    #[test]
    fn data_file_names_give_partition_and_offsets() {
        assert_eq!(
            file_range(
                "s3://kafka/kafka_topics/t-1/data/partition=3/00000000000000000010-00000000000000000025-3f0a.parquet"
            ),
            Some((3, 10, 25))
        );
        assert_eq!(file_range("s3://kafka/kafka_topics/t/data/x.parquet"), None);
        assert_eq!(
            file_range("s3://kafka/other/partition=x/1-2-u.parquet"),
            None
        );
    }
}
