//! The S3 domain: buckets (records, policies, lifecycle and CORS settings), objects
//! and their versions (tags, object lock), and multipart uploads. A version's removal
//! frees its blobs once the commit is durable ([`crate::apply::Effects`]).

use storage::BlobMeta;

use crate::apply::*;
use crate::error::{CatalogError, CatalogResult};
use crate::kv::{KvWrite, Range};
use crate::model::*;
use crate::tables::*;
use crate::txn::*;

/// A change to buckets, objects, versions or multipart uploads.
#[derive(Debug, Clone, PartialEq)]
pub enum S3Op {
    /// Creates a bucket (fails if it exists).
    CreateBucket(BucketRecord),
    /// Deletes an empty bucket.
    DeleteBucket {
        /// Bucket.
        name: String,
    },
    /// Adds a version (or delete marker) and makes it current. With `replace_null`, the
    /// existing `null` version is removed first (unversioned and suspended buckets).
    PutObject {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// The new version.
        version: ObjectVersion,
        /// Remove the existing `null` version.
        replace_null: bool,
    },
    /// Replaces the tags of one version (the current one when `version_id` is `None`).
    SetObjectTags {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Version, or the current one.
        version_id: Option<String>,
        /// The new tags.
        tags: std::collections::BTreeMap<String, String>,
    },
    /// Replaces the access control list of one version (the current one when
    /// `version_id` is `None`; `acl` as [`ObjectVersion::acl`]).
    SetObjectAcl {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Version, or the current one.
        version_id: Option<String>,
        /// The new list.
        acl: Option<String>,
    },
    /// Permanently removes one version; the newest remaining one becomes current.
    DeleteObjectVersion {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Version id.
        version_id: String,
    },
    /// Fails the transaction unless the object's current version has this ETag
    /// (`None`: unless the key has no current version).
    ExpectEtag {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Expected ETag.
        etag: Option<String>,
    },
    /// Fails the transaction with [`crate::CatalogError::ObjectLocked`] if the version
    /// exists and its object lock protects it at `now_ms` (a guard placed before every
    /// removal of a version; a missing version passes).
    ExpectUnlocked {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Version id.
        version_id: String,
        /// The time the removal is judged at, ms since the epoch (in the op, so a replay
        /// judges the same).
        now_ms: i64,
        /// Whether a governance-mode retention may be overridden.
        bypass_governance: bool,
    },
    /// Sets (`Some`) or removes (`None`) a version's retention. While the stored retention
    /// is in force at `now_ms`, a change that ends it sooner, removes it or turns
    /// compliance into governance fails with [`crate::CatalogError::ObjectLocked`], unless
    /// it is in governance mode and `bypass_governance` is set.
    SetObjectRetention {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Version id.
        version_id: String,
        /// The new retention.
        retention: Option<crate::model::Retention>,
        /// The time the change is judged at, ms since the epoch.
        now_ms: i64,
        /// Whether a governance-mode retention may be weakened.
        bypass_governance: bool,
    },
    /// Places or lifts a version's legal hold.
    SetObjectLegalHold {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Version id.
        version_id: String,
        /// Whether the hold is on.
        on: bool,
    },
    /// Starts a multipart upload (the bucket must exist; the id must be new).
    CreateUpload(UploadRecord),
    /// Stores one part of an upload, replacing (and freeing) an earlier part of the same
    /// number.
    PutPart {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Upload id.
        upload_id: String,
        /// The part.
        part: PartRecord,
    },
    /// Ends an upload: removes it and its parts and frees every part blob not in `keep`
    /// (complete keeps the blobs the new object references; abort keeps none). Fails
    /// unless every blob in `keep` is still one of the upload's parts.
    DeleteUpload {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Upload id.
        upload_id: String,
        /// Part blobs that live on (in the completed object).
        keep: Vec<BlobMeta>,
    },
    /// Sets (`Some`) or removes (`None`) a bucket's policy; the bucket must exist.
    PutBucketPolicy {
        /// The bucket.
        bucket: String,
        /// The document.
        document: Option<String>,
    },
    /// Sets (`Some`) or removes (`None`) one of a bucket's sub-resource configurations;
    /// the bucket must exist.
    PutBucketConfig {
        /// The bucket.
        bucket: String,
        /// Which configuration.
        kind: crate::model::BucketConfigKind,
        /// The XML document.
        document: Option<String>,
    },
    /// Replaces a bucket's record if it is still `expected`: a read-modify-write that
    /// fails with [`crate::CatalogError::PreconditionFailed`] when another change (or a
    /// delete and re-create) came first, so concurrent setting changes are never lost.
    ReplaceBucket {
        /// The record the change was built on.
        expected: BucketRecord,
        /// The new record (same name).
        record: BucketRecord,
    },
}

