//! Users' tables: created (the first `metadata.json` written by the catalog at the
//! table's location), loaded, renamed, dropped with or without purge, and registered
//! from an existing `metadata.json`. Commits are `commit.rs`'s.

use std::collections::HashMap;

use catalog::{CatalogError, IcebergOp, NamespaceRecord, Op, TableRecord, Transaction};
use iceberg::spec::{
    FormatVersion, Schema, SortOrder, TableMetadata, TableMetadataBuilder, UnboundPartitionSpec,
};
use serde::Deserialize;

use super::access::{dotted, must, must_s3};
use super::commit::Staged;
use super::{Warehouse, prefix_of, split_location};
use crate::{TableError, TableResult};

/// `CreateTableRequest`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CreateTable {
    /// Table name.
    pub name: String,
    /// Where its files go (default: the namespace's location, then the name and a UUID).
    pub location: Option<String>,
    /// Its schema.
    pub schema: Schema,
    /// Its partition spec.
    pub partition_spec: Option<UnboundPartitionSpec>,
    /// Its sort order.
    pub write_order: Option<SortOrder>,
    /// Return the metadata without creating the table (a create transaction commits it).
    #[serde(default)]
    pub stage_create: bool,
    /// Table properties.
    #[serde(default)]
    pub properties: HashMap<String, String>,
}

/// `RegisterTableRequest`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RegisterTable {
    /// Table name.
    pub name: String,
    /// The `metadata.json` to adopt.
    pub metadata_location: String,
    /// Replace an existing table of that name.
    #[serde(default)]
    pub overwrite: bool,
}

/// A table's name in a request.
#[derive(Debug, Clone, Deserialize)]
pub struct TableIdent {
    /// Namespace levels.
    pub namespace: Vec<String>,
    /// Name.
    pub name: String,
}

/// A table as the REST catalog returns it.
pub struct Loaded {
    /// Its current `metadata.json` (none for a staged create).
    pub metadata_location: Option<String>,
    /// Its metadata.
    pub metadata: TableMetadata,
}

/// Checks a table or view name.
pub fn check_name(name: &str) -> TableResult<()> {
    if name.is_empty()
        || name.len() > 255
        || name.chars().any(|c| c.is_control() || c == '/')
        || name == "."
        || name == ".."
    {
        return Err(TableError::BadRequest(format!(
            "name {name:?} must be 1 to 255 bytes without control characters or '/'"
        )));
    }
    Ok(())
}

impl Warehouse {
    /// A users' table's record, or 404; 403 for a table an expansion writes.
    pub(crate) async fn user_table(
        &self,
        namespace: &str,
        name: &str,
    ) -> TableResult<(NamespaceRecord, TableRecord)> {
        let ns = self.namespace_or_404(namespace).await?;
        let rec = self
            .catalog
            .iceberg()
            .other_table(namespace, name)
            .await?
            .ok_or_else(|| TableError::NoSuchTable(format!("{}.{name}", dotted(namespace))))?;
        Ok((ns, rec))
    }

    /// 403 unless no expansion writes the table.
    pub(crate) async fn not_expansions(&self, namespace: &str, name: &str) -> TableResult<()> {
        if let Some((topic, source)) =
            crate::expansion::manage::writer_of(&self.tabler, namespace, name).await?
        {
            return Err(TableError::Forbidden(format!(
                "{}.{name} is written by the expansion of {topic}'s {source} column; only that expansion changes it",
                dotted(namespace)
            )));
        }
        Ok(())
    }

    /// 409 when a table or a view has the name. The namespace's generation, read
    /// before this check and raised by every create, makes a create that raced past it
    /// fail its commit.
    pub(crate) async fn name_is_free(&self, namespace: &str, name: &str) -> TableResult<()> {
        let reads = self.catalog.iceberg();
        if reads.other_table(namespace, name).await?.is_some()
            || reads.view(namespace, name).await?.is_some()
        {
            return Err(TableError::Conflict(format!(
                "{}.{name} already exists",
                dotted(namespace)
            )));
        }
        Ok(())
    }

    /// Reads a `metadata.json` from Eddy's S3.
    pub async fn read_metadata(&self, location: &str) -> TableResult<TableMetadata> {
        self.read_json(location).await
    }

    /// Loads a users' table.
    pub async fn load_table(&self, user: &str, namespace: &str, name: &str) -> TableResult<Loaded> {
        let (ns, rec) = self.user_table(namespace, name).await?;
        self.allow(
            user,
            "s3tables:GetTableMetadataLocation",
            &ns,
            namespace,
            name,
        )?;
        let metadata = self.read_metadata(&rec.metadata_location).await?;
        Ok(Loaded {
            metadata_location: Some(rec.metadata_location),
            metadata,
        })
    }

