//! The S3 listener: hyper serving the s3s service of the `s3gw` crate (over TLS when
//! given a certificate), with graceful shutdown (requests in flight finish) and request
//! counters by status and by S3 operation. CORS preflights are answered here, before s3s
//! (which has no `OPTIONS`), and responses to requests with an `Origin` get the bucket's
//! `Access-Control-*` headers. Form uploads (POST) are admitted a few at a time, and a
//! failed POST policy condition gets AWS's 403 (`s3gw::post_object`). Requests s3s would
//! misjudge are mended first (`s3gw::sigv2`, `s3gw::sigv4_date`), and error documents are
//! completed after (a request id, a message, AWS's status for a bad `X-Amz-Expires`).
//! Bucket configuration changes and requests refused for their signature go to the
//! audit trail from here (policy refusals from `s3gw::authz`).

use std::sync::Arc;

use hyper::Request;
use hyper::body::Incoming;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::metrics::Metrics;

/// Serves S3 on `listener` until `shutdown` flips, then waits for the requests in
/// flight.
pub async fn serve(
    listener: TcpListener,
    tls: Option<Arc<listener::tls::Tls>>,
    limits: listener::Limits,
    metrics: Arc<Metrics>,
    front: S3Front,
    shutdown: watch::Receiver<bool>,
) {
    let per_connection = move |peer: std::net::SocketAddr| {
        let front = front.clone();
        hyper::service::service_fn(move |req: Request<Incoming>| {
            let front = front.clone();
            async move { front.handle(req.map(s3s::Body::from), peer).await }
        })
    };
    crate::hyper_serve::serve_hyper(
        "s3",
        listener,
        tls,
        limits,
        &metrics,
        shutdown,
        per_connection,
    )
    .await;
}

/// Everything an S3 request goes through, whoever sent it: the S3 listener's clients,
/// and the web console (which signs its requests as its signed-in user).
#[derive(Clone)]
pub struct S3Front {
    service: s3s::service::S3Service,
    cors: s3gw::cors::Cors,
    post_gate: s3gw::post_object::Gate,
    gateway: s3gw::Gateway,
    metrics: Arc<Metrics>,
    directory: Arc<iam::Directory>,
    secure: s3gw::authz::SecureTransport,
    /// The S3 listener's address: the `Host` the console signs its requests for.
    host: String,
}

impl S3Front {
    /// The S3 service of `gateway` (`front`), its users in `directory`, counted in
    /// `metrics`; `secure`: the S3 listener (at `host`) is TLS.
    pub fn new(
        front: s3gw::Front,
        gateway: s3gw::Gateway,
        directory: Arc<iam::Directory>,
        metrics: Arc<Metrics>,
        secure: bool,
        host: String,
    ) -> Self {
        let s3gw::Front {
            service,
            cors,
            post_gate,
        } = front;
        Self {
            service,
            cors,
            post_gate,
            directory,
            gateway,
            metrics,
            secure: s3gw::authz::SecureTransport(secure),
            host,
        }
    }

    /// The `Host` of path-style requests to this front.
    pub fn host(&self) -> String {
        self.host.clone()
    }

    /// Whether `user` may do `action` on `bucket` (`key`), asked of the policies without
    /// acting on a refusal.
    pub async fn would_allow(
        &self,
        user: &str,
        action: &str,
        bucket: &str,
        key: Option<&str>,
    ) -> bool {
        let who = s3gw::authz::AuthzContext {
            principal: Some(user.to_owned()),
            context: s3gw::authz::context(Some(user), None, self.secure.0, None),
        };
        self.gateway
            .would_allow(&who, action, Some(bucket), key)
            .await
    }

