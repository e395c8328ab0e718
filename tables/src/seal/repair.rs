//! Checking and repairing a topic's table. The log is the source of truth and the table a
//! copy of it, so a table whose files were lost (deleted over S3 before the broker bucket
//! refused changes, or from the drives by hand) is rebuilt from the log: a new, empty
//! generation of the table replaces the broken one (its old files deleted in the same
//! transaction), marked with the offsets the broken one had reached, and the ordinary
//! seal steps fill it again up to them, then go on as usual.
//!
//! While the mark is there the steps leave expansions out: their target tables already
//! hold the rows of every record below the mark, and expanding those records again would
//! duplicate them. The mark lives in the table's own `metadata.json` properties, so a
//! repair cut short by a crash goes on after the restart.

use std::collections::BTreeSet;

use super::*;

/// Table property of a table being rebuilt: per partition, the offset below which its
/// records were in the table before (comma-separated).
pub(super) const REBUILD_UNTIL: &str = "eddy.rebuild-until";

/// Most files one check lists at once.
const LIST_PAGE: usize = 1000;

/// What a check found in a topic's table.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TableCheck {
    /// The topic.
    pub topic: String,
    /// Whether the topic has a table yet (none before its first snapshot).
    pub exists: bool,
    /// Files the table's snapshots need that are missing or unreadable.
    pub missing: Vec<String>,
    /// Files checked.
    pub files_checked: u64,
    /// Whether the table is being rebuilt (a repair's seal steps are not done yet).
    pub rebuilding: bool,
}

impl TableCheck {
    /// Whether the table can be loaded.
    pub fn intact(&self) -> bool {
        self.missing.is_empty()
    }
}

/// What a repair did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TableRepair {
    /// The check before the repair.
    pub check: TableCheck,
    /// Whether the table was rebuilt from the log.
    pub rebuilt: bool,
    /// The table's generation afterwards.
    pub generation: u64,
    /// Per partition, the first offset not yet in the table afterwards.
    pub tabled: Vec<u64>,
}

/// Per partition, the offsets a table being rebuilt must reach before its expansions
/// run again (none: not being rebuilt).
pub(super) fn rebuild_until(metadata: &TableMetadata) -> Option<Vec<u64>> {
    metadata.properties().get(REBUILD_UNTIL).map(|s| {
        s.split(',')
            .filter(|n| !n.is_empty())
            .map(|n| n.parse().unwrap_or(0))
            .collect()
    })
}

/// Whether a file read failed because the file is gone or unreadable as what it should
/// be (the table's fault, which a rebuild fixes), rather than the storage or the catalog
/// failing (which a rebuild would only hide).
fn lost(e: &TableError) -> bool {
    matches!(
        e,
        TableError::MissingFile(_) | TableError::CorruptMetadata(..) | TableError::Iceberg(_)
    )
}

impl Tabler {
    /// Checks that every file the topic's table needs is there and readable: its
    /// `metadata.json`, and for each snapshot its manifest list, manifests and data files.
    pub async fn check(&self, topic: &str) -> TableResult<TableCheck> {
        let t = self.topic_record(topic).await?;
        let mut check = TableCheck {
            topic: topic.to_owned(),
            exists: false,
            missing: Vec::new(),
            files_checked: 0,
            rebuilding: false,
        };
        let Some(current) = self.current(&t).await? else {
            return Ok(check);
        };
        check.exists = true;
        check.files_checked += 1;
        let metadata = match self.read_metadata(&current.metadata_location).await {
            Ok(m) => m,
            Err(e) if lost(&e) => {
                check.missing.push(current.metadata_location);
                return Ok(check);
            }
            Err(e) => return Err(e),
        };
        check.rebuilding = rebuild_until(&metadata).is_some();
        let mut manifests = BTreeSet::new();
        for s in metadata.snapshots() {
            check.files_checked += 1;
            let list = match self.read_file(s.manifest_list()).await {
                Ok(b) => ManifestList::parse_with_version(&b, FormatVersion::V2)
                    .map_err(TableError::from),
                Err(e) => Err(e),
            };
            match list {
                Ok(l) => manifests.extend(l.consume_entries().into_iter().map(|m| m.manifest_path)),
                Err(e) if lost(&e) => check.missing.push(s.manifest_list().to_owned()),
                Err(e) => return Err(e),
            }
        }
        let mut data = BTreeSet::new();
        for m in manifests {
            check.files_checked += 1;
            let parsed = match self.read_file(&m).await {
                Ok(b) => iceberg::spec::Manifest::parse_avro(&b).map_err(TableError::from),
                Err(e) => Err(e),
            };
            match parsed {
                Ok(manifest) => {
                    let (entries, _) = manifest.into_parts();
                    data.extend(
                        entries
                            .iter()
                            .filter(|e| e.is_alive())
                            .map(|e| e.data_file().file_path().to_owned()),
                    );
                }
                Err(e) if lost(&e) => check.missing.push(m),
                Err(e) => return Err(e),
            }
        }
        for f in data {
            check.files_checked += 1;
            let there = match objects::key_of(&self.bucket, &f) {
                Some(key) => self.catalog.s3().object(&self.bucket, key).await?.is_some(),
                None => false,
            };
            if !there {
                check.missing.push(f);
            }
        }
        Ok(check)
    }

