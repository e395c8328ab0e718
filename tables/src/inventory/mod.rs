//! A bucket's live inventory table, `b_<bucket>.inventory`: one row per current object,
//! kept when the bucket's metadata configuration asks for it (`notify::metadata`).
//!
//! Every object change of such a bucket appends a record to the bucket's journal topic
//! in the change's own catalog transaction, so the journal's end offsets say exactly how
//! far the bucket has changed. Loading the table compares them with the offsets its
//! current snapshot was built at (a table property): equal, the snapshot is exact and is
//! served as it is; else the table is rebuilt from the bucket's current objects (read
//! page by page after the offsets were read, so every change committed before the load
//! is in it) as one new snapshot replacing the files of the last. A load therefore sees
//! every object change committed before it, at 0 s of lag, as topic tables do.
//! Rebuilding reads every current object of the bucket: about what a full ListObjects
//! costs, paid by the first load after a change (docs/iceberg.md).

mod rows;

use std::collections::HashMap;
use std::sync::Arc;

use catalog::{IcebergOp, Op, TableRecord};
use iceberg::arrow::schema_to_arrow_schema;
use iceberg::io::FileIO;
use iceberg::spec::{
    DataFile, ManifestListWriter, ManifestWriterBuilder, Operation, Snapshot, Struct, Summary,
    TableMetadata, TableMetadataBuilder, UnboundPartitionSpec,
};
use iceberg::writer::file_writer::{FileWriter, FileWriterBuilder, ParquetWriterBuilder};
use notify::MetadataConfig;
use notify::metadata::namespace;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::seal::{REMOVED_FILES, REPLACED_MANIFESTS, new_snapshot_id};
use crate::{TableError, TableResult, Tabler, now_ms, objects};
use rows::InventoryRows;
pub use rows::schema;

/// The inventory's table name in the bucket's metadata namespace.
pub const TABLE: &str = "inventory";
/// The journal's table name there (the journal topic's table).
pub const JOURNAL: &str = "journal";

/// Table property: the journal's end offsets (comma-separated, by partition) the
/// current snapshot was built at.
const BUILT_AT: &str = "eddy.journal-offsets";

/// Objects read from the catalog at a time.
const PAGE: usize = 1000;
/// Rows per data file (about 20 MB of Arrow at 200 bytes a row).
const ROWS_PER_FILE: usize = 100_000;
/// Attempts when another node rebuilt the table at the same time.
const ATTEMPTS: usize = 3;

/// A bucket's metadata configuration, if it has one.
pub async fn config_of(tabler: &Tabler, bucket: &str) -> TableResult<Option<MetadataConfig>> {
    let Some(record) = tabler.catalog().s3().bucket(bucket).await? else {
        return Ok(None);
    };
    MetadataConfig::load(&record.settings)
        .map_err(|e| TableError::CorruptMetadata(format!("bucket {bucket}"), e.to_string()))
}

/// The journal's end offsets, as the table property spells them; `None` when the
/// journal topic is gone (then every load rebuilds).
async fn journal_offsets(tabler: &Tabler, topic: &str) -> TableResult<Option<String>> {
    let Some(t) = tabler.catalog().kafka().topic(topic).await? else {
        return Ok(None);
    };
    let mut ends = Vec::with_capacity(t.partitions as usize);
    for p in 0..t.partitions {
        let next = tabler
            .catalog()
            .kafka()
            .partition(t.id, p)
            .await?
            .map_or(0, |s| s.next_offset);
        ends.push(next.to_string());
    }
    Ok(Some(format!("{:032x}:{}", t.id, ends.join(","))))
}

/// Brings `bucket`'s inventory table up to date and returns its record; `NoSuchTable`
/// when the bucket keeps none.
pub async fn seal(tabler: &Tabler, bucket: &str) -> TableResult<TableRecord> {
    let missing = || TableError::NoSuchTable(format!("{}.{TABLE}", namespace(bucket)));
    let config = config_of(tabler, bucket).await?.ok_or_else(missing)?;
    if !config.inventory {
        return Err(missing());
    }
    // Topic names hold no '/', so this lock is the inventory's alone.
    let lock = tabler.lock_for(&format!("{}/{TABLE}", namespace(bucket)));
    let _held = lock.lock().await;
    let mut attempt = 0;
    loop {
        match rebuild_if_behind(tabler, bucket, &config).await {
            Err(TableError::Catalog(catalog::CatalogError::PreconditionFailed(_)))
                if attempt + 1 < ATTEMPTS =>
            {
                attempt += 1;
            }
            other => return other,
        }
    }
}

