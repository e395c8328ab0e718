//! A bucket as one S3 request sees it: its catalog record with the settings the gateway
//! keeps in the record (location, object lock, default encryption, object ownership,
//! Block Public Access, the bucket's ACL, notification configuration) decoded at most
//! once per request (the small ones when the request loads the bucket, the notification
//! configuration when first asked), and passed down to every module that needs them. This
//! is the one module that reads or writes those settings' encodings; the others take a
//! [`Bucket`], or change a record through [`update_bucket`] and the setters here.

use std::ops::Deref;
use std::sync::OnceLock;

use catalog::{BucketRecord, CatalogError, LockMode, Op, Retention, S3Op, Transaction};
use notify::ConfigError;
use notify::config::NotificationConfig;
use s3s::{S3Request, S3Result, s3_error};
use serde::{Deserialize, Serialize};

use crate::Gateway;
use crate::error::catalog_error;
use crate::grants::Acl;

/// Settings key of the bucket's location constraint (its bytes, UTF-8).
const LOCATION_KEY: &str = "s3.location";

/// Settings key of a bucket's lock configuration (JSON of [`LockConfig`]; present:
/// object lock is enabled, which is never undone).
const LOCK_KEY: &str = "object-lock";

/// Settings key of a bucket's default encryption (JSON of [`BucketDefault`]).
const ENCRYPTION_KEY: &str = "encryption";

/// Settings key of a bucket's object ownership (its S3 name, UTF-8; absent: ACLs
/// disabled, as `BucketOwnerEnforced`, which every bucket made before ownership
/// controls were kept behaved as).
const OWNERSHIP_KEY: &str = "ownership";

/// Settings key of a bucket's Block Public Access configuration (JSON of
/// [`PublicAccessBlock`]).
const PUBLIC_ACCESS_KEY: &str = "public-access-block";

/// Settings key of a bucket's ACL ([`crate::grants::Acl`]'s encoding; absent: the
/// owner's full control alone).
const ACL_KEY: &str = "acl";

/// A day, as S3 counts retention periods.
const DAY_MS: i64 = 86_400_000;

/// A bucket's record and its decoded settings.
#[derive(Debug, Clone)]
pub struct Bucket {
    record: BucketRecord,
    /// The location constraint it was made with (`None`: us-east-1).
    pub location: Option<String>,
    /// Its object lock configuration (`None`: object lock is not enabled).
    pub lock: Option<LockConfig>,
    /// Its default encryption (`None`: none).
    pub encryption: Option<BucketDefault>,
    /// Its object ownership setting (`None`: none stored, which behaves as
    /// [`Ownership::BucketOwnerEnforced`]).
    pub ownership_setting: Option<Ownership>,
    /// Its Block Public Access configuration (`None`: none).
    pub public_access: Option<PublicAccessBlock>,
    /// [`Bucket::acl`], decoded on first use: only requests that ACLs decide read it.
    acl: OnceLock<Option<Acl>>,
    /// Its notification configuration, decoded by the first caller of
    /// [`Bucket::notifications`]: only object changes and
    /// GetBucketNotificationConfiguration read it, so a GET never parses it.
    notifications: OnceLock<Result<Option<NotificationConfig>, ConfigError>>,
    /// [`Bucket::fired_rules`], decoded on first use like `notifications`.
    fired: OnceLock<Result<Option<NotificationConfig>, ConfigError>>,
}

impl Bucket {
    /// Decodes a record's settings.
    pub fn decode(record: BucketRecord) -> Self {
        Self {
            location: location_of(&record),
            lock: lock_of(&record),
            encryption: record
                .settings
                .get(ENCRYPTION_KEY)
                .map(|raw| serde_json::from_slice(raw).unwrap_or_default()),
            ownership_setting: record
                .settings
                .get(OWNERSHIP_KEY)
                .map(|raw| Ownership::parse(&String::from_utf8_lossy(raw))),
            // Unreadable, it blocks everything: failing closed keeps the bucket private.
            public_access: record
                .settings
                .get(PUBLIC_ACCESS_KEY)
                .map(|raw| serde_json::from_slice(raw).unwrap_or(PublicAccessBlock::ALL)),
            acl: OnceLock::new(),
            notifications: OnceLock::new(),
            fired: OnceLock::new(),
            record,
        }
    }

    /// Its notification configuration (`Ok(None)`: none), or why it does not decode.
    pub fn notifications(&self) -> &Result<Option<NotificationConfig>, ConfigError> {
        self.notifications
            .get_or_init(|| NotificationConfig::load(&self.record.settings))
    }