    /// Answers one request from `peer`.
    pub async fn handle(
        &self,
        mut req: Request<s3s::Body>,
        peer: std::net::SocketAddr,
    ) -> Result<s3s::HttpResponse, s3s::HttpError> {
        let (service, cors, metrics) = (&self.service, &self.cors, &self.metrics);
        // The id goes into the response header and, through the extensions, into the
        // request's event records.
        let id = s3gw::RequestId::new();
        let header = hyper::header::HeaderValue::from_str(&id.0).ok();
        req.extensions_mut().insert(s3gw::ClientAddr(peer));
        req.extensions_mut().insert(self.secure);
        req.extensions_mut().insert(id);
        let operation = s3gw::OperationSlot::default();
        req.extensions_mut().insert(operation.clone());
        let party = s3gw::PartySlot::default();
        req.extensions_mut().insert(party.clone());
        // Cheap copies (shared buffers): the audit trail reads them only for a refused
        // request.
        let asked = (
            req.uri().clone(),
            req.headers().get(hyper::header::AUTHORIZATION).cloned(),
        );
        let origin = req
            .headers()
            .get(hyper::header::ORIGIN)
            .and_then(|o| o.to_str().ok())
            .map(str::to_owned);
        let cors_bucket = origin.as_ref().and_then(|_| cors.bucket_of(&req));
        let method = req.method().clone();
        let expires_refused = s3gw::expires_refusal(req.uri().query());
        s3gw::sigv2::canonical_bucket_path(&mut req);
        s3gw::sigv4_date::date_from_http_date(&mut req);
        let turn = self.post_gate.admit(&req).await;
        let mut r = if s3gw::cors::is_preflight(&req) {
            Ok(cors.preflight(&req).await)
        } else if turn.is_some() {
            service.call(with_file_name(req).await).await
        } else {
            service.call(req).await
        };
        drop(turn);
        if let Ok(resp) = r.as_mut()
            && method == hyper::Method::POST
            && resp.status() == hyper::StatusCode::BAD_REQUEST
            && let Some(doc) = resp
                .body()
                .bytes()
                .and_then(|b| s3gw::post_object::condition_refusal(&b))
        {
            *resp.status_mut() = hyper::StatusCode::FORBIDDEN;
            resp.headers_mut().remove(hyper::header::CONTENT_LENGTH);
            *resp.body_mut() = s3s::Body::from(bytes::Bytes::from(doc));
        }
        // s3s refuses a negative X-Amz-Expires as a malformed URL (400) before
        // the access check can answer as AWS does.
        if let (Ok(resp), Some(message)) = (r.as_mut(), expires_refused)
            && resp.status() == hyper::StatusCode::BAD_REQUEST
        {
            *resp.status_mut() = hyper::StatusCode::FORBIDDEN;
            resp.headers_mut().remove(hyper::header::CONTENT_LENGTH);
            *resp.body_mut() =
                s3s::Body::from(bytes::Bytes::from(s3gw::expires_refusal_document(message)));
        }
        if let (Ok(resp), Some(o), Some(b)) = (r.as_mut(), &origin, &cors_bucket)
            && method != hyper::Method::OPTIONS
        {
            cors.decorate(b, o, &method, resp.headers_mut()).await;
        }
        if let (Ok(resp), Some(h)) = (r.as_mut(), header) {
            // A 304 has no body, so no error document and no type for one.
            if resp.status() == hyper::StatusCode::NOT_MODIFIED {
                resp.headers_mut().remove(hyper::header::CONTENT_TYPE);
                *resp.body_mut() = s3s::Body::empty();
            }
            if resp.status().as_u16() >= 400
                && let Some(body) = resp.body().bytes()
                && let Some(doc) = h
                    .to_str()
                    .ok()
                    .and_then(|id| s3gw::error::completed_error(&body, id))
            {
                resp.headers_mut().remove(hyper::header::CONTENT_LENGTH);
                *resp.body_mut() = s3s::Body::from(bytes::Bytes::from(doc));
            }
            resp.headers_mut().insert("x-amz-request-id", h);
        }
        let status = r.as_ref().map_or(500, |r| r.status().as_u16());
        metrics.count_request("s3", status);
        let op = match operation.0.get() {
            Some(op) => op.as_str(),
            None if method == hyper::Method::OPTIONS => "Preflight",
            None => "Unknown",
        };
        metrics.count_s3(op, status);
        audit(&self.directory, op, status, &party, (&method, asked), peer);
        r
    }
}

