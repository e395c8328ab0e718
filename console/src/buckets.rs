//! The buckets pages' requests: `/console/api/s3/PATH?QUERY` is the S3 request
//! `PATH?QUERY`, signed with the signed-in user's secret (SigV4, as AWS's SDKs sign,
//! payload unsigned so an upload streams) and answered by the S3 front exactly as a
//! client's would be: the same policies, notifications, audit trail and XML errors. The
//! pages read S3's own XML. Only the headers an upload or a download needs pass either
//! way, never the console's cookie; and every answer is sandboxed (`Content-Security-
//! Policy: sandbox`), so an object opened from the console's origin runs no script there.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode, sign,
};
use aws_sigv4::sign::v4;
use http::{HeaderName, HeaderValue, StatusCode};

use crate::session::Signed;
use crate::{ConsoleError, ConsoleResult, Reply, Request, S3Front, json};

/// The console's own query parameter: answer with `Content-Disposition: attachment`.
const DOWNLOAD: &str = "console-download";

/// Request headers passed on to S3 (what an upload, a ranged read or a conditional
/// needs); `x-amz-meta-*` too.
const REQUEST_HEADERS: &[&str] = &[
    "content-type",
    "content-length",
    "content-md5",
    "content-disposition",
    "content-encoding",
    "cache-control",
    "range",
    "if-match",
    "if-none-match",
    "x-amz-tagging",
];

/// Response headers passed back; `x-amz-*` too.
const RESPONSE_HEADERS: &[&str] = &[
    "content-type",
    "content-length",
    "content-range",
    "content-encoding",
    "accept-ranges",
    "etag",
    "last-modified",
];

/// The S3 request of `/console/api/s3{path}` as `who`.
pub async fn proxy(
    s3: &dyn S3Front,
    who: &Signed,
    req: Request,
    path: &str,
) -> ConsoleResult<Reply> {
    let path = if path.is_empty() { "/" } else { path };
    let download = req.param(DOWNLOAD).is_some();
    let query: Vec<(String, String)> =
        form_urlencoded::parse(req.query.as_deref().unwrap_or_default().as_bytes())
            .filter(|(k, _)| k != DOWNLOAD)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
    let query = if query.is_empty() {
        String::new()
    } else {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (k, v) in &query {
            q.append_pair(k, v);
        }
        // S3's canonical query encodes a space as %20, not +.
        format!("?{}", q.finish().replace('+', "%20"))
    };
    let uri = format!("http://{}{path}{query}", s3.host());
    let mut out = http::Request::builder()
        .method(req.method.clone())
        .uri(&uri)
        .body(req.body)
        .map_err(|e| ConsoleError::BadRequest(format!("not an S3 request: {e}")))?;
    let headers = out.headers_mut();
    headers.insert(
        http::header::HOST,
        HeaderValue::from_str(&s3.host()).map_err(|e| ConsoleError::Internal(e.to_string()))?,
    );
    for (name, value) in &req.headers {
        let n = name.as_str();
        if REQUEST_HEADERS.contains(&n) || n.starts_with("x-amz-meta-") {
            headers.insert(name.clone(), value.clone());
        }
    }
    sign_as(&mut out, who)?;
    let key_name = path.rsplit('/').next().unwrap_or("download").to_owned();
    let answer = s3.call(out, req.peer).await;
    let (parts, body) = answer.into_parts();
    let mut r = http::Response::new(body);
    *r.status_mut() = parts.status;
    for (name, value) in &parts.headers {
        let n = name.as_str();
        if RESPONSE_HEADERS.contains(&n) || n.starts_with("x-amz-") {
            r.headers_mut().insert(name.clone(), value.clone());
        }
    }
    let h = r.headers_mut();
    h.insert(
        HeaderName::from_static("content-security-policy"),
        HeaderValue::from_static("sandbox; default-src 'none'"),
    );
    h.insert(
        HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-store"),
    );
    if download && parts.status.is_success() {
        let encoded: String =
            percent_encoding::utf8_percent_encode(&key_name, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
        if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename*=UTF-8''{encoded}")) {
            h.insert(http::header::CONTENT_DISPOSITION, v);
        }
    }
    Ok(r)
}

