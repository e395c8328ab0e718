//! A bucket's lifecycle rules: validated from the S3 document as AWS validates it, and
//! evaluated against one version at a given time (time is a parameter, so the rules are
//! tested without waiting for days).
//!
//! Days count as AWS counts them: an object's expiry is its last-modified time plus the
//! days, rounded up to the next day boundary (midnight UTC); a noncurrent version's days
//! count from the moment it became noncurrent (its successor's last-modified time). The
//! length of a day is a setting (`s3_lifecycle_day_secs`, 86,400 by default) so tests and
//! benchmarks can make days seconds long.

use std::collections::{BTreeMap, BTreeSet};

use s3s::dto::{BucketLifecycleConfiguration, LifecycleRule, LifecycleRuleFilter, Tag};
use s3s::{S3Error, S3ErrorCode, S3Result};

/// The most rules a configuration may hold (AWS's limit).
pub const MAX_RULES: usize = 1000;
/// The longest rule id (AWS's limit).
pub const MAX_ID_LEN: usize = 255;
/// The most noncurrent versions a rule may keep (AWS's limit on
/// `NewerNoncurrentVersions`).
pub const MAX_NEWER_NONCURRENT: u32 = 100;

/// Which objects a rule applies to: all conditions hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Key prefix.
    pub prefix: String,
    /// Tags the version must carry, each with this value.
    pub tags: BTreeMap<String, String>,
    /// The size must be above this.
    pub size_greater_than: Option<u64>,
    /// The size must be below this.
    pub size_less_than: Option<u64>,
}

impl Filter {
    /// Whether a version with this key, size and tags is one the rule applies to.
    pub fn matches(&self, key: &str, size: u64, tags: &BTreeMap<String, String>) -> bool {
        key.starts_with(&self.prefix)
            && self.tags.iter().all(|(k, v)| tags.get(k) == Some(v))
            && self.size_greater_than.is_none_or(|g| size > g)
            && self.size_less_than.is_none_or(|l| size < l)
    }
}

/// When current versions expire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// This many days after they were written.
    Days(u32),
    /// At this time (ms since the epoch; AWS requires midnight UTC).
    Date(i64),
}

/// One enabled or disabled rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Its id (AWS makes one up when the document has none, and so does Eddy).
    pub id: String,
    /// `Status` is `Enabled`.
    pub enabled: bool,
    /// What it applies to.
    pub filter: Filter,
    /// When current versions expire.
    pub expiry: Option<Expiry>,
    /// Whether a delete marker with no other version of its key is removed.
    pub expired_delete_marker: bool,
    /// Noncurrent versions expire this many days after they became noncurrent...
    pub noncurrent_days: Option<u32>,
    /// ...except the newest this many of them.
    pub newer_noncurrent_kept: u32,
    /// Incomplete multipart uploads are aborted this many days after they started.
    pub abort_upload_days: Option<u32>,
}

/// A bucket's rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    /// In document order.
    pub rules: Vec<Rule>,
}

fn invalid(code: S3ErrorCode, msg: &str) -> S3Error {
    S3Error::with_message(code, msg.to_owned())
}

fn malformed() -> S3Error {
    invalid(
        S3ErrorCode::MalformedXML,
        "The XML you provided was not well-formed or did not validate against our published schema",
    )
}

fn positive_days(v: i32, what: &str) -> S3Result<u32> {
    u32::try_from(v).ok().filter(|d| *d > 0).ok_or_else(|| {
        invalid(
            S3ErrorCode::InvalidArgument,
            &format!(
                "'{what}' for {what_for} action must be a positive integer",
                what_for = what_for(what)
            ),
        )
    })
}

fn what_for(field: &str) -> &'static str {
    match field {
        "NoncurrentDays" => "NoncurrentVersionExpiration",
        "DaysAfterInitiation" => "AbortIncompleteMultipartUpload",
        _ => "Expiration",
    }
}

fn size(v: Option<i64>) -> S3Result<Option<u64>> {
    v.map(|s| {
        u64::try_from(s).map_err(|_| {
            invalid(
                S3ErrorCode::InvalidArgument,
                "Object size filters must be non-negative",
            )
        })
    })
    .transpose()
}

fn tag(t: &Tag) -> S3Result<(String, String)> {
    match (&t.key, &t.value) {
        (Some(k), v) if !k.is_empty() => Ok((k.clone(), v.clone().unwrap_or_default())),
        _ => Err(malformed()),
    }
}

