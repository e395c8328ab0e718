//! The HTTP/1 accept loop the S3 and HTTP ports share (HTTPS when given a certificate):
//! the listener crate's connection cap, backoff and shutdown around hyper's connection
//! driver, with a graceful shutdown of each connection, and refused `Expect:
//! 100-continue` requests answered with the connection's close (`expect_continue`).

use std::sync::Arc;

use hyper::Request;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use listener::tls::Tls;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::expect_continue::CloseOnRefusal;
use crate::metrics::Metrics;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A service hyper's HTTP/1 connections can run on their own tasks, answering with
/// bodies `B`.
pub trait HttpService<B>:
    hyper::service::Service<
        Request<Incoming>,
        Response = hyper::Response<B>,
        Future: Send + 'static,
        Error: Into<BoxError>,
    > + Send
    + 'static
{
}

impl<S, B> HttpService<B> for S where
    S: hyper::service::Service<
            Request<Incoming>,
            Response = hyper::Response<B>,
            Future: Send + 'static,
            Error: Into<BoxError>,
        > + Send
        + 'static
{
}

/// A response body hyper can send from a connection's task.
pub trait HttpBody: hyper::body::Body<Data: Send, Error: Into<BoxError>> + Send + 'static {}

impl<B> HttpBody for B where B: hyper::body::Body<Data: Send, Error: Into<BoxError>> + Send + 'static
{}

/// Serves HTTP/1 on `listener` (HTTPS with `tls`) through the shared accept loop
/// (connection cap, backoff, shutdown); `service` makes each connection's service from
/// its peer's address.
pub async fn serve_hyper<S, B>(
    name: &'static str,
    listener: TcpListener,
    tls: Option<Arc<Tls>>,
    limits: listener::Limits,
    metrics: &Metrics,
    shutdown: watch::Receiver<bool>,
    mut service: impl FnMut(std::net::SocketAddr) -> S,
) where
    S: HttpService<B>,
    B: HttpBody,
{
    let stop = shutdown.clone();
    let on_connection = move |stream, peer| {
        serve_connection(
            name,
            stream,
            tls.clone(),
            CloseOnRefusal(service(peer)),
            limits.idle_timeout,
            stop.clone(),
        )
    };
    listener::serve(
        name,
        listener,
        limits,
        metrics.listeners.clone(),
        shutdown,
        on_connection,
        || {},
    )
    .await;
}

/// One HTTP/1 connection (after its TLS handshake, with `tls`): closed when it sits
/// `idle` without sending a request's headers, and finished gracefully (the request in
/// hand answered) on shutdown.
async fn serve_connection<S, B>(
    name: &'static str,
    stream: tokio::net::TcpStream,
    tls: Option<Arc<Tls>>,
    service: S,
    idle: std::time::Duration,
    shutdown: watch::Receiver<bool>,
) where
    S: HttpService<B>,
    B: HttpBody,
{
    match tls {
        None => drive(name, stream, service, idle, shutdown).await,
        Some(tls) => match tls.accept(stream, idle).await {
            Ok(stream) => drive(name, stream, service, idle, shutdown).await,
            Err(e) => tracing::debug!(listener = name, error = %e, "TLS handshake failed"),
        },
    }
}

async fn drive<I, S, B>(
    name: &'static str,
    io: I,
    service: S,
    idle: std::time::Duration,
    mut shutdown: watch::Receiver<bool>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
    S: HttpService<B>,
    B: HttpBody,
{
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(idle)
        .serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let ended = tokio::select! {
        r = conn.as_mut() => r,
        _ = shutdown.changed() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = ended {
        tracing::debug!(listener = name, error = %e, "connection ended with an error");
    }
}
