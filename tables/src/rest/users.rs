//! The routes of users' own namespaces, tables and views (`crate::warehouse`): request
//! bodies parsed, the warehouse called, results shaped as the Iceberg REST spec has them.
//! A path in a namespace users made is theirs; `kafka_topics` and the namespaces of
//! expansions' tables keep their own routes (`super`).

use std::collections::HashMap;

use bytes::Bytes;
use http::{Method, StatusCode};
use serde::{Deserialize, Serialize};

use super::{Request, Response, RestCatalog, json, no_content, query_param};
use crate::warehouse::commit::{CommitTable, CommitTransaction};
use crate::warehouse::namespaces::check_levels;
use crate::warehouse::tables::{CreateTable, Loaded, RegisterTable, TableIdent};
use crate::warehouse::views::{CommitView, CreateView, LoadedView};
use crate::{TableError, TableResult};

/// `CreateNamespaceRequest`.
#[derive(Deserialize)]
struct CreateNamespace {
    namespace: Vec<String>,
    #[serde(default)]
    properties: HashMap<String, String>,
}

/// `UpdateNamespacePropertiesRequest`.
#[derive(Deserialize)]
struct UpdateProperties {
    #[serde(default)]
    removals: Vec<String>,
    #[serde(default)]
    updates: HashMap<String, String>,
}

/// `UpdateNamespacePropertiesResponse`.
#[derive(Serialize)]
struct PropertiesResponse {
    updated: Vec<String>,
    removed: Vec<String>,
    missing: Vec<String>,
}

/// `RenameTableRequest`.
#[derive(Deserialize)]
struct Rename {
    source: TableIdent,
    destination: TableIdent,
}

/// `LoadTableResult` and `CommitTableResponse` (the latter ignores `config`).
#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct TableResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata_location: Option<String>,
    metadata: iceberg::spec::TableMetadata,
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<HashMap<String, String>>,
}

/// `LoadViewResult`.
#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct ViewResponse {
    metadata_location: String,
    metadata: iceberg::spec::ViewMetadata,
    config: HashMap<String, String>,
}

/// A JSON body, or 400 naming what is wrong with it.
fn body<T: serde::de::DeserializeOwned>(b: &Bytes) -> TableResult<T> {
    serde_json::from_slice(b).map_err(|e| TableError::BadRequest(format!("request body: {e}")))
}

impl RestCatalog {
    /// Answers a request that is about users' namespaces, tables and views; `None`
    /// when it is not (another route answers it).
    pub(super) async fn route_users(
        &self,
        req: &Request,
        user: &str,
        segs: &[&str],
    ) -> Option<TableResult<Response>> {
        let m = &req.method;
        let w = &self.warehouse;
        match segs {
            ["v1", "namespaces"] if m == Method::POST => Some(
                async {
                    let b: CreateNamespace = body(&req.body)?;
                    let ns = check_levels(&b.namespace)?;
                    let rec = w.create_namespace(user, &ns, b.properties).await?;
                    json(
                        StatusCode::OK,
                        &super::model::GetNamespace {
                            namespace: b.namespace,
                            properties: rec.properties.into_iter().collect(),
                        },
                    )
                }
                .await,
            ),
            ["v1", "tables", "rename"] if m == Method::POST => Some(
                async {
                    let b: Rename = body(&req.body)?;
                    let from = check_levels(&b.source.namespace)?;
                    let to = check_levels(&b.destination.namespace)?;
                    w.rename_table(user, (&from, &b.source.name), (&to, &b.destination.name))
                        .await?;
                    Ok(no_content())
                }
                .await,
            ),
            ["v1", "views", "rename"] if m == Method::POST => Some(
                async {
                    let b: Rename = body(&req.body)?;
                    let from = check_levels(&b.source.namespace)?;
                    let to = check_levels(&b.destination.namespace)?;
                    w.rename_view(user, (&from, &b.source.name), (&to, &b.destination.name))
                        .await?;
                    Ok(no_content())
                }
                .await,
            ),
            ["v1", "transactions", "commit"] if m == Method::POST => Some(
                async {
                    let mut b: CommitTransaction = body(&req.body)?;
                    let offsets = match b.eddy_kafka_offsets.take() {
                        Some(o) => {
                            crate::warehouse::offsets::ops(
                                self.tabler.catalog().as_ref(),
                                o,
                                |kind, name| self.may_read_kafka(user, kind, name),
                            )
                            .await?
                        }
                        None => Vec::new(),
                    };
                    w.commit_transaction(user, b, offsets).await?;
                    Ok(no_content())
                }
                .await,
            ),
            ["v1", "namespaces", ns, rest @ ..] => {
                let record = match w.namespace(ns).await {
                    Ok(r) => r?,
                    Err(e) => return Some(Err(e)),
                };
                Some(self.namespace_route(req, user, ns, &record, rest).await)
            }
            _ => None,
        }
    }