impl Tables<'_> {
    /// Checks that `op` can apply to the current state.
    pub(crate) fn check_s3(&mut self, op: &S3Op) -> CatalogResult<()> {
        match op {
            S3Op::CreateBucket(b) => {
                if b.name.is_empty() || b.name.len() > 255 {
                    return Err(CatalogError::Invalid(format!("bucket name {:?}", b.name)));
                }
                if self.bucket(&b.name)?.is_some() {
                    return Err(CatalogError::BucketExists(b.name.clone()));
                }
            }
            S3Op::ReplaceBucket { expected, record } => {
                if record.name != expected.name {
                    return Err(CatalogError::Invalid(format!(
                        "bucket {} cannot become {}",
                        expected.name, record.name
                    )));
                }
                self.require_bucket(&expected.name)?;
                if self.bucket(&expected.name)?.as_ref() != Some(expected) {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "bucket {} changed",
                        expected.name
                    )));
                }
            }
            S3Op::DeleteBucket { name } => {
                self.require_bucket(name)?;
                if has_prefix(self.s, VERSIONS, &bucket_prefix(name))? {
                    return Err(CatalogError::BucketNotEmpty(name.clone()));
                }
            }
            S3Op::PutObject {
                bucket,
                key,
                version,
                replace_null,
            } => {
                self.require_bucket(bucket)?;
                if key.is_empty() || key.len() > MAX_KEY_LEN || key.contains('\0') {
                    return Err(CatalogError::InvalidKey(key.clone()));
                }
                if *replace_null
                    && let Some((_, null)) =
                        find_version(self.s, VERSIONS, bucket, key, Some("null"))?
                    && null.lock.protects(version.last_modified_ms, false)
                {
                    return Err(locked(bucket, key, "null"));
                }
            }
            S3Op::SetObjectTags {
                bucket,
                key,
                version_id,
                ..
            }
            | S3Op::SetObjectAcl {
                bucket,
                key,
                version_id,
                ..
            } => {
                self.require_bucket(bucket)?;
                if find_version(self.s, VERSIONS, bucket, key, version_id.as_deref())?
                    .is_none_or(|(_, v)| v.delete_marker)
                {
                    return Err(no_such_key(bucket, key));
                }
            }
            S3Op::DeleteObjectVersion {
                bucket,
                key,
                version_id,
            } => {
                self.require_bucket(bucket)?;
                match find_version(self.s, VERSIONS, bucket, key, Some(version_id))? {
                    None => return Err(no_such_key(bucket, key)),
                    // A legal hold needs no clock to judge; retention is judged by the
                    // `ExpectUnlocked` guard every removal carries.
                    Some((_, v)) if v.lock.legal_hold => {
                        return Err(locked(bucket, key, version_id));
                    }
                    Some(_) => {}
                }
            }
            S3Op::ExpectUnlocked {
                bucket,
                key,
                version_id,
                now_ms,
                bypass_governance,
            } => {
                self.require_bucket(bucket)?;
                if let Some((_, v)) = find_version(self.s, VERSIONS, bucket, key, Some(version_id))?
                    && v.lock.protects(*now_ms, *bypass_governance)
                {
                    return Err(locked(bucket, key, version_id));
                }
            }
            S3Op::SetObjectRetention {
                bucket,
                key,
                version_id,
                retention,
                now_ms,
                bypass_governance,
            } => {
                self.require_bucket(bucket)?;
                let Some((_, v)) = find_version(self.s, VERSIONS, bucket, key, Some(version_id))?
                else {
                    return Err(no_such_key(bucket, key));
                };
                if v.delete_marker {
                    return Err(no_such_key(bucket, key));
                }
                if let Some(old) = v.lock.retention
                    && old.until_ms > *now_ms
                    && weakens(&old, retention.as_ref())
                    && !(old.mode == LockMode::Governance && *bypass_governance)
                {
                    return Err(locked(bucket, key, version_id));
                }
            }
            S3Op::SetObjectLegalHold {
                bucket,
                key,
                version_id,
                ..
            } => {
                self.require_bucket(bucket)?;
                if find_version(self.s, VERSIONS, bucket, key, Some(version_id))?
                    .is_none_or(|(_, v)| v.delete_marker)
                {
                    return Err(no_such_key(bucket, key));
                }
            }
            S3Op::ExpectEtag { bucket, key, etag } => {
                self.require_bucket(bucket)?;
                let current: Option<ObjectVersion> =
                    get(self.s, OBJECTS, &object_key(bucket, key))?;
                let actual = current.as_ref().map(|v| v.etag.as_str());
                if actual != etag.as_deref() {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "{bucket}/{key}: etag is {actual:?}, expected {etag:?}"
                    )));
                }
            }
            S3Op::CreateUpload(u) => {
                self.require_bucket(&u.bucket)?;
                if u.key.is_empty() || u.key.len() > MAX_KEY_LEN || u.key.contains('\0') {
                    return Err(CatalogError::InvalidKey(u.key.clone()));
                }
                if u.upload_id.is_empty()
                    || self
                        .s
                        .get(
                            UPLOADS,
                            upload_key(&u.bucket, &u.key, &u.upload_id).as_slice(),
                        )?
                        .is_some()
                {
                    return Err(CatalogError::Invalid(format!("upload id {}", u.upload_id)));
                }
            }
            S3Op::PutPart {
                bucket,
                key,
                upload_id,
                part,
            } => {
                self.require_upload(bucket, key, upload_id)?;
                if !(1..=10_000).contains(&part.part_number) {
                    return Err(CatalogError::Invalid(format!(
                        "part number {}",
                        part.part_number
                    )));
                }
            }
            S3Op::DeleteUpload {
                bucket,
                key,
                upload_id,
                keep,
            } => {
                self.require_upload(bucket, key, upload_id)?;
                if !keep.is_empty() {
                    let parts = self.parts_of(upload_id)?;
                    for b in keep {
                        if !parts.iter().any(|p| p.blob.id == b.id) {
                            return Err(CatalogError::InvalidPart(format!(
                                "blob {} is no longer a part of upload {upload_id}",
                                b.id
                            )));
                        }
                    }
                }
            }
            S3Op::PutBucketPolicy { bucket, .. } | S3Op::PutBucketConfig { bucket, .. } => {
                self.require_bucket(bucket)?
            }
        }
        Ok(())
    }

    /// Applies an operation that passed [`Tables::check_s3`].
    pub(crate) fn apply_s3(
        &mut self,
        op: &S3Op,
        effects: &mut Effects,
        _log: &mut LogCursor,
    ) -> CatalogResult<OpOutcome> {
        match op {
            S3Op::CreateBucket(b) | S3Op::ReplaceBucket { record: b, .. } => {
                put(self.s, BUCKETS, b.name.as_bytes(), b)?;
            }
            S3Op::DeleteBucket { name } => {
                self.s.remove(BUCKETS, name.as_bytes())?;
                self.s.remove(BUCKET_POLICIES, name.as_bytes())?;
                for kind in [BucketConfigKind::Lifecycle, BucketConfigKind::Cors] {
                    self.s
                        .remove(BUCKET_CONFIGS, BucketConfig::key(name, kind).as_slice())?;
                }
            }
            S3Op::PutObject {
                bucket,
                key,
                version,
                replace_null,
            } => {
                if *replace_null
                    && let Some((vk, old)) =
                        find_version(self.s, VERSIONS, bucket, key, Some("null"))?
                {
                    self.s.remove(VERSIONS, vk.as_slice())?;
                    effects.freed_blobs.extend_from_slice(old.data.blobs());
                }
                let seq = self.counter(VERSION_SEQ)? + 1;
                self.set_counter(VERSION_SEQ, seq)?;
                // Encoded once for both tables: the PUT path's one conversion.
                let stored = enc(version)?;
                self.s.put(
                    VERSIONS,
                    version_key(bucket, key, seq).as_slice(),
                    stored.as_slice(),
                )?;
                let ok = object_key(bucket, key);
                if version.delete_marker {
                    self.s.remove(OBJECTS, ok.as_slice())?;
                } else {
                    self.s.put(OBJECTS, ok.as_slice(), stored.as_slice())?;
                }
            }
            S3Op::SetObjectTags {
                bucket,
                key,
                version_id,
                tags,
            } => {
                if let Some((vk, mut v)) =
                    find_version(self.s, VERSIONS, bucket, key, version_id.as_deref())?
                {
                    v.tags = tags.clone();
                    put(self.s, VERSIONS, &vk, &v)?;
                    self.refresh_current(bucket, key)?;
                }
            }
            S3Op::SetObjectAcl {
                bucket,
                key,
                version_id,
                acl,
            } => {
                if let Some((vk, mut v)) =
                    find_version(self.s, VERSIONS, bucket, key, version_id.as_deref())?
                {
                    v.acl = acl.clone();
                    put(self.s, VERSIONS, &vk, &v)?;
                    self.refresh_current(bucket, key)?;
                }
            }
            S3Op::DeleteObjectVersion {
                bucket,
                key,
                version_id,
            } => {
                if let Some((vk, old)) =
                    find_version(self.s, VERSIONS, bucket, key, Some(version_id))?
                {
                    self.s.remove(VERSIONS, vk.as_slice())?;
                    effects.freed_blobs.extend_from_slice(old.data.blobs());
                    self.refresh_current(bucket, key)?;
                }
            }
            S3Op::ExpectEtag { .. } | S3Op::ExpectUnlocked { .. } => {}
            S3Op::SetObjectRetention {
                bucket,
                key,
                version_id,
                retention,
                ..
            } => {
                if let Some((vk, mut v)) =
                    find_version(self.s, VERSIONS, bucket, key, Some(version_id))?
                {
                    v.lock.retention = *retention;
                    put(self.s, VERSIONS, &vk, &v)?;
                    self.refresh_current(bucket, key)?;
                }
            }
            S3Op::SetObjectLegalHold {
                bucket,
                key,
                version_id,
                on,
            } => {
                if let Some((vk, mut v)) =
                    find_version(self.s, VERSIONS, bucket, key, Some(version_id))?
                {
                    v.lock.legal_hold = *on;
                    put(self.s, VERSIONS, &vk, &v)?;
                    self.refresh_current(bucket, key)?;
                }
            }
            S3Op::CreateUpload(u) => {
                put(
                    self.s,
                    UPLOADS,
                    &upload_key(&u.bucket, &u.key, &u.upload_id),
                    u,
                )?;
            }
            S3Op::PutPart {
                upload_id, part, ..
            } => {
                let pk = part_key(upload_id, part.part_number);
                let old: Option<PartRecord> = get(self.s, PARTS, &pk)?;
                if let Some(old) = old
                    && old.blob.id != part.blob.id
                {
                    effects.freed_blobs.push(old.blob);
                }
                put(self.s, PARTS, &pk, part)?;
            }
            S3Op::DeleteUpload {
                bucket,
                key,
                upload_id,
                keep,
            } => {
                self.s
                    .remove(UPLOADS, upload_key(bucket, key, upload_id).as_slice())?;
                let mut freed = Vec::new();
                remove_prefix(self.s, PARTS, &parts_prefix(upload_id), |v| {
                    let p: PartRecord = dec(v)?;
                    if !keep.iter().any(|b| b.id == p.blob.id) {
                        freed.push(p.blob);
                    }
                    Ok(())
                })?;
                effects.freed_blobs.extend(freed);
            }
            S3Op::PutBucketPolicy { bucket, document } => match document {
                Some(d) => put(
                    self.s,
                    BUCKET_POLICIES,
                    bucket.as_bytes(),
                    &crate::model::BucketPolicy {
                        bucket: bucket.clone(),
                        document: d.clone(),
                    },
                )?,
                None => {
                    self.s.remove(BUCKET_POLICIES, bucket.as_bytes())?;
                }
            },
            S3Op::PutBucketConfig {
                bucket,
                kind,
                document,
            } => {
                let key = BucketConfig::key(bucket, *kind);
                match document {
                    Some(d) => put(
                        self.s,
                        BUCKET_CONFIGS,
                        &key,
                        &BucketConfig {
                            bucket: bucket.clone(),
                            kind: *kind,
                            document: d.clone(),
                        },
                    )?,
                    None => {
                        self.s.remove(BUCKET_CONFIGS, key.as_slice())?;
                    }
                }
            }
        }
        Ok(OpOutcome::Done)
    }

    pub(crate) fn require_bucket(&mut self, name: &str) -> CatalogResult<()> {
        match self.bucket(name)? {
            Some(_) => Ok(()),
            None => Err(CatalogError::NoSuchBucket(name.into())),
        }
    }

    pub(crate) fn require_upload(
        &mut self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> CatalogResult<()> {
        let u: Option<UploadRecord> = get(self.s, UPLOADS, &upload_key(bucket, key, upload_id))?;
        match u {
            Some(_) => Ok(()),
            None => Err(CatalogError::NoSuchUpload(upload_id.into())),
        }
    }

    pub(crate) fn parts_of(&mut self, upload_id: &str) -> CatalogResult<Vec<PartRecord>> {
        let prefix = parts_prefix(upload_id);
        let end = prefix_end(&prefix);
        self.s
            .range(PARTS, Range::prefix(&prefix, &end))?
            .iter()
            .map(|(_, v)| dec(v))
            .collect()
    }

    /// Makes `OBJECTS` show the newest version of a key, or nothing when that is a delete
    /// marker or no version is left.
    pub(crate) fn refresh_current(&mut self, bucket: &str, key: &str) -> CatalogResult<()> {
        let ok = object_key(bucket, key);
        match versions_of(self.s, VERSIONS, bucket, key)?
            .into_iter()
            .next()
        {
            Some((_, v)) if !v.delete_marker => put(self.s, OBJECTS, &ok, &v)?,
            _ => {
                self.s.remove(OBJECTS, ok.as_slice())?;
            }
        }
        Ok(())
    }

    /// Removes every object (all versions) whose key starts with `prefix`, freeing their
    /// blobs: a dropped topic table takes its files with it.
    pub(crate) fn remove_objects_under(
        &mut self,
        bucket: &str,
        prefix: &str,
        effects: &mut Effects,
    ) -> CatalogResult<()> {
        let p = object_key(bucket, prefix);
        remove_prefix(self.s, OBJECTS, &p, |_| Ok(()))?;
        remove_prefix(self.s, VERSIONS, &p, |v| {
            let old: ObjectVersion = dec(v)?;
            effects.freed_blobs.extend_from_slice(old.data.blobs());
            Ok(())
        })
    }

    pub(crate) fn bucket(&mut self, name: &str) -> CatalogResult<Option<BucketRecord>> {
        get(self.s, BUCKETS, name.as_bytes())
    }
}

