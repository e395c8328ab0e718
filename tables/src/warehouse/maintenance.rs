//! Table maintenance on the server, as S3 Tables runs it for its users: snapshot expiry
//! and the removal of files no snapshot references, per table, on a schedule. A table
//! sets its own limits with properties: Iceberg's `history.expire.max-snapshot-age-ms`
//! (default 5 days) and `history.expire.min-snapshots-to-keep` (default 1), and Eddy's
//! `eddy.maintenance.expire-snapshots` (`false` turns expiry off) and
//! `eddy.maintenance.orphan-files-older-than-ms` (default 3 days; `-1` turns removal
//! off). Expiry never removes the current snapshot, a branch's or tag's head, or the
//! newest ancestors the table keeps; it commits like any writer (the pointer moves from
//! the generation it was read at), with the deletion of the files only the expired
//! snapshots referenced in the same transaction. An orphan is an object under the
//! table's location that the table does not reference and that is older than the limit,
//! so a writer's uploaded but not yet committed files are left alone.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use catalog::{Op, S3Op};
use iceberg::spec::{FormatVersion, Manifest, ManifestList, TableMetadata};
use tokio::sync::watch;

use super::commit::Staged;
use super::{Warehouse, split_location};
use crate::{TableError, TableResult};

const DAY_MS: i64 = 24 * 3600 * 1000;

/// A table's maintenance settings, from its properties.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Whether snapshots expire.
    pub expire: bool,
    /// Snapshots older than this expire.
    pub max_snapshot_age_ms: i64,
    /// The newest ancestors of the current snapshot always kept.
    pub min_snapshots_to_keep: usize,
    /// Unreferenced objects older than this are removed (`None`: never).
    pub orphans_older_than_ms: Option<i64>,
}

impl Settings {
    /// The settings a table's properties give (a malformed value: the default).
    pub fn of(metadata: &TableMetadata) -> Self {
        let p = metadata.properties();
        let num = |k: &str, d: i64| p.get(k).and_then(|v| v.parse::<i64>().ok()).unwrap_or(d);
        let orphans = num("eddy.maintenance.orphan-files-older-than-ms", 3 * DAY_MS);
        Self {
            expire: p
                .get("eddy.maintenance.expire-snapshots")
                .is_none_or(|v| !v.eq_ignore_ascii_case("false")),
            max_snapshot_age_ms: num("history.expire.max-snapshot-age-ms", 5 * DAY_MS),
            min_snapshots_to_keep: num("history.expire.min-snapshots-to-keep", 1).max(1) as usize,
            orphans_older_than_ms: (orphans >= 0).then_some(orphans),
        }
    }
}

/// What one pass did to one table.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Outcome {
    /// Snapshots expired.
    pub expired_snapshots: usize,
    /// Objects deleted.
    pub removed_files: usize,
}

/// Snapshots to expire: older than the limit, not the head of a branch or tag, and not
/// among the newest `min_snapshots_to_keep` ancestors of the current snapshot.
pub fn expirable(metadata: &TableMetadata, s: &Settings, now_ms: i64) -> Vec<i64> {
    let mut keep: HashSet<i64> = HashSet::new();
    if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(metadata)
        && let Some(serde_json::Value::Object(refs)) = m.get("refs")
    {
        keep.extend(
            refs.values()
                .filter_map(|r| r.get("snapshot-id").and_then(|v| v.as_i64())),
        );
    }
    let mut at = metadata.current_snapshot_id();
    for _ in 0..s.min_snapshots_to_keep {
        let Some(id) = at else { break };
        keep.insert(id);
        at = metadata
            .snapshot_by_id(id)
            .and_then(|snap| snap.parent_snapshot_id());
    }
    metadata
        .snapshots()
        .filter(|snap| {
            snap.timestamp_ms() < now_ms - s.max_snapshot_age_ms
                && !keep.contains(&snap.snapshot_id())
        })
        .map(|snap| snap.snapshot_id())
        .collect()
}

