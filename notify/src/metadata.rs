//! A bucket's metadata configuration (S3's `CreateBucketMetadataConfiguration`): a journal
//! of every object change, kept as a Kafka topic whose records are the change's S3 event
//! JSON and commit with the change, and optionally a live inventory table of the bucket's
//! current objects, which the Iceberg catalog brings up to date on every load from the
//! journal's end offsets. Stored in the bucket record's settings (key [`SETTINGS_KEY`],
//! JSON), so it needs no catalog table of its own; the journal is one more notification
//! rule, out of sight of the S3 notification API ([`crate::NotificationConfig::load_all`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{Destination, Rule};
use crate::error::ConfigError;

/// The bucket settings entry holding the configuration.
pub const SETTINGS_KEY: &str = "eddy.metadata";

/// The id of the journal's notification rule (the `configurationId` of its records).
pub const JOURNAL_RULE_ID: &str = "eddy-metadata-journal";

/// Every kind of change, as notification event names: the journal records them all.
const ALL_EVENTS: [&str; 4] = [
    "s3:ObjectCreated:*",
    "s3:ObjectRemoved:*",
    "s3:ObjectTagging:*",
    "s3:LifecycleExpiration:*",
];

/// The topic holding a bucket's journal. Bucket names are valid topic names (lower-case
/// letters, digits, `.` and `-`), so the name is always a valid topic.
pub fn journal_topic(bucket: &str) -> String {
    format!("s3-journal.{bucket}")
}

/// The Iceberg namespace of a bucket's metadata tables, as AWS names it (`b_<bucket>`).
pub fn namespace(bucket: &str) -> String {
    format!("b_{bucket}")
}

/// The bucket whose metadata namespace `ns` is.
pub fn bucket_of_namespace(ns: &str) -> Option<&str> {
    ns.strip_prefix("b_").filter(|b| !b.is_empty())
}

/// A bucket's metadata configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataConfig {
    /// The journal topic.
    pub journal_topic: String,
    /// Days a journal record is kept (`None`: forever), the topic's `retention.ms`.
    pub expiration_days: Option<u32>,
    /// Whether the live inventory table is kept.
    pub inventory: bool,
    /// When the configuration was made, ms since the epoch.
    pub created_ms: i64,
}

impl MetadataConfig {
    /// The configuration stored in a bucket's settings (none when there is none).
    pub fn load(settings: &BTreeMap<String, Vec<u8>>) -> Result<Option<Self>, ConfigError> {
        settings
            .get(SETTINGS_KEY)
            .map(|raw| serde_json::from_slice(raw).map_err(|e| ConfigError::Corrupt(e.to_string())))
            .transpose()
    }

    /// Writes the configuration into a bucket's settings.
    pub fn store(&self, settings: &mut BTreeMap<String, Vec<u8>>) {
        // Serializing plain strings and numbers cannot fail.
        settings.insert(
            SETTINGS_KEY.to_owned(),
            serde_json::to_vec(self).unwrap_or_default(),
        );
    }

    /// Removes the configuration from a bucket's settings.
    pub fn remove(settings: &mut BTreeMap<String, Vec<u8>>) {
        settings.remove(SETTINGS_KEY);
    }

    /// The journal topic's `retention.ms`.
    pub fn retention_ms(&self) -> String {
        match self.expiration_days {
            Some(d) => (u64::from(d) * 24 * 3600 * 1000).to_string(),
            None => "-1".to_owned(),
        }
    }

    /// The notification rule that writes the journal: every change of every key.
    pub fn journal_rule(&self) -> Rule {
        Rule {
            id: JOURNAL_RULE_ID.to_owned(),
            destination: Destination::Topic,
            arn: self.journal_topic.clone(),
            topic: self.journal_topic.clone(),
            events: ALL_EVENTS.iter().map(|e| (*e).to_owned()).collect(),
            prefix: None,
            suffix: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_the_settings() {
        let c = MetadataConfig {
            journal_topic: journal_topic("photos"),
            expiration_days: Some(7),
            inventory: true,
            created_ms: 1,
        };
        let mut s = BTreeMap::new();
        assert_eq!(MetadataConfig::load(&s).unwrap(), None);
        c.store(&mut s);
        assert_eq!(MetadataConfig::load(&s).unwrap(), Some(c.clone()));
        assert_eq!(c.retention_ms(), "604800000");
        assert_eq!(bucket_of_namespace(&namespace("photos")), Some("photos"));
        MetadataConfig::remove(&mut s);
        assert!(s.is_empty());
    }

    #[test]
    fn the_journal_rule_takes_every_change() {
        let c = MetadataConfig {
            journal_topic: "j".into(),
            expiration_days: None,
            inventory: false,
            created_ms: 0,
        };
        let all = crate::NotificationConfig::load_all(&{
            let mut s = BTreeMap::new();
            c.store(&mut s);
            s
        })
        .unwrap()
        .unwrap();
        for kind in crate::EventKind::ALL {
            let topics: Vec<&str> = all
                .matching(kind, "any/key")
                .map(|r| r.topic.as_str())
                .collect();
            assert_eq!(topics, ["j"], "{kind:?}");
        }
    }
}
