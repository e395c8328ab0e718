//! Bucket CORS: Put, Get and DeleteBucketCors (validated as AWS validates them, kept in
//! the catalog as S3 XML), preflight `OPTIONS` requests answered from the rules before
//! s3s sees them (browsers send them unsigned), and the `Access-Control-*` headers added to
//! every response to a request with an `Origin` that a rule allows.

use catalog::BucketConfigKind;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result, s3_error};

use crate::authz::OpAction;
use crate::{Gateway, bucket_config};

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new("PutBucketCors", "s3:PutBucketCORS"),
    OpAction::new("GetBucketCors", "s3:GetBucketCORS"),
    OpAction::new("DeleteBucketCors", "s3:PutBucketCORS"),
];

/// The most rules a configuration may hold (AWS's limit).
pub const MAX_RULES: usize = 100;
/// The methods a rule may allow.
const METHODS: [&str; 5] = ["GET", "PUT", "POST", "DELETE", "HEAD"];

/// PutBucketCors.
pub async fn put_bucket_cors(
    gw: &Gateway,
    req: S3Request<PutBucketCorsInput>,
) -> S3Result<S3Response<PutBucketCorsOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let config = req.input.cors_configuration;
    validate(&config)?;
    let document = bucket_config::to_xml(&config)?;
    bucket_config::put(gw, &b.name, BucketConfigKind::Cors, Some(document)).await?;
    Ok(S3Response::new(PutBucketCorsOutput::default()))
}

/// GetBucketCors.
pub async fn get_bucket_cors(
    gw: &Gateway,
    req: S3Request<GetBucketCorsInput>,
) -> S3Result<S3Response<GetBucketCorsOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let config: CORSConfiguration = bucket_config::get(gw, &b.name, BucketConfigKind::Cors)
        .await?
        .ok_or_else(|| {
            s3_error!(
                NoSuchCORSConfiguration,
                "The CORS configuration does not exist"
            )
        })?;
    Ok(S3Response::new(GetBucketCorsOutput {
        cors_rules: Some(config.cors_rules),
    }))
}

/// DeleteBucketCors (204 whether or not there was one).
pub async fn delete_bucket_cors(
    gw: &Gateway,
    req: S3Request<DeleteBucketCorsInput>,
) -> S3Result<S3Response<DeleteBucketCorsOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    bucket_config::put(gw, &b.name, BucketConfigKind::Cors, None).await?;
    Ok(S3Response::with_status(
        DeleteBucketCorsOutput::default(),
        StatusCode::NO_CONTENT,
    ))
}

fn invalid(msg: String) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidRequest, msg)
}

/// Checks a configuration as AWS does.
pub fn validate(config: &CORSConfiguration) -> S3Result<()> {
    if config.cors_rules.is_empty() || config.cors_rules.len() > MAX_RULES {
        return Err(s3_error!(
            MalformedXML,
            "The XML you provided was not well-formed or did not validate against our published schema"
        ));
    }
    for r in &config.cors_rules {
        if r.id.as_ref().is_some_and(|id| id.len() > 255) {
            return Err(s3_error!(
                InvalidArgument,
                "ID length should not exceed allowed limit of 255"
            ));
        }
        if r.allowed_methods.is_empty() || r.allowed_origins.is_empty() {
            return Err(s3_error!(
                MalformedXML,
                "A CORS rule needs an AllowedMethod and an AllowedOrigin"
            ));
        }
        if let Some(m) = r
            .allowed_methods
            .iter()
            .find(|m| !METHODS.contains(&m.as_str()))
        {
            return Err(invalid(format!(
                "Found unsupported HTTP method in CORS config. Unsupported method is {m}"
            )));
        }
        for o in &r.allowed_origins {
            if o.matches('*').count() > 1 {
                return Err(invalid(format!(
                    "AllowedOrigin \"{o}\" can not have more than one wildcard."
                )));
            }
        }
        for h in r.allowed_headers.iter().flatten() {
            if h.matches('*').count() > 1 {
                return Err(invalid(format!(
                    "AllowedHeader \"{h}\" can not have more than one wildcard."
                )));
            }
        }
    }
    Ok(())
}

