//! A bucket's notification configuration: which changes of which keys go to which
//! topic. It lives in the bucket record's settings (key [`SETTINGS_KEY`], JSON), so it
//! needs no catalog table of its own and changes with `S3Op::ReplaceBucket`. A deployed
//! function pipeline's bucket triggers are rules of the same kind under a key of their
//! own ([`PIPELINE_KEY_PREFIX`] and the pipeline's name), out of sight of the S3
//! notification API, so deploying a pipeline and the user's own configuration never
//! overwrite each other; an object change fires both ([`NotificationConfig::load_all`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::event::{EventKind, EventSet};

/// The bucket settings entry holding the configuration.
pub const SETTINGS_KEY: &str = "s3.notification";

/// Settings key prefix of a deployed pipeline's trigger rules (then the pipeline's name).
pub const PIPELINE_KEY_PREFIX: &str = "eddy.pipeline.";

/// Most configurations one bucket may have (each matching one adds a row per change).
pub const MAX_CONFIGURATIONS: usize = 100;

/// Longest filter value or id, in bytes (the longest key S3 allows).
const MAX_VALUE_LEN: usize = 1024;

/// Which list of the S3 `NotificationConfiguration` a rule came in, so it is returned
/// in the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Destination {
    /// `TopicConfiguration` (the documented form).
    Topic,
    /// `QueueConfiguration` (what MinIO-style tools send for Kafka targets).
    Queue,
}

/// One configuration as the client sent it, before validation.
#[derive(Debug, Clone, Default)]
pub struct RuleSpec {
    /// `Id`, if given.
    pub id: Option<String>,
    /// The list it came in.
    pub destination: Option<Destination>,
    /// `Topic` / `Queue` ARN, or a plain topic name.
    pub arn: String,
    /// `Event` names.
    pub events: Vec<String>,
    /// Filter rules as (name, value).
    pub filter_rules: Vec<(String, String)>,
}

/// One validated configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    /// Its id (`configurationId` in the event record).
    pub id: String,
    /// The list it came in.
    pub destination: Destination,
    /// The destination as given (returned by GetBucketNotificationConfiguration).
    pub arn: String,
    /// The Eddy topic the ARN names.
    pub topic: String,
    /// The event names as given.
    pub events: Vec<String>,
    /// Keys must start with this.
    pub prefix: Option<String>,
    /// Keys must end with this.
    pub suffix: Option<String>,
}

impl Rule {
    fn kinds(&self) -> Result<EventSet, ConfigError> {
        let mut set = EventSet::default();
        for e in &self.events {
            set.add_name(e)?;
        }
        Ok(set)
    }

    fn key_matches(&self, key: &str) -> bool {
        self.prefix.as_deref().is_none_or(|p| key.starts_with(p))
            && self.suffix.as_deref().is_none_or(|s| key.ends_with(s))
    }
}

/// A bucket's notification configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NotificationConfig {
    /// The configurations, in the order given.
    pub rules: Vec<Rule>,
    /// Each rule's event set, parsed once when loaded.
    #[serde(skip)]
    kinds: Vec<EventSet>,
}

/// The topic an ARN (`arn:<partition>:<service>:<region>:<account>:<topic>`) or a plain
/// topic name names.
pub fn topic_of(arn: &str) -> Result<String, ConfigError> {
    let bad = || ConfigError::BadDestination(arn.to_owned());
    let name = if arn.starts_with("arn:") {
        let fields: Vec<&str> = arn.split(':').collect();
        if fields.len() != 6 || fields[2].is_empty() {
            return Err(bad());
        }
        fields[5]
    } else {
        arn
    };
    // Kafka's topic name rules.
    let valid = !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if valid {
        Ok(name.to_owned())
    } else {
        Err(bad())
    }
}

