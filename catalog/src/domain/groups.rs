//! The consumer-group domain: a group's coordinator state, its committed offsets and
//! (for a share group, KIP-932) the state of each partition it consumes.

use crate::apply::*;
use crate::error::{CatalogError, CatalogResult};
use crate::model::*;
use crate::tables::*;
use crate::txn::*;

/// A change to a consumer group, its committed offsets or its share states.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupOp {
    /// Commits a consumer group offset.
    CommitOffset {
        /// Group id.
        group: String,
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
        /// The offset.
        offset: OffsetRecord,
    },
    /// Deletes a committed offset.
    DeleteOffset {
        /// Group id.
        group: String,
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
    },
    /// Stores a group's coordinator state.
    PutGroup(GroupRecord),
    /// Deletes a group, its committed offsets and its share states.
    DeleteGroup {
        /// Group id.
        name: String,
    },
    /// Stores (inserts or replaces) a share group's state of one partition.
    PutShareState {
        /// Share group id.
        group: String,
        /// Topic id.
        topic_id: u128,
        /// Partition.
        partition: u32,
        /// The state.
        state: ShareStateRecord,
    },
    /// Deletes a share group's state of one partition (none stored: nothing changes).
    DeleteShareState {
        /// Share group id.
        group: String,
        /// Topic id.
        topic_id: u128,
        /// Partition.
        partition: u32,
    },
}

impl Tables<'_> {
    /// Checks that `op` can apply to the current state.
    pub(crate) fn check_groups(&mut self, op: &GroupOp) -> CatalogResult<()> {
        match op {
            GroupOp::PutShareState { group, .. } | GroupOp::DeleteShareState { group, .. } => {
                // The key's group prefix holds the name's length in a u16.
                if u16::try_from(group.len()).is_err() {
                    return Err(CatalogError::Invalid(format!(
                        "a share group name of {} bytes",
                        group.len()
                    )));
                }
            }
            GroupOp::CommitOffset { .. }
            | GroupOp::DeleteOffset { .. }
            | GroupOp::PutGroup(_)
            | GroupOp::DeleteGroup { .. } => {}
        }
        Ok(())
    }

    /// Applies an operation that passed [`Tables::check_groups`].
    pub(crate) fn apply_groups(
        &mut self,
        op: &GroupOp,
        _effects: &mut Effects,
        _log: &mut LogCursor,
    ) -> CatalogResult<OpOutcome> {
        match op {
            GroupOp::CommitOffset {
                group,
                topic,
                partition,
                offset,
            } => put(
                self.s,
                OFFSETS,
                &offset_key(group, topic, *partition),
                offset,
            )?,
            GroupOp::DeleteOffset {
                group,
                topic,
                partition,
            } => {
                self.s
                    .remove(OFFSETS, offset_key(group, topic, *partition).as_slice())?;
            }
            GroupOp::PutGroup(g) => put(self.s, GROUPS, g.name.as_bytes(), g)?,
            GroupOp::DeleteGroup { name } => {
                self.s.remove(GROUPS, name.as_bytes())?;
                remove_prefix(self.s, OFFSETS, &group_prefix(name), |_| Ok(()))?;
                remove_prefix(self.s, SHARE_STATES, &group_prefix(name), |_| Ok(()))?;
            }
            GroupOp::PutShareState {
                group,
                topic_id,
                partition,
                state,
            } => put(
                self.s,
                SHARE_STATES,
                &share_state_key(group, *topic_id, *partition),
                state,
            )?,
            GroupOp::DeleteShareState {
                group,
                topic_id,
                partition,
            } => {
                self.s
                    .remove(SHARE_STATES, &share_state_key(group, *topic_id, *partition))?;
            }
        }
        Ok(OpOutcome::Done)
    }
}
