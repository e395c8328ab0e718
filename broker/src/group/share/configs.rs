//! A share group's dynamic configs (the `share.*` keys of Kafka's GROUP config
//! resource), set with IncrementalAlterConfigs and read with DescribeConfigs: each
//! checked against Kafka's bounds when set, stored with the group, and falling back to
//! the broker's setting when unset.

use std::collections::BTreeMap;
use std::time::Duration;

use super::partition::Limits;
use super::state::ShareConfig;

/// `share.auto.offset.reset`.
pub const AUTO_OFFSET_RESET: &str = "share.auto.offset.reset";
/// `share.record.lock.duration.ms`.
pub const LOCK_DURATION: &str = "share.record.lock.duration.ms";
/// `share.session.timeout.ms`.
pub const SESSION_TIMEOUT: &str = "share.session.timeout.ms";
/// `share.heartbeat.interval.ms`.
pub const HEARTBEAT_INTERVAL: &str = "share.heartbeat.interval.ms";
/// `share.delivery.count.limit`.
pub const DELIVERY_LIMIT: &str = "share.delivery.count.limit";
/// `share.isolation.level`.
pub const ISOLATION_LEVEL: &str = "share.isolation.level";

/// Every key served, in the order DescribeConfigs lists them.
pub const KEYS: [&str; 6] = [
    AUTO_OFFSET_RESET,
    DELIVERY_LIMIT,
    HEARTBEAT_INTERVAL,
    ISOLATION_LEVEL,
    LOCK_DURATION,
    SESSION_TIMEOUT,
];

/// The configs set on one group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupConfigs {
    set: BTreeMap<String, String>,
}

/// A millisecond value within Kafka's bounds for its key.
fn ms(value: &str, min: u64, max: u64, key: &str) -> Result<(), String> {
    match value.parse::<u64>() {
        Ok(v) if (min..=max).contains(&v) => Ok(()),
        _ => Err(format!("{key} must be an integer from {min} to {max}")),
    }
}

impl GroupConfigs {
    /// Checks one key's value; the message says what is wrong.
    pub fn check(key: &str, value: &str) -> Result<(), String> {
        match key {
            AUTO_OFFSET_RESET => match value {
                "latest" | "earliest" => Ok(()),
                _ => Err(format!(
                    "{key} must be latest or earliest (by_duration is not served)"
                )),
            },
            LOCK_DURATION => ms(value, 1_000, 3_600_000, key),
            SESSION_TIMEOUT => ms(value, 1_000, 1_800_000, key),
            HEARTBEAT_INTERVAL => ms(value, 1_000, 1_800_000, key),
            DELIVERY_LIMIT => ms(value, 2, 10, key),
            ISOLATION_LEVEL => match value {
                "read_uncommitted" => Ok(()),
                _ => Err(format!(
                    "{key} must be read_uncommitted (read_committed share groups are not served)"
                )),
            },
            _ => Err(format!("unknown group config {key}")),
        }
    }

    /// Sets `key` after [`Self::check`]; `None` removes it.
    pub fn set(&mut self, key: &str, value: Option<&str>) -> Result<(), String> {
        match value {
            Some(v) => {
                Self::check(key, v)?;
                self.set.insert(key.to_string(), v.to_string());
            }
            None => {
                if !KEYS.contains(&key) {
                    return Err(format!("unknown group config {key}"));
                }
                self.set.remove(key);
            }
        }
        Ok(())
    }

    /// The value set for `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.set.get(key).map(String::as_str)
    }

    /// Every key with its value and whether it was set on the group (else the broker's).
    pub fn describe(&self, cfg: &ShareConfig) -> Vec<(&'static str, String, bool)> {
        KEYS.iter()
            .map(|k| match self.get(k) {
                Some(v) => (*k, v.to_string(), true),
                None => (*k, default_of(k, cfg), false),
            })
            .collect()
    }

    /// Whether a new share partition starts at the log's start (else at its end).
    pub fn starts_earliest(&self) -> bool {
        self.get(AUTO_OFFSET_RESET) == Some("earliest")
    }

    /// The session timeout in force.
    pub fn session_timeout(&self, cfg: &ShareConfig) -> Duration {
        self.millis(SESSION_TIMEOUT).unwrap_or(cfg.session_timeout)
    }

    /// The heartbeat interval in force.
    pub fn heartbeat_interval(&self, cfg: &ShareConfig) -> Duration {
        self.millis(HEARTBEAT_INTERVAL)
            .unwrap_or(cfg.heartbeat_interval)
    }

    /// The record limits in force.
    pub fn limits(&self, cfg: &ShareConfig) -> Limits {
        Limits {
            lock_ms: self
                .millis(LOCK_DURATION)
                .unwrap_or(cfg.lock_duration)
                .as_millis() as i64,
            delivery_limit: self
                .get(DELIVERY_LIMIT)
                .and_then(|v| v.parse().ok())
                .unwrap_or(cfg.delivery_limit),
            max_in_flight: cfg.max_in_flight,
        }
    }

    fn millis(&self, key: &str) -> Option<Duration> {
        self.get(key)
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis)
    }

    /// The durable form: (key, value) pairs.
    pub fn stored(&self) -> Vec<(String, String)> {
        self.set
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// From the durable form, keeping only what this build serves and accepts.
    pub fn restore(pairs: Vec<(String, String)>) -> Self {
        Self {
            set: pairs
                .into_iter()
                .filter(|(k, v)| Self::check(k, v).is_ok())
                .collect(),
        }
    }
}

/// The broker's value for `key`.
fn default_of(key: &str, cfg: &ShareConfig) -> String {
    match key {
        AUTO_OFFSET_RESET => "latest".into(),
        LOCK_DURATION => cfg.lock_duration.as_millis().to_string(),
        SESSION_TIMEOUT => cfg.session_timeout.as_millis().to_string(),
        HEARTBEAT_INTERVAL => cfg.heartbeat_interval.as_millis().to_string(),
        DELIVERY_LIMIT => cfg.delivery_limit.to_string(),
        ISOLATION_LEVEL => "read_uncommitted".into(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_checked_and_fall_back_to_the_broker() {
        let cfg = ShareConfig::default();
        let mut c = GroupConfigs::default();
        assert!(c.set(LOCK_DURATION, Some("999")).is_err());
        assert!(c.set("share.bogus", Some("1")).is_err());
        assert!(c.set(AUTO_OFFSET_RESET, Some("by_duration:PT1H")).is_err());
        assert!(!c.starts_earliest());
        c.set(AUTO_OFFSET_RESET, Some("earliest")).unwrap();
        c.set(LOCK_DURATION, Some("2000")).unwrap();
        assert!(c.starts_earliest());
        assert_eq!(c.limits(&cfg).lock_ms, 2_000);
        c.set(LOCK_DURATION, None).unwrap();
        assert_eq!(c.limits(&cfg).lock_ms, 30_000);
        let d = c.describe(&cfg);
        assert!(d.contains(&(AUTO_OFFSET_RESET, "earliest".into(), true)));
        assert!(d.contains(&(LOCK_DURATION, "30000".into(), false)));
        assert_eq!(GroupConfigs::restore(c.stored()), c);
    }
}
