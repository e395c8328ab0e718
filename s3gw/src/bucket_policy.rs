//! Bucket policies: PutBucketPolicy (validated as IAM's grammar before it is stored: a
//! document Eddy would read differently from AWS is refused with `MalformedPolicy`),
//! GetBucketPolicy (the document as it was put) and DeleteBucketPolicy. They are kept in
//! the catalog through the directory, removed with their bucket, and take effect at once
//! ([`crate::authz`]).

use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};

use crate::Gateway;
use crate::authz::OpAction;

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new("PutBucketPolicy", "s3:PutBucketPolicy"),
    OpAction::new("GetBucketPolicy", "s3:GetBucketPolicy"),
    OpAction::new("DeleteBucketPolicy", "s3:DeleteBucketPolicy"),
    OpAction::new("GetBucketPolicyStatus", "s3:GetBucketPolicyStatus"),
];

/// PutBucketPolicy.
pub async fn put_bucket_policy(
    gw: &Gateway,
    req: S3Request<PutBucketPolicyInput>,
) -> S3Result<S3Response<PutBucketPolicyOutput>> {
    gw.bucket_for(&req, &req.input.bucket).await?;
    gw.directory()
        .put_bucket_policy(&req.input.bucket, Some(&req.input.policy))
        .await
        .map_err(crate::error::iam_error)?;
    Ok(S3Response::with_status(
        PutBucketPolicyOutput::default(),
        http::StatusCode::NO_CONTENT,
    ))
}

/// GetBucketPolicy.
pub async fn get_bucket_policy(
    gw: &Gateway,
    req: S3Request<GetBucketPolicyInput>,
) -> S3Result<S3Response<GetBucketPolicyOutput>> {
    gw.bucket_for(&req, &req.input.bucket).await?;
    let policy = gw
        .directory()
        .bucket_policy_text(&req.input.bucket)
        .ok_or_else(|| s3_error!(NoSuchBucketPolicy, "The bucket policy does not exist"))?;
    Ok(S3Response::new(GetBucketPolicyOutput {
        policy: Some(policy),
    }))
}

/// DeleteBucketPolicy.
pub async fn delete_bucket_policy(
    gw: &Gateway,
    req: S3Request<DeleteBucketPolicyInput>,
) -> S3Result<S3Response<DeleteBucketPolicyOutput>> {
    gw.bucket_for(&req, &req.input.bucket).await?;
    gw.directory()
        .put_bucket_policy(&req.input.bucket, None)
        .await
        .map_err(crate::error::iam_error)?;
    Ok(S3Response::with_status(
        DeleteBucketPolicyOutput::default(),
        http::StatusCode::NO_CONTENT,
    ))
}
