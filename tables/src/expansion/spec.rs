//! The management API's request and response bodies, and their checks: a `PUT` body
//! becomes the catalog's `ExpansionSpec` (the schema kept as the REST catalog's JSON, so
//! its meaning is the Iceberg spec's, not this build's), and a stored spec becomes the
//! layout a seal parses with.

use catalog::ExpansionSpec;
use iceberg::spec::StructType;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::layout::{Layout, Options, Source};
use super::registered::Typed;
use crate::schema::NAMESPACE;
use crate::{TableError, TableResult};

/// `PUT /admin/v1/topics/{topic}/expansion`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutBody {
    /// `namespace.table`.
    pub target: String,
    /// `value` (default) or `key`.
    #[serde(default = "default_source")]
    pub source_column: String,
    /// `json` (the default), or a registry format whose records carry a schema id:
    /// `avro`, `protobuf`, `json_schema` (the columns then come from `subject`).
    #[serde(default = "default_format")]
    pub format: String,
    /// For a registry format: the subject whose latest version gives the columns
    /// (default `<topic>-value` or `<topic>-key`, Confluent's TopicNameStrategy).
    #[serde(default)]
    pub subject: Option<String>,
    /// An Iceberg struct type (or schema) as the REST catalog spec writes it; field ids
    /// may be left out. For a registry format, absent (the subject's schema gives it).
    #[serde(default)]
    pub schema: Value,
    /// Struct fields become top-level columns.
    #[serde(default)]
    pub flatten_path: bool,
    /// Joins flattened names.
    #[serde(default = "default_delimiter")]
    pub flatten_delimiter: String,
    /// The raw source bytes as a column.
    #[serde(default)]
    pub copy_source_column: bool,
    /// An `_missing_values` column.
    #[serde(default = "yes")]
    pub missing_values_output: bool,
    /// An `_excess_values` column.
    #[serde(default = "yes")]
    pub excess_values_output: bool,
    /// Also expand, once, the records the topic holds already (in the background and on
    /// the next loads of the target).
    #[serde(default)]
    pub backfill: bool,
}

fn default_source() -> String {
    "value".into()
}
fn default_format() -> String {
    "json".into()
}
fn default_delimiter() -> String {
    "__".into()
}
fn yes() -> bool {
    true
}

/// `POST /admin/v1/topics/{topic}/expansion/columns`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnsBody {
    /// Which expansion: `value` (default) or `key`.
    #[serde(default = "default_source")]
    pub source_column: String,
    /// Fields to add (Iceberg struct fields; ids may be left out).
    #[serde(default)]
    pub add: Vec<Value>,
    /// Top-level fields to drop, by name.
    #[serde(default)]
    pub drop: Vec<String>,
}

/// An expansion as `GET` returns it.
#[derive(Debug, Serialize)]
pub struct View {
    /// The topic.
    pub topic: String,
    /// `namespace.table`.
    pub target: String,
    /// `value` or `key`.
    pub source_column: String,
    /// `json`, `avro`, `protobuf` or `json_schema`.
    pub format: String,
    /// For a registry format: the subject whose latest version gives the columns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The expansion schema (an Iceberg struct type).
    pub schema: Value,
    /// Options.
    pub flatten_path: bool,
    /// Options.
    pub flatten_delimiter: String,
    /// Options.
    pub copy_source_column: bool,
    /// Options.
    pub missing_values_output: bool,
    /// Options.
    pub excess_values_output: bool,
    /// The target table's columns this expansion fills, in order.
    pub columns: Vec<String>,
    /// Per partition: the first offset this version of the expansion expands.
    pub since: Vec<u64>,
    /// Per partition: how far the backfill of older records has read (absent without
    /// one; equal to `since` once done).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backfilled: Option<Vec<u64>>,
}

impl View {
    /// The view of `spec`, current from `since`.
    pub fn of(topic: &str, source: Source, spec: &ExpansionSpec, since: Vec<u64>) -> Self {
        Self::of_version(topic, source, spec, since, Vec::new())
    }

    /// The view of a version: `spec` from `since`, backfilled up to `backfill`.
    pub fn of_version(
        topic: &str,
        source: Source,
        spec: &ExpansionSpec,
        since: Vec<u64>,
        backfill: Vec<u64>,
    ) -> Self {
        let layout = layout_of(spec, source).ok();
        let typed = Typed::of(&spec.format);
        Self {
            topic: topic.to_owned(),
            target: format!("{}.{}", spec.namespace, spec.table),
            source_column: source.name().to_owned(),
            format: typed
                .as_ref()
                .map_or_else(|| spec.format.clone(), |t| t.format.name().to_owned()),
            subject: typed.map(|t| t.subject),
            schema: serde_json::from_str(&spec.schema).unwrap_or(Value::Null),
            flatten_path: spec.flatten_path,
            flatten_delimiter: spec.flatten_delimiter.clone(),
            copy_source_column: spec.copy_source_column,
            missing_values_output: spec.missing_values_output,
            excess_values_output: spec.excess_values_output,
            columns: layout
                .map(|l| l.columns().iter().map(|c| c.name.clone()).collect())
                .unwrap_or_default(),
            since,
            backfilled: (!backfill.is_empty()).then_some(backfill),
        }
    }
}

