//! Subjects and their versions: listing, reading a version, looking a schema up in a
//! subject, what references a version, and soft and permanent deletes.

use catalog::{Op, SchemaOp, SubjectRecord};
use serde_json::json;

use crate::auth::{Caller, DELETE, GET};
use crate::config::{Mode, mode_of};
use crate::error::{RegistryError, RegistryResult};
use crate::register::{Submitted, candidate};
use crate::schemas::{raw, version_json};
use crate::store::{RETRIES, Store, VersionId, select, versions};

/// GET `/subjects`: names with a live version (any version, with `deleted`) that the
/// caller may read.
pub async fn list(
    store: &Store,
    caller: &Caller<'_>,
    prefix: &str,
    deleted: bool,
) -> RegistryResult<serde_json::Value> {
    let names: Vec<String> = store
        .subjects()
        .await?
        .into_iter()
        .filter(|(name, r)| {
            name.starts_with(prefix)
                && versions(r, deleted).next().is_some()
                && caller.may(GET, name)
        })
        .map(|(name, _)| name)
        .collect();
    Ok(json!(names))
}

/// GET `/subjects/{subject}/versions`.
pub async fn version_numbers(
    store: &Store,
    caller: &Caller<'_>,
    subject: &str,
    deleted: bool,
) -> RegistryResult<serde_json::Value> {
    caller.must(GET, subject)?;
    let record = store.subject(subject).await?;
    let numbers: Vec<u32> = record
        .as_ref()
        .map(|r| versions(r, deleted).map(|v| v.version).collect())
        .unwrap_or_default();
    if numbers.is_empty() {
        return Err(RegistryError::SubjectNotFound(subject.to_owned()));
    }
    Ok(json!(numbers))
}

/// GET `/subjects/{subject}/versions/{version}` (`/schema`: the schema alone).
pub async fn version(
    store: &Store,
    caller: &Caller<'_>,
    subject: &str,
    version: &str,
    deleted: bool,
    schema_only: bool,
    format: Option<&str>,
) -> RegistryResult<serde_json::Value> {
    caller.must(GET, subject)?;
    let id = VersionId::parse(version)?;
    let record = store.subject(subject).await?;
    let v = select(subject, record.as_ref(), id, deleted)?;
    let s = store
        .schema(v.id)
        .await?
        .ok_or_else(|| RegistryError::Store(format!("schema {} is missing", v.id)))?;
    let s = crate::schemas::in_format(store, s, format).await?;
    Ok(if schema_only {
        raw(&s)
    } else {
        version_json(subject, v.version, v.id, &s)
    })
}

/// GET `/subjects/{subject}/versions/{version}/referencedby`: ids of the schemas that
/// import this version.
pub async fn referenced_by(
    store: &Store,
    caller: &Caller<'_>,
    subject: &str,
    version: &str,
) -> RegistryResult<serde_json::Value> {
    caller.must(GET, subject)?;
    let id = VersionId::parse(version)?;
    let record = store.subject(subject).await?;
    let v = select(subject, record.as_ref(), id, true)?;
    Ok(json!(referrers(store, subject, v.version).await?))
}

