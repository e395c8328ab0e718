//! The admin API's topic tables (`/admin/v1/topics/{topic}/table...`): check that every
//! file a topic's table needs is there, and repair a table that lost some by rebuilding
//! it from the log. The caller has checked that the user may KafkaCreate the topic.
//!
//! | route | what |
//! |---|---|
//! | `GET /v1/topics/{topic}/table` | check the table's files (`tables::TableCheck`) |
//! | `POST /v1/topics/{topic}/table/repair` | rebuild it if broken, then seal it (`tables::TableRepair`) |

use http::{Method, StatusCode};
use tables::rest::{Request, Response, json};
use tables::{TableError, TableResult, Tabler};

/// Answers a topic-table request (`segs`: the path's segments below `/admin`).
pub async fn route(tabler: &Tabler, req: &Request, segs: &[&str]) -> TableResult<Response> {
    let m = &req.method;
    match segs {
        ["v1", "topics", topic, "table"] if m == Method::GET => {
            json(StatusCode::OK, &tabler.check(topic).await?)
        }
        ["v1", "topics", topic, "table", "repair"] if m == Method::POST => {
            json(StatusCode::OK, &tabler.repair(topic).await?)
        }
        _ => Err(TableError::NotFound(format!(
            "no admin route for {m} /admin{}",
            req.path
        ))),
    }
}
