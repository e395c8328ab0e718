//! Users' own Iceberg tables and views, written through the REST catalog as the Iceberg
//! REST spec has it: namespaces with properties, tables created with a schema, partition
//! spec and sort order, committed with requirements and updates (a commit moves the
//! table's pointer only from the generation it was read at, so of two racing writers one
//! gets 409 and retries), renamed, dropped with or without purge, registered, views, and
//! commits across tables that land whole or not at all, Kafka consumer offsets with them
//! (`offsets`). Writers put data and manifest
//! files into Eddy's S3 with their own keys; the catalog writes each `metadata.json` in
//! the same catalog transaction that moves the pointer.

pub mod access;
pub mod commit;
pub mod maintenance;
pub mod namespaces;
pub mod offsets;
pub mod tables;
pub mod views;
use std::sync::Arc;

use catalog::{BucketRecord, Catalog, CatalogError, NamespaceRecord, Op, S3Op, Transaction};

use crate::{TableError, TableResult, Tabler};

/// Users' namespaces, tables and views over one catalog.
pub struct Warehouse {
    /// The tabler of the same catalog (to tell expansions' tables from users').
    tabler: Arc<Tabler>,
    catalog: Arc<dyn Catalog>,
    directory: Arc<iam::Directory>,
    /// The bucket new namespaces are placed in when they name no `location`.
    bucket: String,
}

impl Warehouse {
    /// Users' tables in `tabler`'s catalog, checked against `directory`'s policies, placed in
    /// `bucket` by default.
    pub fn new(tabler: Arc<Tabler>, directory: Arc<iam::Directory>, bucket: String) -> Self {
        Self {
            catalog: tabler.catalog().clone(),
            tabler,
            directory,
            bucket,
        }
    }

    /// The catalog.
    pub fn catalog(&self) -> &Arc<dyn Catalog> {
        &self.catalog
    }

    /// The default bucket of users' tables.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Makes the default bucket, owned by the administrator, when the first namespace
    /// that needs it is made.
    async fn ensure_default_bucket(&self) -> TableResult<()> {
        if self.catalog.s3().bucket(&self.bucket).await?.is_some() {
            return Ok(());
        }
        let record = BucketRecord {
            name: self.bucket.clone(),
            owner: self.directory.admin().to_owned(),
            created_ms: crate::now_ms(),
            versioning: catalog::Versioning::Unversioned,
            tags: Default::default(),
            settings: Default::default(),
        };
        match self
            .catalog
            .commit(Transaction::new(vec![Op::S3(S3Op::CreateBucket(record))]))
            .await
        {
            Ok(_) | Err(CatalogError::BucketExists(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads a whole object of Eddy's S3 by its `s3://` location.
    pub(crate) async fn read_file(&self, location: &str) -> TableResult<Vec<u8>> {
        let (bucket, key) = split_location(location)?;
        let catalog = self.catalog.clone();
        crate::seal::blocking(move || {
            crate::seal::wait(crate::objects::read(catalog.as_ref(), &bucket, &key))
        })
        .await
    }

    /// Reads a `metadata.json` (a table's or a view's).
    pub(crate) async fn read_json<T: serde::de::DeserializeOwned>(
        &self,
        location: &str,
    ) -> TableResult<T> {
        let bytes = self.read_file(location).await?;
        serde_json::from_slice(&bytes)
            .map_err(|e| TableError::CorruptMetadata(location.to_owned(), e.to_string()))
    }

    /// The policies' word on `user` doing `action` on table or view `namespace.name`
    /// (the namespace's owner passes when no statement matches).
    pub(crate) fn allow(
        &self,
        user: &str,
        action: &str,
        ns: &NamespaceRecord,
        namespace: &str,
        name: &str,
    ) -> TableResult<()> {
        access::must(
            &self.directory,
            user,
            action,
            &access::table_resource(namespace, name),
            Some(&ns.owner),
        )
    }

    /// The checks of a rename's target, a table's or a view's: a valid name, in a
    /// namespace there is, that the caller may create in, and free. Returns the
    /// namespace, whose generation the rename raises.
    pub(crate) async fn rename_target(
        &self,
        user: &str,
        to: (&str, &str),
    ) -> TableResult<NamespaceRecord> {
        tables::check_name(to.1)?;
        let ns = self.namespace_or_404(to.0).await?;
        self.allow(user, "s3tables:CreateTable", &ns, to.0, to.1)?;
        self.name_is_free(to.0, to.1).await?;
        Ok(ns)
    }

    /// The owner of a bucket a location points into.
    async fn bucket_owner(&self, bucket: &str) -> TableResult<String> {
        Ok(self
            .catalog
            .s3()
            .bucket(bucket)
            .await?
            .ok_or_else(|| {
                TableError::BadRequest(format!(
                    "bucket {bucket} does not exist: make it first, or leave the location out"
                ))
            })?
            .owner)
    }
}

/// An `s3://bucket/key` location split (the key without a trailing `/`).
pub fn split_location(location: &str) -> TableResult<(String, String)> {
    let rest = location
        .strip_prefix("s3://")
        .or_else(|| location.strip_prefix("s3a://"))
        .ok_or_else(|| {
            TableError::BadRequest(format!(
                "location {location} is not an s3:// URL of Eddy's S3 endpoint"
            ))
        })?;
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(TableError::BadRequest(format!(
            "location {location} names no bucket"
        )));
    }
    Ok((bucket.to_owned(), key.trim_end_matches('/').to_owned()))
}

/// The key prefix (ending in `/`) of a location's key.
pub fn prefix_of(key: &str) -> String {
    if key.is_empty() {
        String::new()
    } else {
        format!("{key}/")
    }
}