/// Ids of the live schemas of any subject that import `subject`'s `version`.
async fn referrers(store: &Store, subject: &str, version: u32) -> RegistryResult<Vec<u32>> {
    let mut ids = Vec::new();
    for (_, r) in store.subjects().await? {
        for v in versions(&r, false) {
            if ids.contains(&v.id) {
                continue;
            }
            if let Some(s) = store.schema(v.id).await?
                && s.references
                    .iter()
                    .any(|x| x.subject == subject && x.version == version)
            {
                ids.push(v.id);
            }
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// POST `/subjects/{subject}`: the version of the subject holding the body's schema.
pub async fn lookup(
    store: &Store,
    caller: &Caller<'_>,
    subject: &str,
    body: &[u8],
    deleted: bool,
) -> RegistryResult<serde_json::Value> {
    caller.must(GET, subject)?;
    let submitted = Submitted::from_body(body)?;
    let record = store.subject(subject).await?;
    let record = record
        .filter(|r| versions(r, deleted).next().is_some())
        .ok_or_else(|| RegistryError::SubjectNotFound(subject.to_owned()))?;
    let c = candidate(store, &submitted).await?;
    let not_found = || RegistryError::SchemaNotFound("Schema not found".into());
    let id = store
        .id_of(&c.record.fingerprint)
        .await?
        .ok_or_else(not_found)?;
    let v = versions(&record, deleted)
        .filter(|v| v.id == id)
        .last()
        .ok_or_else(not_found)?;
    Ok(version_json(subject, v.version, id, &c.record))
}

/// Refuses deletes while the subject's mode is read-only.
async fn writable(
    store: &Store,
    subject: &str,
    record: Option<&SubjectRecord>,
) -> RegistryResult<()> {
    match mode_of(store, record).await? {
        Mode::ReadOnly | Mode::ReadOnlyOverride => Err(RegistryError::NotPermitted(format!(
            "Subject {subject} is in read-only mode"
        ))),
        Mode::ReadWrite | Mode::Import => Ok(()),
    }
}

/// DELETE `/subjects/{subject}`: soft-deletes every live version, or with `permanent`
/// removes the soft-deleted ones; answers the versions deleted.
pub async fn delete_subject(
    store: &Store,
    caller: &Caller<'_>,
    subject: &str,
    permanent: bool,
) -> RegistryResult<serde_json::Value> {
    caller.must(DELETE, subject)?;
    for _ in 0..RETRIES {
        let stored = store.subject(subject).await?;
        writable(store, subject, stored.as_ref()).await?;
        let Some(record) = stored.filter(|r| !r.versions.is_empty()) else {
            return Err(RegistryError::SubjectNotFound(subject.to_owned()));
        };
        let live: Vec<u32> = versions(&record, false).map(|v| v.version).collect();
        let mut next = record.clone();
        let deleted: Vec<u32> = if permanent {
            if !live.is_empty() {
                return Err(RegistryError::SubjectNotSoftDeleted(subject.to_owned()));
            }
            for v in &record.versions {
                if !referrers(store, subject, v.version).await?.is_empty() {
                    return Err(RegistryError::ReferenceExists(
                        subject.to_owned(),
                        v.version,
                    ));
                }
            }
            next.versions.clear();
            record.versions.iter().map(|v| v.version).collect()
        } else {
            if live.is_empty() {
                return Err(RegistryError::SubjectSoftDeleted(subject.to_owned()));
            }
            for v in &live {
                if !referrers(store, subject, *v).await?.is_empty() {
                    return Err(RegistryError::ReferenceExists(subject.to_owned(), *v));
                }
            }
            for v in &mut next.versions {
                v.deleted = true;
            }
            live
        };
        if commit_subject(store, subject, &record, next).await? {
            tracing::info!(subject, permanent, ?deleted, "schema subject deleted");
            return Ok(json!(deleted));
        }
    }
    Err(RegistryError::Contended(format!(
        "the subject {subject} kept changing"
    )))
}

/// DELETE `/subjects/{subject}/versions/{version}`: soft, or with `permanent` removes a
/// soft-deleted version; answers its number.
pub async fn delete_version(
    store: &Store,
    caller: &Caller<'_>,
    subject: &str,
    version: &str,
    permanent: bool,
) -> RegistryResult<serde_json::Value> {
    caller.must(DELETE, subject)?;
    let id = VersionId::parse(version)?;
    for _ in 0..RETRIES {
        let stored = store.subject(subject).await?;
        writable(store, subject, stored.as_ref()).await?;
        // A version by number may be soft-deleted (a permanent delete needs it to be, a
        // second soft delete is told it is); `latest` is the newest live one.
        let v = select(subject, stored.as_ref(), id, id != VersionId::Latest)?.clone();
        let Some(record) = stored else {
            return Err(RegistryError::SubjectNotFound(subject.to_owned()));
        };
        if !referrers(store, subject, v.version).await?.is_empty() {
            return Err(RegistryError::ReferenceExists(
                subject.to_owned(),
                v.version,
            ));
        }
        let mut next = record.clone();
        if permanent {
            if !v.deleted {
                return Err(RegistryError::VersionNotSoftDeleted(
                    subject.to_owned(),
                    v.version,
                ));
            }
            next.versions.retain(|x| x.version != v.version);
        } else {
            if v.deleted {
                return Err(RegistryError::VersionSoftDeleted(
                    subject.to_owned(),
                    v.version,
                ));
            }
            for x in next.versions.iter_mut().filter(|x| x.version == v.version) {
                x.deleted = true;
            }
        }
        if commit_subject(store, subject, &record, next).await? {
            tracing::info!(
                subject,
                version = v.version,
                permanent,
                "schema version deleted"
            );
            return Ok(json!(v.version));
        }
    }
    Err(RegistryError::Contended(format!(
        "the subject {subject} kept changing"
    )))
}

/// Commits `next` over `record`; a subject left with no version and no setting is
/// removed. `Ok(false)` when it changed meanwhile.
async fn commit_subject(
    store: &Store,
    subject: &str,
    record: &SubjectRecord,
    mut next: SubjectRecord,
) -> RegistryResult<bool> {
    next.changes = record.changes + 1;
    let empty = next.versions.is_empty() && next.compatibility.is_none() && next.mode.is_none();
    store
        .commit(vec![Op::Schema(SchemaOp::PutSubject {
            subject: subject.to_owned(),
            expected: record.changes,
            record: (!empty).then_some(next),
        })])
        .await
}
