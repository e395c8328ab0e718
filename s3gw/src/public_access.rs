//! Block Public Access on a bucket: Put/Get/DeletePublicAccessBlock. The four settings
//! take effect where the access they block is decided: `BlockPublicAcls` where an ACL
//! is written ([`crate::ownership`], [`crate::acl`]), `IgnorePublicAcls` and
//! `RestrictPublicBuckets` in [`crate::authz`], `BlockPublicPolicy` in
//! [`crate::bucket_policy`]. They are kept in the bucket's record, so a change takes
//! effect for the next request on any node.

use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result};

use crate::Gateway;
use crate::authz::OpAction;
use crate::bucket_settings::{PublicAccessBlock, set_public_access, update_bucket};

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new("PutPublicAccessBlock", "s3:PutBucketPublicAccessBlock"),
    OpAction::new("GetPublicAccessBlock", "s3:GetBucketPublicAccessBlock"),
    OpAction::new("DeletePublicAccessBlock", "s3:PutBucketPublicAccessBlock"),
];

/// PutPublicAccessBlock (a setting left out is off, as on AWS).
pub async fn put_public_access_block(
    gw: &Gateway,
    req: S3Request<PutPublicAccessBlockInput>,
) -> S3Result<S3Response<PutPublicAccessBlockOutput>> {
    let c = &req.input.public_access_block_configuration;
    let config = PublicAccessBlock {
        block_public_acls: c.block_public_acls.unwrap_or(false),
        ignore_public_acls: c.ignore_public_acls.unwrap_or(false),
        block_public_policy: c.block_public_policy.unwrap_or(false),
        restrict_public_buckets: c.restrict_public_buckets.unwrap_or(false),
    };
    update_bucket(gw, &req, &req.input.bucket, |r| {
        set_public_access(r, Some(config));
        Ok(())
    })
    .await?;
    Ok(S3Response::new(PutPublicAccessBlockOutput::default()))
}

/// GetPublicAccessBlock.
pub async fn get_public_access_block(
    gw: &Gateway,
    req: S3Request<GetPublicAccessBlockInput>,
) -> S3Result<S3Response<GetPublicAccessBlockOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let Some(c) = b.public_access else {
        return Err(crate::error::custom(
            "NoSuchPublicAccessBlockConfiguration",
            http::StatusCode::NOT_FOUND,
            "The public access block configuration was not found",
        ));
    };
    Ok(S3Response::new(GetPublicAccessBlockOutput {
        public_access_block_configuration: Some(PublicAccessBlockConfiguration {
            block_public_acls: Some(c.block_public_acls),
            ignore_public_acls: Some(c.ignore_public_acls),
            block_public_policy: Some(c.block_public_policy),
            restrict_public_buckets: Some(c.restrict_public_buckets),
        }),
    }))
}

/// DeletePublicAccessBlock.
pub async fn delete_public_access_block(
    gw: &Gateway,
    req: S3Request<DeletePublicAccessBlockInput>,
) -> S3Result<S3Response<DeletePublicAccessBlockOutput>> {
    update_bucket(gw, &req, &req.input.bucket, |r| {
        set_public_access(r, None);
        Ok(())
    })
    .await?;
    Ok(S3Response::with_status(
        DeletePublicAccessBlockOutput::default(),
        http::StatusCode::NO_CONTENT,
    ))
}