/// A form upload with `${filename}` in its key field replaced by the uploaded file's name
/// (`s3gw::post_object::expand_filename`): the form's head is read ahead until the file
/// part's headers (at most `HEAD_LIMIT` bytes), rewritten if need be, and the rest of the
/// body streams on behind it.
async fn with_file_name(req: Request<s3s::Body>) -> Request<s3s::Body> {
    use futures::StreamExt;
    use http_body_util::BodyExt;
    use s3gw::post_object::{FormHead, HEAD_LIMIT, boundary, expand_filename};

    let Some(boundary) = req
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(boundary)
        .map(str::to_owned)
    else {
        return req;
    };
    let (mut parts, mut body) = req.into_parts();
    let mut head = Vec::new();
    let mut failed = None;
    let rewritten = loop {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    head.extend_from_slice(&data);
                }
            }
            Some(Err(e)) => {
                failed = Some(e);
                break None;
            }
            None => break None,
        }
        match expand_filename(&head, &boundary) {
            FormHead::NeedMore if head.len() < HEAD_LIMIT => {}
            FormHead::NeedMore | FormHead::Unchanged => break None,
            FormHead::Rewritten(h) => break Some(h),
        }
    };
    if let Some(new_head) = rewritten {
        let grown = new_head.len() as i64 - head.len() as i64;
        let length = parts
            .headers
            .get(hyper::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<i64>().ok());
        if let Some(n) = length {
            parts
                .headers
                .insert(hyper::header::CONTENT_LENGTH, (n + grown).into());
        }
        head = new_head;
    }
    let first = futures::stream::once(async move { Ok(bytes::Bytes::from(head)) });
    let rest = match failed {
        Some(e) => futures::stream::once(async move { Err(e) }).boxed(),
        None => body.into_data_stream().boxed(),
    };
    let frames = first.chain(rest).map(|r| r.map(hyper::body::Frame::data));
    Request::from_parts(
        parts,
        s3s::Body::http_body_unsync(http_body_util::StreamBody::new(frames)),
    )
}

/// Operations that change a bucket's configuration (or the bucket itself): audited
/// when they succeed.
fn changes_bucket(op: &str) -> bool {
    op == "CreateBucket"
        || op.starts_with("PutBucket")
        || op.starts_with("DeleteBucket")
        || matches!(
            op,
            "PutObjectLockConfiguration" | "PutPublicAccessBlock" | "DeletePublicAccessBlock"
        )
}

/// The access key a request's signature names (its `Authorization` header, or a
/// presigned URL's query), whether or not the signature holds: the audit trail's "who"
/// of a refused request.
fn claimed_key(
    uri: &hyper::Uri,
    authorization: Option<&hyper::header::HeaderValue>,
) -> Option<String> {
    let credential = authorization
        .and_then(|v| v.to_str().ok())
        .and_then(|a| {
            a.split_once("Credential=")
                .map(|(_, c)| c.to_owned())
                .or_else(|| a.strip_prefix("AWS ").map(str::to_owned))
        })
        .or_else(|| {
            form_urlencoded::parse(uri.query()?.as_bytes())
                .find(|(k, _)| k == "X-Amz-Credential" || k == "AWSAccessKeyId")
                .map(|(_, v)| v.into_owned())
        })?;
    let key = credential.split(['/', ':', ',']).next()?.trim();
    (!key.is_empty()).then(|| key.to_owned())
}

/// What a request asked for, as the audit trail names it: its URI and `Authorization`.
type Asked = (hyper::Uri, Option<hyper::header::HeaderValue>);

/// Records a bucket's configuration change, or a request refused before its operation
/// was known (a bad signature, an unknown key): the refusals of policies are recorded
/// where they are decided (`s3gw::authz`).
fn audit(
    directory: &iam::Directory,
    op: &str,
    status: u16,
    party: &s3gw::PartySlot,
    (method, (uri, authorization)): (&hyper::Method, Asked),
    peer: std::net::SocketAddr,
) {
    use iam::audit::{AuditEvent, Outcome};
    let source = Some(peer.ip().to_string());
    if (200..300).contains(&status) && changes_bucket(op) {
        let (principal, bucket) = party.0.get().cloned().unwrap_or_default();
        let resource = format!("arn:aws:s3:::{}", bucket.unwrap_or_default());
        directory.audit(
            AuditEvent::now(
                "s3",
                principal.as_deref(),
                format!("s3:{op}"),
                resource,
                Outcome::Changed,
            )
            .from(source),
        );
    } else if (status == 401 || status == 403) && op == "Unknown" {
        let target = format!("{method} {}", uri.path());
        let claimed = claimed_key(&uri, authorization.as_ref());
        directory.audit(
            AuditEvent::now(
                "s3",
                claimed.as_deref(),
                target.clone(),
                target,
                Outcome::Refused,
            )
            .from(source)
            .because("the signature or the access key was refused"),
        );
    }
}
