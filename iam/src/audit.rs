//! The audit trail: administrative changes and refused requests, with who, what, when
//! and from where. Every part of the server that authorizes a request holds the
//! [`crate::directory::Directory`], so each reports through it
//! ([`crate::directory::Directory::audit`]); `eddy serve` gives the directory a sink that
//! appends the events to the `__eddy_audit` topic, so the trail is also a table.

use serde::Serialize;

/// What became of the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// An administrative change was made.
    Changed,
    /// The request was refused: bad credentials, or no policy allows it.
    Refused,
}

/// One entry of the trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditEvent {
    /// When, ms since the epoch.
    pub time_ms: i64,
    /// `s3`, `kafka`, `admin`, `iceberg`, `schema-registry` or `console` (its sign-ins).
    pub protocol: &'static str,
    /// Who: the authenticated user, the access key a refused request named, or none
    /// (anonymous).
    pub principal: Option<String>,
    /// What: the policy action (`s3:PutObject`, `KafkaCreate`) or the request
    /// (`PUT /admin/v1/policies/readers`).
    pub action: String,
    /// On what: the resource the action names.
    pub resource: String,
    /// Changed or refused.
    pub outcome: Outcome,
    /// From where: the client's address, when known.
    pub source: Option<String>,
    /// Why, for a refusal.
    pub reason: Option<String>,
}

impl AuditEvent {
    /// An event at the current time.
    pub fn now(
        protocol: &'static str,
        principal: Option<&str>,
        action: impl Into<String>,
        resource: impl Into<String>,
        outcome: Outcome,
    ) -> Self {
        let time_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Self {
            time_ms,
            protocol,
            principal: principal.map(str::to_owned),
            action: action.into(),
            resource: resource.into(),
            outcome,
            source: None,
            reason: None,
        }
    }

    /// The same, from `source`.
    pub fn from(mut self, source: Option<String>) -> Self {
        self.source = source;
        self
    }

    /// The same, refused for `reason`.
    pub fn because(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }
}

/// What an HTTP API's answer puts in the trail: a refusal (401, 403), a change when
/// the request makes one (`changes`) and succeeded, otherwise nothing.
pub fn http_outcome(status: u16, changes: bool) -> Option<Outcome> {
    match status {
        401 | 403 => Some(Outcome::Refused),
        200..=299 if changes => Some(Outcome::Changed),
        _ => None,
    }
}

/// Where events go. `record` must not block: it is called on request paths.
pub trait AuditSink: Send + Sync {
    /// Takes one event.
    fn record(&self, event: AuditEvent);
}
