//! The console's errors and the one place they become responses: a JSON body
//! `{"error": {"message", "code", "kafka_error"?}}` with the HTTP status that says what
//! happened (a Kafka error code is mapped to the status a browser page can act on).

use http::StatusCode;
use kafka_protocol::error::ParseResponseErrorCode;

/// A console request that failed.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// No session, or it ended.
    #[error("{0}")]
    Unauthenticated(String),
    /// A changing request without its session's CSRF token.
    #[error("the request lacks its session's CSRF token (x-csrf-token)")]
    Csrf,
    /// The request is malformed.
    #[error("{0}")]
    BadRequest(String),
    /// A policy refuses it.
    #[error("{0}")]
    Forbidden(String),
    /// No such page, topic, group.
    #[error("{0}")]
    NotFound(String),
    /// The state does not allow it (a group with members cannot be reset).
    #[error("{0}")]
    Conflict(String),
    /// A Kafka request the console made was answered with an error.
    #[error("{message}")]
    Kafka {
        /// The Kafka error code.
        code: i16,
        /// What went wrong, with the error's name.
        message: String,
    },
    /// The server failed.
    #[error("{0}")]
    Internal(String),
}

/// A console result.
pub type ConsoleResult<T> = Result<T, ConsoleError>;

impl ConsoleError {
    /// The error of a Kafka error code, naming it.
    pub fn kafka(code: i16, what: &str, detail: Option<&str>) -> Self {
        let name = code
            .err()
            .map_or_else(|| format!("error {code}"), |e| format!("{e:?}"));
        let message = match detail.filter(|d| !d.is_empty()) {
            Some(d) => format!("{what}: {name}: {d}"),
            None => format!("{what}: {name}"),
        };
        Self::Kafka { code, message }
    }

    fn status(&self) -> StatusCode {
        match self {
            Self::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Self::Csrf | Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Kafka { code, .. } => match code {
                // TOPIC_, GROUP_, CLUSTER_AUTHORIZATION_FAILED
                29..=31 => StatusCode::FORBIDDEN,
                // UNKNOWN_TOPIC_OR_PARTITION, GROUP_ID_NOT_FOUND, UNKNOWN_TOPIC_ID
                3 | 69 | 100 => StatusCode::NOT_FOUND,
                // TOPIC_ALREADY_EXISTS, NON_EMPTY_GROUP
                36 | 68 => StatusCode::CONFLICT,
                // OFFSET_OUT_OF_RANGE, INVALID_TOPIC_EXCEPTION, RECORD_LIST_TOO_LARGE,
                // INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG,
                // POLICY_VIOLATION, INVALID_RECORD
                1 | 17 | 18 | 37 | 38 | 40 | 44 | 87 => StatusCode::BAD_REQUEST,
                _ => StatusCode::BAD_GATEWAY,
            },
        }
    }

    /// The response.
    pub fn reply(&self) -> crate::Reply {
        let status = self.status();
        let mut error = serde_json::json!({
            "message": self.to_string(),
            "code": status.as_u16(),
        });
        if let Self::Kafka { code, .. } = self
            && let Some(e) = code.err()
        {
            error["kafka_error"] = format!("{e:?}").into();
        }
        crate::json(status, &serde_json::json!({ "error": error }))
    }
}
