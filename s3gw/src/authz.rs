//! Who may do what, for every S3 request: the operation as an IAM action on an ARN,
//! checked against the requester's identity policies and the bucket's policy with AWS's
//! evaluation (an explicit Deny anywhere wins; then an Allow anywhere; then the bucket
//! owner and the administrator are allowed; then, where the bucket's object ownership
//! lets ACLs count, the bucket's or the version's ACL; everyone else is refused).
//! Anonymous requests get only what a policy or an ACL allows them, and under Block
//! Public Access less: public ACL grants count for nothing with `IgnorePublicAcls`, and
//! a public bucket policy allows them nothing with `RestrictPublicBuckets`. The check
//! runs in s3s's access hook, after the signature (presigned URLs included) and before
//! the operation, so no operation can skip it; each operation's action is stated by its
//! own module (`ACTIONS`, gathered in [`FAMILIES`]); a copy's source and each key of a
//! multi-object delete are checked where they are read.

use std::collections::BTreeMap;

use iam::{Context, Decision, Request};
use s3s::{S3Result, s3_error};

use crate::Gateway;
use crate::bucket_settings::Bucket;
use crate::grants::Perm;

/// The conditions a request is evaluated under, kept in its extensions by the access
/// hook for the checks operations make later (a copy's source, a delete's keys).
#[derive(Debug, Clone, Default)]
pub struct AuthzContext {
    /// The requester (`None`: anonymous).
    pub principal: Option<String>,
    /// The condition keys.
    pub context: Context,
}

/// Whether the request came over TLS, put in its extensions by the listener
/// (`aws:SecureTransport`).
#[derive(Debug, Clone, Copy)]
pub struct SecureTransport(pub bool);

/// What one S3 operation needs: its IAM action (AWS's name), and another when the
/// request names a `versionId`. Each operation's module states its own ([`FAMILIES`]).
#[derive(Debug, Clone, Copy)]
pub struct OpAction {
    op: &'static str,
    action: &'static str,
    versioned: Option<&'static str>,
}

impl OpAction {
    /// s3s's operation `op` needs `action`.
    pub const fn new(op: &'static str, action: &'static str) -> Self {
        Self {
            op,
            action,
            versioned: None,
        }
    }

    /// ... and `action` instead when the request names a version.
    pub const fn or_versioned(self, action: &'static str) -> Self {
        Self {
            versioned: Some(action),
            ..self
        }
    }
}

/// Every operation family's actions, one table per module.
const FAMILIES: &[&[OpAction]] = &[
    crate::acl::ACTIONS,
    crate::attributes::ACTIONS,
    crate::bucket::ACTIONS,
    crate::bucket_policy::ACTIONS,
    crate::copy::ACTIONS,
    crate::cors::ACTIONS,
    crate::delete::ACTIONS,
    crate::get::ACTIONS,
    crate::lifecycle::ACTIONS,
    crate::list::ACTIONS,
    crate::multipart::ACTIONS,
    crate::notification::ACTIONS,
    crate::object_lock::ACTIONS,
    crate::ownership::ACTIONS,
    crate::post_object::ACTIONS,
    crate::public_access::ACTIONS,
    crate::put::ACTIONS,
    crate::sse::ACTIONS,
    crate::tagging::ACTIONS,
    crate::versioning::ACTIONS,
];

/// The IAM action of an s3s operation (`versioned`: a `versionId` was given), as its
/// module states it; an operation no module serves is the action of its own name (s3s
/// answers it NotImplemented after this check, so even that needs a policy's leave).
pub fn action(op: &str, versioned: bool) -> String {
    let found = FAMILIES.iter().flat_map(|f| f.iter()).find(|a| a.op == op);
    match found {
        Some(a) if versioned => a.versioned.unwrap_or(a.action).to_owned(),
        Some(a) => a.action.to_owned(),
        None => format!("s3:{op}"),
    }
}

/// The ARN of a bucket, or of a key in it.
pub fn arn(bucket: &str, key: Option<&str>) -> String {
    match key {
        Some(k) => format!("arn:aws:s3:::{bucket}/{k}"),
        None => format!("arn:aws:s3:::{bucket}"),
    }
}

/// The condition keys of a request: the client's address, TLS, the user name, and the
/// listing parameters (`s3:prefix`, `s3:delimiter`, `s3:max-keys`) from its query.
pub fn context(
    principal: Option<&str>,
    source: Option<std::net::IpAddr>,
    secure: bool,
    query: Option<&str>,
) -> Context {
    let mut values = BTreeMap::new();
    if let Some(p) = principal {
        values.insert("aws:username".to_owned(), vec![p.to_owned()]);
        values.insert("aws:userid".to_owned(), vec![p.to_owned()]);
    }
    for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        let key = match k.as_ref() {
            "prefix" => "s3:prefix",
            "delimiter" => "s3:delimiter",
            "max-keys" => "s3:max-keys",
            _ => continue,
        };
        values.insert(key.to_owned(), vec![v.into_owned()]);
    }
    Context {
        source_ip: source,
        secure_transport: secure,
        values,
    }
}

