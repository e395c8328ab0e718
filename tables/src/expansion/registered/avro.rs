//! Avro records as expansion rows: the columns a record schema gives (records -> structs,
//! arrays -> lists, maps, enums -> strings, unions with null -> the other branch, other
//! unions -> a struct of one field per branch, the one written set), logical types ->
//! Iceberg's), and each
//! record's binary datum, read with its writer's schema, written out as the JSON
//! document the expansion's parser reads. The parser then resolves the writer's fields
//! against the table's columns by name, as it does for any JSON: a field the table lacks
//! counts in `_excess_values`, a column the writer lacks in `_missing_values`, a value of
//! another type is null with `_parse_error`.
//!
//! Reading is `registry::formats::avro_check`'s `Cursor` (its bounds on nesting and
//! items, for the same reasons), writing instead of only checking.

use apache_avro::Schema;
use apache_avro::schema::UnionSchema;
use base64::Engine as _;
use registry::formats::avro_check::{Cursor, MAX_DEPTH, Named};
use serde_json::{Value, json};

use super::text;

/// The Iceberg struct type (as the REST catalog's JSON) of a record schema's fields.
pub fn columns(schema: &Schema, named: &Named) -> Result<Value, String> {
    let mut path = Vec::new();
    let root = resolve(schema, named)?;
    match root {
        Schema::Record(_) => ty(root, named, &mut path, 0),
        other => Err(format!(
            "the schema is {}, not a record: only a record's fields become columns",
            branch_name(other)
        )),
    }
}

/// A `Ref` as the type it names.
fn resolve<'a>(s: &'a Schema, named: &'a Named) -> Result<&'a Schema, String> {
    match s {
        Schema::Ref { name } => {
            let full = name.fullname(None);
            named
                .get(&full)
                .ok_or_else(|| format!("type {full} is not defined"))
        }
        other => Ok(other),
    }
}

/// Whether values of `s` are always null (the field has no column, and no key in the
/// document).
fn void(s: &Schema) -> bool {
    match s {
        Schema::Null => true,
        Schema::Union(u) => u.variants().iter().all(|v| matches!(v, Schema::Null)),
        _ => false,
    }
}

/// The name a union's branch of type `s` has as a field of its struct.
fn branch_name(s: &Schema) -> String {
    match s {
        Schema::Record(r) => r.name.name.clone(),
        Schema::Enum(e) => e.name.name.clone(),
        Schema::Fixed(f) => f.name.name.clone(),
        Schema::Ref { name } => name.name.clone(),
        Schema::Null => "null".into(),
        Schema::Boolean => "boolean".into(),
        Schema::Int => "int".into(),
        Schema::Long => "long".into(),
        Schema::Float => "float".into(),
        Schema::Double => "double".into(),
        Schema::Bytes => "bytes".into(),
        Schema::String => "string".into(),
        Schema::Array(_) => "array".into(),
        Schema::Map(_) => "map".into(),
        Schema::Union(_) => "union".into(),
        Schema::Decimal(_) | Schema::BigDecimal => "decimal".into(),
        Schema::Uuid => "uuid".into(),
        Schema::Date => "date".into(),
        Schema::TimeMillis => "time_millis".into(),
        Schema::TimeMicros => "time_micros".into(),
        Schema::TimestampMillis => "timestamp_millis".into(),
        Schema::TimestampMicros => "timestamp_micros".into(),
        Schema::TimestampNanos => "timestamp_nanos".into(),
        Schema::LocalTimestampMillis => "local_timestamp_millis".into(),
        Schema::LocalTimestampMicros => "local_timestamp_micros".into(),
        Schema::LocalTimestampNanos => "local_timestamp_nanos".into(),
        Schema::Duration => "duration".into(),
    }
}

/// The non-null branches of a union.
fn branches(u: &UnionSchema) -> impl Iterator<Item = &Schema> {
    u.variants().iter().filter(|v| !matches!(v, Schema::Null))
}

