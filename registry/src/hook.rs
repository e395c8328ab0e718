//! What else a registration commits. A topic expansion typed by a subject (its columns
//! derived from the subject's schema) evolves its target table when the subject gets a
//! new version, in the registration's own catalog transaction, so a crash leaves the
//! schema and the table's evolution both or neither. The tables crate implements
//! [`Registrations`]; `eddy serve` hands it to the registry.

use async_trait::async_trait;
use catalog::Op;

use crate::error::RegistryResult;
use crate::formats::Parsed;

/// Commits a registration with what it changes outside the registry.
#[async_trait]
pub trait Registrations: Send + Sync {
    /// Commits `ops` (a new version of `subject`, whose schema is `schema`) together
    /// with every change the new version makes elsewhere; `Ok(false)` when a
    /// precondition moved (the caller rebuilds and retries), an error when the change
    /// cannot be made (the registration is refused with it).
    async fn commit(&self, subject: &str, schema: &Parsed, ops: Vec<Op>) -> RegistryResult<bool>;
}
