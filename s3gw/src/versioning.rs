//! Bucket versioning: Put/GetBucketVersioning and the version-id rules writes follow.

use catalog::{BucketRecord, Versioning};
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};

use crate::Gateway;
use crate::authz::OpAction;
use crate::bucket_settings::{lock_enabled, update_bucket};

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new("PutBucketVersioning", "s3:PutBucketVersioning"),
    OpAction::new("GetBucketVersioning", "s3:GetBucketVersioning"),
];

/// The version id a new write gets and whether it replaces the `null` version:
/// versioned buckets make a fresh id; unversioned and suspended ones write `null`.
pub fn new_version_id(b: &BucketRecord) -> (String, bool) {
    match b.versioning {
        Versioning::Enabled => (crate::new_id(), false),
        Versioning::Unversioned | Versioning::Suspended => ("null".to_owned(), true),
    }
}

/// The version id to report for a version of this bucket (none while the bucket was
/// never versioned).
pub fn reported_version(b: &BucketRecord, version_id: &str) -> Option<String> {
    match b.versioning {
        Versioning::Unversioned if version_id == "null" => None,
        _ => Some(version_id.to_owned()),
    }
}

/// The version id a write (PutObject, CopyObject, CompleteMultipartUpload) reports: none
/// for the `null` version a write makes while versioning is suspended (or was never
/// enabled), as AWS answers.
pub fn written_version(b: &BucketRecord, version_id: &str) -> Option<String> {
    match b.versioning {
        Versioning::Enabled => Some(version_id.to_owned()),
        Versioning::Unversioned | Versioning::Suspended if version_id == "null" => None,
        _ => Some(version_id.to_owned()),
    }
}

/// PutBucketVersioning: `Enabled` or `Suspended` (a bucket never returns to
/// unversioned).
pub async fn put_bucket_versioning(
    gw: &Gateway,
    req: S3Request<PutBucketVersioningInput>,
) -> S3Result<S3Response<PutBucketVersioningOutput>> {
    let status = req
        .input
        .versioning_configuration
        .status
        .as_ref()
        .map(|s| s.as_str().to_owned());
    update_bucket(gw, &req, &req.input.bucket, |b| {
        if lock_enabled(b)
            && status.as_deref() != Some(BucketVersioningStatus::ENABLED)
        {
            return Err(s3_error!(
                InvalidBucketState,
                "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed."
            ));
        }
        b.versioning = match status.as_deref() {
            Some(BucketVersioningStatus::ENABLED) => Versioning::Enabled,
            Some(BucketVersioningStatus::SUSPENDED) => Versioning::Suspended,
            None if b.versioning == Versioning::Unversioned => Versioning::Unversioned,
            _ => {
                return Err(s3_error!(
                    MalformedXML,
                    "The versioning status must be Enabled or Suspended"
                ));
            }
        };
        Ok(())
    })
    .await?;
    Ok(S3Response::new(PutBucketVersioningOutput {}))
}

/// GetBucketVersioning.
pub async fn get_bucket_versioning(
    gw: &Gateway,
    req: S3Request<GetBucketVersioningInput>,
) -> S3Result<S3Response<GetBucketVersioningOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let status = match b.versioning {
        Versioning::Unversioned => None,
        Versioning::Enabled => Some(BucketVersioningStatus::from_static(
            BucketVersioningStatus::ENABLED,
        )),
        Versioning::Suspended => Some(BucketVersioningStatus::from_static(
            BucketVersioningStatus::SUSPENDED,
        )),
    };
    Ok(S3Response::new(GetBucketVersioningOutput {
        mfa_delete: None,
        status,
    }))
}
