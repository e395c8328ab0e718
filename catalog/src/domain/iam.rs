//! The identity domain: users and named identity policies.

use crate::apply::*;
use crate::error::CatalogResult;
use crate::tables::*;
use crate::txn::*;

/// A change to users or identity policies.
#[derive(Debug, Clone, PartialEq)]
pub enum IamOp {
    /// Makes, replaces (`Some`) or removes (`None`) a user.
    PutUser {
        /// Its name.
        name: String,
        /// The new record.
        record: Option<crate::model::UserRecord>,
    },
    /// Makes, replaces (`Some`) or removes (`None`) a named identity policy.
    PutPolicy {
        /// Its name.
        name: String,
        /// The new record.
        record: Option<crate::model::PolicyRecord>,
    },
}

impl Tables<'_> {
    /// Checks that `op` can apply to the current state.
    pub(crate) fn check_iam(&mut self, op: &IamOp) -> CatalogResult<()> {
        match op {
            IamOp::PutUser { .. } | IamOp::PutPolicy { .. } => {}
        }
        Ok(())
    }

    /// Applies an operation that passed [`Tables::check_iam`].
    pub(crate) fn apply_iam(
        &mut self,
        op: &IamOp,
        _effects: &mut Effects,
        _log: &mut LogCursor,
    ) -> CatalogResult<OpOutcome> {
        match op {
            IamOp::PutUser { name, record } => match record {
                Some(r) => put(self.s, USERS, name.as_bytes(), r)?,
                None => {
                    self.s.remove(USERS, name.as_bytes())?;
                }
            },
            IamOp::PutPolicy { name, record } => match record {
                Some(r) => put(self.s, POLICIES, name.as_bytes(), r)?,
                None => {
                    self.s.remove(POLICIES, name.as_bytes())?;
                }
            },
        }
        Ok(OpOutcome::Done)
    }
}