impl Gateway {
    /// The policies' answer for `who` doing `action` on `bucket` (and `key`), before the
    /// managed-bucket check: a Deny anywhere refuses, an Allow anywhere allows, else the
    /// bucket's owner and the administrator may.
    async fn decide(
        &self,
        who: &AuthzContext,
        action: &str,
        bucket: Option<&str>,
        key: Option<&str>,
        version: Option<&str>,
    ) -> S3Result<bool> {
        let resource = match bucket {
            Some(b) => arn(b, key),
            None => "arn:aws:s3:::*".to_owned(),
        };
        let principal = who.principal.as_deref();
        let req = Request {
            action,
            resource: &resource,
            principal,
            context: &who.context,
        };
        let dir = self.directory();
        Ok(match dir.s3_decision(principal, bucket, &req) {
            Decision::Deny => false,
            // Only a bucket policy allows an anonymous request, and Block Public
            // Access's RestrictPublicBuckets takes that from a public one.
            // (The bucket is read only when its policy is public.)
            Decision::Allow => match (principal, bucket) {
                (None, Some(b))
                    if dir
                        .bucket_policy_text(b)
                        .is_some_and(|t| crate::bucket_policy::is_public(&t)) =>
                {
                    self.bucket_record(b).await?.is_none_or(|record| {
                        !Bucket::decode(record)
                            .public_access()
                            .restrict_public_buckets
                    })
                }
                _ => true,
            },
            Decision::NoMatch => match (principal, bucket) {
                (None, None) => false,
                (Some(p), _) if dir.is_admin(p) => true,
                // Listing one's buckets and making one are every user's own business
                // (making one that exists answers BucketAlreadyExists, as AWS does).
                (Some(_), None) => true,
                (Some(_), Some(_)) if action == "s3:CreateBucket" => true,
                (p, Some(b)) => match self.bucket_record(b).await? {
                    Some(record) if p.is_some_and(|p| p == record.owner) => true,
                    Some(record) => {
                        let b = Bucket::decode(record);
                        self.acl_permits(p, action, &b, key, version).await?
                    }
                    // A missing bucket answers NoSuchBucket to users, AccessDenied to
                    // the anonymous.
                    None => p.is_some(),
                },
            },
        })
    }

    async fn bucket_record(&self, name: &str) -> S3Result<Option<catalog::BucketRecord>> {
        self.catalog()
            .s3()
            .bucket(name)
            .await
            .map_err(crate::error::catalog_error)
    }

    /// Whether the bucket's ACL, or the addressed version's, gives `principal` what
    /// `action` needs (the mapping of ACL permissions to actions AWS documents); never
    /// while the bucket's ACLs are disabled.
    async fn acl_permits(
        &self,
        principal: Option<&str>,
        action: &str,
        b: &Bucket,
        key: Option<&str>,
        version: Option<&str>,
    ) -> S3Result<bool> {
        if !b.ownership().acls_enabled() {
            return Ok(false);
        }
        let ignore_public = b.public_access().ignore_public_acls;
        let (perm, on_object) = match action {
            "s3:ListBucket" | "s3:ListBucketVersions" | "s3:ListBucketMultipartUploads" => {
                (Perm::Read, false)
            }
            "s3:PutObject" | "s3:DeleteObject" => (Perm::Write, false),
            "s3:GetBucketAcl" => (Perm::ReadAcp, false),
            "s3:PutBucketAcl" => (Perm::WriteAcp, false),
            "s3:GetObject" | "s3:GetObjectVersion" => (Perm::Read, true),
            "s3:GetObjectAcl" | "s3:GetObjectVersionAcl" => (Perm::ReadAcp, true),
            "s3:PutObjectAcl" | "s3:PutObjectVersionAcl" => (Perm::WriteAcp, true),
            _ => return Ok(false),
        };
        if !on_object {
            return Ok(crate::ownership::bucket_acl(b).permits(principal, perm, ignore_public));
        }
        let Some(key) = key else {
            return Ok(false);
        };
        let s3 = self.catalog().s3();
        let v = match version {
            Some(id) => s3.object_version(&b.name, key, id).await,
            None => s3.object(&b.name, key).await,
        }
        .map_err(crate::error::catalog_error)?;
        Ok(v.filter(|v| !v.delete_marker).is_some_and(|v| {
            crate::ownership::version_acl(b, &v).permits(principal, perm, ignore_public)
        }))
    }

    /// Checks that `who` may do `action` on `bucket` (and `key`): `AccessDenied` when a
    /// policy denies it, when nothing allows it and the requester is neither the
    /// bucket's owner nor the administrator, or when it would change a bucket Eddy
    /// manages ([`crate::managed`]; checked after the policies, so the message tells
    /// only those who may otherwise act on the bucket that it is managed). A bucket that
    /// does not exist is left to the operation (it answers `NoSuchBucket`), except for
    /// anonymous requests.
    pub async fn authorize(
        &self,
        who: &AuthzContext,
        action: &str,
        bucket: Option<&str>,
        key: Option<&str>,
    ) -> S3Result<()> {
        self.authorize_version(who, action, bucket, key, None).await
    }

