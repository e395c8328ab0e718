//! The Iceberg domain: topic tables (generation-checked, so two writers never build on
//! one snapshot) and the other Iceberg tables the REST catalog keeps.

use crate::apply::*;
use crate::error::{CatalogError, CatalogResult};
use crate::model::*;
use crate::tables::*;
use crate::txn::*;

/// A change to a topic table or another Iceberg table.
#[derive(Debug, Clone, PartialEq)]
pub enum IcebergOp {
    /// Moves a topic's Iceberg table to a new state. Fails unless the topic exists with
    /// the table's topic id and the stored table is at generation `expected` (0: no
    /// table yet), so two writers never both build on the same snapshot.
    PutTopicTable {
        /// Topic name.
        topic: String,
        /// Generation the change was built on.
        expected: u64,
        /// The new state (its generation must be `expected + 1`).
        table: TopicTable,
    },
    /// Creates, moves or drops (`None`, deleting every object under its prefix) a table
    /// outside `kafka_topics`. Fails unless the stored one is at generation `expected` (0:
    /// none) and the new one at `expected + 1`.
    PutTable {
        /// Namespace.
        namespace: String,
        /// Table name.
        name: String,
        /// Generation the change was built on.
        expected: u64,
        /// The new state.
        table: Option<crate::model::TableRecord>,
    },
}

impl Tables<'_> {
    /// Checks that `op` can apply to the current state.
    pub(crate) fn check_iceberg(&mut self, op: &IcebergOp) -> CatalogResult<()> {
        match op {
            IcebergOp::PutTopicTable {
                topic,
                expected,
                table,
            } => {
                if self.topic(topic)?.is_none_or(|t| t.id != table.topic_id) {
                    return Err(CatalogError::UnknownTopic(topic.clone()));
                }
                let current: Option<TopicTable> = get(self.s, TOPIC_TABLES, topic.as_bytes())?;
                let generation = current
                    .filter(|c| c.topic_id == table.topic_id)
                    .map_or(0, |c| c.generation);
                if generation != *expected || table.generation != expected + 1 {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "table of topic {topic} is at generation {generation}, not {expected}"
                    )));
                }
            }
            IcebergOp::PutTable {
                namespace,
                name,
                expected,
                table,
            } => {
                let stored: Option<TableRecord> =
                    get(self.s, OTHER_TABLES, &table_key(namespace, name))?;
                let generation = stored.map_or(0, |t| t.generation);
                if generation != *expected
                    || table.as_ref().is_some_and(|t| t.generation != expected + 1)
                {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "table {namespace}.{name} is at generation {generation}, not {expected}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Applies an operation that passed [`Tables::check_iceberg`].
    pub(crate) fn apply_iceberg(
        &mut self,
        op: &IcebergOp,
        effects: &mut Effects,
        _log: &mut LogCursor,
    ) -> CatalogResult<OpOutcome> {
        match op {
            IcebergOp::PutTopicTable { topic, table, .. } => {
                put(self.s, TOPIC_TABLES, topic.as_bytes(), table)?;
            }
            IcebergOp::PutTable {
                namespace,
                name,
                table,
                ..
            } => {
                let key = table_key(namespace, name);
                match table {
                    Some(t) => put(self.s, OTHER_TABLES, &key, t)?,
                    None => {
                        if let Some(old) = get::<TableRecord>(self.s, OTHER_TABLES, &key)? {
                            self.s.remove(OTHER_TABLES, key.as_slice())?;
                            self.remove_objects_under(&old.bucket, &old.prefix, effects)?;
                        }
                    }
                }
            }
        }
        Ok(OpOutcome::Done)
    }
}
