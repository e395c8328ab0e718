//! Who calls the registry and what they may do. Callers authenticate with HTTP basic
//! auth as an Eddy user (S3 access key and secret, what clients send from
//! `basic.auth.user.info` or a URL's user info). Actions are checked against the
//! caller's identity policies on the resource `eddy:subject:<subject>`
//! (`eddy:GetSchema`, `eddy:RegisterSchema`, `eddy:DeleteSchema`,
//! `eddy:ConfigureSchema`), and registry-wide settings on `eddy:schema-registry`; the
//! administrator may do everything, anyone else what a policy allows.

use base64::Engine;
use subtle::ConstantTimeEq;

use crate::error::{RegistryError, RegistryResult};

/// Reading a subject's versions and schemas.
pub const GET: &str = "eddy:GetSchema";
/// Registering a new version.
pub const REGISTER: &str = "eddy:RegisterSchema";
/// Deleting versions or subjects.
pub const DELETE: &str = "eddy:DeleteSchema";
/// Setting compatibility levels and modes.
pub const CONFIGURE: &str = "eddy:ConfigureSchema";
/// The resource of registry-wide settings.
pub const REGISTRY_RESOURCE: &str = "eddy:schema-registry";

/// An authenticated caller.
pub struct Caller<'a> {
    /// The user.
    pub user: String,
    /// The users and their policies.
    pub directory: &'a iam::Directory,
}

/// The user of a basic `Authorization` header, when its secret is theirs.
pub fn authenticate(dir: &iam::Directory, authorization: Option<&str>) -> RegistryResult<String> {
    let refused = || {
        RegistryError::Unauthorized(
            "Unauthorized: basic auth with an Eddy user's access key and secret is required".into(),
        )
    };
    let encoded = authorization
        .and_then(|h| {
            h.strip_prefix("Basic ")
                .or_else(|| h.strip_prefix("basic "))
        })
        .ok_or_else(refused)?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| refused())?;
    let decoded = String::from_utf8(decoded).map_err(|_| refused())?;
    let (user, secret) = decoded.split_once(':').ok_or_else(refused)?;
    let known = dir.s3_secret(user).ok_or_else(refused)?;
    if !bool::from(known.as_bytes().ct_eq(secret.as_bytes())) {
        return Err(refused());
    }
    Ok(user.to_owned())
}

/// The user a basic `Authorization` header names, whether or not its secret is right
/// (the audit trail's "who" of a refused request).
pub fn claimed_user(authorization: Option<&str>) -> Option<String> {
    let encoded = authorization?
        .strip_prefix("Basic ")
        .or_else(|| authorization?.strip_prefix("basic "))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    Some(
        decoded
            .split_once(':')
            .map_or(decoded.as_str(), |(u, _)| u)
            .to_owned(),
    )
}

impl Caller<'_> {
    /// Whether the caller may do `action` on `resource`.
    fn may_on(&self, action: &str, resource: &str) -> bool {
        if self.directory.is_admin(&self.user) {
            return true;
        }
        let context = iam::Context::default();
        let req = iam::Request {
            action,
            resource,
            principal: Some(&self.user),
            context: &context,
        };
        matches!(
            self.directory.identity_decision(Some(&self.user), &req),
            iam::Decision::Allow
        )
    }

    /// Whether the caller may do `action` on `subject`.
    pub fn may(&self, action: &str, subject: &str) -> bool {
        self.may_on(action, &format!("eddy:subject:{subject}"))
    }

    /// `Ok` when the caller may do `action` on `subject`; 403 otherwise.
    pub fn must(&self, action: &str, subject: &str) -> RegistryResult<()> {
        if self.may(action, subject) {
            Ok(())
        } else {
            Err(RegistryError::Forbidden(format!(
                "User {} is not authorized to {action} on subject {subject} (no policy allows it)",
                self.user
            )))
        }
    }

    /// `Ok` when the caller may change registry-wide settings.
    pub fn must_configure_registry(&self) -> RegistryResult<()> {
        if self.may_on(CONFIGURE, REGISTRY_RESOURCE) {
            Ok(())
        } else {
            Err(RegistryError::Forbidden(format!(
                "User {} is not authorized to {CONFIGURE} on {REGISTRY_RESOURCE} (no policy allows it)",
                self.user
            )))
        }
    }
}
