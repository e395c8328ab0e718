//! The pipelines domain's errors; the admin API maps them to HTTP statuses in one place
//! (`admin::pipelines`), the CLI prints their messages.

use catalog::CatalogError;

/// Why a pipeline operation failed.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The definition is malformed: unknown fields, bad names, unknown references,
    /// cycles. Nothing was stored.
    #[error("invalid pipeline: {0}")]
    Invalid(String),
    /// The pipeline cannot be deployed as it is. Nothing changed.
    #[error("cannot deploy: {0}")]
    NotDeployable(String),
    /// No such pipeline.
    #[error("no pipeline is named {0}")]
    NotFound(String),
    /// The pipeline changed meanwhile and the change kept losing the race.
    #[error("pipeline {0} kept changing under this request; try again")]
    Conflict(String),
    /// A stored definition does not decode.
    #[error("corrupt pipeline: {0}")]
    Corrupt(String),
    /// The catalog failed.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
}
