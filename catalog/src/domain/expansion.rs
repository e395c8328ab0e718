//! The blob-expansion domain: which JSON columns of a topic expand into typed tables.

use crate::apply::*;
use crate::error::{CatalogError, CatalogResult};
use crate::kv::Range;
use crate::model::*;
use crate::tables::*;
use crate::txn::*;

/// A change to a topic's blob expansions.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpansionOp {
    /// Creates, changes or removes (`None`) the expansion of one source column of a
    /// topic. Fails with [`crate::CatalogError::PreconditionFailed`] unless the stored one
    /// is at `expected` changes (0: none) and the new one at `expected + 1`, and unless the
    /// topic exists with the expansion's topic id.
    PutExpansion {
        /// Topic name.
        topic: String,
        /// Source column (`key` or `value`).
        source: String,
        /// Change count the change was built on.
        expected: u64,
        /// The new state.
        expansion: Option<crate::model::Expansion>,
    },
}

impl Tables<'_> {
    /// Checks that `op` can apply to the current state.
    pub(crate) fn check_expansion(&mut self, op: &ExpansionOp) -> CatalogResult<()> {
        match op {
            ExpansionOp::PutExpansion {
                topic,
                source,
                expected,
                expansion,
            } => {
                let t = self
                    .topic(topic)?
                    .ok_or_else(|| CatalogError::UnknownTopic(topic.clone()))?;
                if source.is_empty() {
                    return Err(CatalogError::Invalid("expansion without a source".into()));
                }
                let stored: Option<Expansion> =
                    get(self.s, EXPANSIONS, &expansion_key(topic, source))?;
                let changes = stored.map_or(0, |e| e.changes);
                let fits = expansion
                    .as_ref()
                    .is_none_or(|e| e.topic_id == t.id && e.changes == expected + 1);
                if changes != *expected || !fits {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "expansion of {topic}'s {source} is at change {changes}, not {expected}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Applies an operation that passed [`Tables::check_expansion`].
    pub(crate) fn apply_expansion(
        &mut self,
        op: &ExpansionOp,
        _effects: &mut Effects,
        _log: &mut LogCursor,
    ) -> CatalogResult<OpOutcome> {
        match op {
            ExpansionOp::PutExpansion {
                topic,
                source,
                expansion,
                ..
            } => {
                let key = expansion_key(topic, source);
                match expansion {
                    Some(e) => put(self.s, EXPANSIONS, &key, e)?,
                    None => {
                        self.s.remove(EXPANSIONS, key.as_slice())?;
                    }
                }
            }
        }
        Ok(OpOutcome::Done)
    }

    /// A topic's expansions, by source column.
    pub(crate) fn expansions_of(&mut self, topic: &str) -> CatalogResult<Vec<(String, Expansion)>> {
        let prefix = expansions_prefix(topic);
        let end = prefix_end(&prefix);
        let mut out = Vec::new();
        for (k, v) in self.s.range(EXPANSIONS, Range::prefix(&prefix, &end))? {
            let source = expansion_source(topic, &k).unwrap_or_default();
            out.push((source, dec(&v)?));
        }
        Ok(out)
    }

    /// Refuses to remove records of a partition from `offset` on while the topic has an
    /// expansion whose table has not read them: an expansion keeps every record it was
    /// attached for, so the log keeps them until the table holds them.
    pub(crate) fn require_expanded(
        &mut self,
        topic_id: u128,
        partition: u32,
        offset: u64,
    ) -> CatalogResult<()> {
        let Some(name) = self.s.get(TOPIC_IDS, topic_id.to_be_bytes().as_slice())? else {
            return Ok(());
        };
        let topic = String::from_utf8_lossy(&name).into_owned();
        let expansions = self.expansions_of(&topic)?;
        let table: Option<TopicTable> = get(self.s, TOPIC_TABLES, topic.as_bytes())?;
        let Some(floor) =
            crate::model::expanded_to(&expansions, table.as_ref(), topic_id, partition)
        else {
            return Ok(());
        };
        if offset > floor {
            return Err(CatalogError::NotExpanded {
                topic,
                partition,
                tabled: floor,
            });
        }
        Ok(())
    }
}