async fn rebuild_if_behind(
    tabler: &Tabler,
    bucket: &str,
    config: &MetadataConfig,
) -> TableResult<TableRecord> {
    let ns = namespace(bucket);
    let offsets = journal_offsets(tabler, &config.journal_topic).await?;
    let existing = tabler.catalog().iceberg().other_table(&ns, TABLE).await?;
    let metadata = match &existing {
        Some(rec) => Some(tabler.read_metadata(&rec.metadata_location).await?),
        None => None,
    };
    if let (Some(rec), Some(m), Some(o)) = (&existing, &metadata, &offsets)
        && m.properties().get(BUILT_AT) == Some(o)
    {
        return Ok(rec.clone());
    }
    let prefix = format!("{ns}/{TABLE}/");
    let location = objects::location(tabler.bucket(), prefix.trim_end_matches('/'));
    let metadata = match metadata {
        Some(m) => m,
        None => crate::schema::new_table(
            schema()?,
            UnboundPartitionSpec::builder().with_spec_id(0).build(),
            &location,
            HashMap::from([("eddy.bucket".to_owned(), bucket.to_owned())]),
        )?,
    };
    let io = FileIO::new_with_memory();
    let (snapshot, mut written) = write_snapshot(tabler, &io, &metadata, &location, bucket).await?;
    let (expired, unreferenced) = tabler.expired(&metadata, &snapshot);
    let generation = existing.as_ref().map_or(0, |r| r.generation);
    let mut builder = TableMetadataBuilder::new_from_metadata(
        metadata,
        existing.as_ref().map(|r| r.metadata_location.clone()),
    )
    .set_branch_snapshot(snapshot, "main")?;
    if !expired.is_empty() {
        builder = builder.remove_snapshots(&expired);
    }
    builder = match &offsets {
        Some(o) => builder.set_properties(HashMap::from([(BUILT_AT.to_owned(), o.clone())]))?,
        None => builder.remove_properties(&[BUILT_AT.to_owned()])?,
    };
    let (metadata_location, old_metadata) = tabler
        .write_metadata(&io, builder, &location, generation)
        .await?;
    written.push((metadata_location.clone(), "application/json"));
    let record = TableRecord {
        generation: generation + 1,
        bucket: tabler.bucket().to_owned(),
        prefix,
        metadata_location,
    };
    let op = Op::Iceberg(IcebergOp::PutTable {
        namespace: ns,
        name: TABLE.to_owned(),
        expected: generation,
        table: Some(record.clone()),
    });
    let mut removed = unreferenced;
    removed.extend(old_metadata);
    tabler.commit_files(&io, written, removed, vec![op]).await?;
    tabler.metrics().inventory_rebuilds.inc();
    tracing::debug!(bucket, "inventory table rebuilt");
    Ok(record)
}

