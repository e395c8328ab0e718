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
use crate::schema::{topic_partition_spec, topic_schema};
use crate::{TableError, TableResult, now_ms};

mod expand;

/// Namespace of every topic table.
pub const NAMESPACE: &str = "kafka_topics";

/// A snapshot whose parent lists this many manifests merges them into one, so scan
/// planning reads a bounded number of manifests however many seals there were.
pub const MAX_MANIFESTS: usize = 8;

/// Summary property of a merging snapshot: the manifests it replaced (comma-separated),
/// deleted once no older snapshot that lists them is left.
const REPLACED_MANIFESTS: &str = "eddy.replaced-manifests";

/// Summary property of a snapshot that dropped data files (DeleteRecords, retention):
/// those files, deleted once no older snapshot that lists them is left.
const REMOVED_FILES: &str = "eddy.removed-files";

/// Data files below this size are small: when manifests merge, a partition's small
/// files are rewritten into one once there are this many of them.
const SMALL_FILE_BYTES: u64 = 16 << 20;
/// ... and below this many rows. Compressible topics make files that are small on disk
/// but hold up to a whole snapshot's 64 MiB of records each (65,536 rows of 1 KiB):
/// rewriting those would pass every such row through Parquet twice (the tabler used
/// 40 % less CPU at half load without it, docs/benchmarks.md) for no fewer files worth
/// having. The files of short, age-triggered seals stay below it and are merged.
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
}

/// Rows of one partition read from the log for one snapshot.
struct PartitionRows {
    partition: u32,
    first: u64,
    next: u64,
    rows: RecordBatch,
}

/// What one pass over a topic's partitions collected.
struct Collected {
    files: Vec<PartitionRows>,
    tabled: Vec<u64>,
    more: bool,
    /// The expansions, holding their rows of the same records.
    expansions: expand::StepExpansions,
}

