//! JSON Schemas: compiled by `jsonschema` (so a schema that is not one is refused, and
//! records are validated against it; references resolve to the referenced subjects'
//! schemas, never over the network), stored as compact JSON, and checked by whether the reader's schema
//! accepts every document the writer's accepts. The check understands the keywords
//! evolutions change (`type`, `properties`, `required`, `additionalProperties`, `items`,
//! `enum`, `const`, bounds of strings, numbers and arrays); a change to any other keyword
//! (`$ref`, `oneOf`, `pattern`, ...) is reported as incompatible rather than assumed
//! safe, so a level is never passed by a change the registry did not understand.

use serde_json::{Map, Value};

use super::Imported;
use crate::error::{RegistryError, RegistryResult};

/// A parsed JSON Schema.
pub struct Json {
    value: Value,
    text: String,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for Json {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Json").field("text", &self.text).finish()
    }
}

/// Keywords that only describe (no effect on which documents are valid).
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$defs",
    "definitions",
];

/// Keywords the check understands.
const UNDERSTOOD: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
];

impl Json {
    /// Parses and compiles `text` (a JSON object or boolean); `imports` are the schemas
    /// its references name, by their URL.
    pub fn parse(text: &str, imports: &[Imported]) -> RegistryResult<Self> {
        let invalid = |e: String| RegistryError::InvalidSchema(e);
        let value: Value = serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
        if !(value.is_object() || value.is_boolean()) {
            return Err(invalid("a JSON Schema is an object or a boolean".into()));
        }
        let mut resources = Vec::with_capacity(imports.len());
        for i in imports {
            let v: Value = serde_json::from_str(&i.text).map_err(|e| invalid(e.to_string()))?;
            resources.push((i.name.clone(), jsonschema::Resource::from_contents(v)));
        }
        let registry = jsonschema::Registry::new()
            .extend(resources)
            .and_then(|b| b.prepare())
            .map_err(|e| invalid(e.to_string()))?;
        let validator = jsonschema::options()
            .with_registry(&registry)
            .build(&value)
            .map_err(|e| invalid(e.to_string()))?;
        let text = super::compact_json(text);
        Ok(Self {
            value,
            text,
            validator,
        })
    }

    /// Why `payload` is not a JSON document valid under this schema.
    pub fn decode(&self, payload: &[u8]) -> Result<(), String> {
        let doc: Value = serde_json::from_slice(payload).map_err(|e| e.to_string())?;
        self.validator.validate(&doc).map_err(|e| e.to_string())
    }

    /// The schema document.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The schema's `title` (RecordNameStrategy's subject).
    pub fn record_name(&self) -> Option<String> {
        self.value.get("title")?.as_str().map(str::to_owned)
    }

    /// The stored text.
    pub fn normalized(&self) -> &str {
        &self.text
    }

    /// Why a reader with this schema may not accept documents valid under `writer`.
    pub fn cannot_read(&self, writer: &Json) -> Vec<String> {
        let mut out = Vec::new();
        accepts_all(&self.value, &writer.value, "#", &mut out);
        out
    }
}

/// A schema as its keywords (`true` is no keyword; `false` is `None`).
fn keywords(s: &Value) -> Option<Map<String, Value>> {
    match s {
        Value::Bool(true) => Some(Map::new()),
        Value::Bool(false) => None,
        Value::Object(m) => Some(m.clone()),
        _ => Some(Map::new()),
    }
}

/// The types a schema allows (none: any).
fn types(m: &Map<String, Value>) -> Option<Vec<String>> {
    match m.get("type")? {
        Value::String(t) => Some(vec![t.clone()]),
        Value::Array(ts) => Some(
            ts.iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect(),
        ),
        _ => None,
    }
}

