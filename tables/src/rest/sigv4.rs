//! SigV4-signed catalog requests, as AWS's clients sign them for S3 Tables
//! (`rest.sigv4-enabled` in PyIceberg and Iceberg Java, signing name `s3tables` or
//! `execute-api`): the signature is recomputed from the request with the signer's S3
//! secret and compared, the date must be within 15 minutes, and the body must hash to
//! what the request says it does. The canonical request is the one AWS specifies for
//! services other than S3: the path percent-encoded again as it came over the wire,
//! the query's pairs decoded, re-encoded and sorted, the signed headers' values trimmed
//! with inner runs of spaces folded.

use std::time::{Duration, SystemTime};

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use super::Request;
use crate::{TableError, TableResult};

/// How far a request's date may be from the server's clock.
const MAX_SKEW: Duration = Duration::from_secs(15 * 60);

/// Service names a signature may be scoped to.
const SERVICES: &[&str] = &["s3tables", "execute-api", "glue"];

/// The parts of an `AWS4-HMAC-SHA256` `Authorization` header.
#[derive(Debug, PartialEq)]
struct Authorization<'a> {
    access_key: &'a str,
    date: &'a str,
    region: &'a str,
    service: &'a str,
    signed_headers: Vec<&'a str>,
    signature: &'a str,
}

fn unauthorized(why: &str) -> TableError {
    TableError::Unauthorized(format!("SigV4: {why}"))
}

fn parse(header: &str) -> TableResult<Authorization<'_>> {
    let rest = header
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .ok_or_else(|| unauthorized("not an AWS4-HMAC-SHA256 authorization"))?;
    let (mut credential, mut signed, mut signature) = (None, None, None);
    for part in rest.split(',').map(str::trim) {
        if let Some(v) = part.strip_prefix("Credential=") {
            credential = Some(v);
        } else if let Some(v) = part.strip_prefix("SignedHeaders=") {
            signed = Some(v);
        } else if let Some(v) = part.strip_prefix("Signature=") {
            signature = Some(v);
        }
    }
    let (Some(credential), Some(signed), Some(signature)) = (credential, signed, signature) else {
        return Err(unauthorized(
            "Credential, SignedHeaders and Signature are required",
        ));
    };
    let scope: Vec<&str> = credential.split('/').collect();
    let [access_key, date, region, service, "aws4_request"] = scope.as_slice() else {
        return Err(unauthorized(
            "the credential scope is not KEY/DATE/REGION/SERVICE/aws4_request",
        ));
    };
    Ok(Authorization {
        access_key,
        date,
        region,
        service,
        signed_headers: signed.split(';').collect(),
        signature,
    })
}

/// RFC 3986 encoding: everything but unreserved characters (and `/` when `keep_slash`).
fn encode(s: &[u8], keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) || (keep_slash && b == b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn canonical_query(query: Option<&str>) -> String {
    let mut pairs: Vec<(String, String)> = query
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let dec = |s: &str| percent_encoding::percent_decode_str(s).collect::<Vec<u8>>();
            (encode(&dec(k), false), encode(&dec(v), false))
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(data);
    m.finalize().into_bytes().to_vec()
}

/// `YYYYMMDDTHHMMSSZ` as a time.
fn amz_time(s: &str) -> Option<SystemTime> {
    let format = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let t = time::PrimitiveDateTime::parse(s, format).ok()?.assume_utc();
    let secs = u64::try_from(t.unix_timestamp()).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

/// Checks a SigV4-signed request; returns the signer's access key. `secret_of` gives a
/// user's S3 secret.
pub fn verify(
    req: &Request,
    secret_of: impl Fn(&str) -> Option<String>,
    now: SystemTime,
) -> TableResult<String> {
    let header = req.authorization.as_deref().unwrap_or("");
    let auth = parse(header)?;
    if !SERVICES.contains(&auth.service) {
        return Err(unauthorized(&format!(
            "signing name {} is not one of {}",
            auth.service,
            SERVICES.join(", ")
        )));
    }
    let get = |name: &str| {
        req.headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
    };
    let amz_date = get("x-amz-date")
        .into_iter()
        .next()
        .ok_or_else(|| unauthorized("X-Amz-Date is required"))?;
    let when = amz_time(&amz_date).ok_or_else(|| unauthorized("X-Amz-Date is malformed"))?;
    let skew = now.duration_since(when).unwrap_or_else(|e| e.duration());
    if skew > MAX_SKEW || !amz_date.starts_with(auth.date) {
        return Err(unauthorized(
            "the request's date is more than 15 minutes from the server's or outside its scope",
        ));
    }
    if !auth.signed_headers.contains(&"host") {
        return Err(unauthorized("the host header must be signed"));
    }
    let body_hash = hex(&Sha256::digest(&req.body));
    if let Some(claimed) = get("x-amz-content-sha256").first()
        && claimed != &body_hash
        && claimed != "UNSIGNED-PAYLOAD"
    {
        return Err(unauthorized("the body does not match X-Amz-Content-Sha256"));
    }
    let payload_hash = get("x-amz-content-sha256")
        .into_iter()
        .next()
        .unwrap_or(body_hash);
    let mut canonical_headers = String::new();
    for name in &auth.signed_headers {
        let values = get(name);
        if values.is_empty() {
            return Err(unauthorized(&format!("signed header {name} is missing")));
        }
        canonical_headers.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    let canonical = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        req.method.as_str(),
        encode(req.raw_path.as_bytes(), true),
        canonical_query(req.query.as_deref()),
        canonical_headers,
        auth.signed_headers.join(";"),
        payload_hash
    );
    let scope = format!(
        "{}/{}/{}/aws4_request",
        auth.date, auth.region, auth.service
    );
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex(&Sha256::digest(canonical.as_bytes()))
    );
    let secret = secret_of(auth.access_key).ok_or_else(|| unauthorized("unknown access key"))?;
    let mut key = hmac(format!("AWS4{secret}").as_bytes(), auth.date.as_bytes());
    for part in [auth.region, auth.service, "aws4_request"] {
        key = hmac(&key, part.as_bytes());
    }
    let expected = hex(&hmac(&key, to_sign.as_bytes()));
    if super::auth::constant_time_eq(expected.as_bytes(), auth.signature.as_bytes()) {
        Ok(auth.access_key.to_owned())
    } else {
        Err(unauthorized(
            "the signature does not match (check the secret, the region and the signing name)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorization_headers_parse_and_malformed_ones_are_refused() {
        let a = parse("AWS4-HMAC-SHA256 Credential=AK/20261204/us-east-1/s3tables/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc").unwrap();
        assert_eq!(a.access_key, "AK");
        assert_eq!(a.service, "s3tables");
        assert_eq!(a.signed_headers, vec!["host", "x-amz-date"]);
        assert!(
            parse("AWS4-HMAC-SHA256 Credential=AK/x, SignedHeaders=host, Signature=a").is_err()
        );
        assert!(parse("Bearer x").is_err());
        assert!(parse("AWS4-HMAC-SHA256 SignedHeaders=host").is_err());
    }

    #[test]
    fn paths_are_encoded_again_and_queries_sorted() {
        assert_eq!(
            encode(b"/iceberg/v1/namespaces/a%1Fb/tables", true),
            "/iceberg/v1/namespaces/a%251Fb/tables"
        );
        assert_eq!(canonical_query(Some("b=2&a=x%20y")), "a=x%20y&b=2");
        assert_eq!(canonical_query(None), "");
    }
}
