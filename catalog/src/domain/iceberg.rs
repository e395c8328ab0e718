//! The Iceberg domain: topic tables (generation-checked, so two writers never build on
//! one snapshot), the other Iceberg tables and views the REST catalog keeps, and the
//! namespaces users make for theirs. Every pointer moves only from the generation it was
//! read at, so two writers racing on one table get one commit and one refusal.

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
    /// Creates, changes or drops (`None`) a namespace of users' tables. Fails unless the
    /// stored one is at generation `expected` (0: none) and the new one at `expected +
    /// 1`; a drop fails while a table, a view or a child namespace is in it.
    PutNamespace {
        /// Namespace (levels joined by 0x1F).
        namespace: String,
        /// Generation the change was built on.
        expected: u64,
        /// The new state.
        record: Option<NamespaceRecord>,
    },
    /// Creates, moves or drops (`None`, deleting every object under its prefix) an
    /// Iceberg view. Fails unless the stored one is at generation `expected` (0: none)
    /// and the new one at `expected + 1`.
    PutView {
        /// Namespace.
        namespace: String,
        /// View name.
        name: String,
        /// Generation the change was built on.
        expected: u64,
        /// The new state.
        view: Option<crate::model::TableRecord>,
    },
    /// Drops a table outside `kafka_topics` and keeps its files (a drop without purge,
    /// and the old name of a renamed table). Fails unless the stored one is at
    /// generation `expected`.
    ForgetTable {
        /// Namespace.
        namespace: String,
        /// Table name.
        name: String,
        /// Generation the change was built on.
        expected: u64,
    },
    /// Drops a view's pointer and keeps its files (the old name of a renamed view).
    /// Fails unless the stored one is at generation `expected`.
    ForgetView {
        /// Namespace.
        namespace: String,
        /// View name.
        name: String,
        /// Generation the change was built on.
        expected: u64,
    },
}

/// Checks a pointer's generation: the stored `found` (0: none) must be `expected`, and a
/// new state must be at `expected + 1`.
fn check_generation(what: &str, found: u64, expected: u64, next: Option<u64>) -> CatalogResult<()> {
    if found != expected || next.is_some_and(|g| g != expected + 1) {
        return Err(CatalogError::PreconditionFailed(format!(
            "{what} is at generation {found}, not {expected}"
        )));
    }
    Ok(())
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
                check_generation(
                    &format!("table {namespace}.{name}"),
                    stored.map_or(0, |t| t.generation),
                    *expected,
                    table.as_ref().map(|t| t.generation),
                )?;
            }
            IcebergOp::PutNamespace {
                namespace,
                expected,
                record,
            } => {
                if namespace.is_empty() || namespace.split('\u{1f}').any(str::is_empty) {
                    return Err(CatalogError::Invalid(format!("namespace {namespace:?}")));
                }
                let stored: Option<NamespaceRecord> =
                    get(self.s, NAMESPACES, namespace.as_bytes())?;
                let what = format!("namespace {}", namespace.replace('\u{1f}', "."));
                check_generation(
                    &what,
                    stored.map_or(0, |n| n.generation),
                    *expected,
                    record.as_ref().map(|n| n.generation),
                )?;
                if record.is_none() {
                    let child = format!("{namespace}\u{1f}");
                    if has_prefix(self.s, OTHER_TABLES, &namespace_prefix(namespace))?
                        || has_prefix(self.s, ICEBERG_VIEWS, &namespace_prefix(namespace))?
                        || has_prefix(self.s, NAMESPACES, child.as_bytes())?
                    {
                        return Err(CatalogError::PreconditionFailed(format!(
                            "{what} is not empty"
                        )));
                    }
                }
            }
            IcebergOp::PutView {
                namespace,
                name,
                expected,
                view,
            } => {
                let stored: Option<TableRecord> =
                    get(self.s, ICEBERG_VIEWS, &table_key(namespace, name))?;
                check_generation(
                    &format!("view {namespace}.{name}"),
                    stored.map_or(0, |t| t.generation),
                    *expected,
                    view.as_ref().map(|t| t.generation),
                )?;
            }
            IcebergOp::ForgetTable {
                namespace,
                name,
                expected,
            } => {
                let stored: Option<TableRecord> =
                    get(self.s, OTHER_TABLES, &table_key(namespace, name))?;
                if stored.is_none() {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "table {namespace}.{name} does not exist"
                    )));
                }
                check_generation(
                    &format!("table {namespace}.{name}"),
                    stored.map_or(0, |t| t.generation),
                    *expected,
                    None,
                )?;
            }
            IcebergOp::ForgetView {
                namespace,
                name,
                expected,
            } => {
                let stored: Option<TableRecord> =
                    get(self.s, ICEBERG_VIEWS, &table_key(namespace, name))?;
                if stored.is_none() {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "view {namespace}.{name} does not exist"
                    )));
                }
                check_generation(
                    &format!("view {namespace}.{name}"),
                    stored.map_or(0, |t| t.generation),
                    *expected,
                    None,
                )?;
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
            IcebergOp::PutNamespace {
                namespace, record, ..
            } => match record {
                Some(r) => put(self.s, NAMESPACES, namespace.as_bytes(), r)?,
                None => self.s.remove(NAMESPACES, namespace.as_bytes())?,
            },
            IcebergOp::PutView {
                namespace,
                name,
                view,
                ..
            } => {
                let key = table_key(namespace, name);
                match view {
                    Some(v) => put(self.s, ICEBERG_VIEWS, &key, v)?,
                    None => {
                        if let Some(old) = get::<TableRecord>(self.s, ICEBERG_VIEWS, &key)? {
                            self.s.remove(ICEBERG_VIEWS, key.as_slice())?;
                            self.remove_objects_under(&old.bucket, &old.prefix, effects)?;
                        }
                    }
                }
            }
            IcebergOp::ForgetTable {
                namespace, name, ..
            } => {
                self.s
                    .remove(OTHER_TABLES, table_key(namespace, name).as_slice())?;
            }
            IcebergOp::ForgetView {
                namespace, name, ..
            } => {
                self.s
                    .remove(ICEBERG_VIEWS, table_key(namespace, name).as_slice())?;
            }
        }
        Ok(OpOutcome::Done)
    }
}
