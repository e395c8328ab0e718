//! Users' Iceberg views: created with a schema and a first version (SQL per dialect),
//! loaded, replaced (requirements and updates, as tables are committed), renamed and
//! dropped. A view's `metadata.json` lives under its location like a table's, written by
//! the catalog in the transaction that moves the view's pointer.

use std::collections::HashMap;

use catalog::{CatalogError, IcebergOp, Op, TableRecord, Transaction};
use iceberg::ViewUpdate;
use iceberg::spec::{Schema, ViewFormatVersion, ViewMetadata, ViewMetadataBuilder, ViewVersion};
use serde::Deserialize;

use super::access::{dotted, must, namespace_resource};
use super::commit::Staged;
use super::tables::check_name;
use super::{Warehouse, prefix_of, split_location};
use crate::{TableError, TableResult};

/// `CreateViewRequest`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CreateView {
    /// View name.
    pub name: String,
    /// Where its metadata goes (default: the namespace's location, the name, a UUID).
    pub location: Option<String>,
    /// Its schema.
    pub schema: Schema,
    /// Its first version.
    pub view_version: ViewVersion,
    /// View properties.
    #[serde(default)]
    pub properties: HashMap<String, String>,
}

/// `ViewRequirement`: the one the spec has.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub enum ViewRequirement {
    /// The view's UUID must be this one.
    #[serde(rename = "assert-view-uuid")]
    AssertViewUuid {
        /// The UUID.
        uuid: uuid::Uuid,
    },
}

/// `CommitViewRequest`.
#[derive(Debug, Deserialize)]
pub struct CommitView {
    /// What must hold.
    #[serde(default)]
    pub requirements: Vec<ViewRequirement>,
    /// The changes.
    #[serde(default)]
    pub updates: Vec<ViewUpdate>,
}

/// A view as the REST catalog returns it.
pub struct LoadedView {
    /// Its current `metadata.json`.
    pub metadata_location: String,
    /// Its metadata.
    pub metadata: ViewMetadata,
}

fn bad_view(e: iceberg::Error) -> TableError {
    TableError::BadRequest(format!("invalid view metadata: {e}"))
}

impl Warehouse {
    async fn stored_view(&self, namespace: &str, name: &str) -> TableResult<TableRecord> {
        self.catalog
            .iceberg()
            .view(namespace, name)
            .await?
            .ok_or_else(|| TableError::NoSuchView(format!("{}.{name}", dotted(namespace))))
    }

    /// The views of a namespace.
    pub async fn list_views(&self, user: &str, namespace: &str) -> TableResult<Vec<String>> {
        let ns = self.namespace_or_404(namespace).await?;
        must(
            &self.directory,
            user,
            "s3tables:ListTables",
            &namespace_resource(namespace),
            Some(&ns.owner),
        )?;
        Ok(self
            .catalog
            .iceberg()
            .views(namespace)
            .await?
            .into_iter()
            .map(|(n, _)| n)
            .collect())
    }

    /// Creates a view.
    pub async fn create_view(
        &self,
        user: &str,
        namespace: &str,
        req: CreateView,
    ) -> TableResult<LoadedView> {
        check_name(&req.name)?;
        let ns = self.namespace_or_404(namespace).await?;
        self.allow(user, "s3tables:CreateTable", &ns, namespace, &req.name)?;
        self.name_is_free(namespace, &req.name).await?;
        let location = self
            .place(user, &ns, &req.name, req.location.as_deref())
            .await?;
        let metadata = ViewMetadataBuilder::new(
            location.clone(),
            req.schema,
            req.view_version,
            ViewFormatVersion::V1,
            req.properties,
        )
        .map_err(bad_view)?
        .build()
        .map_err(bad_view)?
        .metadata;
        let mut staged = Staged::default();
        staged.bump_namespace(namespace, &ns);
        let metadata_location =
            self.stage_view(&mut staged, namespace, &req.name, 0, &location, &metadata)?;
        self.commit_staged(staged).await?;
        Ok(LoadedView {
            metadata_location,
            metadata,
        })
    }

    /// Stages a view's new `metadata.json` and pointer at generation `expected + 1`.
    fn stage_view(
        &self,
        staged: &mut Staged,
        namespace: &str,
        name: &str,
        expected: u64,
        location: &str,
        metadata: &ViewMetadata,
    ) -> TableResult<String> {
        let (bucket, key) = split_location(location)?;
        let prefix = prefix_of(&key);
        let metadata_key = format!(
            "{prefix}metadata/{expected:05}-{}.metadata.json",
            uuid::Uuid::new_v4()
        );
        let metadata_location = format!("s3://{bucket}/{metadata_key}");
        staged.write(self.catalog.as_ref(), &bucket, metadata_key, metadata)?;
        staged.ops.push(Op::Iceberg(IcebergOp::PutView {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            expected,
            view: Some(TableRecord {
                generation: expected + 1,
                bucket,
                prefix,
                metadata_location: metadata_location.clone(),
            }),
        }));
        Ok(metadata_location)
    }