/// Records in `out` why `reader` may reject a document `writer` accepts, at `path`.
fn accepts_all(reader: &Value, writer: &Value, path: &str, out: &mut Vec<String>) {
    let Some(w) = keywords(writer) else {
        return; // the writer accepts nothing
    };
    let Some(r) = keywords(reader) else {
        out.push(format!("{path}: the new schema accepts nothing"));
        return;
    };
    for (k, rv) in &r {
        let k = k.as_str();
        if ANNOTATIONS.contains(&k) || UNDERSTOOD.contains(&k) {
            continue;
        }
        if w.get(k) != Some(rv) {
            out.push(format!(
                "{path}: keyword {k} changed (not checked, so refused)"
            ));
        }
    }
    if let Some(rt) = types(&r) {
        match types(&w) {
            None => out.push(format!("{path}: type narrowed to {rt:?}")),
            Some(wt) => {
                for t in wt {
                    let ok =
                        rt.contains(&t) || (t == "integer" && rt.iter().any(|x| x == "number"));
                    if !ok {
                        out.push(format!("{path}: type {t} no longer allowed"));
                    }
                }
            }
        }
    }
    for set in ["enum", "const"] {
        let listed = |m: &Map<String, Value>| -> Option<Vec<Value>> {
            match (set, m.get(set)?) {
                ("enum", Value::Array(v)) => Some(v.clone()),
                ("const", v) => Some(vec![v.clone()]),
                _ => None,
            }
        };
        if let Some(rv) = listed(&r) {
            match listed(&w) {
                None => out.push(format!("{path}: {set} added")),
                Some(wv) => {
                    for v in wv.iter().filter(|v| !rv.contains(v)) {
                        out.push(format!("{path}: {set} value {v} removed"));
                    }
                }
            }
        }
    }
    bound(&r, &w, "minLength", true, path, out);
    bound(&r, &w, "maxLength", false, path, out);
    bound(&r, &w, "minimum", true, path, out);
    bound(&r, &w, "maximum", false, path, out);
    bound(&r, &w, "exclusiveMinimum", true, path, out);
    bound(&r, &w, "exclusiveMaximum", false, path, out);
    bound(&r, &w, "minItems", true, path, out);
    bound(&r, &w, "maxItems", false, path, out);
    objects(&r, &w, path, out);
    if let Some(ri) = r.get("items") {
        let wi = w.get("items").cloned().unwrap_or(Value::Bool(true));
        accepts_all(ri, &wi, &format!("{path}/items"), out);
    }
}

/// A lower (`min`) or upper bound that the reader may only widen.
fn bound(
    r: &Map<String, Value>,
    w: &Map<String, Value>,
    k: &str,
    min: bool,
    path: &str,
    out: &mut Vec<String>,
) {
    let Some(rb) = r.get(k).and_then(Value::as_f64) else {
        return;
    };
    let narrowed = match w.get(k).and_then(Value::as_f64) {
        None => true,
        Some(wb) => (min && rb > wb) || (!min && rb < wb),
    };
    if narrowed {
        out.push(format!("{path}: {k} narrowed to {rb}"));
    }
}

/// Properties, `required` and `additionalProperties`.
fn objects(r: &Map<String, Value>, w: &Map<String, Value>, path: &str, out: &mut Vec<String>) {
    let empty = Map::new();
    let props = |m: &Map<String, Value>| {
        m.get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_else(|| empty.clone())
    };
    let (rp, wp) = (props(r), props(w));
    let open = |m: &Map<String, Value>| {
        m.get("additionalProperties")
            .cloned()
            .unwrap_or(Value::Bool(true))
    };
    let (r_extra, w_extra) = (open(r), open(w));
    let required = |m: &Map<String, Value>| -> Vec<String> {
        m.get("required")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let wr = required(w);
    for name in required(r) {
        if !wr.contains(&name) {
            out.push(format!("{path}: property {name} became required"));
        }
    }
    // Each property a writer's document may have must be accepted by the reader.
    for (name, ws) in &wp {
        let at = format!("{path}/properties/{name}");
        match rp.get(name) {
            Some(rs) => accepts_all(rs, ws, &at, out),
            None => accepts_all(&r_extra, ws, &at, out),
        }
    }
    // A property the reader now describes may appear in a writer's document as one of
    // its additional properties.
    for (name, rs) in &rp {
        if !wp.contains_key(name) {
            accepts_all(rs, &w_extra, &format!("{path}/properties/{name}"), out);
        }
    }
    if !wp.is_empty() || !rp.is_empty() || r.contains_key("additionalProperties") {
        accepts_all(
            &r_extra,
            &w_extra,
            &format!("{path}/additionalProperties"),
            out,
        );
    }
}
