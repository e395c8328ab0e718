//! GetObjectAttributes: an object's (or a version's) ETag, checksum, parts, storage class
//! and size, as many of them as the request's `x-amz-object-attributes` names, without
//! its body. Parts are listed for multipart objects (number, size and the part's own
//! checksums, kept since format 8), paged with `max-parts` and `part-number-marker`.

use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};

use crate::Gateway;
use crate::authz::OpAction;
use crate::get::find_version;

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[OpAction::new("GetObjectAttributes", "s3:GetObject")];

/// Most parts listed in one answer when the request sets no `max-parts`.
const DEFAULT_MAX_PARTS: i32 = 1000;

/// GetObjectAttributes.
pub async fn get_object_attributes(
    gw: &Gateway,
    req: S3Request<GetObjectAttributesInput>,
) -> S3Result<S3Response<GetObjectAttributesOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let i = &req.input;
    let wanted: Vec<String> = i
        .object_attributes
        .iter()
        .flat_map(|a| a.as_str().split(','))
        .map(|a| a.trim().to_owned())
        .filter(|a| !a.is_empty())
        .collect();
    if wanted.is_empty() {
        return Err(s3_error!(
            InvalidArgument,
            "x-amz-object-attributes names no attribute"
        ));
    }
    for a in &wanted {
        if !matches!(
            a.as_str(),
            ObjectAttributes::ETAG
                | ObjectAttributes::CHECKSUM
                | ObjectAttributes::OBJECT_PARTS
                | ObjectAttributes::STORAGE_CLASS
                | ObjectAttributes::OBJECT_SIZE
        ) {
            return Err(s3_error!(
                InvalidArgument,
                "Invalid attribute name specified: {a}"
            ));
        }
    }
    let wants = |name: &str| wanted.iter().any(|a| a == name);
    let v = find_version(gw, &b, &i.key, i.version_id.as_deref()).await?;
    // An SSE-C object's attributes need its key, as its data does.
    crate::sse::for_read(
        gw,
        v.encryption.as_ref(),
        crate::sse::customer_key!(
            i,
            sse_customer_algorithm,
            sse_customer_key,
            sse_customer_key_md5
        ),
    )?;
    let mut out = GetObjectAttributesOutput {
        last_modified: Some(crate::timestamp(v.last_modified_ms)),
        version_id: (v.version_id != "null" || i.version_id.is_some())
            .then(|| v.version_id.clone())
            .filter(|_| !matches!(b.versioning, catalog::Versioning::Unversioned)),
        ..Default::default()
    };
    if wants(ObjectAttributes::ETAG) {
        // AWS sends this ETag without quotes; s3s's serializer always quotes it.
        out.e_tag = Some(ETag::Strong(v.etag.clone()));
    }
    if wants(ObjectAttributes::OBJECT_SIZE) {
        out.object_size = Some(v.size as i64);
    }
    if wants(ObjectAttributes::STORAGE_CLASS) {
        out.storage_class = Some(StorageClass::from_static(StorageClass::STANDARD));
    }
    if wants(ObjectAttributes::CHECKSUM) {
        let f = crate::checksum::fields(&v.checksums);
        if f.crc32.is_some()
            || f.crc32c.is_some()
            || f.crc64nvme.is_some()
            || f.sha1.is_some()
            || f.sha256.is_some()
        {
            out.checksum = Some(Checksum {
                checksum_crc32: f.crc32,
                checksum_crc32c: f.crc32c,
                checksum_crc64nvme: f.crc64nvme,
                checksum_sha1: f.sha1,
                checksum_sha256: f.sha256,
                checksum_type: f.kind,
            });
        }
    }
    if wants(ObjectAttributes::OBJECT_PARTS) && !v.parts.is_empty() {
        let max = i.max_parts.unwrap_or(DEFAULT_MAX_PARTS).clamp(0, 1000);
        let marker = usize::try_from(i.part_number_marker.unwrap_or(0))
            .map_err(|_| s3_error!(InvalidArgument, "part-number-marker must not be negative"))?;
        let listed: Vec<ObjectPart> = v
            .parts
            .iter()
            .enumerate()
            .skip(marker)
            .take(max as usize)
            .map(|(n, size)| {
                let f = v
                    .part_checksums
                    .get(n)
                    .map(crate::checksum::fields)
                    .unwrap_or_default();
                ObjectPart {
                    part_number: Some(n as i32 + 1),
                    size: Some(*size as i64),
                    checksum_crc32: f.crc32,
                    checksum_crc32c: f.crc32c,
                    checksum_crc64nvme: f.crc64nvme,
                    checksum_sha1: f.sha1,
                    checksum_sha256: f.sha256,
                }
            })
            .collect();
        let last = listed.last().and_then(|p| p.part_number);
        let truncated = marker + listed.len() < v.parts.len();
        out.object_parts = Some(GetObjectAttributesParts {
            is_truncated: Some(truncated),
            max_parts: Some(max),
            next_part_number_marker: last,
            part_number_marker: Some(marker as i32),
            parts: Some(listed),
            total_parts_count: Some(v.parts.len() as i32),
        });
    }
    Ok(S3Response::new(out))
}