impl NotificationConfig {
    /// Validates what a client sent. `topic_exists` says whether a topic exists. An
    /// empty list is a valid configuration that turns notifications off.
    pub fn validate(
        specs: Vec<RuleSpec>,
        topic_exists: impl Fn(&str) -> bool,
    ) -> Result<Self, ConfigError> {
        if specs.len() > MAX_CONFIGURATIONS {
            return Err(ConfigError::TooMany(MAX_CONFIGURATIONS));
        }
        let mut rules: Vec<Rule> = Vec::with_capacity(specs.len());
        for spec in specs {
            let topic = topic_of(&spec.arn)?;
            if spec.events.is_empty() {
                return Err(ConfigError::NoEvents);
            }
            let mut prefix = None;
            let mut suffix = None;
            for (name, value) in spec.filter_rules {
                if value.len() > MAX_VALUE_LEN {
                    return Err(ConfigError::FilterValueTooLong);
                }
                let (slot, which) = if name.eq_ignore_ascii_case("prefix") {
                    (&mut prefix, "prefix")
                } else if name.eq_ignore_ascii_case("suffix") {
                    (&mut suffix, "suffix")
                } else {
                    return Err(ConfigError::BadFilterRule(name));
                };
                if slot.replace(value).is_some() {
                    return Err(ConfigError::DuplicateFilterRule(which));
                }
            }
            let id = match spec.id.filter(|i| !i.is_empty()) {
                Some(id) if id.len() > MAX_VALUE_LEN => return Err(ConfigError::IdTooLong),
                Some(id) => id,
                None => format!("eddy-{}", uuid::Uuid::new_v4().simple()),
            };
            if rules.iter().any(|r| r.id == id) {
                return Err(ConfigError::DuplicateId(id));
            }
            let rule = Rule {
                id,
                destination: spec.destination.unwrap_or(Destination::Topic),
                arn: spec.arn,
                topic,
                events: spec.events,
                prefix,
                suffix,
            };
            rule.kinds()?;
            rules.push(rule);
        }
        // Checked last, so a malformed configuration gets its own error first.
        if let Some(r) = rules.iter().find(|r| !topic_exists(&r.topic)) {
            return Err(ConfigError::UnknownTopic(r.topic.clone()));
        }
        Self::with_rules(rules)
    }

    fn with_rules(rules: Vec<Rule>) -> Result<Self, ConfigError> {
        let kinds = rules.iter().map(Rule::kinds).collect::<Result<_, _>>()?;
        Ok(Self { rules, kinds })
    }

    /// The configuration stored in a bucket's settings (none when notifications are off).
    pub fn load(settings: &BTreeMap<String, Vec<u8>>) -> Result<Option<Self>, ConfigError> {
        let Some(raw) = settings.get(SETTINGS_KEY) else {
            return Ok(None);
        };
        let stored: NotificationConfig =
            serde_json::from_slice(raw).map_err(|e| ConfigError::Corrupt(e.to_string()))?;
        Self::with_rules(stored.rules).map(Some)
    }

    /// Every rule an object change in the bucket fires: the S3 configuration's, the
    /// metadata journal's, then each deployed pipeline's (none when there are none).
    pub fn load_all(settings: &BTreeMap<String, Vec<u8>>) -> Result<Option<Self>, ConfigError> {
        let mut rules = Self::load(settings)?.map(|c| c.rules).unwrap_or_default();
        if let Some(m) = crate::metadata::MetadataConfig::load(settings)? {
            rules.push(m.journal_rule());
        }
        for (key, raw) in settings.range(PIPELINE_KEY_PREFIX.to_owned()..) {
            if !key.starts_with(PIPELINE_KEY_PREFIX) {
                break;
            }
            let stored: NotificationConfig =
                serde_json::from_slice(raw).map_err(|e| ConfigError::Corrupt(e.to_string()))?;
            rules.extend(stored.rules);
        }
        if rules.is_empty() {
            return Ok(None);
        }
        Self::with_rules(rules).map(Some)
    }

    /// A pipeline's trigger rules (each already validated by the pipeline's checks: a
    /// known event name, a valid topic).
    pub fn for_pipeline(rules: Vec<Rule>) -> Result<Self, ConfigError> {
        Self::with_rules(rules)
    }

    /// Writes a pipeline's trigger rules into a bucket's settings (none removes them).
    pub fn store_pipeline(&self, pipeline: &str, settings: &mut BTreeMap<String, Vec<u8>>) {
        let key = format!("{PIPELINE_KEY_PREFIX}{pipeline}");
        if self.rules.is_empty() {
            settings.remove(&key);
        } else {
            let json = serde_json::to_vec(self).unwrap_or_default();
            settings.insert(key, json);
        }
    }

    /// Writes the configuration into a bucket's settings (an empty one removes it).
    pub fn store(&self, settings: &mut BTreeMap<String, Vec<u8>>) {
        if self.rules.is_empty() {
            settings.remove(SETTINGS_KEY);
        } else {
            // Serializing plain strings and enums cannot fail.
            let json = serde_json::to_vec(self).unwrap_or_default();
            settings.insert(SETTINGS_KEY.to_owned(), json);
        }
    }

