//! A Schema Registry compatible with Confluent's REST API, as its clients use it
//! (`SchemaRegistryClient`, the Avro, Protobuf and JSON Schema serializers, Kafka
//! Connect's converters), served on the HTTP port under `/schema-registry`. Schemas and
//! subjects live in the catalog (`catalog::SchemaOp`), so they are durable, shared by
//! every node, and commit in the catalog's transactions. `docs/schemas.md` describes the
//! API, the compatibility rules and the policy actions.

pub mod auth;
pub mod compatibility;
pub mod config;
pub mod error;
pub mod formats;
pub mod hook;
pub mod metrics;
pub mod register;
mod routes;
pub mod schemas;
pub mod store;
pub mod subjects;
pub mod validate;

use std::sync::Arc;

use bytes::Bytes;
pub use error::{RegistryError, RegistryResult};

/// The content type of every answer (clients also accept `application/json`).
pub const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

/// One request, its path below the registry's prefix.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method.
    pub method: http::Method,
    /// The path below `/schema-registry`, from its `/`.
    pub path: String,
    /// The query string.
    pub query: Option<String>,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// The body.
    pub body: Bytes,
    /// The client's address, when known (the audit trail's "from where").
    pub source: Option<String>,
}

/// One answer: a status and a JSON body.
#[derive(Debug, Clone)]
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// The JSON body.
    pub body: Bytes,
}

impl Response {
    /// 200 with `value`.
    pub fn ok(value: serde_json::Value) -> Self {
        Self {
            status: 200,
            body: Bytes::from(value.to_string()),
        }
    }

    /// The answer to an error.
    pub fn error(e: &RegistryError) -> Self {
        Self {
            status: e.status_and_code().0,
            body: Bytes::from(e.body().to_string()),
        }
    }
}

/// The registry of one node.
pub struct Registry {
    store: store::Store,
    directory: Arc<iam::Directory>,
}

impl Registry {
    /// The registry over `catalog`, its callers authenticated by `directory`'s users,
    /// counting into `metrics`.
    pub fn new(
        catalog: Arc<dyn catalog::Catalog>,
        directory: Arc<iam::Directory>,
        metrics: metrics::RegistryMetrics,
    ) -> Self {
        Self {
            store: store::Store::new(catalog).counting(metrics),
            directory,
        }
    }

    /// The same, committing registrations through `hook` (typed topic tables evolve in
    /// the registration's transaction).
    pub fn with_registrations(mut self, hook: Arc<dyn hook::Registrations>) -> Self {
        self.store = self.store.with_registrations(hook);
        self
    }

    /// Answers one request.
    pub async fn handle(&self, req: Request) -> Response {
        let user = auth::authenticate(&self.directory, req.authorization.as_deref());
        let r = match &user {
            Err(e) => Response::error(e),
            Ok(user) => {
                let caller = auth::Caller {
                    user: user.clone(),
                    directory: &self.directory,
                };
                match routes::route(&self.store, &caller, &req).await {
                    Ok(r) => r,
                    Err(e) => {
                        let (status, code) = e.status_and_code();
                        if status >= 500 {
                            tracing::warn!(%code, error = %e, path = %req.path, "schema registry request failed");
                        }
                        Response::error(&e)
                    }
                }
            }
        };
        // A refused caller is named by the user its credentials claim.
        let principal = user
            .ok()
            .or_else(|| auth::claimed_user(req.authorization.as_deref()));
        self.audit(&req, principal.as_deref(), &r);
        r
    }

    /// Records a change (a request other than a read that succeeded) or a refusal (401,
    /// 403) in the audit trail.
    fn audit(&self, req: &Request, principal: Option<&str>, r: &Response) {
        use iam::audit::{AuditEvent, Outcome, http_outcome};
        let read = req.method == http::Method::GET || req.method == http::Method::HEAD;
        let Some(outcome) = http_outcome(r.status, !read) else {
            return;
        };
        let mut event = AuditEvent::now(
            "schema-registry",
            principal,
            format!("{} /schema-registry{}", req.method, req.path),
            req.path.clone(),
            outcome,
        )
        .from(req.source.clone());
        if outcome == Outcome::Refused {
            let why = serde_json::from_slice::<serde_json::Value>(&r.body)
                .ok()
                .and_then(|v| v["message"].as_str().map(str::to_owned))
                .unwrap_or_default();
            event = event.because(why);
        }
        self.directory.audit(event);
    }
}
