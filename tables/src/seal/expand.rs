//! A topic's expansions inside one seal step: the records the step adds to the topic
//! table are parsed into rows of each expansion's target table, and the targets' new
//! snapshots, their files and the expansions' bookkeeping are staged into the same
//! catalog transaction as the topic table's snapshot. So a load of either table sees a
//! record and its expanded row together, and a crash leaves both or neither.
//!
//! Each partition's records are expanded by the version of the expansion that was
//! current when they were committed (`Expansion::version_at`); a step stops a partition
//! where another version takes effect, so one step uses one version per partition.

use catalog::{ExpansionOp, IcebergOp};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use catalog::{Expansion, Op, TableRecord, TopicRecord};
use iceberg::arrow::schema_to_arrow_schema;
use iceberg::io::FileIO;
use iceberg::spec::{TableMetadata, TableMetadataBuilder};
use kafka_protocol::records::Record;

use super::{PartitionRows, Tabler, wait};
use crate::expansion::registered::{Format, Transcoded, Transcoder, Typed, Writers};
use crate::expansion::{Counters, Expander, Layout, Source, spec, target};
use crate::{TableResult, objects};

/// What a step adds to the topic table's commit for its expansions.
#[derive(Default)]
pub(crate) struct Staged {
    /// Files written into the step's `FileIO` (location, content type).
    pub written: Vec<(String, &'static str)>,
    /// Files no snapshot of a target needs any more.
    pub removed: Vec<String>,
    /// `PutTable` and `PutExpansion` ops.
    pub ops: Vec<Op>,
    /// What each target got, by (topic, source column), for the metrics once committed.
    pub counters: Vec<((String, String), Counters)>,
}

/// A target table as the step found it, and the rows it collected for it.
struct Target {
    namespace: String,
    name: String,
    record: TableRecord,
    metadata: TableMetadata,
    arrow: SchemaRef,
    parts: Vec<PartitionRows>,
    counters: Counters,
    /// `topic/source` of the expansion writing into it, for the metrics.
    label: (String, String),
}

/// A target table by (namespace, name).
type TargetKey = (String, String);

/// One version of an expansion: its layout, target and registry format.
type VersionLayout = (Layout, TargetKey, Option<Format>);

/// One expansion of the topic.
struct Active {
    source: Source,
    expansion: Expansion,
    /// Per version index: its layout, target key and registry format (none for a drop).
    layouts: Vec<Option<VersionLayout>>,
}

/// The topic's expansions for one step.
#[derive(Default)]
pub(crate) struct StepExpansions {
    active: Vec<Active>,
    /// Writers' schemas for typed expansions.
    writers: Option<Arc<Writers>>,
    targets: HashMap<(String, String), Target>,
    /// Backfill cursors the step moved: (expansion, version) -> per partition.
    cursors: HashMap<(usize, usize), Vec<u64>>,
}

/// The expanders of one partition's range: per expansion, the target, source and (for a
/// typed expansion) transcoder.
pub(crate) struct Expanders {
    each: Vec<(TargetKey, Source, Expander, Option<Transcoder>)>,
    /// The first failure to read a writer's schema: the step fails with it.
    failed: Option<crate::TableError>,
}

/// Expands one record's `source` column with `e`.
fn expand(
    e: &mut Expander,
    transcoder: Option<&mut Transcoder>,
    source: Source,
    partition: u32,
    r: &Record,
) -> TableResult<()> {
    let bytes = match source {
        Source::Key => r.key.as_deref(),
        Source::Value => r.value.as_deref(),
    };
    match (transcoder, bytes) {
        (Some(t), Some(b)) => {
            let document = match t.transcode(b)? {
                Transcoded::Json(j) => Some(j),
                Transcoded::Unreadable => None,
            };
            e.push_document(
                bytes,
                Some(document),
                partition as i32,
                r.offset,
                r.timestamp,
            );
        }
        _ => e.push(bytes, partition as i32, r.offset, r.timestamp),
    }
    Ok(())
}

impl Expanders {
    /// Expands one record of `partition`.
    pub fn push(&mut self, partition: u32, r: &Record) {
        for (_, source, e, t) in &mut self.each {
            if let Err(err) = expand(e, t.as_mut(), *source, partition, r) {
                self.failed.get_or_insert(err);
            }
        }
    }
}

impl StepExpansions {
    /// The topic's expansions, with the current state of every target table a version
    /// still in use writes into (a target dropped meanwhile is left out: its rows go
    /// nowhere).
    pub async fn load(tabler: &Tabler, topic: &TopicRecord) -> TableResult<Self> {
        let found = tabler.catalog.iceberg().expansions(&topic.name).await?;
        let mut out = Self::default();
        for (source, expansion) in found {
            if expansion.topic_id != topic.id {
                continue;
            }
            let Ok(source) = source.parse::<Source>() else {
                tracing::warn!(topic = %topic.name, source, "expansion of an unknown column");
                continue;
            };
            let mut layouts = Vec::with_capacity(expansion.versions.len());
            for v in &expansion.versions {
                let Some(s) = &v.spec else {
                    layouts.push(None);
                    continue;
                };
                let key = (s.namespace.clone(), s.table.clone());
                if !out.targets.contains_key(&key) {
                    let Some(record) = tabler.catalog.iceberg().other_table(&key.0, &key.1).await?
                    else {
                        tracing::warn!(topic = %topic.name, target = %format!("{}.{}", key.0, key.1), "expansion target dropped; its rows are skipped");
                        layouts.push(None);
                        continue;
                    };
                    let mut metadata = tabler.read_metadata(&record.metadata_location).await?;
                    // A table made before the partition column was renamed gets the new
                    // name in the snapshot this step commits (REST loads rename it too).
                    if let Some(b) = target::renamed_legacy(&metadata, None)? {
                        metadata = b.build()?.metadata;
                    }
                    let arrow = Arc::new(schema_to_arrow_schema(metadata.current_schema())?);
                    out.targets.insert(
                        key.clone(),
                        Target {
                            namespace: key.0.clone(),
                            name: key.1.clone(),
                            record,
                            metadata,
                            arrow,
                            parts: Vec::new(),
                            counters: Counters::default(),
                            label: (topic.name.clone(), source.name().to_owned()),
                        },
                    );
                }
                let format = Typed::of(&s.format).map(|t| t.format);
                if format.is_some() {
                    out.writers = Some(tabler.writers().clone());
                }
                layouts.push(Some((spec::layout_of(s, source)?, key, format)));
            }
            out.active.push(Active {
                source,
                expansion,
                layouts,
            });
        }
        Ok(out)
    }