    /// Every rule an object change fires: the notification configuration's and each
    /// deployed pipeline's bucket triggers (`Ok(None)`: none).
    pub fn fired_rules(&self) -> &Result<Option<NotificationConfig>, ConfigError> {
        self.fired
            .get_or_init(|| NotificationConfig::load_all(&self.record.settings))
    }

    /// The record as the catalog holds it.
    pub fn record(&self) -> &BucketRecord {
        &self.record
    }

    /// Its stored ACL (`None`: the owner's full control alone, or one that does not
    /// decode, which grants nothing).
    pub fn acl(&self) -> Option<&Acl> {
        self.acl
            .get_or_init(|| {
                self.record
                    .settings
                    .get(ACL_KEY)
                    .and_then(|raw| Acl::decode(&String::from_utf8_lossy(raw)))
            })
            .as_ref()
    }

    /// Its object ownership in force.
    pub fn ownership(&self) -> Ownership {
        self.ownership_setting
            .unwrap_or(Ownership::BucketOwnerEnforced)
    }

    /// Its Block Public Access configuration in force (all off without one).
    pub fn public_access(&self) -> PublicAccessBlock {
        self.public_access.unwrap_or_default()
    }

    /// The bucket's region: its location constraint, `us-east-1` without one.
    pub fn region(&self) -> String {
        region_of(self.location.as_deref())
    }
}

impl Deref for Bucket {
    type Target = BucketRecord;

    fn deref(&self) -> &BucketRecord {
        &self.record
    }
}

/// A record's region (listings filter by it).
pub fn region(record: &BucketRecord) -> String {
    region_of(location_of(record).as_deref())
}

fn region_of(location: Option<&str>) -> String {
    match location {
        Some(l) if !l.is_empty() => l.to_owned(),
        _ => "us-east-1".to_owned(),
    }
}

/// A record's location constraint (listings read it without the rest).
pub fn location_of(record: &BucketRecord) -> Option<String> {
    record
        .settings
        .get(LOCATION_KEY)
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// A record's lock configuration. A value that does not parse still means enabled:
/// failing closed keeps versions protected.
fn lock_of(record: &BucketRecord) -> Option<LockConfig> {
    record
        .settings
        .get(LOCK_KEY)
        .map(|raw| serde_json::from_slice(raw).unwrap_or_default())
}

/// Whether a record (one being changed by [`update_bucket`]) has object lock enabled.
pub fn lock_enabled(record: &BucketRecord) -> bool {
    record.settings.contains_key(LOCK_KEY)
}

/// Sets the location constraint of a record being created.
pub fn set_location(record: &mut BucketRecord, location: &str) {
    record
        .settings
        .insert(LOCATION_KEY.to_owned(), location.as_bytes().to_vec());
}

/// Sets a record's lock configuration (enabling object lock).
pub fn set_lock(record: &mut BucketRecord, c: &LockConfig) {
    // Serializing plain structs of options and integers cannot fail.
    let json = serde_json::to_vec(c).unwrap_or_default();
    record.settings.insert(LOCK_KEY.to_owned(), json);
}

/// Sets (`Some`) or removes a record's default encryption.
pub fn set_encryption(record: &mut BucketRecord, d: Option<BucketDefault>) {
    match d {
        Some(d) => {
            let json = serde_json::to_vec(&d).unwrap_or_default();
            record.settings.insert(ENCRYPTION_KEY.to_owned(), json);
        }
        None => {
            record.settings.remove(ENCRYPTION_KEY);
        }
    }
}

/// Sets (`Some`) or removes a record's object ownership setting.
pub fn set_ownership(record: &mut BucketRecord, o: Option<Ownership>) {
    match o {
        Some(o) => {
            record
                .settings
                .insert(OWNERSHIP_KEY.to_owned(), o.name().as_bytes().to_vec());
        }
        None => {
            record.settings.remove(OWNERSHIP_KEY);
        }
    }
}

/// Sets (`Some`) or removes a record's Block Public Access configuration.
pub fn set_public_access(record: &mut BucketRecord, c: Option<PublicAccessBlock>) {
    match c {
        Some(c) => {
            let json = serde_json::to_vec(&c).unwrap_or_default();
            record.settings.insert(PUBLIC_ACCESS_KEY.to_owned(), json);
        }
        None => {
            record.settings.remove(PUBLIC_ACCESS_KEY);
        }
    }
}

/// Sets (`Some`) or removes a record's ACL.
pub fn set_acl(record: &mut BucketRecord, acl: Option<&Acl>) {
    match acl {
        Some(a) => {
            record
                .settings
                .insert(ACL_KEY.to_owned(), a.encode().into_bytes());
        }
        None => {
            record.settings.remove(ACL_KEY);
        }
    }
}

/// Attempts at a bucket setting change before giving up on concurrent changes.
const UPDATE_ATTEMPTS: usize = 16;

/// Changes a bucket's record: reads it, applies `change`, and commits the new record
/// only if the stored one is still the one read (a compare-and-swap in the catalog);
/// when another request changed the record first, reads it again and applies `change`
/// to that, so concurrent changes of different settings (tags, versioning,
/// notifications) are all kept, and a bucket deleted and re-created meanwhile is not
/// overwritten with the old one's record. This node's changes of one bucket take turns
/// (the compare-and-swap alone let a change lose every round to a client changing
/// another setting in a loop: seen in CI, two boto3 clients on a loaded 2-core machine,
/// the versioning change refused after 16 attempts); the retries are for other nodes.
pub(crate) async fn update_bucket<T: Sync>(
    gw: &Gateway,
    req: &S3Request<T>,
    name: &str,
    mut change: impl FnMut(&mut BucketRecord) -> S3Result<()> + Send,
) -> S3Result<()> {
    let turn = gw.setting_change_lock(name);
    let _turn = turn.lock().await;
    for attempt in 0..UPDATE_ATTEMPTS {
        if attempt > 0 {
            // Back off before reading again: without a pause, two clients changing one
            // bucket's settings in a loop on a loaded machine could each lose 16 times
            // in a row (seen with boto3 on two shared cores).
            tokio::time::sleep(std::time::Duration::from_millis(1 << attempt.min(6))).await;
        }
        let expected = gw.bucket_for(req, name).await?.record;
        let mut record = expected.clone();
        change(&mut record)?;
        let op = Op::S3(S3Op::ReplaceBucket { expected, record });
        match gw.catalog().commit(Transaction::new(vec![op])).await {
            Ok(_) => return Ok(()),
            Err(CatalogError::PreconditionFailed(_)) => continue,
            Err(e) => return Err(catalog_error(e)),
        }
    }
    Err(s3_error!(
        OperationAborted,
        "A conflicting conditional operation is currently in progress against this resource. Please try again."
    ))
}

/// A bucket's object lock configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockConfig {
    /// The retention every new version gets unless its write names one.
    pub default_retention: Option<DefaultRetentionRule>,
}

