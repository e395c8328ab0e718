//! The web console, served by `eddy serve` on the HTTP port under `/console/`: pages
//! embedded in the binary ([`assets`]), sign-in with a user's S3 access key and secret
//! and a session cookie ([`session`]), and the JSON the pages read. Every action the
//! console takes is a request of the protocol it belongs to, made in-process as the
//! signed-in user: Kafka requests through the broker's own handlers ([`kafka`]), S3
//! requests signed with the user's secret through the S3 front ([`buckets`]), the
//! Iceberg REST catalog and the admin API with the user's bearer token ([`apis`]). So the
//! same policies decide, the same audit trail records, and a refusal is the protocol's
//! own. The console adds only what a page needs on top: the live graphs' samples
//! ([`overview`]), topic and group pages ([`topics`], [`groups`]) and the audit log
//! ([`audit_log`]).

pub mod apis;
pub mod assets;
pub mod audit_log;
pub mod buckets;
pub mod error;
pub mod groups;
pub mod kafka;
pub mod overview;
pub mod session;
pub mod topics;

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::BodyExt;

pub use error::{ConsoleError, ConsoleResult};
use session::Sessions;

/// A response of the console: a body that may stream (an object being downloaded).
pub type Reply = http::Response<s3s::Body>;

/// Largest JSON body a console request may carry (forms: a topic, a record, a reset).
const MAX_JSON_BODY: usize = 1 << 20;

/// One request to the console (its path below `/console`).
pub struct Request {
    /// The method.
    pub method: Method,
    /// The path below `/console`, starting with `/` (or empty).
    pub path: String,
    /// The query, undecoded.
    pub query: Option<String>,
    /// The request's headers.
    pub headers: HeaderMap,
    /// The body (streamed on to S3 for an upload).
    pub body: s3s::Body,
    /// The browser's address.
    pub peer: SocketAddr,
}

impl Request {
    /// The query's value of `name`, decoded.
    pub fn param(&self, name: &str) -> Option<String> {
        form_urlencoded::parse(self.query.as_deref().unwrap_or_default().as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }

    /// The body as JSON of the expected shape (an object), or 400 saying what is wrong.
    pub async fn json<T: serde::de::DeserializeOwned>(self) -> ConsoleResult<T> {
        let bytes = http_body_util::Limited::new(self.body, MAX_JSON_BODY)
            .collect()
            .await
            .map_err(|_| ConsoleError::BadRequest("the body is too large or unreadable".into()))?
            .to_bytes();
        let value: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| ConsoleError::BadRequest(format!("the body is not JSON: {e}")))?;
        if !value.is_object() {
            return Err(ConsoleError::BadRequest(
                "the body must be a JSON object".into(),
            ));
        }
        serde_json::from_value(value).map_err(|e| {
            ConsoleError::BadRequest(format!("the body is not the expected JSON: {e}"))
        })
    }
}

/// What the S3 side of the console calls: the S3 front every S3 request goes through.
#[async_trait::async_trait]
pub trait S3Front: Send + Sync {
    /// Answers a request (signed by the console as its user) as it answers a client's.
    async fn call(&self, req: http::Request<s3s::Body>, peer: SocketAddr) -> Reply;
    /// Whether `user` may do `action` on `bucket` (and `key`), asked without acting on a
    /// refusal.
    async fn would_allow(&self, user: &str, action: &str, bucket: &str, key: Option<&str>) -> bool;
    /// The `Host` the S3 front is addressed by (path-style requests are signed for it).
    fn host(&self) -> String;
}

/// What the overview page shows of the node besides the graphs: its nodes and addresses,
/// drives with health and capacity, heal state (JSON the binary assembles).
#[async_trait::async_trait]
pub trait NodeStatus: Send + Sync {
    /// The current status.
    async fn status(&self) -> serde_json::Value;
    /// The broker views (`[[views]]`): name, listeners, bucket, users.
    fn views(&self) -> serde_json::Value;
}

/// The console of one node.
pub struct Console {
    sessions: Sessions,
    kafka: kafka::Kafka,
    s3: Arc<dyn S3Front>,
    iceberg: Arc<tables::rest::RestCatalog>,
    admin: Arc<admin::Admin>,
    overview: Arc<overview::Overview>,
    nodes: Arc<dyn NodeStatus>,
}

