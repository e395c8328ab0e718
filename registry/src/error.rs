//! The registry's errors and, in one place, the HTTP status and Confluent error code
//! each answers with (clients branch on the code: 40401 means "register it first",
//! 409 "incompatible", and so on).

use catalog::CatalogError;

/// A refused or failed registry request.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// No credentials, or wrong ones.
    #[error("{0}")]
    Unauthorized(String),
    /// The credentials are good but a policy refuses the action.
    #[error("{0}")]
    Forbidden(String),
    /// No such route.
    #[error("{0}")]
    NoRoute(String),
    /// The subject has no (live) version.
    #[error("Subject '{0}' not found.")]
    SubjectNotFound(String),
    /// The subject has no such version.
    #[error("Version {0} not found.")]
    VersionNotFound(String),
    /// No schema has that id, or the subject does not hold the schema looked up.
    #[error("{0}")]
    SchemaNotFound(String),
    /// The subject is soft-deleted, so it cannot be soft-deleted again.
    #[error("Subject '{0}' was soft deleted.Set permanent=true to delete permanently")]
    SubjectSoftDeleted(String),
    /// A permanent delete of a subject not soft-deleted first.
    #[error("Subject '{0}' was not deleted first before being permanently deleted")]
    SubjectNotSoftDeleted(String),
    /// The version is soft-deleted, so it cannot be soft-deleted again.
    #[error("Subject '{0}' Version {1} was soft deleted.Set permanent=true to delete permanently")]
    VersionSoftDeleted(String, u32),
    /// A permanent delete of a version not soft-deleted first.
    #[error("Subject '{0}' Version {1} was not deleted first before being permanently deleted")]
    VersionNotSoftDeleted(String, u32),
    /// The subject has no compatibility level of its own.
    #[error("Subject '{0}' does not have subject-level compatibility configured")]
    NoSubjectCompatibility(String),
    /// The subject has no mode of its own.
    #[error("Subject '{0}' does not have subject-level mode configured")]
    NoSubjectMode(String),
    /// The schema is incompatible with earlier versions under the subject's level.
    #[error("Schema being registered is incompatible with an earlier schema for subject \"{subject}\", details: [{}]", details.join(", "))]
    Incompatible {
        /// The subject.
        subject: String,
        /// What is incompatible.
        details: Vec<String>,
    },
    /// The schema does not parse, or a reference does not resolve.
    #[error("Invalid schema {0}")]
    InvalidSchema(String),
    /// A version that is neither a number from 1, `latest` nor -1.
    #[error(
        "The specified version '{0}' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\""
    )]
    InvalidVersion(String),
    /// An unknown compatibility level.
    #[error(
        "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive"
    )]
    InvalidCompatibility,
    /// An unknown mode.
    #[error("Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE, IMPORT")]
    InvalidMode,
    /// The subject's mode forbids the change.
    #[error("{0}")]
    NotPermitted(String),
    /// Another schema references the version being deleted.
    #[error("One or more references exist to the schema {{subject={0},version={1}}}.")]
    ReferenceExists(String, u32),
    /// A request body that is not the expected JSON.
    #[error("{0}")]
    BadRequest(String),
    /// The catalog failed.
    #[error("Error in the backend data store: {0}")]
    Store(String),
    /// Registrations kept racing each other past the retry limit.
    #[error("Register operation timed out: {0}")]
    Contended(String),
}

/// Shorthand.
pub type RegistryResult<T> = Result<T, RegistryError>;

impl RegistryError {
    /// The HTTP status and the Confluent error code.
    pub fn status_and_code(&self) -> (u16, u32) {
        use RegistryError::*;
        match self {
            Unauthorized(_) => (401, 40101),
            Forbidden(_) => (403, 40301),
            NoRoute(_) => (404, 404),
            SubjectNotFound(_) => (404, 40401),
            VersionNotFound(_) => (404, 40402),
            SchemaNotFound(_) => (404, 40403),
            SubjectSoftDeleted(_) => (404, 40404),
            SubjectNotSoftDeleted(_) => (404, 40405),
            VersionSoftDeleted(..) => (404, 40406),
            VersionNotSoftDeleted(..) => (404, 40407),
            NoSubjectCompatibility(_) => (404, 40408),
            NoSubjectMode(_) => (404, 40409),
            Incompatible { .. } => (409, 409),
            InvalidSchema(_) => (422, 42201),
            InvalidVersion(_) => (422, 42202),
            InvalidCompatibility => (422, 42203),
            InvalidMode => (422, 42204),
            NotPermitted(_) => (422, 42205),
            ReferenceExists(..) => (422, 42206),
            BadRequest(_) => (422, 422),
            Store(_) => (500, 50001),
            Contended(_) => (500, 50002),
        }
    }

    /// The error body clients parse: `{"error_code": .., "message": ..}`.
    pub fn body(&self) -> serde_json::Value {
        let (_, code) = self.status_and_code();
        serde_json::json!({ "error_code": code, "message": self.to_string() })
    }
}

impl From<CatalogError> for RegistryError {
    fn from(e: CatalogError) -> Self {
        RegistryError::Store(e.to_string())
    }
}
