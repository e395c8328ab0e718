//! The one place where an object change's catalog transaction is assembled.
//!
//! Every object change (put, copy, delete, delete-objects entry, multipart complete and
//! abort, tagging) builds one [`Change`] and commits it as exactly one catalog
//! transaction. [`Change::commit`] adds the bucket notification rows of the change's
//! events (one `KafkaOp::Append` per topic partition, built by the `notify` crate) to that
//! same transaction, so an object change and its events commit together or not at all.

use catalog::S3Op;
use std::collections::BTreeMap;

use catalog::{CatalogError, CommitOutcome, ObjectVersion, Op, Transaction};
use notify::{ObjectChange, Requester, Rows, Targets};
use s3s::S3Result;
use storage::BlobMeta;

use crate::body::delete_blobs;
use crate::bucket_settings::Bucket;
use crate::error::{OrS3, catalog_error};
use crate::{Gateway, versioning};

/// What kind of S3 event a change is (the notification's `eventName`).
pub use notify::EventKind as Event;

/// An event of the change, with what its record reports about the object.
#[derive(Debug, Clone)]
struct Pending {
    event: Event,
    key: String,
    size: Option<u64>,
    etag: Option<String>,
    version_id: String,
}

/// How often a commit is retried when a notification topic was deleted or recreated
/// between building the rows and committing them.
const TOPIC_RACE_RETRIES: usize = 3;

/// One object change: its ops, the events it raises and the blobs it brings in.
#[must_use]
pub struct Change<'a> {
    ops: Vec<Op>,
    /// The bucket of its events, as the request loaded it: its notification
    /// configuration decides their rows (a change touches one bucket).
    bucket: Option<&'a Bucket>,
    events: Vec<Pending>,
    new_blobs: Vec<BlobMeta>,
    requester: Requester,
    /// Whether removals may override governance-mode retention (the requester asked,
    /// and holds `s3:BypassGovernanceRetention`).
    bypass_governance: bool,
}

impl<'a> Change<'a> {
    /// An empty change.
    pub fn new() -> Self {
        Self {
            ops: Vec::new(),
            bucket: None,
            events: Vec::new(),
            new_blobs: Vec::new(),
            requester: Requester::default(),
            bypass_governance: false,
        }
    }

    /// Who asks for the change (access key; empty when anonymous).
    pub fn principal(&self) -> &str {
        &self.requester.principal
    }

    /// Lets this change's removals override governance-mode retention (the caller has
    /// checked `s3:BypassGovernanceRetention`).
    pub fn bypass_governance(mut self, bypass: bool) -> Self {
        self.bypass_governance = bypass;
        self
    }

    /// Records who asked for the change (for its event records).
    pub fn by(mut self, requester: Requester) -> Self {
        self.requester = requester;
        self
    }

    /// Fails the change unless the key's current ETag is `etag` (`None`: unless the key
    /// has no current version).
    pub fn expect_etag(mut self, bucket: &str, key: &str, etag: Option<String>) -> Self {
        self.ops.push(Op::S3(S3Op::ExpectEtag {
            bucket: bucket.into(),
            key: key.into(),
            etag,
        }));
        self
    }

    /// Adds a version (or delete marker) and makes it current; the blobs it references
    /// are deleted if the commit fails.
    pub fn put_version(
        mut self,
        event: Event,
        bucket: &'a Bucket,
        key: &str,
        version: ObjectVersion,
        replace_null: bool,
    ) -> Self {
        let data = !version.delete_marker;
        self.bucket = Some(bucket);
        self.events.push(Pending {
            event,
            key: key.into(),
            size: data.then_some(version.size),
            etag: data.then(|| version.etag.clone()),
            version_id: version.version_id.clone(),
        });
        self.ops.push(Op::S3(S3Op::PutObject {
            bucket: bucket.name.clone(),
            key: key.into(),
            version,
            replace_null,
        }));
        self
    }

    /// Marks blobs written for this change: deleted if the commit fails.
    pub fn owns(mut self, blobs: &[BlobMeta]) -> Self {
        self.new_blobs.extend_from_slice(blobs);
        self
    }

    /// Removes one version permanently.
    pub fn delete_version(self, bucket: &'a Bucket, key: &str, version_id: &str) -> Self {
        self.delete_version_as(Event::Delete, bucket, key, version_id)
    }

