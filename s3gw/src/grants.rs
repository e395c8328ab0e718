//! Access control lists: the grants of a bucket or an object version as S3 states them
//! (canned ACLs, `x-amz-grant-*` headers, the `AccessControlPolicy` XML), their stored
//! encoding, and the question [`crate::authz`] asks of them: does this list give this
//! requester this permission. Only buckets whose object ownership lets ACLs in
//! ([`crate::ownership`]) keep or consult one.
//!
//! Stored encoding (catalog format 11): JSON `{"owner": ID, "grants": [[GRANTEE,
//! PERMISSION], ...]}`, a grantee being `{"user": ID}`, `"all_users"`,
//! `"authenticated_users"` or `"log_delivery"`, a permission one of S3's names
//! (`FULL_CONTROL`, `READ`, `WRITE`, `READ_ACP`, `WRITE_ACP`).

use s3s::dto::{AccessControlPolicy, Grant, Grantee as S3Grantee, Owner, Permission, Type};
use s3s::{S3Result, s3_error};
use serde::{Deserialize, Serialize};

/// The URI of the group of everyone, signed or not.
pub const ALL_USERS: &str = "http://acs.amazonaws.com/groups/global/AllUsers";
/// The URI of the group of every signed requester.
pub const AUTHENTICATED_USERS: &str = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";
/// The URI of S3's log delivery group (grantable, never a requester here).
pub const LOG_DELIVERY: &str = "http://acs.amazonaws.com/groups/s3/LogDelivery";

/// Who a grant is to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grantee {
    /// One user, by canonical id (an Eddy user's access key).
    User(String),
    /// Everyone, anonymous requests included.
    AllUsers,
    /// Every signed requester.
    AuthenticatedUsers,
    /// S3's log delivery group.
    LogDelivery,
}

impl Grantee {
    /// Whether the grant opens the resource beyond named users (what Block Public
    /// Access calls public).
    fn is_public(&self) -> bool {
        matches!(self, Grantee::AllUsers | Grantee::AuthenticatedUsers)
    }

    /// Whether `principal` (`None`: anonymous) is this grantee.
    fn covers(&self, principal: Option<&str>) -> bool {
        match self {
            Grantee::User(id) => principal == Some(id.as_str()),
            Grantee::AllUsers => true,
            Grantee::AuthenticatedUsers => principal.is_some(),
            Grantee::LogDelivery => false,
        }
    }
}

/// A permission, by S3's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Perm {
    /// Every other permission.
    FullControl,
    /// Read the object; list the bucket.
    Read,
    /// Write objects into the bucket (no meaning on an object).
    Write,
    /// Read the ACL.
    ReadAcp,
    /// Write the ACL.
    WriteAcp,
}

impl Perm {
    fn name(self) -> &'static str {
        match self {
            Perm::FullControl => Permission::FULL_CONTROL,
            Perm::Read => Permission::READ,
            Perm::Write => Permission::WRITE,
            Perm::ReadAcp => Permission::READ_ACP,
            Perm::WriteAcp => Permission::WRITE_ACP,
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            Permission::FULL_CONTROL => Perm::FullControl,
            Permission::READ => Perm::Read,
            Permission::WRITE => Perm::Write,
            Permission::READ_ACP => Perm::ReadAcp,
            Permission::WRITE_ACP => Perm::WriteAcp,
            _ => return None,
        })
    }
}

/// An access control list: its owner and grants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acl {
    /// The resource's owner (canonical id).
    pub owner: String,
    /// The grants, in the order given.
    pub grants: Vec<(Grantee, Perm)>,
}

/// The ACL a request asks for, in whichever of S3's three forms it came: a canned name,
/// `x-amz-grant-*` headers, or an `AccessControlPolicy` body.
#[derive(Debug, Default, Clone, Copy)]
pub struct Requested<'a> {
    /// `x-amz-acl`.
    pub canned: Option<&'a str>,
    /// `x-amz-grant-full-control`.
    pub full_control: Option<&'a str>,
    /// `x-amz-grant-read`.
    pub read: Option<&'a str>,
    /// `x-amz-grant-read-acp`.
    pub read_acp: Option<&'a str>,
    /// `x-amz-grant-write`.
    pub write: Option<&'a str>,
    /// `x-amz-grant-write-acp`.
    pub write_acp: Option<&'a str>,
    /// The request body (PutBucketAcl, PutObjectAcl).
    pub policy: Option<&'a AccessControlPolicy>,
}

