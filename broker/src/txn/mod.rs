//! The transaction coordinator (KIP-98, transaction version 1): the state machine of one
//! transactional id ([`state`], with injected time like the group coordinator's) and the
//! coordinator that keeps every id's state in memory and in the catalog
//! ([`coordinator`]).

pub mod coordinator;
pub mod state;

pub use coordinator::{TxnConfig, TxnCoordinator};
