//! Expansions typed by the Schema Registry: a topic whose records carry the registry's
//! wire format (magic byte 0, a 4-byte big-endian schema id, for Protobuf the message
//! indexes) expands into columns derived from a subject's schema. Each record is read
//! with its own writer's schema (by its id) and written out as the JSON document the
//! expansion's parser reads, so the table's columns are resolved against every writer
//! by name, as for any JSON expansion.
//!
//! A typed expansion is stored as an ordinary `ExpansionSpec` whose `format` is
//! `<format>:<subject>` (`avro:orders-value`) and whose `schema` is the columns of the
//! subject's version it was built from; a registration under the subject commits the
//! next version of the expansion and the target's schema evolution with it
//! ([`evolve`]).

pub mod avro;
pub mod evolve;
pub mod json_schema;
pub mod protobuf;
pub mod text;

use std::collections::HashMap;
use std::sync::Arc;

use catalog::Catalog;
use registry::formats::Parsed;
use serde_json::Value;

use crate::seal::wait;
use crate::{TableError, TableResult};

/// A registry format an expansion reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Avro's binary encoding.
    Avro,
    /// Protobuf.
    Protobuf,
    /// JSON documents valid under a JSON Schema.
    JsonSchema,
}

impl Format {
    /// The name in an expansion's `format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Avro => "avro",
            Format::Protobuf => "protobuf",
            Format::JsonSchema => "json_schema",
        }
    }

    /// The format named `name` (any case).
    pub fn named(name: &str) -> Option<Self> {
        [Format::Avro, Format::Protobuf, Format::JsonSchema]
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }

    fn of(parsed: &Parsed) -> Self {
        match parsed {
            Parsed::Avro(_) => Format::Avro,
            Parsed::Protobuf(_) => Format::Protobuf,
            Parsed::Json(_) => Format::JsonSchema,
        }
    }
}

/// The format and subject of a typed expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Typed {
    /// How records are encoded.
    pub format: Format,
    /// The subject whose latest version gives the columns.
    pub subject: String,
}

impl Typed {
    /// The typed expansion a stored `format` names (`None`: a JSON expansion).
    pub fn of(format: &str) -> Option<Self> {
        let (f, subject) = format.split_once(':')?;
        Some(Self {
            format: Format::named(f)?,
            subject: subject.to_owned(),
        })
    }

    /// The stored `format`.
    pub fn stored(&self) -> String {
        format!("{}:{}", self.format.name(), self.subject)
    }
}

/// The columns (an Iceberg struct type as the REST catalog's JSON) of a schema of
/// `format`.
pub fn columns(format: Format, parsed: &Parsed) -> Result<Value, String> {
    let got = Format::of(parsed);
    if got != format {
        return Err(format!(
            "the subject's schema is {}, not {}",
            got.name(),
            format.name()
        ));
    }
    match parsed {
        Parsed::Avro(a) => avro::columns(a.schema(), a.named()),
        Parsed::Protobuf(p) => match p.first_message() {
            Some(m) => protobuf::columns(&m),
            None => Err("the schema defines no message".into()),
        },
        Parsed::Json(j) => json_schema::columns(j.value()),
    }
}

/// Writers' schemas kept (an id is bound to one schema for good, so they never go
/// stale; the bound only caps memory).
const MAX_WRITERS: usize = 1024;

/// The writers' schemas records name by id, parsed once and shared by every seal.
pub struct Writers {
    store: registry::store::Store,
    cache: std::sync::Mutex<HashMap<u32, Option<Arc<Parsed>>>>,
}

impl Writers {
    /// The schemas of `catalog`'s registry.
    pub fn new(catalog: Arc<dyn Catalog>) -> Self {
        Self {
            store: registry::store::Store::new(catalog),
            cache: Default::default(),
        }
    }

