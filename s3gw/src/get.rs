//! GetObject and HeadObject: version lookup, conditional requests, ranges (single,
//! suffix, open-ended, part number), stored headers and checksums.

use catalog::{BucketRecord, ObjectVersion};
use s3s::dto::*;
use s3s::{S3Error, S3Request, S3Response, S3Result, s3_error};

use crate::authz::OpAction;
use crate::body::response_body;
use crate::checksum::fields;
use crate::error::OrS3;
use crate::sse;
use crate::{Gateway, etag, stored_headers, timestamp, timestamp_secs, versioning};

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new("GetObject", "s3:GetObject").or_versioned("s3:GetObjectVersion"),
    OpAction::new("HeadObject", "s3:GetObject").or_versioned("s3:GetObjectVersion"),
];

/// Whether an If-Match / If-None-Match condition matches the version.
pub fn matches(c: &ETagCondition, v: Option<&ObjectVersion>) -> bool {
    match (c, v) {
        (_, None) => false,
        (ETagCondition::Any, Some(_)) => true,
        (ETagCondition::ETag(e), Some(v)) => e.value().trim_matches('"') == v.etag,
    }
}

/// The HTTP conditions of a read.
#[derive(Default)]
pub struct Conditions<'a> {
    /// If-Match.
    pub if_match: Option<&'a ETagCondition>,
    /// If-None-Match.
    pub if_none_match: Option<&'a ETagCondition>,
    /// If-Modified-Since.
    pub if_modified_since: Option<&'a Timestamp>,
    /// If-Unmodified-Since.
    pub if_unmodified_since: Option<&'a Timestamp>,
}

/// Why conditions failed.
#[derive(Debug, PartialEq, Eq)]
pub enum Failed {
    /// 304.
    NotModified,
    /// 412.
    Precondition,
}

impl Conditions<'_> {
    /// Evaluates them as S3 does (RFC 9110 order): If-Match, else If-Unmodified-Since,
    /// decide 412; then If-None-Match, else If-Modified-Since, decide 304.
    pub fn check(&self, v: &ObjectVersion) -> Result<(), Failed> {
        let modified = v.last_modified_ms.div_euclid(1000);
        if let Some(c) = self.if_match {
            if !matches(c, Some(v)) {
                return Err(Failed::Precondition);
            }
        } else if let Some(t) = self.if_unmodified_since
            && modified > timestamp_secs(t)
        {
            return Err(Failed::Precondition);
        }
        if let Some(c) = self.if_none_match {
            if matches(c, Some(v)) {
                return Err(Failed::NotModified);
            }
        } else if let Some(t) = self.if_modified_since
            && modified <= timestamp_secs(t)
        {
            return Err(Failed::NotModified);
        }
        Ok(())
    }
}

/// The S3 error of failed read conditions.
pub fn failed_error(f: Failed) -> S3Error {
    match f {
        Failed::NotModified => s3_error!(NotModified, "Not Modified"),
        Failed::Precondition => s3_error!(
            PreconditionFailed,
            "At least one of the pre-conditions you specified did not hold"
        ),
    }
}

/// The version a read addresses: the current one, or `version_id`.
pub async fn find_version(
    gw: &Gateway,
    b: &BucketRecord,
    key: &str,
    version_id: Option<&str>,
) -> S3Result<ObjectVersion> {
    match version_id {
        Some(id) => match gw
            .catalog()
            .s3()
            .object_version(&b.name, key, id)
            .await
            .or_s3()?
        {
            Some(v) if v.delete_marker => {
                // As AWS: the marker's headers say what the client addressed.
                let mut err = s3_error!(
                    MethodNotAllowed,
                    "The specified method is not allowed against this resource"
                );
                err.set_headers(marker_headers(b, &v));
                Err(err)
            }
            Some(v) => Ok(v),
            None => Err(s3_error!(
                NoSuchVersion,
                "The specified version does not exist"
            )),
        },
        None => match gw.catalog().s3().object(&b.name, key).await.or_s3()? {
            Some(v) => Ok(v),
            None => Err(no_current_version(gw, b, key).await),
        },
    }
}

/// `NoSuchKey`, with `x-amz-delete-marker: true` and the marker's version id when the
/// key's newest version is a delete marker.
async fn no_current_version(gw: &Gateway, b: &BucketRecord, key: &str) -> S3Error {
    let mut err = s3_error!(NoSuchKey, "The specified key does not exist");
    let newest = gw
        .catalog()
        .s3()
        .list_versions(&b.name, key, Some(key), 1)
        .await
        .ok()
        .and_then(|v| v.into_iter().next())
        .filter(|(k, v)| k == key && v.delete_marker);
    if let Some((_, v)) = newest {
        err.set_headers(marker_headers(b, &v));
    }
    err
}

