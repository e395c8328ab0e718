//! Protections and grants a request may ask for that Eddy does not give yet: server-side
//! encryption (SSE-S3, SSE-KMS, SSE-C) and ACLs other than the owner's (object lock,
//! once refused here, is [`crate::object_lock`]).
//! Before these checks, the headers were parsed and ignored: an object PUT with
//! `x-amz-server-side-encryption` was stored in plaintext and a GET without a key returned
//! it. A client must never be told it got a protection it did not get, so each is refused
//! with AWS's own error where AWS has one for "not on this bucket" (ACLs on a bucket whose
//! object ownership is "bucket owner enforced", which is Eddy's model and AWS's default),
//! and `501 NotImplemented` otherwise.

use s3s::dto::{CreateBucketInput, ObjectCannedACL, ObjectOwnership};
use s3s::{S3Result, s3_error};

/// Checks every protection a write request (PutObject, CopyObject,
/// CreateMultipartUpload: their inputs share these field names) may ask for.
macro_rules! check_write {
    ($i:expr) => {{
        let i = &$i;
        $crate::protections::encryption(
            i.server_side_encryption.as_ref().map(|s| s.as_str()),
            i.sse_customer_algorithm.is_some()
                || i.sse_customer_key.is_some()
                || i.sse_customer_key_md5.is_some(),
            i.ssekms_key_id.is_some() || i.ssekms_encryption_context.is_some(),
        )
        .and_then(|()| {
            $crate::protections::object_acl(
                i.acl.as_ref(),
                i.grant_full_control.is_some()
                    || i.grant_read.is_some()
                    || i.grant_read_acp.is_some()
                    || i.grant_write_acp.is_some(),
            )
        })
    }};
}
pub(crate) use check_write;

/// Whether a request carries any SSE-C header (the three share a prefix in every input).
macro_rules! customer_key {
    ($i:expr, $alg:ident, $key:ident, $md5:ident) => {
        $i.$alg.is_some() || $i.$key.is_some() || $i.$md5.is_some()
    };
}
pub(crate) use customer_key;

/// Refuses server-side encryption asked of a write: `sse` is
/// `x-amz-server-side-encryption`, `customer_key` whether any SSE-C header came, `kms`
/// whether a KMS key id or context came.
pub fn encryption(sse: Option<&str>, customer_key: bool, kms: bool) -> S3Result<()> {
    if let Some(alg) = sse {
        return Err(s3_error!(
            NotImplemented,
            "Server-side encryption ({alg}) is not implemented: the object would be stored unencrypted"
        ));
    }
    if customer_key {
        return Err(s3_error!(
            NotImplemented,
            "Server-side encryption with customer-provided keys (SSE-C) is not implemented: the object would be stored unencrypted"
        ));
    }
    if kms {
        return Err(s3_error!(
            NotImplemented,
            "Server-side encryption with KMS keys is not implemented"
        ));
    }
    Ok(())
}

/// Refuses SSE-C headers on a read (or a copy's source): no object is encrypted, so, as
/// AWS answers for an unencrypted object, they do not apply.
pub fn no_customer_key(customer_key: bool) -> S3Result<()> {
    if customer_key {
        return Err(s3_error!(
            InvalidRequest,
            "The encryption parameters are not applicable to this object."
        ));
    }
    Ok(())
}

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
    fn each_unbuilt_protection_is_refused_with_its_code() {
        assert_eq!(code(encryption(None, false, false)), None);
        assert_eq!(
            code(encryption(Some("AES256"), false, false)),
            Some(S3ErrorCode::NotImplemented)
        );
        assert_eq!(
            code(encryption(None, true, false)),
            Some(S3ErrorCode::NotImplemented)
        );
        assert_eq!(
            code(encryption(None, false, true)),
            Some(S3ErrorCode::NotImplemented)
        );
        assert_eq!(
            code(no_customer_key(true)),
            Some(S3ErrorCode::InvalidRequest)
        );
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