    /// Where a step over `partition` from `first` must stop (at most `to`): the next
    /// offset another version of an expansion takes effect at.
    pub fn end(&self, partition: u32, first: u64, to: u64) -> u64 {
        self.active
            .iter()
            .filter_map(|a| a.expansion.next_boundary(partition, first))
            .fold(to, u64::min)
    }

    /// Expanders for `partition`'s records from `first` (up to [`StepExpansions::end`]).
    pub fn expanders(&self, partition: u32, first: u64) -> TableResult<Expanders> {
        let mut each = Vec::new();
        for a in &self.active {
            let Some(i) = a
                .expansion
                .versions
                .iter()
                .rposition(|v| v.from(partition) <= first)
            else {
                continue;
            };
            let Some((layout, key, format)) = &a.layouts[i] else {
                continue;
            };
            let Some(target) = self.targets.get(key) else {
                continue;
            };
            each.push((
                key.clone(),
                a.source,
                Expander::for_evolved(
                    layout,
                    target.arrow.clone(),
                    target.metadata.current_schema(),
                )?,
                self.transcoder(*format),
            ));
        }
        Ok(Expanders { each, failed: None })
    }

    /// A transcoder for a typed expansion's `format`.
    fn transcoder(&self, format: Option<Format>) -> Option<Transcoder> {
        Some(Transcoder::new(self.writers.clone()?, format?))
    }

    /// Keeps the rows `expanders` made of `partition`'s offsets `first..next`.
    pub fn take(
        &mut self,
        expanders: Expanders,
        partition: u32,
        (first, next): (u64, u64),
    ) -> TableResult<()> {
        if let Some(e) = expanders.failed {
            return Err(e);
        }
        for (key, _, mut e, _) in expanders.each {
            if e.is_empty() {
                continue;
            }
            let (rows, counters) = e.finish()?;
            if let Some(t) = self.targets.get_mut(&key) {
                t.counters = add(t.counters, counters);
                t.parts.push(PartitionRows {
                    partition,
                    first,
                    next,
                    rows: vec![rows],
                });
            }
        }
        Ok(())
    }

