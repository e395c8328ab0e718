//! Object tagging (put, get, delete) and S3's tag limits: at most 10 tags per object,
//! keys up to 128 characters, values up to 256, keys unique.

use std::collections::BTreeMap;

use catalog::ObjectVersion;
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};

use crate::authz::OpAction;
use crate::change::{Change, Event};
use crate::error::OrS3;
use crate::{Gateway, versioning};

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new("PutObjectTagging", "s3:PutObjectTagging")
        .or_versioned("s3:PutObjectVersionTagging"),
    OpAction::new("GetObjectTagging", "s3:GetObjectTagging")
        .or_versioned("s3:GetObjectVersionTagging"),
    OpAction::new("DeleteObjectTagging", "s3:DeleteObjectTagging")
        .or_versioned("s3:DeleteObjectVersionTagging"),
];

/// Checks a tag set against S3's limits (`max` tags) and returns it as a map.
pub fn validate_tags(tags: &[Tag], max: usize) -> S3Result<BTreeMap<String, String>> {
    if tags.len() > max {
        return Err(too_many(max));
    }
    let mut m = BTreeMap::new();
    for t in tags {
        let k = t.key.clone().unwrap_or_default();
        let v = t.value.clone().unwrap_or_default();
        check_tag(&k, &v)?;
        if m.insert(k, v).is_some() {
            return Err(s3_error!(
                InvalidTag,
                "Cannot provide multiple Tags with the same key"
            ));
        }
    }
    Ok(m)
}

fn too_many(max: usize) -> s3s::S3Error {
    crate::error::custom(
        "BadRequest",
        http::StatusCode::BAD_REQUEST,
        format!("Object tags cannot be greater than {max}"),
    )
}

fn check_tag(k: &str, v: &str) -> S3Result<()> {
    if k.is_empty() || k.chars().count() > 128 {
        return Err(s3_error!(
            InvalidTag,
            "The TagKey you have provided is invalid"
        ));
    }
    if v.chars().count() > 256 {
        return Err(s3_error!(
            InvalidTag,
            "The TagValue you have provided is invalid"
        ));
    }
    Ok(())
}

/// Decodes `%XX` escapes and `+` (a form-encoded string).
pub fn form_decode(s: &str) -> S3Result<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let h = b
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| s3_error!(InvalidArgument, "Invalid URL encoding"))?;
                out.push(h);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| s3_error!(InvalidArgument, "Invalid URL encoding"))
}

/// Parses the `x-amz-tagging` header (`k1=v1&k2=v2`, URL-encoded).
pub fn parse_tagging_header(h: Option<&str>) -> S3Result<BTreeMap<String, String>> {
    let mut m = BTreeMap::new();
    let Some(h) = h.filter(|h| !h.is_empty()) else {
        return Ok(m);
    };
    for pair in h.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (k, v) = (form_decode(k)?, form_decode(v)?);
        check_tag(&k, &v)?;
        if m.insert(k, v).is_some() {
            return Err(s3_error!(
                InvalidTag,
                "Cannot provide multiple Tags with the same key"
            ));
        }
    }
    if m.len() > 10 {
        return Err(too_many(10));
    }
    Ok(m)
}

/// A stored tag map as an S3 tag set.
pub fn tag_set(m: &BTreeMap<String, String>) -> TagSet {
    m.iter()
        .map(|(k, v)| Tag {
            key: Some(k.clone()),
            value: Some(v.clone()),
        })
        .collect()
}

/// The version a tagging or ACL request addresses (a delete marker has neither).
pub(crate) async fn target(
    gw: &Gateway,
    bucket: &str,
    key: &str,
    version_id: Option<&str>,
) -> S3Result<ObjectVersion> {
    let v = match version_id {
        Some(id) => gw
            .catalog()
            .s3()
            .object_version(bucket, key, id)
            .await
            .or_s3()?,
        None => gw.catalog().s3().object(bucket, key).await.or_s3()?,
    };
    match v {
        Some(v) if !v.delete_marker => Ok(v),
        Some(_) => Err(s3_error!(
            MethodNotAllowed,
            "The specified method is not allowed against this resource"
        )),
        None if version_id.is_some() => Err(s3_error!(
            NoSuchVersion,
            "The specified version does not exist"
        )),
        None => Err(s3_error!(NoSuchKey, "The specified key does not exist")),
    }
}

/// PutObjectTagging.
pub async fn put_object_tagging(
    gw: &Gateway,
    req: S3Request<PutObjectTaggingInput>,
) -> S3Result<S3Response<PutObjectTaggingOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let key = &req.input.key;
    let tags = validate_tags(&req.input.tagging.tag_set, 10)?;
    let v = target(gw, &b.name, key, req.input.version_id.as_deref()).await?;
    Change::new()
        .by(gw.requester(&req))
        .set_tags(Event::TaggingPut, &b, key, &v, tags)
        .commit(gw)
        .await?;
    Ok(S3Response::new(PutObjectTaggingOutput {
        version_id: versioning::reported_version(&b, &v.version_id),
    }))
}

/// GetObjectTagging.
pub async fn get_object_tagging(
    gw: &Gateway,
    req: S3Request<GetObjectTaggingInput>,
) -> S3Result<S3Response<GetObjectTaggingOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let v = target(gw, &b.name, &req.input.key, req.input.version_id.as_deref()).await?;
    Ok(S3Response::new(GetObjectTaggingOutput {
        tag_set: tag_set(&v.tags),
        version_id: versioning::reported_version(&b, &v.version_id),
    }))
}

/// DeleteObjectTagging.
pub async fn delete_object_tagging(
    gw: &Gateway,
    req: S3Request<DeleteObjectTaggingInput>,
) -> S3Result<S3Response<DeleteObjectTaggingOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let key = &req.input.key;
    let v = target(gw, &b.name, key, req.input.version_id.as_deref()).await?;
    Change::new()
        .by(gw.requester(&req))
        .set_tags(Event::TaggingDelete, &b, key, &v, BTreeMap::new())
        .commit(gw)
        .await?;
    Ok(S3Response::with_status(
        DeleteObjectTaggingOutput {
            version_id: versioning::reported_version(&b, &v.version_id),
        },
        http::StatusCode::NO_CONTENT,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagging_header() {
        let m = parse_tagging_header(Some("a=1&b%20c=d+e")).unwrap();
        assert_eq!(m["a"], "1");
        assert_eq!(m["b c"], "d e");
        assert!(parse_tagging_header(Some("a=1&a=2")).is_err());
        let eleven: Vec<String> = (0..11).map(|i| format!("k{i}=v")).collect();
        assert!(parse_tagging_header(Some(&eleven.join("&"))).is_err());
        assert!(parse_tagging_header(Some(&format!("{}=v", "k".repeat(129)))).is_err());
        assert!(parse_tagging_header(Some("%zz=1")).is_err());
    }
}
