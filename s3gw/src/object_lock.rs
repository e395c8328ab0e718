//! S3 object lock: a bucket's lock configuration (enabled at creation or on a versioned
//! bucket, with an optional default retention), each version's retention and legal hold
//! (from the write's `x-amz-object-lock-*` headers, the bucket's default, or
//! Put/GetObjectRetention and Put/GetObjectLegalHold), and their headers on GET and HEAD.
//!
//! Enforcement is the catalog's, in the transaction that would remove a version: every
//! removal the gateway builds carries an `ExpectUnlocked` guard ([`crate::change`]), a
//! legal hold refuses `DeleteObjectVersion` outright, and `SetObjectRetention` refuses a
//! weakened retention; so a retention change racing a delete is decided in commit order,
//! never by a stale read here.

use catalog::S3Op;
use catalog::{BucketRecord, LockMode, ObjectLock, Op, Retention, Versioning};
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};

use crate::authz::OpAction;
use crate::bucket_settings::{
    Bucket, DefaultRetentionRule, LockConfig, StoredMode, set_lock, update_bucket,
};
use crate::change::Change;
use crate::error::OrS3;
use crate::{Gateway, now_ms, timestamp};

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new(
        "PutObjectLockConfiguration",
        "s3:PutBucketObjectLockConfiguration",
    ),
    OpAction::new(
        "GetObjectLockConfiguration",
        "s3:GetBucketObjectLockConfiguration",
    ),
    OpAction::new("PutObjectRetention", "s3:PutObjectRetention"),
    OpAction::new("GetObjectRetention", "s3:GetObjectRetention"),
    OpAction::new("PutObjectLegalHold", "s3:PutObjectLegalHold"),
    OpAction::new("GetObjectLegalHold", "s3:GetObjectLegalHold"),
];

/// Enables object lock on a bucket record being created (versioning comes with it).
pub fn enable(b: &mut BucketRecord) {
    b.versioning = Versioning::Enabled;
    set_lock(b, &LockConfig::default());
}

fn missing_configuration() -> s3s::S3Error {
    s3_error!(
        InvalidRequest,
        "Bucket is missing Object Lock Configuration"
    )
}

/// A retention mode from a request.
fn parse_mode(s: &str) -> S3Result<LockMode> {
    match s {
        "GOVERNANCE" => Ok(LockMode::Governance),
        "COMPLIANCE" => Ok(LockMode::Compliance),
        _ => Err(s3_error!(InvalidArgument, "Unknown wormMode directive.")),
    }
}

fn mode_name(m: LockMode) -> &'static str {
    match m {
        LockMode::Governance => "GOVERNANCE",
        LockMode::Compliance => "COMPLIANCE",
    }
}

/// Milliseconds since the epoch of an S3 timestamp.
fn timestamp_ms(t: &Timestamp) -> i64 {
    let nanos = time::OffsetDateTime::from(t.clone()).unix_timestamp_nanos();
    i64::try_from(nanos / 1_000_000).unwrap_or(i64::MAX)
}

/// A legal hold status from a request.
fn parse_hold(s: &str) -> S3Result<bool> {
    match s {
        "ON" => Ok(true),
        "OFF" => Ok(false),
        _ => Err(s3_error!(
            InvalidArgument,
            "Legal Hold status must be ON or OFF"
        )),
    }
}

/// The `x-amz-object-lock-*` headers of a write (PutObject, CopyObject,
/// CreateMultipartUpload).
#[derive(Debug, Default, Clone, Copy)]
pub struct Requested<'a> {
    /// `x-amz-object-lock-mode`.
    pub mode: Option<&'a str>,
    /// `x-amz-object-lock-retain-until-date`.
    pub until: Option<&'a Timestamp>,
    /// `x-amz-object-lock-legal-hold`.
    pub legal_hold: Option<&'a str>,
}

