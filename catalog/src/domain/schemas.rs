//! The schema-registry domain: schemas by their global id, and subjects with their
//! versions and settings. A schema id is chosen by the registry and bound once, so two
//! registrations racing for the same id (or the same schema under two ids) cannot both
//! commit; a subject changes only from the change count it was read at.

use crate::apply::*;
use crate::error::{CatalogError, CatalogResult};
use crate::model::*;
use crate::tables::*;
use crate::txn::*;

/// A change to the schema registry.
#[derive(Debug, Clone, PartialEq)]
pub enum SchemaOp {
    /// Binds `id` to `record`. Fails with [`crate::CatalogError::PreconditionFailed`]
    /// when the id holds another schema or the schema (by its fingerprint) has another
    /// id; binding an id to the schema it already holds changes nothing.
    PutSchema {
        /// The id, from 1.
        id: u32,
        /// The schema.
        record: SchemaRecord,
    },
    /// Creates, changes or removes (`None`) a subject (the empty name: the registry's
    /// settings). Fails with [`crate::CatalogError::PreconditionFailed`] unless the
    /// stored one is at `expected` changes (0: none) and the new one at `expected + 1`.
    PutSubject {
        /// Its name.
        subject: String,
        /// Change count the change was built on.
        expected: u64,
        /// The new state.
        record: Option<SubjectRecord>,
    },
}

impl Tables<'_> {
    /// Checks that `op` can apply to the current state.
    pub(crate) fn check_schemas(&mut self, op: &SchemaOp) -> CatalogResult<()> {
        match op {
            SchemaOp::PutSchema { id, record } => {
                if *id == 0 || record.fingerprint.is_empty() {
                    return Err(CatalogError::Invalid(format!(
                        "schema id {id} with fingerprint of {} bytes",
                        record.fingerprint.len()
                    )));
                }
                let stored: Option<SchemaRecord> = get(self.s, SCHEMAS, &id.to_be_bytes())?;
                if stored.as_ref().is_some_and(|s| s != record) {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "schema id {id} holds another schema"
                    )));
                }
                if let Some(other) = self.s.get(SCHEMA_FINGERPRINTS, &record.fingerprint)?
                    && other != id.to_be_bytes()
                {
                    return Err(CatalogError::PreconditionFailed(
                        "the schema has another id".into(),
                    ));
                }
            }
            SchemaOp::PutSubject {
                subject,
                expected,
                record,
            } => {
                if subject.contains('\0') {
                    return Err(CatalogError::Invalid(format!("subject {subject:?}")));
                }
                let stored: Option<SubjectRecord> =
                    get(self.s, SCHEMA_SUBJECTS, subject.as_bytes())?;
                let changes = stored.map_or(0, |s| s.changes);
                let fits = record.as_ref().is_none_or(|r| r.changes == expected + 1);
                if changes != *expected || !fits {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "subject {subject} is at change {changes}, not {expected}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Applies an operation that passed [`Tables::check_schemas`].
    pub(crate) fn apply_schemas(
        &mut self,
        op: &SchemaOp,
        _effects: &mut Effects,
        _log: &mut LogCursor,
    ) -> CatalogResult<OpOutcome> {
        match op {
            SchemaOp::PutSchema { id, record } => {
                put(self.s, SCHEMAS, &id.to_be_bytes(), record)?;
                self.s
                    .put(SCHEMA_FINGERPRINTS, &record.fingerprint, &id.to_be_bytes())?;
                if u64::from(*id) > self.counter(SCHEMA_ID)? {
                    self.set_counter(SCHEMA_ID, u64::from(*id))?;
                }
            }
            SchemaOp::PutSubject {
                subject, record, ..
            } => match record {
                Some(r) => put(self.s, SCHEMA_SUBJECTS, subject.as_bytes(), r)?,
                None => self.s.remove(SCHEMA_SUBJECTS, subject.as_bytes())?,
            },
        }
        Ok(OpOutcome::Done)
    }
}