impl Warehouse {
    /// Every file `metadata` references: metadata files (current and logged),
    /// statistics, and each snapshot's manifest list, manifests and data and delete
    /// files.
    async fn referenced(
        &self,
        metadata: &TableMetadata,
        metadata_location: &str,
    ) -> TableResult<HashSet<String>> {
        let mut out: HashSet<String> = HashSet::new();
        out.insert(metadata_location.to_owned());
        out.extend(
            metadata
                .metadata_log()
                .iter()
                .map(|l| l.metadata_file.clone()),
        );
        out.extend(
            metadata
                .statistics_iter()
                .map(|s| s.statistics_path.clone()),
        );
        out.extend(
            metadata
                .partition_statistics_iter()
                .map(|s| s.statistics_path.clone()),
        );
        let mut manifests: BTreeSet<String> = BTreeSet::new();
        let version = metadata.format_version();
        for snap in metadata.snapshots() {
            let list = snap.manifest_list().to_owned();
            let bytes = self.read_file(&list).await?;
            let parsed = ManifestList::parse_with_version(
                &bytes,
                if version == FormatVersion::V1 {
                    FormatVersion::V1
                } else {
                    FormatVersion::V2
                },
            )?;
            manifests.extend(parsed.entries().iter().map(|m| m.manifest_path.clone()));
            out.insert(list);
        }
        for m in manifests {
            let bytes = self.read_file(&m).await?;
            let (entries, _) = Manifest::parse_avro(&bytes)?.into_parts();
            out.extend(entries.iter().map(|e| e.data_file().file_path().to_owned()));
            out.insert(m);
        }
        Ok(out)
    }

    /// One maintenance pass over one table.
    pub async fn maintain(&self, namespace: &str, name: &str, now_ms: i64) -> TableResult<Outcome> {
        let Some(rec) = self.catalog.iceberg().other_table(namespace, name).await? else {
            return Ok(Outcome::default());
        };
        let current = self.read_metadata(&rec.metadata_location).await?;
        let settings = Settings::of(&current);
        let before = self.referenced(&current, &rec.metadata_location).await?;
        let expired = if settings.expire {
            expirable(&current, &settings, now_ms)
        } else {
            Vec::new()
        };
        let mut outcome = Outcome::default();
        let mut staged = Staged::default();
        let (after, live_location) = if expired.is_empty() {
            (before.clone(), rec.metadata_location.clone())
        } else {
            let metadata = current
                .clone()
                .into_builder(Some(rec.metadata_location.clone()))
                .remove_snapshots(&expired)
                .build()
                .map_err(TableError::Iceberg)?
                .metadata;
            let location =
                staged.move_table(self.catalog.as_ref(), namespace, name, &rec, &metadata)?;
            outcome.expired_snapshots = expired.len();
            (self.referenced(&metadata, &location).await?, location)
        };
        // Files the expired snapshots alone referenced were committed once, so no
        // writer is still putting them: they go with the expiry.
        let mut doomed: BTreeSet<String> = before.difference(&after).cloned().collect();
        if let Some(age) = settings.orphans_older_than_ms {
            let prefix = rec.prefix.clone();
            let mut start: Option<String> = None;
            loop {
                let page = self
                    .catalog
                    .s3()
                    .list_objects(&rec.bucket, &prefix, start.as_deref(), 1000)
                    .await?;
                let Some((last, _)) = page.last() else { break };
                start = Some(last.clone());
                for (key, v) in &page {
                    let location = format!("s3://{}/{key}", rec.bucket);
                    if !after.contains(&location)
                        && location != live_location
                        && v.last_modified_ms < now_ms - age
                    {
                        doomed.insert(location);
                    }
                }
                if page.len() < 1000 {
                    break;
                }
            }
        }
        for location in doomed {
            let (bucket, key) = split_location(&location)?;
            if bucket != rec.bucket || !key.starts_with(&rec.prefix) {
                continue;
            }
            if let Some(v) = self.catalog.s3().object(&bucket, &key).await? {
                staged.ops.push(Op::S3(S3Op::DeleteObjectVersion {
                    bucket,
                    key,
                    version_id: v.version_id,
                }));
                outcome.removed_files += 1;
            }
        }
        if !staged.ops.is_empty() {
            self.commit_staged(staged).await?;
            let metrics = self.tabler.metrics();
            metrics
                .maintenance_expired_snapshots
                .inc_by(outcome.expired_snapshots as u64);
            metrics
                .maintenance_removed_files
                .inc_by(outcome.removed_files as u64);
        }
        Ok(outcome)
    }