    /// [`Gateway::authorize`] for one version of the key (`None`: the current one), whose
    /// ACL is the one consulted.
    pub async fn authorize_version(
        &self,
        who: &AuthzContext,
        action: &str,
        bucket: Option<&str>,
        key: Option<&str>,
        version: Option<&str>,
    ) -> S3Result<()> {
        let principal = who.principal.as_deref();
        let resource = match bucket {
            Some(b) => arn(b, key),
            None => "arn:aws:s3:::*".to_owned(),
        };
        match self.verdict(who, action, bucket, key, version).await? {
            Verdict::Allowed => Ok(()),
            Verdict::Managed(b) => {
                tracing::debug!(
                    ?principal,
                    action,
                    resource,
                    "S3 change of a managed bucket refused"
                );
                Err(s3s::S3Error::with_message(
                    s3s::S3ErrorCode::AccessDenied,
                    crate::managed::refusal(&b),
                ))
            }
            Verdict::Refused => {
                tracing::debug!(?principal, action, resource, "S3 request refused by policy");
                self.directory().audit(
                    iam::audit::AuditEvent::now(
                        "s3",
                        principal,
                        action,
                        resource,
                        iam::audit::Outcome::Refused,
                    )
                    .from(who.context.source_ip.map(|ip| ip.to_string()))
                    .because("no policy allows it"),
                );
                Err(s3_error!(AccessDenied, "Access Denied"))
            }
        }
    }

    /// Whether [`Gateway::authorize`] would let `who` do `action`, asked without acting
    /// on a refusal (no audit entry): the web console shows only the buttons that would
    /// work.
    pub async fn would_allow(
        &self,
        who: &AuthzContext,
        action: &str,
        bucket: Option<&str>,
        key: Option<&str>,
    ) -> bool {
        matches!(
            self.verdict(who, action, bucket, key, None).await,
            Ok(Verdict::Allowed)
        )
    }

    /// What the policies, the ACLs and the managed-bucket rule say of a request.
    async fn verdict(
        &self,
        who: &AuthzContext,
        action: &str,
        bucket: Option<&str>,
        key: Option<&str>,
        version: Option<&str>,
    ) -> S3Result<Verdict> {
        let mut allowed = self.decide(who, action, bucket, key, version).await?;
        // A bucket's inventory files (docs/iceberg.md) show what listing that bucket
        // shows: reading them needs that too.
        if allowed
            && let (Some(b), Some(k)) = (bucket, key)
            && self.managed_buckets().contains(b)
            && let Some(listed) = k
                .strip_prefix("b_")
                .and_then(|rest| rest.split('/').next())
                .filter(|l| !l.is_empty() && *l != b)
        {
            allowed = self
                .decide(who, "s3:ListBucket", Some(listed), None, None)
                .await?;
        }
        if allowed
            && let Some(b) = bucket.filter(|b| self.managed_buckets().contains(b))
            && !crate::managed::allowed(action)
        {
            return Ok(Verdict::Managed(b.to_owned()));
        }
        Ok(if allowed {
            Verdict::Allowed
        } else {
            Verdict::Refused
        })
    }
}

/// What [`Gateway::verdict`] found.
enum Verdict {
    Allowed,
    /// Allowed by the policies, but a change of a bucket Eddy manages.
    Managed(String),
    Refused,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_named_as_aws_names_their_actions() {
        assert_eq!(action("GetObject", false), "s3:GetObject");
        assert_eq!(action("HeadObject", true), "s3:GetObjectVersion");
        assert_eq!(action("ListObjectsV2", false), "s3:ListBucket");
        assert_eq!(action("UploadPart", false), "s3:PutObject");
        assert_eq!(action("DeleteObject", true), "s3:DeleteObjectVersion");
        assert_eq!(action("PutBucketPolicy", false), "s3:PutBucketPolicy");
        assert_eq!(
            action("DeleteBucketEncryption", false),
            "s3:PutEncryptionConfiguration"
        );
        assert_eq!(arn("b", Some("k/1")), "arn:aws:s3:::b/k/1");
        let cx = context(
            Some("alice"),
            None,
            true,
            Some("prefix=logs%2F&list-type=2"),
        );
        assert_eq!(cx.values["s3:prefix"], vec!["logs/".to_owned()]);
        assert_eq!(cx.values["aws:username"], vec!["alice".to_owned()]);
        assert!(cx.secure_transport);
    }

    #[test]
    fn each_operation_is_stated_once() {
        let mut ops: Vec<&str> = FAMILIES
            .iter()
            .flat_map(|f| f.iter().map(|a| a.op))
            .collect();
        let n = ops.len();
        ops.sort_unstable();
        ops.dedup();
        assert_eq!(ops.len(), n, "an operation is in two modules' ACTIONS");
        assert!(
            FAMILIES
                .iter()
                .flat_map(|f| f.iter())
                .all(|a| a.action.starts_with("s3:"))
        );
    }
}
