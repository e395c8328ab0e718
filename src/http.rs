//! The HTTP endpoint: its server (on the shared accept loop of `hyper_serve`) and its
//! routes (`/health`, `/metrics`, the Iceberg REST catalog under `/iceberg`, the admin
//! API under `/admin`, the schema registry under `/schema-registry`, the web console
//! under `/console/`, where `/` leads). Every request gets
//! an id (`x-request-id`, the caller's own when usable) in its response and in the log
//! lines it causes, and its client address for the audit trail.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::node_catalog::NodeCatalog;
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use listener::tls::Tls;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::Instrument;

use crate::hyper_serve::serve_hyper;
use crate::metrics::Metrics;

/// A response (its body streams: an object the console downloads).
pub type Reply = Response<s3s::Body>;

/// Builds a response.
pub fn reply(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Reply {
    let mut r = Response::new(s3s::Body::from(body.into()));
    *r.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

/// Serves HTTP/1 on `listener` with `handler` until `shutdown` flips, then waits for
/// the requests in flight.
pub async fn serve<F, Fut>(
    name: &'static str,
    listener: TcpListener,
    tls: Option<Arc<Tls>>,
    limits: listener::Limits,
    metrics: Arc<Metrics>,
    handler: F,
    shutdown: watch::Receiver<bool>,
) where
    F: Fn(Request<Incoming>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Reply> + Send + 'static,
{
    let handler = Arc::new(handler);
    let counts = metrics.clone();
    let service = move |peer: std::net::SocketAddr| {
        let handler = handler.clone();
        let metrics = counts.clone();
        hyper::service::service_fn(move |mut req: Request<Incoming>| {
            req.extensions_mut().insert(Peer(peer));
            let id = request_id(&req);
            let span = tracing::info_span!(
                "http",
                request_id = %id,
                method = %req.method(),
                path = %req.uri().path()
            );
            let r = handler(req);
            let metrics = metrics.clone();
            async move {
                let mut r = r.await;
                let status = r.status().as_u16();
                metrics.count_request(name, status);
                tracing::debug!(status, "http request");
                if let Ok(v) = hyper::header::HeaderValue::from_str(&id) {
                    r.headers_mut().insert(REQUEST_ID, v);
                }
                Ok::<_, Infallible>(r)
            }
            .instrument(span)
        })
    };
    serve_hyper(name, listener, tls, limits, &metrics, shutdown, service).await;
}

/// The client's address, in each request's extensions (the audit trail's "from where").
#[derive(Debug, Clone, Copy)]
struct Peer(std::net::SocketAddr);

/// The client address of a request.
fn peer_addr(req: &Request<Incoming>) -> Option<std::net::SocketAddr> {
    req.extensions().get::<Peer>().map(|p| p.0)
}

/// The client address of a request, as text.
fn peer_of(req: &Request<Incoming>) -> Option<String> {
    peer_addr(req).map(|p| p.to_string())
}

/// The header carrying a request's id, in the request (a caller's own, kept) and in
/// every response; log lines of the request carry it as `request_id`.
const REQUEST_ID: &str = "x-request-id";

/// The caller's request id when it sent a usable one (1 to 128 visible ASCII
/// characters, as proxies and tracing gateways set it), else a new random one.
fn request_id(req: &Request<Incoming>) -> String {
    req.headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| (1..=128).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(|| uuid::Uuid::new_v4().simple().to_string(), str::to_owned)
}

/// A response still being computed.
pub type PendingReply = Pin<Box<dyn Future<Output = Reply> + Send>>;

/// Largest request body the Iceberg REST catalog reads (its requests are small forms
/// and JSON documents).
const MAX_REST_BODY: usize = 1 << 20;

/// The APIs the HTTP endpoint serves.
pub struct Apis {
    /// The default view's Iceberg REST catalog.
    pub iceberg: Arc<tables::rest::RestCatalog>,
    /// The other broker views' catalogs, by view.
    pub views: Vec<(String, Arc<tables::rest::RestCatalog>)>,
    /// The admin API.
    pub admin: Arc<admin::Admin>,
    /// The schema registry.
    pub registry: Arc<registry::Registry>,
    /// The web console, once the broker it makes its Kafka requests through runs.
    pub console: Arc<std::sync::OnceLock<Arc<console::Console>>>,
}

/// Routes of the HTTP endpoint; `kafka` is the catalog whose topic sizes and group lag
/// `/metrics` shows.
pub fn endpoint(
    catalog: Arc<NodeCatalog>,
    metrics: Arc<Metrics>,
    kafka: Arc<dyn catalog::Catalog>,
    apis: Apis,
) -> impl Fn(Request<Incoming>) -> PendingReply + Send + Sync + 'static {
    let Apis {
        iceberg,
        views,
        admin,
        registry,
        console,
    } = apis;
    move |req| {
        let path = req.uri().path();
        if path == "/" || path == "/console" {
            let mut r = reply(
                StatusCode::FOUND,
                "text/plain",
                "the console is at /console/\n",
            );
            r.headers_mut().insert(
                hyper::header::LOCATION,
                hyper::header::HeaderValue::from_static("/console/"),
            );
            return Box::pin(std::future::ready(r));
        }
        if let Some(rest) = path.strip_prefix("/console/") {
            let path = format!("/{rest}");
            return match console.get() {
                Some(c) => Box::pin(console_request(c.clone(), path, req)),
                None => Box::pin(std::future::ready(reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "text/plain",
                    "the console starts with the Kafka listener; try again in a moment\n",
                ))),
            };
        }
        // A broker view's own REST catalog: /iceberg/views/NAME/v1/...
        if let Some(rest) = req.uri().path().strip_prefix("/iceberg/views/") {
            let (name, path) = rest.split_once('/').unwrap_or((rest, ""));
            if let Some((_, view)) = views.iter().find(|(n, _)| n == name) {
                let path = format!("/{path}");
                return Box::pin(rest_request(Rest::Iceberg(view.clone()), path, req));
            }
            return Box::pin(std::future::ready(reply(
                StatusCode::NOT_FOUND,
                "application/json",
                format!(
                    r#"{{"error":{{"message":"no broker view {name:?}","type":"NoSuchWarehouseException","code":404}}}}"#
                ),
            )));
        }
        if let Some(rest) = req.uri().path().strip_prefix("/iceberg") {
            let path = rest.to_owned();
            return Box::pin(rest_request(Rest::Iceberg(iceberg.clone()), path, req));
        }
        if let Some(rest) = req.uri().path().strip_prefix("/schema-registry")
            && (rest.is_empty() || rest.starts_with('/'))
        {
            let path = rest.to_owned();
            return Box::pin(registry_request(registry.clone(), path, req));
        }
        if let Some(rest) = req.uri().path().strip_prefix("/admin/") {
            let path = format!("/{rest}");
            return Box::pin(rest_request(Rest::Admin(admin.clone()), path, req));
        }
        let r = match (req.method(), req.uri().path()) {
            (&Method::GET, "/health") => health(&catalog),
            (&Method::GET, "/metrics") => {
                let (metrics, catalog, kafka) = (metrics.clone(), catalog.clone(), kafka.clone());
                return Box::pin(async move {
                    if let Err(e) = metrics.refresh_kafka(kafka.as_ref()).await {
                        // The gauges keep their last values; the rest is still served.
                        tracing::warn!(error = %e, "topic sizes and group lag not read");
                    }
                    reply(
                        StatusCode::OK,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        metrics.render(catalog.drives()),
                    )
                });
            }
            _ => reply(StatusCode::NOT_FOUND, "text/plain", "not found\n"),
        };
        Box::pin(std::future::ready(r))
    }
}

/// Which JSON API a request is for.
enum Rest {
    Iceberg(Arc<tables::rest::RestCatalog>),
    Admin(Arc<admin::Admin>),
}

/// A request to the Iceberg REST catalog or the admin API (they share request and error
/// shapes and the body bound).
async fn rest_request(to: Rest, path: String, req: Request<Incoming>) -> Reply {
    let header = |name: hyper::header::HeaderName| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let authorization = header(hyper::header::AUTHORIZATION);
    let host = header(hyper::header::HOST);
    let method = req.method().clone();
    let query = req.uri().query().map(str::to_owned);
    let raw_path = req.uri().path().to_owned();
    let headers = req.headers().clone();
    let source = peer_of(&req);
    let body = match Limited::new(req.into_body(), MAX_REST_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return reply(
                StatusCode::PAYLOAD_TOO_LARGE,
                "application/json",
                r#"{"error":{"message":"request body too large or unreadable","type":"BadRequestException","code":413}}"#,
            );
        }
    };
    let req = tables::rest::Request {
        method,
        path,
        raw_path,
        headers,
        query,
        authorization,
        host,
        body,
        source,
    };
    let head = req.method == Method::HEAD;
    let r = match to {
        Rest::Iceberg(iceberg) => iceberg.handle(req).await,
        Rest::Admin(admin) => admin.handle(req).await,
    };
    if head {
        // A HEAD answer has no body, so it names no body type either.
        let mut out = reply(r.status, "", Bytes::new());
        out.headers_mut().remove(hyper::header::CONTENT_TYPE);
        return out;
    }
    reply(r.status, "application/json", r.body)
}