/// `x-amz-delete-marker: true` and the marker's version id, on an answer about one.
fn marker_headers(b: &BucketRecord, v: &ObjectVersion) -> http::HeaderMap {
    let mut h = http::HeaderMap::new();
    h.insert(
        "x-amz-delete-marker",
        http::HeaderValue::from_static("true"),
    );
    if let Some(id) = versioning::reported_version(b, &v.version_id)
        && let Ok(val) = http::HeaderValue::from_str(&id)
    {
        h.insert("x-amz-version-id", val);
    }
    h
}

/// The headers a 304 keeps (RFC 9110 15.4.5, and what AWS sends): the validators, the
/// caching headers stored with the object, and the version id.
fn not_modified_headers(b: &BucketRecord, v: &ObjectVersion) -> http::HeaderMap {
    let mut h = http::HeaderMap::new();
    let mut add = |name: &'static str, value: &str| {
        if let Ok(val) = http::HeaderValue::from_str(value) {
            h.insert(name, val);
        }
    };
    add("etag", &format!("\"{}\"", v.etag));
    let modified = time::OffsetDateTime::from_unix_timestamp(v.last_modified_ms.div_euclid(1000))
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc2822)
                .ok()
        });
    if let Some(m) = modified {
        // RFC 2822's "+0000" is the HTTP date's "GMT".
        add("last-modified", &m.replace("+0000", "GMT"));
    }
    for name in ["cache-control", "expires"] {
        if let Some(value) = v.metadata.get(name) {
            add(name, value);
        }
    }
    if let Some(id) = versioning::reported_version(b, &v.version_id) {
        add("x-amz-version-id", &id);
    }
    h
}

/// The byte range to serve: `start..end`, and the Content-Range header when partial.
fn select(
    v: &ObjectVersion,
    range: Option<&Range>,
    part_number: Option<i32>,
) -> S3Result<(u64, u64, Option<String>)> {
    let total = v.size;
    if let Some(n) = part_number {
        let sizes: Vec<u64> = if v.parts.is_empty() {
            vec![total]
        } else {
            v.parts.clone()
        };
        let idx = usize::try_from(n)
            .ok()
            .filter(|n| (1..=sizes.len()).contains(n))
            .ok_or_else(|| {
                crate::error::custom(
                    "InvalidPartNumber",
                    http::StatusCode::RANGE_NOT_SATISFIABLE,
                    "The requested partnumber is not satisfiable",
                )
            })?;
        let start: u64 = sizes[..idx - 1].iter().sum();
        let end = start + sizes[idx - 1];
        if sizes.len() == 1 {
            return Ok((0, total, None));
        }
        return Ok((
            start,
            end,
            Some(format!("bytes {start}-{}/{total}", end.saturating_sub(1))),
        ));
    }
    match range {
        None => Ok((0, total, None)),
        Some(r) => {
            let r = r
                .check(total)
                .map_err(|_| s3_error!(InvalidRange, "The requested range is not satisfiable"))?;
            Ok((
                r.start,
                r.end,
                Some(format!(
                    "bytes {}-{}/{total}",
                    r.start,
                    r.end.saturating_sub(1)
                )),
            ))
        }
    }
}

fn checksum_mode(m: Option<&ChecksumMode>) -> bool {
    m.is_some_and(|m| m.as_str().eq_ignore_ascii_case(ChecksumMode::ENABLED))
}

/// What GetObject and HeadObject answer with: the version after its conditions held,
/// the byte range, its stored headers, and the checksums to report (whole-object reads
/// in checksum mode only).
struct Selected {
    v: ObjectVersion,
    start: u64,
    end: u64,
    content_range: Option<String>,
    h: crate::StoredHeaders,
    f: crate::checksum::Fields,
}

