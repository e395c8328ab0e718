//! The consumer-group domain: a group's coordinator state and its committed offsets.

use crate::apply::*;
use crate::error::CatalogResult;
use crate::model::*;
use crate::tables::*;
use crate::txn::*;

/// A change to a consumer group or its committed offsets.
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
    /// Deletes a group and its committed offsets.
    DeleteGroup {
        /// Group id.
        name: String,
    },
}

impl Tables<'_> {
    /// Checks that `op` can apply to the current state.
    pub(crate) fn check_groups(&mut self, op: &GroupOp) -> CatalogResult<()> {
        match op {
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
            }
        }
        Ok(OpOutcome::Done)
    }
}