    /// Where a new table or view goes: the request's location, else the namespace's
    /// location, the name and a UUID (so a name dropped without purge can be reused).
    /// The caller must be able to write there.
    pub(crate) async fn place(
        &self,
        user: &str,
        ns: &NamespaceRecord,
        name: &str,
        location: Option<&str>,
    ) -> TableResult<String> {
        let location = match location {
            Some(l) => l.trim_end_matches('/').to_owned(),
            None => {
                let base = ns.properties.get("location").ok_or_else(|| {
                    TableError::BadRequest(
                        "the namespace has no location property; give the table a location".into(),
                    )
                })?;
                format!(
                    "{}/{name}-{}",
                    base.trim_end_matches('/'),
                    uuid::Uuid::new_v4().simple()
                )
            }
        };
        let (bucket, key) = split_location(&location)?;
        // A purge deletes everything under a table's location: a bucket's root would be
        // the whole bucket.
        if key.is_empty() {
            return Err(TableError::BadRequest(format!(
                "location {location} is a bucket's root; a table or view needs a prefix of its own"
            )));
        }
        let owner = self.bucket_owner(&bucket).await?;
        must_s3(
            &self.directory,
            user,
            "s3:PutObject",
            &bucket,
            &owner,
            &prefix_of(&key),
        )?;
        Ok(location)
    }

    /// Creates a table (or, staged, only returns its metadata).
    pub async fn create_table(
        &self,
        user: &str,
        namespace: &str,
        req: CreateTable,
    ) -> TableResult<Loaded> {
        check_name(&req.name)?;
        let ns = self.namespace_or_404(namespace).await?;
        self.allow(user, "s3tables:CreateTable", &ns, namespace, &req.name)?;
        self.name_is_free(namespace, &req.name).await?;
        let location = self
            .place(user, &ns, &req.name, req.location.as_deref())
            .await?;
        let mut properties = req.properties;
        let format_version = take_reserved(&mut properties)?.unwrap_or(FormatVersion::V2);
        let creation = iceberg::TableCreation::builder()
            .name(req.name.clone())
            .location(location)
            .schema(req.schema)
            .partition_spec_opt(req.partition_spec)
            .sort_order_opt(req.write_order)
            .properties(properties)
            .format_version(format_version)
            .build();
        let metadata = TableMetadataBuilder::from_table_creation(creation)
            .map_err(bad_metadata)?
            .build()
            .map_err(bad_metadata)?
            .metadata;
        if req.stage_create {
            return Ok(Loaded {
                metadata_location: None,
                metadata,
            });
        }
        let mut staged = Staged::default();
        let location = self
            .stage_new_table(&mut staged, namespace, &req.name, metadata.clone(), &ns, 0)
            .await?;
        self.commit_staged(staged).await?;
        tracing::info!(namespace = %dotted(namespace), table = %req.name, user, "table created");
        Ok(Loaded {
            metadata_location: Some(location),
            metadata,
        })
    }

    /// Stages a new table record at generation 1 (its namespace's generation raised, so
    /// a drop of the namespace cannot commit with it) and its first `metadata.json`.
    /// `replacing`: the generation of a table it overwrites (0: none).
    pub(crate) async fn stage_new_table(
        &self,
        staged: &mut Staged,
        namespace: &str,
        name: &str,
        metadata: TableMetadata,
        ns: &NamespaceRecord,
        replacing: u64,
    ) -> TableResult<String> {
        let (bucket, key) = split_location(metadata.location())?;
        let prefix = prefix_of(&key);
        let metadata_key = format!(
            "{prefix}metadata/00000-{}.metadata.json",
            uuid::Uuid::new_v4()
        );
        staged.bump_namespace(namespace, ns);
        let metadata_location = format!("s3://{bucket}/{metadata_key}");
        staged.ops.push(Op::Iceberg(IcebergOp::PutTable {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            expected: replacing,
            table: Some(TableRecord {
                generation: replacing + 1,
                bucket: bucket.clone(),
                prefix,
                metadata_location: metadata_location.clone(),
            }),
        }));
        staged.write(self.catalog.as_ref(), &bucket, metadata_key, &metadata)?;
        Ok(metadata_location)
    }

    /// Adopts an existing `metadata.json` as a table.
    pub async fn register_table(
        &self,
        user: &str,
        namespace: &str,
        req: RegisterTable,
    ) -> TableResult<Loaded> {
        check_name(&req.name)?;
        let ns = self.namespace_or_404(namespace).await?;
        self.allow(user, "s3tables:CreateTable", &ns, namespace, &req.name)?;
        let existing = self
            .catalog
            .iceberg()
            .other_table(namespace, &req.name)
            .await?;
        let expected = match existing {
            Some(_) if !req.overwrite => {
                return Err(TableError::Conflict(format!(
                    "table {}.{} already exists",
                    dotted(namespace),
                    req.name
                )));
            }
            Some(t) => {
                self.not_expansions(namespace, &req.name).await?;
                t.generation
            }
            None => 0,
        };
        if self
            .catalog
            .iceberg()
            .view(namespace, &req.name)
            .await?
            .is_some()
        {
            return Err(TableError::Conflict(format!(
                "{}.{} already exists (a view)",
                dotted(namespace),
                req.name
            )));
        }
        let metadata = self.read_metadata(&req.metadata_location).await?;
        let location = self
            .place(user, &ns, &req.name, Some(metadata.location()))
            .await?;
        let (bucket, key) = split_location(&location)?;
        let mut staged = Staged::default();
        staged.bump_namespace(namespace, &ns);
        staged.ops.push(Op::Iceberg(IcebergOp::PutTable {
            namespace: namespace.to_owned(),
            name: req.name.clone(),
            expected,
            table: Some(TableRecord {
                generation: expected + 1,
                bucket,
                prefix: prefix_of(&key),
                metadata_location: req.metadata_location.clone(),
            }),
        }));
        self.commit_staged(staged).await?;
        Ok(Loaded {
            metadata_location: Some(req.metadata_location),
            metadata,
        })
    }

