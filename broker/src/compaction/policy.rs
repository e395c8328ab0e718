//! What a compacted topic's configs ask of the log cleaner, read once per pass.

use std::collections::BTreeMap;

use crate::configs;

/// The settings of a topic whose `cleanup.policy` contains `compact`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    /// A record stays uncompacted at least this long after its timestamp
    /// (`min.compaction.lag.ms`).
    pub min_lag_ms: i64,
    /// A record becomes cleanable at most this long after its timestamp, whatever the
    /// dirty ratio (`max.compaction.lag.ms`).
    pub max_lag_ms: i64,
    /// A partition is cleaned once this share of its cleanable bytes is dirty
    /// (`min.cleanable.dirty.ratio`).
    pub min_dirty_ratio: f64,
    /// Tombstones stay readable this long after compaction first reaches them
    /// (`delete.retention.ms`).
    pub delete_retention_ms: i64,
    /// The head (never compacted) rolls after this much time (`segment.ms`) ...
    pub segment_ms: i64,
    /// ... or this many bytes (`segment.bytes`).
    pub segment_bytes: u64,
}

impl Policy {
    /// The policy a topic's configs set, if its `cleanup.policy` contains `compact`.
    pub fn of(configs: &BTreeMap<String, String>) -> Option<Policy> {
        if !configs::compacted(configs) {
            return None;
        }
        let long = |name: &str| configs::value(configs, name).parse::<i64>().ok();
        let default_long = |name: &str| {
            configs::find(name)
                .and_then(|d| d.default.parse::<i64>().ok())
                .unwrap_or(i64::MAX)
        };
        let get = |name: &str| long(name).unwrap_or_else(|| default_long(name));
        Some(Policy {
            min_lag_ms: get("min.compaction.lag.ms").max(0),
            max_lag_ms: get("max.compaction.lag.ms").max(1),
            min_dirty_ratio: configs::value(configs, "min.cleanable.dirty.ratio")
                .parse::<f64>()
                .unwrap_or(0.5),
            delete_retention_ms: get("delete.retention.ms").max(0),
            segment_ms: get("segment.ms").max(1),
            segment_bytes: get("segment.bytes").max(1) as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn only_compacted_topics_have_a_policy() {
        assert_eq!(Policy::of(&configs(&[])), None);
        assert_eq!(Policy::of(&configs(&[("cleanup.policy", "delete")])), None);
        let p = Policy::of(&configs(&[("cleanup.policy", "compact,delete")])).unwrap();
        assert_eq!(p.min_lag_ms, 0);
        assert_eq!(p.max_lag_ms, i64::MAX);
        assert_eq!(p.min_dirty_ratio, 0.5);
        assert_eq!(p.delete_retention_ms, 86_400_000);
        assert_eq!(p.segment_ms, 604_800_000);
        assert_eq!(p.segment_bytes, 1 << 30);
    }

    #[test]
    fn settings_come_from_the_topic() {
        let p = Policy::of(&configs(&[
            ("cleanup.policy", "compact"),
            ("min.compaction.lag.ms", "1000"),
            ("max.compaction.lag.ms", "60000"),
            ("min.cleanable.dirty.ratio", "0.01"),
            ("delete.retention.ms", "500"),
            ("segment.ms", "100"),
            ("segment.bytes", "16384"),
        ]))
        .unwrap();
        assert_eq!(
            p,
            Policy {
                min_lag_ms: 1000,
                max_lag_ms: 60000,
                min_dirty_ratio: 0.01,
                delete_retention_ms: 500,
                segment_ms: 100,
                segment_bytes: 16384,
            }
        );
    }
}
