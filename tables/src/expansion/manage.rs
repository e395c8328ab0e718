//! Creating, reading, changing and dropping a topic's expansion. Every change holds the
//! topic's seal lock, so no seal commits between reading the topic's offsets and
//! committing: a change takes effect, per partition, at the offset the partition had
//! reached (records committed before it are expanded as before), and the target table's
//! schema changes in the same transaction.

use catalog::{Expansion, ExpansionSpec, ExpansionVersion, Op, TableRecord, TopicRecord};
use catalog::{ExpansionOp, IcebergOp};
use iceberg::io::FileIO;
use iceberg::spec::{TableMetadata, TableMetadataBuilder};

use super::layout::Source;
use super::registered::{self, Format, Typed};
use super::spec::{self, ColumnsBody, PutBody, View};
use super::target;
use crate::seal::Tabler;
use crate::{TableError, TableResult, objects};

fn unknown_topic(topic: &str) -> TableError {
    TableError::NotFound(format!("unknown topic: {topic}"))
}

fn no_expansion(topic: &str, source: Source) -> TableError {
    TableError::NotFound(format!(
        "topic {topic} has no expansion of its {} column",
        source.name()
    ))
}

/// The topic, or 404.
async fn topic_of(tabler: &Tabler, topic: &str) -> TableResult<TopicRecord> {
    tabler
        .catalog()
        .kafka()
        .topic(topic)
        .await?
        .ok_or_else(|| unknown_topic(topic))
}

/// Per partition, one offset of its state (`next_offset`, `log_start_offset`).
async fn offsets(
    tabler: &Tabler,
    t: &TopicRecord,
    of: fn(&catalog::PartitionState) -> u64,
) -> TableResult<Vec<u64>> {
    let kafka = tabler.catalog().kafka();
    let mut out = Vec::with_capacity(t.partitions as usize);
    for p in 0..t.partitions {
        out.push(kafka.partition(t.id, p).await?.as_ref().map_or(0, of));
    }
    Ok(out)
}

/// The topic's expansion of `source` (its topic id checked).
pub(crate) async fn stored(
    tabler: &Tabler,
    t: &TopicRecord,
    source: Source,
) -> TableResult<Option<Expansion>> {
    Ok(tabler
        .catalog()
        .iceberg()
        .expansions(&t.name)
        .await?
        .into_iter()
        .find(|(s, e)| s == source.name() && e.topic_id == t.id)
        .map(|(_, e)| e))
}

/// Which live expansion writes into `namespace.table`, as (topic, source column).
pub async fn writer_of(
    tabler: &Tabler,
    namespace: &str,
    table: &str,
) -> TableResult<Option<(String, String)>> {
    for t in tabler.catalog().kafka().topics().await? {
        for (source, e) in tabler.catalog().iceberg().expansions(&t.name).await? {
            if e.current()
                .is_some_and(|s| s.namespace == namespace && s.table == table)
            {
                return Ok(Some((t.name, source)));
            }
        }
    }
    Ok(None)
}

/// Every topic an expansion (any version still in use) writes into `namespace.table`
/// from.
pub async fn sources_of(tabler: &Tabler, namespace: &str, table: &str) -> TableResult<Vec<String>> {
    let mut out = Vec::new();
    for t in tabler.catalog().kafka().topics().await? {
        let writes = tabler
            .catalog()
            .iceberg()
            .expansions(&t.name)
            .await?
            .iter()
            .any(|(_, e)| {
                e.versions.iter().any(|v| {
                    v.spec
                        .as_ref()
                        .is_some_and(|s| s.namespace == namespace && s.table == table)
                })
            });
        if writes {
            out.push(t.name);
        }
    }
    Ok(out)
}

