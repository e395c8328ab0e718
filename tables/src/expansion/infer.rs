//! Proposing an expansion schema from a sample of a topic's records: each JSON value's
//! type, widened across the sample (an int and a float make a double; a field seen only
//! in some records is still a field; anything irreconcilable becomes a string), in the
//! REST catalog's JSON, ready for `PUT`.

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
/// how many were not JSON objects.
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
    let (shape, read, not_json) = crate::seal::blocking(move || {
        let mut shape = Shape::Null;
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
                            Ok(v @ Value::Object(_)) => shape = widen(shape, of(&v)),
                            _ => not_json += 1,
                        }
                    }
                }
            }
        }
        Ok((shape, read, not_json))
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
    Ok(json!({"schema": schema, "sampled": read, "not_json_objects": not_json}))
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
}
