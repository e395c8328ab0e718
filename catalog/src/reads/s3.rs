//! Reads of buckets, objects, versions, multipart uploads and bucket settings (shared by
//! every view).

use super::all;
use super::{Reads, S3};
use crate::error::CatalogResult;
use crate::model::{
    BucketConfig, BucketConfigKind, BucketPolicy, BucketRecord, ObjectVersion, PartRecord,
    UploadRecord,
};
use crate::{read, tables};

impl Reads<'_, S3> {
    /// One bucket.
    pub async fn bucket(&self, name: &str) -> CatalogResult<Option<BucketRecord>> {
        read::get(self.kv, tables::BUCKETS, name.as_bytes()).await
    }

    /// Every bucket, by name.
    pub async fn buckets(&self) -> CatalogResult<Vec<BucketRecord>> {
        all(self.kv, tables::BUCKETS).await
    }

    /// The current version of an object (none when deleted or behind a delete marker).
    pub async fn object(&self, bucket: &str, key: &str) -> CatalogResult<Option<ObjectVersion>> {
        read::get(self.kv, tables::OBJECTS, &tables::object_key(bucket, key)).await
    }

    /// One version of an object, delete markers included.
    pub async fn object_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: &str,
    ) -> CatalogResult<Option<ObjectVersion>> {
        let prefix = tables::versions_prefix(bucket, key);
        let versions: Vec<(Vec<u8>, ObjectVersion)> =
            read::scan(self.kv, tables::VERSIONS, &prefix, usize::MAX).await?;
        Ok(versions
            .into_iter()
            .map(|(_, v)| v)
            .find(|v| v.version_id == version_id))
    }

    /// Up to `limit` current objects whose keys start with `prefix` and sort after
    /// `start_after`, in byte order. Cost grows with `limit`, not with the bucket.
    pub async fn list_objects(
        &self,
        bucket: &str,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> CatalogResult<Vec<(String, ObjectVersion)>> {
        read::list_objects(self.kv, bucket, prefix, start_after, limit).await
    }

    /// Up to `limit` versions (newest first within a key) of keys starting with
    /// `prefix`, from key `start_key` (inclusive) on.
    pub async fn list_versions(
        &self,
        bucket: &str,
        prefix: &str,
        start_key: Option<&str>,
        limit: usize,
    ) -> CatalogResult<Vec<(String, ObjectVersion)>> {
        read::list_versions(self.kv, bucket, prefix, start_key, limit).await
    }

    /// One in-progress multipart upload.
    pub async fn upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> CatalogResult<Option<UploadRecord>> {
        read::get(
            self.kv,
            tables::UPLOADS,
            &tables::upload_key(bucket, key, upload_id),
        )
        .await
    }

    /// Up to `limit` in-progress uploads of keys starting with `prefix`, ordered by key
    /// then upload id, strictly after `after` (a key marker, with an upload id marker or
    /// not: without one, every upload of that key is skipped).
    pub async fn list_uploads(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<(&str, Option<&str>)>,
        limit: usize,
    ) -> CatalogResult<Vec<UploadRecord>> {
        read::list_uploads(self.kv, bucket, prefix, after, limit).await
    }

    /// Up to `limit` parts of an upload numbered above `after`, in order.
    pub async fn parts(
        &self,
        upload_id: &str,
        after: u32,
        limit: usize,
    ) -> CatalogResult<Vec<PartRecord>> {
        read::parts(self.kv, upload_id, after, limit).await
    }

    /// Every bucket policy, by bucket.
    pub async fn bucket_policies(&self) -> CatalogResult<Vec<BucketPolicy>> {
        all(self.kv, tables::BUCKET_POLICIES).await
    }

    /// One of a bucket's sub-resource configurations.
    pub async fn bucket_config(
        &self,
        bucket: &str,
        kind: BucketConfigKind,
    ) -> CatalogResult<Option<BucketConfig>> {
        read::get(
            self.kv,
            tables::BUCKET_CONFIGS,
            &BucketConfig::key(bucket, kind),
        )
        .await
    }

    /// Every bucket's configuration of one kind.
    pub async fn bucket_configs(&self, kind: BucketConfigKind) -> CatalogResult<Vec<BucketConfig>> {
        let found: Vec<BucketConfig> = all(self.kv, tables::BUCKET_CONFIGS).await?;
        Ok(found.into_iter().filter(|c| c.kind == kind).collect())
    }
}