/// The target's metadata with `spec`'s columns: the op that publishes it, its location
/// and the metadata files it no longer lists (none when the stored table already has
/// them).
async fn target_change(
    tabler: &Tabler,
    io: &FileIO,
    spec: &ExpansionSpec,
    source: Source,
) -> TableResult<Option<(Op, String, Vec<String>)>> {
    let columns = spec::layout_of(spec, source)?.columns().to_vec();
    let prefix = format!("{}/{}/", spec.namespace, spec.table);
    let location = objects::location(tabler.bucket(), prefix.trim_end_matches('/'));
    let existing = tabler
        .catalog()
        .iceberg()
        .other_table(&spec.namespace, &spec.table)
        .await?;
    let (builder, generation) = match &existing {
        None => {
            let metadata: TableMetadata = target::new_metadata(&location, &columns)?;
            (TableMetadataBuilder::new_from_metadata(metadata, None), 0)
        }
        Some(rec) => {
            let metadata = tabler.read_metadata(&rec.metadata_location).await?;
            match target::evolve(&metadata, &rec.metadata_location, &columns)? {
                Some(b) => (b, rec.generation),
                None => return Ok(None),
            }
        }
    };
    let (metadata_location, expired) = tabler
        .write_metadata(io, builder, &location, generation)
        .await?;
    let op = Op::Iceberg(IcebergOp::PutTable {
        namespace: spec.namespace.clone(),
        name: spec.table.clone(),
        expected: generation,
        table: Some(TableRecord {
            generation: generation + 1,
            bucket: tabler.bucket().to_owned(),
            prefix,
            metadata_location: metadata_location.clone(),
        }),
    });
    Ok(Some((op, metadata_location, expired)))
}

/// What a new version of an expansion commits: its ops, the metadata files written for
/// them into the change's `FileIO` and the ones they make unneeded.
#[derive(Default)]
pub(crate) struct VersionChange {
    pub ops: Vec<Op>,
    pub written: Vec<(String, &'static str)>,
    pub removed: Vec<String>,
}

/// Commits a new current version of the topic's expansion of `source`, with the target
/// table's change.
async fn commit_version(
    tabler: &Tabler,
    t: &TopicRecord,
    source: Source,
    old: Option<Expansion>,
    spec: Option<ExpansionSpec>,
    backfill: bool,
) -> TableResult<Vec<u64>> {
    let io = FileIO::new_with_memory();
    let mut change = VersionChange::default();
    let from = version_change(tabler, &io, t, source, old, spec, backfill, &mut change).await?;
    tabler
        .commit_files(&io, change.written, change.removed, change.ops)
        .await?;
    Ok(from)
}

/// Stages a new current version of the topic's expansion of `source` and the target
/// table's change into `change`; returns the offsets it takes effect from.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn version_change(
    tabler: &Tabler,
    io: &FileIO,
    t: &TopicRecord,
    source: Source,
    old: Option<Expansion>,
    spec: Option<ExpansionSpec>,
    backfill: bool,
    change: &mut VersionChange,
) -> TableResult<Vec<u64>> {
    if let Some(s) = &spec
        && let Some((op, location, expired)) = target_change(tabler, io, s, source).await?
    {
        change.ops.push(op);
        change.written.push((location, "application/json"));
        change.removed.extend(expired);
    }
    let from = offsets(tabler, t, |s| s.next_offset).await?;
    let backfill = if backfill {
        // From what the log still holds; the log keeps it until the backfill read it.
        offsets(tabler, t, |s| s.log_start_offset).await?
    } else {
        Vec::new()
    };
    let changes = old.as_ref().map_or(0, |e| e.changes);
    let mut versions = old.map(|e| e.versions).unwrap_or_default();
    versions.push(ExpansionVersion {
        from: from.clone(),
        spec,
        backfill,
    });
    change.ops.push(Op::Expansion(ExpansionOp::PutExpansion {
        topic: t.name.clone(),
        source: source.name().to_owned(),
        expected: changes,
        expansion: Some(Expansion {
            topic_id: t.id,
            changes: changes + 1,
            versions,
        }),
    }));
    Ok(from)
}

