//! CopyObject and UploadPartCopy: the source is read stripe by stripe and written to a
//! new blob (objects never share blobs, so deleting one never affects another).

use catalog::{ObjectData, ObjectVersion, PartRecord};
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};
use storage::{StorageError, StorageResult};

use crate::authz::OpAction;
use crate::body::{Received, read_range};
use crate::bucket_settings::Bucket;
use crate::change::{Change, Event};
use crate::checksum::{Wanted, fields};
use crate::error::{OrS3, join_error};
use crate::get::{Conditions, find_version};
use crate::multipart::{check_part_number, commit_part, upload_of};
use crate::put::check_key;
use crate::sse::{self, DataKey};
use crate::tagging::parse_tagging_header;
use crate::{ContentHeaders, Gateway, INLINE_MAX, etag, now_ms, timestamp, versioning};
use crate::{grants, ownership};

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new("CopyObject", "s3:PutObject"),
    OpAction::new("UploadPartCopy", "s3:PutObject"),
];

/// Copies `start..end` of `data` into new storage, hashing as it goes: decrypted with
/// `source_key` when the source is encrypted, encrypted with `seal` when the copy is to be
/// (then never inlined).
#[allow(clippy::too_many_arguments)]
pub async fn copy_data(
    gw: &Gateway,
    data: &ObjectData,
    start: u64,
    end: u64,
    wanted: Wanted,
    allow_inline: bool,
    source_key: Option<&DataKey>,
    seal: Option<&DataKey>,
) -> S3Result<Received> {
    let store = gw.catalog().blobs().clone();
    let data = data.clone();
    let (source_key, seal) = (source_key.cloned(), seal.cloned());
    tokio::task::spawn_blocking(move || -> StorageResult<Received> {
        let mut hasher = wanted.hasher();
        let size = end - start;
        let out = if allow_inline && seal.is_none() && size <= INLINE_MAX as u64 {
            let mut buf = Vec::with_capacity(size as usize);
            read_range(&store, &data, start, end, source_key.as_ref(), |c| {
                hasher.update(&c);
                buf.extend_from_slice(&c);
                true
            })?;
            ObjectData::Inline(buf)
        } else {
            let mut w = store.create()?;
            let mut cipher = seal.as_ref().map(|k| k.blob_cipher(w.id()));
            let mut failed: Option<StorageError> = None;
            read_range(&store, &data, start, end, source_key.as_ref(), |mut c| {
                hasher.update(&c);
                if let Some(cipher) = cipher.as_mut() {
                    cipher.apply(&mut c);
                }
                match w.write(&c) {
                    Ok(()) => true,
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                }
            })?;
            if let Some(e) = failed {
                return Err(e);
            }
            ObjectData::Blobs(vec![w.finish()?])
        };
        let (md5, checksums) = hasher.finish_blocking();
        Ok(Received {
            data: out,
            size,
            md5_hex: crate::hex(&md5),
            md5,
            checksums,
        })
    })
    .await
    .map_err(join_error)?
    .or_s3()
}

/// The copy source, after checking the user may read it.
async fn source<T>(
    gw: &Gateway,
    req: &S3Request<T>,
    cs: &CopySource,
) -> S3Result<(Bucket, String, ObjectVersion)> {
    let CopySource::Bucket {
        bucket,
        key,
        version_id,
    } = cs
    else {
        return Err(s3_error!(
            NotImplemented,
            "Access point copy sources are not supported"
        ));
    };
    // The source is read: the requester needs GetObject on it, as AWS checks.
    let action = if version_id.is_some() {
        "s3:GetObjectVersion"
    } else {
        "s3:GetObject"
    };
    gw.authorize_version(
        &gw.authz_context(req),
        action,
        Some(bucket),
        Some(key),
        version_id.as_deref(),
    )
    .await?;
    let b = gw.bucket_for(req, bucket).await?;
    let v = find_version(gw, &b, key, version_id.as_deref()).await?;
    Ok((b, key.to_string(), v))
}

fn source_conditions(
    v: &ObjectVersion,
    if_match: Option<&ETagCondition>,
    if_none_match: Option<&ETagCondition>,
    if_modified_since: Option<&Timestamp>,
    if_unmodified_since: Option<&Timestamp>,
) -> S3Result<()> {
    Conditions {
        if_match,
        if_none_match,
        if_modified_since,
        if_unmodified_since,
    }
    .check(v)
    .map_err(|_| {
        s3_error!(
            PreconditionFailed,
            "At least one of the pre-conditions you specified did not hold"
        )
    })
}

fn wanted_for(src: &ObjectVersion, extra: Option<&ChecksumAlgorithm>) -> Wanted {
    let mut w = Wanted::default();
    for a in src.checksums.keys() {
        w.add(a);
    }
    if let Some(a) = extra {
        w.add(&a.as_str().to_ascii_uppercase());
    }
    w.or_default()
}