impl Tabler {
    /// A tabler writing the tables of `catalog`'s topics into `bucket`.
    pub fn new(catalog: Arc<dyn Catalog>, bucket: String) -> Self {
        Self {
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

    /// The table's current state without sealing (none before its first snapshot).
    pub async fn current(&self, topic: &TopicRecord) -> TableResult<Option<TopicTable>> {
        Ok(self
            .catalog
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
            let Some((st, end)) = self.catalog.stable_partition(topic.id, p).await? else {
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
        let t = self
            .catalog
            .topic(topic)
            .await?
            .ok_or_else(|| TableError::NoSuchTable(format!("{NAMESPACE}.{topic}")))?;
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
        let expansions = expand::StepExpansions::load(self, &t).await?;
        let mut collected = {
            let catalog = self.catalog.clone();
            let t = t.clone();
            let max = self.max_snapshot_bytes;
            blocking(move || collect(catalog.as_ref(), &t, &tabled, arrow_schema, max, expansions))
                .await?
        };
        if let Some(c) = &current
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

    /// Publishes a rewrite (if any file changed) and, with `passes`, records the
    /// compaction passes the table now reflects, keeping the tabled offsets.
    #[allow(clippy::too_many_arguments)]
    async fn publish_rewrite(
        &self,
        io: &FileIO,
        t: &TopicRecord,
        current: &TopicTable,
        metadata: &TableMetadata,
        previous_location: Option<String>,
        rewritten: Option<(Snapshot, Vec<(String, &'static str)>)>,
        passes: Option<&[u64]>,
        start: Vec<u64>,
    ) -> TableResult<TopicTable> {
        let mut builder =
            TableMetadataBuilder::new_from_metadata(metadata.clone(), previous_location);
        let mut written = Vec::new();
        let mut unreferenced = Vec::new();
        if let Some((snapshot, files)) = rewritten {
            let (expired, old) = self.expired(metadata, &snapshot);
            builder = builder.set_branch_snapshot(snapshot, "main")?;
            if !expired.is_empty() {
                builder = builder.remove_snapshots(&expired);
            }
            written = files;
            unreferenced = old;
        }
        if let Some(passes) = passes {
            builder = builder.set_properties(passes_property(passes))?;
        }
        self.publish(
            io,
            t,
            Some(current),
            builder,
            written,
            unreferenced,
            current.tabled.clone(),
            start,
            expand::Staged::default(),
        )
        .await
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

    /// Builds `builder`'s metadata and writes it into `io` as the `metadata.json` of
    /// generation `generation + 1` of the table at `table_location`; returns its location
    /// and the metadata files it no longer lists.
    pub(crate) async fn write_metadata(
        &self,
        io: &FileIO,
        builder: TableMetadataBuilder,
        table_location: &str,
        generation: u64,
    ) -> TableResult<(String, Vec<String>)> {
        let built = builder.build()?;
        let expired = built
            .expired_metadata_logs
            .into_iter()
            .map(|l| l.metadata_file)
            .collect();
        let metadata_location = format!(
            "{table_location}/metadata/{:05}-{}.metadata.json",
            generation + 1,
            uuid::Uuid::new_v4()
        );
        let json = serde_json::to_vec(&built.metadata)
            .map_err(|e| TableError::CorruptMetadata(metadata_location.clone(), e.to_string()))?;
        io.new_output(&metadata_location)?
            .write(json.into())
            .await?;
        Ok((metadata_location, expired))
    }

    /// Stores the files `written` into `io` as objects of the bucket and commits them
    /// with the deletion of `removed` (those still there) and `ops`, in one transaction;
    /// returns the bytes stored.
    pub(crate) async fn commit_files(
        &self,
        io: &FileIO,
        written: Vec<(String, &'static str)>,
        removed: Vec<String>,
        extra: Vec<Op>,
    ) -> TableResult<u64> {
        let mut files = Vec::with_capacity(written.len());
        for (location, content_type) in written {
            let bytes = io.new_input(&location)?.read().await?;
            let key = objects::key_of(&self.bucket, &location)
                .ok_or_else(|| TableError::MissingFile(location.clone()))?
                .to_owned();
            files.push((key, bytes.to_vec(), content_type));
        }
        let new_objects = {
            let catalog = self.catalog.clone();
            let bucket = self.bucket.clone();
            blocking(move || {
                let mut objs = NewObjects::default();
                let now = now_ms();
                for (key, bytes, content_type) in files {
                    if let Err(e) =
                        objs.add(catalog.as_ref(), &bucket, key, bytes, content_type, now)
                    {
                        objs.discard(&catalog);
                        return Err(e);
                    }
                }
                Ok(objs)
            })
            .await?
        };
        let mut ops = new_objects.ops.clone();
        for location in removed {
            let Some(key) = objects::key_of(&self.bucket, &location) else {
                continue;
            };
            // Only what is there: a missing file would fail the whole snapshot.
            if self.catalog.object(&self.bucket, key).await?.is_some() {
                ops.push(Op::S3(S3Op::DeleteObjectVersion {
                    bucket: self.bucket.clone(),
                    key: key.to_owned(),
                    version_id: "null".to_owned(),
                }));
            }
        }
        ops.extend(extra);
        match self.catalog.commit(Transaction::new(ops)).await {
            Ok(_) => {
                self.metrics.bytes_written.inc_by(new_objects.bytes);
                Ok(new_objects.bytes)
            }
            Err(e) => {
                new_objects.discard(&self.catalog);
                Err(e.into())
            }
        }
    }

    /// Snapshots of `metadata` to expire once `new` is added (older than the age limit,
    /// never the current one), and the files only they reference: their manifest lists
    /// and the manifests a later snapshot merged away once no older snapshot lists them.
    fn expired(&self, metadata: &TableMetadata, new: &Snapshot) -> (Vec<i64>, Vec<String>) {
        let cutoff = new.timestamp_ms() - self.snapshot_max_age_ms;
        let current = metadata.current_snapshot_id();
        let expired: Vec<i64> = metadata
            .snapshots()
            .filter(|s| s.timestamp_ms() < cutoff && Some(s.snapshot_id()) != current)
            .map(|s| s.snapshot_id())
            .collect();
        let mut files = Vec::new();
        for id in &expired {
            let Some(s) = metadata.snapshot_by_id(*id) else {
                continue;
            };
            files.push(s.manifest_list().to_owned());
            let child = metadata
                .snapshots()
                .map(|c| c.as_ref())
                .chain(std::iter::once(new))
                .find(|c| c.parent_snapshot_id() == Some(*id));
            for prop in [REPLACED_MANIFESTS, REMOVED_FILES] {
                if let Some(list) = child.and_then(|c| c.summary().additional_properties.get(prop))
                {
                    files.extend(list.split(',').filter(|p| !p.is_empty()).map(str::to_owned));
                }
            }
        }
        (expired, files)
    }

    /// What becomes of one data file of `partition` holding offsets `first..next`.
    async fn fate(
        &self,
        rewrite: &Rewrite<'_>,
        f: &DataFile,
        (partition, first, next): (u32, u64, u64),
        arrow_schema: arrow::datatypes::SchemaRef,
    ) -> TableResult<Fate> {
        match rewrite {
            Rewrite::Truncate(cuts) => {
                let Some(&(_, start)) = cuts.iter().find(|(p, _)| *p == partition) else {
                    return Ok(Fate::Keep);
                };
                if next <= start {
                    return Ok(Fate::Drop);
                }
                if first >= start {
                    return Ok(Fate::Keep);
                }
                let old = self.read_file(f.file_path()).await?;
                let rows = keep_from(old, start, arrow_schema)?;
                Ok(Fate::replace_or_drop(partition, (start, next), rows))
            }
            Rewrite::Compact { topic, partitions } => {
                if !partitions.contains(&partition) {
                    return Ok(Fate::Keep);
                }
                // The log is the truth: the file's range as the log holds it now. A
                // compacted range only ever loses records, so the same count means the
                // same rows; the batch headers give the count without decompressing.
                let held = {
                    let catalog = self.catalog.clone();
                    let id = topic.id;
                    blocking(move || log_count(catalog.as_ref(), id, partition, first, next))
                        .await?
                };
                if held == Some(f.record_count()) {
                    return Ok(Fate::Keep);
                }
                let rows = {
                    let catalog = self.catalog.clone();
                    let topic = (*topic).clone();
                    blocking(move || {
                        log_rows(
                            catalog.as_ref(),
                            &topic,
                            partition,
                            first,
                            next,
                            arrow_schema,
                        )
                    })
                    .await?
                };
                let count: usize = rows.iter().map(|b| b.num_rows()).sum();
                if count as u64 == f.record_count() {
                    return Ok(Fate::Keep);
                }
                Ok(Fate::replace_or_drop(partition, (first, next), rows))
            }
        }
    }

    /// Writes a snapshot that rewrites the table's files as `rewrite` says: files that
    /// lost every row are dropped, files that lost some are rewritten without them, the
    /// rest stay; every manifest is merged into one. Returns `None` when no file changed.
    async fn write_rewrite(
        &self,
        io: &FileIO,
        metadata: &TableMetadata,
        table_location: &str,
        rewrite: &Rewrite<'_>,
        arrow_schema: arrow::datatypes::SchemaRef,
        max_rewrite_bytes: u64,
    ) -> TableResult<Rewritten> {
        let parent = metadata
            .current_snapshot()
            .ok_or_else(|| TableError::Task("rewriting a table without a snapshot".into()))?;
        let schema = metadata.current_schema().clone();
        let spec = metadata.default_partition_spec().as_ref().clone();
        let snapshot_id = new_snapshot_id(metadata);
        let sequence = metadata.last_sequence_number() + 1;
        let uuid = uuid::Uuid::new_v4();
        let manifest_location = format!("{table_location}/metadata/{uuid}-m0.avro");
        let mut mw = ManifestWriterBuilder::new(
            io.new_output(&manifest_location)?,
            Some(snapshot_id),
            schema.clone(),
            spec.clone(),
        )
        .build_v2_data();
        let list_bytes = self.read_file(parent.manifest_list()).await?;
        let manifests: Vec<_> = ManifestList::parse_with_version(&list_bytes, FormatVersion::V2)?
            .consume_entries()
            .into_iter()
            .collect();
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build();
        let mut written = Vec::new();
        let mut replaced = Vec::new();
        let mut removed_files = Vec::new();
        let (mut deleted_files, mut deleted_records, mut added_files, mut added_records) =
            (0u64, 0u64, 0u64, 0u64);
        let (mut total_records, mut total_files, mut total_size) = (0u64, 0u64, 0u64);
        // Files changed so far (their bytes); past the bound the rest wait for the next
        // snapshot, so a rewrite holds a bounded part of the table in memory.
        let mut changed_bytes = 0u64;
        let mut complete = true;
        for m in manifests {
            let bytes = self.read_file(&m.manifest_path).await?;
            let (entries, _) = iceberg::spec::Manifest::parse_avro(&bytes)?.into_parts();
            for e in entries.iter().filter(|e| e.is_alive()) {
                let f = e.data_file();
                let seq = e.sequence_number().unwrap_or(m.sequence_number);
                let fate = match file_range(f.file_path()) {
                    Some(_) if changed_bytes >= max_rewrite_bytes => {
                        complete = false;
                        Fate::Keep
                    }
                    Some(range) => self.fate(rewrite, f, range, arrow_schema.clone()).await?,
                    None => Fate::Keep,
                };
                if !matches!(fate, Fate::Keep) {
                    changed_bytes += f.file_size_in_bytes();
                }
                match fate {
                    Fate::Keep => {
                        total_records += f.record_count();
                        total_files += 1;
                        total_size += f.file_size_in_bytes();
                        mw.add_existing_file(
                            f.clone(),
                            e.snapshot_id().unwrap_or(m.added_snapshot_id),
                            seq,
                            Some(seq),
                        )?;
                    }
                    Fate::Drop => {
                        deleted_files += 1;
                        deleted_records += f.record_count();
                        removed_files.push(f.file_path().to_owned());
                        mw.add_delete_file(f.clone(), seq, Some(seq))?;
                    }
                    Fate::Replace {
                        partition,
                        range,
                        rows,
                    } => {
                        deleted_files += 1;
                        deleted_records += f.record_count();
                        removed_files.push(f.file_path().to_owned());
                        mw.add_delete_file(f.clone(), seq, Some(seq))?;
                        let (location, files) = write_data_file(
                            io,
                            &props,
                            &schema,
                            table_location,
                            partition,
                            range,
                            &rows,
                            spec.spec_id(),
                        )
                        .await?;
                        for nf in files {
                            added_files += 1;
                            added_records += nf.record_count();
                            total_records += nf.record_count();
                            total_files += 1;
                            total_size += nf.file_size_in_bytes();
                            mw.add_file(nf, sequence)?;
                        }
                        written.push((location, "application/vnd.apache.parquet"));
                    }
                }
            }
            replaced.push(m.manifest_path);
        }
        if deleted_files == 0 {
            return Ok(Rewritten {
                snapshot: None,
                complete,
            });
        }
        let manifest = mw.write_manifest_file().await?;
        written.push((manifest_location, "application/avro"));
        let list_location =
            format!("{table_location}/metadata/snap-{snapshot_id}-{sequence}-{uuid}.avro");
        let mut lw = ManifestListWriter::v2(
            io.new_output(&list_location)?.writer().await?,
            snapshot_id,
            Some(parent.snapshot_id()),
            sequence,
        );
        lw.add_manifests(std::iter::once(manifest))?;
        lw.close().await?;
        written.push((list_location.clone(), "application/avro"));
        let mut props = HashMap::from([
            ("deleted-data-files".to_owned(), deleted_files.to_string()),
            ("deleted-records".to_owned(), deleted_records.to_string()),
            ("added-data-files".to_owned(), added_files.to_string()),
            ("added-records".to_owned(), added_records.to_string()),
            ("total-records".to_owned(), total_records.to_string()),
            ("total-data-files".to_owned(), total_files.to_string()),
            ("total-files-size".to_owned(), total_size.to_string()),
            ("total-delete-files".to_owned(), "0".to_owned()),
            ("total-position-deletes".to_owned(), "0".to_owned()),
            ("total-equality-deletes".to_owned(), "0".to_owned()),
            (REPLACED_MANIFESTS.to_owned(), replaced.join(",")),
        ]);
        if !removed_files.is_empty() {
            props.insert(REMOVED_FILES.to_owned(), removed_files.join(","));
        }
        let operation = if added_files > 0 {
            Operation::Overwrite
        } else {
            Operation::Delete
        };
        let snapshot = Snapshot::builder()
            .with_snapshot_id(snapshot_id)
            .with_parent_snapshot_id(Some(parent.snapshot_id()))
            .with_sequence_number(sequence)
            .with_timestamp_ms(now_ms().max(metadata.last_updated_ms()))
            .with_manifest_list(list_location)
            .with_summary(Summary {
                operation,
                additional_properties: props,
            })
            .with_schema_id(metadata.current_schema_id())
            .build();
        Ok(Rewritten {
            snapshot: Some((snapshot, written)),
            complete,
        })
    }

    /// Writes the data files, their manifest and the manifest list of a new append
    /// snapshot (merging the parent's manifests into one when they are many); returns the snapshot and the files written (location, content type).
    async fn write_snapshot(
        &self,
        io: &FileIO,
        metadata: &TableMetadata,
        table_location: &str,
        parts: Vec<PartitionRows>,
        max_rewrite_bytes: u64,
    ) -> TableResult<(Snapshot, Vec<(String, &'static str)>)> {
        let schema = metadata.current_schema().clone();
        let spec = metadata.default_partition_spec().as_ref().clone();
        let spec_id = spec.spec_id();
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build();
        let mut written = Vec::new();
        let mut data_files: Vec<DataFile> = Vec::new();
        let mut added_records = 0u64;
        let mut added_size = 0u64;
        for part in parts {
            let (location, files) = write_data_file(
                io,
                &props,
                &schema,
                table_location,
                part.partition,
                (part.first, part.next),
                std::slice::from_ref(&part.rows),
                spec_id,
            )
            .await?;
            for f in files {
                added_records += f.record_count();
                added_size += f.file_size_in_bytes();
                self.metrics.rows.inc_by(f.record_count());
                data_files.push(f);
            }
            written.push((location, "application/vnd.apache.parquet"));
        }

        let snapshot_id = new_snapshot_id(metadata);
        let sequence = metadata.last_sequence_number() + 1;
        let parent = metadata.current_snapshot();
        let uuid = uuid::Uuid::new_v4();
        let manifest_location = format!("{table_location}/metadata/{uuid}-m0.avro");
        let added_files = data_files.len();
        let mut existing = Vec::new();
        let mut totals = (0u64, 0u64, 0u64);
        if let Some(parent) = parent {
            let bytes = self.read_file(parent.manifest_list()).await?;
            existing = ManifestList::parse_with_version(&bytes, FormatVersion::V2)?
                .consume_entries()
                .into_iter()
                .collect();
            let prop = |k: &str| {
                parent
                    .summary()
                    .additional_properties
                    .get(k)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            totals = (
                prop("total-records"),
                prop("total-data-files"),
                prop("total-files-size"),
            );
        }
        let merge = existing.len() + 1 > MAX_MANIFESTS;
        let mut mw = ManifestWriterBuilder::new(
            io.new_output(&manifest_location)?,
            Some(snapshot_id),
            schema.clone(),
            spec,
        )
        .build_v2_data();
        let mut replaced = Vec::new();
        let mut removed_files = Vec::new();
        let (mut compacted_files, mut compacted_size, mut removed_size) = (0u64, 0u64, 0u64);
        if merge {
            let mut live = Vec::new();
            for m in existing.drain(..) {
                let bytes = self.read_file(&m.manifest_path).await?;
                let (entries, _) = iceberg::spec::Manifest::parse_avro(&bytes)?.into_parts();
                for e in entries.iter().filter(|e| e.is_alive()) {
                    let seq = e.sequence_number().unwrap_or(m.sequence_number);
                    let snapshot = e.snapshot_id().unwrap_or(m.added_snapshot_id);
                    live.push((e.data_file().clone(), snapshot, seq));
                }
                replaced.push(m.manifest_path);
            }
            // Small files of a partition are rewritten into one while manifests merge.
            type Small = (DataFile, u64, u64, i64, i64);
            let mut small: std::collections::BTreeMap<u32, Vec<Small>> = Default::default();
            let mut keep = Vec::new();
            for (f, snapshot, seq) in live {
                match file_range(f.file_path()) {
                    Some((p, first, next))
                        if f.file_size_in_bytes() < SMALL_FILE_BYTES
                            && f.record_count() < SMALL_FILE_ROWS =>
                    {
                        small
                            .entry(p)
                            .or_default()
                            .push((f, first, next, snapshot, seq));
                    }
                    _ => keep.push((f, snapshot, seq)),
                }
            }
            let arrow_schema = Arc::new(schema_to_arrow_schema(&schema)?);
            for (p, mut files) in small {
                files.sort_by_key(|(_, first, ..)| *first);
                // The oldest small files, up to the rewrite budget, so a seal's extra
                // work stays bounded (readers wait for seals on load).
                let mut budget = 0u64;
                let take = files
                    .iter()
                    .take_while(|(f, ..)| {
                        budget += f.file_size_in_bytes();
                        budget <= max_rewrite_bytes
                    })
                    .count();
                let rest = files.split_off(take);
                keep.extend(rest.into_iter().map(|(f, _, _, sid, seq)| (f, sid, seq)));
                if files.len() < COMPACT_FILES {
                    keep.extend(files.into_iter().map(|(f, _, _, sid, seq)| (f, sid, seq)));
                    continue;
                }
                let mut batches = Vec::new();
                let (first, next) = (files[0].1, files[files.len() - 1].2);
                for (f, _, _, _, seq) in &files {
                    let bytes = self.read_file(f.file_path()).await?;
                    batches.extend(keep_from(bytes, 0, arrow_schema.clone())?);
                    removed_files.push(f.file_path().to_owned());
                    removed_size += f.file_size_in_bytes();
                    mw.add_delete_file(f.clone(), *seq, Some(*seq))?;
                }
                let (location, files) = write_data_file(
                    io,
                    &props,
                    &schema,
                    table_location,
                    p,
                    (first, next),
                    &batches,
                    spec_id,
                )
                .await?;
                for nf in files {
                    compacted_files += 1;
                    compacted_size += nf.file_size_in_bytes();
                    mw.add_file(nf, sequence)?;
                }
                written.push((location, "application/vnd.apache.parquet"));
            }
            for (f, snapshot, seq) in keep {
                mw.add_existing_file(f, snapshot, seq, Some(seq))?;
            }
        }
        for f in data_files {
            mw.add_file(f, sequence)?;
        }
        let manifest = mw.write_manifest_file().await?;
        written.push((manifest_location, "application/avro"));
        let mut manifests = vec![manifest];
        manifests.extend(existing);
        let list_location =
            format!("{table_location}/metadata/snap-{snapshot_id}-{sequence}-{uuid}.avro");
        let mut lw = ManifestListWriter::v2(
            io.new_output(&list_location)?.writer().await?,
            snapshot_id,
            parent.map(|p| p.snapshot_id()),
            sequence,
        );
        lw.add_manifests(manifests.into_iter())?;
        lw.close().await?;
        written.push((list_location.clone(), "application/avro"));

        totals.1 = (totals.1 + compacted_files).saturating_sub(removed_files.len() as u64);
        totals.2 = (totals.2 + compacted_size).saturating_sub(removed_size);
        let summary = Summary {
            operation: if removed_files.is_empty() {
                Operation::Append
            } else {
                Operation::Overwrite
            },
            additional_properties: HashMap::from([
                ("added-data-files".to_owned(), added_files.to_string()),
                ("added-records".to_owned(), added_records.to_string()),
                ("added-files-size".to_owned(), added_size.to_string()),
                (
                    "total-records".to_owned(),
                    (totals.0 + added_records).to_string(),
                ),
                (
                    "total-data-files".to_owned(),
                    (totals.1 + added_files as u64).to_string(),
                ),
                (
                    "total-files-size".to_owned(),
                    (totals.2 + added_size).to_string(),
                ),
                ("total-delete-files".to_owned(), "0".to_owned()),
                ("total-position-deletes".to_owned(), "0".to_owned()),
                ("total-equality-deletes".to_owned(), "0".to_owned()),
            ]),
        };
        let mut summary = summary;
        if !replaced.is_empty() {
            summary
                .additional_properties
                .insert(REPLACED_MANIFESTS.to_owned(), replaced.join(","));
        }
        if !removed_files.is_empty() {
            summary
                .additional_properties
                .insert(REMOVED_FILES.to_owned(), removed_files.join(","));
        }
        let snapshot = Snapshot::builder()
            .with_snapshot_id(snapshot_id)
            .with_parent_snapshot_id(parent.map(|p| p.snapshot_id()))
            .with_sequence_number(sequence)
            .with_timestamp_ms(now_ms().max(metadata.last_updated_ms()))
            .with_manifest_list(list_location)
            .with_summary(summary)
            .with_schema_id(metadata.current_schema_id())
            .build();
        Ok((snapshot, written))
    }
}

/// How a snapshot rewrites a table's existing files.
enum Rewrite<'a> {
    /// Records before each `(partition, log start)` were deleted (DeleteRecords,
    /// retention).
    Truncate(&'a [(u32, u64)]),
    /// These partitions were compacted: each file keeps the rows the log still has.
    Compact {
        topic: &'a TopicRecord,
        partitions: &'a [u32],
    },
}

/// A rewrite's snapshot (none when no file changed) and whether it covered every file
/// (`false`: the byte bound stopped it; the next step goes on).
struct Rewritten {
    snapshot: Option<(Snapshot, Vec<(String, &'static str)>)>,
    complete: bool,
}

/// What becomes of one data file.
enum Fate {
    Keep,
    Drop,
    Replace {
        partition: u32,
        range: (u64, u64),
        rows: Vec<RecordBatch>,
    },
}

impl Fate {
    fn replace_or_drop(partition: u32, range: (u64, u64), rows: Vec<RecordBatch>) -> Self {
        if rows.iter().all(|b| b.num_rows() == 0) {
            Fate::Drop
        } else {
            Fate::Replace {
                partition,
                range,
                rows,
            }
        }
    }
}

/// Table property: per partition (comma-separated), the compaction passes the table's
/// files reflect.
const COMPACTION_PASSES: &str = "eddy.compaction-passes";

/// The compaction passes of each of a topic's partitions, as the catalog has them now.
async fn compaction_passes(catalog: &dyn Catalog, topic: &TopicRecord) -> TableResult<Vec<u64>> {
    let mut out = Vec::with_capacity(topic.partitions as usize);
    for p in 0..topic.partitions {
        out.push(
            catalog
                .compaction(topic.id, p)
                .await?
                .map_or(0, |c| c.passes),
        );
    }
    Ok(out)
}

/// The compaction passes a table's files reflect (zeros when it never recorded any).
fn reflected_passes(metadata: &TableMetadata, partitions: u32) -> Vec<u64> {
    let mut v: Vec<u64> = metadata
        .properties()
        .get(COMPACTION_PASSES)
        .map(|s| s.split(',').map(|n| n.parse().unwrap_or(0)).collect())
        .unwrap_or_default();
    v.resize(partitions as usize, 0);
    v
}

fn passes_property(passes: &[u64]) -> HashMap<String, String> {
    let list: Vec<String> = passes.iter().map(u64::to_string).collect();
    HashMap::from([(COMPACTION_PASSES.to_owned(), list.join(","))])
}

/// How many data records the log holds for offsets `first..next` of one partition, from
/// the batch headers; `None` when a batch reaches outside the range or is a control or
/// transactional batch (only decoding tells then).
fn log_count(
    catalog: &dyn Catalog,
    topic_id: u128,
    partition: u32,
    first: u64,
    next: u64,
) -> TableResult<Option<u64>> {
    let mut count = 0u64;
    let mut pos = first;
    while pos < next {
        let batches = wait(catalog.read_batches(topic_id, partition, pos, 4 << 20))?;
        if batches.is_empty() {
            break;
        }
        for b in &batches {
            if b.base_offset >= next {
                return Ok(Some(count));
            }
            // A transactional batch may be one an abort dropped: decoding tells.
            let control = b.bytes.get(22).is_some_and(|a| a & (1 << 5 | 1 << 4) != 0);
            let records = b
                .bytes
                .get(57..61)
                .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]));
            match records {
                Some(n) if !control && b.base_offset >= first && b.last_offset < next => {
                    count += u64::try_from(n).unwrap_or(0);
                }
                _ => return Ok(None),
            }
            pos = b.last_offset + 1;
        }
    }
    Ok(Some(count))
}

/// The rows the log holds for offsets `first..next` of one partition.
fn log_rows(
    catalog: &dyn Catalog,
    topic: &TopicRecord,
    partition: u32,
    first: u64,
    next: u64,
    schema: arrow::datatypes::SchemaRef,
) -> TableResult<Vec<RecordBatch>> {
    let mut rows = RowBuilder::new(schema, partition)?;
    add_log_range(
        catalog,
        topic,
        partition,
        &mut rows,
        (first, next),
        usize::MAX,
        &mut |_| {},
    )?;
    Ok(vec![rows.finish()?])
}

/// Adds the log's records of offsets `from..to` of one partition to `rows` (and passes
/// each to `each`), until they hold `budget` bytes; returns the offset it stopped at
/// (`to` when it read them all).
fn add_log_range(
    catalog: &dyn Catalog,
    topic: &TopicRecord,
    partition: u32,
    rows: &mut RowBuilder,
    (from, to): (u64, u64),
    budget: usize,
    each: &mut dyn FnMut(&kafka_protocol::records::Record),
) -> TableResult<u64> {
    let mut pos = from;
    // A table holds what a read_committed consumer sees: aborted batches stay out.
    let aborted = wait(catalog.aborted_txns(topic.id, partition, from, to))?;
    while pos < to && rows.bytes < budget {
        let batches = wait(catalog.read_batches(topic.id, partition, pos, 4 << 20))?;
        if batches.is_empty() {
            return Ok(to);
        }
        for b in &batches {
            if b.base_offset >= to {
                return Ok(to);
            }
            if b.is_aborted(&aborted) {
                pos = pos.max(b.last_offset + 1).min(to);
                continue;
            }
            rows.add_batch(&topic.name, partition, b, pos, to, each)?;
            pos = pos.max(b.last_offset + 1).min(to);
        }
    }
    Ok(pos)
}

/// Writes one partition's rows (in order, without concatenating them first) as a
/// Parquet data file named by its offset range (`first` up to `next`), returning its
/// location and its manifest entries.
#[allow(clippy::too_many_arguments)]
async fn write_data_file(
    io: &FileIO,
    props: &WriterProperties,
    schema: &iceberg::spec::SchemaRef,
    table_location: &str,
    partition: u32,
    (first, next): (u64, u64),
    rows: &[RecordBatch],
    spec_id: i32,
) -> TableResult<(String, Vec<DataFile>)> {
    let location = format!(
        "{table_location}/data/partition={partition}/{first:020}-{next:020}-{}.parquet",
        uuid::Uuid::new_v4()
    );
    let mut w = ParquetWriterBuilder::new(props.clone(), schema.clone())
        .build(io.new_output(&location)?)
        .await?;
    for batch in rows {
        w.write(batch).await?;
    }
    let mut files = Vec::new();
    for mut b in w.close().await? {
        b.partition(Struct::from_iter([Some(Literal::int(partition as i32))]))
            .partition_spec_id(spec_id);
        files.push(
            b.build()
                .map_err(|e| TableError::Task(format!("data file entry: {e}")))?,
        );
    }
    Ok((location, files))
}

/// Partition and offset range (`first..next`) of a data file, from its name.
fn file_range(path: &str) -> Option<(u32, u64, u64)> {
    let (dir, name) = path.rsplit_once('/')?;
    let p = dir.rsplit_once("/partition=")?.1.parse().ok()?;
    let mut parts = name.split('-');
    let first = parts.next()?.parse().ok()?;
    let next = parts.next()?.parse().ok()?;
    Some((p, first, next))
}

/// The rows of a Parquet data file at offsets `from` and after, batch by batch.
fn keep_from(
    file: Vec<u8>,
    from: u64,
    schema: arrow::datatypes::SchemaRef,
) -> TableResult<Vec<RecordBatch>> {
    use arrow::array::{Array, Int64Array};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(file))
        .map_err(|e| TableError::Task(format!("reading a data file to rewrite: {e}")))?
        .build()
        .map_err(|e| TableError::Task(format!("reading a data file to rewrite: {e}")))?;
    let mut kept = Vec::new();
    for batch in reader {
        // Files of an expansion's target may predate its current schema.
        let batch = crate::expansion::target::project(batch?, &schema)?;
        if from == 0 {
            kept.push(batch);
            continue;
        }
        let offsets = batch
            .column_by_name(crate::schema::OFFSET)
            .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
            .ok_or_else(|| TableError::Task("data file without an offset column".into()))?;
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        if offsets.null_count() == 0 && offsets.values().first().is_some_and(|&o| o >= from) {
            // Offsets ascend within a file: the whole batch stays, uncopied.
            kept.push(batch);
            continue;
        }
        let keep = arrow::compute::kernels::cmp::gt_eq(offsets, &Int64Array::new_scalar(from))?;
        let batch = arrow::compute::filter_record_batch(&batch, &keep)?;
        if batch.num_rows() > 0 {
            kept.push(batch);
        }
    }
    Ok(kept)
}

/// A snapshot id not yet used by the table (positive, as Iceberg wants).
fn new_snapshot_id(metadata: &TableMetadata) -> i64 {
    loop {
        let id = (uuid::Uuid::new_v4().as_u128() as i64) & i64::MAX;
        if id != 0 && metadata.snapshot_by_id(id).is_none() {
            return id;
        }
    }
}

/// Metadata of a new, empty topic table, whose files will reflect the compaction
/// `passes` there are now (they are read from the log as it is).
fn new_metadata(location: &str, topic: &TopicRecord, passes: &[u64]) -> TableResult<TableMetadata> {
    let mut properties = passes_property(passes);
    properties.insert("eddy.topic-id".to_owned(), format!("{:032x}", topic.id));
    crate::schema::new_table(
        topic_schema()?,
        topic_partition_spec()?,
        location,
        properties,
    )
}

/// Reads the untabled records of every partition, up to `max_bytes` in all, and
/// expands them as `expansions` say (a partition's step ends where another version of
/// an expansion takes effect).
fn collect(
    catalog: &dyn Catalog,
    topic: &TopicRecord,
    tabled: &[u64],
    schema: arrow::datatypes::SchemaRef,
    max_bytes: usize,
    mut expansions: expand::StepExpansions,
) -> TableResult<Collected> {
    let mut out = Collected {
        files: Vec::new(),
        tabled: vec![0; topic.partitions as usize],
        more: false,
        expansions: expand::StepExpansions::default(),
    };
    let mut budget = max_bytes;
    for p in 0..topic.partitions {
        let before = tabled.get(p as usize).copied().unwrap_or(0);
        out.tabled[p as usize] = before;
        // Sealing stops at the last stable offset: an open transaction's rows appear
        // once it commits.
        let Some((st, end)) = wait(catalog.stable_partition(topic.id, p))? else {
            continue;
        };
        let first = before.max(st.log_start_offset);
        if first >= end {
            out.tabled[p as usize] = first;
            continue;
        }
        if budget == 0 {
            out.more = true;
            continue;
        }
        let to = expansions.end(p, first, end);
        let mut rows = RowBuilder::new(schema.clone(), p)?;
        let mut expanders = expansions.expanders(p, first)?;
        let pos = add_log_range(
            catalog,
            topic,
            p,
            &mut rows,
            (first, to),
            budget,
            &mut |r| expanders.push(p, r),
        )?;
        budget = budget.saturating_sub(rows.bytes);
        out.more |= pos < end;
        out.tabled[p as usize] = pos;
        expansions.take(expanders, p, (first, pos))?;
        if !rows.is_empty() {
            out.files.push(PartitionRows {
                partition: p,
                first,
                next: pos,
                rows: rows.finish()?,
            });
        }
    }
    // Older records an expansion asked to backfill, with what the budget leaves.
    let (_, more) = expansions.backfill(catalog, topic, budget)?;
    out.more |= more;
    out.expansions = expansions;
    Ok(out)
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