/// For a registry format: the body's subject (TopicNameStrategy's by default), its
/// stored format and its columns, from the subject's latest version.
async fn typed_columns(tabler: &Tabler, topic: &str, body: &mut PutBody) -> TableResult<()> {
    if body.format.eq_ignore_ascii_case("json") {
        if body.subject.is_some() {
            return Err(TableError::BadRequest(
                "subject is for a registry format (avro, protobuf, json_schema), not json".into(),
            ));
        }
        return Ok(());
    }
    let Some(format) = Format::named(&body.format) else {
        return Err(TableError::BadRequest(format!(
            "format {:?} is not supported: use \"json\", \"avro\", \"protobuf\" or \"json_schema\"",
            body.format
        )));
    };
    if !body.schema.is_null() {
        return Err(TableError::BadRequest(format!(
            "a {} expansion takes its columns from its subject's schema: leave schema out",
            format.name()
        )));
    }
    let source = spec::source(&body.source_column)?;
    let typed = Typed {
        format,
        subject: body
            .subject
            .clone()
            .unwrap_or_else(|| format!("{topic}-{}", source.name())),
    };
    body.schema = registered::subject_columns(tabler.catalog().clone(), &typed).await?;
    body.format = typed.stored();
    Ok(())
}

/// `PUT`: attaches an expansion (and creates its target table, or gives an existing one
/// the expansion's columns). Putting the same expansion again changes nothing.
pub async fn put(tabler: &Tabler, topic: &str, mut body: PutBody) -> TableResult<View> {
    typed_columns(tabler, topic, &mut body).await?;
    let (source, spec) = spec::spec_of(&body)?;
    let t = topic_of(tabler, topic).await?;
    let lock = tabler.lock_for(topic);
    let _one = lock.lock().await;
    let old = stored(tabler, &t, source).await?;
    if let Some(current) = old.as_ref().and_then(|e| e.current()) {
        if *current == spec {
            return get(tabler, topic, source).await;
        }
        return Err(TableError::Conflict(format!(
            "topic {topic} already has an expansion of its {} column into {}.{}: change its columns, or drop it first",
            source.name(),
            current.namespace,
            current.table
        )));
    }
    if let Some((other, other_source)) = writer_of(tabler, &spec.namespace, &spec.table).await? {
        return Err(TableError::Conflict(format!(
            "{}.{} is the target of the expansion of {other}'s {other_source} column; a table has one writer",
            spec.namespace, spec.table
        )));
    }
    if body.backfill && old.is_some() {
        // Records of an earlier version were expanded (or deliberately not) already.
        return Err(TableError::Conflict(format!(
            "the {} column of {topic} was expanded before: backfill is only for a first expansion",
            source.name()
        )));
    }
    let since = commit_version(tabler, &t, source, old, Some(spec.clone()), body.backfill).await?;
    tracing::info!(topic, source = source.name(), target = %body.target, backfill = body.backfill, "expansion attached");
    Ok(get(tabler, topic, source)
        .await
        .unwrap_or_else(|_| View::of(topic, source, &spec, since)))
}

