//! The routes of buckets' metadata tables: namespace `b_<bucket>` of a bucket with a
//! metadata configuration holds `journal` (the journal topic's table) and, when enabled,
//! `inventory` (`crate::inventory`). They show what listing the bucket shows, so reading
//! them needs `s3:ListBucket` on the bucket (its owner and the administrator have it
//! unless a policy denies it); Eddy writes them, so every write is refused.

use std::collections::HashMap;

use http::{Method, StatusCode};
use notify::MetadataConfig;
use notify::metadata::{bucket_of_namespace, namespace};

use super::model::{GetNamespace, ListTables, LoadTable};
use super::{Request, Response, RestCatalog, check_metrics_report, json, no_content};
use crate::inventory::{self, JOURNAL, TABLE};
use crate::warehouse::access::s3_allows;
use crate::{TableError, TableResult};

impl RestCatalog {
    /// The metadata namespaces `user` may see: those of buckets with a metadata
    /// configuration whose listing the user may read.
    pub(super) async fn metadata_namespaces(&self, user: Option<&str>) -> TableResult<Vec<String>> {
        let mut out = Vec::new();
        for b in self.tabler.catalog().s3().buckets().await? {
            if !b.settings.contains_key(notify::metadata::SETTINGS_KEY) {
                continue;
            }
            if user.is_none_or(|u| self.may_list(u, &b.name, &b.owner)) {
                out.push(namespace(&b.name));
            }
        }
        Ok(out)
    }

    fn may_list(&self, user: &str, bucket: &str, owner: &str) -> bool {
        s3_allows(
            self.tokens.directory(),
            user,
            "s3:ListBucket",
            bucket,
            owner,
            None,
        )
    }

    /// Answers a request in a bucket's metadata namespace; `None` when the path is not
    /// in one (or the bucket keeps no metadata tables).
    pub(super) async fn route_metadata(
        &self,
        req: &Request,
        user: &str,
        segs: &[&str],
    ) -> Option<TableResult<Response>> {
        let ["v1", "namespaces", ns, rest @ ..] = segs else {
            return None;
        };
        let bucket = bucket_of_namespace(ns)?;
        let record = match self.tabler.catalog().s3().bucket(bucket).await {
            Ok(Some(r)) => r,
            Ok(None) => return None,
            Err(e) => return Some(Err(e.into())),
        };
        let config = match MetadataConfig::load(&record.settings) {
            Ok(Some(c)) => c,
            Ok(None) => return None,
            Err(e) => {
                return Some(Err(TableError::CorruptMetadata(
                    format!("bucket {bucket}"),
                    e.to_string(),
                )));
            }
        };
        if !self.may_list(user, bucket, &record.owner) {
            return Some(Err(TableError::Forbidden(format!(
                "{user} may not read the metadata tables of bucket {bucket}: they show what listing it shows, so they need s3:ListBucket on it"
            ))));
        }
        Some(
            self.metadata_route(req, user, ns, bucket, &config, rest)
                .await,
        )
    }

    async fn metadata_route(
        &self,
        req: &Request,
        user: &str,
        ns: &str,
        bucket: &str,
        config: &MetadataConfig,
        rest: &[&str],
    ) -> TableResult<Response> {
        let m = &req.method;
        let mut tables = vec![JOURNAL.to_owned()];
        if config.inventory {
            tables.push(TABLE.to_owned());
        }
        let known = |t: &str| tables.iter().any(|n| n == t);
        let no_table = |t: &str| TableError::NoSuchTable(format!("{ns}.{t}"));
        match rest {
            [] if m == Method::GET => json(
                StatusCode::OK,
                &GetNamespace {
                    namespace: vec![ns.to_owned()],
                    properties: HashMap::from([("bucket".to_owned(), bucket.to_owned())]),
                },
            ),
            [] if m == Method::HEAD => Ok(no_content()),
            ["tables"] if m == Method::GET => json(
                StatusCode::OK,
                &ListTables::page(&[ns.to_owned()], tables.clone(), req.query.as_deref())?,
            ),
            ["tables", t] if m == Method::HEAD => {
                if known(t) {
                    Ok(no_content())
                } else {
                    Err(no_table(t))
                }
            }
            ["tables", t] if m == Method::GET && *t == JOURNAL => {
                let state = match self.tabler.seal(&config.journal_topic).await {
                    Ok(s) => s,
                    Err(TableError::Catalog(catalog::CatalogError::UnknownTopic(_))) => {
                        return Err(TableError::NoSuchTable(format!(
                            "{ns}.{JOURNAL} (its topic {} was deleted)",
                            config.journal_topic
                        )));
                    }
                    Err(e) => return Err(e),
                };
                self.answer_load(req, user, state.metadata_location).await
            }
            ["tables", t] if m == Method::GET && known(t) => {
                let rec = inventory::seal(&self.tabler, bucket).await?;
                self.answer_load(req, user, rec.metadata_location).await
            }
            ["tables", t] if m == Method::GET => Err(no_table(t)),
            ["tables", t, "metrics"] if m == Method::POST => {
                if !known(t) {
                    return Err(no_table(t));
                }
                check_metrics_report(&req.body)?;
                Ok(no_content())
            }
            ["views"] if m == Method::GET => json(
                StatusCode::OK,
                &ListTables::page(&[ns.to_owned()], Vec::new(), req.query.as_deref())?,
            ),
            ["views", v] if m == Method::GET || m == Method::HEAD => {
                Err(TableError::NoSuchView(format!("{ns}.{v}")))
            }
            _ if m == Method::POST || m == Method::DELETE || m == Method::PUT => {
                Err(TableError::Forbidden(format!(
                    "{m} {}: the metadata tables of bucket {bucket} are written by Eddy with every object change; change what they keep with the bucket's metadata configuration (S3 UpdateBucketMetadataInventoryTableConfiguration, DeleteBucketMetadataConfiguration)",
                    req.path
                )))
            }
            _ => Err(TableError::NotFound(format!(
                "no route for {m} {}",
                req.path
            ))),
        }
    }

    /// A `LoadTableResult` for the table whose current metadata is at `location`.
    async fn answer_load(
        &self,
        req: &Request,
        user: &str,
        location: String,
    ) -> TableResult<Response> {
        let bytes = self.tabler.read_file(&location).await?;
        let metadata: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| TableError::CorruptMetadata(location.clone(), e.to_string()))?;
        json(
            StatusCode::OK,
            &LoadTable {
                metadata_location: location,
                metadata,
                config: self.file_io_config(req, user),
            },
        )
    }
}
