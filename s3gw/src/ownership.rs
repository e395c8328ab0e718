//! S3 Object Ownership: Put/Get/DeleteBucketOwnershipControls, and what a bucket's
//! setting makes of the ACL a write asks for. Under `BucketOwnerEnforced` (AWS's default
//! and Eddy's for every bucket without a setting) ACLs are disabled: a write asking for
//! more than the owner's control is refused with AWS's own error, and nothing is stored.
//! Under `BucketOwnerPreferred` and `ObjectWriter` the ACL is stored with the version and
//! consulted by [`crate::authz`]; Block Public Access still refuses public ones.

use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};

use crate::Gateway;
use crate::authz::OpAction;
use crate::bucket_settings::{Bucket, Ownership, set_acl, set_ownership, update_bucket};
use crate::grants::{Acl, Requested};

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new(
        "PutBucketOwnershipControls",
        "s3:PutBucketOwnershipControls",
    ),
    OpAction::new(
        "GetBucketOwnershipControls",
        "s3:GetBucketOwnershipControls",
    ),
    OpAction::new(
        "DeleteBucketOwnershipControls",
        "s3:PutBucketOwnershipControls",
    ),
];

/// The refusal of an ACL by a bucket whose ACLs are disabled, as AWS words it.
pub fn acls_disabled() -> s3s::S3Error {
    s3_error!(
        AccessControlListNotSupported,
        "The bucket does not allow ACLs"
    )
}

/// Whether the bucket takes the ACL a request asks for: `false` when its ACLs are
/// disabled and the request asks for no more than the owner's control (nothing to
/// store), the refusal AWS gives when it asks for more.
pub fn acls_taken(b: &Bucket, requested: &Requested<'_>) -> S3Result<bool> {
    if b.ownership().acls_enabled() {
        Ok(true)
    } else if requested.owner_only() {
        Ok(false)
    } else {
        Err(acls_disabled())
    }
}

/// Refuses a public ACL under Block Public Access's `BlockPublicAcls`, as AWS does.
pub fn check_public(b: &Bucket, acl: &Acl) -> S3Result<()> {
    if acl.is_public() && b.public_access().block_public_acls {
        return Err(s3_error!(AccessDenied, "Access Denied"));
    }
    Ok(())
}

/// An object ownership name from a request.
pub fn parse(o: &ObjectOwnership) -> S3Result<Ownership> {
    Ownership::from_name(o.as_str()).ok_or_else(|| {
        s3_error!(
            InvalidArgument,
            "Invalid x-amz-object-ownership header: {}",
            o.as_str()
        )
    })
}

/// The ACL to store with a version `writer` writes into `b` (`None`: the owner's control
/// alone, nothing to store), or the refusal of what the request asked.
pub fn acl_for_write(
    b: &Bucket,
    requested: &Requested<'_>,
    writer: &str,
) -> S3Result<Option<String>> {
    if !acls_taken(b, requested)? {
        return Ok(None);
    }
    let bucket_owner = b.owner.as_str();
    let writer = if writer.is_empty() {
        bucket_owner
    } else {
        writer
    };
    let owner = match b.ownership() {
        Ownership::BucketOwnerPreferred
            if requested.canned == Some("bucket-owner-full-control") =>
        {
            bucket_owner
        }
        _ => writer,
    };
    let acl = match requested.resolve(owner, bucket_owner)? {
        Some(acl) => acl,
        None => Acl::private(owner),
    };
    check_public(b, &acl)?;
    // A version without a stored list reads as its writer's control alone
    // ([`version_acl`]), so that list need not be stored.
    Ok((acl != Acl::private(writer)).then(|| acl.encode()))
}

/// A version's ACL as it stands: its stored one while the bucket's ACLs are enabled,
/// else its owner's control alone (the bucket owner's under `BucketOwnerEnforced`).
pub fn version_acl(b: &Bucket, v: &catalog::ObjectVersion) -> Acl {
    if b.ownership().acls_enabled() {
        if let Some(acl) = v.acl.as_deref() {
            // An unreadable list grants nothing beyond the bucket owner's control.
            return Acl::decode(acl).unwrap_or_else(|| Acl::private(&b.owner));
        }
        if !v.owner.is_empty() {
            return Acl::private(&v.owner);
        }
    }
    Acl::private(&b.owner)
}