/// `POST .../backfill`: expands, once, the records committed before the expansion was
/// attached, as `PUT` with `backfill` does, for an expansion attached without it. The
/// seal steps do the work from the log start, resumably (the cursors are in the catalog).
/// Asking again changes nothing; an expansion whose target holds rows from before its
/// current version (an earlier version expanded them) is refused, as a backfill would
/// expand those records twice.
pub async fn backfill(tabler: &Tabler, topic: &str, source: Source) -> TableResult<View> {
    let t = topic_of(tabler, topic).await?;
    {
        let lock = tabler.lock_for(topic);
        let _one = lock.lock().await;
        let old = stored(tabler, &t, source).await?;
        let Some(e) = old.filter(|e| e.current().is_some()) else {
            return Err(no_expansion(topic, source));
        };
        let [first] = e.versions.as_slice() else {
            return Err(TableError::Conflict(format!(
                "the expansion of the {} column of {topic} is still applying a change (of its \
                 columns, or a drop and attach); ask for the backfill again once the table has \
                 caught up",
                source.name()
            )));
        };
        if first.backfill.is_empty() {
            if let Some(spec) = e.current()
                && let Some(target) = tabler
                    .catalog()
                    .iceberg()
                    .other_table(&spec.namespace, &spec.table)
                    .await?
            {
                let held = tabler.first_offsets(&target.metadata_location).await?;
                if let Some((p, o)) = held.iter().find(|(p, o)| **o < first.from(**p)) {
                    return Err(TableError::Conflict(format!(
                        "{}.{} holds rows of partition {p} from offset {o}, before this \
                         expansion's version (from {}): an earlier version expanded them, \
                         and a backfill would expand them twice",
                        spec.namespace,
                        spec.table,
                        first.from(*p)
                    )));
                }
            }
            let mut versions = e.versions.clone();
            versions[0].backfill = offsets(tabler, &t, |s| s.log_start_offset).await?;
            let op = Op::Expansion(ExpansionOp::PutExpansion {
                topic: t.name.clone(),
                source: source.name().to_owned(),
                expected: e.changes,
                expansion: Some(Expansion {
                    topic_id: t.id,
                    changes: e.changes + 1,
                    versions,
                }),
            });
            tabler
                .catalog()
                .commit(catalog::Transaction::new(vec![op]))
                .await?;
            tracing::info!(
                topic,
                source = source.name(),
                "expansion backfill asked for"
            );
        }
    }
    get(tabler, topic, source).await
}

/// `GET`: the current expansion of `source`.
pub async fn get(tabler: &Tabler, topic: &str, source: Source) -> TableResult<View> {
    let t = topic_of(tabler, topic).await?;
    let e = stored(tabler, &t, source)
        .await?
        .ok_or_else(|| no_expansion(topic, source))?;
    let (Some(spec), Some(v)) = (e.current(), e.versions.last()) else {
        return Err(no_expansion(topic, source));
    };
    Ok(View::of_version(
        topic,
        source,
        spec,
        v.from.clone(),
        v.backfill.clone(),
    ))
}

/// `DELETE`: records from now on are not expanded (those committed before still are);
/// the target table stays.
pub async fn drop(tabler: &Tabler, topic: &str, source: Source) -> TableResult<()> {
    let t = topic_of(tabler, topic).await?;
    // What is committed now is expanded now, so little is left to drain.
    tabler.seal(topic).await?;
    let lock = tabler.lock_for(topic);
    let _one = lock.lock().await;
    let old = stored(tabler, &t, source).await?;
    if old.as_ref().and_then(|e| e.current()).is_none() {
        return Err(no_expansion(topic, source));
    }
    commit_version(tabler, &t, source, old, None, false).await?;
    tracing::info!(topic, source = source.name(), "expansion dropped");
    Ok(())
}