impl Requested<'_> {
    /// Whether any lock header came.
    pub fn any(&self) -> bool {
        self.mode.is_some() || self.until.is_some() || self.legal_hold.is_some()
    }

    /// Validates the headers against the bucket: refused, as AWS refuses them, on a
    /// bucket without object lock, with only one of mode and date, or a date not in the
    /// future. The result has no default retention yet ([`with_default`] adds it when the
    /// version is made).
    pub fn lock(&self, b: &Bucket, now: i64) -> S3Result<ObjectLock> {
        if !self.any() {
            return Ok(ObjectLock::default());
        }
        if b.lock.is_none() {
            return Err(missing_configuration());
        }
        let retention = match (self.mode, self.until) {
            (None, None) => None,
            (Some(m), Some(t)) => {
                let until_ms = timestamp_ms(t);
                if until_ms <= now {
                    return Err(s3_error!(
                        InvalidArgument,
                        "The retain until date must be in the future!"
                    ));
                }
                Some(Retention {
                    mode: parse_mode(m)?,
                    until_ms,
                })
            }
            _ => {
                return Err(s3_error!(
                    InvalidArgument,
                    "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied"
                ));
            }
        };
        Ok(ObjectLock {
            retention,
            legal_hold: self
                .legal_hold
                .map(parse_hold)
                .transpose()?
                .unwrap_or(false),
        })
    }
}

/// `lock` with the bucket's default retention when it names none, for a version made at
/// `now`.
pub fn with_default(b: &Bucket, mut lock: ObjectLock, now: i64) -> ObjectLock {
    if lock.retention.is_none()
        && let Some(rule) = b.lock.and_then(|c| c.default_retention)
    {
        lock.retention = Some(rule.retention(now));
    }
    lock
}

/// The lock headers of a GET or HEAD of `v`.
pub struct Headers {
    /// `x-amz-object-lock-mode`.
    pub mode: Option<ObjectLockMode>,
    /// `x-amz-object-lock-retain-until-date`.
    pub until: Option<Timestamp>,
    /// `x-amz-object-lock-legal-hold`.
    pub legal_hold: Option<ObjectLockLegalHoldStatus>,
}

/// The lock headers a GET or HEAD of `key` reports for a version's lock: as AWS sends
/// them, the retention only to a requester allowed `s3:GetObjectRetention` and the legal
/// hold only to one allowed `s3:GetObjectLegalHold`.
pub async fn headers<T>(
    gw: &Gateway,
    req: &S3Request<T>,
    bucket: &str,
    key: &str,
    lock: &ObjectLock,
) -> Headers {
    if lock.retention.is_none() && !lock.legal_hold {
        return Headers {
            mode: None,
            until: None,
            legal_hold: None,
        };
    }
    let who = gw.authz_context(req);
    let may = async |action| {
        gw.authorize(&who, action, Some(bucket), Some(key))
            .await
            .is_ok()
    };
    let retention = match lock.retention {
        Some(r) if may("s3:GetObjectRetention").await => Some(r),
        _ => None,
    };
    Headers {
        mode: retention.map(|r| ObjectLockMode::from(mode_name(r.mode).to_owned())),
        until: retention.map(|r| timestamp(r.until_ms)),
        legal_hold: (lock.legal_hold && may("s3:GetObjectLegalHold").await)
            .then(|| ObjectLockLegalHoldStatus::from_static(ObjectLockLegalHoldStatus::ON)),
    }
}

/// Checks that the requester may bypass governance retention when it asks to
/// (`s3:BypassGovernanceRetention`); the flag to put in the change.
pub async fn bypass<T>(
    gw: &Gateway,
    req: &S3Request<T>,
    bucket: &str,
    key: Option<&str>,
    asked: Option<bool>,
) -> S3Result<bool> {
    if asked != Some(true) {
        return Ok(false);
    }
    gw.authorize(
        &gw.authz_context(req),
        "s3:BypassGovernanceRetention",
        Some(bucket),
        key,
    )
    .await?;
    Ok(true)
}

