//! The ACL operations: Get/PutBucketAcl and Get/PutObjectAcl. Reads always answer (the
//! owner's full control where ACLs are disabled, as AWS answers); writes are refused
//! with `AccessControlListNotSupported` under `BucketOwnerEnforced` unless they ask for
//! no more than the owner's control, and with `AccessDenied` when public under Block
//! Public Access ([`crate::ownership`]).
//!
//! Buckets made `public-read` by builds before ownership controls got a bucket policy
//! statement (Sid [`LEGACY_PUBLIC_READ_SID`]) instead of an ACL; it stays a policy, and
//! GetBucketAcl still reports it as the AllUsers READ it stood for.

use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};
use serde_json::Value;

use crate::Gateway;
use crate::authz::OpAction;
use crate::bucket_settings::{Bucket, set_acl, update_bucket};
use crate::grants::{Acl, Grantee, Perm, Requested};
use crate::ownership::{acls_taken, bucket_acl, check_public, version_acl};
use crate::tagging;

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new("PutBucketAcl", "s3:PutBucketAcl"),
    OpAction::new("GetBucketAcl", "s3:GetBucketAcl"),
    OpAction::new("PutObjectAcl", "s3:PutObjectAcl").or_versioned("s3:PutObjectVersionAcl"),
    OpAction::new("GetObjectAcl", "s3:GetObjectAcl").or_versioned("s3:GetObjectVersionAcl"),
];

/// The Sid of the statement earlier builds made of a `public-read` bucket ACL.
pub const LEGACY_PUBLIC_READ_SID: &str = "EddyCannedAclPublicRead";

/// Whether the bucket's policy holds the statement earlier builds made of `public-read`.
fn legacy_public(gw: &Gateway, bucket: &str) -> bool {
    gw.directory()
        .bucket_policy_text(bucket)
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_some_and(|d| {
            d["Statement"]
                .as_array()
                .is_some_and(|a| a.iter().any(|s| s["Sid"] == LEGACY_PUBLIC_READ_SID))
        })
}

/// The ACL a Put*Acl request states, checked against the bucket's settings; `None` when
/// ACLs are disabled and it asks for no more than the owner's control (nothing changes).
fn requested_acl(b: &Bucket, r: &Requested<'_>, owner: &str) -> S3Result<Option<Acl>> {
    if !acls_taken(b, r)? {
        return Ok(None);
    }
    let acl = r.resolve(owner, &b.owner)?.ok_or_else(|| {
        s3_error!(
            MissingSecurityHeader,
            "Your request was missing a required header"
        )
    })?;
    check_public(b, &acl)?;
    Ok(Some(acl))
}

/// PutBucketAcl.
pub async fn put_bucket_acl(
    gw: &Gateway,
    req: S3Request<PutBucketAclInput>,
) -> S3Result<S3Response<PutBucketAclOutput>> {
    let i = &req.input;
    let b = gw.bucket_for(&req, &i.bucket).await?;
    let r = crate::grants::requested!(acl_op i);
    if let Some(acl) = requested_acl(&b, &r, &b.owner)? {
        let stored = (acl != Acl::private(&b.owner)).then_some(acl);
        update_bucket(gw, &req, &i.bucket, |record| {
            set_acl(record, stored.as_ref());
            Ok(())
        })
        .await?;
    }
    Ok(S3Response::new(PutBucketAclOutput::default()))
}

/// GetBucketAcl.
pub async fn get_bucket_acl(
    gw: &Gateway,
    req: S3Request<GetBucketAclInput>,
) -> S3Result<S3Response<GetBucketAclOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let mut acl = bucket_acl(&b);
    if legacy_public(gw, &b.name) && !acl.permits(None, Perm::Read, false) {
        acl.grants.push((Grantee::AllUsers, Perm::Read));
    }
    Ok(S3Response::new(GetBucketAclOutput {
        grants: Some(acl.s3_grants()),
        owner: Some(acl.s3_owner()),
    }))
}

/// PutObjectAcl: replaces one version's list (the current one without `versionId`).
pub async fn put_object_acl(
    gw: &Gateway,
    req: S3Request<PutObjectAclInput>,
) -> S3Result<S3Response<PutObjectAclOutput>> {
    let i = &req.input;
    let b = gw.bucket_for(&req, &i.bucket).await?;
    let v = tagging::target(gw, &b.name, &i.key, i.version_id.as_deref()).await?;
    let r = crate::grants::requested!(acl_op i);
    let owner = version_acl(&b, &v).owner;
    if let Some(acl) = requested_acl(&b, &r, &owner)? {
        gw.catalog()
            .commit(catalog::Transaction::new(vec![catalog::Op::S3(
                catalog::S3Op::SetObjectAcl {
                    bucket: b.name.clone(),
                    key: i.key.clone(),
                    version_id: Some(v.version_id.clone()),
                    acl: Some(acl.encode()),
                },
            )]))
            .await
            .map_err(crate::error::catalog_error)?;
    }
    Ok(S3Response::new(PutObjectAclOutput {
        request_charged: None,
    }))
}

/// GetObjectAcl.
pub async fn get_object_acl(
    gw: &Gateway,
    req: S3Request<GetObjectAclInput>,
) -> S3Result<S3Response<GetObjectAclOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let v = tagging::target(gw, &b.name, &req.input.key, req.input.version_id.as_deref()).await?;
    let acl = version_acl(&b, &v);
    Ok(S3Response::new(GetObjectAclOutput {
        grants: Some(acl.s3_grants()),
        owner: Some(acl.s3_owner()),
        request_charged: None,
    }))
}