fn filter(rule: &LifecycleRule) -> S3Result<Filter> {
    let f: &LifecycleRuleFilter = match (&rule.filter, &rule.prefix) {
        (Some(_), Some(_)) => return Err(malformed()),
        (None, Some(p)) => {
            return Ok(Filter {
                prefix: p.clone(),
                ..Filter::default()
            });
        }
        (None, None) => return Ok(Filter::default()),
        (Some(f), None) => f,
    };
    let given = [
        f.and.is_some(),
        f.prefix.is_some(),
        f.tag.is_some(),
        f.object_size_greater_than.is_some(),
        f.object_size_less_than.is_some(),
    ]
    .iter()
    .filter(|g| **g)
    .count();
    if given > 1 {
        return Err(malformed());
    }
    let mut out = Filter {
        prefix: f.prefix.clone().unwrap_or_default(),
        size_greater_than: size(f.object_size_greater_than)?,
        size_less_than: size(f.object_size_less_than)?,
        ..Filter::default()
    };
    if let Some(t) = &f.tag {
        let (k, v) = tag(t)?;
        out.tags.insert(k, v);
    }
    if let Some(and) = &f.and {
        out.prefix = and.prefix.clone().unwrap_or_default();
        out.size_greater_than = size(and.object_size_greater_than)?;
        out.size_less_than = size(and.object_size_less_than)?;
        for t in and.tags.iter().flatten() {
            let (k, v) = tag(t)?;
            if out.tags.insert(k, v).is_some() {
                return Err(invalid(
                    S3ErrorCode::InvalidRequest,
                    "Duplicate Tag Keys are not allowed",
                ));
            }
        }
    }
    if let (Some(g), Some(l)) = (out.size_greater_than, out.size_less_than)
        && g >= l
    {
        return Err(invalid(
            S3ErrorCode::InvalidArgument,
            "ObjectSizeGreaterThan must be less than ObjectSizeLessThan",
        ));
    }
    Ok(out)
}

fn rule(r: &LifecycleRule) -> S3Result<Rule> {
    let id = r.id.clone().unwrap_or_else(crate::new_id);
    if id.len() > MAX_ID_LEN {
        return Err(invalid(
            S3ErrorCode::InvalidArgument,
            "ID length should not exceed allowed limit of 255",
        ));
    }
    let enabled = match r.status.as_str() {
        "Enabled" => true,
        "Disabled" => false,
        _ => return Err(malformed()),
    };
    if r.transitions.as_ref().is_some_and(|t| !t.is_empty())
        || r.noncurrent_version_transitions
            .as_ref()
            .is_some_and(|t| !t.is_empty())
    {
        // Eddy has one storage class: a transition would be a promise it cannot keep.
        return Err(invalid(
            S3ErrorCode::NotImplemented,
            "Transitions are not supported: Eddy has one storage class",
        ));
    }
    let filter = filter(r)?;
    let (mut expiry, mut expired_delete_marker) = (None, false);
    if let Some(e) = &r.expiration {
        let marker = e.expired_object_delete_marker.unwrap_or(false);
        expiry = match (e.days, &e.date) {
            (Some(_), Some(_)) => return Err(malformed()),
            (Some(d), None) => Some(Expiry::Days(positive_days(d, "Days")?)),
            (None, Some(date)) => {
                let t = time::OffsetDateTime::from(date.clone());
                if t.time() != time::Time::MIDNIGHT || t.offset() != time::UtcOffset::UTC {
                    return Err(invalid(
                        S3ErrorCode::InvalidArgument,
                        "'Date' must be at midnight GMT",
                    ));
                }
                Some(Expiry::Date(
                    (t.unix_timestamp_nanos() / 1_000_000).clamp(i64::MIN.into(), i64::MAX.into())
                        as i64,
                ))
            }
            (None, None) if e.expired_object_delete_marker.is_some() => None,
            (None, None) => return Err(malformed()),
        };
        if e.expired_object_delete_marker.is_some() && expiry.is_some() {
            return Err(invalid(
                S3ErrorCode::InvalidArgument,
                "ExpiredObjectDeleteMarker cannot be specified with Days or Date in a Lifecycle Expiration Policy",
            ));
        }
        expired_delete_marker = marker;
        if marker && !filter.tags.is_empty() {
            return Err(invalid(
                S3ErrorCode::InvalidRequest,
                "ExpiredObjectDeleteMarker cannot be specified with a tag-based filter",
            ));
        }
    }
    let (mut noncurrent_days, mut newer_noncurrent_kept) = (None, 0);
    if let Some(n) = &r.noncurrent_version_expiration {
        let days = n.noncurrent_days.ok_or_else(malformed)?;
        noncurrent_days = Some(positive_days(days, "NoncurrentDays")?);
        if let Some(k) = n.newer_noncurrent_versions {
            newer_noncurrent_kept = u32::try_from(k)
                .ok()
                .filter(|k| (1..=MAX_NEWER_NONCURRENT).contains(k))
                .ok_or_else(|| {
                    invalid(
                        S3ErrorCode::InvalidArgument,
                        "NewerNoncurrentVersions must be between 1 and 100",
                    )
                })?;
        }
    }
    let mut abort_upload_days = None;
    if let Some(a) = &r.abort_incomplete_multipart_upload {
        let days = a.days_after_initiation.ok_or_else(malformed)?;
        abort_upload_days = Some(positive_days(days, "DaysAfterInitiation")?);
        if !filter.tags.is_empty() {
            return Err(invalid(
                S3ErrorCode::InvalidRequest,
                "AbortIncompleteMultipartUpload cannot be specified with Tags",
            ));
        }
    }
    if expiry.is_none()
        && !expired_delete_marker
        && noncurrent_days.is_none()
        && abort_upload_days.is_none()
    {
        return Err(invalid(
            S3ErrorCode::InvalidRequest,
            "At least one action needs to be specified in a rule",
        ));
    }
    Ok(Rule {
        id,
        enabled,
        filter,
        expiry,
        expired_delete_marker,
        noncurrent_days,
        newer_noncurrent_kept,
        abort_upload_days,
    })
}

