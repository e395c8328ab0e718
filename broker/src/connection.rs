//! One client connection: reads size-prefixed request frames (bounded), decodes them with
//! `kafka-protocol`, hands them to [`crate::api`] in arrival order, and writes the
//! responses back in the same order while several requests are in flight.
//!
//! A frame that is too large, truncated or undecodable closes the connection with a log
//! line, as Kafka does; nothing a client sends can panic the server or make it allocate
//! more than the frame limit. A frame's bytes are taken from the process-wide request
//! budget before its body is read and given back once its response is written, so when
//! the budget is spent connections stop reading and TCP holds the clients back. A
//! connection idle for [`crate::BrokerConfig::idle_timeout`] is closed.
//!
//! Each response is checked against the client's quotas ([`crate::quota`]); a throttled
//! one carries its wait in `throttle_time_ms`, and the connection handles nothing more
//! from the client until the wait is over.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind, SaslAuthenticateRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};

use crate::Broker;
use crate::api;
use crate::context::{Ctx, Reply};
use crate::legacy;
use crate::metrics::{ApiLabels, OutcomeLabels, QuotaLabels};
use crate::quota::{self, throttle::Cost};
use crate::sasl::session::{After, Session};

/// Why a connection was closed.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The socket failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The size prefix is out of range.
    #[error("frame of {0} bytes is outside 8..={1}")]
    Size(i64, usize),
    /// The request does not decode.
    #[error("undecodable {api} v{version} request: {reason}")]
    Decode {
        /// API key.
        api: i16,
        /// API version.
        version: i16,
        /// Decoder message.
        reason: String,
    },
    /// An API or version we do not serve.
    #[error("unsupported request: api {api} v{version}")]
    Unsupported {
        /// API key.
        api: i16,
        /// API version.
        version: i16,
    },
}

struct Pending {
    /// The request's share of the budget, held until its response is written.
    _budget: OwnedSemaphorePermit,
    correlation_id: i32,
    api: ApiKey,
    version: i16,
    started: Instant,
    client_id: String,
    /// The authenticated user (quotas are per user); `None` is `ANONYMOUS`.
    user: Option<Arc<str>>,
    /// A bare SASL token (after SaslHandshake v0), answered with a bare token.
    raw: bool,
    request_bytes: usize,
    reply: Timed,
}

/// A reply and the time spent computing it: the handler's own call and every poll of
/// its future, not the time it waits (for a commit, for a long-poll), which is what the
/// request quota measures.
struct Timed {
    reply: Reply,
    busy: Duration,
}

impl Future for Timed {
    type Output = (Option<ResponseKind>, Duration);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let start = Instant::now();
        let r = self.reply.as_mut().poll(cx);
        self.busy += start.elapsed();
        r.map(|v| (v, self.busy))
    }
}

/// What a connection is: where it was accepted and whether it must authenticate.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The address the client reached.
    pub local: SocketAddr,
    /// The client's address.
    pub peer: SocketAddr,
    /// The node that address is.
    pub node: i32,
    /// Whether the listener is SASL (`SASL_PLAINTEXT`, `SASL_SSL`).
    pub sasl: bool,
    /// Whether the connection is over TLS.
    pub secure: bool,
    /// The principal of a mutual-TLS client's certificate (a SASL user overrides it).
    pub principal: Option<Arc<str>>,
}

/// Serves one plaintext-socket connection until the client closes it, it misbehaves, or
/// shutdown.
pub async fn run(
    broker: Arc<Broker>,
    sock: TcpStream,
    peer: SocketAddr,
    node: i32,
    sasl: bool,
    shutdown: watch::Receiver<bool>,
) {
    let local = sock.local_addr().unwrap_or(peer);
    // The owned halves of a TCP stream take no lock per read or write.
    let (rd, wr) = sock.into_split();
    let at = Endpoint {
        local,
        peer,
        node,
        sasl,
        secure: false,
        principal: None,
    };
    serve(broker, rd, wr, at, shutdown).await;
}

/// Serves one connection over TLS (the handshake done).
pub async fn run_tls<S>(
    broker: Arc<Broker>,
    stream: S,
    at: Endpoint,
    shutdown: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (rd, wr) = tokio::io::split(stream);
    serve(broker, rd, wr, at, shutdown).await;
}