    /// Checks the topic's table and, when a file it needs is lost, rebuilds it from the
    /// log ([the module docs](self)), then seals it up to the log's end. An intact table
    /// is only sealed.
    pub async fn repair(&self, topic: &str) -> TableResult<TableRepair> {
        let check = {
            let lock = self.lock_for(topic);
            let _one = lock.lock().await;
            let check = self.check(topic).await?;
            if !check.intact() {
                self.restart_from_log(topic).await?;
            }
            check
        };
        let rebuilt = !check.intact();
        if rebuilt {
            tracing::warn!(
                topic,
                missing = check.missing.len(),
                "topic table rebuilt from the log: files were missing"
            );
        }
        let table = self.seal(topic).await?;
        Ok(TableRepair {
            check,
            rebuilt,
            generation: table.generation,
            tabled: table.tabled,
        })
    }

    /// Replaces the topic's table with a new, empty generation marked to be rebuilt up to
    /// the offsets the old one had reached, deleting every file under its prefix.
    async fn restart_from_log(&self, topic: &str) -> TableResult<()> {
        let t = self.topic_record(topic).await?;
        let Some(old) = self.current(&t).await? else {
            return Ok(());
        };
        let prefix = Self::prefix(topic);
        let mut removed = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .catalog
                .s3()
                .list_objects(&self.bucket, &prefix, after.as_deref(), LIST_PAGE)
                .await?;
            let Some((last, _)) = page.last() else { break };
            after = Some(last.clone());
            removed.extend(page.iter().map(|(k, _)| objects::location(&self.bucket, k)));
            if page.len() < LIST_PAGE {
                break;
            }
        }
        let table_location = objects::location(&self.bucket, prefix.trim_end_matches('/'));
        // The new table reflects the compaction passes of the log it is rebuilt from.
        let passes = compaction_passes(self.catalog.as_ref(), &t).await?;
        let mut properties = passes_property(&passes);
        properties.insert("eddy.topic-id".to_owned(), format!("{:032x}", t.id));
        let until: Vec<String> = old.tabled.iter().map(u64::to_string).collect();
        properties.insert(REBUILD_UNTIL.to_owned(), until.join(","));
        let metadata = crate::schema::new_table(
            topic_schema()?,
            topic_partition_spec()?,
            &table_location,
            properties,
        )?;
        let io = FileIO::new_with_memory();
        let builder = TableMetadataBuilder::new_from_metadata(metadata, None);
        let (metadata_location, _) = self
            .write_metadata(&io, builder, &table_location, old.generation)
            .await?;
        let table = TopicTable {
            topic_id: t.id,
            generation: old.generation + 1,
            bucket: self.bucket.clone(),
            prefix,
            metadata_location: metadata_location.clone(),
            tabled: vec![0; t.partitions as usize],
            start: old.start.clone(),
        };
        let op = Op::Iceberg(IcebergOp::PutTopicTable {
            topic: topic.to_owned(),
            expected: old.generation,
            table,
        });
        self.commit_files(
            &io,
            vec![(metadata_location, "application/json")],
            removed,
            vec![op],
        )
        .await?;
        self.reflected(&t, passes);
        Ok(())
    }
}

/// The properties a rebuilt table drops once it reached `until`, as the builder wants
/// them.
pub(super) fn done_rebuilding(builder: TableMetadataBuilder) -> TableResult<TableMetadataBuilder> {
    Ok(builder.remove_properties(&[REBUILD_UNTIL.to_owned()])?)
}

/// Whether `tabled` reached `until` in every partition.
pub(super) fn reached(tabled: &[u64], until: &[u64]) -> bool {
    until
        .iter()
        .enumerate()
        .all(|(p, u)| tabled.get(p).copied().unwrap_or(0) >= *u)
}