/// The source column named `name`.
pub fn source(name: &str) -> TableResult<Source> {
    name.parse().map_err(|_| {
        TableError::BadRequest(format!(
            "source_column must be \"value\" or \"key\", not {name:?}"
        ))
    })
}

/// Checks a namespace or table name: letters, digits, `_` and `-`, at most 255 bytes.
fn check_name(what: &str, name: &str) -> TableResult<()> {
    let ok = !name.is_empty()
        && name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(TableError::BadRequest(format!(
            "{what} {name:?} must be 1 to 255 letters, digits, '_' or '-'"
        )))
    }
}

/// Splits `namespace.table`, refusing `kafka_topics` (topic tables are the topics).
pub fn target(target: &str) -> TableResult<(String, String)> {
    let Some((namespace, table)) = target.split_once('.') else {
        return Err(TableError::BadRequest(format!(
            "target {target:?} must be \"<namespace>.<table>\""
        )));
    };
    check_name("namespace", namespace)?;
    check_name("table", table)?;
    if namespace == NAMESPACE {
        return Err(TableError::BadRequest(format!(
            "the target cannot be in {NAMESPACE}: its tables are the topics themselves; pick another namespace"
        )));
    }
    Ok((namespace.to_owned(), table.to_owned()))
}

/// Fills what a hand-written Iceberg type may leave out (field ids, `required`, list and
/// map element ids and `*-required`), numbering ids from `next`.
fn complete(v: &mut Value, next: &mut i64) {
    let Value::Object(o) = v else {
        return;
    };
    let mut id = |o: &mut serde_json::Map<String, Value>, key: &str| {
        if !o.contains_key(key) {
            *next += 1;
            o.insert(key.into(), Value::from(*next));
        }
    };
    match o.get("type").and_then(Value::as_str) {
        Some("struct") => {
            if let Some(Value::Array(fields)) = o.get_mut("fields") {
                for f in fields {
                    complete_field(f, next);
                }
            }
        }
        Some("list") => {
            id(o, "element-id");
            o.entry("element-required").or_insert(Value::Bool(false));
            if let Some(e) = o.get_mut("element") {
                complete(e, next);
            }
        }
        Some("map") => {
            id(o, "key-id");
            id(o, "value-id");
            o.entry("value-required").or_insert(Value::Bool(false));
            for k in ["key", "value"] {
                if let Some(e) = o.get_mut(k) {
                    complete(e, next);
                }
            }
        }
        _ => {}
    }
}

fn complete_field(f: &mut Value, next: &mut i64) {
    let Value::Object(o) = f else {
        return;
    };
    if !o.contains_key("id") {
        *next += 1;
        o.insert("id".into(), Value::from(*next));
    }
    o.entry("required").or_insert(Value::Bool(false));
    if let Some(t) = o.get_mut("type") {
        complete(t, next);
    }
}

/// Parses an Iceberg struct type (or a schema: its `schema-id` and
/// `identifier-field-ids` are ignored) from the REST catalog's JSON.
pub fn parse_struct(v: &Value) -> TableResult<StructType> {
    let Value::Object(o) = v else {
        return Err(TableError::BadRequest(
            "schema must be an Iceberg struct type: {\"type\": \"struct\", \"fields\": [...]}"
                .into(),
        ));
    };
    let mut v = Value::Object(
        o.iter()
            .filter(|(k, _)| k.as_str() == "type" || k.as_str() == "fields")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    );
    if let Value::Object(o) = &mut v {
        o.entry("type").or_insert(Value::from("struct"));
    }
    complete(&mut v, &mut 0);
    serde_json::from_value(v)
        .map_err(|e| TableError::BadRequest(format!("schema is not an Iceberg struct type: {e}")))
}

/// Parses one Iceberg struct field.
pub fn parse_field(v: &Value) -> TableResult<iceberg::spec::NestedFieldRef> {
    let s = parse_struct(&serde_json::json!({"type": "struct", "fields": [v]}))?;
    s.fields()
        .first()
        .cloned()
        .ok_or_else(|| TableError::BadRequest("empty field".into()))
}

/// The options of `spec`.
pub fn options(spec: &ExpansionSpec) -> Options {
    Options {
        flatten_path: spec.flatten_path,
        flatten_delimiter: spec.flatten_delimiter.clone(),
        copy_source_column: spec.copy_source_column,
        missing_values_output: spec.missing_values_output,
        excess_values_output: spec.excess_values_output,
    }
}