fn ty(s: &Schema, named: &Named, path: &mut Vec<String>, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("types nest deeper than {MAX_DEPTH}"));
    }
    Ok(match s {
        Schema::Null => return Err("a null type has no column".into()),
        Schema::Boolean => json!("boolean"),
        Schema::Int => json!("int"),
        Schema::Long | Schema::TimestampNanos | Schema::LocalTimestampNanos => json!("long"),
        Schema::Float => json!("float"),
        Schema::Double => json!("double"),
        Schema::Bytes | Schema::BigDecimal => json!("binary"),
        Schema::String | Schema::Enum(_) => json!("string"),
        Schema::Uuid => json!("uuid"),
        Schema::Date => json!("date"),
        // Microseconds since midnight: Spark refuses to load any table holding Iceberg's
        // `time` ("Spark does not support time fields"), which would hide every column.
        Schema::TimeMillis | Schema::TimeMicros => json!("long"),
        Schema::TimestampMillis | Schema::TimestampMicros => json!("timestamptz"),
        Schema::LocalTimestampMillis | Schema::LocalTimestampMicros => json!("timestamp"),
        Schema::Duration => json!("fixed[12]"),
        Schema::Fixed(f) => json!(format!("fixed[{}]", f.size)),
        Schema::Decimal(d) if d.precision <= 38 => {
            json!(format!("decimal({},{})", d.precision, d.scale))
        }
        // Wider than Iceberg's decimals: the exact text.
        Schema::Decimal(_) => json!("string"),
        Schema::Array(a) => {
            if void(&a.items) {
                return Err("an array of nulls has no column".into());
            }
            json!({"type": "list", "element": ty(&a.items, named, path, depth + 1)?})
        }
        Schema::Map(m) => {
            if void(&m.types) {
                return Err("a map of nulls has no column".into());
            }
            json!({"type": "map", "key": "string", "value": ty(&m.types, named, path, depth + 1)?})
        }
        Schema::Union(u) => {
            let mut b: Vec<&Schema> = branches(u).collect();
            match b.len() {
                0 => return Err("a union of nulls has no column".into()),
                1 => return ty(b.remove(0), named, path, depth),
                _ => {
                    let mut fields = Vec::with_capacity(b.len());
                    let mut names: Vec<String> = Vec::with_capacity(b.len());
                    for v in b {
                        let name = branch_name(v);
                        if names.contains(&name) {
                            return Err(format!("a union has two branches named {name}"));
                        }
                        fields.push(json!({"name": name, "type": ty(v, named, path, depth + 1)?}));
                        names.push(name);
                    }
                    json!({"type": "struct", "fields": fields})
                }
            }
        }
        Schema::Record(r) => {
            let full = r.name.fullname(None);
            if path.contains(&full) {
                return Err(format!(
                    "record {full} contains itself: a recursive type has no table column"
                ));
            }
            path.push(full);
            let mut fields = Vec::with_capacity(r.fields.len());
            for f in &r.fields {
                if void(&f.schema) {
                    continue;
                }
                fields
                    .push(json!({"name": f.name, "type": ty(&f.schema, named, path, depth + 1)?}));
            }
            path.pop();
            if fields.is_empty() {
                return Err(format!(
                    "record {} has no field that is not null",
                    r.name.name
                ));
            }
            json!({"type": "struct", "fields": fields})
        }
        Schema::Ref { .. } => ty(resolve(s, named)?, named, path, depth)?,
    })
}

/// Writes the datum `bytes` of `schema` (every byte used) as a JSON document into `out`.
pub fn to_json(
    schema: &Schema,
    named: &Named,
    bytes: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let mut w = Writer {
        named,
        cur: Cursor::new(bytes),
        out,
    };
    w.datum(schema, 0)?;
    w.cur.finish()
}

struct Writer<'a, 'o> {
    named: &'a Named,
    /// The datum being read (Avro's encoding, as the registry's check reads it).
    cur: Cursor<'a>,
    out: &'o mut Vec<u8>,
}

