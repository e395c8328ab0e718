//! Multipart uploads. Upload state lives in the catalog (durable across restarts); each
//! part is one blob; completing makes an object version whose data is the part blobs in
//! order, without copying. Parts left out of a completion, and every part of an aborted
//! upload, are freed by the catalog once the commit is durable.

use catalog::S3Op;
use catalog::{ObjectData, ObjectVersion, Op, PartRecord, UploadRecord};
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};

use crate::authz::OpAction;
use crate::body::receive;
use crate::change::{Change, Event};
use crate::checksum::{self, Wanted, fields};
use crate::error::OrS3;
use crate::list::common_prefix;
use crate::put::check_key;
use crate::tagging::parse_tagging_header;
use crate::{ContentHeaders, Gateway, etag, hex, new_id, now_ms, owner, timestamp, versioning};
use crate::{grants, ownership, sse};

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new("CreateMultipartUpload", "s3:PutObject"),
    OpAction::new("UploadPart", "s3:PutObject"),
    OpAction::new("CompleteMultipartUpload", "s3:PutObject"),
    OpAction::new("AbortMultipartUpload", "s3:AbortMultipartUpload"),
    OpAction::new("ListParts", "s3:ListMultipartUploadParts"),
    OpAction::new("ListMultipartUploads", "s3:ListBucketMultipartUploads"),
];

/// Smallest part but the last.
pub const MIN_PART: u64 = 5 << 20;
/// Most parts in an upload.
pub const MAX_PARTS: i32 = 10_000;

/// CreateMultipartUpload.
pub async fn create_multipart_upload(
    gw: &Gateway,
    req: S3Request<CreateMultipartUploadInput>,
) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    // An anonymous upload (a bucket policy allows it) is listed as AWS lists one.
    let user = gw.user(&req).unwrap_or_else(|_| "anonymous".to_owned());
    let i = req.input;
    check_key(&i.key)?;
    let acl = ownership::acl_for_write(&b, &grants::requested!(i), &user)?;
    let lock = crate::object_lock::Requested {
        mode: i.object_lock_mode.as_ref().map(|m| m.as_str()),
        until: i.object_lock_retain_until_date.as_ref(),
        legal_hold: i.object_lock_legal_hold_status.as_ref().map(|s| s.as_str()),
    }
    .lock(&b, now_ms())?;
    // SSE-S3 uploads keep their wrapped data key, SSE-C ones the key's MD5, for the parts.
    let encryption = sse::for_write(gw, &b, sse::asked!(i))?.map(|(e, _)| e);
    let tags = parse_tagging_header(i.tagging.as_deref())?;
    let alg = i
        .checksum_algorithm
        .as_ref()
        .map(|a| a.as_str().to_ascii_uppercase());
    if let Some(a) = &alg
        && !checksum::ALGORITHMS.contains(&a.as_str())
    {
        return Err(s3_error!(
            InvalidRequest,
            "Checksum algorithm {a} is not supported"
        ));
    }
    // CRC64NVME only has full-object checksums; the others default to composite.
    let kind = match (
        &alg,
        i.checksum_type
            .as_ref()
            .map(|t| t.as_str().to_ascii_uppercase()),
    ) {
        (None, _) => None,
        (Some(_), Some(t)) if t == ChecksumType::COMPOSITE || t == ChecksumType::FULL_OBJECT => {
            Some(t)
        }
        (Some(_), Some(t)) => {
            return Err(s3_error!(
                InvalidRequest,
                "Checksum type {t} is not supported"
            ));
        }
        (Some(a), None) if a == "CRC64NVME" => Some(ChecksumType::FULL_OBJECT.to_owned()),
        (Some(_), None) => Some(ChecksumType::COMPOSITE.to_owned()),
    };
    match (alg.as_deref(), kind.as_deref()) {
        (Some("SHA1" | "SHA256"), Some(ChecksumType::FULL_OBJECT))
        | (Some("CRC64NVME"), Some(ChecksumType::COMPOSITE)) => {
            return Err(s3_error!(
                InvalidRequest,
                "The {} checksum type is not supported for this algorithm",
                kind.as_deref().unwrap_or_default()
            ));
        }
        _ => {}
    }
    let upload = UploadRecord {
        upload_id: new_id(),
        bucket: b.name.clone(),
        key: i.key.clone(),
        owner: user,
        initiated_ms: now_ms(),
        metadata: ContentHeaders {
            content_type: i.content_type.as_deref(),
            content_encoding: i.content_encoding.as_deref(),
            content_disposition: i.content_disposition.as_deref(),
            content_language: i.content_language.as_deref(),
            cache_control: i.cache_control.as_deref(),
            expires: i.expires.as_ref(),
            metadata: i.metadata.as_ref(),
        }
        .to_map(),
        tags,
        checksum_algorithm: alg.clone(),
        checksum_type: kind.clone(),
        lock,
        encryption: encryption.clone(),
        acl,
    };
    let upload_id = upload.upload_id.clone();
    Change::new()
        .op(Op::S3(S3Op::CreateUpload(upload)))
        .commit(gw)
        .await?;
    let r = sse::reported(encryption.as_ref());
    Ok(S3Response::new(CreateMultipartUploadOutput {
        server_side_encryption: r.sse,
        sse_customer_algorithm: r.customer_algorithm,
        sse_customer_key_md5: r.customer_key_md5,
        bucket: Some(b.name.clone()),
        key: Some(i.key),
        upload_id: Some(upload_id),
        checksum_algorithm: alg.map(ChecksumAlgorithm::from),
        checksum_type: kind.map(ChecksumType::from),
        ..Default::default()
    }))
}