/// Builds a [`Requested`] from an input whose ACL fields have S3's names: the object
/// writes' (PutObject, CopyObject, CreateMultipartUpload), or with `acl_op` those of
/// PutBucketAcl and PutObjectAcl, which add `x-amz-grant-write` and a body.
macro_rules! requested {
    (acl_op $i:expr) => {{
        let i = &$i;
        $crate::grants::Requested {
            write: i.grant_write.as_deref(),
            policy: i.access_control_policy.as_ref(),
            ..$crate::grants::requested!(i)
        }
    }};
    ($i:expr) => {{
        let i = &$i;
        $crate::grants::Requested {
            canned: i.acl.as_ref().map(|a| a.as_str()),
            full_control: i.grant_full_control.as_deref(),
            read: i.grant_read.as_deref(),
            read_acp: i.grant_read_acp.as_deref(),
            write: None,
            write_acp: i.grant_write_acp.as_deref(),
            policy: None,
        }
    }};
}
pub(crate) use requested;

impl Requested<'_> {
    fn has_grants(&self) -> bool {
        [
            self.full_control,
            self.read,
            self.read_acp,
            self.write,
            self.write_acp,
        ]
        .iter()
        .any(Option::is_some)
    }

    /// Whether it asks for no more than the owner's control: nothing, `private` or
    /// `bucket-owner-full-control` (what a bucket whose ACLs are disabled still takes).
    pub fn owner_only(&self) -> bool {
        !self.has_grants()
            && self.policy.is_none()
            && self
                .canned
                .is_none_or(|c| c == "private" || c == "bucket-owner-full-control")
    }

    /// The list asked for, owned by `owner` in a bucket owned by `bucket_owner`; `None`
    /// when the request names none.
    pub fn resolve(&self, owner: &str, bucket_owner: &str) -> S3Result<Option<Acl>> {
        let forms = [
            self.canned.is_some(),
            self.has_grants(),
            self.policy.is_some(),
        ];
        if forms.iter().filter(|f| **f).count() > 1 {
            return Err(s3_error!(
                InvalidRequest,
                "Specifying both Canned ACLs and Header Grants is not allowed"
            ));
        }
        if let Some(c) = self.canned {
            return Acl::canned(c, owner, bucket_owner).map(Some);
        }
        if let Some(p) = self.policy {
            return Acl::from_policy(p, owner).map(Some);
        }
        if !self.has_grants() {
            return Ok(None);
        }
        let mut grants = Vec::new();
        for (header, perm) in [
            (self.full_control, Perm::FullControl),
            (self.read, Perm::Read),
            (self.read_acp, Perm::ReadAcp),
            (self.write, Perm::Write),
            (self.write_acp, Perm::WriteAcp),
        ] {
            if let Some(h) = header {
                for g in parse_grant_header(h)? {
                    grants.push((g, perm));
                }
            }
        }
        Ok(Some(Acl {
            owner: owner.to_owned(),
            grants,
        }))
    }
}

/// The grantees of one `x-amz-grant-*` header: `id="..."`, `uri="..."` or
/// `emailAddress="..."`, comma-separated.
fn parse_grant_header(h: &str) -> S3Result<Vec<Grantee>> {
    let mut out = Vec::new();
    for part in h.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (kind, value) = part
            .split_once('=')
            .ok_or_else(|| s3_error!(InvalidArgument, "Invalid grant header: {part}"))?;
        let value = value.trim().trim_matches('"');
        out.push(match kind.trim().to_ascii_lowercase().as_str() {
            "id" if !value.is_empty() => Grantee::User(value.to_owned()),
            "uri" => group(value)?,
            "emailaddress" => return Err(email_refused()),
            _ => return Err(s3_error!(InvalidArgument, "Invalid grant header: {part}")),
        });
    }
    Ok(out)
}

fn group(uri: &str) -> S3Result<Grantee> {
    match uri {
        ALL_USERS => Ok(Grantee::AllUsers),
        AUTHENTICATED_USERS => Ok(Grantee::AuthenticatedUsers),
        LOG_DELIVERY => Ok(Grantee::LogDelivery),
        _ => Err(s3_error!(InvalidArgument, "Invalid group uri")),
    }
}

fn email_refused() -> s3s::S3Error {
    s3_error!(
        UnresolvableGrantByEmailAddress,
        "The e-mail address you provided does not match any account on record."
    )
}