/// A default retention: a mode and a period of days or years.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefaultRetentionRule {
    /// `GOVERNANCE` or `COMPLIANCE`.
    pub mode: StoredMode,
    /// The period in days (exactly one of `days` and `years`).
    pub days: Option<i32>,
    /// The period in years of 365 days.
    pub years: Option<i32>,
}

/// A retention mode as the settings JSON spells it (S3's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StoredMode {
    /// Governance mode.
    #[serde(rename = "GOVERNANCE")]
    Governance,
    /// Compliance mode.
    #[serde(rename = "COMPLIANCE")]
    Compliance,
}

impl From<StoredMode> for LockMode {
    fn from(m: StoredMode) -> Self {
        match m {
            StoredMode::Governance => LockMode::Governance,
            StoredMode::Compliance => LockMode::Compliance,
        }
    }
}

impl DefaultRetentionRule {
    /// The retention a version written at `now` gets.
    pub fn retention(&self, now: i64) -> Retention {
        let days = i64::from(self.days.unwrap_or(0)) + i64::from(self.years.unwrap_or(0)) * 365;
        Retention {
            mode: self.mode.into(),
            until_ms: now.saturating_add(days.saturating_mul(DAY_MS)),
        }
    }
}

/// A bucket's object ownership (S3 Object Ownership): who owns the objects written into
/// it, and whether ACLs count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// The bucket owner owns every object; ACLs are disabled (AWS's default).
    BucketOwnerEnforced,
    /// The bucket owner owns objects written with `bucket-owner-full-control`; the
    /// writer owns the rest; ACLs count.
    BucketOwnerPreferred,
    /// The writer owns the object; ACLs count.
    ObjectWriter,
}

impl Ownership {
    /// S3's name.
    pub fn name(self) -> &'static str {
        match self {
            Ownership::BucketOwnerEnforced => "BucketOwnerEnforced",
            Ownership::BucketOwnerPreferred => "BucketOwnerPreferred",
            Ownership::ObjectWriter => "ObjectWriter",
        }
    }

    /// A stored name read back; one this build did not write reads as enforced, which
    /// fails closed (ACLs grant nothing).
    fn parse(s: &str) -> Self {
        Self::from_name(s).unwrap_or(Ownership::BucketOwnerEnforced)
    }

    /// S3's name parsed.
    pub fn from_name(s: &str) -> Option<Self> {
        Some(match s {
            "BucketOwnerEnforced" => Ownership::BucketOwnerEnforced,
            "BucketOwnerPreferred" => Ownership::BucketOwnerPreferred,
            "ObjectWriter" => Ownership::ObjectWriter,
            _ => return None,
        })
    }

    /// Whether ACLs count.
    pub fn acls_enabled(self) -> bool {
        self != Ownership::BucketOwnerEnforced
    }
}

