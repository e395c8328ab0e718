//! Protobuf records as expansion rows: the columns a message gives (messages -> structs,
//! repeated -> lists, maps, enums -> strings, `google.protobuf.Timestamp` ->
//! timestamptz, wrappers -> their value's type, unsigned 64-bit -> decimal(20,0)), and
//! each record decoded by `prost-reflect` with its writer's descriptor, written out as
//! the JSON document the expansion's parser reads (field names as declared). A field
//! without presence that is unset is its default, as Protobuf defines it; one with
//! presence (messages, `optional`, oneof members) is null.
//!
//! `google.protobuf.Struct`, `Value`, `ListValue`, `Any`, `Empty` and `FieldMask` have no
//! column: their fields count as excess values.

use std::io::Write as _;

use base64::Engine as _;
use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage, Value,
};
use serde_json::{Value as Json, json};

use super::text;

/// Deepest nesting of messages in a column's type or a record.
const MAX_DEPTH: usize = 64;

/// Messages with no column.
const UNTYPED: &[&str] = &[
    "google.protobuf.Struct",
    "google.protobuf.Value",
    "google.protobuf.ListValue",
    "google.protobuf.Any",
    "google.protobuf.Empty",
    "google.protobuf.FieldMask",
];

/// The wrapped value's type of a wrapper message.
fn wrapper(name: &str) -> Option<&'static str> {
    Some(match name {
        "google.protobuf.DoubleValue" => "double",
        "google.protobuf.FloatValue" => "float",
        "google.protobuf.Int64Value" => "long",
        "google.protobuf.UInt64Value" => "decimal(20,0)",
        "google.protobuf.Int32Value" => "int",
        "google.protobuf.UInt32Value" => "long",
        "google.protobuf.BoolValue" => "boolean",
        "google.protobuf.StringValue" => "string",
        "google.protobuf.BytesValue" => "binary",
        _ => return None,
    })
}

const TIMESTAMP: &str = "google.protobuf.Timestamp";
const DURATION: &str = "google.protobuf.Duration";

/// The Iceberg struct type (as the REST catalog's JSON) of a message's fields.
pub fn columns(m: &MessageDescriptor) -> Result<Json, String> {
    message(m, &mut Vec::new(), 0)?.ok_or_else(|| {
        format!(
            "message {} has no field that can be a column",
            m.full_name()
        )
    })
}

fn message(
    m: &MessageDescriptor,
    path: &mut Vec<String>,
    depth: usize,
) -> Result<Option<Json>, String> {
    if depth > MAX_DEPTH {
        return Err(format!("messages nest deeper than {MAX_DEPTH}"));
    }
    let name = m.full_name().to_owned();
    if path.contains(&name) {
        return Err(format!(
            "message {name} contains itself: a recursive type has no table column"
        ));
    }
    path.push(name);
    let mut fields = Vec::new();
    for f in m.fields() {
        if let Some(t) = field_type(&f, path, depth)? {
            fields.push(json!({"name": f.name(), "type": t}));
        }
    }
    path.pop();
    Ok((!fields.is_empty()).then(|| json!({"type": "struct", "fields": fields})))
}

fn field_type(
    f: &FieldDescriptor,
    path: &mut Vec<String>,
    depth: usize,
) -> Result<Option<Json>, String> {
    if f.is_map() {
        let Kind::Message(entry) = f.kind() else {
            return Ok(None);
        };
        let key = match entry.map_entry_key_field().kind() {
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => "int",
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 | Kind::Uint32 | Kind::Fixed32 => "long",
            _ => "string",
        };
        let Some(value) = kind_type(&entry.map_entry_value_field().kind(), path, depth)? else {
            return Ok(None);
        };
        return Ok(Some(json!({"type": "map", "key": key, "value": value})));
    }
    let Some(t) = kind_type(&f.kind(), path, depth)? else {
        return Ok(None);
    };
    Ok(Some(if f.is_list() {
        json!({"type": "list", "element": t})
    } else {
        t
    }))
}

fn kind_type(k: &Kind, path: &mut Vec<String>, depth: usize) -> Result<Option<Json>, String> {
    Ok(Some(match k {
        Kind::Double => json!("double"),
        Kind::Float => json!("float"),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => json!("int"),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 | Kind::Uint32 | Kind::Fixed32 => {
            json!("long")
        }
        Kind::Uint64 | Kind::Fixed64 => json!("decimal(20,0)"),
        Kind::Bool => json!("boolean"),
        Kind::String | Kind::Enum(_) => json!("string"),
        Kind::Bytes => json!("binary"),
        Kind::Message(m) => match m.full_name() {
            TIMESTAMP => json!("timestamptz"),
            DURATION => json!("string"),
            n if UNTYPED.contains(&n) => return Ok(None),
            n => match wrapper(n) {
                Some(t) => json!(t),
                None => return message(m, path, depth + 1),
            },
        },
    }))
}