    /// The writer's schema of `id` (none: no such id). Blocks on the catalog, from the
    /// seal's blocking thread.
    fn get(&self, id: u32) -> TableResult<Option<Arc<Parsed>>> {
        let cached = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned();
        if let Some(w) = cached {
            return Ok(w);
        }
        let record = wait(self.store.schema(id)).map_err(registry_error)?;
        let parsed = match record {
            None => None,
            // A stored schema that no longer parses (it did when registered) reads as
            // unreadable records rather than stopping the table.
            Some(r) => wait(self.store.parsed(&r)).ok().map(Arc::new),
        };
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= MAX_WRITERS {
            cache.clear();
        }
        cache.insert(id, parsed.clone());
        Ok(parsed)
    }
}

/// Record bytes of a typed expansion into the JSON documents its parser reads.
pub struct Transcoder {
    format: Format,
    writers: Arc<Writers>,
    out: Vec<u8>,
}

/// What became of one record.
pub enum Transcoded<'a> {
    /// Its JSON document.
    Json(&'a [u8]),
    /// Not a record of a registered schema of the format (no header, an unknown id,
    /// bytes that do not decode): a row with `_parse_error`.
    Unreadable,
}

impl Transcoder {
    /// A transcoder for `format`, with `writers`' schemas.
    pub fn new(writers: Arc<Writers>, format: Format) -> Self {
        Self {
            format,
            writers,
            out: Vec::new(),
        }
    }

    /// The JSON document of a record's bytes. Errors only when the catalog fails.
    pub fn transcode<'s>(&'s mut self, bytes: &'s [u8]) -> TableResult<Transcoded<'s>> {
        let (id, payload) = match bytes {
            [0, a, b, c, d, rest @ ..] => (u32::from_be_bytes([*a, *b, *c, *d]), rest),
            _ => return Ok(Transcoded::Unreadable),
        };
        let Some(writer) = self.writers.get(id)? else {
            return Ok(Transcoded::Unreadable);
        };
        self.out.clear();
        let out = &mut self.out;
        // Third-party decoders (prost-reflect) fed with client bytes: a panic is an
        // unreadable record, not a failed seal.
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            match (self.format, writer.as_ref()) {
                (Format::Avro, Parsed::Avro(a)) => {
                    avro::to_json(a.schema(), a.named(), payload, out)
                }
                (Format::Protobuf, Parsed::Protobuf(p)) => {
                    let (m, rest) = p.message(payload)?;
                    protobuf::to_json(&m, rest, out)
                }
                (Format::JsonSchema, Parsed::Json(_)) => Ok(()),
                _ => Err("a schema of another format".into()),
            }
        }));
        Ok(match done {
            Ok(Ok(())) if self.format == Format::JsonSchema => Transcoded::Json(payload),
            Ok(Ok(())) => Transcoded::Json(&self.out),
            Ok(Err(_)) | Err(_) => Transcoded::Unreadable,
        })
    }
}

fn registry_error(e: registry::RegistryError) -> TableError {
    TableError::Task(format!("schema registry: {e}"))
}

/// The current columns of `typed`'s subject (its latest live version), as the JSON an
/// expansion's `schema` takes.
pub async fn subject_columns(catalog: Arc<dyn Catalog>, typed: &Typed) -> TableResult<Value> {
    let store = registry::store::Store::new(catalog);
    let subject = store
        .subject(&typed.subject)
        .await
        .map_err(registry_error)?;
    let v = registry::store::select(
        &typed.subject,
        subject.as_ref(),
        registry::store::VersionId::Latest,
        false,
    )
    .map_err(|_| {
        TableError::BadRequest(format!(
            "subject {:?} has no schema registered: register one first (its latest version gives the columns)",
            typed.subject
        ))
    })?;
    let record = store
        .schema(v.id)
        .await
        .map_err(registry_error)?
        .ok_or_else(|| TableError::Task(format!("schema {} is missing", v.id)))?;
    let parsed = store.parsed(&record).await.map_err(registry_error)?;
    columns(typed.format, &parsed)
        .map_err(|e| TableError::BadRequest(format!("subject {:?}: {e}", typed.subject)))
}
