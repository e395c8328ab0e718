//! The console's pages, embedded in the binary at build time: one HTML page, one
//! script and one style sheet, written by hand (no build step, no npm, no CDN: a fresh
//! clone builds with `cargo build` alone and the console works offline). Every page is
//! sent with a Content-Security-Policy that allows only its own script and style.

use bytes::Bytes;
use http::{HeaderValue, StatusCode};

use crate::Reply;

/// The files: name, type, bytes.
const FILES: &[(&str, &str, &[u8])] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_bytes!("../assets/index.html"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/app.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_bytes!("../assets/style.css"),
    ),
];

/// What a page may load: itself only; the API it calls is its own origin.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The file `name`, or 404.
pub fn page(name: &str) -> Reply {
    let Some((_, kind, bytes)) = FILES.iter().find(|(n, ..)| *n == name) else {
        return crate::error::ConsoleError::NotFound(format!("no console file {name}")).reply();
    };
    let mut r = http::Response::new(s3s::Body::from(Bytes::from_static(bytes)));
    *r.status_mut() = StatusCode::OK;
    let h = r.headers_mut();
    h.insert(http::header::CONTENT_TYPE, HeaderValue::from_static(kind));
    // Revalidated each load: a new build's pages are never mixed with an old one's.
    h.insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    );
    h.insert(
        http::HeaderName::from_static("content-security-policy"),
        HeaderValue::from_static(CSP),
    );
    h.insert(
        http::HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        http::HeaderName::from_static("x-frame-options"),
        HeaderValue::from_static("DENY"),
    );
    h.insert(
        http::HeaderName::from_static("referrer-policy"),
        HeaderValue::from_static("same-origin"),
    );
    r
}