async fn serve<R, W>(
    broker: Arc<Broker>,
    mut rd: R,
    wr: W,
    at: Endpoint,
    mut shutdown: watch::Receiver<bool>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let Endpoint {
        local,
        peer,
        node,
        sasl,
        secure,
        principal,
    } = at;
    // On a view that names its users, a connection without SASL is let in only when its
    // certificate names one of them.
    if !sasl
        && !broker.config.view_users.is_empty()
        && !principal.as_deref().is_some_and(|p| broker.sasl.allowed(p))
    {
        tracing::info!(%peer, view = %broker.config.view, "closing a connection of a principal not allowed on this view");
        return;
    }
    broker.metrics.connections.inc();
    let mut session = sasl.then(|| Session::new(broker.sasl.clone()));
    // After a SaslHandshake v0 the client sends its SASL tokens as bare size-prefixed
    // frames, not SaslAuthenticate requests, until the exchange ends.
    let mut raw_tokens = false;
    let (tx, rx) = mpsc::channel::<Pending>(broker.config.max_in_flight.max(1));
    // The end of the client's throttle: nothing more is handled before it.
    let (mute_tx, mute_rx) = watch::channel(Instant::now());
    let writer = tokio::spawn(write_loop(broker.clone(), wr, rx, mute_tx));
    loop {
        let read = read_frame(
            &mut rd,
            if raw_tokens { 1 } else { 8 },
            broker.config.max_frame_bytes,
            &broker.request_budget,
        );
        let frame = tokio::select! {
            f = tokio::time::timeout(broker.config.idle_timeout, read) => match f {
                Ok(f) => f,
                Err(_) => {
                    tracing::debug!(%peer, "closing idle kafka connection");
                    break;
                }
            },
            _ = shutdown.changed() => break,
        };
        let raw = raw_tokens;
        let (result, budget) = match frame {
            Ok(Some((frame, budget))) if raw => (Ok(raw_token(frame)), budget),
            Ok(Some((frame, budget))) => (decode(frame), budget),
            Ok(None) => break,
            Err(e) => {
                if !matches!(e, FrameError::Io(_)) {
                    broker.metrics.bad_frames.inc();
                }
                tracing::info!(%peer, error = %e, "closing kafka connection");
                break;
            }
        };
        let (header, request) = match result {
            Ok(r) => r,
            Err(e) => {
                if !matches!(e, FrameError::Io(_)) {
                    broker.metrics.bad_frames.inc();
                }
                tracing::info!(%peer, error = %e, "closing kafka connection");
                break;
            }
        };
        let Ok(api) = ApiKey::try_from(header.request_api_key) else {
            break;
        };
        let muted_until = *mute_rx.borrow();
        if muted_until > Instant::now() {
            tokio::select! {
                _ = tokio::time::sleep_until(muted_until.into()) => {}
                _ = shutdown.changed() => break,
            }
        }
        let request_bytes = budget.num_permits();
        let started = Instant::now();
        let (sasl_reply, after) = match session.as_mut() {
            None => (None, After::Continue),
            Some(s) => match sasl_step(&broker, s, api, &request, started, peer) {
                Some(step) => step,
                None => {
                    // As Kafka: before authentication (or after the session lifetime)
                    // only the handshake is answered; anything else closes.
                    broker.metrics.sasl_refused.inc();
                    tracing::info!(%peer, ?api, "closing an unauthenticated SASL connection");
                    break;
                }
            },
        };
        let close = after == After::Close;
        // Only a SASL listener's session switches to bare tokens (after its v0 handshake).
        raw_tokens = match (&request, &sasl_reply) {
            (RequestKind::SaslHandshake(_), Some(_)) => !close && header.request_api_version == 0,
            (RequestKind::SaslAuthenticate(_), Some(_)) => raw && after == After::Continue,
            _ => raw_tokens,
        };
        let user = session
            .as_ref()
            .and_then(Session::principal)
            .or_else(|| principal.clone());
        // A legacy version's handler runs as the oldest version the codec has.
        let handler_version = if legacy::is_legacy(api, header.request_api_version) {
            legacy::handler_version(api)
        } else {
            header.request_api_version
        };
        let ctx = Ctx {
            broker: broker.clone(),
            node,
            local,
            peer,
            version: handler_version,
            wire_version: header.request_api_version,
            client_id: header.client_id.as_ref().map(|s| s.to_string()),
            principal: user.clone(),
            secure,
        };
        let client_id = ctx.client_id.clone().unwrap_or_default();
        let reply = match sasl_reply {
            Some(r) => crate::context::ready(r),
            None => api::handle(ctx, request).await,
        };
        let pending = Pending {
            _budget: budget,
            correlation_id: header.correlation_id,
            api,
            version: header.request_api_version,
            started,
            client_id,
            user,
            raw,
            request_bytes,
            reply: Timed {
                reply,
                busy: started.elapsed(),
            },
        };
        if tx.send(pending).await.is_err() || close {
            break;
        }
    }
    drop(tx);
    let _ = writer.await;
    broker.metrics.connections.dec();
}