pub(crate) async fn upload_of(
    gw: &Gateway,
    bucket: &str,
    key: &str,
    upload_id: &str,
) -> S3Result<UploadRecord> {
    gw.catalog()
        .s3()
        .upload(bucket, key, upload_id)
        .await
        .or_s3()?
        .ok_or_else(|| {
            s3_error!(
                NoSuchUpload,
                "The specified multipart upload does not exist"
            )
        })
}

pub(crate) fn check_part_number(n: i32) -> S3Result<u32> {
    if !(1..=MAX_PARTS).contains(&n) {
        return Err(s3_error!(
            InvalidArgument,
            "Part number must be an integer between 1 and 10000, inclusive"
        ));
    }
    Ok(n as u32)
}

/// Stores a part (already written to its blob) in one transaction; deletes the blob
/// when the upload is gone.
pub async fn commit_part(
    gw: &Gateway,
    bucket: &str,
    key: &str,
    upload_id: &str,
    part: PartRecord,
) -> S3Result<()> {
    let blob = part.blob;
    Change::new()
        .op(Op::S3(S3Op::PutPart {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
            part,
        }))
        .owns(&[blob])
        .commit(gw)
        .await?;
    Ok(())
}

/// UploadPart.
pub async fn upload_part(
    gw: &Gateway,
    req: S3Request<UploadPartInput>,
) -> S3Result<S3Response<UploadPartOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let S3Request {
        input,
        headers,
        trailing_headers,
        ..
    } = req;
    let n = check_part_number(input.part_number)?;
    let upload = upload_of(gw, &b.name, &input.key, &input.upload_id).await?;
    // A part is encrypted as its upload is, an SSE-C part with the upload's key only.
    let seal = sse::for_read(
        gw,
        upload.encryption.as_ref(),
        sse::customer_key!(
            input,
            sse_customer_algorithm,
            sse_customer_key,
            sse_customer_key_md5
        ),
    )?;
    let mut wanted = Wanted::new(
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
    if let Some(a) = &upload.checksum_algorithm {
        wanted.add(a);
    }
    // Parts of an upload that announced no checksum carry S3's default, so the object
    // gets its full-object CRC64NVME when completed.
    let wanted = wanted.or_default();
    let got = receive(
        gw.catalog().blobs(),
        input.body,
        input.content_length,
        &wanted,
        trailing_headers.as_ref(),
        false,
        seal.as_ref(),
    )
    .await?;
    let part_etag = sse::etag_of(upload.encryption.as_ref(), seal.as_ref(), &got.md5);
    let ObjectData::Blobs(blobs) = &got.data else {
        return Err(s3_error!(InternalError, "part was not stored in a blob"));
    };
    let Some(blob) = blobs.first().copied() else {
        return Err(s3_error!(InternalError, "part was not stored in a blob"));
    };
    let part = PartRecord {
        part_number: n,
        etag: part_etag.clone(),
        size: got.size,
        last_modified_ms: now_ms(),
        blob,
        checksums: got.checksums.clone(),
    };
    commit_part(gw, &b.name, &input.key, &input.upload_id, part).await?;
    let f = fields(&got.checksums);
    let r = sse::reported(upload.encryption.as_ref());
    Ok(S3Response::new(UploadPartOutput {
        e_tag: Some(etag(&part_etag)),
        server_side_encryption: r.sse,
        sse_customer_algorithm: r.customer_algorithm,
        sse_customer_key_md5: r.customer_key_md5,
        checksum_crc32: f.crc32,
        checksum_crc32c: f.crc32c,
        checksum_crc64nvme: f.crc64nvme,
        checksum_sha1: f.sha1,
        checksum_sha256: f.sha256,
        ..Default::default()
    }))
}