/// A request to the web console (`path` below `/console`).
async fn console_request(
    console: Arc<console::Console>,
    path: String,
    req: Request<Incoming>,
) -> Reply {
    let peer = peer_addr(&req).unwrap_or_else(|| std::net::SocketAddr::from(([0, 0, 0, 0], 0)));
    let (parts, body) = req.into_parts();
    console
        .handle(console::Request {
            method: parts.method,
            path,
            query: parts.uri.query().map(str::to_owned),
            headers: parts.headers,
            body: s3s::Body::from(body),
            peer,
        })
        .await
}

/// A request to the schema registry (bodies bounded as the REST catalog's are: schemas
/// are JSON documents or `.proto` files).
async fn registry_request(
    registry: Arc<registry::Registry>,
    path: String,
    req: Request<Incoming>,
) -> Reply {
    let authorization = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let method = req.method().clone();
    let query = req.uri().query().map(str::to_owned);
    let source = peer_of(&req);
    let body = match Limited::new(req.into_body(), MAX_REST_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return reply(
                StatusCode::PAYLOAD_TOO_LARGE,
                registry::CONTENT_TYPE,
                r#"{"error_code":413,"message":"request body too large or unreadable"}"#,
            );
        }
    };
    let r = registry
        .handle(registry::Request {
            method,
            path,
            query,
            authorization,
            body,
            source,
        })
        .await;
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut out = reply(status, registry::CONTENT_TYPE, r.body);
    if status == StatusCode::UNAUTHORIZED
        && let Ok(v) = r#"Basic realm="eddy-schema-registry""#.parse()
    {
        out.headers_mut().insert(hyper::header::WWW_AUTHENTICATE, v);
    }
    out
}

fn health(catalog: &NodeCatalog) -> Reply {
    let drives = catalog.drives().health();
    let offline = drives.iter().filter(|d| !d.online).count();
    let status = catalog.state(&drives);
    let code = if status == "failed" {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    let body = serde_json::json!({
        "status": status,
        "drives": drives,
        "drives_offline": offline,
    });
    reply(code, "application/json", body.to_string())
}
