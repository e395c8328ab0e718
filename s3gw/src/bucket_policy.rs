//! Bucket policies: PutBucketPolicy (validated as IAM's grammar before it is stored: a
//! document Eddy would read differently from AWS is refused with `MalformedPolicy`),
//! GetBucketPolicy (the document as it was put) and DeleteBucketPolicy. They are kept in
//! the catalog through the directory, removed with their bucket, and take effect at once
//! ([`crate::authz`]). A public policy ([`is_public`]) is refused under Block Public
//! Access's `BlockPublicPolicy`, and GetBucketPolicyStatus reports whether it is one.

use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};
use serde_json::Value;

use crate::Gateway;
use crate::authz::OpAction;

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new("PutBucketPolicy", "s3:PutBucketPolicy"),
    OpAction::new("GetBucketPolicy", "s3:GetBucketPolicy"),
    OpAction::new("DeleteBucketPolicy", "s3:DeleteBucketPolicy"),
    OpAction::new("GetBucketPolicyStatus", "s3:GetBucketPolicyStatus"),
];

/// Whether a policy document is public as Block Public Access judges one: some
/// statement allows a wildcard principal without a condition that narrows it (AWS also
/// counts some conditions as narrowing nothing; any condition counts as narrowing here).
pub fn is_public(document: &str) -> bool {
    let Ok(doc) = serde_json::from_str::<Value>(document) else {
        return false;
    };
    let statements = match &doc["Statement"] {
        Value::Array(a) => a.iter().collect(),
        one @ Value::Object(_) => vec![one],
        _ => vec![],
    };
    let wildcard = |p: &Value| match p {
        Value::String(s) => s == "*",
        Value::Array(a) => a.iter().any(|v| v == "*"),
        _ => false,
    };
    statements.into_iter().any(|s| {
        s["Effect"] == "Allow"
            && s.get("Condition")
                .is_none_or(|c| c.as_object().is_none_or(|o| o.is_empty()))
            && match &s["Principal"] {
                Value::String(p) => p == "*",
                Value::Object(o) => o.values().any(wildcard),
                _ => false,
            }
    })
}

/// PutBucketPolicy.
pub async fn put_bucket_policy(
    gw: &Gateway,
    req: S3Request<PutBucketPolicyInput>,
) -> S3Result<S3Response<PutBucketPolicyOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    if b.public_access().block_public_policy && is_public(&req.input.policy) {
        return Err(s3_error!(AccessDenied, "Access Denied"));
    }
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

/// GetBucketPolicyStatus: whether the bucket's policy is public.
pub async fn get_bucket_policy_status(
    gw: &Gateway,
    req: S3Request<GetBucketPolicyStatusInput>,
) -> S3Result<S3Response<GetBucketPolicyStatusOutput>> {
    gw.bucket_for(&req, &req.input.bucket).await?;
    let policy = gw
        .directory()
        .bucket_policy_text(&req.input.bucket)
        .ok_or_else(|| s3_error!(NoSuchBucketPolicy, "The bucket policy does not exist"))?;
    Ok(S3Response::new(GetBucketPolicyStatusOutput {
        policy_status: Some(PolicyStatus {
            is_public: Some(is_public(&policy)),
        }),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_is_public_when_it_allows_anyone_unconditionally() {
        let p = |stmt: &str| format!(r#"{{"Version":"2012-10-17","Statement":[{stmt}]}}"#);
        let read = r#""Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*""#;
        assert!(is_public(&p(&format!(
            r#"{{"Effect":"Allow","Principal":"*",{read}}}"#
        ))));
        assert!(is_public(&p(&format!(
            r#"{{"Effect":"Allow","Principal":{{"AWS":["alice","*"]}},{read}}}"#
        ))));
        assert!(!is_public(&p(&format!(
            r#"{{"Effect":"Allow","Principal":{{"AWS":"alice"}},{read}}}"#
        ))));
        assert!(!is_public(&p(&format!(
            r#"{{"Effect":"Deny","Principal":"*",{read}}}"#
        ))));
        assert!(!is_public(&p(&format!(
            r#"{{"Effect":"Allow","Principal":"*",{read},"Condition":{{"IpAddress":{{"aws:SourceIp":"10.0.0.0/8"}}}}}}"#
        ))));
    }
}
