//! The tables, pipelines and security pages' requests: `/console/api/iceberg/...` is a
//! request to the Iceberg REST catalog and `/console/api/admin/...` one to the admin API,
//! both with the signed-in user's bearer token, answered as a client's would be (the
//! same authorization, audit trail and error bodies).

use std::sync::Arc;

use http::{HeaderValue, Method};
use http_body_util::BodyExt;

use crate::session::Signed;
use crate::{ConsoleError, ConsoleResult, Reply, Request};

/// Largest body passed on (the catalog and the admin API take small JSON documents).
const MAX_BODY: usize = 1 << 20;

async fn rest_request(
    who: &Signed,
    req: Request,
    prefix: &str,
    path: String,
) -> ConsoleResult<tables::rest::Request> {
    let body = http_body_util::Limited::new(req.body, MAX_BODY)
        .collect()
        .await
        .map_err(|_| ConsoleError::BadRequest("the body is too large or unreadable".into()))?
        .to_bytes();
    let mut headers = http::HeaderMap::new();
    if let Some(t) = req.headers.get(http::header::CONTENT_TYPE) {
        headers.insert(http::header::CONTENT_TYPE, t.clone());
    }
    let path = if path.is_empty() {
        "/".to_owned()
    } else {
        path
    };
    let mut r = as_user(who, req.peer, prefix, path, body);
    r.method = req.method;
    r.headers = headers;
    r.query = req.query;
    Ok(r)
}

/// A GET of `path` below `prefix` (`/iceberg`, `/admin`) as `who` from `peer`, with
/// `body` (the other fields a caller may set).
fn as_user(
    who: &Signed,
    peer: std::net::SocketAddr,
    prefix: &str,
    path: String,
    body: bytes::Bytes,
) -> tables::rest::Request {
    tables::rest::Request {
        method: Method::GET,
        raw_path: format!("{prefix}{path}"),
        path,
        headers: http::HeaderMap::new(),
        query: None,
        authorization: Some(format!("Bearer {}", who.token)),
        host: None,
        body,
        source: Some(peer.ip().to_string()),
    }
}

fn reply(r: tables::rest::Response, head: bool) -> Reply {
    let body = if head { Vec::new() } else { r.body };
    let mut out = http::Response::new(s3s::Body::from(body));
    *out.status_mut() = r.status;
    out.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    out.headers_mut().insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-store"),
    );
    out
}

/// A request to the Iceberg REST catalog (`path` below `/iceberg`).
pub async fn iceberg(
    catalog: &Arc<tables::rest::RestCatalog>,
    who: &Signed,
    req: Request,
    path: String,
) -> ConsoleResult<Reply> {
    let head = req.method == Method::HEAD;
    let r = rest_request(who, req, "/iceberg", path).await?;
    Ok(reply(catalog.handle(r).await, head))
}

/// A request to the admin API (`path` below `/admin`).
pub async fn admin(
    admin: &Arc<admin::Admin>,
    who: &Signed,
    req: Request,
    path: String,
) -> ConsoleResult<Reply> {
    let head = req.method == Method::HEAD;
    let r = rest_request(who, req, "/admin", path).await?;
    Ok(reply(admin.handle(r).await, head))
}

/// Most rows a preview shows.
const MAX_PREVIEW_ROWS: usize = 100;

/// `GET /console/api/tables/NS/NAME/rows?limit=`: the table loaded from the catalog as
/// the user, then its first rows read through S3 as the user.
pub async fn preview(
    catalog: &Arc<tables::rest::RestCatalog>,
    s3: &dyn crate::S3Front,
    who: &Signed,
    req: Request,
    namespace: &str,
    table: &str,
) -> ConsoleResult<Reply> {
    let limit = req
        .param("limit")
        .and_then(|v| v.parse().ok())
        .unwrap_or(20usize)
        .clamp(1, MAX_PREVIEW_ROWS);
    let peer = req.peer;
    let enc = |s: &str| {
        percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
    };
    let path = format!(
        "/v1/namespaces/{}/tables/{}",
        enc(&namespace.replace('.', "\u{1f}")),
        enc(table)
    );
    let loaded = catalog
        .handle(as_user(who, peer, "/iceberg", path, bytes::Bytes::new()))
        .await;
    if !loaded.status.is_success() {
        return Ok(reply(loaded, false));
    }
    let v: serde_json::Value = serde_json::from_slice(&loaded.body)
        .map_err(|e| ConsoleError::Internal(format!("the catalog's answer: {e}")))?;
    let preview = tables::preview::rows(&v["metadata"], limit, |location| async move {
        crate::buckets::read_location(s3, who, peer, &location).await
    })
    .await;
    match preview {
        Ok(p) => Ok(crate::json(http::StatusCode::OK, &p)),
        Err(tables::TableError::Forbidden(m)) => Err(ConsoleError::Forbidden(m)),
        Err(e) => Err(ConsoleError::BadRequest(format!("no preview: {e}"))),
    }
}

/// `GET /console/api/pipelines/NAME/rates`: its links' rates, for those who may get the
/// pipeline (asked of the admin API as the user: its answer, if it refuses).
pub async fn pipeline_rates(
    admin: &Arc<admin::Admin>,
    overview: &crate::overview::Overview,
    who: &Signed,
    req: Request,
    name: &str,
) -> ConsoleResult<Reply> {
    let path = format!(
        "/v1/pipelines/{}",
        percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC)
    );
    let r = admin
        .handle(as_user(who, req.peer, "/admin", path, bytes::Bytes::new()))
        .await;
    if !r.status.is_success() {
        return Ok(reply(r, false));
    }
    Ok(crate::json(
        http::StatusCode::OK,
        &overview.link_rates(name),
    ))
}