/// PutObjectLockConfiguration: `Enabled`, with an optional default retention (a mode and
/// exactly one of a positive `Days` or `Years`); the bucket must be versioned.
pub async fn put_object_lock_configuration(
    gw: &Gateway,
    req: S3Request<PutObjectLockConfigurationInput>,
) -> S3Result<S3Response<PutObjectLockConfigurationOutput>> {
    let Some(c) = &req.input.object_lock_configuration else {
        return Err(s3_error!(MalformedXML));
    };
    if c.object_lock_enabled.as_ref().map(|e| e.as_str()) != Some(ObjectLockEnabled::ENABLED) {
        return Err(s3_error!(MalformedXML, "ObjectLockEnabled must be Enabled"));
    }
    let default_retention = match c.rule.as_ref().map(|r| r.default_retention.as_ref()) {
        None => None,
        Some(None) => return Err(s3_error!(MalformedXML, "A rule needs a DefaultRetention")),
        Some(Some(d)) => Some(default_rule(d)?),
    };
    let config = LockConfig { default_retention };
    update_bucket(gw, &req, &req.input.bucket, |b| {
        if b.versioning != Versioning::Enabled {
            return Err(s3_error!(
                InvalidBucketState,
                "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration"
            ));
        }
        set_lock(b, &config);
        Ok(())
    })
    .await?;
    Ok(S3Response::new(PutObjectLockConfigurationOutput::default()))
}

fn default_rule(d: &DefaultRetention) -> S3Result<DefaultRetentionRule> {
    let mode = match d
        .mode
        .as_ref()
        .map(|m| parse_mode(m.as_str()))
        .transpose()?
    {
        Some(LockMode::Governance) => StoredMode::Governance,
        Some(LockMode::Compliance) => StoredMode::Compliance,
        None => return Err(s3_error!(MalformedXML, "DefaultRetention needs a Mode")),
    };
    match (d.days, d.years) {
        (Some(n), None) | (None, Some(n)) if n <= 0 => Err(s3_error!(
            InvalidArgument,
            "Default retention period must be a positive integer value"
        )),
        (Some(_), None) | (None, Some(_)) => Ok(DefaultRetentionRule {
            mode,
            days: d.days,
            years: d.years,
        }),
        _ => Err(s3_error!(
            MalformedXML,
            "DefaultRetention needs exactly one of Days and Years"
        )),
    }
}

/// GetObjectLockConfiguration.
pub async fn get_object_lock_configuration(
    gw: &Gateway,
    req: S3Request<GetObjectLockConfigurationInput>,
) -> S3Result<S3Response<GetObjectLockConfigurationOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let Some(c) = b.lock else {
        return Err(s3_error!(
            ObjectLockConfigurationNotFoundError,
            "Object Lock configuration does not exist for this bucket"
        ));
    };
    let rule = c.default_retention.map(|d| ObjectLockRule {
        default_retention: Some(DefaultRetention {
            days: d.days,
            years: d.years,
            mode: Some(ObjectLockRetentionMode::from(
                mode_name(d.mode.into()).to_owned(),
            )),
        }),
    });
    Ok(S3Response::new(GetObjectLockConfigurationOutput {
        object_lock_configuration: Some(ObjectLockConfiguration {
            object_lock_enabled: Some(ObjectLockEnabled::from_static(ObjectLockEnabled::ENABLED)),
            rule,
        }),
    }))
}

