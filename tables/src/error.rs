//! Errors of the tables front end, mapped to Iceberg REST error responses in one place
//! ([`TableError::rest_status`]).

use http::StatusCode;

/// What can go wrong while tabling a topic or serving the REST catalog.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// The catalog refused or failed.
    #[error(transparent)]
    Catalog(#[from] catalog::CatalogError),
    /// The erasure-coded storage failed.
    #[error(transparent)]
    Storage(#[from] storage::StorageError),
    /// The iceberg crate refused metadata or failed to write a file.
    #[error("iceberg: {0}")]
    Iceberg(#[from] iceberg::Error),
    /// Arrow refused a batch.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    /// A stored Kafka batch did not decode.
    #[error("stored record batch of {topic}/{partition} at {offset} does not decode: {reason}")]
    CorruptBatch {
        /// Topic.
        topic: String,
        /// Partition.
        partition: u32,
        /// Base offset of the batch.
        offset: u64,
        /// Decoder message.
        reason: String,
    },
    /// A stored metadata file is not valid JSON of the expected shape.
    #[error("stored table metadata {0} is unreadable: {1}")]
    CorruptMetadata(String, String),
    /// A file the table references is missing.
    #[error("table file missing: {0}")]
    MissingFile(String),
    /// No such namespace.
    #[error("namespace does not exist: {0}")]
    NoSuchNamespace(String),
    /// No such table.
    #[error("table does not exist: {0}")]
    NoSuchTable(String),
    /// No such view.
    #[error("view does not exist: {0}")]
    NoSuchView(String),
    /// No such warehouse.
    #[error("unknown warehouse: {0}")]
    NoSuchWarehouse(String),
    /// A write the catalog does not allow (topic tables are read-only).
    #[error("{0}")]
    Forbidden(String),
    /// No such route or method.
    #[error("{0}")]
    NotFound(String),
    /// No valid bearer token.
    #[error("{0}")]
    Unauthorized(String),
    /// A malformed request.
    #[error("{0}")]
    BadRequest(String),
    /// A request that conflicts with what exists (a second expansion of a column, a
    /// table with another writer).
    #[error("{0}")]
    Conflict(String),
    /// A commit whose requirements no longer hold, or that lost a race: the client
    /// reloads and retries.
    #[error("{0}")]
    CommitFailed(String),
    /// A namespace that still holds tables or views.
    #[error("{0}")]
    NamespaceNotEmpty(String),
    /// A well-formed request that contradicts itself.
    #[error("{0}")]
    Unprocessable(String),
    /// A blocking task panicked or was cancelled.
    #[error("background task failed: {0}")]
    Task(String),
}

/// Result of the tables front end.
pub type TableResult<T> = Result<T, TableError>;

impl TableError {
    /// HTTP status and Iceberg REST error type.
    pub fn rest_status(&self) -> (StatusCode, &'static str) {
        match self {
            TableError::NoSuchNamespace(_) => (StatusCode::NOT_FOUND, "NoSuchNamespaceException"),
            TableError::NoSuchTable(_) => (StatusCode::NOT_FOUND, "NoSuchTableException"),
            TableError::NoSuchView(_) => (StatusCode::NOT_FOUND, "NoSuchViewException"),
            // The spec documents 400 for a `/v1/config` naming a warehouse there is not.
            TableError::NoSuchWarehouse(_) => (StatusCode::BAD_REQUEST, "BadRequestException"),
            TableError::NotFound(_) => (StatusCode::NOT_FOUND, "NotFoundException"),
            TableError::Forbidden(_) => (StatusCode::FORBIDDEN, "ForbiddenException"),
            TableError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "NotAuthorizedException"),
            TableError::BadRequest(_) => (StatusCode::BAD_REQUEST, "BadRequestException"),
            TableError::Conflict(_) => (StatusCode::CONFLICT, "AlreadyExistsException"),
            TableError::CommitFailed(_) => (StatusCode::CONFLICT, "CommitFailedException"),
            TableError::NamespaceNotEmpty(_) => {
                (StatusCode::CONFLICT, "NamespaceNotEmptyException")
            }
            TableError::Unprocessable(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "UnprocessableEntityException",
            ),
            TableError::Catalog(catalog::CatalogError::UnknownTopic(_)) => {
                (StatusCode::NOT_FOUND, "NoSuchTableException")
            }
            TableError::Catalog(
                catalog::CatalogError::PreconditionFailed(_)
                | catalog::CatalogError::TopicHasExpansion { .. }
                | catalog::CatalogError::NotExpanded { .. },
            ) => (StatusCode::CONFLICT, "CommitFailedException"),
            TableError::Catalog(_)
            | TableError::Storage(_)
            | TableError::Iceberg(_)
            | TableError::Arrow(_)
            | TableError::CorruptBatch { .. }
            | TableError::CorruptMetadata(..)
            | TableError::MissingFile(_)
            | TableError::Task(_) => (StatusCode::INTERNAL_SERVER_ERROR, "ServerErrorException"),
        }
    }
}