/// `POST .../columns`: adds and drops top-level fields of the expansion schema, and
/// evolves the target table's schema with them. Adding a field it has and dropping one
/// the target had once are no-ops; dropping one it never had is a 404.
pub async fn columns(tabler: &Tabler, topic: &str, body: ColumnsBody) -> TableResult<View> {
    let source = spec::source(&body.source_column)?;
    let add = body
        .add
        .iter()
        .map(spec::parse_field)
        .collect::<TableResult<Vec<_>>>()?;
    let t = topic_of(tabler, topic).await?;
    let lock = tabler.lock_for(topic);
    let _one = lock.lock().await;
    let old = stored(tabler, &t, source).await?;
    let Some(current) = old.as_ref().and_then(|e| e.current()).cloned() else {
        return Err(no_expansion(topic, source));
    };
    if Typed::of(&current.format).is_some() {
        return Err(TableError::Conflict(format!(
            "the columns of the expansion of {topic}'s {} column follow its subject's schema: register a new version of the subject to change them",
            source.name()
        )));
    }
    let (next, absent) = spec::change_columns(&current, source, &add, &body.drop)?;
    if !absent.is_empty() {
        let had = ever_had(tabler, &current).await?;
        let never: Vec<_> = absent
            .iter()
            .filter(|n| {
                !had.iter()
                    .any(|h| h == *n || h.starts_with(&format!("{n}{}", current.flatten_delimiter)))
            })
            .collect();
        if !never.is_empty() {
            return Err(TableError::NotFound(format!(
                "the expansion of {topic}'s {} column never had {}",
                source.name(),
                never
                    .iter()
                    .map(|n| format!("{n:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let since = if next == current {
        old.as_ref()
            .and_then(|e| e.versions.last())
            .map(|v| v.from.clone())
            .unwrap_or_default()
    } else {
        commit_version(tabler, &t, source, old, Some(next.clone()), false).await?
    };
    Ok(View::of(topic, source, &next, since))
}

/// Every top-level column name any schema of the target table ever had.
async fn ever_had(tabler: &Tabler, spec: &ExpansionSpec) -> TableResult<Vec<String>> {
    let Some(rec) = tabler
        .catalog()
        .iceberg()
        .other_table(&spec.namespace, &spec.table)
        .await?
    else {
        return Ok(Vec::new());
    };
    let metadata = tabler.read_metadata(&rec.metadata_location).await?;
    Ok(metadata
        .schemas_iter()
        .flat_map(|s| {
            s.as_struct()
                .fields()
                .iter()
                .map(|f| f.name.clone())
                .collect::<Vec<_>>()
        })
        .collect())
}

/// Renames a target table's legacy partition column (`_partition`) by field id, in a
/// commit of its own, so every engine reads it (Spark's Iceberg scan refuses a column of
/// that name); returns the table's record as it is then.
pub async fn rename_legacy_columns(
    tabler: &Tabler,
    namespace: &str,
    table: &str,
    rec: TableRecord,
) -> TableResult<TableRecord> {
    let metadata = tabler.read_metadata(&rec.metadata_location).await?;
    let Some(builder) = target::renamed_legacy(&metadata, Some(&rec.metadata_location))? else {
        return Ok(rec);
    };
    let io = FileIO::new_with_memory();
    let location = objects::location(tabler.bucket(), rec.prefix.trim_end_matches('/'));
    let (metadata_location, old_metadata) = tabler
        .write_metadata(&io, builder, &location, rec.generation)
        .await?;
    let next = TableRecord {
        generation: rec.generation + 1,
        metadata_location: metadata_location.clone(),
        ..rec.clone()
    };
    let op = Op::Iceberg(IcebergOp::PutTable {
        namespace: namespace.to_owned(),
        name: table.to_owned(),
        expected: rec.generation,
        table: Some(next.clone()),
    });
    match tabler
        .commit_files(
            &io,
            vec![(metadata_location, "application/json")],
            old_metadata,
            vec![op],
        )
        .await
    {
        Ok(_) => {
            tracing::info!(namespace, table, "renamed the legacy _partition column");
            Ok(next)
        }
        // A seal wrote the table meanwhile (with the new name): take it as it is.
        Err(TableError::Catalog(catalog::CatalogError::PreconditionFailed(_))) => tabler
            .catalog()
            .iceberg()
            .other_table(namespace, table)
            .await?
            .ok_or_else(|| TableError::NoSuchTable(format!("{namespace}.{table}"))),
        Err(e) => Err(e),
    }
}

/// Drops a target table no live expansion writes into, with all its files.
pub async fn drop_table(tabler: &Tabler, namespace: &str, table: &str) -> TableResult<()> {
    if let Some((topic, source)) = writer_of(tabler, namespace, table).await? {
        return Err(TableError::Conflict(format!(
            "{namespace}.{table} is the target of the expansion of {topic}'s {source} column: drop the expansion first"
        )));
    }
    let rec = tabler
        .catalog()
        .iceberg()
        .other_table(namespace, table)
        .await?
        .ok_or_else(|| TableError::NoSuchTable(format!("{namespace}.{table}")))?;
    let op = Op::Iceberg(IcebergOp::PutTable {
        namespace: namespace.to_owned(),
        name: table.to_owned(),
        expected: rec.generation,
        table: None,
    });
    tabler
        .catalog()
        .commit(catalog::Transaction::new(vec![op]))
        .await?;
    tracing::info!(namespace, table, "table dropped");
    Ok(())
}