    /// Loads a view.
    pub async fn load_view(
        &self,
        user: &str,
        namespace: &str,
        name: &str,
    ) -> TableResult<LoadedView> {
        let ns = self.namespace_or_404(namespace).await?;
        let rec = self.stored_view(namespace, name).await?;
        self.allow(
            user,
            "s3tables:GetTableMetadataLocation",
            &ns,
            namespace,
            name,
        )?;
        let metadata = self
            .read_json::<ViewMetadata>(&rec.metadata_location)
            .await?;
        Ok(LoadedView {
            metadata_location: rec.metadata_location,
            metadata,
        })
    }

    /// Replaces a view: requirements checked, updates applied.
    pub async fn replace_view(
        &self,
        user: &str,
        namespace: &str,
        name: &str,
        req: CommitView,
    ) -> TableResult<LoadedView> {
        let ns = self.namespace_or_404(namespace).await?;
        let rec = self.stored_view(namespace, name).await?;
        self.allow(
            user,
            "s3tables:UpdateTableMetadataLocation",
            &ns,
            namespace,
            name,
        )?;
        let current = self
            .read_json::<ViewMetadata>(&rec.metadata_location)
            .await?;
        for r in &req.requirements {
            match r {
                ViewRequirement::AssertViewUuid { uuid } if *uuid != current.uuid() => {
                    return Err(TableError::CommitFailed(format!(
                        "view {}.{name} has UUID {}, not {uuid}",
                        dotted(namespace),
                        current.uuid()
                    )));
                }
                ViewRequirement::AssertViewUuid { .. } => {}
            }
        }
        let mut b = ViewMetadataBuilder::new_from_metadata(current);
        for u in req.updates {
            b = match u {
                ViewUpdate::AssignUuid { uuid } => b.assign_uuid(uuid),
                ViewUpdate::UpgradeFormatVersion { format_version } => {
                    b.upgrade_format_version(format_version).map_err(bad_view)?
                }
                ViewUpdate::AddSchema { schema, .. } => b.add_schema(schema),
                ViewUpdate::SetLocation { location } => {
                    self.place(user, &ns, name, Some(&location)).await?;
                    b.set_location(location)
                }
                ViewUpdate::SetProperties { updates } => {
                    b.set_properties(updates).map_err(bad_view)?
                }
                ViewUpdate::RemoveProperties { removals } => b.remove_properties(&removals),
                ViewUpdate::AddViewVersion { view_version } => {
                    b.add_version(view_version).map_err(bad_view)?
                }
                ViewUpdate::SetCurrentViewVersion { view_version_id } => b
                    .set_current_version_id(view_version_id)
                    .map_err(bad_view)?,
            };
        }
        let metadata = b.build().map_err(bad_view)?.metadata;
        let location = format!("s3://{}/{}", rec.bucket, rec.prefix.trim_end_matches('/'));
        let mut staged = Staged::default();
        let metadata_location = self.stage_view(
            &mut staged,
            namespace,
            name,
            rec.generation,
            &location,
            &metadata,
        )?;
        self.commit_staged(staged).await?;
        Ok(LoadedView {
            metadata_location,
            metadata,
        })
    }

    /// Drops a view and its metadata files.
    pub async fn drop_view(&self, user: &str, namespace: &str, name: &str) -> TableResult<()> {
        let ns = self.namespace_or_404(namespace).await?;
        let rec = self.stored_view(namespace, name).await?;
        self.allow(user, "s3tables:DeleteTable", &ns, namespace, name)?;
        let op = Op::Iceberg(IcebergOp::PutView {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            expected: rec.generation,
            view: None,
        });
        match self.catalog.commit(Transaction::new(vec![op])).await {
            Ok(_) => Ok(()),
            Err(CatalogError::PreconditionFailed(why)) => Err(TableError::CommitFailed(why)),
            Err(e) => Err(e.into()),
        }
    }

    /// Renames a view (its metadata stays where it is).
    pub async fn rename_view(
        &self,
        user: &str,
        from: (&str, &str),
        to: (&str, &str),
    ) -> TableResult<()> {
        let src_ns = self.namespace_or_404(from.0).await?;
        let rec = self.stored_view(from.0, from.1).await?;
        self.allow(user, "s3tables:RenameTable", &src_ns, from.0, from.1)?;
        let dst_ns = self.rename_target(user, to).await?;
        let mut staged = Staged::default();
        staged.bump_namespace(to.0, &dst_ns);
        staged.ops.push(Op::Iceberg(IcebergOp::ForgetView {
            namespace: from.0.to_owned(),
            name: from.1.to_owned(),
            expected: rec.generation,
        }));
        staged.ops.push(Op::Iceberg(IcebergOp::PutView {
            namespace: to.0.to_owned(),
            name: to.1.to_owned(),
            expected: 0,
            view: Some(TableRecord {
                generation: 1,
                ..rec
            }),
        }));
        self.commit_staged(staged).await
    }
}
