//! Schemas by id (`/schemas/ids/{id}` and its `/schema`, `/subjects`, `/versions`),
//! `/schemas/types`, `/schemas`, and the JSON shapes of a schema and a subject version
//! that the subject routes answer too.

use catalog::{SchemaRecord, SchemaReference};
use serde_json::json;

use crate::auth::{Caller, GET};
use crate::error::{RegistryError, RegistryResult};
use crate::formats::{Parsed, SchemaType};
use crate::store::{Store, versions};

/// References as the API shows them.
pub fn references_json(refs: &[SchemaReference]) -> serde_json::Value {
    json!(
        refs.iter()
            .map(|r| json!({ "name": r.name, "subject": r.subject, "version": r.version }))
            .collect::<Vec<_>>()
    )
}

/// A schema's fields: `schema`, and `schemaType` and `references` when not the defaults
/// (AVRO, none), as Confluent answers them.
pub fn schema_fields(s: &SchemaRecord, out: &mut serde_json::Value) {
    out["schema"] = json!(s.schema);
    if s.schema_type != SchemaType::Avro.name() {
        out["schemaType"] = json!(s.schema_type);
    }
    if !s.references.is_empty() {
        out["references"] = references_json(&s.references);
    }
}

/// A subject version as the API shows it.
pub fn version_json(subject: &str, version: u32, id: u32, s: &SchemaRecord) -> serde_json::Value {
    let mut out = json!({ "subject": subject, "version": version, "id": id });
    schema_fields(s, &mut out);
    out
}

/// The subjects and versions holding `id` that the caller may read.
async fn holders(
    store: &Store,
    caller: &Caller<'_>,
    id: u32,
    deleted: bool,
) -> RegistryResult<Vec<(String, u32)>> {
    let mut out = Vec::new();
    for (name, r) in store.subjects().await? {
        if !caller.may(GET, &name) {
            continue;
        }
        for v in versions(&r, deleted).filter(|v| v.id == id) {
            out.push((name.clone(), v.version));
        }
    }
    Ok(out)
}

/// The schema of `id`, when the caller may read a subject holding it (the administrator
/// may read any). 40403 otherwise, so ids the caller may not read look absent.
async fn readable(store: &Store, caller: &Caller<'_>, id: u32) -> RegistryResult<SchemaRecord> {
    let missing = || RegistryError::SchemaNotFound("Schema not found".into());
    let schema = store.schema(id).await?.ok_or_else(missing)?;
    if caller.directory.is_admin(&caller.user)
        || !holders(store, caller, id, true).await?.is_empty()
    {
        Ok(schema)
    } else {
        Err(missing())
    }
}

/// A schema in the form a request asks for: a Protobuf schema as base64 of its compiled
/// `FileDescriptorProto` with `format=serialized` (what Python's Protobuf deserializer
/// asks for), else as `.proto` text (printed from the descriptor when a client
/// registered one in base64, as Confluent's registry answers); every other schema as
/// stored.
pub async fn in_format(
    store: &Store,
    mut s: SchemaRecord,
    format: Option<&str>,
) -> RegistryResult<SchemaRecord> {
    if s.schema_type == SchemaType::Protobuf.name()
        && let Parsed::Protobuf(p) = store.parsed(&s).await?
    {
        s.schema = match format {
            Some("serialized") => p.serialized(),
            _ => p.proto_text(),
        };
    }
    Ok(s)
}

/// GET `/schemas/ids/{id}`.
pub async fn by_id(
    store: &Store,
    caller: &Caller<'_>,
    id: &str,
    format: Option<&str>,
) -> RegistryResult<serde_json::Value> {
    let id = parse_id(id)?;
    let s = in_format(store, readable(store, caller, id).await?, format).await?;
    let mut out = json!({});
    schema_fields(&s, &mut out);
    Ok(out)
}

/// GET `/schemas/ids/{id}/schema`: the schema itself (Avro and JSON Schema as JSON, a
/// `.proto` as a JSON string).
pub async fn raw_by_id(
    store: &Store,
    caller: &Caller<'_>,
    id: &str,
) -> RegistryResult<serde_json::Value> {
    let s = readable(store, caller, parse_id(id)?).await?;
    Ok(raw(&in_format(store, s, None).await?))
}

/// A schema's text as its own JSON document.
pub fn raw(s: &SchemaRecord) -> serde_json::Value {
    serde_json::from_str(&s.schema).unwrap_or_else(|_| json!(s.schema))
}

/// GET `/schemas/ids/{id}/subjects`.
pub async fn subjects_of(
    store: &Store,
    caller: &Caller<'_>,
    id: &str,
    deleted: bool,
) -> RegistryResult<serde_json::Value> {
    let id = parse_id(id)?;
    readable(store, caller, id).await?;
    let mut names: Vec<String> = holders(store, caller, id, deleted)
        .await?
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    names.dedup();
    Ok(json!(names))
}

/// GET `/schemas/ids/{id}/versions`.
pub async fn versions_of(
    store: &Store,
    caller: &Caller<'_>,
    id: &str,
    deleted: bool,
) -> RegistryResult<serde_json::Value> {
    let id = parse_id(id)?;
    readable(store, caller, id).await?;
    let found = holders(store, caller, id, deleted).await?;
    Ok(json!(
        found
            .into_iter()
            .map(|(subject, version)| json!({ "subject": subject, "version": version }))
            .collect::<Vec<_>>()
    ))
}

/// GET `/schemas/types`.
pub fn types() -> serde_json::Value {
    json!(SchemaType::ALL.iter().map(|t| t.name()).collect::<Vec<_>>())
}

/// GET `/schemas`: every version the caller may read, filtered as asked.
pub async fn list(
    store: &Store,
    caller: &Caller<'_>,
    prefix: &str,
    deleted: bool,
    latest_only: bool,
) -> RegistryResult<serde_json::Value> {
    let mut out = Vec::new();
    for (name, r) in store.subjects().await? {
        if !name.starts_with(prefix) || !caller.may(GET, &name) {
            continue;
        }
        let mut vs: Vec<_> = versions(&r, deleted).collect();
        if latest_only {
            vs = vs.into_iter().last().into_iter().collect();
        }
        for v in vs {
            if let Some(s) = store.schema(v.id).await? {
                out.push(version_json(&name, v.version, v.id, &s));
            }
        }
    }
    Ok(json!(out))
}

/// An id from a path.
fn parse_id(s: &str) -> RegistryResult<u32> {
    s.parse::<u32>()
        .ok()
        .filter(|i| *i >= 1)
        .ok_or_else(|| RegistryError::SchemaNotFound(format!("Schema {s} not found")))
}
