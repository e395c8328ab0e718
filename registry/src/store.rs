//! The registry's state in the catalog: reads of subjects, schemas and settings, the
//! resolution of a schema's references, and the one commit every change goes through
//! (retried while concurrent changes move what it was built on).

use std::sync::Arc;

use catalog::{
    Catalog, CatalogError, Op, SchemaRecord, SubjectRecord, SubjectVersion, Transaction,
};

use crate::error::{RegistryError, RegistryResult};
use crate::formats::{Imported, Parsed, SchemaType};

/// How often a change is rebuilt when another commits first: each retry rereads the
/// state, and only a registry under a storm of writes to one subject runs out.
pub const RETRIES: usize = 16;

/// Deepest chain of references followed (a cycle, or an absurd depth, is refused).
const MAX_REFERENCE_DEPTH: usize = 32;

/// The catalog, as the registry reads and changes it.
pub struct Store {
    catalog: Arc<dyn Catalog>,
    metrics: crate::metrics::RegistryMetrics,
    registrations: Option<Arc<dyn crate::hook::Registrations>>,
}

/// A version number as requests give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionId {
    /// The newest (`latest` or -1).
    Latest,
    /// A number.
    Number(u32),
}

impl VersionId {
    /// Parses `latest`, -1 or a number from 1.
    pub fn parse(s: &str) -> RegistryResult<Self> {
        if s == "latest" || s == "-1" {
            return Ok(VersionId::Latest);
        }
        match s.parse::<u32>() {
            Ok(n) if (1..=i32::MAX as u32).contains(&n) => Ok(VersionId::Number(n)),
            _ => Err(RegistryError::InvalidVersion(s.to_owned())),
        }
    }
}

/// The live versions of a subject, or every one with `deleted`.
pub fn versions(record: &SubjectRecord, deleted: bool) -> impl Iterator<Item = &SubjectVersion> {
    record
        .versions
        .iter()
        .filter(move |v| deleted || !v.deleted)
}

/// One version of a subject: 40401 when the subject has none (live, unless `deleted`),
/// 40402 when it lacks that one.
pub fn select<'r>(
    subject: &str,
    record: Option<&'r SubjectRecord>,
    version: VersionId,
    deleted: bool,
) -> RegistryResult<&'r SubjectVersion> {
    let record = record
        .filter(|r| versions(r, deleted).next().is_some())
        .ok_or_else(|| RegistryError::SubjectNotFound(subject.to_owned()))?;
    let found = match version {
        VersionId::Latest => versions(record, deleted).last(),
        VersionId::Number(n) => versions(record, deleted).find(|v| v.version == n),
    };
    found.ok_or_else(|| {
        RegistryError::VersionNotFound(match version {
            VersionId::Latest => "latest".into(),
            VersionId::Number(n) => n.to_string(),
        })
    })
}

impl Store {
    /// The registry's state in `catalog`.
    pub fn new(catalog: Arc<dyn Catalog>) -> Self {
        Self {
            catalog,
            metrics: Default::default(),
            registrations: None,
        }
    }

    /// The same, committing registrations through `hook`.
    pub fn with_registrations(self, hook: Arc<dyn crate::hook::Registrations>) -> Self {
        Self {
            registrations: Some(hook),
            ..self
        }
    }

    /// The same, counting registrations into `metrics`.
    pub fn counting(self, metrics: crate::metrics::RegistryMetrics) -> Self {
        Self { metrics, ..self }
    }

    /// The registry's counters.
    pub fn metrics(&self) -> &crate::metrics::RegistryMetrics {
        &self.metrics
    }

    /// A subject's record (the empty name: the registry's settings).
    pub async fn subject(&self, name: &str) -> RegistryResult<Option<SubjectRecord>> {
        Ok(self.catalog.schemas().subject(name).await?)
    }

    /// Every subject with its record.
    pub async fn subjects(&self) -> RegistryResult<Vec<(String, SubjectRecord)>> {
        Ok(self.catalog.schemas().subjects().await?)
    }

