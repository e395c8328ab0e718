//! PutObject: the body streams into an erasure-coded blob (small bodies are inlined in
//! the catalog record), then one transaction makes the new version current.

use catalog::ObjectVersion;
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};

use crate::authz::OpAction;
use crate::body::receive;
use crate::change::{Change, Event};
use crate::checksum::{Wanted, fields};
use crate::error::OrS3;
use crate::get::matches;
use crate::tagging::parse_tagging_header;
use crate::{ContentHeaders, Gateway, now_ms, versioning};
use crate::{grants, object_lock, ownership, sse};

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[OpAction::new("PutObject", "s3:PutObject")];

/// Refuses keys S3 refuses.
pub fn check_key(key: &str) -> S3Result<()> {
    if key.len() > catalog::apply::MAX_KEY_LEN {
        return Err(s3_error!(KeyTooLongError, "Your key is too long"));
    }
    if key.is_empty() || key.contains('\0') {
        return Err(s3_error!(InvalidArgument, "Invalid object key"));
    }
    Ok(())
}

/// PutObject, with If-Match / If-None-Match (checked before the body is read and again
/// atomically in the commit).
pub async fn put_object(
    gw: &Gateway,
    req: S3Request<PutObjectInput>,
) -> S3Result<S3Response<PutObjectOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let requester = gw.requester(&req);
    // s3s hands browser-form uploads (PostObject) to put_object as well.
    let event = if req.method == http::Method::POST {
        Event::Post
    } else {
        Event::Put
    };
    let S3Request {
        input,
        headers,
        trailing_headers,
        ..
    } = req;
    let key = input.key.clone();
    check_key(&key)?;
    let acl = ownership::acl_for_write(&b, &grants::requested!(input), &requester.principal)?;
    let asked_lock = object_lock::Requested {
        mode: input.object_lock_mode.as_ref().map(|m| m.as_str()),
        until: input.object_lock_retain_until_date.as_ref(),
        legal_hold: input
            .object_lock_legal_hold_status
            .as_ref()
            .map(|s| s.as_str()),
    };
    let lock = asked_lock.lock(&b, now_ms())?;
    if input.if_match.is_some() || input.if_none_match.is_some() {
        let current = gw.catalog().s3().object(&b.name, &key).await.or_s3()?;
        // AWS answers If-Match on a key with no current object with 404, not 412.
        if input.if_match.is_some() && current.is_none() {
            return Err(s3_error!(NoSuchKey, "The specified key does not exist"));
        }
        let ok_match = input
            .if_match
            .as_ref()
            .is_none_or(|c| matches(c, current.as_ref()));
        let ok_none = input
            .if_none_match
            .as_ref()
            .is_none_or(|c| !matches(c, current.as_ref()));
        if !ok_match || !ok_none {
            return Err(s3_error!(
                PreconditionFailed,
                "At least one of the pre-conditions you specified did not hold"
            ));
        }
    }
    let (encryption, seal) = sse::for_write(gw, &b, sse::asked!(input))?.unzip();
    let tags = parse_tagging_header(input.tagging.as_deref())?;
    let wanted = Wanted::new(
        [
            input.checksum_crc32.as_ref(),
            input.checksum_crc32c.as_ref(),
            input.checksum_crc64nvme.as_ref(),
            input.checksum_sha1.as_ref(),
            input.checksum_sha256.as_ref(),
        ],
        input.checksum_algorithm.as_ref().map(|a| a.as_str()),
        input.content_md5.as_ref(),
        &headers,
    )?;
    // What the client sent (a Content-MD5, or a checksum in a header, trailer or
    // announced), before S3's default is added.
    if asked_lock.any() && wanted.compute.is_empty() && wanted.content_md5.is_none() {
        return Err(s3_error!(
            InvalidRequest,
            "Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object requests with Object Lock parameters"
        ));
    }
    let wanted = wanted.or_default();
    let metadata = ContentHeaders {
        content_type: input.content_type.as_deref(),
        content_encoding: input.content_encoding.as_deref(),
        content_disposition: input.content_disposition.as_deref(),
        content_language: input.content_language.as_deref(),
        cache_control: input.cache_control.as_deref(),
        expires: input.expires.as_ref(),
        metadata: input.metadata.as_ref(),
    }
    .to_map();
    let got = receive(
        gw.catalog().blobs(),
        input.body,
        input.content_length,
        &wanted,
        trailing_headers.as_ref(),
        true,
        seal.as_ref(),
    )
    .await?;
    let (version_id, replace_null) = versioning::new_version_id(&b);
    let blobs = got.data.blobs().to_vec();
    let etag = sse::etag_of(encryption.as_ref(), seal.as_ref(), &got.md5);
    let now = now_ms();
    let version = ObjectVersion {
        metadata,
        tags,
        checksums: got.checksums.clone(),
        owner: requester.principal.clone(),
        lock: object_lock::with_default(&b, lock, now),
        encryption: encryption.clone(),
        acl,
        ..ObjectVersion::new(version_id.clone(), got.data, got.size, etag.clone(), now)
    };
    let expiration = crate::lifecycle::expiration(
        gw,
        &b.name,
        &key,
        version.size,
        &version.tags,
        version.last_modified_ms,
    )
    .await;
    let mut change = Change::new().by(requester);
    if let Some(c) = &input.if_none_match
        && c.is_any()
    {
        change = change.expect_etag(&b.name, &key, None);
    }
    if let Some(e) = input.if_match.as_ref().and_then(|c| c.as_etag()) {
        change = change.expect_etag(&b.name, &key, Some(e.value().to_owned()));
    }
    change
        .put_version(event, &b, &key, version, replace_null)
        .owns(&blobs)
        .commit(gw)
        .await?;
    let f = fields(&got.checksums);
    let r = sse::reported(encryption.as_ref());
    Ok(S3Response::new(PutObjectOutput {
        expiration,
        server_side_encryption: r.sse,
        sse_customer_algorithm: r.customer_algorithm,
        sse_customer_key_md5: r.customer_key_md5,
        e_tag: Some(crate::etag(&etag)),
        version_id: versioning::written_version(&b, &version_id),
        checksum_crc32: f.crc32,
        checksum_crc32c: f.crc32c,
        checksum_crc64nvme: f.crc64nvme,
        checksum_sha1: f.sha1,
        checksum_sha256: f.sha256,
        checksum_type: f.kind,
        ..Default::default()
    }))
}
