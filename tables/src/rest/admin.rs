//! The admin API on the HTTP port (`/admin/v1/...`), authenticated like the REST catalog
//! (bearer tokens from `/iceberg/v1/oauth/tokens`): a topic's expansion, and (for the
//! administrator, `iam_admin`) users and policies.
//!
//! | route | what |
//! |---|---|
//! | `PUT /v1/topics/{topic}/expansion` | attach (body: `expansion::spec::PutBody`) |
//! | `GET /v1/topics/{topic}/expansion[?source_column=key]` | the current expansion |
//! | `DELETE /v1/topics/{topic}/expansion[?source_column=key]` | drop it (the target stays) |
//! | `POST /v1/topics/{topic}/expansion/columns` | add or drop columns |
//! | `GET /v1/topics/{topic}/expansion/infer[?source_column=&sample=]` | propose a schema |

use http::{Method, StatusCode};

use super::{
    Request, Response, RestCatalog, error_response, json, no_content, query_param, segments,
};
use crate::expansion::{infer, manage, spec};
use crate::{TableError, TableResult};

/// Most records per partition `infer` reads.
const MAX_SAMPLE: usize = 100_000;

impl RestCatalog {
    /// Answers one admin request (its path below `/admin`).
    pub async fn handle_admin(&self, req: Request) -> Response {
        let result = match self.tokens.check(req.authorization.as_deref()) {
            Ok(user) => {
                let segments = segments(&req.path);
                let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
                match super::iam_admin::route(self.tokens.directory(), &user, &req, &segs).await {
                    Some(r) => r,
                    // An expansion decides how a topic is tabled: a KafkaCreate, as a
                    // topic config change is.
                    None => match segs.as_slice() {
                        ["v1", "topics", topic, ..] => match self.must(&user, "KafkaCreate", topic)
                        {
                            Ok(()) => self.admin_route(&req).await,
                            Err(e) => Err(e),
                        },
                        _ => self.admin_route(&req).await,
                    },
                }
            }
            Err(e) => Err(e),
        };
        result.unwrap_or_else(|e| error_response(&e))
    }

    async fn admin_route(&self, req: &Request) -> TableResult<Response> {
        let segments = segments(&req.path);
        let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
        let m = &req.method;
        let q = req.query.as_deref();
        let source = || spec::source(&query_param(q, "source_column").unwrap_or("value".into()));
        let tabler = self.tabler.as_ref();
        match segs.as_slice() {
            ["v1", "topics", topic, "expansion"] if m == Method::PUT => {
                let body: spec::PutBody = body_json(req)?;
                json(StatusCode::OK, &manage::put(tabler, topic, body).await?)
            }
            ["v1", "topics", topic, "expansion"] if m == Method::GET => json(
                StatusCode::OK,
                &manage::get(tabler, topic, source()?).await?,
            ),
            ["v1", "topics", topic, "expansion"] if m == Method::DELETE => {
                manage::drop(tabler, topic, source()?).await?;
                Ok(no_content())
            }
            ["v1", "topics", topic, "expansion", "columns"] if m == Method::POST => {
                let body: spec::ColumnsBody = body_json(req)?;
                json(StatusCode::OK, &manage::columns(tabler, topic, body).await?)
            }
            ["v1", "topics", topic, "expansion", "infer"] if m == Method::GET => {
                let sample = match query_param(q, "sample") {
                    None => 1000,
                    Some(s) => s
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (1..=MAX_SAMPLE).contains(n))
                        .ok_or_else(|| {
                            TableError::BadRequest(format!(
                                "sample must be 1 to {MAX_SAMPLE} records"
                            ))
                        })?,
                };
                json(
                    StatusCode::OK,
                    &infer::infer(tabler, topic, source()?, sample).await?,
                )
            }
            _ => Err(TableError::NotFound(format!(
                "no admin route for {m} /admin{}",
                req.path
            ))),
        }
    }
}

fn body_json<T: serde::de::DeserializeOwned>(req: &Request) -> TableResult<T> {
    serde_json::from_slice(&req.body)
        .map_err(|e| TableError::BadRequest(format!("request body is not the expected JSON: {e}")))
}
