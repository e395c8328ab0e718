//! The admin HTTP API, served under `/admin` on the HTTP port and described route by
//! route in `docs/admin-api.yaml`: users and identity policies ([`identities`], the
//! administrator's alone), topic expansions ([`expansions`]) and topic tables' checks
//! and repairs ([`topic_tables`]), the last two guarded by the topic's Kafka policies,
//! and function pipelines ([`pipelines`]), guarded by pipeline policies.
//! Requests carry the bearer tokens the Iceberg REST catalog grants
//! (`/iceberg/v1/oauth/tokens`), and errors are the REST catalog's error bodies, so one
//! client setup serves both.

pub mod expansions;
pub mod identities;
pub mod pipelines;
pub mod topic_tables;

use std::sync::Arc;

use tables::rest::{Request, Response, Tokens, error_response, must_topic, segments};
use tables::{TableError, TableResult, Tabler};

/// The admin API of one node (the default broker view's topics).
pub struct Admin {
    tabler: Arc<Tabler>,
    tokens: Arc<Tokens>,
    pipelines: Option<pipelines::PipelineApi>,
}

impl Admin {
    /// The admin API over `tabler`'s topics, accepting `tokens`' bearer tokens.
    pub fn new(tabler: Arc<Tabler>, tokens: Arc<Tokens>) -> Self {
        Self {
            tabler,
            tokens,
            pipelines: None,
        }
    }

    /// The same API, serving the pipelines routes too.
    pub fn with_pipelines(self, api: pipelines::PipelineApi) -> Self {
        Self {
            pipelines: Some(api),
            ..self
        }
    }

    /// Answers one request (its path below `/admin`).
    pub async fn handle(&self, req: Request) -> Response {
        let user = self.tokens.check(req.authorization.as_deref());
        let r = match &user {
            Err(e) => error_response(e),
            Ok(user) => self
                .route(&req, user)
                .await
                .unwrap_or_else(|e| error_response(&e)),
        };
        self.audit(&req, user.ok().as_deref(), &r);
        r
    }

    /// Records a change (a request other than a read that succeeded) or a refusal (401,
    /// 403) in the audit trail. Every admin route is administrative.
    fn audit(&self, req: &Request, user: Option<&str>, r: &Response) {
        let read = req.method == http::Method::GET || req.method == http::Method::HEAD;
        tables::rest::audit(self.tokens.directory(), "admin", req, user, r, !read);
    }

    async fn route(&self, req: &Request, user: &str) -> TableResult<Response> {
        let segments = segments(&req.path);
        let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
        let directory = self.tokens.directory();
        match segs.as_slice() {
            ["v1", "users", ..] | ["v1", "policies", ..] => {
                identities::route(directory, user, req, &segs).await
            }
            ["v1", "pipelines", ..] => match &self.pipelines {
                Some(api) => pipelines::route(api, directory, user, req, &segs).await,
                None => Err(TableError::NotFound("pipelines are not served here".into())),
            },
            // A repair rewrites a topic's table: a KafkaCreate, as a topic config change
            // is; so is a check, which reads every file of the table.
            ["v1", "topics", topic, "table", ..] => {
                must_topic(directory, "default", user, "KafkaCreate", topic)?;
                topic_tables::route(&self.tabler, req, &segs).await
            }
            // An expansion decides how a topic is tabled: a KafkaCreate, as a topic
            // config change is.
            ["v1", "topics", topic, ..] => {
                must_topic(directory, "default", user, "KafkaCreate", topic)?;
                expansions::route(&self.tabler, req, &segs).await
            }
            _ => Err(TableError::NotFound(format!(
                "no admin route for {} /admin{}",
                req.method, req.path
            ))),
        }
    }
}

/// A request body as JSON of the expected shape, or 400 naming what is wrong. Every body
/// is an object: serde would also take a struct from an array of its fields in order,
/// which would make `["key", "password"]` a user.
fn body_json<T: serde::de::DeserializeOwned>(req: &Request) -> TableResult<T> {
    let bad =
        |e: String| TableError::BadRequest(format!("request body is not the expected JSON: {e}"));
    let value: serde_json::Value =
        serde_json::from_slice(&req.body).map_err(|e| bad(e.to_string()))?;
    if !value.is_object() {
        return Err(bad("it must be a JSON object".into()));
    }
    serde_json::from_value(value).map_err(|e| bad(e.to_string()))
}
