//! Registering a schema under a subject (POST `/subjects/{subject}/versions`): parse it
//! with its references, answer the id it already has in the subject, check it against
//! the subject's earlier versions under its level, and bind the id and the new version
//! in one commit, rebuilt when a concurrent registration commits first.

use catalog::{Op, SchemaOp, SchemaRecord, SchemaReference, SubjectRecord, SubjectVersion};
use serde::Deserialize;
use serde_json::json;

use crate::auth::{Caller, REGISTER};
use crate::compatibility::{parsed_versions, problems};
use crate::config::{Mode, level_of, mode_of};
use crate::error::{RegistryError, RegistryResult};
use crate::formats::{Parsed, SchemaType, fingerprint};
use crate::store::{RETRIES, Store};

/// A reference as requests give it.
#[derive(Debug, Clone, Deserialize)]
pub struct ReferenceBody {
    /// The name it is imported under.
    pub name: String,
    /// The subject holding it.
    pub subject: String,
    /// The subject's version (-1: latest).
    pub version: i64,
}

/// A schema as a request submits it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Submitted {
    /// Its text.
    pub schema: String,
    /// Its type (none: AVRO).
    #[serde(default)]
    pub schema_type: Option<String>,
    /// What it imports.
    #[serde(default)]
    pub references: Option<Vec<ReferenceBody>>,
    /// IMPORT mode: the id it must get.
    #[serde(default)]
    pub id: Option<i64>,
    /// IMPORT mode: the version it must get.
    #[serde(default)]
    pub version: Option<i64>,
}

impl Submitted {
    /// A request body as a submitted schema (422 when it is not one).
    pub fn from_body(body: &[u8]) -> RegistryResult<Self> {
        let value: serde_json::Value = serde_json::from_slice(body)
            .map_err(|e| RegistryError::BadRequest(format!("Unrecognized request body: {e}")))?;
        if !value.is_object() {
            return Err(RegistryError::BadRequest(
                "Unrecognized request body: a JSON object is expected".into(),
            ));
        }
        serde_json::from_value(value)
            .map_err(|e| RegistryError::BadRequest(format!("Unrecognized request body: {e}")))
    }

    /// Its type.
    pub fn schema_type(&self) -> RegistryResult<SchemaType> {
        SchemaType::named(self.schema_type.as_deref())
    }

    /// Its references as the catalog keeps them (version -1 as `u32::MAX`, latest).
    pub fn references(&self) -> RegistryResult<Vec<SchemaReference>> {
        self.references
            .iter()
            .flatten()
            .map(|r| {
                let version = match r.version {
                    -1 => u32::MAX,
                    v if (1..=i64::from(i32::MAX)).contains(&v) => v as u32,
                    v => return Err(RegistryError::InvalidVersion(v.to_string())),
                };
                if r.name.is_empty() || r.subject.is_empty() {
                    return Err(RegistryError::InvalidSchema(
                        "a reference needs a name and a subject".into(),
                    ));
                }
                Ok(SchemaReference {
                    name: r.name.clone(),
                    subject: r.subject.clone(),
                    version,
                })
            })
            .collect()
    }

    /// Parsed, its references resolved.
    pub async fn parse(&self, store: &Store) -> RegistryResult<Parsed> {
        let imports = store.imports(&self.references()?).await?;
        Parsed::parse(self.schema_type()?, &self.schema, &imports)
    }
}

/// The references with `latest` pinned to the version it is now, as stored.
async fn pinned(store: &Store, refs: Vec<SchemaReference>) -> RegistryResult<Vec<SchemaReference>> {
    let mut out = Vec::with_capacity(refs.len());
    for mut r in refs {
        if r.version == u32::MAX {
            let record = store.subject(&r.subject).await?;
            let latest = crate::store::select(
                &r.subject,
                record.as_ref(),
                crate::store::VersionId::Latest,
                false,
            )
            .map_err(|_| {
                RegistryError::InvalidSchema(format!(
                    "reference {} to subject {} has no version",
                    r.name, r.subject
                ))
            })?;
            r.version = latest.version;
        }
        out.push(r);
    }
    Ok(out)
}

/// What a submitted schema would be stored as.
pub struct Candidate {
    /// Its type.
    pub ty: SchemaType,
    /// The parsed schema.
    pub parsed: Parsed,
    /// The record to store.
    pub record: SchemaRecord,
}

/// Parses a submitted schema into the record it would be stored as.
pub async fn candidate(store: &Store, submitted: &Submitted) -> RegistryResult<Candidate> {
    let ty = submitted.schema_type()?;
    let references = pinned(store, submitted.references()?).await?;
    let imports = store.imports(&references).await?;
    let parsed = Parsed::parse(ty, &submitted.schema, &imports)?;
    let text = parsed.normalized().to_owned();
    let record = SchemaRecord {
        schema_type: ty.name().to_owned(),
        fingerprint: fingerprint(ty, &text, &references),
        schema: text,
        references,
    };
    Ok(Candidate { ty, parsed, record })
}

