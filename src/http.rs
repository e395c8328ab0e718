//! A small HTTP/1 accept loop with graceful shutdown for the HTTP endpoint, and its
//! routes (`/health`, `/metrics`).

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use catalog::EmbeddedCatalog;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::metrics::{Metrics, RequestLabels};

/// A response with a full body.
pub type Reply = Response<Full<Bytes>>;

/// Builds a response.
pub fn reply(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Reply {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

/// Serves HTTP/1 on `listener` with `handler` until `shutdown` flips, then waits for
/// the requests in flight.
pub async fn serve<F>(
    name: &'static str,
    listener: TcpListener,
    metrics: Arc<Metrics>,
    handler: F,
    mut shutdown: watch::Receiver<bool>,
) where
    F: Fn(Request<Incoming>) -> Reply + Send + Sync + 'static,
{
    let handler = Arc::new(handler);
    let graceful = GracefulShutdown::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(listener = name, error = %e, "accept failed");
                        continue;
                    }
                };
                let handler = handler.clone();
                let metrics = metrics.clone();
                let service = hyper::service::service_fn(move |req| {
                    let r = handler(req);
                    metrics
                        .requests
                        .get_or_create(&RequestLabels {
                            listener: name.into(),
                            status: r.status().as_u16().to_string(),
                        })
                        .inc();
                    async move { Ok::<_, Infallible>(r) }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service);
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(listener = name, error = %e, "connection ended with an error");
                    }
                });
            }
            _ = shutdown.changed() => break,
        }
    }
    graceful.shutdown().await;
}

/// Routes of the HTTP endpoint.
pub fn endpoint(
    catalog: Arc<EmbeddedCatalog>,
    metrics: Arc<Metrics>,
) -> impl Fn(Request<Incoming>) -> Reply + Send + Sync + 'static {
    move |req| match (req.method(), req.uri().path()) {
        (&Method::GET, "/health") => health(&catalog),
        (&Method::GET, "/metrics") => reply(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.render(catalog.drives()),
        ),
        _ => reply(StatusCode::NOT_FOUND, "text/plain", "not found\n"),
    }
}

fn health(catalog: &EmbeddedCatalog) -> Reply {
    let drives = catalog.drives().health();
    let offline = drives.iter().filter(|d| !d.online).count();
    let (status, code) = if catalog.is_failed() {
        ("failed", StatusCode::SERVICE_UNAVAILABLE)
    } else if offline > 0 {
        ("degraded", StatusCode::OK)
    } else {
        ("ok", StatusCode::OK)
    };
    let body = serde_json::json!({
        "status": status,
        "drives": drives,
        "drives_offline": offline,
    });
    reply(code, "application/json", body.to_string())
}