/// A bucket's Block Public Access configuration (PutPublicAccessBlock).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicAccessBlock {
    /// Refuse requests that set a public ACL.
    pub block_public_acls: bool,
    /// Let public ACL grants count for nothing.
    pub ignore_public_acls: bool,
    /// Refuse a bucket policy that is public.
    pub block_public_policy: bool,
    /// While the bucket's policy is public, refuse anonymous requests it allows.
    pub restrict_public_buckets: bool,
}

impl PublicAccessBlock {
    /// Everything blocked.
    pub const ALL: Self = Self {
        block_public_acls: true,
        ignore_public_acls: true,
        block_public_policy: true,
        restrict_public_buckets: true,
    };
}

/// A bucket's default encryption (PutBucketEncryption).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketDefault {
    /// Whether the client asked for S3 Bucket Keys (kept and reported; it changes
    /// nothing here, where a data key per object costs no KMS call).
    pub bucket_key_enabled: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> BucketRecord {
        BucketRecord {
            name: "b".into(),
            owner: "o".into(),
            created_ms: 0,
            versioning: catalog::Versioning::Unversioned,
            tags: Default::default(),
            settings: Default::default(),
        }
    }

    #[test]
    fn settings_round_trip_through_the_record() {
        let mut r = record();
        let b = Bucket::decode(r.clone());
        assert_eq!(
            (b.location.as_deref(), b.lock, b.encryption),
            (None, None, None)
        );
        assert_eq!(b.region(), "us-east-1");
        assert!(matches!(b.notifications(), Ok(None)));

        set_location(&mut r, "eu-west-1");
        let lock = LockConfig {
            default_retention: Some(DefaultRetentionRule {
                mode: StoredMode::Compliance,
                days: Some(2),
                years: None,
            }),
        };
        set_lock(&mut r, &lock);
        set_encryption(
            &mut r,
            Some(BucketDefault {
                bucket_key_enabled: true,
            }),
        );
        let b = Bucket::decode(r.clone());
        assert_eq!(b.region(), "eu-west-1");
        assert_eq!(b.lock, Some(lock));
        assert!(lock_enabled(&r));
        assert_eq!(
            b.encryption,
            Some(BucketDefault {
                bucket_key_enabled: true
            })
        );

        set_encryption(&mut r, None);
        assert_eq!(Bucket::decode(r).encryption, None);
    }

    #[test]
    fn access_settings_round_trip_and_fail_closed() {
        let mut r = record();
        let b = Bucket::decode(r.clone());
        assert_eq!(b.ownership(), Ownership::BucketOwnerEnforced);
        assert_eq!(b.ownership_setting, None);
        assert_eq!(b.public_access(), PublicAccessBlock::default());
        set_ownership(&mut r, Some(Ownership::ObjectWriter));
        let pab = PublicAccessBlock {
            block_public_acls: true,
            ..Default::default()
        };
        set_public_access(&mut r, Some(pab));
        let acl = Acl::canned("public-read", "o", "o").unwrap();
        set_acl(&mut r, Some(&acl));
        let b = Bucket::decode(r.clone());
        assert_eq!(b.ownership(), Ownership::ObjectWriter);
        assert_eq!(b.public_access(), pab);
        assert_eq!(b.acl(), Some(&acl));
        r.settings
            .insert(PUBLIC_ACCESS_KEY.to_owned(), b"garbage".to_vec());
        r.settings
            .insert(OWNERSHIP_KEY.to_owned(), b"Nobody".to_vec());
        r.settings.insert(ACL_KEY.to_owned(), b"garbage".to_vec());
        let b = Bucket::decode(r);
        assert_eq!(b.public_access(), PublicAccessBlock::ALL);
        assert_eq!(b.ownership(), Ownership::BucketOwnerEnforced);
        assert_eq!(b.acl(), None);
    }

    #[test]
    fn an_unreadable_lock_configuration_still_means_enabled() {
        let mut r = record();
        r.settings.insert(LOCK_KEY.to_owned(), b"not json".to_vec());
        assert_eq!(Bucket::decode(r).lock, Some(LockConfig::default()));
    }
}