impl Acl {
    /// The owner's full control, nothing else (`private`).
    pub fn private(owner: &str) -> Self {
        Acl {
            owner: owner.to_owned(),
            grants: vec![(Grantee::User(owner.to_owned()), Perm::FullControl)],
        }
    }

    /// A canned ACL as AWS defines it, for a resource owned by `owner` in a bucket owned
    /// by `bucket_owner`.
    pub fn canned(name: &str, owner: &str, bucket_owner: &str) -> S3Result<Self> {
        let mut acl = Acl::private(owner);
        let mut add = |g: Grantee, p: Perm| acl.grants.push((g, p));
        match name {
            "private" => {}
            "public-read" => add(Grantee::AllUsers, Perm::Read),
            "public-read-write" => {
                add(Grantee::AllUsers, Perm::Read);
                add(Grantee::AllUsers, Perm::Write);
            }
            "authenticated-read" => add(Grantee::AuthenticatedUsers, Perm::Read),
            "bucket-owner-read" if owner != bucket_owner => {
                add(Grantee::User(bucket_owner.to_owned()), Perm::Read)
            }
            "bucket-owner-full-control" if owner != bucket_owner => {
                add(Grantee::User(bucket_owner.to_owned()), Perm::FullControl)
            }
            "bucket-owner-read" | "bucket-owner-full-control" => {}
            "log-delivery-write" => {
                add(Grantee::LogDelivery, Perm::Write);
                add(Grantee::LogDelivery, Perm::ReadAcp);
            }
            // EC2's read of AMI bundles: no such requester here, so the owner's alone.
            "aws-exec-read" => {}
            _ => {
                return Err(s3_error!(
                    InvalidArgument,
                    "The canned ACL {name} is not valid"
                ));
            }
        }
        Ok(acl)
    }

    /// The list an `AccessControlPolicy` body states. Its owner, when given, must be the
    /// resource's (S3 does not move ownership through an ACL).
    pub fn from_policy(p: &AccessControlPolicy, owner: &str) -> S3Result<Self> {
        if let Some(id) = p.owner.as_ref().and_then(|o| o.id.as_deref())
            && id != owner
        {
            return Err(s3_error!(
                AccessDenied,
                "The owner of an ACL cannot be changed"
            ));
        }
        let mut grants = Vec::new();
        for g in p.grants.iter().flatten() {
            let malformed = || {
                s3_error!(
                    MalformedACLError,
                    "The XML you provided was not well-formed or did not validate against our published schema"
                )
            };
            let perm = g
                .permission
                .as_ref()
                .and_then(|p| Perm::parse(p.as_str()))
                .ok_or_else(malformed)?;
            let who = g.grantee.as_ref().ok_or_else(malformed)?;
            let grantee = match who.type_.as_str() {
                Type::CANONICAL_USER => Grantee::User(
                    who.id
                        .clone()
                        .filter(|i| !i.is_empty())
                        .ok_or_else(malformed)?,
                ),
                Type::GROUP => group(who.uri.as_deref().ok_or_else(malformed)?)?,
                Type::AMAZON_CUSTOMER_BY_EMAIL => return Err(email_refused()),
                _ => return Err(malformed()),
            };
            grants.push((grantee, perm));
        }
        Ok(Acl {
            owner: owner.to_owned(),
            grants,
        })
    }

    /// Whether any grant is to everyone or to every signed requester.
    pub fn is_public(&self) -> bool {
        self.grants.iter().any(|(g, _)| g.is_public())
    }

    /// Whether the list gives `principal` (`None`: anonymous) `perm`, directly or by
    /// FULL_CONTROL; with `ignore_public`, grants to the public groups count for nothing
    /// (Block Public Access's `IgnorePublicAcls`).
    pub fn permits(&self, principal: Option<&str>, perm: Perm, ignore_public: bool) -> bool {
        self.grants.iter().any(|(g, p)| {
            (*p == perm || *p == Perm::FullControl)
                && !(ignore_public && g.is_public())
                && g.covers(principal)
        })
    }