    /// Renames a table (to another namespace too); its files stay where they are.
    pub async fn rename_table(
        &self,
        user: &str,
        from: (&str, &str),
        to: (&str, &str),
    ) -> TableResult<()> {
        let (src_ns, rec) = self.user_table(from.0, from.1).await?;
        self.not_expansions(from.0, from.1).await?;
        self.allow(user, "s3tables:RenameTable", &src_ns, from.0, from.1)?;
        let dst_ns = self.rename_target(user, to).await?;
        let mut staged = Staged::default();
        staged.bump_namespace(to.0, &dst_ns);
        staged.ops.push(Op::Iceberg(IcebergOp::ForgetTable {
            namespace: from.0.to_owned(),
            name: from.1.to_owned(),
            expected: rec.generation,
        }));
        staged.ops.push(Op::Iceberg(IcebergOp::PutTable {
            namespace: to.0.to_owned(),
            name: to.1.to_owned(),
            expected: 0,
            table: Some(TableRecord {
                generation: 1,
                ..rec
            }),
        }));
        self.commit_staged(staged).await
    }

    /// Drops a table; with `purge`, every object under its location goes too (a delete
    /// the caller must be allowed to make there).
    pub async fn drop_table(
        &self,
        user: &str,
        namespace: &str,
        name: &str,
        purge: bool,
    ) -> TableResult<()> {
        let (ns, rec) = self.user_table(namespace, name).await?;
        self.not_expansions(namespace, name).await?;
        self.allow(user, "s3tables:DeleteTable", &ns, namespace, name)?;
        let op = if purge {
            let owner = self.bucket_owner(&rec.bucket).await?;
            must_s3(
                &self.directory,
                user,
                "s3:DeleteObject",
                &rec.bucket,
                &owner,
                &rec.prefix,
            )?;
            IcebergOp::PutTable {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                expected: rec.generation,
                table: None,
            }
        } else {
            IcebergOp::ForgetTable {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                expected: rec.generation,
            }
        };
        match self
            .catalog
            .commit(Transaction::new(vec![Op::Iceberg(op)]))
            .await
        {
            Ok(_) => {
                tracing::info!(namespace = %dotted(namespace), table = name, user, purge, "table dropped");
                Ok(())
            }
            Err(CatalogError::PreconditionFailed(why)) => Err(TableError::CommitFailed(why)),
            Err(e) => Err(e.into()),
        }
    }

    /// The users' tables of a namespace the caller may list.
    pub async fn list_tables(&self, user: &str, namespace: &str) -> TableResult<Vec<String>> {
        let ns = self.namespace_or_404(namespace).await?;
        must(
            &self.directory,
            user,
            "s3tables:ListTables",
            &super::access::namespace_resource(namespace),
            Some(&ns.owner),
        )?;
        Ok(self
            .catalog
            .iceberg()
            .other_tables()
            .await?
            .into_iter()
            .filter(|(n, _, _)| n == namespace)
            .map(|(_, name, _)| name)
            .collect())
    }
}

/// Takes the reserved properties out of a create's or a commit's properties, as Iceberg's
/// reference catalog does (Trino sends `format-version` with every create): the format
/// version they ask for is returned, the others (`uuid`, `current-snapshot-id`, ...)
/// describe a table and are not kept.
pub(crate) fn take_reserved(
    properties: &mut HashMap<String, String>,
) -> TableResult<Option<FormatVersion>> {
    let version = match properties.remove("format-version").as_deref() {
        None => None,
        Some("1") => Some(FormatVersion::V1),
        Some("2") => Some(FormatVersion::V2),
        Some("3") => Some(FormatVersion::V3),
        Some(v) => {
            return Err(TableError::BadRequest(format!(
                "format-version {v} is not 1, 2 or 3"
            )));
        }
    };
    for k in iceberg::spec::TableProperties::RESERVED_PROPERTIES {
        properties.remove(k);
    }
    Ok(version)
}

/// Metadata the iceberg crate refused to build: the request's fault.
pub(crate) fn bad_metadata(e: iceberg::Error) -> TableError {
    TableError::BadRequest(format!("invalid table metadata: {e}"))
}