/// CompleteMultipartUpload: parts in ascending order, each naming a stored part and
/// its ETag, every part but the last at least 5 MiB.
pub async fn complete_multipart_upload(
    gw: &Gateway,
    req: S3Request<CompleteMultipartUploadInput>,
) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let requester = gw.requester(&req);
    let i = req.input;
    let upload = match upload_of(gw, &b.name, &i.key, &i.upload_id).await {
        Ok(u) => u,
        Err(e) => return already_completed(gw, &b, &i).await?.ok_or(e),
    };
    // AWS answers If-Match on a key with no current object with 404, not 412 (the
    // condition itself is checked again in the completing transaction).
    if i.if_match.is_some()
        && gw
            .catalog()
            .s3()
            .object(&b.name, &i.key)
            .await
            .or_s3()?
            .is_none_or(|v| v.delete_marker)
    {
        return Err(s3_error!(NoSuchKey, "The specified key does not exist"));
    }
    let requested = i
        .multipart_upload
        .as_ref()
        .and_then(|m| m.parts.as_ref())
        .filter(|p| !p.is_empty())
        .ok_or_else(|| {
            s3_error!(
                MalformedXML,
                "The XML you provided was not well-formed or did not validate against our published schema"
            )
        })?;
    if requested.len() > MAX_PARTS as usize {
        return Err(s3_error!(InvalidArgument, "Too many parts"));
    }
    let stored = gw
        .catalog()
        .s3()
        .parts(&i.upload_id, 0, MAX_PARTS as usize)
        .await
        .or_s3()?;
    let mut chosen: Vec<&PartRecord> = Vec::with_capacity(requested.len());
    let mut prev = 0i32;
    for p in requested {
        let n = p.part_number.unwrap_or(0);
        if n <= prev {
            return Err(s3_error!(
                InvalidPartOrder,
                "The list of parts was not in ascending order. Parts must be ordered by part number."
            ));
        }
        prev = n;
        let found = stored
            .iter()
            .find(|s| i64::from(s.part_number) == i64::from(n));
        let want = p
            .e_tag
            .as_ref()
            .map(|e| e.value().trim_matches('"').to_owned());
        match found {
            Some(s) if want.as_deref().is_none_or(|w| w == s.etag) => chosen.push(s),
            _ => {
                return Err(s3_error!(
                    InvalidPart,
                    "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag."
                ));
            }
        }
    }
    if let Some((_, init)) = chosen.split_last()
        && let Some(small) = init.iter().find(|p| p.size < MIN_PART)
    {
        return Err(s3_error!(
            EntityTooSmall,
            "Your proposed upload is smaller than the minimum allowed size (part {})",
            small.part_number
        ));
    }
    let etag_value = multipart_etag(chosen.iter().map(|p| p.etag.as_str()));
    let mut checksums = std::collections::BTreeMap::new();
    if let Some(alg) = &upload.checksum_algorithm {
        let value = if upload.checksum_type.as_deref() == Some(ChecksumType::FULL_OBJECT) {
            let parts: Vec<_> = chosen.iter().map(|p| (&p.checksums, p.size)).collect();
            checksum::full_object(alg, &parts)
        } else {
            let maps: Vec<_> = chosen.iter().map(|p| &p.checksums).collect();
            checksum::composite(alg, &maps)
        };
        if let Some(c) = value {
            // A full-object value the client computed must match ours.
            let claimed = match alg.as_str() {
                "CRC32" => i.checksum_crc32.as_ref(),
                "CRC32C" => i.checksum_crc32c.as_ref(),
                "CRC64NVME" => i.checksum_crc64nvme.as_ref(),
                "SHA1" => i.checksum_sha1.as_ref(),
                "SHA256" => i.checksum_sha256.as_ref(),
                _ => None,
            };
            if let Some(claimed) = claimed
                && !claimed.contains('-')
                && *claimed != c
            {
                return Err(s3_error!(
                    BadDigest,
                    "The {alg} you specified did not match the calculated checksum."
                ));
            }
            checksums.insert(alg.clone(), c);
        }
    } else {
        // S3's default: a full-object CRC64NVME, combined from the parts' own (parts
        // written before Eddy computed it have none, and then the object has none).
        let alg = checksum::DEFAULT_ALGORITHM;
        let parts: Vec<_> = chosen.iter().map(|p| (&p.checksums, p.size)).collect();
        if let Some(c) = checksum::full_object(alg, &parts) {
            if let Some(claimed) = i.checksum_crc64nvme.as_ref()
                && *claimed != c
            {
                return Err(s3_error!(
                    BadDigest,
                    "The {alg} you specified did not match the calculated checksum."
                ));
            }
            checksums.insert(alg.to_owned(), c);
        }
    }
    let blobs: Vec<_> = chosen.iter().map(|p| p.blob).collect();
    let (version_id, replace_null) = versioning::new_version_id(&b);
    let now = now_ms();
    let version = ObjectVersion {
        metadata: upload.metadata.clone(),
        tags: upload.tags.clone(),
        checksums: checksums.clone(),
        parts: chosen.iter().map(|p| p.size).collect(),
        owner: upload.owner.clone(),
        // The bucket's default retention is taken when the object is made, not when
        // the upload started.
        lock: crate::object_lock::with_default(&b, upload.lock.clone(), now),
        encryption: upload.encryption.clone(),
        part_checksums: chosen.iter().map(|p| p.checksums.clone()).collect(),
        acl: upload.acl.clone(),
        ..ObjectVersion::new(
            version_id.clone(),
            ObjectData::Blobs(blobs.clone()),
            chosen.iter().map(|p| p.size).sum(),
            etag_value.clone(),
            now,
        )
    };
    let mut change = Change::new().by(requester);
    if i.if_none_match.as_ref().is_some_and(|c| c.is_any()) {
        change = change.expect_etag(&b.name, &i.key, None);
    }
    if let Some(e) = i.if_match.as_ref().and_then(|c| c.as_etag()) {
        change = change.expect_etag(&b.name, &i.key, Some(e.value().to_owned()));
    }
    change
        .op(Op::S3(S3Op::DeleteUpload {
            bucket: b.name.clone(),
            key: i.key.clone(),
            upload_id: i.upload_id.clone(),
            keep: blobs,
        }))
        .put_version(
            Event::CompleteMultipartUpload,
            &b,
            &i.key,
            version,
            replace_null,
        )
        .commit(gw)
        .await?;
    let f = fields(&checksums);
    let r = sse::reported(upload.encryption.as_ref());
    Ok(S3Response::new(CompleteMultipartUploadOutput {
        server_side_encryption: r.sse,
        bucket: Some(b.name.clone()),
        key: Some(i.key.clone()),
        e_tag: Some(etag(&etag_value)),
        location: Some(format!("/{}/{}", b.name, i.key)),
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

/// The ETag of a multipart object: the MD5 of its parts' MD5s (their ETags' bytes), then
/// `-` and the number of parts.
fn multipart_etag<'a>(part_etags: impl ExactSizeIterator<Item = &'a str>) -> String {
    use s3s::crypto::Checksum as _;
    let n = part_etags.len();
    let mut md5s = Vec::with_capacity(n * 16);
    for etag in part_etags {
        md5s.extend((0..etag.len() / 2).map(|j| {
            u8::from_str_radix(etag.get(2 * j..2 * j + 2).unwrap_or("00"), 16).unwrap_or(0)
        }));
    }
    format!("{}-{n}", hex(&s3s::crypto::Md5::checksum(&md5s)))
}

/// The answer to a CompleteMultipartUpload retried after it succeeded (its response was
/// lost, say): AWS answers 200 with the object's ETag again. The upload is gone, so the
/// object it made is recognized by its ETag, which the request's part ETags determine;
/// `Ok(None)` (the caller answers `NoSuchUpload`) unless the key's current object is
/// exactly that one; a catalog fault is answered as itself, never as `NoSuchUpload`.
async fn already_completed(
    gw: &Gateway,
    b: &catalog::BucketRecord,
    i: &CompleteMultipartUploadInput,
) -> S3Result<Option<S3Response<CompleteMultipartUploadOutput>>> {
    let Some(parts) = i.multipart_upload.as_ref().and_then(|u| u.parts.as_ref()) else {
        return Ok(None);
    };
    let Some(etags) = parts
        .iter()
        .map(|p| Some(p.e_tag.as_ref()?.value().trim_matches('"').to_owned()))
        .collect::<Option<Vec<String>>>()
    else {
        return Ok(None);
    };
    if etags.is_empty() {
        return Ok(None);
    }
    let want = multipart_etag(etags.iter().map(String::as_str));
    let Some(v) = gw.catalog().s3().object(&b.name, &i.key).await.or_s3()? else {
        return Ok(None);
    };
    if v.etag != want || v.parts.len() != etags.len() {
        return Ok(None);
    }
    let f = fields(&v.checksums);
    let r = sse::reported(v.encryption.as_ref());
    Ok(Some(S3Response::new(CompleteMultipartUploadOutput {
        server_side_encryption: r.sse,
        bucket: Some(b.name.clone()),
        key: Some(i.key.clone()),
        e_tag: Some(etag(&v.etag)),
        location: Some(format!("/{}/{}", b.name, i.key)),
        version_id: versioning::written_version(b, &v.version_id),
        checksum_crc32: f.crc32,
        checksum_crc32c: f.crc32c,
        checksum_crc64nvme: f.crc64nvme,
        checksum_sha1: f.sha1,
        checksum_sha256: f.sha256,
        checksum_type: f.kind,
        ..Default::default()
    })))
}

/// AbortMultipartUpload: the upload and its parts go; the catalog frees the blobs.
pub async fn abort_multipart_upload(
    gw: &Gateway,
    req: S3Request<AbortMultipartUploadInput>,
) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let i = req.input;
    Change::new()
        .op(Op::S3(S3Op::DeleteUpload {
            bucket: b.name.clone(),
            key: i.key,
            upload_id: i.upload_id,
            keep: Vec::new(),
        }))
        .commit(gw)
        .await?;
    Ok(S3Response::with_status(
        AbortMultipartUploadOutput::default(),
        http::StatusCode::NO_CONTENT,
    ))
}

/// ListParts.
pub async fn list_parts(
    gw: &Gateway,
    req: S3Request<ListPartsInput>,
) -> S3Result<S3Response<ListPartsOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let i = req.input;
    let upload = upload_of(gw, &b.name, &i.key, &i.upload_id).await?;
    let max = i.max_parts.unwrap_or(1000).clamp(0, 1000) as usize;
    let marker = i
        .part_number_marker
        .and_then(|m| u32::try_from(m).ok())
        .unwrap_or(0);
    let mut parts = gw
        .catalog()
        .s3()
        .parts(&i.upload_id, marker, max + 1)
        .await
        .or_s3()?;
    let truncated = parts.len() > max;
    parts.truncate(max);
    let next = parts.last().map(|p| p.part_number as i32);
    let out: Vec<Part> = parts
        .iter()
        .map(|p| {
            let f = fields(&p.checksums);
            Part {
                e_tag: Some(etag(&p.etag)),
                last_modified: Some(timestamp(p.last_modified_ms)),
                part_number: Some(p.part_number as i32),
                size: Some(p.size as i64),
                checksum_crc32: f.crc32,
                checksum_crc32c: f.crc32c,
                checksum_crc64nvme: f.crc64nvme,
                checksum_sha1: f.sha1,
                checksum_sha256: f.sha256,
            }
        })
        .collect();
    Ok(S3Response::new(ListPartsOutput {
        bucket: Some(b.name.clone()),
        key: Some(i.key),
        upload_id: Some(i.upload_id),
        initiator: Some(Initiator {
            display_name: Some(upload.owner.clone()),
            id: Some(upload.owner.clone()),
        }),
        owner: Some(owner(&upload.owner)),
        max_parts: Some(max as i32),
        part_number_marker: i.part_number_marker,
        next_part_number_marker: next,
        is_truncated: Some(truncated),
        parts: Some(out),
        storage_class: Some(StorageClass::from_static(StorageClass::STANDARD)),
        checksum_algorithm: upload.checksum_algorithm.map(ChecksumAlgorithm::from),
        ..Default::default()
    }))
}