/// All versions of one key, newest first, with their table keys.
pub(crate) fn versions_of(
    s: &mut dyn KvWrite,
    t: Table,
    bucket: &str,
    key: &str,
) -> CatalogResult<Vec<(Vec<u8>, ObjectVersion)>> {
    let prefix = versions_prefix(bucket, key);
    let end = prefix_end(&prefix);
    s.range(t, Range::prefix(&prefix, &end))?
        .into_iter()
        .map(|(k, v)| Ok((k, dec(&v)?)))
        .collect()
}

pub(crate) fn find_version(
    s: &mut dyn KvWrite,
    t: Table,
    bucket: &str,
    key: &str,
    version_id: Option<&str>,
) -> CatalogResult<Option<(Vec<u8>, ObjectVersion)>> {
    let versions = versions_of(s, t, bucket, key)?;
    Ok(match version_id {
        Some(id) => versions.into_iter().find(|(_, v)| v.version_id == id),
        None => versions
            .into_iter()
            .next()
            .filter(|(_, v)| !v.delete_marker),
    })
}

pub(crate) fn locked(bucket: &str, key: &str, version_id: &str) -> CatalogError {
    CatalogError::ObjectLocked(format!("{bucket}/{key} version {version_id}"))
}

/// Whether replacing retention `old` with `new` protects the version less: removed, ended
/// sooner, or compliance turned into governance.
pub(crate) fn weakens(old: &Retention, new: Option<&Retention>) -> bool {
    new.is_none_or(|n| {
        n.until_ms < old.until_ms
            || (old.mode == LockMode::Compliance && n.mode == LockMode::Governance)
    })
}

pub(crate) fn no_such_key(bucket: &str, key: &str) -> CatalogError {
    CatalogError::NoSuchKey {
        bucket: bucket.into(),
        key: key.into(),
    }
}
