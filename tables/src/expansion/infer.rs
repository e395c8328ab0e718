//! Proposing an expansion schema from a sample of a topic's records: each JSON value's
//! type, widened across the sample (an int and a float make a double; a field seen only
//! in some records is still a field; anything irreconcilable becomes a string), in the
//! REST catalog's JSON, ready for `PUT`. A field whose kinds disagree (a string among
//! numbers) is reported with what was seen, so the widening to string is not silent.

use std::collections::BTreeMap;

use catalog::TopicRecord;
use kafka_protocol::records::RecordBatchDecoder;
use serde_json::{Value, json};

use super::layout::Source;
use crate::seal::Tabler;
use crate::{TableError, TableResult};

/// What a sample of values looks like.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    /// Only nulls seen.
    Null,
    Bool,
    Long,
    Double,
    /// Strings, and whether every one was an RFC 3339 timestamp, a date, a UUID.
    String {
        timestamp: bool,
        date: bool,
        uuid: bool,
    },
    List(Box<Shape>),
    Struct(BTreeMap<String, Shape>),
    /// Kinds that do not widen into one another.
    Mixed,
}

fn of(v: &Value) -> Shape {
    match v {
        Value::Null => Shape::Null,
        Value::Bool(_) => Shape::Bool,
        Value::Number(n) if n.is_i64() || n.is_u64() && n.as_u64() <= Some(i64::MAX as u64) => {
            Shape::Long
        }
        Value::Number(_) => Shape::Double,
        Value::String(s) => Shape::String {
            timestamp: time::OffsetDateTime::parse(
                s,
                &time::format_description::well_known::Rfc3339,
            )
            .is_ok(),
            date: s.len() == 10
                && time::Date::parse(s, time::macros::format_description!("[year]-[month]-[day]"))
                    .is_ok(),
            uuid: s.len() == 36 && uuid::Uuid::parse_str(s).is_ok(),
        },
        Value::Array(a) => Shape::List(Box::new(a.iter().map(of).fold(Shape::Null, widen))),
        Value::Object(o) => Shape::Struct(o.iter().map(|(k, v)| (k.clone(), of(v))).collect()),
    }
}

fn widen(a: Shape, b: Shape) -> Shape {
    use Shape::*;
    match (a, b) {
        (Null, x) | (x, Null) => x,
        (Long, Double) | (Double, Long) => Double,
        (
            String {
                timestamp: t1,
                date: d1,
                uuid: u1,
            },
            String {
                timestamp: t2,
                date: d2,
                uuid: u2,
            },
        ) => String {
            timestamp: t1 && t2,
            date: d1 && d2,
            uuid: u1 && u2,
        },
        (List(x), List(y)) => List(Box::new(widen(*x, *y))),
        (Struct(mut x), Struct(y)) => {
            for (k, v) in y {
                let merged = match x.remove(&k) {
                    Some(old) => widen(old, v),
                    None => v,
                };
                x.insert(k, merged);
            }
            Struct(x)
        }
        (x, y) if x == y => x,
        _ => Mixed,
    }
}

/// The kind of a JSON value, as the disagreement report names it (none for null).
fn kind(v: &Value) -> Option<&'static str> {
    match v {
        Value::Null => None,
        Value::Bool(_) => Some("boolean"),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some("long"),
        Value::Number(_) => Some("double"),
        Value::String(_) => Some("string"),
        Value::Array(_) => Some("list"),
        Value::Object(_) => Some("struct"),
    }
}

/// Counts the kinds of every field of an object, by dotted path (into nested objects).
fn count_kinds(
    v: &Value,
    prefix: &str,
    counts: &mut BTreeMap<String, BTreeMap<&'static str, u64>>,
) {
    let Value::Object(o) = v else { return };
    for (k, x) in o {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        if let Some(kind) = kind(x) {
            *counts
                .entry(path.clone())
                .or_default()
                .entry(kind)
                .or_default() += 1;
        }
        count_kinds(x, &path, counts);
    }
}

/// The fields whose kinds do not widen into one type (a long and a double do), with the
/// count of each kind seen.
fn disagreements(counts: &BTreeMap<String, BTreeMap<&'static str, u64>>) -> Vec<Value> {
    counts
        .iter()
        .filter(|(_, kinds)| {
            kinds.len() > 1 && !kinds.keys().all(|k| matches!(*k, "long" | "double"))
        })
        .map(|(field, kinds)| json!({"field": field, "seen": kinds, "proposed": "string"}))
        .collect()
}

/// The Iceberg type JSON of a shape (ids are filled in by `spec::parse_struct`).
fn type_json(s: &Shape) -> Value {
    match s {
        Shape::Null | Shape::Mixed => json!("string"),
        Shape::Bool => json!("boolean"),
        Shape::Long => json!("long"),
        Shape::Double => json!("double"),
        Shape::String {
            timestamp: true, ..
        } => json!("timestamptz"),
        Shape::String { date: true, .. } => json!("date"),
        Shape::String { uuid: true, .. } => json!("uuid"),
        Shape::String { .. } => json!("string"),
        Shape::List(e) => json!({"type": "list", "element": type_json(e)}),
        Shape::Struct(fields) => json!({
            "type": "struct",
            "fields": fields
                .iter()
                .map(|(k, v)| json!({"name": k, "required": false, "type": type_json(v)}))
                .collect::<Vec<_>>()
        }),
    }
}

