//! Table files as objects of the broker bucket, so Eddy's S3 endpoint serves them: new
//! files become blobs (small ones inline) and `PutObject` operations of the commit that
//! publishes them; existing files are read back through the catalog.

use catalog::S3Op;
use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use catalog::{Catalog, ObjectData, ObjectVersion, Op};
use md5::{Digest, Md5};
use storage::{BlobMeta, Urgency};

use crate::{TableError, TableResult};

/// Files up to this size are kept inline in the catalog record (as the S3 gateway does).
pub const INLINE_MAX: usize = 32 * 1024;

/// `s3://bucket/key` for an object.
pub fn location(bucket: &str, key: &str) -> String {
    format!("s3://{bucket}/{key}")
}

/// The object key of `location` in `bucket` (none when it points elsewhere).
pub fn key_of<'a>(bucket: &str, location: &'a str) -> Option<&'a str> {
    location
        .strip_prefix("s3://")?
        .strip_prefix(bucket)?
        .strip_prefix('/')
}

/// Reads a whole object. An object encrypted at rest (SSE-S3 or SSE-C, which only the S3
/// gateway holds the keys to) is refused rather than read as its ciphertext.
pub async fn read(catalog: &dyn Catalog, bucket: &str, key: &str) -> TableResult<Vec<u8>> {
    let v = catalog
        .s3()
        .object(bucket, key)
        .await?
        .ok_or_else(|| TableError::MissingFile(location(bucket, key)))?;
    if v.encryption.is_some() {
        return Err(TableError::BadRequest(format!(
            "{} is encrypted at rest (SSE); table files must be stored unencrypted",
            location(bucket, key)
        )));
    }
    match v.data {
        ObjectData::Inline(d) => Ok(d),
        ObjectData::Blobs(blobs) => {
            let mut out = Vec::with_capacity(v.size as usize);
            for b in blobs {
                out.extend_from_slice(&catalog.blobs().get(b.id)?);
            }
            Ok(out)
        }
    }
}

/// The MD5s of files written together, hashed side by side on the shared SIMD lanes
/// (one seal's data files, one per partition). Each hashed alone, MD5 was 13-14 % of a
/// seal's CPU, and 2.4 % together (perf, 128 MiB of 1 KiB random text in 16 partitions,
/// docs/benchmarks.md).
pub async fn md5s(files: impl IntoIterator<Item = Bytes>) -> Vec<[u8; 16]> {
    futures::future::join_all(files.into_iter().map(md5_lanes::digest)).await
}

/// New files of one change, durable on the drives but not yet visible.
#[derive(Default)]
pub struct NewObjects {
    /// The `PutObject` operations that publish them.
    pub ops: Vec<Op>,
    /// Blobs written, to delete if the commit fails.
    pub blobs: Vec<BlobMeta>,
    /// Bytes written.
    pub bytes: u64,
    /// Whether a client waits on the files' blobs.
    urgency: Urgency,
}

impl NewObjects {
    /// New files that no client waits on (the tabler's: seals, expansions, inventories):
    /// their blobs keep little queued at the drives, ahead of the log commits of produce
    /// requests (see [`Urgency`]).
    pub fn background() -> Self {
        Self {
            urgency: Urgency::Background,
            ..Self::default()
        }
    }

    /// Writes `data` (into a blob unless small) and adds the operation publishing it as
    /// `bucket/key`; its ETag is the MD5 of `data`, hashed here.
    pub fn add(
        &mut self,
        catalog: &dyn Catalog,
        bucket: &str,
        key: String,
        data: Vec<u8>,
        content_type: &str,
        now_ms: i64,
    ) -> TableResult<()> {
        let md5 = Md5::digest(&data).into();
        self.add_hashed(
            catalog,
            bucket,
            key,
            (data.into(), md5),
            content_type,
            now_ms,
        )
    }

    /// [`NewObjects::add`] for `data` whose MD5 the caller has (see [`md5s`]).
    pub fn add_hashed(
        &mut self,
        catalog: &dyn Catalog,
        bucket: &str,
        key: String,
        (data, md5): (Bytes, [u8; 16]),
        content_type: &str,
        now_ms: i64,
    ) -> TableResult<()> {
        let etag = md5.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let size = data.len() as u64;
        let data = if data.len() <= INLINE_MAX {
            ObjectData::Inline(Vec::from(data))
        } else {
            let blob = catalog.blobs().put_with(&data, self.urgency)?;
            self.blobs.push(blob);
            ObjectData::Blobs(vec![blob])
        };
        self.bytes += size;
        let mut metadata = BTreeMap::new();
        metadata.insert("content-type".to_owned(), content_type.to_owned());
        self.ops.push(Op::S3(S3Op::PutObject {
            bucket: bucket.to_owned(),
            key,
            version: ObjectVersion {
                metadata,
                ..ObjectVersion::new("null".into(), data, size, etag, now_ms)
            },
            replace_null: true,
        }));
        Ok(())
    }

    /// Deletes the blobs of a change that did not commit.
    pub fn discard(self, catalog: &Arc<dyn Catalog>) {
        for b in self.blobs {
            if let Err(e) = catalog.blobs().delete(b.id) {
                tracing::warn!(error = %e, "deleting the blob of an uncommitted table file");
            }
        }
    }
}
