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
        let (w, r) = (
            without_decimals(&writer.schema, 0),
            without_decimals(&self.schema, 0),
        );
        match SchemaCompatibility::can_read(&w, &r) {
            Ok(()) => Vec::new(),
            Err(e) => vec![e.to_string()],
        }
    }
}

/// `s` with its decimals as their underlying `bytes` or `fixed`. apache-avro 0.21's check
/// has no rule for decimals: it refuses any schema holding one, even against itself
/// (found by a registration whose earlier version had the same decimal field). Java's
/// Avro resolution, which Confluent's registry runs, checks the underlying types and
/// ignores logical types; so does this.
fn without_decimals(s: &Schema, depth: usize) -> Schema {
    use apache_avro::schema::{ArraySchema, MapSchema, UnionSchema};
    if depth > super::avro_check::MAX_DEPTH {
        return s.clone();
    }
    match s {
        Schema::Decimal(d) => without_decimals(&d.inner, depth + 1),
        Schema::BigDecimal => Schema::Bytes,
        Schema::Array(a) => Schema::Array(ArraySchema {
            items: Box::new(without_decimals(&a.items, depth + 1)),
            attributes: a.attributes.clone(),
        }),
        Schema::Map(m) => Schema::Map(MapSchema {
            types: Box::new(without_decimals(&m.types, depth + 1)),
            attributes: m.attributes.clone(),
        }),
        Schema::Union(u) => {
            let variants = u
                .variants()
                .iter()
                .map(|v| without_decimals(v, depth + 1))
                .collect();
            // A union of bytes and a decimal would repeat bytes: left as it was.
            UnionSchema::new(variants)
                .map(Schema::Union)
                .unwrap_or_else(|_| s.clone())
        }
        Schema::Record(r) => {
            let mut r = r.clone();
            for f in &mut r.fields {
                f.schema = without_decimals(&f.schema, depth + 1);
            }
            Schema::Record(r)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_fields_are_checked_by_their_underlying_type() {
        let v1 = r#"{"type": "record", "name": "R", "fields": [
            {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}}]}"#;
        let v2 = r#"{"type": "record", "name": "R", "fields": [
            {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
            {"name": "note", "type": ["null", "string"], "default": null}]}"#;
        let as_string = r#"{"type": "record", "name": "R", "fields": [
            {"name": "price", "type": "string"}]}"#;
        let (a, b, c) = (
            Avro::parse(v1, &[]).unwrap(),
            Avro::parse(v2, &[]).unwrap(),
            Avro::parse(as_string, &[]).unwrap(),
        );
        assert!(a.cannot_read(&a).is_empty());
        assert!(b.cannot_read(&a).is_empty());
        assert!(a.cannot_read(&b).is_empty());
        // bytes are readable as a string in Avro; a long is not.
        assert!(c.cannot_read(&a).is_empty());
        let as_long = Avro::parse(
            r#"{"type": "record", "name": "R", "fields": [{"name": "price", "type": "long"}]}"#,
            &[],
        )
        .unwrap();
        assert!(!as_long.cannot_read(&a).is_empty());
    }
}