/// The version a retention or legal hold request names (or the current one), on a bucket
/// with object lock.
async fn locked_version(
    gw: &Gateway,
    b: &Bucket,
    key: &str,
    version_id: Option<&str>,
) -> S3Result<catalog::ObjectVersion> {
    if b.lock.is_none() {
        return Err(missing_configuration());
    }
    let v = match version_id {
        Some(id) => gw
            .catalog()
            .s3()
            .object_version(&b.name, key, id)
            .await
            .or_s3()?,
        None => gw.catalog().s3().object(&b.name, key).await.or_s3()?,
    };
    match v {
        Some(v) if v.delete_marker => Err(s3_error!(
            MethodNotAllowed,
            "The specified method is not allowed against this resource."
        )),
        Some(v) => Ok(v),
        None if version_id.is_some() => Err(s3_error!(
            NoSuchVersion,
            "The specified version does not exist."
        )),
        None => Err(s3_error!(NoSuchKey, "The specified key does not exist")),
    }
}

/// PutObjectRetention: sets, extends or (in governance mode, with the bypass permission)
/// shortens or removes a version's retention.
pub async fn put_object_retention(
    gw: &Gateway,
    req: S3Request<PutObjectRetentionInput>,
) -> S3Result<S3Response<PutObjectRetentionOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let i = &req.input;
    let v = locked_version(gw, &b, &i.key, i.version_id.as_deref()).await?;
    let now = now_ms();
    let retention = match i
        .retention
        .as_ref()
        .map(|r| (r.mode.as_ref(), r.retain_until_date.as_ref()))
    {
        None | Some((None, None)) => None,
        Some((Some(m), Some(t))) => {
            let until_ms = timestamp_ms(t);
            if until_ms <= now {
                return Err(s3_error!(
                    InvalidArgument,
                    "The retain until date must be in the future!"
                ));
            }
            Some(Retention {
                mode: parse_mode(m.as_str())?,
                until_ms,
            })
        }
        Some(_) => {
            return Err(s3_error!(
                MalformedXML,
                "Retention needs both Mode and RetainUntilDate"
            ));
        }
    };
    let bypass_governance = bypass(
        gw,
        &req,
        &b.name,
        Some(&i.key),
        i.bypass_governance_retention,
    )
    .await?;
    Change::new()
        .by(gw.requester(&req))
        .op(Op::S3(S3Op::SetObjectRetention {
            bucket: b.name.clone(),
            key: i.key.clone(),
            version_id: v.version_id,
            retention,
            now_ms: now,
            bypass_governance,
        }))
        .commit(gw)
        .await?;
    Ok(S3Response::new(PutObjectRetentionOutput::default()))
}

/// GetObjectRetention: `NoSuchObjectLockConfiguration` when the version has none.
pub async fn get_object_retention(
    gw: &Gateway,
    req: S3Request<GetObjectRetentionInput>,
) -> S3Result<S3Response<GetObjectRetentionOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let v = locked_version(gw, &b, &req.input.key, req.input.version_id.as_deref()).await?;
    let Some(r) = v.lock.retention else {
        return Err(s3_error!(
            NoSuchObjectLockConfiguration,
            "The specified object does not have a ObjectLock configuration"
        ));
    };
    Ok(S3Response::new(GetObjectRetentionOutput {
        retention: Some(ObjectLockRetention {
            mode: Some(ObjectLockRetentionMode::from(mode_name(r.mode).to_owned())),
            retain_until_date: Some(timestamp(r.until_ms)),
        }),
    }))
}

/// PutObjectLegalHold: `ON` or `OFF`.
pub async fn put_object_legal_hold(
    gw: &Gateway,
    req: S3Request<PutObjectLegalHoldInput>,
) -> S3Result<S3Response<PutObjectLegalHoldOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let i = &req.input;
    let on = match i.legal_hold.as_ref().and_then(|h| h.status.as_ref()) {
        Some(s) => parse_hold(s.as_str())?,
        None => return Err(s3_error!(MalformedXML, "LegalHold needs a Status")),
    };
    let v = locked_version(gw, &b, &i.key, i.version_id.as_deref()).await?;
    Change::new()
        .by(gw.requester(&req))
        .op(Op::S3(S3Op::SetObjectLegalHold {
            bucket: b.name.clone(),
            key: i.key.clone(),
            version_id: v.version_id,
            on,
        }))
        .commit(gw)
        .await?;
    Ok(S3Response::new(PutObjectLegalHoldOutput::default()))
}

