//! Buckets Eddy manages: the broker's buckets, where the topic tables' Parquet, manifest
//! and metadata files live. Their objects are written only by the tabler, through the
//! catalog; over S3 they are readable by whoever a policy lets read them (Trino and
//! Spark read the data files there), and no S3 request may change them or the bucket,
//! the administrator's included: a table whose file was deleted by hand cannot be
//! loaded again until it is repaired (`eddy tables repair`). Such a bucket shows the tag
//! [`MANAGED_TAG`].

use std::collections::BTreeSet;

/// The tag a managed bucket shows in GetBucketTagging (not stored; a put cannot remove
/// it), so tools that list buckets with their tags can tell it from the users' own.
pub const MANAGED_TAG: (&str, &str) = ("eddy:managed-by", "broker");

/// The names of the buckets Eddy manages.
#[derive(Debug, Clone, Default)]
pub struct ManagedBuckets(BTreeSet<String>);

impl ManagedBuckets {
    /// The buckets named.
    pub fn new<I: IntoIterator<Item = String>>(names: I) -> Self {
        Self(names.into_iter().collect())
    }

    /// Whether Eddy manages `bucket`.
    pub fn contains(&self, bucket: &str) -> bool {
        self.0.contains(bucket)
    }
}

/// Whether an S3 request needing IAM `action` may run on a managed bucket: reads
/// (`s3:Get*`, `s3:List*`) may, as may what only decides who may read (the bucket's
/// policy, ACL, object ownership, Block Public Access, CORS and tags) and `CreateBucket` (which changes nothing on a bucket
/// that exists: it answers `BucketAlreadyOwnedByYou`); anything that writes, deletes or
/// changes how objects are kept may not.
pub fn allowed(action: &str) -> bool {
    action.starts_with("s3:Get")
        || action.starts_with("s3:List")
        || matches!(
            action,
            "s3:CreateBucket"
                | "s3:PutBucketPolicy"
                | "s3:DeleteBucketPolicy"
                | "s3:PutBucketAcl"
                | "s3:PutBucketOwnershipControls"
                | "s3:PutBucketPublicAccessBlock"
                | "s3:PutBucketCORS"
                | "s3:PutBucketTagging"
        )
}

/// The message of the `AccessDenied` a refused request gets.
pub fn refusal(bucket: &str) -> String {
    format!(
        "Access Denied: bucket {bucket} is managed by the broker (it holds the topics' \
         tables); its objects can be read but not changed over S3"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::action;

    #[test]
    fn reads_pass_and_every_change_is_refused() {
        for op in [
            "GetObject",
            "HeadObject",
            "ListObjectsV2",
            "HeadBucket",
            "GetObjectTagging",
            "PutBucketAcl",
            "PutBucketOwnershipControls",
            "DeletePublicAccessBlock",
        ] {
            assert!(allowed(&action(op, false)), "{op}");
        }
        for op in [
            "PutObject",
            "CopyObject",
            "DeleteObject",
            "DeleteObjects",
            "DeleteBucket",
            "CreateMultipartUpload",
            "UploadPart",
            "CompleteMultipartUpload",
            "AbortMultipartUpload",
            "PutObjectTagging",
            "PutObjectAcl",
            "DeleteObjectTagging",
            "PutBucketVersioning",
            "PutBucketLifecycleConfiguration",
            "DeleteBucketLifecycle",
            "PutBucketEncryption",
            "PutObjectRetention",
            "PutObjectLegalHold",
            "PutBucketNotificationConfiguration",
            "PutObjectLockConfiguration",
            "PostObject",
        ] {
            assert!(!allowed(&action(op, false)), "{op}");
            assert!(!allowed(&action(op, true)), "{op} with a version");
        }
        assert!(ManagedBuckets::new(["kafka".to_owned()]).contains("kafka"));
        assert!(!ManagedBuckets::default().contains("kafka"));
    }
}