    /// Expands, once, records committed before a version that asked for a backfill: up
    /// to `budget` bytes of them, from each partition's cursor up to the version's start.
    /// Returns the bytes read and whether more are left.
    pub fn backfill(
        &mut self,
        catalog: &dyn catalog::Catalog,
        topic: &TopicRecord,
        mut budget: usize,
    ) -> TableResult<(usize, bool)> {
        let (mut read, mut more) = (0usize, false);
        for ai in 0..self.active.len() {
            for vi in 0..self.active[ai].expansion.versions.len() {
                let v = &self.active[ai].expansion.versions[vi];
                let Some((layout, key, format)) = self.active[ai].layouts[vi].clone() else {
                    continue;
                };
                let mut transcoder = self.transcoder(format);
                let Some((arrow, schema)) = self
                    .targets
                    .get(&key)
                    .map(|t| (t.arrow.clone(), t.metadata.current_schema().clone()))
                else {
                    continue;
                };
                let mut cursor = self
                    .cursors
                    .get(&(ai, vi))
                    .cloned()
                    .unwrap_or_else(|| v.backfill.clone());
                let source = self.active[ai].source;
                let mut moved = false;
                for p in 0..cursor.len().min(topic.partitions as usize) {
                    let (from, to) = (cursor[p], v.from(p as u32));
                    if from >= to {
                        continue;
                    }
                    if budget == 0 {
                        more = true;
                        continue;
                    }
                    let mut e = Expander::for_evolved(&layout, arrow.clone(), &schema)?;
                    let mut failed = None;
                    let (pos, bytes) =
                        read_records(catalog, topic, p as u32, (from, to), budget, &mut |r| {
                            if let Err(err) =
                                expand(&mut e, transcoder.as_mut(), source, p as u32, r)
                            {
                                failed.get_or_insert(err);
                            }
                        })?;
                    if let Some(err) = failed {
                        return Err(err);
                    }
                    budget = budget.saturating_sub(bytes);
                    read += bytes;
                    more |= pos < to;
                    cursor[p] = pos;
                    moved = true;
                    if !e.is_empty() {
                        let (rows, counters) = e.finish()?;
                        if let Some(t) = self.targets.get_mut(&key) {
                            t.counters = add(t.counters, counters);
                            t.parts.push(PartitionRows {
                                partition: p as u32,
                                first: from,
                                next: pos,
                                rows: vec![rows],
                            });
                        }
                    }
                }
                if moved {
                    self.cursors.insert((ai, vi), cursor);
                }
            }
        }
        Ok((read, more))
    }

    /// The expansions' records as they will be once the topic table reaches `tabled`:
    /// backfill cursors moved, versions every partition has passed pruned, an expansion
    /// whose last version is a passed drop removed. Only those that change.
    fn pruned(&self, tabled: &[u64]) -> Vec<(Source, u64, Option<Expansion>)> {
        let passed = |v: &catalog::ExpansionVersion| {
            (0..tabled.len()).all(|p| v.from(p as u32) <= tabled[p])
                && v.backfill
                    .iter()
                    .enumerate()
                    .all(|(p, b)| *b >= v.from(p as u32))
        };
        let mut out = Vec::new();
        for (ai, a) in self.active.iter().enumerate() {
            let mut versions = a.expansion.versions.clone();
            let mut moved = false;
            for (vi, v) in versions.iter_mut().enumerate() {
                if let Some(c) = self.cursors.get(&(ai, vi)) {
                    v.backfill = c.clone();
                    moved = true;
                }
            }
            // A version is needed until the next one has been reached everywhere.
            let drop = (1..versions.len())
                .take_while(|&i| passed(&versions[i]))
                .count();
            let rest = &versions[drop..];
            let gone = rest.len() == 1 && rest[0].spec.is_none() && passed(&rest[0]);
            if drop == 0 && !gone && !moved {
                continue;
            }
            let next = (!gone).then(|| Expansion {
                topic_id: a.expansion.topic_id,
                changes: a.expansion.changes + 1,
                versions: rest.to_vec(),
            });
            out.push((a.source, a.expansion.changes, next));
        }
        out
    }

    /// Whether the step changes an expansion once the topic table reaches `tabled` (so
    /// it commits even without new records): backfilled rows, a pruned version.
    pub fn changes(&self, tabled: &[u64]) -> bool {
        self.targets.values().any(|t| !t.parts.is_empty()) || !self.pruned(tabled).is_empty()
    }

