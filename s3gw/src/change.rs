//! The one place where an object change's catalog transaction is assembled.
//!
//! Every object change (put, copy, delete, delete-objects entry, multipart complete and
//! abort, tagging) builds one [`Change`] and commits it as exactly one catalog
//! transaction. **Bucket notifications hook in here**: [`Change::commit`] is where the
//! notification topic rows for the change's events (see [`Event`]) are to be appended to
//! the same op list, so an object change and its notifications commit together or not
//! at all.

use std::collections::BTreeMap;

use catalog::{CommitOutcome, ObjectVersion, Op, Transaction};
use s3s::S3Result;
use storage::BlobMeta;

use crate::Gateway;
use crate::body::delete_blobs;
use crate::error::OrS3;

/// What kind of S3 event a change is (the future notification's `eventName`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// `ObjectCreated:Put`.
    Put,
    /// `ObjectCreated:Copy`.
    Copy,
    /// `ObjectCreated:CompleteMultipartUpload`.
    CompleteMultipartUpload,
    /// `ObjectRemoved:Delete`.
    Delete,
    /// `ObjectRemoved:DeleteMarkerCreated`.
    DeleteMarkerCreated,
    /// `ObjectTagging:Put`.
    TaggingPut,
    /// `ObjectTagging:Delete`.
    TaggingDelete,
    /// Multipart bookkeeping (create, part, abort): no event.
    None,
}

/// One object change: its ops, the events it raises and the blobs it brings in.
#[must_use]
pub struct Change {
    ops: Vec<Op>,
    events: Vec<(Event, String, String)>,
    new_blobs: Vec<BlobMeta>,
}

impl Change {
    /// An empty change.
    pub fn new() -> Self {
        Self {
            ops: Vec::new(),
            events: Vec::new(),
            new_blobs: Vec::new(),
        }
    }

    /// Fails the change unless the key's current ETag is `etag` (`None`: unless the key
    /// has no current version).
    pub fn expect_etag(mut self, bucket: &str, key: &str, etag: Option<String>) -> Self {
        self.ops.push(Op::ExpectEtag {
            bucket: bucket.into(),
            key: key.into(),
            etag,
        });
        self
    }

    /// Adds a version (or delete marker) and makes it current; the blobs it references
    /// are deleted if the commit fails.
    pub fn put_version(
        mut self,
        event: Event,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        replace_null: bool,
    ) -> Self {
        self.events.push((event, bucket.into(), key.into()));
        self.ops.push(Op::PutObject {
            bucket: bucket.into(),
            key: key.into(),
            version,
            replace_null,
        });
        self
    }

    /// Marks blobs written for this change: deleted if the commit fails.
    pub fn owns(mut self, blobs: &[BlobMeta]) -> Self {
        self.new_blobs.extend_from_slice(blobs);
        self
    }

    /// Removes one version permanently.
    pub fn delete_version(mut self, bucket: &str, key: &str, version_id: &str) -> Self {
        self.events.push((Event::Delete, bucket.into(), key.into()));
        self.ops.push(Op::DeleteObjectVersion {
            bucket: bucket.into(),
            key: key.into(),
            version_id: version_id.into(),
        });
        self
    }

    /// Replaces the tags of a version (the current one when `version_id` is `None`).
    pub fn set_tags(
        mut self,
        event: Event,
        bucket: &str,
        key: &str,
        version_id: Option<String>,
        tags: BTreeMap<String, String>,
    ) -> Self {
        self.events.push((event, bucket.into(), key.into()));
        self.ops.push(Op::SetObjectTags {
            bucket: bucket.into(),
            key: key.into(),
            version_id,
            tags,
        });
        self
    }

    /// Any other op (multipart bookkeeping).
    pub fn op(mut self, op: Op) -> Self {
        self.ops.push(op);
        self
    }

    /// The events this change raises, as (event, bucket, key).
    pub fn events(&self) -> &[(Event, String, String)] {
        &self.events
    }

    /// Commits the change as one catalog transaction. The place where notification rows
    /// join the transaction. Blobs the change brought in are deleted if it fails.
    pub async fn commit(self, gw: &Gateway) -> S3Result<CommitOutcome> {
        let Change {
            ops,
            events: _events,
            new_blobs,
        } = self;
        // Notifications: append the rows for `_events` to `ops` here.
        match gw.catalog().commit(Transaction::new(ops)).await {
            Ok(o) => Ok(o),
            Err(e) => {
                delete_blobs(gw.catalog().blobs(), new_blobs).await;
                Err(e).or_s3()
            }
        }
    }
}

impl Default for Change {
    fn default() -> Self {
        Self::new()
    }
}
