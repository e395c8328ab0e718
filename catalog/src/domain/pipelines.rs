//! The function-pipeline domain: pipelines (their revisions, deployed revision and status)
//! and the positions of their cursors. A cursor's position moves only from the position
//! it was read at, so a link's hand-off (this move, the reply appended to the next topic
//! and any dead-letter record, in one transaction) happens once however often a runner
//! retries, restarts or races another node.

use crate::apply::*;
use crate::error::{CatalogError, CatalogResult};
use crate::kv::Range;
use crate::model::*;
use crate::tables::*;
use crate::txn::*;

/// A change to a pipeline or one of its cursors.
#[derive(Debug, Clone, PartialEq)]
pub enum PipelineOp {
    /// Creates, changes or removes (`None`) a pipeline. Fails with
    /// [`crate::CatalogError::PreconditionFailed`] unless the stored one is at `expected`
    /// changes (0: none) and the new one at `expected + 1`. Removing one removes its
    /// cursors' positions.
    PutPipeline {
        /// Its name.
        name: String,
        /// Change count the change was built on.
        expected: u64,
        /// The new state.
        record: Option<PipelineRecord>,
    },
    /// Moves a cursor of a pipeline from `expected` to `next`. Fails with
    /// [`crate::CatalogError::PreconditionFailed`] unless the pipeline exists and the
    /// cursor is at `expected` (a cursor never moved is at 0).
    Advance {
        /// The pipeline.
        pipeline: String,
        /// The cursor: a link's name, or a schedule trigger's.
        cursor: String,
        /// The partition of the cursor's source (0 for a schedule).
        partition: u32,
        /// Where the runner read it.
        expected: u64,
        /// Where it goes.
        next: u64,
    },
}

impl Tables<'_> {
    /// Checks that `op` can apply to the current state.
    pub(crate) fn check_pipelines(&mut self, op: &PipelineOp) -> CatalogResult<()> {
        match op {
            PipelineOp::PutPipeline {
                name,
                expected,
                record,
            } => {
                if name.is_empty() || name.contains('\0') {
                    return Err(CatalogError::Invalid(format!("pipeline name {name:?}")));
                }
                let stored: Option<PipelineRecord> = get(self.s, PIPELINES, name.as_bytes())?;
                let changes = stored.map_or(0, |p| p.changes);
                let fits = record
                    .as_ref()
                    .is_none_or(|r| r.name == *name && r.changes == expected + 1);
                if changes != *expected || !fits {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "pipeline {name} is at change {changes}, not {expected}"
                    )));
                }
            }
            PipelineOp::Advance {
                pipeline,
                cursor,
                partition,
                expected,
                ..
            } => {
                if self.s.get(PIPELINES, pipeline.as_bytes())?.is_none() {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "pipeline {pipeline} does not exist"
                    )));
                }
                let key = pipeline_position_key(pipeline, cursor, *partition);
                let at: Option<PipelinePosition> = get(self.s, PIPELINE_POSITIONS, &key)?;
                let at = at.map_or(0, |p| p.next);
                if at != *expected {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "pipeline {pipeline}'s {cursor} on partition {partition} is at {at}, not {expected}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Applies an operation that passed [`Tables::check_pipelines`].
    pub(crate) fn apply_pipelines(
        &mut self,
        op: &PipelineOp,
        _effects: &mut Effects,
        _log: &mut LogCursor,
    ) -> CatalogResult<OpOutcome> {
        match op {
            PipelineOp::PutPipeline { name, record, .. } => match record {
                Some(r) => put(self.s, PIPELINES, name.as_bytes(), r)?,
                None => {
                    self.s.remove(PIPELINES, name.as_bytes())?;
                    let prefix = pipeline_positions_prefix(name);
                    let end = prefix_end(&prefix);
                    let keys: Vec<Vec<u8>> = self
                        .s
                        .range(PIPELINE_POSITIONS, Range::prefix(&prefix, &end))?
                        .into_iter()
                        .map(|(k, _)| k)
                        .collect();
                    for k in keys {
                        self.s.remove(PIPELINE_POSITIONS, k.as_slice())?;
                    }
                }
            },
            PipelineOp::Advance {
                pipeline,
                cursor,
                partition,
                next,
                ..
            } => {
                let key = pipeline_position_key(pipeline, cursor, *partition);
                put(
                    self.s,
                    PIPELINE_POSITIONS,
                    &key,
                    &PipelinePosition { next: *next },
                )?;
            }
        }
        Ok(OpOutcome::Done)
    }
}
