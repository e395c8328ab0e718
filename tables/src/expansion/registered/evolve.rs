//! A registration under a subject that typed expansions read: the registration's ops,
//! each such expansion's next version (the new schema's columns) and its target table's
//! schema evolution commit in one catalog transaction. Each topic's seal lock is held
//! meanwhile, so the new version takes effect at the offsets the partitions had reached
//! (a record committed after the registration is expanded with the new columns, one
//! before it with the old). A schema whose columns the table cannot take (a recursive
//! type, a record of nothing but nulls) is refused with the registration.

use std::sync::Arc;

use async_trait::async_trait;
use catalog::{CatalogError, ExpansionSpec, Op, TopicRecord};
use iceberg::io::FileIO;
use registry::RegistryError;
use registry::formats::Parsed;

use super::{Typed, columns};
use crate::expansion::layout::Source;
use crate::expansion::manage::{self, VersionChange};
use crate::expansion::spec;
use crate::seal::Tabler;
use crate::{TableError, TableResult};

/// The registration hook over the broker's tables.
pub struct Evolution {
    tabler: Arc<Tabler>,
}

impl Evolution {
    /// Evolves the typed expansions of `tabler`'s topics.
    pub fn new(tabler: Arc<Tabler>) -> Self {
        Self { tabler }
    }

    /// Every topic and source column whose current expansion reads `subject`.
    async fn readers_of(&self, subject: &str) -> TableResult<Vec<(TopicRecord, Source)>> {
        let mut out = Vec::new();
        for t in self.tabler.catalog().kafka().topics().await? {
            for (source, e) in self.tabler.catalog().iceberg().expansions(&t.name).await? {
                let reads = e.topic_id == t.id
                    && e.current()
                        .and_then(|s| Typed::of(&s.format))
                        .is_some_and(|typed| typed.subject == subject);
                if reads && let Ok(source) = source.parse::<Source>() {
                    out.push((t.clone(), source));
                }
            }
        }
        out.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        Ok(out)
    }

    async fn commit_with(
        &self,
        subject: &str,
        schema: &Parsed,
        ops: Vec<Op>,
    ) -> Result<bool, Refusal> {
        let readers = self.readers_of(subject).await?;
        let mut change = VersionChange {
            ops,
            ..Default::default()
        };
        if readers.is_empty() {
            return commit(&self.tabler, change).await;
        }
        // In name order (`readers_of` sorts), so two registrations cannot deadlock.
        let mut locks = Vec::new();
        for (t, _) in &readers {
            if !locks.iter().any(|(n, _)| n == &t.name) {
                locks.push((t.name.clone(), self.tabler.lock_for(&t.name)));
            }
        }
        let mut guards = Vec::with_capacity(locks.len());
        for (_, l) in &locks {
            guards.push(l.lock().await);
        }
        let io = FileIO::new_with_memory();
        for (t, source) in &readers {
            // Read again under the lock.
            let Some(old) = manage::stored(&self.tabler, t, *source).await? else {
                continue;
            };
            let Some(current) = old.current().cloned() else {
                continue;
            };
            let Some(typed) = Typed::of(&current.format).filter(|x| x.subject == subject) else {
                continue;
            };
            let refuse = |why: String| {
                Refusal::Schema(format!(
                    "the expansion of {}'s {} column into {}.{} cannot take this schema's columns: {why}",
                    t.name,
                    source.name(),
                    current.namespace,
                    current.table
                ))
            };
            let cols = columns(typed.format, schema).map_err(refuse)?;
            let parsed = spec::parse_struct(&cols).map_err(|e| refuse(e.to_string()))?;
            let next = ExpansionSpec {
                schema: serde_json::to_string(&parsed)
                    .map_err(|e| Refusal::Table(TableError::Task(e.to_string())))?,
                ..current.clone()
            };
            spec::layout_of(&next, *source).map_err(|e| refuse(e.to_string()))?;
            if next == current {
                continue;
            }
            manage::version_change(
                &self.tabler,
                &io,
                t,
                *source,
                Some(old),
                Some(next),
                false,
                &mut change,
            )
            .await?;
            tracing::info!(topic = %t.name, source = source.name(), subject, "typed expansion evolves with the registration");
        }
        let done = self
            .tabler
            .commit_files(&io, change.written, change.removed, change.ops)
            .await;
        drop(guards);
        match done {
            Ok(_) => Ok(true),
            Err(TableError::Catalog(CatalogError::PreconditionFailed(_))) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

/// Commits `change` without files.
async fn commit(tabler: &Tabler, change: VersionChange) -> Result<bool, Refusal> {
    match tabler
        .catalog()
        .commit(catalog::Transaction::new(change.ops))
        .await
    {
        Ok(_) => Ok(true),
        Err(CatalogError::PreconditionFailed(_)) => Ok(false),
        Err(e) => Err(Refusal::Table(e.into())),
    }
}

/// Why a registration is not committed.
enum Refusal {
    /// The schema's columns do not fit a typed table.
    Schema(String),
    /// The tables or the catalog failed.
    Table(TableError),
}

impl From<TableError> for Refusal {
    fn from(e: TableError) -> Self {
        Refusal::Table(e)
    }
}

#[async_trait]
impl registry::hook::Registrations for Evolution {
    async fn commit(
        &self,
        subject: &str,
        schema: &Parsed,
        ops: Vec<Op>,
    ) -> registry::RegistryResult<bool> {
        match self.commit_with(subject, schema, ops).await {
            Ok(done) => Ok(done),
            Err(Refusal::Schema(why)) => Err(RegistryError::Incompatible {
                subject: subject.to_owned(),
                details: vec![why],
            }),
            Err(Refusal::Table(e)) => Err(RegistryError::Store(e.to_string())),
        }
    }
}
