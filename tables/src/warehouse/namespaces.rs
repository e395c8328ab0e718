//! Users' namespaces: made with properties (a `location` among them, defaulting to a
//! prefix of the default bucket), listed, changed and dropped when empty.

use std::collections::{BTreeMap, HashMap};

use catalog::{CatalogError, IcebergOp, NamespaceRecord, Op, Transaction};

use super::access::{dotted, must, must_s3, namespace_resource};
use super::{Warehouse, split_location};
use crate::{NAMESPACE, TableError, TableResult};

/// What a properties update did (the REST `UpdateNamespacePropertiesResponse`).
pub struct PropertiesChange {
    /// Keys set.
    pub updated: Vec<String>,
    /// Keys removed.
    pub removed: Vec<String>,
    /// Keys asked to be removed that were not there.
    pub missing: Vec<String>,
}

/// Checks a namespace's levels: at least one, none empty, no control characters (the
/// 0x1F separator among them).
pub fn check_levels(levels: &[String]) -> TableResult<String> {
    if levels.is_empty() {
        return Err(TableError::BadRequest("a namespace needs a name".into()));
    }
    for l in levels {
        if l.is_empty() || l.chars().any(char::is_control) || l.len() > 255 {
            return Err(TableError::BadRequest(format!(
                "namespace level {l:?} must be 1 to 255 bytes without control characters"
            )));
        }
    }
    Ok(levels.join("\u{1f}"))
}

impl Warehouse {
    /// A users' namespace.
    pub async fn namespace(&self, namespace: &str) -> TableResult<Option<NamespaceRecord>> {
        Ok(self.catalog.iceberg().namespace(namespace).await?)
    }

    /// A users' namespace, or 404.
    pub async fn namespace_or_404(&self, namespace: &str) -> TableResult<NamespaceRecord> {
        self.namespace(namespace)
            .await?
            .ok_or_else(|| TableError::NoSuchNamespace(dotted(namespace)))
    }

    /// Makes a namespace owned by `user`.
    pub async fn create_namespace(
        &self,
        user: &str,
        namespace: &str,
        properties: HashMap<String, String>,
    ) -> TableResult<NamespaceRecord> {
        let name = dotted(namespace);
        must(
            &self.directory,
            user,
            "s3tables:CreateNamespace",
            &namespace_resource(namespace),
            None,
        )?;
        if notify::metadata::bucket_of_namespace(namespace.split('\u{1f}').next().unwrap_or(""))
            .is_some()
        {
            return Err(TableError::BadRequest(format!(
                "namespace {name}: names b_<bucket> are kept for buckets' metadata tables (S3 CreateBucketMetadataConfiguration); choose another"
            )));
        }
        if namespace == NAMESPACE
            || namespace.starts_with(&format!("{NAMESPACE}\u{1f}"))
            || self
                .catalog
                .iceberg()
                .other_tables()
                .await?
                .iter()
                .any(|(ns, _, _)| ns == namespace)
        {
            return Err(TableError::Conflict(format!(
                "namespace {name} already exists (it holds tables Eddy writes)"
            )));
        }
        let mut properties: BTreeMap<String, String> = properties.into_iter().collect();
        let location = match properties.get("location") {
            Some(l) => l.trim_end_matches('/').to_owned(),
            None => {
                self.ensure_default_bucket().await?;
                format!("s3://{}/{}", self.bucket, namespace.replace('\u{1f}', "/"))
            }
        };
        let (bucket, key) = split_location(&location)?;
        let owner = self.bucket_owner(&bucket).await?;
        must_s3(
            &self.directory,
            user,
            "s3:PutObject",
            &bucket,
            &owner,
            &format!("{key}/"),
        )?;
        properties.insert("location".into(), location);
        let record = NamespaceRecord {
            generation: 1,
            owner: user.to_owned(),
            properties,
        };
        let op = Op::Iceberg(IcebergOp::PutNamespace {
            namespace: namespace.to_owned(),
            expected: 0,
            record: Some(record.clone()),
        });
        match self.catalog.commit(Transaction::new(vec![op])).await {
            Ok(_) => {
                tracing::info!(namespace = %name, user, "namespace created");
                Ok(record)
            }
            Err(CatalogError::PreconditionFailed(_)) => Err(TableError::Conflict(format!(
                "namespace {name} already exists"
            ))),
            Err(e) => Err(e.into()),
        }
    }

    /// Sets and removes properties of a namespace.
    pub async fn update_properties(
        &self,
        user: &str,
        namespace: &str,
        removals: Vec<String>,
        updates: HashMap<String, String>,
    ) -> TableResult<PropertiesChange> {
        if let Some(k) = removals.iter().find(|k| updates.contains_key(*k)) {
            return Err(TableError::Unprocessable(format!(
                "property {k} is both set and removed"
            )));
        }
        let stored = self.namespace_or_404(namespace).await?;
        must(
            &self.directory,
            user,
            "s3tables:PutNamespaceProperties",
            &namespace_resource(namespace),
            Some(&stored.owner),
        )?;
        let mut record = stored.clone();
        record.generation += 1;
        let mut change = PropertiesChange {
            updated: Vec::new(),
            removed: Vec::new(),
            missing: Vec::new(),
        };
        for k in removals {
            if record.properties.remove(&k).is_some() {
                change.removed.push(k);
            } else {
                change.missing.push(k);
            }
        }
        for (k, v) in updates {
            if k == "location" {
                let (bucket, key) = split_location(&v)?;
                let owner = self.bucket_owner(&bucket).await?;
                must_s3(
                    &self.directory,
                    user,
                    "s3:PutObject",
                    &bucket,
                    &owner,
                    &format!("{key}/"),
                )?;
            }
            record.properties.insert(k.clone(), v);
            change.updated.push(k);
        }
        let op = Op::Iceberg(IcebergOp::PutNamespace {
            namespace: namespace.to_owned(),
            expected: stored.generation,
            record: Some(record),
        });
        match self.catalog.commit(Transaction::new(vec![op])).await {
            Ok(_) => Ok(change),
            Err(CatalogError::PreconditionFailed(why)) => Err(TableError::CommitFailed(why)),
            Err(e) => Err(e.into()),
        }
    }

    /// Drops an empty namespace.
    pub async fn drop_namespace(&self, user: &str, namespace: &str) -> TableResult<()> {
        let stored = self.namespace_or_404(namespace).await?;
        must(
            &self.directory,
            user,
            "s3tables:DeleteNamespace",
            &namespace_resource(namespace),
            Some(&stored.owner),
        )?;
        let op = Op::Iceberg(IcebergOp::PutNamespace {
            namespace: namespace.to_owned(),
            expected: stored.generation,
            record: None,
        });
        match self.catalog.commit(Transaction::new(vec![op])).await {
            Ok(_) => {
                tracing::info!(namespace = %dotted(namespace), user, "namespace dropped");
                Ok(())
            }
            Err(CatalogError::PreconditionFailed(why)) if why.ends_with("is not empty") => Err(
                TableError::NamespaceNotEmpty(format!("{why}: drop its tables and views first")),
            ),
            Err(CatalogError::PreconditionFailed(why)) => Err(TableError::CommitFailed(why)),
            Err(e) => Err(e.into()),
        }
    }
}