/// ListMultipartUploads.
pub async fn list_multipart_uploads(
    gw: &Gateway,
    req: S3Request<ListMultipartUploadsInput>,
) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let i = req.input;
    let prefix = i.prefix.clone().unwrap_or_default();
    let delimiter = i.delimiter.clone().unwrap_or_default();
    let max = i.max_uploads.unwrap_or(1000).clamp(0, 1000) as usize;
    let mut after: Option<(String, Option<String>)> = i
        .key_marker
        .clone()
        .filter(|k| !k.is_empty())
        .map(|k| (k, i.upload_id_marker.clone().filter(|u| !u.is_empty())));
    let mut uploads = Vec::new();
    let mut cps: Vec<String> = Vec::new();
    let mut truncated = false;
    let mut last: Option<(String, Option<String>)> = None;
    'scan: loop {
        if max == 0 {
            break;
        }
        let batch = gw
            .catalog()
            .s3()
            .list_uploads(
                &b.name,
                &prefix,
                after.as_ref().map(|(k, u)| (k.as_str(), u.as_deref())),
                1000,
            )
            .await
            .or_s3()?;
        let n = batch.len();
        let mut restart = false;
        for u in batch {
            if uploads.len() + cps.len() == max {
                truncated = true;
                break 'scan;
            }
            if let Some(cp) = common_prefix(&u.key, &prefix, &delimiter) {
                let cp = cp.to_owned();
                after = Some((format!("{cp}\u{10FFFF}"), None));
                last = Some((cp.clone(), None));
                cps.push(cp);
                restart = true;
                break;
            }
            after = Some((u.key.clone(), Some(u.upload_id.clone())));
            last = after.clone();
            uploads.push(MultipartUpload {
                initiated: Some(timestamp(u.initiated_ms)),
                initiator: Some(Initiator {
                    display_name: Some(u.owner.clone()),
                    id: Some(u.owner.clone()),
                }),
                key: Some(u.key.clone()),
                owner: Some(owner(&u.owner)),
                storage_class: Some(StorageClass::from_static(StorageClass::STANDARD)),
                upload_id: Some(u.upload_id.clone()),
                checksum_algorithm: u.checksum_algorithm.clone().map(ChecksumAlgorithm::from),
                ..Default::default()
            });
        }
        if !restart && n < 1000 {
            break;
        }
    }
    let (next_key, next_id) = match last.filter(|_| truncated) {
        Some((k, u)) => (Some(k), u),
        None => (None, None),
    };
    Ok(S3Response::new(ListMultipartUploadsOutput {
        bucket: Some(b.name.clone()),
        common_prefixes: (!cps.is_empty()).then(|| {
            cps.into_iter()
                .map(|p| CommonPrefix { prefix: Some(p) })
                .collect()
        }),
        delimiter: i.delimiter,
        encoding_type: i.encoding_type,
        is_truncated: Some(truncated),
        key_marker: i.key_marker,
        max_uploads: Some(max as i32),
        next_key_marker: next_key,
        next_upload_id_marker: next_id,
        prefix: i.prefix,
        upload_id_marker: i.upload_id_marker,
        uploads: Some(uploads),
        request_charged: None,
    }))
}