/// Whether `value` matches `pattern`, which holds at most one `*` (any run of
/// characters).
fn wildcard(pattern: &str, value: &str, case_insensitive: bool) -> bool {
    let (p, v) = if case_insensitive {
        (pattern.to_ascii_lowercase(), value.to_ascii_lowercase())
    } else {
        (pattern.to_owned(), value.to_owned())
    };
    match p.split_once('*') {
        None => p == v,
        Some((head, tail)) => {
            v.len() >= head.len() + tail.len() && v.starts_with(head) && v.ends_with(tail)
        }
    }
}

/// The first rule that allows `origin` to use `method` with `headers` (preflight only;
/// empty for an actual request).
fn rule_for<'a>(
    config: &'a CORSConfiguration,
    origin: &str,
    method: &str,
    headers: &[String],
) -> Option<&'a CORSRule> {
    config.cors_rules.iter().find(|r| {
        r.allowed_origins.iter().any(|o| wildcard(o, origin, false))
            && r.allowed_methods.iter().any(|m| m == method)
            && headers.iter().all(|h| {
                r.allowed_headers
                    .iter()
                    .flatten()
                    .any(|a| wildcard(a, h, true))
            })
    })
}

/// The `Access-Control-*` headers of a rule's answer to `origin`.
fn allow(rule: &CORSRule, origin: &str, headers: &mut HeaderMap) {
    let any = rule.allowed_origins.iter().any(|o| o == "*");
    let mut set = |name: &'static str, value: String| {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(name, v);
        }
    };
    if any {
        set("access-control-allow-origin", "*".into());
    } else {
        set("access-control-allow-origin", origin.into());
        set("access-control-allow-credentials", "true".into());
    }
    set(
        "access-control-allow-methods",
        rule.allowed_methods
            .iter()
            .map(|m| m.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    );
    if let Some(e) = rule.expose_headers.as_ref().filter(|e| !e.is_empty()) {
        set("access-control-expose-headers", e.join(", "));
    }
    if let Some(age) = rule.max_age_seconds {
        set("access-control-max-age", age.to_string());
    }
    set(
        "vary",
        "Origin, Access-Control-Request-Headers, Access-Control-Request-Method".into(),
    );
}

/// An S3 error document answer (the listener adds its `RequestId`).
fn error(status: StatusCode, code: &str, message: &str) -> http::Response<s3s::Body> {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>{}</Message></Error>",
        escape(message)
    );
    let mut r = http::Response::new(s3s::Body::from(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/xml"));
    r
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The CORS side of the S3 listener: which bucket a request names, its preflight
/// answers, and the headers of actual requests.
#[derive(Clone)]
pub struct Cors {
    gw: Gateway,
    domains: crate::Domains,
}

impl Cors {
    /// CORS over the gateway's buckets, with the service's virtual-host domains.
    pub(crate) fn new(gw: Gateway, domains: crate::Domains) -> Self {
        Self { gw, domains }
    }

    /// The bucket a request names: `bucket.DOMAIN` hosts (read as s3s reads them), else
    /// the first path segment.
    pub fn bucket_of<B>(&self, req: &http::Request<B>) -> Option<String> {
        if let Some(b) = req
            .headers()
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| self.domains.split(h).1)
        {
            return Some(b.to_owned());
        }
        let path = req.uri().path().trim_start_matches('/');
        let first = path.split('/').next().filter(|s| !s.is_empty())?;
        percent_encoding::percent_decode_str(first)
            .decode_utf8()
            .ok()
            .map(|b| b.into_owned())
    }

    /// The configuration of a bucket, if any (an unreadable one counts as none).
    async fn config(&self, bucket: &str) -> Option<CORSConfiguration> {
        bucket_config::get(&self.gw, bucket, BucketConfigKind::Cors)
            .await
            .ok()
            .flatten()
    }

    /// The answer to a preflight `OPTIONS` request.
    pub async fn preflight<B>(&self, req: &http::Request<B>) -> http::Response<s3s::Body> {
        let h = req.headers();
        let text = |name: &str| h.get(name).and_then(|v| v.to_str().ok());
        let (Some(origin), Some(method)) = (text("origin"), text("access-control-request-method"))
        else {
            return error(
                StatusCode::BAD_REQUEST,
                "BadRequest",
                "Insufficient information. Origin request header needed.",
            );
        };
        let Some(bucket) = self.bucket_of(req) else {
            return error(
                StatusCode::BAD_REQUEST,
                "BadRequest",
                "CORSResponse: Bucket not found",
            );
        };
        if !matches!(self.gw.catalog().s3().bucket(&bucket).await, Ok(Some(_))) {
            return error(
                StatusCode::NOT_FOUND,
                "NoSuchBucket",
                "The specified bucket does not exist",
            );
        }
        let Some(config) = self.config(&bucket).await else {
            return error(
                StatusCode::FORBIDDEN,
                "AccessForbidden",
                "CORSResponse: CORS is not enabled for this bucket.",
            );
        };
        let requested: Vec<String> = text("access-control-request-headers")
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_ascii_lowercase())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let Some(rule) = rule_for(&config, origin, method, &requested) else {
            return error(
                StatusCode::FORBIDDEN,
                "AccessForbidden",
                "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.",
            );
        };
        let mut r = http::Response::new(s3s::Body::empty());
        allow(rule, origin, r.headers_mut());
        if !requested.is_empty()
            && let Ok(v) = HeaderValue::from_str(&requested.join(", "))
        {
            r.headers_mut().insert("access-control-allow-headers", v);
        }
        r
    }

    /// Adds the `Access-Control-*` headers to the response of an actual request from
    /// `origin` with `method`, when a rule of `bucket` allows it.
    pub async fn decorate(
        &self,
        bucket: &str,
        origin: &str,
        method: &Method,
        headers: &mut HeaderMap,
    ) {
        let Some(config) = self.config(bucket).await else {
            return;
        };
        if let Some(rule) = rule_for(&config, origin, method.as_str(), &[]) {
            allow(rule, origin, headers);
        }
    }
}

