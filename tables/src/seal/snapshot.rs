//! Writing one snapshot of a topic table, as a part of [`super::Tabler`]: its Parquet
//! data files, manifest, manifest list and `metadata.json`, stored as objects of the
//! broker bucket in the transaction that publishes it; and which old snapshots expire
//! with it.

use super::*;

impl Tabler {
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
            files.push((key, bytes, content_type));
        }
        let md5s = objects::md5s(files.iter().map(|(_, bytes, _)| bytes.clone())).await;
        let new_objects = {
            let catalog = self.catalog.clone();
            let bucket = self.bucket.clone();
            blocking(move || {
                let mut objs = NewObjects::background();
                let now = now_ms();
                for ((key, bytes, content_type), md5) in files.into_iter().zip(md5s) {
                    if let Err(e) = objs.add_hashed(
                        catalog.as_ref(),
                        &bucket,
                        key,
                        (bytes, md5),
                        content_type,
                        now,
                    ) {
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
            if self.catalog.s3().object(&self.bucket, key).await?.is_some() {
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
    pub(crate) fn expired(
        &self,
        metadata: &TableMetadata,
        new: &Snapshot,
    ) -> (Vec<i64>, Vec<String>) {
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

    /// Writes the data files, their manifest and the manifest list of a new append
    /// snapshot (merging the parent's manifests into one when they are many); returns the snapshot and the files written (location, content type).
    pub(super) async fn write_snapshot(
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
                &part.rows,
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

/// Writes one partition's rows (in order, without concatenating them first) as a
/// Parquet data file named by its offset range (`first` up to `next`), returning its
/// location and its manifest entries.
#[allow(clippy::too_many_arguments)]
pub(super) async fn write_data_file(
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

/// A snapshot id not yet used by the table (positive, as Iceberg wants).
pub(crate) fn new_snapshot_id(metadata: &TableMetadata) -> i64 {
    loop {
        let id = (uuid::Uuid::new_v4().as_u128() as i64) & i64::MAX;
        if id != 0 && metadata.snapshot_by_id(id).is_none() {
            return id;
        }
    }
}

/// Metadata of a new, empty topic table, whose files will reflect the compaction
/// `passes` there are now (they are read from the log as it is).
pub(super) fn new_metadata(
    location: &str,
    topic: &TopicRecord,
    passes: &[u64],
) -> TableResult<TableMetadata> {
    let mut properties = passes_property(passes);
    properties.insert("eddy.topic-id".to_owned(), format!("{:032x}", topic.id));
    crate::schema::new_table(
        topic_schema()?,
        topic_partition_spec()?,
        location,
        properties,
    )
}

impl Tabler {
    /// Per Kafka partition, the lowest offset a live data file of the table at
    /// `metadata_location` holds records from (by the offset range in its name; files
    /// named otherwise are not counted). Empty for a table with no snapshot.
    pub(crate) async fn first_offsets(
        &self,
        metadata_location: &str,
    ) -> TableResult<std::collections::BTreeMap<u32, u64>> {
        let metadata = self.read_metadata(metadata_location).await?;
        let mut out = std::collections::BTreeMap::new();
        let Some(s) = metadata.current_snapshot() else {
            return Ok(out);
        };
        let (_, files) = self.live_files(s).await?;
        for f in files {
            if let Some((p, first, _)) = file_range(&f) {
                let v = out.entry(p).or_insert(first);
                *v = (*v).min(first);
            }
        }
        Ok(out)
    }

    /// A snapshot's manifests and the data files they list as live (locations).
    pub(crate) async fn live_files(
        &self,
        snapshot: &Snapshot,
    ) -> TableResult<(Vec<String>, Vec<String>)> {
        let bytes = self.read_file(snapshot.manifest_list()).await?;
        let manifests: Vec<_> = ManifestList::parse_with_version(&bytes, FormatVersion::V2)?
            .consume_entries()
            .into_iter()
            .collect();
        let (mut paths, mut files) = (Vec::new(), Vec::new());
        for m in manifests {
            let bytes = self.read_file(&m.manifest_path).await?;
            let (entries, _) = iceberg::spec::Manifest::parse_avro(&bytes)?.into_parts();
            files.extend(
                entries
                    .iter()
                    .filter(|e| e.is_alive())
                    .map(|e| e.data_file().file_path().to_owned()),
            );
            paths.push(m.manifest_path);
        }
        Ok((paths, files))
    }
}
