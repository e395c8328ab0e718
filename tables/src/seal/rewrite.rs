//! Rewrites of a topic table's existing data files, as a part of [`super::Tabler`]: after
//! DeleteRecords or retention moved a partition's log start (truncate), after log
//! compaction (each file keeps the rows the log still has) and when small files are
//! merged; and the compaction passes a table's files reflect.

use super::*;

impl Tabler {
    /// Publishes a rewrite (if any file changed) and, with `passes`, records the
    /// compaction passes the table now reflects, keeping the tabled offsets.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn publish_rewrite(
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

    /// What becomes of one data file of `partition` holding offsets `first..next`.
    pub(super) async fn fate(
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
    pub(super) async fn write_rewrite(
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
}

/// How a snapshot rewrites a table's existing files.
pub(super) enum Rewrite<'a> {
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
pub(super) struct Rewritten {
    pub(super) snapshot: Option<(Snapshot, Vec<(String, &'static str)>)>,
    pub(super) complete: bool,
}

/// What becomes of one data file.
pub(super) enum Fate {
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
pub(super) const COMPACTION_PASSES: &str = "eddy.compaction-passes";

/// The compaction passes of each of a topic's partitions, as the catalog has them now.
pub(super) async fn compaction_passes(
    catalog: &dyn Catalog,
    topic: &TopicRecord,
) -> TableResult<Vec<u64>> {
    let kafka = catalog.kafka();
    let mut out = Vec::with_capacity(topic.partitions as usize);
    for p in 0..topic.partitions {
        let state = kafka.compaction(topic.id, p).await?;
        out.push(state.map_or(0, |c| c.passes));
    }
    Ok(out)
}

/// The compaction passes a table's files reflect (zeros when it never recorded any).
pub(super) fn reflected_passes(metadata: &TableMetadata, partitions: u32) -> Vec<u64> {
    let mut v: Vec<u64> = metadata
        .properties()
        .get(COMPACTION_PASSES)
        .map(|s| s.split(',').map(|n| n.parse().unwrap_or(0)).collect())
        .unwrap_or_default();
    v.resize(partitions as usize, 0);
    v
}

pub(super) fn passes_property(passes: &[u64]) -> HashMap<String, String> {
    let list: Vec<String> = passes.iter().map(u64::to_string).collect();
    HashMap::from([(COMPACTION_PASSES.to_owned(), list.join(","))])
}

/// The rows of a Parquet data file at offsets `from` and after, batch by batch.
pub(super) fn keep_from(
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
