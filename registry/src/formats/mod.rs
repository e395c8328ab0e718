//! The three schema types the registry holds: parsing a schema with its references
//! resolved, the text it is stored as, and whether one schema can read what another
//! wrote (the one question every compatibility level is built from).

pub mod avro;
pub mod avro_check;
pub mod json;
pub mod proto_text;
pub mod protobuf;

use sha2::{Digest, Sha256};

use crate::error::{RegistryError, RegistryResult};

/// A schema's type, as the API names it (`schemaType`; absent means AVRO).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaType {
    /// Apache Avro.
    Avro,
    /// Protocol Buffers.
    Protobuf,
    /// JSON Schema.
    Json,
}

impl SchemaType {
    /// Every type, as `/schemas/types` lists them.
    pub const ALL: [SchemaType; 3] = [SchemaType::Json, SchemaType::Protobuf, SchemaType::Avro];

    /// The type a request names (none: AVRO).
    pub fn named(name: Option<&str>) -> RegistryResult<Self> {
        match name.map(str::to_ascii_uppercase).as_deref() {
            None | Some("AVRO") => Ok(SchemaType::Avro),
            Some("PROTOBUF") => Ok(SchemaType::Protobuf),
            Some("JSON") => Ok(SchemaType::Json),
            Some(other) => Err(RegistryError::InvalidSchema(format!(
                "unknown schema type {other}: AVRO, PROTOBUF or JSON"
            ))),
        }
    }

    /// Its name in the API and the store.
    pub fn name(self) -> &'static str {
        match self {
            SchemaType::Avro => "AVRO",
            SchemaType::Protobuf => "PROTOBUF",
            SchemaType::Json => "JSON",
        }
    }
}

/// A schema a reference resolved to: the name it is imported under, its type and text.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The name the importing schema uses.
    pub name: String,
    /// Its stored text.
    pub text: String,
}

/// A parsed schema, ready for compatibility checks.
#[derive(Debug)]
pub enum Parsed {
    /// An Avro schema.
    Avro(avro::Avro),
    /// A JSON Schema.
    Json(json::Json),
    /// A Protobuf schema (boxed: its descriptor is several times the others' size).
    Protobuf(Box<protobuf::Protobuf>),
}

impl Parsed {
    /// Parses `text` of type `ty`, with `imports` (every schema it references, directly
    /// or not, dependencies first).
    pub fn parse(ty: SchemaType, text: &str, imports: &[Imported]) -> RegistryResult<Self> {
        // The parsers are third-party code fed with client bytes: a panic in one is a
        // refused schema, not a dead connection.
        let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match ty {
            SchemaType::Avro => avro::Avro::parse(text, imports).map(Parsed::Avro),
            SchemaType::Json => json::Json::parse(text, imports).map(Parsed::Json),
            SchemaType::Protobuf => {
                protobuf::Protobuf::parse(text, imports).map(|p| Parsed::Protobuf(Box::new(p)))
            }
        }));
        parsed.unwrap_or_else(|_| {
            Err(RegistryError::InvalidSchema(
                "the schema parser failed".into(),
            ))
        })
    }

    /// The text the schema is stored and answered as.
    pub fn normalized(&self) -> &str {
        match self {
            Parsed::Avro(a) => a.normalized(),
            Parsed::Json(j) => j.normalized(),
            Parsed::Protobuf(p) => p.normalized(),
        }
    }

    /// Why `payload` (a record's key or value after the wire format's magic byte and
    /// schema id) is not data of this schema.
    pub fn decode(&self, payload: &[u8]) -> Result<(), String> {
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match self {
            Parsed::Avro(a) => a.decode(payload),
            Parsed::Json(j) => j.decode(payload),
            Parsed::Protobuf(p) => p.decode(payload),
        }));
        checked.unwrap_or_else(|_| Err("the decoder failed".into()))
    }

    /// The name RecordNameStrategy takes a record's subject from: an Avro schema's full
    /// name, the Protobuf message the record names, a JSON Schema's `title`.
    pub fn record_name(&self, payload: &[u8]) -> Option<String> {
        match self {
            Parsed::Avro(a) => a.record_name(),
            Parsed::Json(j) => j.record_name(),
            Parsed::Protobuf(p) => p.record_name(payload),
        }
    }

    /// Why data written with `writer` may not be readable with `self` (empty: it is).
    pub fn cannot_read(&self, writer: &Parsed) -> Vec<String> {
        let checked =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match (self, writer) {
                (Parsed::Avro(r), Parsed::Avro(w)) => r.cannot_read(w),
                (Parsed::Json(r), Parsed::Json(w)) => r.cannot_read(w),
                (Parsed::Protobuf(r), Parsed::Protobuf(w)) => r.cannot_read(w),
                _ => vec!["the schema type changed".into()],
            }));
        checked.unwrap_or_else(|_| vec!["the compatibility check failed".into()])
    }
}

/// JSON text without the whitespace between its tokens, keys in the order written: the
/// form Avro and JSON schemas are stored in, so the same schema spaced differently gets
/// the same id, and a reader gets back the document its writer registered. `text` must
/// already have parsed as JSON.
pub fn compact_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

/// What identifies a schema across subjects: its type, stored text and references.
pub fn fingerprint(ty: SchemaType, text: &str, references: &[catalog::SchemaReference]) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(ty.name());
    h.update([0]);
    h.update(text);
    for r in references {
        h.update([0]);
        h.update(&r.name);
        h.update([0]);
        h.update(&r.subject);
        h.update([0]);
        h.update(r.version.to_be_bytes());
    }
    h.finalize().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_json_drops_spacing_outside_strings_only() {
        let text = "{ \"type\" : \"record\",\n \"doc\": \"a \\\" b  c\", \"x\" : [ 1 , 2 ] }";
        let compact = compact_json(text);
        assert_eq!(
            compact,
            "{\"type\":\"record\",\"doc\":\"a \\\" b  c\",\"x\":[1,2]}"
        );
        let a: serde_json::Value = serde_json::from_str(text).unwrap();
        let b: serde_json::Value = serde_json::from_str(&compact).unwrap();
        assert_eq!(a, b);
    }
}