impl Writer<'_, '_> {
    fn number(&mut self, v: impl std::fmt::Display) {
        use std::io::Write as _;
        let _ = write!(self.out, "{v}");
    }

    fn quoted(&mut self, s: &str) {
        // Writing into a Vec does not fail.
        let _ = serde_json::to_writer(&mut *self.out, s);
    }

    fn base64(&mut self, b: &[u8]) {
        self.out.push(b'"');
        let start = self.out.len();
        let n = base64::encoded_len(b.len(), true).unwrap_or(0);
        self.out.resize(start + n, 0);
        let _ = base64::engine::general_purpose::STANDARD.encode_slice(b, &mut self.out[start..]);
        self.out.push(b'"');
    }

    /// A float that JSON cannot write (NaN, infinities) as a string, which no numeric
    /// column takes: the value is null and the row marked, not silently null.
    fn float(&mut self, v: f64, text: impl std::fmt::Display) {
        if v.is_finite() {
            self.number(text);
        } else {
            self.quoted(&format!("{v}"));
        }
    }

    /// Array or map blocks, `item` for each item (told whether it is the first).
    fn blocks(
        &mut self,
        mut item: impl FnMut(&mut Self, bool) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut first = true;
        loop {
            let count = self.cur.block()?;
            if count == 0 {
                return Ok(());
            }
            for _ in 0..count {
                item(self, first)?;
                first = false;
            }
        }
    }