/// A bucket's ACL as it stands.
pub fn bucket_acl(b: &Bucket) -> Acl {
    match b.acl() {
        Some(acl) if b.ownership().acls_enabled() => acl.clone(),
        _ => Acl::private(&b.owner),
    }
}

/// What a CreateBucket's ownership and ACL make of the new record: the setting is kept
/// (`BucketOwnerEnforced` when none is asked), and an ACL only where ACLs are enabled.
pub fn at_creation(input: &CreateBucketInput, record: &mut catalog::BucketRecord) -> S3Result<()> {
    let ownership = match &input.object_ownership {
        Some(o) => parse(o)?,
        None => Ownership::BucketOwnerEnforced,
    };
    let requested = Requested {
        write: input.grant_write.as_deref(),
        ..crate::grants::requested!(input)
    };
    if !ownership.acls_enabled() {
        if !requested.owner_only() {
            return Err(s3_error!(
                InvalidBucketAclWithObjectOwnership,
                "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting"
            ));
        }
    } else if let Some(acl) = requested.resolve(&record.owner, &record.owner)?
        && acl != Acl::private(&record.owner)
    {
        set_acl(record, Some(&acl));
    }
    set_ownership(record, Some(ownership));
    Ok(())
}

/// PutBucketOwnershipControls. Enforcing ownership drops the bucket's ACL, as ACLs stop
/// counting; the objects' lists stay stored and count again if ACLs are re-enabled, as
/// on AWS.
pub async fn put_bucket_ownership_controls(
    gw: &Gateway,
    req: S3Request<PutBucketOwnershipControlsInput>,
) -> S3Result<S3Response<PutBucketOwnershipControlsOutput>> {
    let rules = &req.input.ownership_controls.rules;
    let [rule] = rules.as_slice() else {
        return Err(s3_error!(
            MalformedXML,
            "OwnershipControls takes exactly one Rule"
        ));
    };
    let ownership = parse(&rule.object_ownership)?;
    update_bucket(gw, &req, &req.input.bucket, |r| {
        set_ownership(r, Some(ownership));
        if !ownership.acls_enabled() {
            set_acl(r, None);
        }
        Ok(())
    })
    .await?;
    Ok(S3Response::new(PutBucketOwnershipControlsOutput::default()))
}

/// GetBucketOwnershipControls.
pub async fn get_bucket_ownership_controls(
    gw: &Gateway,
    req: S3Request<GetBucketOwnershipControlsInput>,
) -> S3Result<S3Response<GetBucketOwnershipControlsOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let Some(ownership) = b.ownership_setting else {
        return Err(s3_error!(
            OwnershipControlsNotFoundError,
            "The bucket ownership controls were not found"
        ));
    };
    Ok(S3Response::new(GetBucketOwnershipControlsOutput {
        ownership_controls: Some(OwnershipControls {
            rules: vec![OwnershipControlsRule {
                object_ownership: ObjectOwnership::from(ownership.name().to_owned()),
            }],
        }),
    }))
}

/// DeleteBucketOwnershipControls: the bucket keeps Eddy's default, ACLs disabled
/// (AWS falls back to `ObjectWriter` here; a bucket whose controls are removed stays
/// closed instead).
pub async fn delete_bucket_ownership_controls(
    gw: &Gateway,
    req: S3Request<DeleteBucketOwnershipControlsInput>,
) -> S3Result<S3Response<DeleteBucketOwnershipControlsOutput>> {
    update_bucket(gw, &req, &req.input.bucket, |r| {
        set_ownership(r, None);
        set_acl(r, None);
        Ok(())
    })
    .await?;
    Ok(S3Response::with_status(
        DeleteBucketOwnershipControlsOutput::default(),
        http::StatusCode::NO_CONTENT,
    ))
}