    /// The rules a change of `kind` to `key` matches, in configuration order.
    pub fn matching<'a>(&'a self, kind: EventKind, key: &'a str) -> impl Iterator<Item = &'a Rule> {
        self.rules
            .iter()
            .zip(&self.kinds)
            .filter(move |(r, k)| k.contains(kind) && r.key_matches(key))
            .map(|(r, _)| r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(arn: &str, events: &[&str], filters: &[(&str, &str)]) -> RuleSpec {
        RuleSpec {
            id: None,
            destination: None,
            arn: arn.into(),
            events: events.iter().map(|e| e.to_string()).collect(),
            filter_rules: filters
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn arns_and_names() {
        assert_eq!(
            topic_of("arn:aws:sns:us-east-1:eddy:events").unwrap(),
            "events"
        );
        assert_eq!(topic_of("arn:minio:sqs::primary:ev.1").unwrap(), "ev.1");
        assert_eq!(topic_of("plain_topic-1").unwrap(), "plain_topic-1");
        for bad in [
            "",
            "arn:aws:sns:events",
            "arn:aws:sns:r:a:b:c",
            "a/b",
            "..",
            "arn:aws::r:a:t",
        ] {
            assert!(topic_of(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn validation_and_matching() {
        let exists = |t: &str| t == "events" || t == "other";
        let c = NotificationConfig::validate(
            vec![
                spec(
                    "arn:aws:sns:us-east-1:eddy:events",
                    &["s3:ObjectCreated:*"],
                    &[("prefix", "img/"), ("Suffix", ".jpg")],
                ),
                spec(
                    "other",
                    &["s3:ObjectRemoved:Delete", "s3:ObjectTagging:*"],
                    &[],
                ),
            ],
            exists,
        )
        .unwrap();
        let topics = |kind, key| {
            c.matching(kind, key)
                .map(|r| r.topic.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(topics(EventKind::Put, "img/a.jpg"), ["events"]);
        assert!(topics(EventKind::Put, "img/a.png").is_empty());
        assert!(topics(EventKind::Put, "doc/a.jpg").is_empty());
        assert_eq!(topics(EventKind::Delete, "img/a.jpg"), ["other"]);
        assert!(topics(EventKind::DeleteMarkerCreated, "x").is_empty());
        assert_eq!(topics(EventKind::TaggingDelete, "x"), ["other"]);

        let mut settings = BTreeMap::new();
        c.store(&mut settings);
        let back = NotificationConfig::load(&settings).unwrap().unwrap();
        assert_eq!(back, c);
        NotificationConfig::default().store(&mut settings);
        assert!(NotificationConfig::load(&settings).unwrap().is_none());
    }

    #[test]
    fn invalid_configurations() {
        let exists = |t: &str| t == "events";
        let err = |s: RuleSpec| NotificationConfig::validate(vec![s], exists).unwrap_err();
        assert_eq!(
            err(spec("nope", &["s3:ObjectCreated:*"], &[])),
            ConfigError::UnknownTopic("nope".into())
        );
        assert!(matches!(
            err(spec("events", &["s3:Bogus"], &[])),
            ConfigError::UnsupportedEvent(_)
        ));
        assert_eq!(err(spec("events", &[], &[])), ConfigError::NoEvents);
        assert!(matches!(
            err(spec("events", &["s3:ObjectCreated:*"], &[("middle", "x")])),
            ConfigError::BadFilterRule(_)
        ));
        assert_eq!(
            err(spec(
                "events",
                &["s3:ObjectCreated:*"],
                &[("prefix", "a"), ("prefix", "b")]
            )),
            ConfigError::DuplicateFilterRule("prefix")
        );
        let mut a = spec("events", &["s3:ObjectCreated:*"], &[]);
        a.id = Some("x".into());
        let b = a.clone();
        assert_eq!(
            NotificationConfig::validate(vec![a, b], exists).unwrap_err(),
            ConfigError::DuplicateId("x".into())
        );
    }

    #[test]
    fn pipeline_rules_fire_with_the_s3_configuration_and_stay_out_of_it() {
        let mut settings = BTreeMap::new();
        let s3 =
            NotificationConfig::validate(vec![spec("t1", &["s3:ObjectCreated:*"], &[])], |_| true)
                .unwrap();
        s3.store(&mut settings);
        let rule = |id: &str, topic: &str| Rule {
            id: id.into(),
            destination: Destination::Topic,
            arn: topic.into(),
            topic: topic.into(),
            events: vec!["s3:ObjectRemoved:*".into()],
            prefix: Some("in/".into()),
            suffix: None,
        };
        let p = NotificationConfig::for_pipeline(vec![rule("p.up", "pipeline.p.up")]).unwrap();
        p.store_pipeline("p", &mut settings);
        let all = NotificationConfig::load_all(&settings).unwrap().unwrap();
        let topics: Vec<&str> = all.rules.iter().map(|r| r.topic.as_str()).collect();
        assert_eq!(topics, ["t1", "pipeline.p.up"]);
        let fired: Vec<&str> = all
            .matching(EventKind::Delete, "in/a")
            .map(|r| r.topic.as_str())
            .collect();
        assert_eq!(fired, ["pipeline.p.up"]);
        // The S3 API sees only its own rules.
        assert_eq!(
            NotificationConfig::load(&settings)
                .unwrap()
                .unwrap()
                .rules
                .len(),
            1
        );
        NotificationConfig::default().store_pipeline("p", &mut settings);
        assert_eq!(
            NotificationConfig::load_all(&settings)
                .unwrap()
                .unwrap()
                .rules
                .len(),
            1
        );
    }
}
