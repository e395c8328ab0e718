//! Bucket lifecycle: PutBucketLifecycleConfiguration (validated as AWS validates it, kept
//! in the catalog as its S3 XML), GetBucketLifecycleConfiguration,
//! DeleteBucketLifecycle, the `x-amz-expiration` header of GET, HEAD and PUT, and the
//! background [`worker`] that applies the rules.

pub mod rules;
pub mod worker;

use std::collections::BTreeMap;

use catalog::BucketConfigKind;
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};

use crate::authz::OpAction;
use crate::{Gateway, bucket_config};
use rules::Rules;

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new(
        "PutBucketLifecycleConfiguration",
        "s3:PutLifecycleConfiguration",
    ),
    OpAction::new(
        "GetBucketLifecycleConfiguration",
        "s3:GetLifecycleConfiguration",
    ),
    OpAction::new("DeleteBucketLifecycle", "s3:PutLifecycleConfiguration"),
];

/// PutBucketLifecycleConfiguration.
pub async fn put_bucket_lifecycle_configuration(
    gw: &Gateway,
    req: S3Request<PutBucketLifecycleConfigurationInput>,
) -> S3Result<S3Response<PutBucketLifecycleConfigurationOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let config = req
        .input
        .lifecycle_configuration
        .ok_or_else(|| s3_error!(MalformedXML, "The lifecycle configuration is missing"))?;
    let (_, stored) = Rules::validate(config)?;
    let document = bucket_config::to_xml(&stored)?;
    bucket_config::put(gw, &b.name, BucketConfigKind::Lifecycle, Some(document)).await?;
    Ok(S3Response::new(
        PutBucketLifecycleConfigurationOutput::default(),
    ))
}

/// GetBucketLifecycleConfiguration: the rules as they were put (with the ids made up for
/// rules that had none).
pub async fn get_bucket_lifecycle_configuration(
    gw: &Gateway,
    req: S3Request<GetBucketLifecycleConfigurationInput>,
) -> S3Result<S3Response<GetBucketLifecycleConfigurationOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let config: BucketLifecycleConfiguration =
        bucket_config::get(gw, &b.name, BucketConfigKind::Lifecycle)
            .await?
            .ok_or_else(|| {
                s3_error!(
                    NoSuchLifecycleConfiguration,
                    "The lifecycle configuration does not exist"
                )
            })?;
    Ok(S3Response::new(GetBucketLifecycleConfigurationOutput {
        rules: Some(config.rules),
        transition_default_minimum_object_size: None,
    }))
}

/// DeleteBucketLifecycle (204 whether or not there was one, as AWS answers).
pub async fn delete_bucket_lifecycle(
    gw: &Gateway,
    req: S3Request<DeleteBucketLifecycleInput>,
) -> S3Result<S3Response<DeleteBucketLifecycleOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    bucket_config::put(gw, &b.name, BucketConfigKind::Lifecycle, None).await?;
    Ok(S3Response::with_status(
        DeleteBucketLifecycleOutput::default(),
        http::StatusCode::NO_CONTENT,
    ))
}

/// The `x-amz-expiration` value for a current version of `bucket`, when a rule expires it.
pub async fn expiration(
    gw: &Gateway,
    bucket: &str,
    key: &str,
    size: u64,
    tags: &BTreeMap<String, String>,
    last_modified_ms: i64,
) -> Option<String> {
    let config: BucketLifecycleConfiguration =
        bucket_config::get(gw, bucket, BucketConfigKind::Lifecycle)
            .await
            .ok()??;
    let rules = Rules::from_stored(config).ok()?;
    let (at, id) =
        rules.current_expiry(key, size, tags, last_modified_ms, gw.lifecycle_day_ms())?;
    Some(rules::expiration_header(at, id))
}

/// The `x-amz-expiration` of a GET or HEAD that names a version: for a noncurrent one,
/// when a `NoncurrentVersionExpiration` rule removes it (counted from when the next newer
/// version was written, keeping `NewerNoncurrentVersions`), as AWS reports it; for the
/// current version, its [`expiration`]; `None` for delete markers or when no rule applies.
pub async fn noncurrent_expiration(
    gw: &Gateway,
    bucket: &str,
    key: &str,
    version_id: &str,
) -> Option<String> {
    let config: BucketLifecycleConfiguration =
        bucket_config::get(gw, bucket, BucketConfigKind::Lifecycle)
            .await
            .ok()??;
    let rules = Rules::from_stored(config).ok()?;
    let versions: Vec<catalog::ObjectVersion> = gw
        .catalog()
        .s3()
        .list_versions(bucket, key, Some(key), NONCURRENT_LOOKUP)
        .await
        .ok()?
        .into_iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v)
        .collect();
    let at = versions.iter().position(|v| v.version_id == version_id)?;
    let v = &versions[at];
    if v.delete_marker {
        return None;
    }
    let Some(newer) = at.checked_sub(1).and_then(|n| versions.get(n)) else {
        return expiration(gw, bucket, key, v.size, &v.tags, v.last_modified_ms).await;
    };
    let newer_noncurrent = u32::try_from(at - 1).ok()?;
    let (when, id) = rules.noncurrent_expiry(
        key,
        v.size,
        &v.tags,
        newer.last_modified_ms,
        newer_noncurrent,
        gw.lifecycle_day_ms(),
    )?;
    Some(rules::expiration_header(when, id))
}

/// Versions of one key read to place a noncurrent version (a key with more has no
/// `x-amz-expiration` on its older versions' reads).
const NONCURRENT_LOOKUP: usize = 1000;