/// CopyObject, with the metadata directive (COPY or REPLACE), the tagging directive and
/// the copy-source conditions.
pub async fn copy_object(
    gw: &Gateway,
    req: S3Request<CopyObjectInput>,
) -> S3Result<S3Response<CopyObjectOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let (src_b, src_key, src) = source(gw, &req, &req.input.copy_source).await?;
    let requester = gw.requester(&req);
    let i = req.input;
    check_key(&i.key)?;
    // The copy gets the ACL this request asks for, never the source's, as on AWS.
    let acl = ownership::acl_for_write(&b, &grants::requested!(i), &requester.principal)?;
    let lock = crate::object_lock::Requested {
        mode: i.object_lock_mode.as_ref().map(|m| m.as_str()),
        until: i.object_lock_retain_until_date.as_ref(),
        legal_hold: i.object_lock_legal_hold_status.as_ref().map(|s| s.as_str()),
    }
    .lock(&b, now_ms())?;
    let source_key = sse::for_read(
        gw,
        src.encryption.as_ref(),
        sse::customer_key!(
            i,
            copy_source_sse_customer_algorithm,
            copy_source_sse_customer_key,
            copy_source_sse_customer_key_md5
        ),
    )?;
    let (encryption, seal) = sse::for_write(gw, &b, sse::asked!(i))?.unzip();
    source_conditions(
        &src,
        i.copy_source_if_match.as_ref(),
        i.copy_source_if_none_match.as_ref(),
        i.copy_source_if_modified_since.as_ref(),
        i.copy_source_if_unmodified_since.as_ref(),
    )?;
    let replace_meta = i
        .metadata_directive
        .as_ref()
        .is_some_and(|d| d.as_str().eq_ignore_ascii_case(MetadataDirective::REPLACE));
    let replace_tags = i
        .tagging_directive
        .as_ref()
        .is_some_and(|d| d.as_str().eq_ignore_ascii_case(TaggingDirective::REPLACE));
    let src_vid = match &i.copy_source {
        CopySource::Bucket { version_id, .. } => version_id.as_deref().map(str::to_owned),
        _ => None,
    };
    if src_b.name == b.name
        && src_key == i.key
        && !replace_meta
        && !replace_tags
        && src_vid.is_none()
        && encryption.is_none()
    {
        return Err(s3_error!(
            InvalidRequest,
            "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes."
        ));
    }
    let metadata = if replace_meta {
        ContentHeaders {
            content_type: i.content_type.as_deref(),
            content_encoding: i.content_encoding.as_deref(),
            content_disposition: i.content_disposition.as_deref(),
            content_language: i.content_language.as_deref(),
            cache_control: i.cache_control.as_deref(),
            expires: i.expires.as_ref(),
            metadata: i.metadata.as_ref(),
        }
        .to_map()
    } else {
        src.metadata.clone()
    };
    let tags = if replace_tags {
        parse_tagging_header(i.tagging.as_deref())?
    } else {
        src.tags.clone()
    };
    let got = copy_data(
        gw,
        &src.data,
        0,
        src.size,
        wanted_for(&src, i.checksum_algorithm.as_ref()),
        true,
        source_key.as_ref(),
        seal.as_ref(),
    )
    .await?;
    let new_etag = sse::etag_of(encryption.as_ref(), seal.as_ref(), &got.md5);
    let (version_id, replace_null) = versioning::new_version_id(&b);
    let now = now_ms();
    let blobs = got.data.blobs().to_vec();
    let version = ObjectVersion {
        metadata,
        tags,
        checksums: got.checksums.clone(),
        owner: requester.principal.clone(),
        // The source's lock is not copied: the copy gets what this request and the
        // bucket's default give it, as on AWS.
        lock: crate::object_lock::with_default(&b, lock, now),
        encryption: encryption.clone(),
        acl,
        ..ObjectVersion::new(
            version_id.clone(),
            got.data,
            got.size,
            new_etag.clone(),
            now,
        )
    };
    Change::new()
        .by(requester)
        .put_version(Event::Copy, &b, &i.key, version, replace_null)
        .owns(&blobs)
        .commit(gw)
        .await?;
    let f = fields(&got.checksums);
    let r = sse::reported(encryption.as_ref());
    Ok(S3Response::new(CopyObjectOutput {
        server_side_encryption: r.sse,
        sse_customer_algorithm: r.customer_algorithm,
        sse_customer_key_md5: r.customer_key_md5,
        copy_object_result: Some(CopyObjectResult {
            e_tag: Some(etag(&new_etag)),
            last_modified: Some(timestamp(now)),
            checksum_crc32: f.crc32,
            checksum_crc32c: f.crc32c,
            checksum_crc64nvme: f.crc64nvme,
            checksum_sha1: f.sha1,
            checksum_sha256: f.sha256,
            checksum_type: f.kind,
        }),
        copy_source_version_id: versioning::reported_version(&src_b, &src.version_id),
        version_id: versioning::written_version(&b, &version_id),
        ..Default::default()
    }))
}