/// The layout a stored spec parses with.
pub fn layout_of(spec: &ExpansionSpec, source: Source) -> TableResult<Layout> {
    let schema: StructType = serde_json::from_str(&spec.schema)
        .map_err(|e| TableError::CorruptMetadata("expansion schema".into(), e.to_string()))?;
    Layout::new(&schema, source, &options(spec)).map_err(|e| TableError::BadRequest(e.to_string()))
}

/// The spec of a `PUT` body, checked (its layout builds).
pub fn spec_of(body: &PutBody) -> TableResult<(Source, ExpansionSpec)> {
    let source = source(&body.source_column)?;
    let (namespace, table) = target(&body.target)?;
    let format = if body.format.eq_ignore_ascii_case("json") {
        "json".to_owned()
    } else if let Some(t) = Typed::of(&body.format) {
        t.stored()
    } else {
        return Err(TableError::BadRequest(format!(
            "format {:?} is not supported: use \"json\", \"avro\", \"protobuf\" or \"json_schema\"",
            body.format
        )));
    };
    let schema = parse_struct(&body.schema)?;
    let spec = ExpansionSpec {
        namespace,
        table,
        format,
        schema: serde_json::to_string(&schema).map_err(|e| TableError::Task(e.to_string()))?,
        flatten_path: body.flatten_path,
        flatten_delimiter: body.flatten_delimiter.clone(),
        copy_source_column: body.copy_source_column,
        missing_values_output: body.missing_values_output,
        excess_values_output: body.excess_values_output,
    };
    layout_of(&spec, source)?;
    Ok((source, spec))
}

/// `spec` with its schema's top-level fields changed: `drop` by name (names it does not
/// have are returned), then `add` (a name it has is left as it is).
pub fn change_columns(
    spec: &ExpansionSpec,
    source: Source,
    add: &[iceberg::spec::NestedFieldRef],
    drop: &[String],
) -> TableResult<(ExpansionSpec, Vec<String>)> {
    let schema: StructType = serde_json::from_str(&spec.schema)
        .map_err(|e| TableError::CorruptMetadata("expansion schema".into(), e.to_string()))?;
    let mut fields: Vec<_> = schema.fields().to_vec();
    let mut absent = Vec::new();
    for name in drop {
        match fields.iter().position(|f| &f.name == name) {
            Some(i) => {
                fields.remove(i);
            }
            None => absent.push(name.clone()),
        }
    }
    for f in add {
        if !fields.iter().any(|g| g.name == f.name) {
            fields.push(f.clone());
        }
    }
    // Ids inside the stored schema mean nothing (the target assigns its own); keep them
    // distinct for the Iceberg type's sake.
    let renumbered = renumber(&StructType::new(fields));
    let next = ExpansionSpec {
        schema: serde_json::to_string(&renumbered).map_err(|e| TableError::Task(e.to_string()))?,
        ..spec.clone()
    };
    layout_of(&next, source)?;
    Ok((next, absent))
}

/// `s` with ids 1, 2, ... in depth-first order.
fn renumber(s: &StructType) -> StructType {
    let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
    strip_ids(&mut v);
    complete(&mut v, &mut 0);
    serde_json::from_value(v).unwrap_or_else(|_| s.clone())
}

fn strip_ids(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for k in ["id", "element-id", "key-id", "value-id"] {
                o.remove(k);
            }
            o.values_mut().for_each(strip_ids);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_ids),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_required_may_be_left_out() {
        let s = parse_struct(&serde_json::json!({
            "type": "struct",
            "fields": [
                {"name": "id", "type": "long"},
                {"name": "tags", "type": {"type": "list", "element": "string"}},
                {"name": "attrs", "type": {"type": "map", "key": "string", "value": "int"}},
                {"name": "after", "type": {"type": "struct", "fields": [{"name": "x", "type": "double"}]}}
            ]
        }))
        .unwrap();
        assert_eq!(s.fields().len(), 4);
        assert!(s.fields().iter().all(|f| !f.required));
        let schema = parse_struct(&serde_json::json!({
            "type": "struct", "schema-id": 3, "identifier-field-ids": [],
            "fields": [{"id": 7, "name": "a", "required": false, "type": "string"}]
        }))
        .unwrap();
        assert_eq!(schema.fields()[0].id, 7);
        assert!(parse_struct(&serde_json::json!([1])).is_err());
        assert!(
            parse_struct(
                &serde_json::json!({"type": "struct", "fields": [{"name": "a", "type": "varchar"}]})
            )
            .is_err()
        );
    }

    #[test]
    fn targets_are_checked() {
        assert_eq!(
            target("expanded.orders").unwrap(),
            ("expanded".to_owned(), "orders".to_owned())
        );
        for bad in [
            "orders",
            "kafka_topics.orders",
            ".x",
            "a.",
            "a.b.c",
            "a b.c",
        ] {
            assert!(target(bad).is_err(), "{bad}");
        }
    }
}
