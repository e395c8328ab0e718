//! Why a notification configuration was refused (the S3 gateway maps each to an S3
//! error), and why event rows could not be built.

/// A refused notification configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// An event name that is not one of the supported `s3:Object...` names.
    #[error("The event {0:?} is not supported for notifications")]
    UnsupportedEvent(String),
    /// A configuration without events.
    #[error("A notification configuration must name at least one event")]
    NoEvents,
    /// A destination that is neither a topic ARN nor a topic name.
    #[error(
        "The destination {0:?} is not a topic ARN (arn:aws:sns:<region>:<account>:<topic>) or a topic name"
    )]
    BadDestination(String),
    /// A destination topic that does not exist.
    #[error(
        "Unable to validate the following destination configurations: topic {0:?} does not exist"
    )]
    UnknownTopic(String),
    /// A filter rule whose name is not `prefix` or `suffix`.
    #[error("Invalid filter rule name {0:?}: it must be prefix or suffix")]
    BadFilterRule(String),
    /// Two `prefix` (or two `suffix`) rules in one filter.
    #[error("Cannot specify more than one {0} rule in a filter")]
    DuplicateFilterRule(&'static str),
    /// A filter value longer than a key can be.
    #[error("A filter rule value must be at most 1024 bytes")]
    FilterValueTooLong,
    /// Two configurations with the same id.
    #[error("Two notification configurations have the id {0:?}")]
    DuplicateId(String),
    /// An id longer than S3 allows.
    #[error("A notification configuration id must be at most 1024 bytes")]
    IdTooLong,
    /// More configurations than one bucket may have.
    #[error("A bucket may have at most {0} notification configurations")]
    TooMany(usize),
    /// A destination kind Eddy does not deliver to (Lambda, EventBridge).
    #[error("{0} notification destinations are not supported; use a TopicConfiguration")]
    UnsupportedDestination(&'static str),
    /// The stored configuration could not be read.
    #[error("stored notification configuration is unreadable: {0}")]
    Corrupt(String),
}

/// Event rows that could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The record batch encoder failed.
    #[error("encoding the event record batch: {0}")]
    Encode(String),
}