impl Rules {
    /// Validates a PutBucketLifecycleConfiguration document as AWS does; on success also
    /// returns the document to store, with the ids Eddy made up for rules that had none.
    pub fn validate(
        mut config: BucketLifecycleConfiguration,
    ) -> S3Result<(Self, BucketLifecycleConfiguration)> {
        if config.rules.is_empty() || config.rules.len() > MAX_RULES {
            return Err(malformed());
        }
        let mut ids = BTreeSet::new();
        let mut rules = Vec::with_capacity(config.rules.len());
        for r in &mut config.rules {
            let parsed = rule(r)?;
            if !ids.insert(parsed.id.clone()) {
                return Err(invalid(
                    S3ErrorCode::InvalidArgument,
                    "Rule ID must be unique. Found same ID for more than one rule",
                ));
            }
            r.id = Some(parsed.id.clone());
            rules.push(parsed);
        }
        Ok((Self { rules }, config))
    }

    /// The rules of a stored document (validated when it was put).
    pub fn from_stored(config: BucketLifecycleConfiguration) -> S3Result<Self> {
        Self::validate(config).map(|(r, _)| r)
    }

    /// The enabled rules.
    pub fn enabled(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter().filter(|r| r.enabled)
    }

    /// When the current version with this key, size, tags and last-modified time
    /// expires, and by which rule: the earliest of the enabled rules that expire it.
    pub fn current_expiry(
        &self,
        key: &str,
        size: u64,
        tags: &BTreeMap<String, String>,
        last_modified_ms: i64,
        day_ms: i64,
    ) -> Option<(i64, &str)> {
        self.enabled()
            .filter(|r| r.filter.matches(key, size, tags))
            .filter_map(|r| {
                let at = match r.expiry? {
                    Expiry::Days(d) => after_days(last_modified_ms, d, day_ms),
                    Expiry::Date(t) => t,
                };
                Some((at, r.id.as_str()))
            })
            .min()
    }

    /// When a noncurrent version expires, and by which rule: `noncurrent_since_ms` is
    /// when it became noncurrent, `newer_noncurrent` how many noncurrent versions of its
    /// key are newer than it. `None` when no enabled rule expires it.
    pub fn noncurrent_expiry(
        &self,
        key: &str,
        size: u64,
        tags: &BTreeMap<String, String>,
        noncurrent_since_ms: i64,
        newer_noncurrent: u32,
        day_ms: i64,
    ) -> Option<(i64, &str)> {
        self.enabled()
            .filter(|r| r.filter.matches(key, size, tags))
            .filter(|r| newer_noncurrent >= r.newer_noncurrent_kept)
            .filter_map(|r| {
                let at = after_days(noncurrent_since_ms, r.noncurrent_days?, day_ms);
                Some((at, r.id.as_str()))
            })
            .min()
    }

