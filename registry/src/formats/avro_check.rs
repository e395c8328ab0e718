//! Whether bytes are exactly one Avro datum of a schema (Avro's binary encoding), checked
//! without building the value: what schema validation on produce asks of every record.
//!
//! Not `apache_avro::from_avro_datum`, for three measured or found reasons: per record it
//! resolves the schema's names again and allocates a tree of values (with it,
//! validation ran at 0.72x the produce MB/s of no validation, `bench/schema_validation.py`);
//! it has no bound on nesting, so a recursive schema and a record nesting deep enough
//! overflow the stack; and a block count of 2^62 items of a zero-byte type (null) keeps it
//! looping. Here nesting stops at [`MAX_DEPTH`] and items at a budget from the record's
//! length. The parsed schema (names resolved, logical types read) is apache-avro's.

use std::collections::HashMap;

use apache_avro::Schema;

/// Deepest nesting of a datum (records, arrays, maps, unions inside each other).
pub const MAX_DEPTH: usize = 64;

/// The named types (records, enums, fixed) a schema and its references define, by full
/// name, for the schema's `Ref`s.
#[derive(Debug, Default)]
pub struct Named(HashMap<String, Schema>);

impl Named {
    /// The named types of `schemas`, nested ones included.
    pub fn of<'a>(schemas: impl IntoIterator<Item = &'a Schema>) -> Self {
        let mut named = Named::default();
        for s in schemas {
            named.collect(s, 0);
        }
        named
    }

    /// The named type of full name `name`.
    pub fn get(&self, name: &str) -> Option<&Schema> {
        self.0.get(name)
    }

    fn collect(&mut self, s: &Schema, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match s {
            Schema::Record(r) => {
                self.0.insert(r.name.fullname(None), s.clone());
                for f in &r.fields {
                    self.collect(&f.schema, depth + 1);
                }
            }
            Schema::Enum(e) => {
                self.0.insert(e.name.fullname(None), s.clone());
            }
            Schema::Fixed(f) => {
                self.0.insert(f.name.fullname(None), s.clone());
            }
            Schema::Decimal(d) => self.collect(&d.inner, depth + 1),
            Schema::Array(a) => self.collect(&a.items, depth + 1),
            Schema::Map(m) => self.collect(&m.types, depth + 1),
            Schema::Union(u) => u.variants().iter().for_each(|v| self.collect(v, depth + 1)),
            _ => {}
        }
    }
}

/// `Ok` when `bytes` is one datum of `schema`, every byte used.
pub fn check(schema: &Schema, named: &Named, bytes: &[u8]) -> Result<(), String> {
    let mut c = Checker {
        named,
        cur: Cursor::new(bytes),
    };
    c.datum(schema, 0)?;
    c.cur.finish()
}

/// Reads Avro's binary encoding: the primitives, and array and map blocks within a
/// budget of items. Shared by the check here and by typed expansions, which write each
/// datum out as JSON.
pub struct Cursor<'a> {
    rest: &'a [u8],
    /// Items of arrays and maps the datum may still hold: at most a few per byte, and
    /// some slack for zero-byte items (nulls, empty records).
    items: u64,
}