/// Writes the bucket's current objects as data files, their manifest and a manifest
/// list: a snapshot replacing every file of the current one.
async fn write_snapshot(
    tabler: &Tabler,
    io: &FileIO,
    metadata: &TableMetadata,
    location: &str,
    bucket: &str,
) -> TableResult<(Snapshot, Vec<(String, &'static str)>)> {
    let schema = metadata.current_schema().clone();
    let spec = metadata.default_partition_spec().as_ref().clone();
    let arrow = Arc::new(schema_to_arrow_schema(&schema)?);
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let mut written = Vec::new();
    let mut files: Vec<DataFile> = Vec::new();
    let mut rows = InventoryRows::new(arrow, bucket)?;
    let mut after: Option<String> = None;
    loop {
        let page = tabler
            .catalog()
            .s3()
            .list_objects(bucket, "", after.as_deref(), PAGE)
            .await?;
        let done = page.len() < PAGE;
        for (key, version) in &page {
            rows.add(key, version)?;
            if rows.len() >= ROWS_PER_FILE {
                let batch = rows.take()?;
                let (l, f) =
                    write_file(io, &props, &schema, location, &batch, spec.spec_id()).await?;
                written.push((l, "application/vnd.apache.parquet"));
                files.extend(f);
            }
        }
        after = page.last().map(|(k, _)| k.clone());
        if done {
            break;
        }
    }
    if !rows.is_empty() || files.is_empty() {
        let batch = rows.take()?;
        if batch.num_rows() > 0 {
            let (l, f) = write_file(io, &props, &schema, location, &batch, spec.spec_id()).await?;
            written.push((l, "application/vnd.apache.parquet"));
            files.extend(f);
        }
    }

    let snapshot_id = new_snapshot_id(metadata);
    let sequence = metadata.last_sequence_number() + 1;
    let parent = metadata.current_snapshot();
    // What the new snapshot no longer lists, deleted when the parent expires.
    let (replaced, removed) = match parent {
        Some(p) => tabler.live_files(p).await?,
        None => (Vec::new(), Vec::new()),
    };
    let uuid = uuid::Uuid::new_v4();
    let manifest_location = format!("{location}/metadata/{uuid}-m0.avro");
    let mut mw = ManifestWriterBuilder::new(
        io.new_output(&manifest_location)?,
        Some(snapshot_id),
        schema.clone(),
        spec,
    )
    .build_v2_data();
    let (mut records, mut size) = (0u64, 0u64);
    let added = files.len();
    for f in files {
        records += f.record_count();
        size += f.file_size_in_bytes();
        mw.add_file(f, sequence)?;
    }
    let manifest = mw.write_manifest_file().await?;
    written.push((manifest_location, "application/avro"));
    let list_location = format!("{location}/metadata/snap-{snapshot_id}-{sequence}-{uuid}.avro");
    let mut lw = ManifestListWriter::v2(
        io.new_output(&list_location)?.writer().await?,
        snapshot_id,
        parent.map(|p| p.snapshot_id()),
        sequence,
    );
    lw.add_manifests(std::iter::once(manifest))?;
    lw.close().await?;
    written.push((list_location.clone(), "application/avro"));

    let mut properties = HashMap::from([
        ("added-data-files".to_owned(), added.to_string()),
        ("added-records".to_owned(), records.to_string()),
        ("added-files-size".to_owned(), size.to_string()),
        ("total-records".to_owned(), records.to_string()),
        ("total-data-files".to_owned(), added.to_string()),
        ("total-files-size".to_owned(), size.to_string()),
        ("total-delete-files".to_owned(), "0".to_owned()),
        ("total-position-deletes".to_owned(), "0".to_owned()),
        ("total-equality-deletes".to_owned(), "0".to_owned()),
    ]);
    if !replaced.is_empty() {
        properties.insert(REPLACED_MANIFESTS.to_owned(), replaced.join(","));
    }
    if !removed.is_empty() {
        properties.insert(REMOVED_FILES.to_owned(), removed.join(","));
    }
    let snapshot = Snapshot::builder()
        .with_snapshot_id(snapshot_id)
        .with_parent_snapshot_id(parent.map(|p| p.snapshot_id()))
        .with_sequence_number(sequence)
        .with_timestamp_ms(now_ms().max(metadata.last_updated_ms()))
        .with_manifest_list(list_location)
        .with_summary(Summary {
            operation: if parent.is_some() {
                Operation::Overwrite
            } else {
                Operation::Append
            },
            additional_properties: properties,
        })
        .with_schema_id(metadata.current_schema_id())
        .build();
    Ok((snapshot, written))
}

/// Writes rows as one Parquet data file of the (unpartitioned) table.
async fn write_file(
    io: &FileIO,
    props: &WriterProperties,
    schema: &iceberg::spec::SchemaRef,
    location: &str,
    batch: &arrow::array::RecordBatch,
    spec_id: i32,
) -> TableResult<(String, Vec<DataFile>)> {
    let path = format!("{location}/data/{}.parquet", uuid::Uuid::new_v4());
    let mut w = ParquetWriterBuilder::new(props.clone(), schema.clone())
        .build(io.new_output(&path)?)
        .await?;
    w.write(batch).await?;
    let mut files = Vec::new();
    for mut b in w.close().await? {
        b.partition(Struct::empty()).partition_spec_id(spec_id);
        files.push(
            b.build()
                .map_err(|e| TableError::Task(format!("data file entry: {e}")))?,
        );
    }
    Ok((path, files))
}