/// A proposed schema for `topic`'s `source` column from up to `sample` of its latest
/// records per partition (`schema`, ready for `PUT`), with how many records were read and
/// how many were not JSON objects, and the fields whose kinds disagreed (`disagreements`:
/// each with the count of every kind seen; such a field is proposed as a string).
pub async fn infer(
    tabler: &Tabler,
    topic: &str,
    source: Source,
    sample: usize,
) -> TableResult<Value> {
    let t: TopicRecord = tabler
        .catalog()
        .kafka()
        .topic(topic)
        .await?
        .ok_or_else(|| TableError::NotFound(format!("unknown topic: {topic}")))?;
    let catalog = tabler.catalog().clone();
    let (shape, read, not_json, counts) = crate::seal::blocking(move || {
        let mut shape = Shape::Null;
        let mut counts = BTreeMap::new();
        let (mut read, mut not_json) = (0u64, 0u64);
        for p in 0..t.partitions {
            let Some(st) = crate::seal::wait(catalog.kafka().partition(t.id, p))? else {
                continue;
            };
            let from = st
                .next_offset
                .saturating_sub(sample as u64)
                .max(st.log_start_offset);
            let mut pos = from;
            while pos < st.next_offset {
                let batches =
                    crate::seal::wait(catalog.kafka().read_batches(t.id, p, pos, 4 << 20))?;
                if batches.is_empty() {
                    break;
                }
                for b in &batches {
                    pos = pos.max(b.last_offset + 1);
                    let mut buf = b.bytes.clone();
                    let Ok(set) = RecordBatchDecoder::decode(&mut buf) else {
                        continue;
                    };
                    for r in set
                        .records
                        .iter()
                        .filter(|r| !r.control && r.offset >= from as i64)
                    {
                        let bytes = match source {
                            Source::Key => r.key.as_deref(),
                            Source::Value => r.value.as_deref(),
                        };
                        let Some(bytes) = bytes else { continue };
                        read += 1;
                        match serde_json::from_slice::<Value>(bytes) {
                            Ok(v @ Value::Object(_)) => {
                                count_kinds(&v, "", &mut counts);
                                shape = widen(shape, of(&v));
                            }
                            _ => not_json += 1,
                        }
                    }
                }
            }
        }
        Ok((shape, read, not_json, counts))
    })
    .await?;
    let schema = match &shape {
        Shape::Struct(_) => type_json(&shape),
        _ => json!({"type": "struct", "fields": []}),
    };
    let schema = super::spec::parse_struct(&schema)
        .ok()
        .and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or(schema);
    Ok(json!({
        "schema": schema,
        "sampled": read,
        "not_json_objects": not_json,
        "disagreements": disagreements(&counts),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_widen_across_the_sample() {
        let values = [
            json!({"id": 1, "price": 2, "at": "2026-12-01T10:00:00Z", "tags": ["a"], "x": {"a": 1}}),
            json!({"id": 2, "price": 2.5, "at": "2026-12-01T11:00:00+01:00", "tags": [], "x": {"b": true}, "extra": null}),
            json!({"id": "3", "price": 1, "at": "not a time", "x": {"a": 2}}),
        ];
        let shape = values.iter().map(of).fold(Shape::Null, widen);
        let t = type_json(&shape);
        let field = |name: &str| {
            t["fields"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["name"] == name)
                .unwrap()["type"]
                .clone()
        };
        assert_eq!(field("id"), json!("string"));
        assert_eq!(field("price"), json!("double"));
        assert_eq!(field("at"), json!("string"));
        assert_eq!(field("tags"), json!({"type": "list", "element": "string"}));
        assert_eq!(field("extra"), json!("string"));
        assert_eq!(field("x")["fields"].as_array().unwrap().len(), 2);
        let ts = [
            json!({"at": "2026-12-01T10:00:00Z", "d": "2026-12-01", "u": "67e55044-10b1-426f-9247-bb680e5fe0c8"}),
        ];
        let t = type_json(&ts.iter().map(of).fold(Shape::Null, widen));
        assert_eq!(t["fields"][0]["type"], json!("timestamptz"));
        assert_eq!(t["fields"][1]["type"], json!("date"));
        assert_eq!(t["fields"][2]["type"], json!("uuid"));
    }

    #[test]
    fn a_string_among_numbers_is_reported() {
        let mut counts = BTreeMap::new();
        for i in 0..12 {
            count_kinds(
                &json!({"n": i, "p": i as f64 / 2.0, "o": {"x": i}}),
                "",
                &mut counts,
            );
        }
        count_kinds(
            &json!({"n": "twelve", "p": 1, "o": {"x": true}}),
            "",
            &mut counts,
        );
        let d = disagreements(&counts);
        assert_eq!(
            d,
            vec![
                json!({"field": "n", "seen": {"long": 12, "string": 1}, "proposed": "string"}),
                json!({"field": "o.x", "seen": {"boolean": 1, "long": 12}, "proposed": "string"}),
            ]
        );
    }
}