/// Reads one frame with its share of `budget`; `None` at a clean end of stream. The
/// buffer grows as bytes arrive, so a size prefix alone never makes the server allocate.
async fn read_frame<R: AsyncRead + Unpin>(
    rd: &mut R,
    min: usize,
    max: usize,
    budget: &Arc<Semaphore>,
) -> Result<Option<(Bytes, OwnedSemaphorePermit)>, FrameError> {
    let size = match rd.read_i32().await {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let size = usize::try_from(size)
        .ok()
        .filter(|s| (min..=max).contains(s))
        .ok_or(FrameError::Size(i64::from(size), max))?;
    // The broker sizes the budget to hold at least one frame of the largest size.
    let permits = u32::try_from(size).unwrap_or(u32::MAX);
    let permit = budget
        .clone()
        .acquire_many_owned(permits)
        .await
        .map_err(|_| std::io::Error::other("request budget closed"))?;
    let mut buf = BytesMut::with_capacity(size.min(64 << 10));
    while buf.len() < size {
        buf.reserve((size - buf.len()).min(1 << 20));
        let n = (&mut *rd)
            .take((size - buf.len()) as u64)
            .read_buf(&mut buf)
            .await?;
        if n == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
        }
    }
    Ok(Some((buf.freeze(), permit)))
}

/// A request on a SASL listener's connection: the handshake's answer and what follows
/// it, `(None, Continue)` for a request to hand to its API, or `None` when the request
/// may not be handled now (the connection closes).
fn sasl_step(
    broker: &Broker,
    session: &mut Session,
    api: ApiKey,
    request: &RequestKind,
    now: Instant,
    peer: SocketAddr,
) -> Option<(Option<ResponseKind>, After)> {
    if !session.admits(api, now) {
        return None;
    }
    match request {
        RequestKind::SaslHandshake(r) => {
            let (r, after) = session.handshake(r);
            Some((Some(ResponseKind::SaslHandshake(r)), after))
        }
        RequestKind::SaslAuthenticate(req) => {
            let (r, after) = session.authenticate(req, now);
            if after == After::Close {
                broker.directory.audit(
                    iam::audit::AuditEvent::now(
                        "kafka",
                        session.claimed(),
                        "SaslAuthenticate",
                        format!("vast:kafka:cluster:{}", broker.config.view),
                        iam::audit::Outcome::Refused,
                    )
                    .from(Some(peer.to_string()))
                    .because("SASL authentication failed"),
                );
            }
            let outcome = match after {
                After::Authenticated => Some("ok"),
                After::Close => Some("failed"),
                After::Continue => None,
            };
            if let Some(outcome) = outcome {
                broker
                    .metrics
                    .sasl_authentications
                    .get_or_create(&OutcomeLabels { outcome })
                    .inc();
            }
            Some((Some(ResponseKind::SaslAuthenticate(r)), after))
        }
        _ => Some((None, After::Continue)),
    }
}

/// A bare SASL token (SaslHandshake v0's exchange) as the SaslAuthenticate request it
/// stands for.
fn raw_token(frame: Bytes) -> (RequestHeader, RequestKind) {
    let header = RequestHeader::default()
        .with_request_api_key(ApiKey::SaslAuthenticate as i16)
        .with_request_api_version(0);
    let request = SaslAuthenticateRequest::default().with_auth_bytes(frame);
    (header, RequestKind::SaslAuthenticate(request))
}

/// Decodes one request frame (without its size prefix): the header, then the body at the
/// header's API and version. Anything else, including a version we do not serve, is an
/// error, never a panic.
pub fn decode(mut frame: Bytes) -> Result<(RequestHeader, RequestKind), FrameError> {
    if frame.len() < 8 {
        return Err(FrameError::Decode {
            api: -1,
            version: -1,
            reason: format!("{} bytes is shorter than a request header", frame.len()),
        });
    }
    let api = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let key = ApiKey::try_from(api).map_err(|_| FrameError::Unsupported { api, version })?;
    let Some(range) = api::supported(key) else {
        return Err(FrameError::Unsupported { api, version });
    };
    if key == ApiKey::ApiVersions && version > range.1 {
        // Newer clients probe with their highest version: answer in v0 with our ranges.
        let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
        let header = RequestHeader::default()
            .with_request_api_key(api)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id);
        return Ok((header, RequestKind::ApiVersions(Default::default())));
    }
    if version < range.0 || version > range.1 {
        return Err(FrameError::Unsupported { api, version });
    }
    let fail = |reason: String| FrameError::Decode {
        api,
        version,
        reason,
    };
    let header = RequestHeader::decode(&mut frame, key.request_header_version(version))
        .map_err(|e| fail(e.to_string()))?;
    let request = if legacy::is_legacy(key, version) {
        legacy::decode(key, version, &mut frame).map_err(fail)?
    } else {
        RequestKind::decode(key, &mut frame, version).map_err(|e| fail(e.to_string()))?
    };
    Ok((header, request))
}