    /// Removes one version permanently, raising `event` (a lifecycle expiration is not a
    /// client's delete). The removal is guarded by the version's object lock, judged when
    /// the catalog applies it.
    pub fn delete_version_as(
        mut self,
        event: Event,
        bucket: &'a Bucket,
        key: &str,
        version_id: &str,
    ) -> Self {
        self.bucket = Some(bucket);
        self.events.push(Pending {
            event,
            key: key.into(),
            size: None,
            etag: None,
            version_id: version_id.into(),
        });
        self.ops.push(Op::S3(S3Op::ExpectUnlocked {
            bucket: bucket.name.clone(),
            key: key.into(),
            version_id: version_id.into(),
            now_ms: crate::now_ms(),
            bypass_governance: self.bypass_governance,
        }));
        self.ops.push(Op::S3(S3Op::DeleteObjectVersion {
            bucket: bucket.name.clone(),
            key: key.into(),
            version_id: version_id.into(),
        }));
        self
    }

    /// Replaces the tags of one version.
    pub fn set_tags(
        mut self,
        event: Event,
        bucket: &'a Bucket,
        key: &str,
        version: &ObjectVersion,
        tags: BTreeMap<String, String>,
    ) -> Self {
        self.bucket = Some(bucket);
        self.events.push(Pending {
            event,
            key: key.into(),
            size: Some(version.size),
            etag: Some(version.etag.clone()),
            version_id: version.version_id.clone(),
        });
        self.ops.push(Op::S3(S3Op::SetObjectTags {
            bucket: bucket.name.clone(),
            key: key.into(),
            version_id: Some(version.version_id.clone()),
            tags,
        }));
        self
    }

    /// Any other op (multipart bookkeeping).
    pub fn op(mut self, op: Op) -> Self {
        self.ops.push(op);
        self
    }

    /// The notification rows of this change's events, under the configuration of the
    /// bucket as the request loaded it.
    /// The change's events as the notifier sees them.
    fn changes(&self) -> Vec<ObjectChange> {
        let Some(b) = self.bucket else {
            return Vec::new();
        };
        self.events
            .iter()
            .map(|p| ObjectChange {
                kind: p.event,
                bucket: b.name.clone(),
                key: p.key.clone(),
                size: p.size,
                etag: p.etag.clone(),
                version_id: versioning::reported_version(b, &p.version_id),
            })
            .collect()
    }

    /// The notification targets of the change, read from the catalog.
    async fn targets(&self, gw: &Gateway, changes: &[ObjectChange]) -> S3Result<Targets> {
        let Some(b) = self.bucket else {
            return Ok(Targets::default());
        };
        let config = b
            .fired_rules()
            .clone()
            .map_err(|e| catalog_error(CatalogError::Corrupt(format!("bucket {}: {e}", b.name))))?;
        gw.notifier()
            .targets(gw.catalog(), config, changes)
            .await
            .or_s3()
    }

    /// The notification rows of the change (taking their sequencers).
    fn rows(&self, gw: &Gateway, targets: &Targets, changes: &[ObjectChange]) -> S3Result<Rows> {
        let Some(b) = self.bucket else {
            return Ok(Rows::default());
        };
        gw.notifier()
            .rows(targets, b, &b.region(), changes, &self.requester)
            .or_s3()
    }

    /// Commits the change and its notification rows as one catalog transaction. Blobs
    /// the change brought in are deleted if it fails.
    pub async fn commit(mut self, gw: &Gateway) -> S3Result<CommitOutcome> {
        let mut attempt = 0;
        let result = loop {
            // Sequencers are handed out and the transaction queued for the committer
            // under one lock, so the committer (which takes transactions in queue order)
            // commits a key's changes in the order of their sequencers.
            let changes = self.changes();
            let targets = match self.targets(gw, &changes).await {
                Ok(t) => t,
                Err(e) => break Err(e),
            };
            let (rows, committed) = {
                let _in_order = gw.notifier().ordered();
                let rows = match self.rows(gw, &targets, &changes) {
                    Ok(r) => r,
                    Err(e) => break Err(e),
                };
                let ops = if rows.ops.is_empty() {
                    // Nothing to retry for: the ops move into the transaction.
                    std::mem::take(&mut self.ops)
                } else {
                    let mut ops = self.ops.clone();
                    ops.extend(rows.ops.iter().cloned());
                    ops
                };
                (rows, gw.catalog().commit(Transaction::new(ops)))
            };
            match committed.await {
                Ok(o) => {
                    gw.notifier().committed(&rows);
                    break Ok(o);
                }
                // A notification topic was deleted (or deleted and recreated) after
                // its rows were built: build them again.
                Err(CatalogError::UnknownPartition { .. } | CatalogError::UnknownTopic(_))
                    if !rows.ops.is_empty() && attempt < TOPIC_RACE_RETRIES =>
                {
                    gw.notifier().metrics().rebuilds.inc();
                    attempt += 1;
                }
                Err(e) => break Err(catalog_error(e)),
            }
        };
        if result.is_err() {
            delete_blobs(gw.catalog().blobs(), self.new_blobs).await;
        }
        result
    }
}

impl Default for Change<'_> {
    fn default() -> Self {
        Self::new()
    }
}