#[allow(clippy::too_many_arguments)]
async fn read_selection(
    gw: &Gateway,
    b: &BucketRecord,
    key: &str,
    version_id: Option<&str>,
    conditions: Conditions<'_>,
    range: Option<&Range>,
    part_number: Option<i32>,
    mode: Option<&ChecksumMode>,
) -> S3Result<Selected> {
    let v = find_version(gw, b, key, version_id).await?;
    conditions.check(&v).map_err(|f| {
        let not_modified = f == Failed::NotModified;
        let mut e = failed_error(f);
        if not_modified {
            e.set_headers(not_modified_headers(b, &v));
        }
        e
    })?;
    let (start, end, content_range) = select(&v, range, part_number)?;
    let h = stored_headers(&v.metadata);
    // A part read reports that part's checksums (with the object's checksum type); a
    // ranged read none, as AWS does.
    let f = match part_number {
        _ if !checksum_mode(mode) => Default::default(),
        Some(n) if !v.part_checksums.is_empty() => {
            let whole = fields(&v.checksums);
            let part = usize::try_from(n - 1)
                .ok()
                .and_then(|i| v.part_checksums.get(i))
                .map(fields)
                .unwrap_or_default();
            crate::checksum::Fields {
                kind: part.kind.as_ref().and(whole.kind),
                ..part
            }
        }
        // Part 1 of an object not uploaded in parts is the whole object.
        Some(_) if v.parts.is_empty() => fields(&v.checksums),
        None if content_range.is_none() => fields(&v.checksums),
        _ => Default::default(),
    };
    Ok(Selected {
        v,
        start,
        end,
        content_range,
        h,
        f,
    })
}

/// [`read_selection`] for a GetObject or HeadObject input: s3s gives the two operations
/// distinct input types with the same fields.
macro_rules! select {
    ($gw:expr, $b:expr, $i:expr) => {
        read_selection(
            $gw,
            $b,
            &$i.key,
            $i.version_id.as_deref(),
            Conditions {
                if_match: $i.if_match.as_ref(),
                if_none_match: $i.if_none_match.as_ref(),
                if_modified_since: $i.if_modified_since.as_ref(),
                if_unmodified_since: $i.if_unmodified_since.as_ref(),
            },
            $i.range.as_ref(),
            $i.part_number,
            $i.checksum_mode.as_ref(),
        )
    };
}

/// The `x-amz-expiration` of a GET or HEAD: when a lifecycle rule expires the version
/// read, the current one (no `versionId` asked for) or the one named.
async fn current_expiration(
    gw: &Gateway,
    bucket: &str,
    current: bool,
    key: &str,
    v: &ObjectVersion,
) -> Option<String> {
    if current {
        crate::lifecycle::expiration(gw, bucket, key, v.size, &v.tags, v.last_modified_ms).await
    } else {
        crate::lifecycle::noncurrent_expiration(gw, bucket, key, &v.version_id).await
    }
}

/// GetObject.
pub async fn get_object(
    gw: &Gateway,
    req: S3Request<GetObjectInput>,
) -> S3Result<S3Response<GetObjectOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let i = &req.input;
    let Selected {
        v,
        start,
        end,
        content_range,
        h,
        f,
    } = select!(gw, &b, i).await?;
    let key = sse::for_read(
        gw,
        v.encryption.as_ref(),
        sse::customer_key!(
            i,
            sse_customer_algorithm,
            sse_customer_key,
            sse_customer_key_md5
        ),
    )?;
    let body = response_body(gw.catalog().blobs(), &v.data, start, end, key.as_ref()).await?;
    let expiration =
        current_expiration(gw, &b.name, i.version_id.is_none(), i.key.as_str(), &v).await;
    let lock = crate::object_lock::headers(gw, &req, &b.name, &i.key, &v.lock).await;
    let r = sse::reported(v.encryption.as_ref());
    Ok(S3Response::new(GetObjectOutput {
        expiration,
        server_side_encryption: r.sse,
        sse_customer_algorithm: r.customer_algorithm,
        sse_customer_key_md5: r.customer_key_md5,
        object_lock_mode: lock.mode,
        object_lock_retain_until_date: lock.until,
        object_lock_legal_hold_status: lock.legal_hold,
        body: Some(body),
        accept_ranges: Some("bytes".into()),
        content_length: Some((end - start) as i64),
        content_range,
        content_type: h.content_type,
        content_encoding: h.content_encoding,
        content_disposition: h.content_disposition,
        content_language: h.content_language,
        cache_control: h.cache_control,
        expires: h.expires,
        metadata: h.metadata,
        e_tag: Some(etag(&v.etag)),
        last_modified: Some(timestamp(v.last_modified_ms)),
        version_id: versioning::reported_version(&b, &v.version_id),
        tag_count: (!v.tags.is_empty()).then_some(v.tags.len() as i32),
        parts_count: (!v.parts.is_empty()).then_some(v.parts.len() as i32),
        checksum_crc32: f.crc32,
        checksum_crc32c: f.crc32c,
        checksum_crc64nvme: f.crc64nvme,
        checksum_sha1: f.sha1,
        checksum_sha256: f.sha256,
        checksum_type: f.kind,
        ..Default::default()
    }))
}