impl<'a> Cursor<'a> {
    /// A cursor over one datum's bytes.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self {
            rest: bytes,
            items: (bytes.len() as u64).saturating_mul(4).saturating_add(1024),
        }
    }

    /// `Ok` when every byte was read.
    pub fn finish(&self) -> Result<(), String> {
        match self.rest.len() {
            0 => Ok(()),
            n => Err(format!("{n} bytes left after the datum")),
        }
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.rest.len() {
            return Err(format!("{n} bytes wanted, {} left", self.rest.len()));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    /// A zigzag varint long.
    pub fn long(&mut self) -> Result<i64, String> {
        let mut v: u64 = 0;
        for (i, shift) in (0..64).step_by(7).enumerate() {
            let &byte = self.rest.first().ok_or("a number is cut short")?;
            self.rest = &self.rest[1..];
            if i == 9 && byte > 1 {
                return Err("a number longer than 64 bits".into());
            }
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(((v >> 1) as i64) ^ -((v & 1) as i64));
            }
        }
        Err("a number longer than 64 bits".into())
    }

    /// An int (a long in an int's range).
    pub fn int(&mut self) -> Result<i32, String> {
        let v = self.long()?;
        i32::try_from(v).map_err(|_| format!("{v} is out of an int's range"))
    }

    /// A length-prefixed byte string.
    pub fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.long()?;
        let n = usize::try_from(n).map_err(|_| format!("a negative length {n}"))?;
        self.take(n)
    }

    /// A length-prefixed UTF-8 string.
    pub fn string(&mut self) -> Result<&'a str, String> {
        let b = self.bytes()?;
        std::str::from_utf8(b).map_err(|_| "a string that is not UTF-8".to_string())
    }

    /// The item count of the next array or map block (0: the last block was read): a
    /// count, negative when the block's byte size follows it, taken from the budget.
    pub fn block(&mut self) -> Result<u64, String> {
        let count = self.long()?;
        if count < 0 {
            self.long()?;
        }
        let count = count.unsigned_abs();
        self.items = self
            .items
            .checked_sub(count)
            .ok_or("more array or map items than the record's length allows")?;
        Ok(count)
    }
}

struct Checker<'a> {
    named: &'a Named,
    cur: Cursor<'a>,
}

impl Checker<'_> {
    /// Array or map blocks, `item` for each item.
    fn blocks(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<(), String>,
    ) -> Result<(), String> {
        loop {
            let count = self.cur.block()?;
            if count == 0 {
                return Ok(());
            }
            for _ in 0..count {
                item(self)?;
            }
        }
    }

    fn datum(&mut self, s: &Schema, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH}"));
        }
        match s {
            Schema::Null => Ok(()),
            Schema::Boolean => match self.cur.take(1)?[0] {
                0 | 1 => Ok(()),
                b => Err(format!("a boolean byte {b}")),
            },
            Schema::Int | Schema::Date | Schema::TimeMillis => self.cur.int().map(|_| ()),
            Schema::Long
            | Schema::TimeMicros
            | Schema::TimestampMillis
            | Schema::TimestampMicros
            | Schema::TimestampNanos
            | Schema::LocalTimestampMillis
            | Schema::LocalTimestampMicros
            | Schema::LocalTimestampNanos => self.cur.long().map(|_| ()),
            Schema::Float => self.cur.take(4).map(|_| ()),
            Schema::Double => self.cur.take(8).map(|_| ()),
            Schema::Bytes | Schema::BigDecimal => self.cur.bytes().map(|_| ()),
            Schema::String => self.cur.string().map(|_| ()),
            Schema::Uuid => {
                let b = self.cur.bytes()?;
                if b.len() == 16 || is_uuid_text(b) {
                    Ok(())
                } else {
                    Err("a uuid that is neither 16 bytes nor its text form".into())
                }
            }
            Schema::Fixed(f) => self.cur.take(f.size).map(|_| ()),
            Schema::Duration => self.cur.take(12).map(|_| ()),
            Schema::Decimal(d) => self.datum(&d.inner, depth + 1),
            Schema::Enum(e) => {
                let i = self.cur.long()?;
                if usize::try_from(i).is_ok_and(|i| i < e.symbols.len()) {
                    Ok(())
                } else {
                    Err(format!("enum index {i} of {} symbols", e.symbols.len()))
                }
            }
            Schema::Union(u) => {
                let i = self.cur.long()?;
                let v = usize::try_from(i)
                    .ok()
                    .and_then(|i| u.variants().get(i))
                    .ok_or_else(|| format!("union index {i} of {} branches", u.variants().len()))?;
                self.datum(v, depth + 1)
            }
            Schema::Array(a) => self.blocks(|c| c.datum(&a.items, depth + 1)),
            Schema::Map(m) => self.blocks(|c| {
                c.cur.string()?;
                c.datum(&m.types, depth + 1)
            }),
            Schema::Record(r) => r
                .fields
                .iter()
                .try_for_each(|f| self.datum(&f.schema, depth + 1)),
            Schema::Ref { name } => {
                let full = name.fullname(None);
                let target = self
                    .named
                    .0
                    .get(&full)
                    .ok_or_else(|| format!("the schema names an unknown type {full}"))?;
                self.datum(target, depth + 1)
            }
        }
    }
}