/// Parses `bytes=first-last` of x-amz-copy-source-range against the source size.
fn copy_range(r: &str, size: u64) -> S3Result<(u64, u64)> {
    let bad = || {
        s3_error!(
            InvalidArgument,
            "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy"
        )
    };
    let spec = r.trim().strip_prefix("bytes=").ok_or_else(bad)?;
    let (a, z) = spec.split_once('-').ok_or_else(bad)?;
    let a: u64 = a.trim().parse().map_err(|_| bad())?;
    let z: u64 = z.trim().parse().map_err(|_| bad())?;
    if a > z {
        return Err(bad());
    }
    if z >= size {
        return Err(s3_error!(
            InvalidRange,
            "The requested range is not satisfiable"
        ));
    }
    Ok((a, z + 1))
}

/// UploadPartCopy, optionally of a byte range of the source.
pub async fn upload_part_copy(
    gw: &Gateway,
    req: S3Request<UploadPartCopyInput>,
) -> S3Result<S3Response<UploadPartCopyOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let (src_b, _, src) = source(gw, &req, &req.input.copy_source).await?;
    let i = req.input;
    let n = check_part_number(i.part_number)?;
    let source_key = sse::for_read(
        gw,
        src.encryption.as_ref(),
        sse::customer_key!(
            i,
            copy_source_sse_customer_algorithm,
            copy_source_sse_customer_key,
            copy_source_sse_customer_key_md5
        ),
    )?;
    let upload = upload_of(gw, &b.name, &i.key, &i.upload_id).await?;
    // The part is encrypted as its upload is, with the upload's SSE-C key when it has one.
    let seal = sse::for_read(
        gw,
        upload.encryption.as_ref(),
        sse::customer_key!(
            i,
            sse_customer_algorithm,
            sse_customer_key,
            sse_customer_key_md5
        ),
    )?;
    source_conditions(
        &src,
        i.copy_source_if_match.as_ref(),
        i.copy_source_if_none_match.as_ref(),
        i.copy_source_if_modified_since.as_ref(),
        i.copy_source_if_unmodified_since.as_ref(),
    )?;
    let (start, end) = match &i.copy_source_range {
        Some(r) => copy_range(r, src.size)?,
        None => (0, src.size),
    };
    let mut wanted = Wanted::default();
    if let Some(a) = &upload.checksum_algorithm {
        wanted.add(a);
    }
    let wanted = wanted.or_default();
    let got = copy_data(
        gw,
        &src.data,
        start,
        end,
        wanted,
        false,
        source_key.as_ref(),
        seal.as_ref(),
    )
    .await?;
    let part_etag = sse::etag_of(upload.encryption.as_ref(), seal.as_ref(), &got.md5);
    let Some(blob) = got.data.blobs().first().copied() else {
        return Err(s3_error!(InternalError, "part was not stored in a blob"));
    };
    let now = now_ms();
    let part = PartRecord {
        part_number: n,
        etag: part_etag.clone(),
        size: got.size,
        last_modified_ms: now,
        blob,
        checksums: got.checksums.clone(),
    };
    commit_part(gw, &b.name, &i.key, &i.upload_id, part).await?;
    let f = fields(&got.checksums);
    let r = sse::reported(upload.encryption.as_ref());
    Ok(S3Response::new(UploadPartCopyOutput {
        server_side_encryption: r.sse,
        sse_customer_algorithm: r.customer_algorithm,
        sse_customer_key_md5: r.customer_key_md5,
        copy_part_result: Some(CopyPartResult {
            e_tag: Some(etag(&part_etag)),
            last_modified: Some(timestamp(now)),
            checksum_crc32: f.crc32,
            checksum_crc32c: f.crc32c,
            checksum_crc64nvme: f.crc64nvme,
            checksum_sha1: f.sha1,
            checksum_sha256: f.sha256,
        }),
        copy_source_version_id: versioning::reported_version(&src_b, &src.version_id),
        ..Default::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::copy_range;

    #[test]
    fn ranges() {
        assert_eq!(copy_range("bytes=0-9", 10).unwrap(), (0, 10));
        assert!(copy_range("bytes=0-10", 10).is_err());
        assert!(copy_range("bytes=5-1", 10).is_err());
        assert!(copy_range("0-1", 10).is_err());
    }
}
