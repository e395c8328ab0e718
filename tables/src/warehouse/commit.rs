//! Commits to users' tables: a commit's requirements are checked against the table's
//! current metadata and its updates applied to it (the iceberg crate's own rules), the
//! new `metadata.json` is written and the pointer moved from the generation it was read
//! at, in one catalog transaction. A commit of several tables (`/v1/transactions/commit`)
//! is one transaction too: all tables move or none. A racing writer's commit finds the
//! generation moved and gets 409 `CommitFailedException`, which clients retry.

use std::collections::HashSet;

use catalog::{CatalogError, IcebergOp, NamespaceRecord, Op, TableRecord, Transaction};
use iceberg::spec::{TableMetadata, TableMetadataBuilder};
use iceberg::{TableRequirement, TableUpdate};
use serde::Deserialize;

use super::access::dotted;
use super::tables::{Loaded, TableIdent, bad_metadata};
use super::{Warehouse, split_location};
use crate::objects::NewObjects;
use crate::{TableError, TableResult};

/// `CommitTableRequest`.
#[derive(Debug, Deserialize)]
pub struct CommitTable {
    /// The table (required in a multi-table commit; the path names it otherwise).
    pub identifier: Option<TableIdent>,
    /// What must hold of the current metadata.
    #[serde(default)]
    pub requirements: Vec<TableRequirement>,
    /// The changes.
    #[serde(default)]
    pub updates: Vec<TableUpdate>,
}

/// `CommitTransactionRequest`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CommitTransaction {
    /// One commit per table.
    pub table_changes: Vec<CommitTable>,
    /// Kafka consumer offsets committed with the tables (Eddy's extension).
    #[serde(default)]
    pub eddy_kafka_offsets: Option<super::offsets::KafkaOffsets>,
}

/// What one catalog transaction will do: its ops and the metadata files it publishes.
#[derive(Default)]
pub struct Staged {
    /// The ops.
    pub ops: Vec<Op>,
    objects: NewObjects,
    bumped: HashSet<String>,
}

impl Staged {
    /// Raises a namespace's generation once in this transaction.
    pub fn bump_namespace(&mut self, namespace: &str, ns: &NamespaceRecord) {
        if self.bumped.insert(namespace.to_owned()) {
            self.ops.push(Op::Iceberg(IcebergOp::PutNamespace {
                namespace: namespace.to_owned(),
                expected: ns.generation,
                record: Some(NamespaceRecord {
                    generation: ns.generation + 1,
                    ..ns.clone()
                }),
            }));
        }
    }

    /// Adds a `metadata.json` to publish (written to the drives now, published by the
    /// commit).
    pub fn write<T: serde::Serialize>(
        &mut self,
        catalog: &dyn catalog::Catalog,
        bucket: &str,
        key: String,
        metadata: &T,
    ) -> TableResult<()> {
        let bytes = serde_json::to_vec(metadata).map_err(|e| TableError::Task(e.to_string()))?;
        self.objects.add(
            catalog,
            bucket,
            key,
            bytes,
            "application/json",
            crate::now_ms(),
        )
    }
}