/// Decodes `bytes` as message `m` and writes it as a JSON document into `out`.
pub fn to_json(m: &MessageDescriptor, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let msg = DynamicMessage::decode(m.clone(), bytes).map_err(|e| e.to_string())?;
    write_message(&msg, out, 0)
}

fn quoted(out: &mut Vec<u8>, s: &str) {
    let _ = serde_json::to_writer(&mut *out, s);
}

fn write_message(msg: &DynamicMessage, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH}"));
    }
    out.push(b'{');
    for (i, f) in msg.descriptor().fields().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        quoted(out, f.name());
        out.push(b':');
        if f.supports_presence() && !msg.has_field(&f) {
            out.extend_from_slice(b"null");
            continue;
        }
        let v = msg.get_field(&f);
        write_value(&v, &f.kind(), out, depth)?;
    }
    out.push(b'}');
    Ok(())
}

fn write_value(v: &Value, kind: &Kind, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    match v {
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::I32(n) => {
            let _ = write!(out, "{n}");
        }
        Value::I64(n) => {
            let _ = write!(out, "{n}");
        }
        Value::U32(n) => {
            let _ = write!(out, "{n}");
        }
        Value::U64(n) => {
            let _ = write!(out, "{n}");
        }
        Value::F32(n) if n.is_finite() => {
            let _ = write!(out, "{n}");
        }
        Value::F64(n) if n.is_finite() => {
            let _ = write!(out, "{n}");
        }
        // NaN and infinities: a string no numeric column takes (null, row marked).
        Value::F32(n) => quoted(out, &n.to_string()),
        Value::F64(n) => quoted(out, &n.to_string()),
        Value::String(s) => quoted(out, s),
        Value::Bytes(b) => {
            quoted(out, &base64::engine::general_purpose::STANDARD.encode(b));
        }
        Value::EnumNumber(n) => match kind {
            Kind::Enum(e) => match e.get_value(*n) {
                Some(ev) => quoted(out, ev.name()),
                None => {
                    let _ = write!(out, "{n}");
                }
            },
            _ => {
                let _ = write!(out, "{n}");
            }
        },
        Value::Message(m) => write_known(m, out, depth + 1)?,
        Value::List(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, kind, out, depth + 1)?;
            }
            out.push(b']');
        }
        Value::Map(entries) => {
            let value_kind = match kind {
                Kind::Message(entry) => entry.map_entry_value_field().kind(),
                other => other.clone(),
            };
            out.push(b'{');
            for (i, (k, val)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let key = match k {
                    MapKey::Bool(b) => b.to_string(),
                    MapKey::I32(n) => n.to_string(),
                    MapKey::I64(n) => n.to_string(),
                    MapKey::U32(n) => n.to_string(),
                    MapKey::U64(n) => n.to_string(),
                    MapKey::String(s) => s.clone(),
                };
                quoted(out, &key);
                out.push(b':');
                write_value(val, &value_kind, out, depth + 1)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// A message value: the well-known ones as their column types take them.
fn write_known(m: &DynamicMessage, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    let d = m.descriptor();
    let name = d.full_name();
    let field = |n: &str| d.get_field_by_name(n).map(|f| m.get_field(&f).into_owned());
    if name == TIMESTAMP {
        let seconds = field("seconds").and_then(|v| v.as_i64()).unwrap_or(0);
        let nanos = field("nanos").and_then(|v| v.as_i32()).unwrap_or(0);
        let micros = seconds
            .checked_mul(1_000_000)
            .and_then(|s| s.checked_add(i64::from(nanos) / 1000));
        match micros {
            Some(us) => quoted(out, &text::timestamp_micros(us)),
            None => quoted(out, "out of range"),
        }
        return Ok(());
    }
    if name == DURATION {
        let seconds = field("seconds").and_then(|v| v.as_i64()).unwrap_or(0);
        let nanos = field("nanos").and_then(|v| v.as_i32()).unwrap_or(0);
        let sign = if seconds < 0 || nanos < 0 { "-" } else { "" };
        quoted(
            out,
            &format!(
                "{sign}{}.{:09}s",
                seconds.unsigned_abs(),
                nanos.unsigned_abs()
            ),
        );
        return Ok(());
    }
    if wrapper(name).is_some()
        && let Some(f) = d.get_field_by_name("value")
    {
        let v = m.get_field(&f);
        return write_value(&v, &f.kind(), out, depth);
    }
    write_message(m, out, depth)
}
