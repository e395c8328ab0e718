//! Legacy AWS Signature Version 2, where s3s's canonical resource differs from AWS's.
//!
//! For a request that names only a bucket, path style (`/bucket`, no trailing slash),
//! AWS signs the resource `/bucket/`: botocore signs that ("the auth_path must be
//! terminated with a '/' character to generate a signature that the server will
//! accept"), while s3s signs the path as sent, so every bucket-level SigV2 request from
//! boto3 failed with `SignatureDoesNotMatch` (object and service requests, whose paths
//! agree, worked). Such a request's path gets its slash before s3s sees it; `/bucket/`
//! names the same bucket, so nothing else changes.

/// Whether the request is signed with SigV2: an `AWS <key>:<signature>` authorization
/// header, or a presigned URL's `Signature` with `AWSAccessKeyId`.
fn is_sigv2<B>(req: &http::Request<B>) -> bool {
    let header = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("AWS "));
    let query = req.uri().query().is_some_and(|q| {
        let has = |name: &str| q.split('&').any(|p| p.split('=').next() == Some(name));
        has("Signature") && has("AWSAccessKeyId")
    });
    header || query
}

/// Gives a SigV2 request for a bucket alone (`/bucket`) the trailing slash AWS signs.
pub fn canonical_bucket_path<B>(req: &mut http::Request<B>) {
    let path = req.uri().path();
    let bucket_only = path.len() > 1 && path.starts_with('/') && !path[1..].contains('/');
    if !bucket_only || !is_sigv2(req) {
        return;
    }
    let with_slash = match req.uri().query() {
        Some(q) => format!("{path}/?{q}"),
        None => format!("{path}/"),
    };
    let mut parts = req.uri().clone().into_parts();
    if let Ok(pq) = with_slash.parse::<http::uri::PathAndQuery>() {
        parts.path_and_query = Some(pq);
        if let Ok(uri) = http::Uri::from_parts(parts) {
            *req.uri_mut() = uri;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(uri: &str, auth: Option<&str>) -> http::Request<()> {
        let mut b = http::Request::builder().uri(uri);
        if let Some(a) = auth {
            b = b.header("authorization", a);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn only_sigv2_bucket_paths_gain_a_slash() {
        let fixed = |uri, auth| {
            let mut r = req(uri, auth);
            canonical_bucket_path(&mut r);
            r.uri().to_string()
        };
        assert_eq!(fixed("/b?versioning", Some("AWS k:s")), "/b/?versioning");
        assert_eq!(fixed("/b", Some("AWS k:s")), "/b/");
        assert_eq!(
            fixed("/b?AWSAccessKeyId=k&Expires=1&Signature=s", None),
            "/b/?AWSAccessKeyId=k&Expires=1&Signature=s"
        );
        // Already canonical, an object, the service, or not SigV2: left alone.
        assert_eq!(fixed("/b/", Some("AWS k:s")), "/b/");
        assert_eq!(fixed("/b/key", Some("AWS k:s")), "/b/key");
        assert_eq!(fixed("/", Some("AWS k:s")), "/");
        assert_eq!(fixed("/b", Some("AWS4-HMAC-SHA256 Credential=k")), "/b");
        assert_eq!(fixed("/b", None), "/b");
    }
}