    async fn namespace_route(
        &self,
        req: &Request,
        user: &str,
        ns: &str,
        record: &catalog::NamespaceRecord,
        rest: &[&str],
    ) -> TableResult<Response> {
        let m = &req.method;
        let w = &self.warehouse;
        let levels: Vec<String> = ns.split('\u{1f}').map(str::to_owned).collect();
        match rest {
            [] if m == Method::GET || m == Method::HEAD => {
                crate::warehouse::access::must(
                    self.tokens.directory(),
                    user,
                    "s3tables:GetNamespace",
                    &crate::warehouse::access::namespace_resource(ns),
                    Some(&record.owner),
                )?;
                if m == Method::HEAD {
                    return Ok(no_content());
                }
                json(
                    StatusCode::OK,
                    &super::model::GetNamespace {
                        namespace: levels,
                        properties: record.properties.clone().into_iter().collect(),
                    },
                )
            }
            [] if m == Method::DELETE => {
                w.drop_namespace(user, ns).await?;
                Ok(no_content())
            }
            ["properties"] if m == Method::POST => {
                let b: UpdateProperties = body(&req.body)?;
                let c = w.update_properties(user, ns, b.removals, b.updates).await?;
                json(
                    StatusCode::OK,
                    &PropertiesResponse {
                        updated: c.updated,
                        removed: c.removed,
                        missing: c.missing,
                    },
                )
            }
            ["tables"] if m == Method::GET => {
                let names = w.list_tables(user, ns).await?;
                json(
                    StatusCode::OK,
                    &super::model::ListTables::page(&levels, names, req.query.as_deref())?,
                )
            }
            ["tables"] if m == Method::POST => {
                let b: CreateTable = body(&req.body)?;
                let loaded = w.create_table(user, ns, b).await?;
                self.table_response(req, user, loaded, true)
            }
            ["register"] if m == Method::POST => {
                let b: RegisterTable = body(&req.body)?;
                let loaded = w.register_table(user, ns, b).await?;
                self.table_response(req, user, loaded, true)
            }
            ["tables", table] if m == Method::GET => {
                let loaded = w.load_table(user, ns, table).await?;
                self.table_response(req, user, loaded, true)
            }
            ["tables", table] if m == Method::HEAD => {
                w.load_table(user, ns, table).await?;
                Ok(no_content())
            }
            ["tables", table] if m == Method::POST => {
                let b: CommitTable = body(&req.body)?;
                let loaded = w.commit_table(user, ns, table, b).await?;
                self.table_response(req, user, loaded, false)
            }
            ["tables", table] if m == Method::DELETE => {
                let purge = query_param(req.query.as_deref(), "purgeRequested")
                    .is_some_and(|v| v.eq_ignore_ascii_case("true"));
                w.drop_table(user, ns, table, purge).await?;
                Ok(no_content())
            }
            ["tables", table, "metrics"] if m == Method::POST => {
                w.load_table(user, ns, table).await?;
                super::check_metrics_report(&req.body)?;
                Ok(no_content())
            }
            ["tables", table, "credentials"] if m == Method::GET => {
                // The credentials for a table's files are the caller's own S3 keys
                // (docs/iceberg.md, "Where the files go"): the same as `config` holds.
                let loaded = w.load_table(user, ns, table).await?;
                let prefix = loaded.metadata.location().to_owned();
                json(
                    StatusCode::OK,
                    &serde_json::json!({
                        "storage-credentials": [{
                            "prefix": prefix,
                            "config": self.file_io_config(req, user),
                        }]
                    }),
                )
            }
            ["views"] if m == Method::GET => {
                let names = w.list_views(user, ns).await?;
                json(
                    StatusCode::OK,
                    &super::model::ListTables::page(&levels, names, req.query.as_deref())?,
                )
            }
            ["views"] if m == Method::POST => {
                let b: CreateView = body(&req.body)?;
                let v = w.create_view(user, ns, b).await?;
                self.view_response(req, user, v)
            }
            ["views", view] if m == Method::GET => {
                let v = w.load_view(user, ns, view).await?;
                self.view_response(req, user, v)
            }
            ["views", view] if m == Method::HEAD => {
                w.load_view(user, ns, view).await?;
                Ok(no_content())
            }
            ["views", view] if m == Method::POST => {
                let b: CommitView = body(&req.body)?;
                let v = w.replace_view(user, ns, view, b).await?;
                self.view_response(req, user, v)
            }
            ["views", view] if m == Method::DELETE => {
                w.drop_view(user, ns, view).await?;
                Ok(no_content())
            }
            _ => Err(TableError::NotFound(format!(
                "no route for {m} {}",
                req.path
            ))),
        }
    }

    /// Whether `user` may `KafkaRead` a group or topic of this catalog's view.
    fn may_read_kafka(&self, user: &str, kind: &str, name: &str) -> bool {
        let context = iam::Context::default();
        let resource = format!("vast:kafka:{kind}:{}:{name}", self.view);
        self.tokens.directory().allows_kafka(
            Some(user),
            &iam::Request {
                action: "KafkaRead",
                resource: &resource,
                principal: Some(user),
                context: &context,
            },
        )
    }

    fn view_response(&self, req: &Request, user: &str, v: LoadedView) -> TableResult<Response> {
        json(
            StatusCode::OK,
            &ViewResponse {
                metadata_location: v.metadata_location,
                metadata: v.metadata,
                config: self.file_io_config(req, user),
            },
        )
    }

    fn table_response(
        &self,
        req: &Request,
        user: &str,
        loaded: Loaded,
        with_config: bool,
    ) -> TableResult<Response> {
        json(
            StatusCode::OK,
            &TableResponse {
                metadata_location: loaded.metadata_location,
                metadata: loaded.metadata,
                config: with_config.then(|| self.file_io_config(req, user)),
            },
        )
    }
}