    /// The grants as S3's XML types.
    pub fn s3_grants(&self) -> Vec<Grant> {
        self.grants
            .iter()
            .map(|(g, p)| Grant {
                grantee: Some(match g {
                    Grantee::User(id) => S3Grantee {
                        display_name: Some(id.clone()),
                        email_address: None,
                        id: Some(id.clone()),
                        type_: Type::from_static(Type::CANONICAL_USER),
                        uri: None,
                    },
                    group => S3Grantee {
                        display_name: None,
                        email_address: None,
                        id: None,
                        type_: Type::from_static(Type::GROUP),
                        uri: Some(
                            match group {
                                Grantee::AllUsers => ALL_USERS,
                                Grantee::AuthenticatedUsers => AUTHENTICATED_USERS,
                                _ => LOG_DELIVERY,
                            }
                            .to_owned(),
                        ),
                    },
                }),
                permission: Some(Permission::from_static(p.name())),
            })
            .collect()
    }

    /// The owner as S3's XML type.
    pub fn s3_owner(&self) -> Owner {
        crate::owner(&self.owner)
    }

    /// The stored encoding.
    pub fn encode(&self) -> String {
        // Serializing plain strings and enums cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A stored list read back; `None` (with the reason logged) when it is not one this
    /// build wrote, which grants nothing: an unreadable list fails closed.
    pub fn decode(stored: &str) -> Option<Self> {
        serde_json::from_str(stored)
            .map_err(|e| tracing::error!(error = %e, "stored ACL does not decode"))
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canned_acls_grant_what_aws_grants() {
        let a = Acl::canned("public-read", "bob", "alice").unwrap();
        assert!(a.permits(None, Perm::Read, false));
        assert!(!a.permits(None, Perm::Read, true));
        assert!(!a.permits(None, Perm::ReadAcp, false));
        assert!(a.permits(Some("bob"), Perm::WriteAcp, false));
        assert!(!a.permits(Some("alice"), Perm::Read, true));
        assert!(a.is_public());
        let a = Acl::canned("authenticated-read", "bob", "alice").unwrap();
        assert!(!a.permits(None, Perm::Read, false));
        assert!(a.permits(Some("carol"), Perm::Read, false));
        let a = Acl::canned("bucket-owner-full-control", "bob", "alice").unwrap();
        assert!(a.permits(Some("alice"), Perm::WriteAcp, false));
        assert!(!a.is_public());
        let a = Acl::canned("bucket-owner-read", "bob", "alice").unwrap();
        assert!(a.permits(Some("alice"), Perm::Read, false));
        assert!(!a.permits(Some("alice"), Perm::ReadAcp, false));
        assert!(Acl::canned("public-everything", "bob", "alice").is_err());
    }

    #[test]
    fn grant_headers_parse_users_and_groups() {
        let r = Requested {
            read: Some(r#"id="carol", uri="http://acs.amazonaws.com/groups/global/AllUsers""#),
            write_acp: Some("id=dave"),
            ..Default::default()
        };
        let a = r.resolve("bob", "alice").unwrap().unwrap();
        assert!(a.permits(Some("carol"), Perm::Read, false));
        assert!(a.permits(None, Perm::Read, false));
        assert!(a.permits(Some("dave"), Perm::WriteAcp, false));
        // Header grants replace the owner's implicit control, as on AWS.
        assert!(!a.permits(Some("bob"), Perm::ReadAcp, false));
        let both = Requested {
            canned: Some("private"),
            read: Some("id=carol"),
            ..Default::default()
        };
        assert!(both.resolve("bob", "alice").is_err());
        let email = Requested {
            read: Some(r#"emailAddress="x@example.com""#),
            ..Default::default()
        };
        assert_eq!(
            email.resolve("bob", "alice").unwrap_err().code(),
            &s3s::S3ErrorCode::UnresolvableGrantByEmailAddress
        );
        let bad_group = Requested {
            read: Some(r#"uri="http://example.com/everyone""#),
            ..Default::default()
        };
        assert!(bad_group.resolve("bob", "alice").is_err());
    }

    #[test]
    fn the_stored_encoding_round_trips_and_a_bad_one_grants_nothing() {
        let a = Acl::canned("public-read-write", "bob", "alice").unwrap();
        assert_eq!(Acl::decode(&a.encode()), Some(a.clone()));
        assert_eq!(
            a.encode(),
            r#"{"owner":"bob","grants":[[{"user":"bob"},"FULL_CONTROL"],["all_users","READ"],["all_users","WRITE"]]}"#
        );
        assert_eq!(Acl::decode("{not json"), None);
        let back = Acl::from_policy(
            &AccessControlPolicy {
                grants: Some(a.s3_grants()),
                owner: Some(a.s3_owner()),
            },
            "bob",
        )
        .unwrap();
        assert_eq!(back, a);
    }
}