/// The 36-character text form of a UUID.
fn is_uuid_text(b: &[u8]) -> bool {
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use apache_avro::types::Record;

    fn order() -> Schema {
        Schema::parse_str(
            r#"{"type":"record","name":"Order","namespace":"shop","fields":[
              {"name":"id","type":"long"},{"name":"item","type":"string"},
              {"name":"note","type":["null","string"]},
              {"name":"tags","type":{"type":"array","items":"string"}},
              {"name":"attrs","type":{"type":"map","values":"double"}},
              {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"]}},
              {"name":"next","type":["null","Order"]}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn what_apache_avro_writes_checks_and_damage_does_not() {
        let schema = order();
        let named = Named::of([&schema]);
        let mut inner = Record::new(&schema).unwrap();
        inner.put("id", 2i64);
        inner.put("item", "cake");
        inner.put(
            "note",
            apache_avro::types::Value::Union(0, Box::new(apache_avro::types::Value::Null)),
        );
        inner.put("tags", apache_avro::types::Value::Array(vec![]));
        inner.put("attrs", apache_avro::types::Value::Map(Default::default()));
        inner.put("kind", apache_avro::types::Value::Enum(1, "B".into()));
        inner.put(
            "next",
            apache_avro::types::Value::Union(0, Box::new(apache_avro::types::Value::Null)),
        );
        let mut outer = Record::new(&schema).unwrap();
        outer.put("id", 1i64);
        outer.put("item", "tea");
        outer.put(
            "note",
            apache_avro::types::Value::Union(1, Box::new("hot".into())),
        );
        outer.put(
            "tags",
            apache_avro::types::Value::Array(vec!["a".into(), "b".into()]),
        );
        outer.put(
            "attrs",
            apache_avro::types::Value::Map([("x".to_string(), 1.5f64.into())].into()),
        );
        outer.put("kind", apache_avro::types::Value::Enum(0, "A".into()));
        outer.put(
            "next",
            apache_avro::types::Value::Union(1, Box::new(inner.into())),
        );
        let bytes = apache_avro::to_avro_datum(&schema, outer).unwrap();
        assert_eq!(check(&schema, &named, &bytes), Ok(()));
        // Every cut is refused, and so is a byte more.
        for n in 0..bytes.len() {
            assert!(check(&schema, &named, &bytes[..n]).is_err(), "cut at {n}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(
            check(&schema, &named, &longer)
                .unwrap_err()
                .contains("left after")
        );
    }

    #[test]
    fn deep_nesting_and_huge_counts_stop() {
        let schema = order();
        let named = Named::of([&schema]);
        // id, item "", note null, no tags, no attrs, kind A, next: another Order ... 100 deep.
        let mut deep = Vec::new();
        for _ in 0..100 {
            deep.extend_from_slice(&[0, 0, 0, 0, 0, 0, 2]);
        }
        assert!(
            check(&schema, &named, &deep)
                .unwrap_err()
                .contains("nested deeper")
        );
        let nulls = Schema::parse_str(r#"{"type":"array","items":"null"}"#).unwrap();
        // A block of 2^62 nulls in 9 bytes.
        let huge = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
        let err = check(&nulls, &Named::default(), &huge).unwrap_err();
        assert!(err.contains("items"), "{err}");
    }
}
