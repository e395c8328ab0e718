//! Canned bucket ACLs mapped onto bucket policies: with object ownership "bucket owner
//! enforced" (Eddy's only mode) an ACL grants nothing by itself, so `public-read` on
//! CreateBucket or PutBucketAcl becomes one statement of the bucket's policy (Sid
//! [`PUBLIC_READ_SID`]: everyone may list the bucket and read its objects) and `private`
//! removes it. GetBucketAcl reports the owner's FULL_CONTROL and, while that statement is
//! there, AllUsers READ. Other grants and object ACLs other than the owner's stay refused
//! ([`crate::protections`]).

use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};
use serde_json::{Value, json};

use crate::Gateway;
use crate::authz::OpAction;

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new("PutBucketAcl", "s3:PutBucketAcl"),
    OpAction::new("GetBucketAcl", "s3:GetBucketAcl"),
];

/// The Sid of the statement a `public-read` bucket ACL makes.
pub const PUBLIC_READ_SID: &str = "EddyCannedAclPublicRead";

const ALL_USERS: &str = "http://acs.amazonaws.com/groups/global/AllUsers";

/// The statement of a `public-read` bucket.
fn public_read(bucket: &str) -> Value {
    json!({
        "Sid": PUBLIC_READ_SID,
        "Effect": "Allow",
        "Principal": "*",
        "Action": ["s3:GetObject", "s3:ListBucket"],
        "Resource": [format!("arn:aws:s3:::{bucket}"), format!("arn:aws:s3:::{bucket}/*")],
    })
}

/// The policy document of a new bucket created `public-read`.
pub fn public_read_policy(bucket: &str) -> String {
    json!({"Version": "2012-10-17", "Statement": [public_read(bucket)]}).to_string()
}

/// Whether a canned bucket ACL is one Eddy maps: `Some(true)` public-read,
/// `Some(false)` private, `None` another.
pub fn canned_public(acl: &BucketCannedACL) -> Option<bool> {
    match acl.as_str() {
        BucketCannedACL::PUBLIC_READ => Some(true),
        BucketCannedACL::PRIVATE => Some(false),
        _ => None,
    }
}

/// The bucket's policy with the public-read statement added (`public`) or removed;
/// `None` when nothing is left.
fn with_public_read(current: Option<&str>, bucket: &str, public: bool) -> Option<String> {
    let mut doc: Value = current
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_else(|| json!({"Version": "2012-10-17", "Statement": []}));
    if !doc["Statement"].is_array() {
        // A single statement object: make it a list so one can be added.
        let one = doc["Statement"].take();
        doc["Statement"] = Value::Array(if one.is_null() { vec![] } else { vec![one] });
    }
    let statements = doc["Statement"].as_array_mut()?;
    statements.retain(|s| s["Sid"] != PUBLIC_READ_SID);
    if public {
        statements.push(public_read(bucket));
    }
    (!statements.is_empty()).then(|| doc.to_string())
}

/// Whether the bucket's policy holds the public-read statement.
fn is_public(gw: &Gateway, bucket: &str) -> bool {
    gw.directory()
        .bucket_policy_text(bucket)
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_some_and(|d| {
            d["Statement"]
                .as_array()
                .is_some_and(|a| a.iter().any(|s| s["Sid"] == PUBLIC_READ_SID))
        })
}

/// PutBucketAcl: a canned `private` or `public-read`; explicit grants are refused.
pub async fn put_bucket_acl(
    gw: &Gateway,
    req: S3Request<PutBucketAclInput>,
) -> S3Result<S3Response<PutBucketAclOutput>> {
    let i = &req.input;
    gw.bucket_for(&req, &i.bucket).await?;
    let grants = i.access_control_policy.is_some()
        || i.grant_full_control.is_some()
        || i.grant_read.is_some()
        || i.grant_read_acp.is_some()
        || i.grant_write.is_some()
        || i.grant_write_acp.is_some();
    let public = match (&i.acl, grants) {
        (Some(acl), false) => canned_public(acl),
        _ => None,
    }
    .ok_or_else(|| {
        s3_error!(
            AccessControlListNotSupported,
            "The bucket does not allow ACLs other than the canned private and public-read (a bucket policy says the rest)"
        )
    })?;
    let current = gw.directory().bucket_policy_text(&i.bucket);
    let next = with_public_read(current.as_deref(), &i.bucket, public);
    if next != current {
        gw.directory()
            .put_bucket_policy(&i.bucket, next.as_deref())
            .await
            .map_err(crate::error::iam_error)?;
    }
    Ok(S3Response::new(PutBucketAclOutput::default()))
}

/// GetBucketAcl.
pub async fn get_bucket_acl(
    gw: &Gateway,
    req: S3Request<GetBucketAclInput>,
) -> S3Result<S3Response<GetBucketAclOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let mut grants = vec![Grant {
        grantee: Some(Grantee {
            display_name: Some(b.owner.clone()),
            email_address: None,
            id: Some(b.owner.clone()),
            type_: Type::from_static(Type::CANONICAL_USER),
            uri: None,
        }),
        permission: Some(Permission::from_static(Permission::FULL_CONTROL)),
    }];
    if is_public(gw, &b.name) {
        grants.push(Grant {
            grantee: Some(Grantee {
                display_name: None,
                email_address: None,
                id: None,
                type_: Type::from_static(Type::GROUP),
                uri: Some(ALL_USERS.to_owned()),
            }),
            permission: Some(Permission::from_static(Permission::READ)),
        });
    }
    Ok(S3Response::new(GetBucketAclOutput {
        grants: Some(grants),
        owner: Some(crate::owner(&b.owner)),
    }))
}

/// The policy a new bucket's canned ACL gives it, if any.
pub fn creation_policy(bucket: &str, acl: Option<&BucketCannedACL>) -> Option<String> {
    acl.and_then(canned_public)
        .filter(|p| *p)
        .map(|_| public_read_policy(bucket))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_public_read_statement_is_added_once_and_removed_alone() {
        let other = r#"{"Statement":{"Sid":"Mine","Effect":"Deny","Principal":"*","Action":"s3:DeleteObject","Resource":"*"}}"#;
        let on = with_public_read(Some(other), "b", true).unwrap();
        let again = with_public_read(Some(&on), "b", true).unwrap();
        let doc: Value = serde_json::from_str(&again).unwrap();
        assert_eq!(doc["Statement"].as_array().unwrap().len(), 2);
        let off = with_public_read(Some(&again), "b", false).unwrap();
        let doc: Value = serde_json::from_str(&off).unwrap();
        assert_eq!(doc["Statement"][0]["Sid"], "Mine");
        assert_eq!(
            with_public_read(Some(&public_read_policy("b")), "b", false),
            None
        );
        iam::Policy::parse(&public_read_policy("b"), iam::PolicyKind::Resource).unwrap();
    }
}