/// HeadObject.
pub async fn head_object(
    gw: &Gateway,
    req: S3Request<HeadObjectInput>,
) -> S3Result<S3Response<HeadObjectOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let i = &req.input;
    let Selected {
        v,
        start,
        end,
        content_range,
        h,
        f,
    } = select!(gw, &b, i).await?;
    sse::for_read(
        gw,
        v.encryption.as_ref(),
        sse::customer_key!(
            i,
            sse_customer_algorithm,
            sse_customer_key,
            sse_customer_key_md5
        ),
    )?;
    let expiration =
        current_expiration(gw, &b.name, i.version_id.is_none(), i.key.as_str(), &v).await;
    let lock = crate::object_lock::headers(gw, &req, &b.name, &i.key, &v.lock).await;
    let r = sse::reported(v.encryption.as_ref());
    Ok(S3Response::new(HeadObjectOutput {
        expiration,
        server_side_encryption: r.sse,
        sse_customer_algorithm: r.customer_algorithm,
        sse_customer_key_md5: r.customer_key_md5,
        object_lock_mode: lock.mode,
        object_lock_retain_until_date: lock.until,
        object_lock_legal_hold_status: lock.legal_hold,
        accept_ranges: Some("bytes".into()),
        content_length: Some((end - start) as i64),
        content_range,
        content_type: h.content_type,
        content_encoding: h.content_encoding,
        content_disposition: h.content_disposition,
        content_language: h.content_language,
        cache_control: h.cache_control,
        expires: h.expires,
        metadata: h.metadata,
        e_tag: Some(etag(&v.etag)),
        last_modified: Some(timestamp(v.last_modified_ms)),
        version_id: versioning::reported_version(&b, &v.version_id),
        parts_count: (!v.parts.is_empty()).then_some(v.parts.len() as i32),
        checksum_crc32: f.crc32,
        checksum_crc32c: f.crc32c,
        checksum_crc64nvme: f.crc64nvme,
        checksum_sha1: f.sha1,
        checksum_sha256: f.sha256,
        checksum_type: f.kind,
        ..Default::default()
    }))
}

#[cfg(test)]
mod tests {
    use catalog::{ObjectData, ObjectVersion};
    use s3s::dto::{ETag, ETagCondition};

    use super::{Conditions, Failed};
    use crate::timestamp;

    fn v() -> ObjectVersion {
        ObjectVersion::new(
            "null".into(),
            ObjectData::Inline(Vec::new()),
            0,
            "abc".into(),
            10_500,
        )
    }

    #[test]
    fn conditions_follow_rfc_9110_order() {
        let yes = ETagCondition::ETag(ETag::Strong("abc".into()));
        let no = ETagCondition::ETag(ETag::Strong("xyz".into()));
        let (before, same, after) = (timestamp(9_000), timestamp(10_000), timestamp(11_000));
        let c = |m, n, ms, us| Conditions {
            if_match: m,
            if_none_match: n,
            if_modified_since: ms,
            if_unmodified_since: us,
        };
        assert_eq!(c(Some(&yes), None, None, None).check(&v()), Ok(()));
        assert_eq!(
            c(Some(&no), None, None, None).check(&v()),
            Err(Failed::Precondition)
        );
        assert_eq!(
            c(None, Some(&yes), None, None).check(&v()),
            Err(Failed::NotModified)
        );
        assert_eq!(
            c(None, Some(&ETagCondition::Any), None, None).check(&v()),
            Err(Failed::NotModified)
        );
        // Seconds granularity: modified at 10.5 s is not after 10 s.
        assert_eq!(
            c(None, None, Some(&same), None).check(&v()),
            Err(Failed::NotModified)
        );
        assert_eq!(c(None, None, Some(&before), None).check(&v()), Ok(()));
        assert_eq!(
            c(None, None, None, Some(&before)).check(&v()),
            Err(Failed::Precondition)
        );
        assert_eq!(c(None, None, None, Some(&after)).check(&v()), Ok(()));
        // If-Match decides over If-Unmodified-Since; If-None-Match over If-Modified-Since.
        assert_eq!(c(Some(&yes), None, None, Some(&before)).check(&v()), Ok(()));
        assert_eq!(c(None, Some(&no), Some(&after), None).check(&v()), Ok(()));
    }
}
