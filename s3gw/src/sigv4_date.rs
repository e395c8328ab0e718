//! SigV4 requests dated by the HTTP `Date` header. SigV4 lets a client sign with `Date`
//! instead of `X-Amz-Date` (the string to sign then takes the `Date` time in ISO 8601
//! basic form), and some clients do; s3s reads only `X-Amz-Date` and refused them with
//! "missing header: x-amz-date". Such a request gets the `X-Amz-Date` its `Date` means
//! before s3s sees it: the header is not among the signed ones (the client signed
//! `date`), so the canonical request is unchanged and the signature checks as sent.

/// Adds `X-Amz-Date` from `Date` to a header-signed SigV4 request that has no
/// `X-Amz-Date`; any other request is left as it is.
pub fn date_from_http_date<B>(req: &mut http::Request<B>) {
    let h = req.headers();
    let sigv4 = h
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("AWS4-HMAC-SHA256 "));
    if !sigv4 || h.contains_key("x-amz-date") {
        return;
    }
    let Some(date) = h
        .get(http::header::DATE)
        .and_then(|v| v.to_str().ok())
        .and_then(amz_date)
    else {
        return;
    };
    if let Ok(v) = http::HeaderValue::from_str(&date) {
        req.headers_mut().insert("x-amz-date", v);
    }
}

/// An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`, or its two obsolete forms) as SigV4's
/// `YYYYMMDDTHHMMSSZ`.
fn amz_date(http_date: &str) -> Option<String> {
    let t = httpdate::parse_http_date(http_date).ok()?;
    let t = time::OffsetDateTime::from(t);
    Some(format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_date_header_becomes_the_amz_date_of_a_sigv4_request() {
        let mut req = http::Request::builder()
            .header("authorization", "AWS4-HMAC-SHA256 Credential=a/20261204/us-east-1/s3/aws4_request, SignedHeaders=date;host, Signature=00")
            .header("date", "Fri, 04 Dec 2026 08:49:37 GMT")
            .body(())
            .unwrap();
        date_from_http_date(&mut req);
        assert_eq!(req.headers()["x-amz-date"], "20261204T084937Z");
        // Not for SigV2, nor over an X-Amz-Date the client sent.
        let mut v2 = http::Request::builder()
            .header("authorization", "AWS a:b")
            .header("date", "Fri, 04 Dec 2026 08:49:37 GMT")
            .body(())
            .unwrap();
        date_from_http_date(&mut v2);
        assert!(!v2.headers().contains_key("x-amz-date"));
        assert_eq!(amz_date("not a date"), None);
    }
}