    /// Whether a delete marker that is its key's only version is removed.
    pub fn removes_lone_marker(&self, key: &str) -> bool {
        self.enabled()
            .any(|r| r.expired_delete_marker && r.filter.matches(key, 0, &BTreeMap::new()))
    }

    /// When an incomplete multipart upload of this key started at `initiated_ms` is
    /// aborted.
    pub fn upload_abort(&self, key: &str, initiated_ms: i64, day_ms: i64) -> Option<i64> {
        self.enabled()
            .filter(|r| r.filter.prefix.is_empty() || key.starts_with(&r.filter.prefix))
            .filter_map(|r| Some(after_days(initiated_ms, r.abort_upload_days?, day_ms)))
            .min()
    }
}

/// `days` after `from`, rounded up to the next day boundary.
pub fn after_days(from_ms: i64, days: u32, day_ms: i64) -> i64 {
    let day_ms = day_ms.max(1);
    let t = from_ms.saturating_add(i64::from(days).saturating_mul(day_ms));
    t.div_euclid(day_ms)
        .saturating_add(i64::from(t.rem_euclid(day_ms) != 0))
        * day_ms
}

/// The `x-amz-expiration` header for an expiry: `expiry-date="<HTTP date>",
/// rule-id="<id>"`, as AWS writes it.
pub fn expiration_header(at_ms: i64, rule_id: &str) -> String {
    let date = time::OffsetDateTime::from_unix_timestamp(at_ms.div_euclid(1000))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let http = date
        .format(&time::format_description::well_known::Rfc2822)
        .unwrap_or_default();
    // RFC 2822 writes "+0000"; HTTP dates say "GMT".
    let http = http.trim_end_matches(" +0000");
    let id = rule_id.replace('\\', "\\\\").replace('"', "\\\"");
    format!("expiry-date=\"{http} GMT\", rule-id=\"{id}\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use s3s::dto::{
        AbortIncompleteMultipartUpload, ExpirationStatus, LifecycleExpiration,
        LifecycleRuleAndOperator, NoncurrentVersionExpiration,
    };

    const DAY: i64 = 86_400_000;

    fn base() -> LifecycleRule {
        LifecycleRule {
            abort_incomplete_multipart_upload: None,
            expiration: None,
            filter: None,
            id: Some("r".into()),
            noncurrent_version_expiration: None,
            noncurrent_version_transitions: None,
            prefix: None,
            status: ExpirationStatus::from_static(ExpirationStatus::ENABLED),
            transitions: None,
        }
    }

    fn days(d: i32) -> Option<LifecycleExpiration> {
        Some(LifecycleExpiration {
            date: None,
            days: Some(d),
            expired_object_delete_marker: None,
        })
    }

    fn config(rules: Vec<LifecycleRule>) -> BucketLifecycleConfiguration {
        BucketLifecycleConfiguration { rules }
    }

    fn code(r: S3Result<(Rules, BucketLifecycleConfiguration)>) -> String {
        r.unwrap_err().code().as_str().to_owned()
    }

    #[test]
    fn days_round_up_to_the_next_midnight() {
        // 2026-01-01T10:00Z plus one day expires at 2026-01-03T00:00Z.
        let lm = 1_767_261_600_000;
        assert_eq!(after_days(lm, 1, DAY), 1_767_398_400_000);
        // Exactly on a boundary stays there.
        assert_eq!(after_days(2 * DAY, 1, DAY), 3 * DAY);
        assert_eq!(after_days(1500, 1, 1000), 3000);
    }

    #[test]
    fn the_earliest_matching_rule_wins() {
        let mut a = base();
        a.expiration = days(30);
        let mut b = base();
        b.id = Some("logs".into());
        b.expiration = days(1);
        b.filter = Some(LifecycleRuleFilter {
            prefix: Some("logs/".into()),
            ..Default::default()
        });
        let (rules, _) = Rules::validate(config(vec![a, b])).unwrap();
        let tags = BTreeMap::new();
        assert_eq!(
            rules.current_expiry("logs/x", 1, &tags, 0, DAY),
            Some((DAY, "logs"))
        );
        assert_eq!(
            rules.current_expiry("img/x", 1, &tags, 0, DAY),
            Some((30 * DAY, "r"))
        );
    }

    #[test]
    fn filters_combine_prefix_tags_and_sizes() {
        let mut r = base();
        r.expiration = days(1);
        r.filter = Some(LifecycleRuleFilter {
            and: Some(LifecycleRuleAndOperator {
                prefix: Some("a/".into()),
                tags: Some(vec![Tag {
                    key: Some("t".into()),
                    value: Some("1".into()),
                }]),
                object_size_greater_than: Some(10),
                object_size_less_than: Some(100),
            }),
            ..Default::default()
        });
        let (rules, _) = Rules::validate(config(vec![r])).unwrap();
        let t1 = BTreeMap::from([("t".to_owned(), "1".to_owned())]);
        let t2 = BTreeMap::from([("t".to_owned(), "2".to_owned())]);
        assert!(rules.current_expiry("a/x", 50, &t1, 0, DAY).is_some());
        assert!(rules.current_expiry("a/x", 50, &t2, 0, DAY).is_none());
        assert!(rules.current_expiry("a/x", 10, &t1, 0, DAY).is_none());
        assert!(rules.current_expiry("a/x", 100, &t1, 0, DAY).is_none());
        assert!(rules.current_expiry("b/x", 50, &t1, 0, DAY).is_none());
    }

    #[test]
    fn noncurrent_versions_keep_the_newest() {
        let mut r = base();
        r.noncurrent_version_expiration = Some(NoncurrentVersionExpiration {
            noncurrent_days: Some(2),
            newer_noncurrent_versions: Some(2),
        });
        let (rules, _) = Rules::validate(config(vec![r])).unwrap();
        let tags = BTreeMap::new();
        assert_eq!(rules.noncurrent_expiry("k", 1, &tags, 0, 0, DAY), None);
        assert_eq!(rules.noncurrent_expiry("k", 1, &tags, 0, 1, DAY), None);
        assert_eq!(
            rules.noncurrent_expiry("k", 1, &tags, 0, 2, DAY),
            Some((2 * DAY, "r"))
        );
    }

    #[test]
    fn disabled_rules_do_nothing() {
        let mut r = base();
        r.expiration = days(1);
        r.status = ExpirationStatus::from_static(ExpirationStatus::DISABLED);
        let (rules, _) = Rules::validate(config(vec![r])).unwrap();
        assert!(
            rules
                .current_expiry("k", 1, &BTreeMap::new(), 0, DAY)
                .is_none()
        );
    }

    #[test]
    fn refusals_use_aws_codes() {
        assert_eq!(code(Rules::validate(config(vec![]))), "MalformedXML");
        let mut none = base();
        none.expiration = None;
        assert_eq!(code(Rules::validate(config(vec![none]))), "InvalidRequest");
        let mut zero = base();
        zero.expiration = days(0);
        assert_eq!(code(Rules::validate(config(vec![zero]))), "InvalidArgument");
        let mut a = base();
        a.expiration = days(1);
        let b = a.clone();
        assert_eq!(code(Rules::validate(config(vec![a, b]))), "InvalidArgument");
        let mut both = base();
        both.expiration = days(1);
        both.prefix = Some("x".into());
        both.filter = Some(LifecycleRuleFilter::default());
        assert_eq!(code(Rules::validate(config(vec![both]))), "MalformedXML");
        let mut tagged_abort = base();
        tagged_abort.abort_incomplete_multipart_upload = Some(AbortIncompleteMultipartUpload {
            days_after_initiation: Some(1),
        });
        tagged_abort.filter = Some(LifecycleRuleFilter {
            tag: Some(Tag {
                key: Some("k".into()),
                value: Some("v".into()),
            }),
            ..Default::default()
        });
        assert_eq!(
            code(Rules::validate(config(vec![tagged_abort]))),
            "InvalidRequest"
        );
    }

    #[test]
    fn rules_without_ids_get_one() {
        let mut r = base();
        r.id = None;
        r.expiration = days(1);
        let (rules, stored) = Rules::validate(config(vec![r])).unwrap();
        assert_eq!(
            stored.rules[0].id.as_deref(),
            Some(rules.rules[0].id.as_str())
        );
        assert!(!rules.rules[0].id.is_empty());
    }

    #[test]
    fn expiration_header_is_aws_shaped() {
        assert_eq!(
            expiration_header(1_356_220_800_000, "picture-deletion-rule"),
            "expiry-date=\"Sun, 23 Dec 2012 00:00:00 GMT\", rule-id=\"picture-deletion-rule\""
        );
    }
}
