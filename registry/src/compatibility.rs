//! Compatibility: which earlier versions a new schema is checked against under a level,
//! in which direction, and the `/compatibility` route that asks without registering.

use serde_json::json;

use crate::auth::{Caller, GET};
use crate::config::{Level, level_of};
use crate::error::RegistryResult;
use crate::formats::Parsed;
use crate::register::Submitted;
use crate::store::{Store, VersionId, select, versions};

/// Why `new` may not be registered after `earlier` (the subject's live versions, oldest
/// first) under `level`; empty when it may.
pub fn problems(level: Level, new: &Parsed, earlier: &[(u32, Parsed)]) -> Vec<String> {
    let (backward, forward, transitive) = match level {
        Level::None => return Vec::new(),
        Level::Backward => (true, false, false),
        Level::BackwardTransitive => (true, false, true),
        Level::Forward => (false, true, false),
        Level::ForwardTransitive => (false, true, true),
        Level::Full => (true, true, false),
        Level::FullTransitive => (true, true, true),
    };
    let against: &[(u32, Parsed)] = if transitive {
        earlier
    } else {
        earlier.last().map(std::slice::from_ref).unwrap_or(&[])
    };
    let mut out = Vec::new();
    for (version, old) in against {
        if backward {
            for p in new.cannot_read(old) {
                out.push(format!(
                    "{{oldSchemaVersion: {version}, compatibility: '{}', problem: 'the new schema cannot read data written with version {version}: {p}'}}",
                    level.name()
                ));
            }
        }
        if forward {
            for p in old.cannot_read(new) {
                out.push(format!(
                    "{{oldSchemaVersion: {version}, compatibility: '{}', problem: 'version {version} cannot read data written with the new schema: {p}'}}",
                    level.name()
                ));
            }
        }
    }
    out
}

/// The live versions of a subject that `level` checks a new one against, parsed,
/// oldest first.
pub async fn parsed_versions(
    store: &Store,
    record: &catalog::SubjectRecord,
    level: Level,
) -> RegistryResult<Vec<(u32, Parsed)>> {
    // Only the versions `level` checks are parsed (a subject may have hundreds).
    let live: Vec<_> = versions(record, false).collect();
    let checked: &[&catalog::SubjectVersion] = match level {
        Level::None => &[],
        Level::Backward | Level::Forward | Level::Full => {
            live.last().map(std::slice::from_ref).unwrap_or(&[])
        }
        Level::BackwardTransitive | Level::ForwardTransitive | Level::FullTransitive => &live,
    };
    let mut out = Vec::new();
    for v in checked {
        if let Some(schema) = store.schema(v.id).await? {
            out.push((v.version, store.parsed(&schema).await?));
        }
    }
    Ok(out)
}

/// POST `/compatibility/subjects/{subject}/versions[/{version}]`: whether the body's
/// schema could be registered (against one version, or against what the level checks).
pub async fn check(
    store: &Store,
    caller: &Caller<'_>,
    subject: &str,
    version: Option<&str>,
    body: &[u8],
    verbose: bool,
) -> RegistryResult<serde_json::Value> {
    caller.must(GET, subject)?;
    let submitted = Submitted::from_body(body)?;
    let new = submitted.parse(store).await?;
    let record = store.subject(subject).await?;
    let level = level_of(store, record.as_ref()).await?;
    let earlier = match version {
        Some(v) => {
            let id = VersionId::parse(v)?;
            let picked = select(subject, record.as_ref(), id, false)?;
            let schema = store.schema(picked.id).await?.ok_or_else(|| {
                crate::RegistryError::Store(format!("schema {} is missing", picked.id))
            })?;
            vec![(picked.version, store.parsed(&schema).await?)]
        }
        None => match &record {
            Some(r) => parsed_versions(store, r, level).await?,
            None => Vec::new(),
        },
    };
    let problems = problems(level, &new, &earlier);
    let mut out = json!({ "is_compatible": problems.is_empty() });
    if verbose {
        out["messages"] = json!(problems);
    }
    Ok(out)
}