    fn datum(&mut self, s: &Schema, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH}"));
        }
        match s {
            Schema::Null => self.out.extend_from_slice(b"null"),
            Schema::Boolean => match self.cur.take(1)?[0] {
                0 => self.out.extend_from_slice(b"false"),
                1 => self.out.extend_from_slice(b"true"),
                b => return Err(format!("a boolean byte {b}")),
            },
            Schema::Int | Schema::Date => {
                let v = self.cur.int()?;
                self.number(v);
            }
            // A time's column holds microseconds.
            Schema::TimeMillis => {
                let v = i64::from(self.cur.int()?) * 1000;
                self.number(v);
            }
            // The parser takes a number for a timestamp as milliseconds.
            Schema::Long
            | Schema::TimeMicros
            | Schema::TimestampMillis
            | Schema::LocalTimestampMillis
            | Schema::TimestampNanos
            | Schema::LocalTimestampNanos => {
                let v = self.cur.long()?;
                self.number(v);
            }
            Schema::TimestampMicros | Schema::LocalTimestampMicros => {
                let v = self.cur.long()?;
                self.quoted(&text::timestamp_micros(v));
            }
            Schema::Float => {
                let b = self.cur.take(4)?;
                let v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                self.float(f64::from(v), v);
            }
            Schema::Double => {
                let b = self.cur.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                let v = f64::from_le_bytes(a);
                self.float(v, v);
            }
            Schema::Bytes | Schema::BigDecimal => {
                let b = self.cur.bytes()?;
                self.base64(b);
            }
            Schema::String => {
                let v = self.cur.string()?;
                self.quoted(v);
            }
            Schema::Uuid => {
                let b = self.cur.bytes()?;
                match <[u8; 16]>::try_from(b) {
                    Ok(raw) => self.quoted(&uuid::Uuid::from_bytes(raw).hyphenated().to_string()),
                    Err(_) => {
                        let t = std::str::from_utf8(b).map_err(|_| "a uuid that is not UTF-8")?;
                        self.quoted(t);
                    }
                }
            }
            Schema::Fixed(f) => {
                let b = self.cur.take(f.size)?;
                self.base64(b);
            }
            Schema::Duration => {
                let b = self.cur.take(12)?;
                self.base64(b);
            }
            Schema::Decimal(d) => {
                let b = match d.inner.as_ref() {
                    Schema::Fixed(f) => self.cur.take(f.size)?,
                    _ => self.cur.bytes()?,
                };
                let scale = u32::try_from(d.scale).unwrap_or(u32::MAX);
                match text::decimal(b, scale) {
                    Some(t) => self.quoted(&t),
                    // Past i128: a string no decimal column takes (null, row marked).
                    None => self.quoted("out of range"),
                }
            }
            Schema::Enum(e) => {
                let i = self.cur.long()?;
                let symbol = usize::try_from(i)
                    .ok()
                    .and_then(|i| e.symbols.get(i))
                    .ok_or_else(|| format!("enum index {i} of {} symbols", e.symbols.len()))?;
                self.quoted(symbol);
            }
            Schema::Union(u) => {
                let i = self.cur.long()?;
                let v = usize::try_from(i)
                    .ok()
                    .and_then(|i| u.variants().get(i))
                    .ok_or_else(|| format!("union index {i} of {} branches", u.variants().len()))?;
                if matches!(v, Schema::Null) || branches(u).nth(1).is_none() {
                    self.datum(v, depth + 1)?;
                } else {
                    // Every branch's field, the others null: a branch not taken is not a
                    // missing value.
                    self.out.push(b'{');
                    for (n, b) in branches(u).enumerate() {
                        if n > 0 {
                            self.out.push(b',');
                        }
                        self.quoted(&branch_name(b));
                        self.out.push(b':');
                        if std::ptr::eq(b, v) {
                            self.datum(v, depth + 1)?;
                        } else {
                            self.out.extend_from_slice(b"null");
                        }
                    }
                    self.out.push(b'}');
                }
            }
            Schema::Array(a) => {
                self.out.push(b'[');
                self.blocks(|w, first| {
                    if !first {
                        w.out.push(b',');
                    }
                    w.datum(&a.items, depth + 1)
                })?;
                self.out.push(b']');
            }
            Schema::Map(m) => {
                self.out.push(b'{');
                self.blocks(|w, first| {
                    if !first {
                        w.out.push(b',');
                    }
                    let k = w.cur.string()?;
                    w.quoted(k);
                    w.out.push(b':');
                    w.datum(&m.types, depth + 1)
                })?;
                self.out.push(b'}');
            }
            Schema::Record(r) => {
                self.out.push(b'{');
                let mut first = true;
                for f in &r.fields {
                    if void(&f.schema) {
                        // No column and no key; a union of nulls still has an index.
                        if let Schema::Union(u) = &f.schema {
                            let i = self.cur.long()?;
                            if usize::try_from(i).map_or(true, |i| i >= u.variants().len()) {
                                return Err(format!(
                                    "union index {i} of {} branches",
                                    u.variants().len()
                                ));
                            }
                        }
                        continue;
                    }
                    if !first {
                        self.out.push(b',');
                    }
                    first = false;
                    self.quoted(&f.name);
                    self.out.push(b':');
                    self.datum(&f.schema, depth + 1)?;
                }
                self.out.push(b'}');
            }
            Schema::Ref { .. } => {
                let named = self.named;
                self.datum(resolve(s, named)?, depth + 1)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use apache_avro::types::Value as Avro;

    use super::*;

    const SCHEMA: &str = r#"{"type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"},
        {"name": "qty", "type": "int"},
        {"name": "ok", "type": "boolean"},
        {"name": "ratio", "type": "float"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "PAID"]}},
        {"name": "note", "type": ["null", "string"], "default": null},
        {"name": "either", "type": ["long", "string"]},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "gone", "type": "null"},
        {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
            {"name": "name", "type": "string"}]}},
        {"name": "buyer", "type": "Customer"}
    ]}"#;

    fn parsed() -> (Schema, Named) {
        let s = Schema::parse_str(SCHEMA).unwrap();
        let named = Named::of([&s]);
        (s, named)
    }

    #[test]
    fn a_record_maps_to_iceberg_types() {
        let (s, named) = parsed();
        let cols = columns(&s, &named).unwrap();
        let types: Vec<(String, Value)> = cols["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["name"].as_str().unwrap().to_owned(), f["type"].clone()))
            .collect();
        let ty = |n: &str| types.iter().find(|(m, _)| m == n).map(|(_, t)| t.clone());
        assert_eq!(ty("id"), Some(json!("long")));
        assert_eq!(ty("price"), Some(json!("decimal(9,2)")));
        assert_eq!(ty("day"), Some(json!("date")));
        assert_eq!(ty("at"), Some(json!("timestamptz")));
        assert_eq!(ty("uid"), Some(json!("uuid")));
        assert_eq!(ty("state"), Some(json!("string")));
        assert_eq!(ty("note"), Some(json!("string")));
        assert_eq!(
            ty("either"),
            Some(json!({"type": "struct", "fields": [
                {"name": "long", "type": "long"}, {"name": "string", "type": "string"}]}))
        );
        assert_eq!(ty("gone"), None, "a null field has no column");
        assert_eq!(ty("buyer"), ty("customer"), "a reference is its type");
        assert_eq!(
            ty("attrs"),
            Some(json!({"type": "map", "key": "string", "value": "long"}))
        );
    }

    #[test]
    fn a_datum_becomes_the_json_the_parser_reads() {
        let (s, named) = parsed();
        let customer = Avro::Record(vec![("name".into(), Avro::String("Ada".into()))]);
        let datum = Avro::Record(vec![
            ("id".into(), Avro::Long(7)),
            ("qty".into(), Avro::Int(-2)),
            ("ok".into(), Avro::Boolean(true)),
            ("ratio".into(), Avro::Float(0.5)),
            (
                "price".into(),
                Avro::Decimal(apache_avro::Decimal::from(vec![0x30, 0x39])),
            ),
            ("day".into(), Avro::Date(19_000)),
            ("at".into(), Avro::TimestampMicros(1_700_000_000_123_456)),
            (
                "uid".into(),
                Avro::Uuid(uuid::Uuid::parse_str("6f1c1f4e-2d2b-4c1e-9a43-0d3a4f1e2b3c").unwrap()),
            ),
            ("state".into(), Avro::Enum(1, "PAID".into())),
            ("note".into(), Avro::Union(0, Box::new(Avro::Null))),
            (
                "either".into(),
                Avro::Union(1, Box::new(Avro::String("x\"y".into()))),
            ),
            ("tags".into(), Avro::Array(vec![Avro::String("a".into())])),
            (
                "attrs".into(),
                Avro::Map([("k".to_owned(), Avro::Long(1))].into_iter().collect()),
            ),
            ("gone".into(), Avro::Null),
            ("customer".into(), customer.clone()),
            ("buyer".into(), customer),
        ]);
        let bytes = apache_avro::to_avro_datum(&s, datum).unwrap();
        let mut out = Vec::new();
        to_json(&s, &named, &bytes, &mut out).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v,
            json!({"id": 7, "qty": -2, "ok": true, "ratio": 0.5, "price": "123.45",
                "day": 19000, "at": "2023-11-14T22:13:20.123456",
                "uid": "6f1c1f4e-2d2b-4c1e-9a43-0d3a4f1e2b3c", "state": "PAID", "note": null,
                "either": {"long": null, "string": "x\"y"}, "tags": ["a"], "attrs": {"k": 1},
                "customer": {"name": "Ada"}, "buyer": {"name": "Ada"}})
        );
        // Cut short, or with bytes left over: not a datum.
        assert!(to_json(&s, &named, &bytes[..bytes.len() - 1], &mut Vec::new()).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(to_json(&s, &named, &longer, &mut Vec::new()).is_err());
    }

    #[test]
    fn recursive_types_are_refused() {
        let s = Schema::parse_str(
            r#"{"type": "record", "name": "Node", "fields": [
                {"name": "next", "type": ["null", "Node"]}]}"#,
        )
        .unwrap();
        let named = Named::of([&s]);
        assert!(columns(&s, &named).unwrap_err().contains("itself"));
    }
}