    /// The schema of an id.
    pub async fn schema(&self, id: u32) -> RegistryResult<Option<SchemaRecord>> {
        Ok(self.catalog.schemas().schema(id).await?)
    }

    /// The id a schema already has, by its fingerprint.
    pub async fn id_of(&self, fingerprint: &[u8]) -> RegistryResult<Option<u32>> {
        Ok(self.catalog.schemas().id_of(fingerprint).await?)
    }

    /// The highest id bound.
    pub async fn last_id(&self) -> RegistryResult<u32> {
        Ok(self.catalog.schemas().last_id().await?)
    }

    /// Commits `ops`; `Ok(false)` when a precondition moved (rebuild and retry).
    pub async fn commit(&self, ops: Vec<Op>) -> RegistryResult<bool> {
        match self.catalog.commit(Transaction::new(ops)).await {
            Ok(_) => Ok(true),
            Err(CatalogError::PreconditionFailed(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Commits a registration (a new version of `subject`, whose schema is `schema`):
    /// through the hook when there is one, so what the version changes elsewhere
    /// commits with it. `Ok(false)` as for [`Store::commit`].
    pub async fn commit_registration(
        &self,
        subject: &str,
        schema: &Parsed,
        ops: Vec<Op>,
    ) -> RegistryResult<bool> {
        match &self.registrations {
            Some(hook) => hook.commit(subject, schema, ops).await,
            None => self.commit(ops).await,
        }
    }

    /// The schema a reference names (its version -1: the subject's latest).
    async fn referenced(
        &self,
        r: &catalog::SchemaReference,
    ) -> RegistryResult<(u32, SchemaRecord)> {
        let subject = self.subject(&r.subject).await?;
        let version = if r.version == u32::MAX {
            VersionId::Latest
        } else {
            VersionId::Number(r.version)
        };
        let v = select(&r.subject, subject.as_ref(), version, false).map_err(|_| {
            RegistryError::InvalidSchema(format!(
                "reference {} to subject {} version {} does not exist",
                r.name, r.subject, r.version
            ))
        })?;
        let schema = self
            .schema(v.id)
            .await?
            .ok_or_else(|| RegistryError::Store(format!("schema {} is missing", v.id)))?;
        Ok((v.version, schema))
    }

    /// Every schema `references` import, directly or through each other, dependencies
    /// first, each once.
    pub async fn imports(
        &self,
        references: &[catalog::SchemaReference],
    ) -> RegistryResult<Vec<Imported>> {
        let mut out: Vec<Imported> = Vec::new();
        let mut seen: Vec<(String, u32)> = Vec::new();
        // Depth-first with an explicit stack: (reference, depth, children pushed?).
        let mut stack: Vec<(catalog::SchemaReference, usize, bool)> = references
            .iter()
            .rev()
            .map(|r| (r.clone(), 0, false))
            .collect();
        while let Some((r, depth, expanded)) = stack.pop() {
            if depth > MAX_REFERENCE_DEPTH {
                return Err(RegistryError::InvalidSchema(
                    "references nest too deep (or form a cycle)".into(),
                ));
            }
            let (version, schema) = self.referenced(&r).await?;
            let key = (r.subject.clone(), version);
            if seen.contains(&key) {
                continue;
            }
            if expanded || schema.references.is_empty() {
                seen.push(key);
                out.push(Imported {
                    name: r.name.clone(),
                    text: schema.schema,
                });
            } else {
                stack.push((r, depth, true));
                for child in schema.references.iter().rev() {
                    stack.push((child.clone(), depth + 1, false));
                }
            }
        }
        Ok(out)
    }

    /// A stored schema, parsed with its references.
    pub async fn parsed(&self, record: &SchemaRecord) -> RegistryResult<Parsed> {
        let ty = SchemaType::named(Some(&record.schema_type))?;
        let imports = self.imports(&record.references).await?;
        Parsed::parse(ty, &record.schema, &imports)
    }
}