/// Whether a request is a CORS preflight (what the listener hands to [`Cors::preflight`]).
pub fn is_preflight<B>(req: &http::Request<B>) -> bool {
    req.method() == Method::OPTIONS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(origins: &[&str], methods: &[&str], headers: &[&str]) -> CORSRule {
        CORSRule {
            allowed_headers: Some(headers.iter().map(|s| s.to_string()).collect()),
            allowed_methods: methods.iter().map(|s| s.to_string()).collect(),
            allowed_origins: origins.iter().map(|s| s.to_string()).collect(),
            expose_headers: Some(vec!["ETag".into()]),
            id: None,
            max_age_seconds: Some(300),
        }
    }

    #[test]
    fn origins_match_with_one_wildcard() {
        assert!(wildcard(
            "http://*.example.com",
            "http://a.example.com",
            false
        ));
        assert!(!wildcard(
            "http://*.example.com",
            "http://example.org",
            false
        ));
        assert!(wildcard("*", "anything", false));
        assert!(wildcard("x-amz-*", "X-Amz-Date", true));
    }

    #[test]
    fn the_first_allowing_rule_answers() {
        let config = CORSConfiguration {
            cors_rules: vec![
                rule(&["http://a.test"], &["GET"], &[]),
                rule(
                    &["http://*.test"],
                    &["PUT", "GET"],
                    &["content-type", "x-amz-*"],
                ),
            ],
        };
        let r = rule_for(&config, "http://b.test", "PUT", &["x-amz-date".into()]).unwrap();
        assert_eq!(r.allowed_methods, ["PUT", "GET"]);
        assert!(rule_for(&config, "http://b.test", "PUT", &["authorization".into()]).is_none());
        assert!(rule_for(&config, "http://b.test", "DELETE", &[]).is_none());
        assert!(rule_for(&config, "https://other", "GET", &[]).is_none());
        let mut h = HeaderMap::new();
        allow(&config.cors_rules[0], "http://a.test", &mut h);
        assert_eq!(h["access-control-allow-origin"], "http://a.test");
        assert_eq!(h["access-control-allow-credentials"], "true");
        assert_eq!(h["access-control-expose-headers"], "ETag");
        assert_eq!(h["access-control-max-age"], "300");
    }

    #[test]
    fn refusals_use_aws_codes() {
        let bad_method = CORSConfiguration {
            cors_rules: vec![rule(&["*"], &["PATCH"], &[])],
        };
        assert_eq!(
            validate(&bad_method).unwrap_err().code().as_str(),
            "InvalidRequest"
        );
        let two_wildcards = CORSConfiguration {
            cors_rules: vec![rule(&["http://*.*.test"], &["GET"], &[])],
        };
        assert_eq!(
            validate(&two_wildcards).unwrap_err().code().as_str(),
            "InvalidRequest"
        );
        let empty = CORSConfiguration { cors_rules: vec![] };
        assert_eq!(
            validate(&empty).unwrap_err().code().as_str(),
            "MalformedXML"
        );
    }
}
