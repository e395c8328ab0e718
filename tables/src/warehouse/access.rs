//! Who may do what to users' namespaces, tables and views: each route is an `s3tables:`
//! action (AWS S3 Tables' names where one exists) on a `vast:iceberg:` resource, checked
//! against the caller's identity policies. An explicit Deny refuses; an Allow allows; with
//! no matching statement the administrator and the namespace's owner may (anyone may make
//! a namespace, as anyone may make a bucket). Files are objects of Eddy's S3: a location a
//! table or view is put at must be one the caller may write there (`s3:PutObject`), and
//! purging one must be a delete the caller may make (`s3:DeleteObject`), decided as the
//! S3 gateway decides them.

use iam::{Context, Decision, Directory, Request};

use crate::{TableError, TableResult};

/// The resource a namespace is, for policies: `vast:iceberg:namespace:<a.b>`.
pub fn namespace_resource(namespace: &str) -> String {
    format!("vast:iceberg:namespace:{}", dotted(namespace))
}

/// The resource a table (or view) is: `vast:iceberg:table:<a.b>/<name>`.
pub fn table_resource(namespace: &str, name: &str) -> String {
    format!("vast:iceberg:table:{}/{name}", dotted(namespace))
}

/// A namespace as users write it, levels joined by dots.
pub fn dotted(namespace: &str) -> String {
    namespace.replace('\u{1f}', ".")
}

/// The policies' word on `user` doing `action` on `resource`; `owner` (the namespace's
/// owner, if any) and the administrator pass when no statement matches.
pub fn must(
    dir: &Directory,
    user: &str,
    action: &str,
    resource: &str,
    owner: Option<&str>,
) -> TableResult<()> {
    let context = Context::default();
    let req = Request {
        action,
        resource,
        principal: Some(user),
        context: &context,
    };
    let allowed = match dir.identity_decision(Some(user), &req) {
        Decision::Deny => false,
        Decision::Allow => true,
        Decision::NoMatch => dir.is_admin(user) || owner.is_none_or(|o| o == user),
    };
    if allowed {
        Ok(())
    } else {
        Err(TableError::Forbidden(format!(
            "{user} may not {action} on {resource} (no policy allows it)"
        )))
    }
}

/// Whether `user` may do an S3 `action` on `s3://bucket/key`, as the S3 gateway decides
/// it: a Deny anywhere refuses, an Allow anywhere allows, else the bucket's owner and the
/// administrator may.
pub fn must_s3(
    dir: &Directory,
    user: &str,
    action: &str,
    bucket: &str,
    bucket_owner: &str,
    key: &str,
) -> TableResult<()> {
    if s3_allows(dir, user, action, bucket, bucket_owner, Some(key)) {
        Ok(())
    } else {
        Err(TableError::Forbidden(format!(
            "{user} may not {action} on s3://{bucket}/{key}: a table's files are objects the writers put there with their own keys, so a policy must allow it"
        )))
    }
}

/// Whether `user` may do an S3 `action` on a bucket (`key: None`) or an object of it, as
/// the S3 gateway decides it.
pub fn s3_allows(
    dir: &Directory,
    user: &str,
    action: &str,
    bucket: &str,
    bucket_owner: &str,
    key: Option<&str>,
) -> bool {
    let context = Context::default();
    let resource = match key {
        Some(k) => format!("arn:aws:s3:::{bucket}/{k}"),
        None => format!("arn:aws:s3:::{bucket}"),
    };
    let req = Request {
        action,
        resource: &resource,
        principal: Some(user),
        context: &context,
    };
    match dir.s3_decision(Some(user), Some(bucket), &req) {
        Decision::Deny => false,
        Decision::Allow => true,
        Decision::NoMatch => dir.is_admin(user) || bucket_owner == user,
    }
}
