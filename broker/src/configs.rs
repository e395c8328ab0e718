//! Topic configs: the ones Kafka defines, their defaults and their validation. An unknown
//! name or a bad value gets INVALID_CONFIG; values are stored only when set.

use std::collections::BTreeMap;

/// How a config's value is checked (and reported in DescribeConfigs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// true / false.
    Boolean,
    /// 32-bit integer at least the given minimum.
    Int(i64),
    /// 64-bit integer at least the given minimum.
    Long(i64),
    /// Floating point in `0..=1`.
    Ratio,
    /// One of these strings.
    Enum(&'static [&'static str]),
    /// A comma-separated list of these strings.
    List(&'static [&'static str]),
    /// Any string (read-only broker configs such as `advertised.listeners`).
    Text,
}

impl Kind {
    /// DescribeConfigs' config type code.
    pub fn type_code(&self) -> i8 {
        match self {
            Kind::Boolean => 1,
            Kind::Enum(_) | Kind::Text => 2,
            Kind::Int(_) => 3,
            Kind::Long(_) => 5,
            Kind::Ratio => 6,
            Kind::List(_) => 7,
        }
    }
}

/// A topic config definition.
#[derive(Debug, Clone, Copy)]
pub struct Def {
    /// Name.
    pub name: &'static str,
    /// Default value.
    pub default: &'static str,
    /// Type and range.
    pub kind: Kind,
}

const fn def(name: &'static str, default: &'static str, kind: Kind) -> Def {
    Def {
        name,
        default,
        kind,
    }
}

/// Every topic config, by name.
pub const TOPIC_CONFIGS: &[Def] = &[
    def(
        "cleanup.policy",
        "delete",
        Kind::List(&["delete", "compact"]),
    ),
    def(
        "compression.type",
        "producer",
        Kind::Enum(&["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"]),
    ),
    def("delete.retention.ms", "86400000", Kind::Long(0)),
    def("file.delete.delay.ms", "60000", Kind::Long(0)),
    def("flush.messages", "9223372036854775807", Kind::Long(1)),
    def("flush.ms", "9223372036854775807", Kind::Long(0)),
    def("index.interval.bytes", "4096", Kind::Int(0)),
    def("local.retention.bytes", "-2", Kind::Long(-2)),
    def("local.retention.ms", "-2", Kind::Long(-2)),
    def(
        "max.compaction.lag.ms",
        "9223372036854775807",
        Kind::Long(1),
    ),
    def("max.message.bytes", "1048588", Kind::Int(0)),
    def("message.downconversion.enable", "true", Kind::Boolean),
    def(
        "message.timestamp.after.max.ms",
        "9223372036854775807",
        Kind::Long(0),
    ),
    def(
        "message.timestamp.before.max.ms",
        "9223372036854775807",
        Kind::Long(0),
    ),
    def(
        "message.timestamp.difference.max.ms",
        "9223372036854775807",
        Kind::Long(0),
    ),
    def(
        "message.timestamp.type",
        "CreateTime",
        Kind::Enum(&["CreateTime", "LogAppendTime"]),
    ),
    def("min.cleanable.dirty.ratio", "0.5", Kind::Ratio),
    def("min.compaction.lag.ms", "0", Kind::Long(0)),
    def("min.insync.replicas", "1", Kind::Int(1)),
    def("preallocate", "false", Kind::Boolean),
    def("remote.storage.enable", "false", Kind::Boolean),
    def("retention.bytes", "-1", Kind::Long(-1)),
    def("retention.ms", "604800000", Kind::Long(-1)),
    def("segment.bytes", "1073741824", Kind::Int(14)),
    def("segment.index.bytes", "10485760", Kind::Int(4)),
    def("segment.jitter.ms", "0", Kind::Long(0)),
    def("segment.ms", "604800000", Kind::Long(1)),
    def("unclean.leader.election.enable", "false", Kind::Boolean),
    // Schema validation on produce, as Confluent Server names it (docs/schemas.md).
    def("confluent.key.schema.validation", "false", Kind::Boolean),
    def("confluent.value.schema.validation", "false", Kind::Boolean),
    def(
        "confluent.key.subject.name.strategy",
        "io.confluent.kafka.serializers.subject.TopicNameStrategy",
        Kind::Enum(SUBJECT_NAME_STRATEGIES),
    ),
    def(
        "confluent.value.subject.name.strategy",
        "io.confluent.kafka.serializers.subject.TopicNameStrategy",
        Kind::Enum(SUBJECT_NAME_STRATEGIES),
    ),
];

/// The subject name strategies schema validation takes.
const SUBJECT_NAME_STRATEGIES: &[&str] = &[
    "io.confluent.kafka.serializers.subject.TopicNameStrategy",
    "io.confluent.kafka.serializers.subject.RecordNameStrategy",
    "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy",
];

/// The definition of a topic config.
pub fn find(name: &str) -> Option<&'static Def> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

/// Checks one name and value; the error is the message for INVALID_CONFIG.
pub fn validate(name: &str, value: &str) -> Result<(), String> {
    let d = find(name).ok_or_else(|| format!("unknown topic config {name}"))?;
    let ok = match d.kind {
        Kind::Boolean => matches!(value, "true" | "false"),
        Kind::Int(min) => value.parse::<i32>().is_ok_and(|v| i64::from(v) >= min),
        Kind::Long(min) => value.parse::<i64>().is_ok_and(|v| v >= min),
        Kind::Ratio => value.parse::<f64>().is_ok_and(|v| (0.0..=1.0).contains(&v)),
        Kind::Enum(options) => options.contains(&value),
        Kind::List(options) => value.split(',').all(|v| options.contains(&v.trim())),
        Kind::Text => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("invalid value {value:?} for {name}"))
    }
}

/// Checks a whole set of configs.
pub fn validate_all(configs: &BTreeMap<String, String>) -> Result<(), String> {
    configs.iter().try_for_each(|(k, v)| validate(k, v))
}

/// A topic's effective value of a config.
pub fn value<'a>(configs: &'a BTreeMap<String, String>, name: &str) -> &'a str {
    configs
        .get(name)
        .map(String::as_str)
        .or_else(|| find(name).map(|d| d.default))
        .unwrap_or("")
}

/// A topic's `max.message.bytes`.
pub fn max_message_bytes(configs: &BTreeMap<String, String>) -> usize {
    value(configs, "max.message.bytes")
        .parse()
        .unwrap_or(1_048_588)
}

/// Whether a topic is compacted (`cleanup.policy` contains `compact`).
pub fn compacted(configs: &BTreeMap<String, String>) -> bool {
    value(configs, "cleanup.policy")
        .split(',')
        .any(|p| p.trim() == "compact")
}

/// Whether a topic stamps batches with the broker's time.
pub fn log_append_time(configs: &BTreeMap<String, String>) -> bool {
    value(configs, "message.timestamp.type") == "LogAppendTime"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_names_and_values() {
        assert!(validate("retention.ms", "-1").is_ok());
        assert!(validate("retention.ms", "-2").is_err());
        assert!(validate("cleanup.policy", "compact,delete").is_ok());
        assert!(validate("cleanup.policy", "shred").is_err());
        assert!(validate("max.message.bytes", "99999999999").is_err());
        assert!(validate("no.such.config", "1").is_err());
        assert!(validate("message.timestamp.type", "LogAppendTime").is_ok());
    }
}
