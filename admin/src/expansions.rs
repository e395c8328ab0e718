//! The admin API's topic expansions (`/admin/v1/topics/{topic}/expansion...`): attach,
//! read, drop and change a topic's blob expansion, and propose a schema from its records.
//! The caller has checked that the user may KafkaCreate the topic.
//!
//! | route | what |
//! |---|---|
//! | `PUT /v1/topics/{topic}/expansion` | attach (body: `expansion::spec::PutBody`) |
//! | `GET /v1/topics/{topic}/expansion[?source_column=key]` | the current expansion |
//! | `DELETE /v1/topics/{topic}/expansion[?source_column=key]` | drop it (the target stays) |
//! | `POST /v1/topics/{topic}/expansion/columns` | add or drop columns |
//! | `GET /v1/topics/{topic}/expansion/infer[?source_column=&sample=]` | propose a schema |
//! | `POST /v1/topics/{topic}/expansion/backfill[?source_column=key]` | expand older records once |

use http::{Method, StatusCode};
use tables::expansion::{infer, manage, spec};
use tables::rest::{Request, Response, json, no_content, query_param};
use tables::{TableError, TableResult, Tabler};

use crate::body_json;

/// Most records per partition `infer` reads.
const MAX_SAMPLE: usize = 100_000;

/// Answers an expansion request (`segs`: the path's segments below `/admin`).
pub async fn route(tabler: &Tabler, req: &Request, segs: &[&str]) -> TableResult<Response> {
    let m = &req.method;
    let q = req.query.as_deref();
    let source = || spec::source(&query_param(q, "source_column").unwrap_or("value".into()));
    match segs {
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
        ["v1", "topics", topic, "expansion", "backfill"] if m == Method::POST => json(
            StatusCode::OK,
            &manage::backfill(tabler, topic, source()?).await?,
        ),
        ["v1", "topics", topic, "expansion", "infer"] if m == Method::GET => {
            let sample = match query_param(q, "sample") {
                None => 1000,
                Some(s) => s
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_SAMPLE).contains(n))
                    .ok_or_else(|| {
                        TableError::BadRequest(format!("sample must be 1 to {MAX_SAMPLE} records"))
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