    /// Writes each target's snapshot of the rows collected into `io` and stages it, with
    /// the expansions' pruning once the topic table reaches `tabled`.
    pub async fn write(
        self,
        tabler: &Tabler,
        io: &FileIO,
        topic: &TopicRecord,
        tabled: &[u64],
        max_rewrite_bytes: u64,
    ) -> TableResult<Staged> {
        let mut staged = Staged::default();
        for (source, changes, next) in self.pruned(tabled) {
            staged.ops.push(Op::Expansion(ExpansionOp::PutExpansion {
                topic: topic.name.clone(),
                source: source.name().to_owned(),
                expected: changes,
                expansion: next,
            }));
        }
        // In name order, so a step's ops are the same however the map iterates.
        let targets: BTreeMap<_, _> = self.targets.into_iter().collect();
        for (_, t) in targets {
            if t.parts.is_empty() {
                continue;
            }
            let location = objects::location(&tabler.bucket, t.record.prefix.trim_end_matches('/'));
            let (snapshot, files) = tabler
                .write_snapshot(io, &t.metadata, &location, t.parts, max_rewrite_bytes)
                .await?;
            let (expired, unreferenced) = tabler.expired(&t.metadata, &snapshot);
            let mut builder = TableMetadataBuilder::new_from_metadata(
                t.metadata.clone(),
                Some(t.record.metadata_location.clone()),
            )
            .set_branch_snapshot(snapshot, "main")?;
            if !expired.is_empty() {
                builder = builder.remove_snapshots(&expired);
            }
            let (metadata_location, old_metadata) = tabler
                .write_metadata(io, builder, &location, t.record.generation)
                .await?;
            staged.written.extend(files);
            staged
                .written
                .push((metadata_location.clone(), "application/json"));
            staged.removed.extend(unreferenced);
            staged.removed.extend(old_metadata);
            staged.ops.push(Op::Iceberg(IcebergOp::PutTable {
                namespace: t.namespace.clone(),
                name: t.name.clone(),
                expected: t.record.generation,
                table: Some(TableRecord {
                    generation: t.record.generation + 1,
                    metadata_location,
                    ..t.record.clone()
                }),
            }));
            staged.counters.push((t.label.clone(), t.counters));
        }
        Ok(staged)
    }
}

/// Calls `each` on the data records of offsets `from..to` of one partition, until
/// `budget` bytes of keys and values were read; returns the offset it stopped at and the
/// bytes read.
fn read_records(
    catalog: &dyn catalog::Catalog,
    topic: &TopicRecord,
    partition: u32,
    (from, to): (u64, u64),
    budget: usize,
    each: &mut dyn FnMut(&Record),
) -> TableResult<(u64, usize)> {
    let (mut pos, mut bytes) = (from, 0usize);
    let (kafka, txns) = (catalog.kafka(), catalog.txns());
    let aborted = wait(txns.aborted_txns(topic.id, partition, from, to))?;
    while pos < to && bytes < budget {
        let batches = wait(kafka.read_batches(topic.id, partition, pos, 4 << 20))?;
        if batches.is_empty() {
            return Ok((to, bytes));
        }
        for b in &batches {
            if b.base_offset >= to {
                return Ok((to, bytes));
            }
            if b.is_aborted(&aborted) {
                pos = pos.max(b.last_offset + 1).min(to);
                continue;
            }
            let mut buf = b.bytes.clone();
            let set =
                kafka_protocol::records::RecordBatchDecoder::decode(&mut buf).map_err(|e| {
                    crate::TableError::CorruptBatch {
                        topic: topic.name.clone(),
                        partition,
                        offset: b.base_offset,
                        reason: e.to_string(),
                    }
                })?;
            for r in &set.records {
                let offset = u64::try_from(r.offset).unwrap_or(0);
                if r.control || offset < pos || offset >= to {
                    continue;
                }
                bytes +=
                    r.key.as_ref().map_or(0, |k| k.len()) + r.value.as_ref().map_or(0, |v| v.len());
                each(r);
            }
            pos = pos.max(b.last_offset + 1).min(to);
        }
    }
    Ok((pos, bytes))
}

fn add(a: Counters, b: Counters) -> Counters {
    Counters {
        rows: a.rows + b.rows,
        parse_errors: a.parse_errors + b.parse_errors,
        missing: a.missing + b.missing,
        excess: a.excess + b.excess,
    }
}
