//! JSON Schema records as expansion rows: the columns an object schema gives (`object`
//! with `properties` -> struct, `object` with only `additionalProperties` -> map of
//! strings to its type, `array` -> list of its `items`, `integer` -> long, `number` ->
//! double, `string` -> string, or date, timestamptz or uuid by its `format`), following
//! `$ref`s within the document (`#/definitions/...`, `#/$defs/...`; one to another
//! subject has no column). A type that may be
//! null is that type; a property of several types, or of a schema the rules above do
//! not cover, has no column (its values count as excess). The record is JSON already:
//! the parser reads the bytes after the wire format's header.

use serde_json::{Value, json};

/// Deepest nesting of schemas followed.
const MAX_DEPTH: usize = 64;

/// The Iceberg struct type (as the REST catalog's JSON) of an object schema's properties.
pub fn columns(schema: &Value) -> Result<Value, String> {
    match ty(schema, schema, &mut Vec::new(), 0)? {
        Some(t) if t.get("type") == Some(&json!("struct")) => Ok(t),
        _ => Err("the schema is not an object with properties: only an object's properties become columns".into()),
    }
}

/// The schema a local `$ref` points at.
fn local<'a>(root: &'a Value, r: &str) -> Result<&'a Value, String> {
    let pointer = r.strip_prefix('#').unwrap_or(r);
    root.pointer(pointer)
        .ok_or_else(|| format!("$ref {r} points at nothing"))
}

/// The non-null type names of a schema's `type`.
fn types(s: &Value) -> Vec<&str> {
    match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
    .into_iter()
    .filter(|t| *t != "null")
    .collect()
}

fn ty(
    s: &Value,
    root: &Value,
    refs: &mut Vec<String>,
    depth: usize,
) -> Result<Option<Value>, String> {
    if depth > MAX_DEPTH {
        return Err(format!("schemas nest deeper than {MAX_DEPTH}"));
    }
    let Value::Object(o) = s else {
        return Ok(None);
    };
    if let Some(Value::String(r)) = o.get("$ref") {
        if !r.starts_with('#') {
            // Another subject's schema (a registry reference): not followed.
            return Ok(None);
        }
        if refs.contains(r) {
            return Err(format!(
                "{r} contains itself: a recursive type has no table column"
            ));
        }
        refs.push(r.clone());
        let t = ty(local(root, r)?, root, refs, depth + 1)?;
        refs.pop();
        return Ok(t);
    }
    for k in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = o.get(k) {
            let not_null: Vec<&Value> = options
                .iter()
                .filter(|v| v.get("type") != Some(&json!("null")))
                .collect();
            return match not_null.as_slice() {
                [one] => ty(one, root, refs, depth + 1),
                _ => Ok(None),
            };
        }
    }
    let kinds = types(s);
    let kind = match kinds.as_slice() {
        [one] => *one,
        [] if o.contains_key("properties") => "object",
        [] if o
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.iter().all(|v| v.is_string() || v.is_null())) =>
        {
            "string"
        }
        _ => return Ok(None),
    };
    Ok(Some(match kind {
        "boolean" => json!("boolean"),
        "integer" => json!("long"),
        "number" => json!("double"),
        "string" => match o.get("format").and_then(Value::as_str) {
            Some("date") => json!("date"),
            Some("date-time") => json!("timestamptz"),
            Some("uuid") => json!("uuid"),
            _ => json!("string"),
        },
        "array" => match o.get("items") {
            Some(items) => match ty(items, root, refs, depth + 1)? {
                Some(t) => json!({"type": "list", "element": t}),
                None => return Ok(None),
            },
            None => return Ok(None),
        },
        "object" => match o.get("properties") {
            Some(Value::Object(props)) => {
                let mut fields = Vec::with_capacity(props.len());
                for (name, p) in props {
                    if let Some(t) = ty(p, root, refs, depth + 1)? {
                        fields.push(json!({"name": name, "type": t}));
                    }
                }
                if fields.is_empty() {
                    return Ok(None);
                }
                json!({"type": "struct", "fields": fields})
            }
            _ => match o.get("additionalProperties") {
                Some(v @ Value::Object(_)) => match ty(v, root, refs, depth + 1)? {
                    Some(t) => json!({"type": "map", "key": "string", "value": t}),
                    None => return Ok(None),
                },
                _ => return Ok(None),
            },
        },
        _ => return Ok(None),
    }))
}