    /// One pass over every users' table.
    pub async fn maintain_all(&self, now_ms: i64) -> TableResult<Outcome> {
        let mut total = Outcome::default();
        let users: HashSet<String> = self
            .catalog
            .iceberg()
            .namespaces()
            .await?
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        for (ns, name, _) in self.catalog.iceberg().other_tables().await? {
            if !users.contains(&ns) || self.not_expansions(&ns, &name).await.is_err() {
                continue;
            }
            match self.maintain(&ns, &name, now_ms).await {
                Ok(o) => {
                    if o != Outcome::default() {
                        tracing::info!(namespace = %super::access::dotted(&ns), table = %name,
                            expired = o.expired_snapshots, removed = o.removed_files, "table maintained");
                    }
                    total.expired_snapshots += o.expired_snapshots;
                    total.removed_files += o.removed_files;
                }
                // A writer moved the table meanwhile: the next pass retries.
                Err(TableError::CommitFailed(_)) => {}
                Err(e) => tracing::warn!(namespace = %super::access::dotted(&ns), table = %name,
                    error = %e, "table maintenance failed"),
            }
        }
        Ok(total)
    }
}

/// Runs maintenance passes every `every` until `stop` flips.
pub async fn run(warehouse: Arc<Warehouse>, every: Duration, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.changed() => return,
        }
        if let Err(e) = warehouse.maintain_all(crate::now_ms()).await {
            tracing::warn!(error = %e, "table maintenance pass failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iceberg::spec::{
        NestedField, Operation, PrimitiveType, Snapshot, SnapshotReference, SnapshotRetention,
        Summary, TableMetadataBuilder, Type,
    };
    use std::collections::HashMap;

    /// A table with snapshots 1..=5 on main, one a day apart (snapshot `i` at day `i`),
    /// and a tag on snapshot 2.
    fn table(props: &[(&str, &str)]) -> TableMetadata {
        let schema = iceberg::spec::Schema::builder()
            .with_fields(vec![
                NestedField::optional(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            ])
            .build()
            .unwrap();
        let creation = iceberg::TableCreation::builder()
            .name("t".into())
            .location("s3://w/t".into())
            .schema(schema)
            .properties(props.iter().map(|(k, v)| (k.to_string(), v.to_string())))
            .build();
        let mut b = TableMetadataBuilder::from_table_creation(creation).unwrap();
        for i in 1..=5i64 {
            let s = Snapshot::builder()
                .with_snapshot_id(i)
                .with_parent_snapshot_id((i > 1).then_some(i - 1))
                .with_sequence_number(i)
                .with_timestamp_ms(i * DAY_MS)
                .with_manifest_list(format!("s3://w/t/metadata/snap-{i}.avro"))
                .with_summary(Summary {
                    operation: Operation::Append,
                    additional_properties: HashMap::new(),
                })
                .with_schema_id(0)
                .build();
            b = b.set_branch_snapshot(s, "main").unwrap();
            if i == 2 {
                let tag = SnapshotReference {
                    snapshot_id: 2,
                    retention: SnapshotRetention::Tag {
                        max_ref_age_ms: None,
                    },
                };
                b = b.set_ref("v1", tag).unwrap();
            }
        }
        b.build().unwrap().metadata
    }

    #[test]
    fn settings_come_from_the_table_properties_with_defaults() {
        let d = Settings::of(&table(&[]));
        assert!(d.expire);
        assert_eq!(d.max_snapshot_age_ms, 5 * DAY_MS);
        assert_eq!(d.min_snapshots_to_keep, 1);
        assert_eq!(d.orphans_older_than_ms, Some(3 * DAY_MS));
        let s = Settings::of(&table(&[
            ("eddy.maintenance.expire-snapshots", "FALSE"),
            ("history.expire.min-snapshots-to-keep", "0"),
            ("eddy.maintenance.orphan-files-older-than-ms", "-1"),
            ("history.expire.max-snapshot-age-ms", "not a number"),
        ]));
        assert!(!s.expire);
        assert_eq!(
            s.min_snapshots_to_keep, 1,
            "the current snapshot is always kept"
        );
        assert_eq!(s.orphans_older_than_ms, None);
        assert_eq!(s.max_snapshot_age_ms, 5 * DAY_MS);
    }

    #[test]
    fn old_snapshots_expire_but_never_the_newest_ancestors_or_a_tagged_one() {
        let t = table(&[]);
        let s = |keep: usize| Settings {
            expire: true,
            max_snapshot_age_ms: DAY_MS / 2,
            min_snapshots_to_keep: keep,
            orphans_older_than_ms: None,
        };
        let now = 10 * DAY_MS;
        let mut got = expirable(&t, &s(1), now);
        got.sort();
        assert_eq!(got, vec![1, 3, 4], "5 is current, 2 is tagged");
        let mut got = expirable(&t, &s(3), now);
        got.sort();
        assert_eq!(got, vec![1]);
        // Nothing is old enough.
        assert!(expirable(&t, &s(1), DAY_MS).is_empty());
    }
}