/// POST `/subjects/{subject}/versions`.
pub async fn register(
    store: &Store,
    caller: &Caller<'_>,
    subject: &str,
    body: &[u8],
) -> RegistryResult<serde_json::Value> {
    caller.must(REGISTER, subject)?;
    if subject.is_empty() || subject.contains('\0') {
        return Err(RegistryError::BadRequest(format!(
            "invalid subject {subject:?}"
        )));
    }
    let submitted = Submitted::from_body(body)?;
    let c = candidate(store, &submitted).await?;
    for _ in 0..RETRIES {
        let stored = store.subject(subject).await?;
        let mode = mode_of(store, stored.as_ref()).await?;
        if matches!(mode, Mode::ReadOnly | Mode::ReadOnlyOverride) {
            return Err(RegistryError::NotPermitted(format!(
                "Subject {subject} is in read-only mode"
            )));
        }
        let known = store.id_of(&c.record.fingerprint).await?;
        // The same schema already a live version of the subject: its id, nothing new.
        if let (Some(id), Some(r)) = (known, stored.as_ref())
            && let Some(v) = r.versions.iter().rev().find(|v| v.id == id && !v.deleted)
        {
            if submitted.id.is_some_and(|want| want != i64::from(id)) {
                return Err(RegistryError::NotPermitted(format!(
                    "Overwrite new schema with id {} is not permitted.",
                    submitted.id.unwrap_or_default()
                )));
            }
            return Ok(answer(id, v.version, subject, &c));
        }
        let (id, version) = if mode == Mode::Import {
            imported_ids(&submitted, stored.as_ref(), known)?
        } else {
            if submitted.id.is_some() {
                return Err(RegistryError::NotPermitted(format!(
                    "Subject {subject} is not in import mode"
                )));
            }
            let level = level_of(store, stored.as_ref()).await?;
            if let Some(r) = &stored {
                let earlier = parsed_versions(store, r, level).await?;
                let found = problems(level, &c.parsed, &earlier);
                if !found.is_empty() {
                    store.metrics().incompatible.inc();
                    return Err(RegistryError::Incompatible {
                        subject: subject.to_owned(),
                        details: found,
                    });
                }
            }
            let id = match known {
                Some(id) => id,
                None => store
                    .last_id()
                    .await?
                    .checked_add(1)
                    .ok_or_else(|| RegistryError::Store("every schema id is taken".into()))?,
            };
            let next = stored
                .as_ref()
                .and_then(|r| r.versions.iter().map(|v| v.version).max())
                .unwrap_or(0)
                + 1;
            (id, next)
        };
        let expected = stored.as_ref().map_or(0, |r| r.changes);
        let mut record = stored.unwrap_or_else(SubjectRecord::default);
        record.changes = expected + 1;
        record.versions.push(SubjectVersion {
            version,
            id,
            deleted: false,
        });
        record.versions.sort_by_key(|v| v.version);
        let ops = vec![
            Op::Schema(SchemaOp::PutSchema {
                id,
                record: c.record.clone(),
            }),
            Op::Schema(SchemaOp::PutSubject {
                subject: subject.to_owned(),
                expected,
                record: Some(record),
            }),
        ];
        if store.commit_registration(subject, &c.parsed, ops).await? {
            store.metrics().registered.inc();
            tracing::info!(
                subject,
                id,
                version,
                schema_type = c.ty.name(),
                "schema registered"
            );
            return Ok(answer(id, version, subject, &c));
        }
        // An IMPORT that names a taken id: retrying cannot help.
        if mode == Mode::Import
            && let Some(want) = submitted.id
        {
            let holder = u32::try_from(want).ok();
            if let Some(held) = holder
                && let Some(other) = store.schema(held).await?
                && other != c.record
            {
                return Err(RegistryError::NotPermitted(format!(
                    "Overwrite new schema with id {want} is not permitted."
                )));
            }
        }
    }
    Err(RegistryError::Contended(format!(
        "registrations under {subject} kept racing"
    )))
}

/// IMPORT mode: the id and version the request gives.
fn imported_ids(
    submitted: &Submitted,
    stored: Option<&SubjectRecord>,
    known: Option<u32>,
) -> RegistryResult<(u32, u32)> {
    let id = match (submitted.id, known) {
        (Some(want), _) => u32::try_from(want)
            .ok()
            .filter(|i| *i >= 1)
            .ok_or_else(|| RegistryError::BadRequest(format!("invalid schema id {want}")))?,
        (None, Some(id)) => id,
        (None, None) => {
            return Err(RegistryError::BadRequest(
                "a registration in IMPORT mode names its id".into(),
            ));
        }
    };
    if known.is_some_and(|k| k != id) {
        return Err(RegistryError::NotPermitted(format!(
            "Overwrite new schema with id {id} is not permitted."
        )));
    }
    let next = stored
        .and_then(|r| r.versions.iter().map(|v| v.version).max())
        .unwrap_or(0)
        + 1;
    let version = match submitted.version {
        None => next,
        Some(v) => u32::try_from(v)
            .ok()
            .filter(|v| *v >= 1)
            .ok_or_else(|| RegistryError::InvalidVersion(v.to_string()))?,
    };
    if stored.is_some_and(|r| r.versions.iter().any(|v| v.version == version)) {
        return Err(RegistryError::NotPermitted(format!(
            "Version {version} already exists"
        )));
    }
    Ok((id, version))
}

/// The answer to a registration.
fn answer(id: u32, version: u32, subject: &str, c: &Candidate) -> serde_json::Value {
    let mut out =
        json!({ "id": id, "version": version, "subject": subject, "schema": c.record.schema });
    if c.ty != SchemaType::Avro {
        out["schemaType"] = json!(c.ty.name());
    }
    if !c.record.references.is_empty() {
        out["references"] = crate::schemas::references_json(&c.record.references);
    }
    out
}