/// Signs `req` with SigV4 as `who` (payload unsigned).
fn sign_as(req: &mut http::Request<s3s::Body>, who: &Signed) -> ConsoleResult<()> {
    let identity = Credentials::new(&who.user, &who.secret, None, None, "eddy-console").into();
    let mut settings = SigningSettings::default();
    // As S3 canonicalizes: the path encoded once, not normalized.
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region("us-east-1")
        .name("s3")
        .time(SystemTime::now())
        .settings(settings)
        .build()
        .map_err(|e| ConsoleError::Internal(format!("signing: {e}")))?
        .into();
    let headers: Vec<(&str, &str)> = req
        .headers()
        .iter()
        .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)))
        .collect();
    let uri = req.uri().to_string();
    let signable = SignableRequest::new(
        req.method().as_str(),
        &uri,
        headers.into_iter(),
        SignableBody::UnsignedPayload,
    )
    .map_err(|e| ConsoleError::BadRequest(format!("not a signable S3 request: {e}")))?;
    let (instructions, _) = sign(signable, &params)
        .map_err(|e| ConsoleError::Internal(format!("signing: {e}")))?
        .into_parts();
    instructions.apply_to_request_http1x(req);
    Ok(())
}

/// `GET /console/api/buckets/NAME/permissions`: which of the bucket page's buttons
/// would work for the user (asked of the same policies, without acting on a refusal).
pub async fn permissions(s3: &dyn S3Front, who: &Signed, bucket: &str) -> Reply {
    let mut can = serde_json::Map::new();
    for (name, action) in [
        ("list", "s3:ListBucket"),
        ("upload", "s3:PutObject"),
        ("download", "s3:GetObject"),
        ("delete", "s3:DeleteObject"),
        ("tag", "s3:PutObjectTagging"),
    ] {
        let key = (name != "list").then_some("*");
        can.insert(
            name.to_owned(),
            s3.would_allow(&who.user, action, bucket, key).await.into(),
        );
    }
    json(
        StatusCode::OK,
        &serde_json::json!({ "bucket": bucket, "can": can }),
    )
}

/// Largest table file the preview reads.
const MAX_PREVIEW_FILE: usize = 256 << 20;

/// The object at `location` (`s3://bucket/key`), read as `who` through the S3 front.
pub async fn read_location(
    s3: &dyn S3Front,
    who: &Signed,
    peer: std::net::SocketAddr,
    location: &str,
) -> tables::TableResult<bytes::Bytes> {
    use http_body_util::BodyExt;
    let path = location
        .strip_prefix("s3://")
        .or_else(|| location.strip_prefix("s3a://"))
        .ok_or_else(|| tables::TableError::BadRequest(format!("not an S3 location: {location}")))?;
    /// What a path segment keeps unencoded: S3's unreserved characters and `/`.
    const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~')
        .remove(b'/');
    let path = percent_encoding::utf8_percent_encode(path, SEGMENT).to_string();
    let mut req = http::Request::builder()
        .method(http::Method::GET)
        .uri(format!("http://{}/{path}", s3.host()))
        .header(http::header::HOST, s3.host())
        .body(s3s::Body::empty())
        .map_err(|e| tables::TableError::BadRequest(e.to_string()))?;
    sign_as(&mut req, who).map_err(|e| tables::TableError::BadRequest(e.to_string()))?;
    let r = s3.call(req, peer).await;
    let status = r.status();
    let body = http_body_util::Limited::new(r.into_body(), MAX_PREVIEW_FILE)
        .collect()
        .await
        .map_err(|e| tables::TableError::BadRequest(format!("reading {location}: {e}")))?
        .to_bytes();
    if status == StatusCode::FORBIDDEN {
        return Err(tables::TableError::Forbidden(format!(
            "{} may not read {location}",
            who.user
        )));
    }
    if !status.is_success() {
        return Err(tables::TableError::MissingFile(format!(
            "{location} ({status})"
        )));
    }
    Ok(body)
}