/// A commit's updates with the reserved properties of its `set-properties` taken out (a
/// `format-version` among them becomes the format upgrade it asks for).
fn with_reserved_applied(updates: Vec<TableUpdate>) -> TableResult<Vec<TableUpdate>> {
    let mut out = Vec::with_capacity(updates.len());
    for u in updates {
        match u {
            TableUpdate::SetProperties { mut updates } => {
                if let Some(format_version) = super::tables::take_reserved(&mut updates)? {
                    out.push(TableUpdate::UpgradeFormatVersion { format_version });
                }
                out.push(TableUpdate::SetProperties { updates });
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

impl Staged {
    /// Stages a table's next `metadata.json` (next to its others) and the move of its
    /// pointer there from the generation `rec` was read at; returns the new location.
    pub fn move_table(
        &mut self,
        catalog: &dyn catalog::Catalog,
        namespace: &str,
        name: &str,
        rec: &TableRecord,
        metadata: &TableMetadata,
    ) -> TableResult<String> {
        let (bucket, _) = split_location(&rec.metadata_location)?;
        let key = format!(
            "{}metadata/{:05}-{}.metadata.json",
            rec.prefix,
            rec.generation,
            uuid::Uuid::new_v4()
        );
        let location = format!("s3://{bucket}/{key}");
        self.write(catalog, &bucket, key, metadata)?;
        self.ops.push(Op::Iceberg(IcebergOp::PutTable {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            expected: rec.generation,
            table: Some(TableRecord {
                generation: rec.generation + 1,
                metadata_location: location.clone(),
                ..rec.clone()
            }),
        }));
        Ok(location)
    }
}

impl Warehouse {
    /// Commits what was staged: 409 when a table or namespace moved since it was read.
    pub(crate) async fn commit_staged(&self, staged: Staged) -> TableResult<()> {
        let Staged {
            mut ops, objects, ..
        } = staged;
        let mut objects = objects;
        ops.append(&mut objects.ops);
        let metrics = self.tabler.metrics();
        match self.catalog.commit(Transaction::new(ops)).await {
            Ok(_) => {
                metrics.user_commits.inc();
                Ok(())
            }
            Err(e) => {
                objects.discard(&self.catalog);
                Err(match e {
                    CatalogError::PreconditionFailed(why) => TableError::CommitFailed(why),
                    e => e.into(),
                })
            }
        }
    }

    /// Commits to one table.
    pub async fn commit_table(
        &self,
        user: &str,
        namespace: &str,
        name: &str,
        req: CommitTable,
    ) -> TableResult<Loaded> {
        let mut staged = Staged::default();
        let loaded = self
            .stage_commit(&mut staged, user, namespace, name, req)
            .await?;
        self.commit_staged(staged).await?;
        Ok(loaded)
    }

    /// Commits to several tables at once, with `also` (Kafka offsets): all or none.
    pub async fn commit_transaction(
        &self,
        user: &str,
        req: CommitTransaction,
        also: Vec<Op>,
    ) -> TableResult<()> {
        let mut staged = Staged::default();
        staged.ops.extend(also);
        let mut seen = HashSet::new();
        for change in req.table_changes {
            let ident = change.identifier.clone().ok_or_else(|| {
                TableError::BadRequest(
                    "every change of a multi-table commit names its table (identifier)".into(),
                )
            })?;
            let namespace = super::namespaces::check_levels(&ident.namespace)?;
            if !seen.insert((namespace.clone(), ident.name.clone())) {
                return Err(TableError::BadRequest(format!(
                    "{}.{} is changed twice in one commit",
                    dotted(&namespace),
                    ident.name
                )));
            }
            self.stage_commit(&mut staged, user, &namespace, &ident.name, change)
                .await?;
        }
        self.commit_staged(staged).await
    }

    /// Stages one table's commit: requirements checked, updates applied, the new
    /// `metadata.json` and the pointer's move added to `staged`.
    pub(crate) async fn stage_commit(
        &self,
        staged: &mut Staged,
        user: &str,
        namespace: &str,
        name: &str,
        req: CommitTable,
    ) -> TableResult<Loaded> {
        let ns = self.namespace_or_404(namespace).await?;
        let stored = self.catalog.iceberg().other_table(namespace, name).await?;
        let creating = req
            .requirements
            .iter()
            .any(|r| matches!(r, TableRequirement::NotExist));
        let Some(rec) = stored else {
            if !creating {
                return Err(TableError::NoSuchTable(format!(
                    "{}.{name}",
                    dotted(namespace)
                )));
            }
            self.allow(user, "s3tables:CreateTable", &ns, namespace, name)?;
            return self
                .stage_create(staged, user, namespace, name, &ns, req.updates)
                .await;
        };
        if creating {
            return Err(TableError::CommitFailed(format!(
                "table {}.{name} already exists",
                dotted(namespace)
            )));
        }
        self.not_expansions(namespace, name).await?;
        self.allow(
            user,
            "s3tables:UpdateTableMetadataLocation",
            &ns,
            namespace,
            name,
        )?;
        let current = self.read_metadata(&rec.metadata_location).await?;
        for r in &req.requirements {
            r.check(Some(&current))
                .map_err(|e| TableError::CommitFailed(e.message().to_owned()))?;
        }
        let mut builder = current.into_builder(Some(rec.metadata_location.clone()));
        for u in with_reserved_applied(req.updates)? {
            if let TableUpdate::SetLocation { location } = &u {
                self.place(user, &ns, name, Some(location)).await?;
            }
            builder = u.apply(builder).map_err(bad_metadata)?;
        }
        let metadata = builder.build().map_err(bad_metadata)?.metadata;
        let metadata_location =
            staged.move_table(self.catalog.as_ref(), namespace, name, &rec, &metadata)?;
        Ok(Loaded {
            metadata_location: Some(metadata_location),
            metadata,
        })
    }

    /// Stages the creation of a table from a create transaction's updates (a staged
    /// create, then `assert-create`): the schema, spec, sort order, location, properties
    /// and format version they carry make the table; the rest (snapshots, refs) apply
    /// on top.
    async fn stage_create(
        &self,
        staged: &mut Staged,
        user: &str,
        namespace: &str,
        name: &str,
        ns: &NamespaceRecord,
        updates: Vec<TableUpdate>,
    ) -> TableResult<Loaded> {
        let mut schema = None;
        let mut spec = None;
        let mut order = None;
        let mut location = None;
        let mut properties = std::collections::HashMap::new();
        let mut format_version = iceberg::spec::FormatVersion::V2;
        let mut rest = Vec::new();
        for u in updates {
            match u {
                TableUpdate::AddSchema { schema: s } if schema.is_none() => schema = Some(s),
                TableUpdate::AddSpec { spec: s } if spec.is_none() => spec = Some(s),
                TableUpdate::AddSortOrder { sort_order } if order.is_none() => {
                    order = Some(sort_order)
                }
                TableUpdate::SetLocation { location: l } => location = Some(l),
                TableUpdate::SetProperties { updates } => properties.extend(updates),
                TableUpdate::UpgradeFormatVersion { format_version: v } => format_version = v,
                TableUpdate::SetCurrentSchema { schema_id: -1 }
                | TableUpdate::SetDefaultSpec { spec_id: -1 }
                | TableUpdate::SetDefaultSortOrder { sort_order_id: -1 } => {}
                other => rest.push(other),
            }
        }
        if let Some(v) = super::tables::take_reserved(&mut properties)? {
            format_version = v;
        }
        let schema = schema.ok_or_else(|| {
            TableError::BadRequest("a create commit must add the table's schema".into())
        })?;
        let location = self.place(user, ns, name, location.as_deref()).await?;
        let creation = iceberg::TableCreation::builder()
            .name(name.to_owned())
            .location(location)
            .schema(schema)
            .partition_spec_opt(spec)
            .sort_order_opt(order)
            .properties(properties)
            .format_version(format_version)
            .build();
        let mut builder =
            TableMetadataBuilder::from_table_creation(creation).map_err(bad_metadata)?;
        for u in rest {
            builder = u.apply(builder).map_err(bad_metadata)?;
        }
        let metadata: TableMetadata = builder.build().map_err(bad_metadata)?.metadata;
        let metadata_location = self
            .stage_new_table(staged, namespace, name, metadata.clone(), ns, 0)
            .await?;
        Ok(Loaded {
            metadata_location: Some(metadata_location),
            metadata,
        })
    }
}