/// GetObjectLegalHold.
pub async fn get_object_legal_hold(
    gw: &Gateway,
    req: S3Request<GetObjectLegalHoldInput>,
) -> S3Result<S3Response<GetObjectLegalHoldOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let v = locked_version(gw, &b, &req.input.key, req.input.version_id.as_deref()).await?;
    let status = if v.lock.legal_hold {
        ObjectLockLegalHoldStatus::ON
    } else {
        ObjectLockLegalHoldStatus::OFF
    };
    Ok(S3Response::new(GetObjectLegalHoldOutput {
        legal_hold: Some(ObjectLockLegalHold {
            status: Some(ObjectLockLegalHoldStatus::from_static(status)),
        }),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn bucket(lock: Option<LockConfig>) -> Bucket {
        let mut b = BucketRecord {
            name: "b".into(),
            owner: "o".into(),
            created_ms: 0,
            versioning: Versioning::Enabled,
            tags: BTreeMap::new(),
            settings: BTreeMap::new(),
        };
        if let Some(c) = lock {
            set_lock(&mut b, &c);
        }
        Bucket::decode(b)
    }

    #[test]
    fn headers_are_refused_without_a_configuration_and_validated_with_one() {
        let now = 1_000_000;
        let future = timestamp(now + 60_000);
        let past = timestamp(now - 1);
        let asked = |mode, until, hold| Requested {
            mode,
            until,
            legal_hold: hold,
        };
        let plain = bucket(None);
        let locked = bucket(Some(LockConfig::default()));
        assert!(asked(None, None, None).lock(&plain, now).is_ok());
        let code = |r: S3Result<ObjectLock>| r.err().map(|e| e.code().clone());
        assert_eq!(
            code(asked(Some("GOVERNANCE"), Some(&future), None).lock(&plain, now)),
            Some(s3s::S3ErrorCode::InvalidRequest)
        );
        assert_eq!(
            code(asked(Some("GOVERNANCE"), None, None).lock(&locked, now)),
            Some(s3s::S3ErrorCode::InvalidArgument)
        );
        assert_eq!(
            code(asked(Some("COMPLIANCE"), Some(&past), None).lock(&locked, now)),
            Some(s3s::S3ErrorCode::InvalidArgument)
        );
        assert_eq!(
            code(asked(Some("FOREVER"), Some(&future), None).lock(&locked, now)),
            Some(s3s::S3ErrorCode::InvalidArgument)
        );
        let l = asked(Some("COMPLIANCE"), Some(&future), Some("ON"))
            .lock(&locked, now)
            .unwrap();
        assert_eq!(
            l.retention,
            Some(Retention {
                mode: LockMode::Compliance,
                until_ms: now + 60_000
            })
        );
        assert!(l.legal_hold);
    }

    #[test]
    fn the_default_retention_applies_only_when_a_write_names_none() {
        let rule = DefaultRetentionRule {
            mode: StoredMode::Governance,
            days: Some(2),
            years: None,
        };
        let b = bucket(Some(LockConfig {
            default_retention: Some(rule),
        }));
        let d = with_default(&b, ObjectLock::default(), 10);
        assert_eq!(
            d.retention,
            Some(Retention {
                mode: LockMode::Governance,
                until_ms: 10 + 2 * 86_400_000
            })
        );
        let own = ObjectLock {
            retention: Some(Retention {
                mode: LockMode::Compliance,
                until_ms: 99,
            }),
            legal_hold: false,
        };
        assert_eq!(with_default(&b, own.clone(), 10), own);
        assert_eq!(
            with_default(&bucket(None), ObjectLock::default(), 10),
            ObjectLock::default()
        );
    }
}
