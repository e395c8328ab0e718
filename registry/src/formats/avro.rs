//! Avro schemas: parsed by `apache-avro` (references resolved as named types parsed
//! before the schema), stored as compact JSON (`super::compact_json`), and checked with Avro's own schema
//! resolution rules (`SchemaCompatibility::can_read`).

use apache_avro::Schema;
use apache_avro::schema_compatibility::SchemaCompatibility;

use super::Imported;
use crate::error::{RegistryError, RegistryResult};

/// A parsed Avro schema.
#[derive(Debug)]
pub struct Avro {
    schema: Schema,
    /// Its named types and its references', for checking records.
    named: super::avro_check::Named,
    text: String,
}

impl Avro {
    /// Parses `text`; `imports` are the named types it references.
    pub fn parse(text: &str, imports: &[Imported]) -> RegistryResult<Self> {
        let invalid = |e: String| RegistryError::InvalidSchema(e);
        // Docs, defaults and custom attributes are kept as written: a reader fetching
        // the schema by id must get what the writer registered.
        serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| invalid(e.to_string()))?;
        let text = super::compact_json(text);
        let (schema, schemata) = if imports.is_empty() {
            (
                Schema::parse_str(&text).map_err(|e| invalid(e.to_string()))?,
                Vec::new(),
            )
        } else {
            let list: Vec<&str> = imports.iter().map(|i| i.text.as_str()).collect();
            Schema::parse_str_with_list(&text, list).map_err(|e| invalid(e.to_string()))?
        };
        let named = super::avro_check::Named::of(schemata.iter().chain([&schema]));
        Ok(Self {
            schema,
            named,
            text,
        })
    }

    /// The stored text.
    pub fn normalized(&self) -> &str {
        &self.text
    }

    /// The parsed schema (its `Ref`s name types of [`Avro::named`]).
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The named types the schema and its references define.
    pub fn named(&self) -> &super::avro_check::Named {
        &self.named
    }

    /// Why `payload` (the bytes after the wire format's header) is not one datum of
    /// this schema, every byte used.
    pub fn decode(&self, payload: &[u8]) -> Result<(), String> {
        super::avro_check::check(&self.schema, &self.named, payload)
    }

    /// The full name of the schema's named type (RecordNameStrategy's subject).
    pub fn record_name(&self) -> Option<String> {
        self.schema.name().map(|n| n.fullname(None))
    }

    /// Why a reader with this schema may not read data written with `writer`.
    pub fn cannot_read(&self, writer: &Avro) -> Vec<String> {
        match SchemaCompatibility::can_read(&writer.schema, &self.schema) {
            Ok(()) => Vec::new(),
            Err(e) => vec![e.to_string()],
        }
    }
}