async fn write_loop<W: AsyncWrite + Unpin>(
    broker: Arc<Broker>,
    mut wr: W,
    mut rx: mpsc::Receiver<Pending>,
    mute: watch::Sender<Instant>,
) {
    while let Some(p) = rx.recv().await {
        let (mut response, busy) = p.reply.await;
        let labels = ApiLabels {
            api: format!("{:?}", p.api),
        };
        broker.metrics.requests.get_or_create(&labels).inc();
        if let Some(v) = &broker.config.view_metrics {
            let view = crate::metrics::ViewApiLabels {
                view: broker.config.view.clone(),
                api: labels.api.clone(),
            };
            v.requests.get_or_create(&view).inc();
            v.latency
                .get_or_create(&view)
                .observe(p.started.elapsed().as_secs_f64());
            v.request_bytes
                .get_or_create(&crate::metrics::ViewLabels { view: view.view })
                .inc_by(p.request_bytes as u64);
        }
        broker
            .metrics
            .latency
            .get_or_create(&labels)
            .observe(p.started.elapsed().as_secs_f64());
        broker
            .metrics
            .request_bytes
            .get_or_create(&labels)
            .inc_by(p.request_bytes as u64);
        if broker.quotas.any() {
            let cost = Cost {
                api: p.api,
                request_bytes: p.request_bytes,
                busy,
            };
            let now = Instant::now();
            let (wait, kind) = quota::throttle::throttle(
                &broker.quotas,
                p.user.as_deref().unwrap_or(quota::ANONYMOUS),
                &p.client_id,
                cost,
                response.as_mut(),
                now,
            );
            if let Some(kind) = kind {
                let labels = QuotaLabels {
                    quota: kind.label(),
                };
                broker.metrics.throttled.get_or_create(&labels).inc();
                broker
                    .metrics
                    .throttle_seconds
                    .get_or_create(&labels)
                    .inc_by(wait.as_secs_f64());
                mute.send_modify(|until| *until = (*until).max(now + wait));
            }
        }
        let Some(response) = response else {
            continue;
        };
        if p.raw {
            // A bare token answers a bare token; a failure gets none (the connection
            // closes), as Kafka does.
            if let ResponseKind::SaslAuthenticate(r) = &response
                && r.error_code == 0
            {
                let mut out = BytesMut::with_capacity(4 + r.auth_bytes.len());
                out.put_i32(r.auth_bytes.len() as i32);
                out.put_slice(&r.auth_bytes);
                if wr.write_all(&out).await.is_err() {
                    break;
                }
            }
            continue;
        }
        match encode(p.correlation_id, p.api, p.version, &response) {
            Ok(bytes) => {
                broker
                    .metrics
                    .response_bytes
                    .get_or_create(&labels)
                    .inc_by(bytes.len() as u64);
                if wr.write_all(&bytes).await.is_err() {
                    break;
                }
            }
            Err(e) => {
                tracing::error!(api = ?p.api, version = p.version, error = %e, "response encoding failed");
                break;
            }
        }
    }
    let _ = wr.shutdown().await;
}

fn encode(
    correlation_id: i32,
    api: ApiKey,
    version: i16,
    response: &ResponseKind,
) -> Result<Bytes, String> {
    let mut body = BytesMut::with_capacity(256);
    body.put_i32(0);
    // An ApiVersions answer to an unsupported version is always v0 (other errors, such
    // as REBOOTSTRAP_REQUIRED, are in the request's version).
    let version = match response {
        ResponseKind::ApiVersions(r)
            if r.error_code == kafka_protocol::error::ResponseError::UnsupportedVersion.code() =>
        {
            0
        }
        _ => version,
    };
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    header
        .encode(&mut body, api.response_header_version(version))
        .map_err(|e| e.to_string())?;
    if legacy::is_legacy(api, version) {
        legacy::encode(api, version, response, &mut body)?;
    } else {
        response
            .encode(&mut body, version)
            .map_err(|e| e.to_string())?;
    }
    let len = (body.len() - 4) as i32;
    body[..4].copy_from_slice(&len.to_be_bytes());
    Ok(body.freeze())
}
