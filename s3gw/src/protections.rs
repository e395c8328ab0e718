//! Grants a request may ask for that Eddy does not give: ACLs other than the owner's.
//! (Encryption and object lock, once refused here, are [`crate::sse`] and
//! [`crate::object_lock`]; SSE-KMS is still refused, there.) A client must never be told
//! it got a grant it did not get, so each is refused with AWS's own error for a bucket
//! whose object ownership is "bucket owner enforced", which is Eddy's model and AWS's
//! default, and `501 NotImplemented` where AWS has none.

use s3s::dto::{CreateBucketInput, ObjectCannedACL, ObjectOwnership};
use s3s::{S3Result, s3_error};

/// Checks the grants a write request (PutObject, CopyObject, CreateMultipartUpload: their
/// inputs share these field names) may ask for.
macro_rules! check_write {
    ($i:expr) => {{
        let i = &$i;
        $crate::protections::object_acl(
            i.acl.as_ref(),
            i.grant_full_control.is_some()
                || i.grant_read.is_some()
                || i.grant_read_acp.is_some()
                || i.grant_write_acp.is_some(),
        )
    }};
}
pub(crate) use check_write;

/// Refuses an object ACL other than the owner's alone: with object ownership "bucket
/// owner enforced", `private` and `bucket-owner-full-control` say what is true (the
/// bucket owner has full control, nobody else has anything), and anything else,
/// `public-read` or a grant header, is refused as AWS refuses it.
pub fn object_acl(acl: Option<&ObjectCannedACL>, grants: bool) -> S3Result<()> {
    let owner_only = acl.is_none_or(|a| {
        matches!(
            a.as_str(),
            ObjectCannedACL::PRIVATE | ObjectCannedACL::BUCKET_OWNER_FULL_CONTROL
        )
    });
    if !owner_only || grants {
        return Err(s3_error!(
            AccessControlListNotSupported,
            "The bucket does not allow ACLs"
        ));
    }
    Ok(())
}

/// Refuses what a CreateBucket asks that Eddy does not give: a bucket ACL other than
/// `private` and `public-read` (which [`crate::acl`] maps onto the bucket's policy),
/// object ownership other than "bucket owner enforced".
pub fn bucket_creation(input: &CreateBucketInput) -> S3Result<()> {
    let grants = [
        &input.grant_full_control,
        &input.grant_read,
        &input.grant_read_acp,
        &input.grant_write,
        &input.grant_write_acp,
    ]
    .iter()
    .any(|g| g.is_some());
    let mapped = input
        .acl
        .as_ref()
        .is_none_or(|a| crate::acl::canned_public(a).is_some());
    if !mapped || grants {
        return Err(s3_error!(
            InvalidBucketAclWithObjectOwnership,
            "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting"
        ));
    }
    if let Some(o) = &input.object_ownership
        && o.as_str() != ObjectOwnership::BUCKET_OWNER_ENFORCED
    {
        return Err(s3_error!(
            NotImplemented,
            "Object ownership {} is not implemented: ACLs are disabled (BucketOwnerEnforced)",
            o.as_str()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use s3s::S3ErrorCode;
    use s3s::dto::BucketCannedACL;

    fn code<T>(r: S3Result<T>) -> Option<S3ErrorCode> {
        r.err().map(|e| e.code().clone())
    }

    #[test]
    fn only_owner_acls_are_accepted() {
        let acl = |a: &str| ObjectCannedACL::from(a.to_owned());
        assert_eq!(code(object_acl(Some(&acl("private")), false)), None);
        assert_eq!(
            code(object_acl(Some(&acl("bucket-owner-full-control")), false)),
            None
        );
        assert_eq!(
            code(object_acl(Some(&acl("public-read")), false)),
            Some(S3ErrorCode::AccessControlListNotSupported)
        );
        assert_eq!(
            code(object_acl(None, true)),
            Some(S3ErrorCode::AccessControlListNotSupported)
        );
    }

    #[test]
    fn a_bucket_is_created_only_without_acls() {
        let input = |f: &dyn Fn(&mut CreateBucketInput)| {
            let mut i = CreateBucketInput::builder()
                .bucket("b".to_owned())
                .build()
                .unwrap();
            f(&mut i);
            bucket_creation(&i)
        };
        assert_eq!(code(input(&|_| {})), None);
        assert_eq!(
            code(input(
                &|i| i.acl = Some(BucketCannedACL::from("private".to_owned()))
            )),
            None
        );
        assert_eq!(
            code(input(
                &|i| i.acl = Some(BucketCannedACL::from("public-read-write".to_owned()))
            )),
            Some(S3ErrorCode::InvalidBucketAclWithObjectOwnership)
        );
        assert_eq!(
            code(input(&|i| {
                i.object_ownership = Some(ObjectOwnership::from("ObjectWriter".to_owned()))
            })),
            Some(S3ErrorCode::NotImplemented)
        );
    }
}