/// What a [`Console`] is built from.
pub struct Parts {
    /// The default view's broker, and the listener address and node id its requests are
    /// made as.
    pub kafka: kafka::Kafka,
    /// The S3 front.
    pub s3: Arc<dyn S3Front>,
    /// The Iceberg REST catalog (its tokens sign the session's catalog requests).
    pub iceberg: Arc<tables::rest::RestCatalog>,
    /// The admin API.
    pub admin: Arc<admin::Admin>,
    /// The graphs' samples.
    pub overview: Arc<overview::Overview>,
    /// Nodes and drives.
    pub nodes: Arc<dyn NodeStatus>,
    /// Whether the HTTP port is TLS (the cookie is then `Secure`).
    pub secure: bool,
}

impl Console {
    /// A console over `parts`.
    pub fn new(parts: Parts) -> Self {
        Self {
            sessions: Sessions::new(parts.iceberg.tokens().clone(), parts.secure),
            kafka: parts.kafka,
            s3: parts.s3,
            iceberg: parts.iceberg,
            admin: parts.admin,
            overview: parts.overview,
            nodes: parts.nodes,
        }
    }

    /// Answers one request.
    pub async fn handle(&self, req: Request) -> Reply {
        match self.route(req).await {
            Ok(r) => r,
            Err(e) => e.reply(),
        }
    }

    async fn route(&self, req: Request) -> ConsoleResult<Reply> {
        let path = req.path.trim_start_matches('/').to_owned();
        if req.method == Method::GET || req.method == Method::HEAD {
            if path.is_empty() || path == "index.html" {
                return Ok(assets::page("index.html"));
            }
            if let Some(name) = path.strip_prefix("assets/") {
                return Ok(assets::page(name));
            }
        }
        let Some(api) = path.strip_prefix("api/") else {
            return Err(ConsoleError::NotFound(format!("no console page /{path}")));
        };
        let api = api.to_owned();
        match (&req.method, api.as_str()) {
            (&Method::POST, "login") => return self.sessions.login(req).await,
            (&Method::POST, "logout") => return Ok(self.sessions.logout(&req)),
            _ => {}
        }
        let who = self.sessions.signed(&req)?;
        let segs: Vec<String> = api.split('/').map(decode).collect();
        let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
        match (req.method.clone(), segs.as_slice()) {
            (Method::GET, ["session"]) => Ok(json(
                StatusCode::OK,
                &session::describe(&who, &self.kafka, req.peer),
            )),
            // The drives' paths and the cluster's addresses are the administrator's;
            // everyone signed in sees the graphs.
            (Method::GET, ["overview"]) => Ok(json(
                StatusCode::OK,
                &serde_json::json!({
                    "nodes": if who.admin { Some(self.nodes.status().await) } else { None },
                    "series": self.overview.series(),
                }),
            )),
            (Method::GET, ["pipelines", name, "rates"]) => {
                apis::pipeline_rates(&self.admin, &self.overview, &who, req, name).await
            }
            (Method::GET, ["views"]) if who.admin => Ok(json(
                StatusCode::OK,
                &serde_json::json!({ "views": self.nodes.views() }),
            )),
            (Method::GET, ["views"]) => Err(ConsoleError::Forbidden(format!(
                "{} may not see the broker views (the administrator's)",
                who.user
            ))),
            (_, ["topics", ..]) => topics::route(&self.kafka, &who, req, &segs[1..]).await,
            (_, ["groups", ..]) => groups::route(&self.kafka, &who, req, &segs[1..]).await,
            (Method::GET, ["audit"]) => audit_log::route(&self.kafka, &who, &req).await,
            (Method::GET, ["buckets", bucket, "permissions"]) => {
                Ok(buckets::permissions(self.s3.as_ref(), &who, bucket).await)
            }
            (_, ["s3", ..]) => {
                buckets::proxy(self.s3.as_ref(), &who, req, &api["s3".len()..]).await
            }
            (Method::GET, ["tables", namespace, table, "rows"]) => {
                apis::preview(&self.iceberg, self.s3.as_ref(), &who, req, namespace, table).await
            }
            (_, ["iceberg", ..]) => {
                let rest = api["iceberg".len()..].to_owned();
                apis::iceberg(&self.iceberg, &who, req, rest).await
            }
            (_, ["admin", ..]) => {
                let rest = api["admin".len()..].to_owned();
                apis::admin(&self.admin, &who, req, rest).await
            }
            _ => Err(ConsoleError::NotFound(format!(
                "no console API {} /console/api/{api}",
                req.method
            ))),
        }
    }
}

/// A path segment, percent-decoded.
fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// A JSON response.
pub fn json(status: StatusCode, body: &impl serde::Serialize) -> Reply {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut r = http::Response::new(s3s::Body::from(Bytes::from(bytes)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-store"),
    );
    r
}

/// Whether a request changes something (it must then carry the session's CSRF token).
fn changes(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}
