//! Record bytes into Arrow record batches of an expansion's target table.
//!
//! One pass of jiter's pull parser per record, guided by the schema: each JSON value is
//! converted as it is read and appended to the buffers of its column, a tree of
//! [`Node`]s shaped like the schema. Nothing is allocated per record beyond the growth of
//! those buffers. A node's length tells whether a struct field was already written for
//! the current object (a duplicate key), and every node can be truncated back to a
//! length, so a record that turns out not to be JSON is rolled back cleanly.
//!
//! Arrays are built at [`Expander::finish`] from the target schema's own fields, so their
//! data types (nested names, nullability, field-id metadata) are exactly the target's.
//!
//! Beyond the documented row and type rules, some choices of this implementation:
//! - A map value that does not fit its type is a null value (the entry stays); a key
//!   that does not convert drops the entry. Int and long keys follow JSON's integer
//!   grammar, so `"01"` or `"+1"` do not convert.
//! - A repeated key in a map object keeps the last entry, like a struct field, and takes
//!   back what the earlier value added to `_missing_values` and `_excess_values`.
//! - A number that overflows a double (`1e400`) does not fit `double`, as for `float`.
//! - Skipped values (excess keys, mismatches) nest at most jiter's recursion limit (200)
//!   below where they start; the schema bounds the depth of everything else.
//! - The counters count missing and excess values whether or not their columns are
//!   output, and only for rows that are JSON objects.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray, Float32Array,
    Float64Array, Int32Array, Int64Array, LargeBinaryArray, ListArray, MapArray, RecordBatch,
    RecordBatchOptions, StringArray, StructArray, Time64MicrosecondArray,
    TimestampMicrosecondArray, new_null_array,
};
use arrow::buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, FieldRef, Fields, SchemaRef, TimeUnit};
use arrow::error::ArrowError;
use iceberg::spec::{PrimitiveType, Type};
use jiter::{Jiter, JiterError, Peek};

use super::layout::{Layout, Shape, TreeField};
use crate::{TableError, TableResult};

mod node;
mod scalar;

use node::*;
use scalar::*;

/// Per batch: rows pushed, rows with `_parse_error` = 1, schema fields found missing, JSON
/// fields in excess.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    /// Rows pushed.
    pub rows: u64,
    /// Rows whose `_parse_error` is 1.
    pub parse_errors: u64,
    /// Schema fields absent from the records (the sum of `_missing_values`, counted
    /// whether or not that column is output).
    pub missing: u64,
    /// JSON keys the schema does not name (the sum of `_excess_values`, likewise).
    pub excess: u64,
}

/// The record is not JSON, or not a JSON object: the whole row is null.
#[derive(Debug)]
struct NotJson;

impl From<JiterError> for NotJson {
    fn from(_: JiterError) -> Self {
        NotJson
    }
}

/// What one record's parse found, besides its values.
#[derive(Debug, Default)]
struct Row {
    /// A value did not fit its type, or a key repeated.
    mismatch: bool,
    missing: u64,
    excess: u64,
}

/// Offsets and bytes of a string or binary column; `offsets` starts with 0.
#[derive(Debug)]
struct Bytes {
    offsets: Vec<usize>,
    bytes: Vec<u8>,
}

impl Bytes {
    fn new() -> Self {
        Self {
            offsets: vec![0],
            bytes: Vec::new(),
        }
    }

    fn value(&self, i: usize) -> &[u8] {
        &self.bytes[self.offsets[i]..self.offsets[i + 1]]
    }
}

/// The fields of a struct, or of a flattened struct (the root of the schema is one).
#[derive(Debug)]
struct StructNode {
    /// JSON names, in schema order.
    names: Vec<Box<str>>,
    children: Vec<Node>,
    /// Name lookup for wide structs; narrow ones are scanned.
    index: Option<HashMap<Box<str>, usize>>,
    /// What each field's value added to the row's missing and excess counts in the
    /// current object, to take back when a later duplicate replaces it. A struct node
    /// has at most one object open at a time (the schema is a tree), so one slot per
    /// field is enough.
    contrib: Vec<(u64, u64)>,
    /// The Arrow fields (empty for a flattened struct).
    fields: Fields,
}

/// Structs with more fields than this look names up in a hash map.
const SCAN_FIELDS: usize = 16;

impl StructNode {
    fn new(names: Vec<Box<str>>, children: Vec<Node>, fields: Fields) -> Self {
        let index = (names.len() > SCAN_FIELDS).then(|| {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), i))
                .collect()
        });
        Self {
            contrib: vec![(0, 0); names.len()],
            names,
            children,
            index,
            fields,
        }
    }

    /// The field named `key`; `hint` is tried first, since JSON keys mostly come in
    /// schema order.
    fn lookup(&self, key: &str, hint: usize) -> Option<usize> {
        if self.names.get(hint).is_some_and(|n| **n == *key) {
            return Some(hint);
        }
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self.names.iter().position(|n| **n == *key),
        }
    }
}

#[derive(Debug)]
struct ListNode {
    /// Element offsets, starting with 0.
    offsets: Vec<usize>,
    child: Box<Node>,
    field: FieldRef,
}

#[derive(Debug)]
struct MapNode {
    /// Entry offsets, starting with 0.
    offsets: Vec<usize>,
    /// String, int or long; never null.
    keys: Box<Node>,
    values: Box<Node>,
    /// The `key_value` struct field.
    entries: FieldRef,
    entry_fields: Fields,
    ordered: bool,
    /// Per entry of the current object: what its value added to the missing and excess
    /// counts (see [`StructNode::contrib`]).
    contrib: Vec<(u64, u64)>,
    /// Scratch of the duplicate check.
    order: Vec<usize>,
    dups: Vec<usize>,
}

/// A column's buffers, by the rule its values are read with.
#[derive(Debug)]
enum Data {
    Bool(Vec<bool>),
    Int(Vec<i32>),
    Long(Vec<i64>),
    Float(Vec<f32>),
    Double(Vec<f64>),
    Decimal {
        precision: u8,
        scale: i8,
        values: Vec<i128>,
    },
    /// Days since the epoch.
    Date(Vec<i32>),
    /// Microseconds since midnight.
    Time(Vec<i64>),
    /// Microseconds since the epoch (timestamp and timestamptz).
    Timestamp(Vec<i64>),
    String(Bytes),
    Binary(Bytes),
    Fixed {
        width: usize,
        bytes: Vec<u8>,
    },
    Uuid(Vec<u8>),
    Struct(StructNode),
    List(ListNode),
    Map(Box<MapNode>),
}

/// One column (or nested field) being built.
#[derive(Debug)]
struct Node {
    /// The target's data type.
    dt: DataType,
    /// A flattened struct: no column of its own, its fields are columns.
    flat: bool,
    /// Validity per slot (unused when `flat`).
    valid: Vec<bool>,
    data: Data,
}

fn schema_error(message: String) -> TableError {
    TableError::Arrow(ArrowError::SchemaError(message))
}

/// Builds the rows of an expansion's target table from records.
#[derive(Debug)]
pub struct Expander {
    target: SchemaRef,
    /// The schema's fields: a flattened struct whose columns are the layout's first.
    root: Node,
    /// The layout's other columns: the source copy, `_missing_values`,
    /// `_excess_values` (those three when asked), `_parse_error`, `_kafka_partition`, `_offset`,
    /// `_timestamp`.
    system: Vec<Node>,
    copy_source: bool,
    missing_output: bool,
    excess_output: bool,
    /// Per target column, the layout column that fills it.
    fills: Vec<Option<usize>>,
    rows: usize,
    bytes: usize,
    counters: Counters,
    /// jiter's buffer for strings with escapes, kept across records.
    tape: Vec<u8>,
}

impl Expander {
    /// Rows for `target` (the target table's current Arrow schema, from
    /// `schema_to_arrow_schema`). A target column named like one of `layout.columns()`
    /// is filled, and must have the Arrow type that column's Iceberg type maps to (names
    /// and nullability included, field ids not); every other target column is all nulls
    /// (it belongs to another version of the expansion) and must be nullable.
    pub fn new(layout: &Layout, target: SchemaRef) -> TableResult<Self> {
        Self::build_for(layout, target, None)
    }

    /// The same for a target whose schema a later version of the expansion evolved
    /// (`schema`, the target's current Iceberg schema): a column the layout has in an
    /// older type (a struct before it gained fields, an int before it became a long) is
    /// read in the target's type, as the table's readers read older files.
    pub fn for_evolved(
        layout: &Layout,
        target: SchemaRef,
        schema: &iceberg::spec::Schema,
    ) -> TableResult<Self> {
        Self::build_for(layout, target, Some(schema))
    }

    fn build_for(
        layout: &Layout,
        target: SchemaRef,
        evolved: Option<&iceberg::spec::Schema>,
    ) -> TableResult<Self> {
        let columns = layout.columns();
        let mut fills = vec![None; target.fields().len()];
        let mut types: Vec<Option<DataType>> = vec![None; columns.len()];
        for (t, field) in target.fields().iter().enumerate() {
            match columns.iter().position(|c| c.name == *field.name()) {
                Some(c) => {
                    fills[t] = Some(c);
                    types[c] = Some(field.data_type().clone());
                }
                None if !field.is_nullable() => {
                    return Err(schema_error(format!(
                        "target column {} is required, but the expansion leaves it null",
                        field.name()
                    )));
                }
                None => {}
            }
            if fills[t].is_some() && !field.is_nullable() {
                return Err(schema_error(format!(
                    "target column {} is required, but expansion columns are optional",
                    field.name()
                )));
            }
        }
        let mut nodes = Vec::with_capacity(columns.len());
        for (column, dt) in columns.iter().zip(types) {
            let node = match dt {
                Some(dt) => Node::build(&column.ty, &dt)
                    .or_else(|| {
                        let f = evolved?.as_struct().field_by_name(&column.name)?;
                        Node::build(&f.field_type, &dt)
                    })
                    .ok_or_else(|| {
                    schema_error(format!(
                        "target column {} has type {dt}, which the expansion's type {} does not map to",
                        column.name, column.ty
                    ))
                })?,
                // Not in the target: parsed all the same (the counts depend on it), in
                // the type the iceberg crate would give it, and dropped.
                None => {
                    let dt = iceberg::arrow::type_to_arrow_type(&column.ty)?;
                    Node::build(&column.ty, &dt).ok_or_else(|| {
                        TableError::Task(format!("no Arrow form for column {}", column.name))
                    })?
                }
            };
            nodes.push(Some(node));
        }
        let root = tree_node(layout.tree(), &mut nodes)?;
        let system = nodes[layout.expansion_columns()..]
            .iter_mut()
            .map(|n| {
                n.take()
                    .ok_or_else(|| TableError::Task("expansion system column missing".into()))
            })
            .collect::<TableResult<Vec<_>>>()?;
        let options = layout.options();
        Ok(Self {
            target,
            root,
            system,
            copy_source: options.copy_source_column,
            missing_output: options.missing_values_output,
            excess_output: options.excess_values_output,
            fills,
            rows: 0,
            bytes: 0,
            counters: Counters::default(),
            tape: Vec::new(),
        })
    }

    /// One record: its source bytes (None for a tombstone / null key), partition, offset,
    /// timestamp in ms since the epoch.
    pub fn push(&mut self, source: Option<&[u8]>, partition: i32, offset: i64, timestamp_ms: i64) {
        self.push_document(source, source.map(Some), partition, offset, timestamp_ms);
    }

    /// One record whose JSON document is not its bytes (a typed expansion transcodes
    /// them): `document` is `None` for a tombstone, `Some(None)` for a record that could
    /// not be read (every column null, `_parse_error` 1), else the document. The source
    /// copy is `source`.
    pub fn push_document(
        &mut self,
        source: Option<&[u8]>,
        document: Option<Option<&[u8]>>,
        partition: i32,
        offset: i64,
        timestamp_ms: i64,
    ) {
        let row_index = self.rows;
        self.rows += 1;
        self.counters.rows += 1;
        self.bytes += source.map_or(0, <[u8]>::len);
        let parsed = match document {
            None => None,
            Some(None) => Some(Err(NotJson)),
            Some(Some(bytes)) => Some(self.parse(bytes, row_index)),
        };
        // (parse error, missing and excess counts)
        let (error, counts) = match parsed {
            None => {
                self.root.push_null();
                (false, None)
            }
            Some(Ok(row)) => (row.mismatch, Some((row.missing, row.excess))),
            Some(Err(NotJson)) => {
                self.root.truncate(row_index);
                self.root.push_null();
                (true, None)
            }
        };
        self.counters.parse_errors += u64::from(error);
        if let Some((missing, excess)) = counts {
            self.counters.missing += missing;
            self.counters.excess += excess;
        }
        let count = |n: u64| i32::try_from(n).unwrap_or(i32::MAX);
        let mut system = self.system.iter_mut();
        let mut next = || system.next();
        if self.copy_source
            && let Some(Node {
                data: Data::Binary(b),
                valid,
                ..
            }) = next()
        {
            b.bytes.extend_from_slice(source.unwrap_or_default());
            b.offsets.push(b.bytes.len());
            valid.push(source.is_some());
        }
        if self.missing_output
            && let Some(n) = next()
        {
            push_int(n, counts.map(|(m, _)| count(m)));
        }
        if self.excess_output
            && let Some(n) = next()
        {
            push_int(n, counts.map(|(_, e)| count(e)));
        }
        if let Some(n) = next() {
            push_int(n, Some(i32::from(error)));
        }
        if let Some(n) = next() {
            push_int(n, Some(partition));
        }
        if let Some(n) = next() {
            push_long(n, offset);
        }
        if let Some(n) = next() {
            push_long(n, timestamp_ms.saturating_mul(1000));
        }
    }

    /// Parses one record into the expansion columns, at row `row_index`.
    fn parse(&mut self, bytes: &[u8], row_index: usize) -> Result<Row, NotJson> {
        let mut j = Jiter::with_tape(bytes, std::mem::take(&mut self.tape));
        let result = document(&mut self.root, &mut j, row_index);
        self.tape = j.into_tape();
        result
    }

    /// Rows pushed since the last finish.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no row was pushed since the last finish.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Bytes of source data pushed since the last finish (to bound file sizes).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The rows pushed so far as one batch, and their counters; the expander is empty
    /// afterwards and can be reused (also when this fails).
    pub fn finish(&mut self) -> TableResult<(RecordBatch, Counters)> {
        let rows = std::mem::take(&mut self.rows);
        self.bytes = 0;
        let counters = std::mem::take(&mut self.counters);
        let batch = self.build(rows);
        if batch.is_err() {
            // Whatever was not taken yet.
            self.root.truncate(0);
            for node in &mut self.system {
                node.truncate(0);
            }
        }
        Ok((batch?, counters))
    }

    fn build(&mut self, rows: usize) -> TableResult<RecordBatch> {
        let mut columns = Vec::with_capacity(self.fills.len());
        self.root.columns(&mut columns)?;
        for node in &mut self.system {
            columns.push(node.finish()?);
        }
        let mut out = Vec::with_capacity(self.fills.len());
        for (fill, field) in self.fills.iter().zip(self.target.fields()) {
            out.push(match fill.and_then(|c| columns.get(c)) {
                Some(array) => array.clone(),
                None => new_null_array(field.data_type(), rows),
            });
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            self.target.clone(),
            out,
            &options,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Debug;

    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{
        ArrowPrimitiveType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type,
        Int64Type, Time64MicrosecondType, TimestampMicrosecondType,
    };
    use iceberg::spec::{ListType, MapType, NestedField, NestedFieldRef, Schema, StructType};
    use serde_json::{Value, json};

    use super::*;
    use crate::expansion::{Options, Source};

    use crate::expansion::fuzzing::{list, map, opt, p, st};

    fn int() -> Type {
        p(PrimitiveType::Int)
    }
    fn long() -> Type {
        p(PrimitiveType::Long)
    }
    fn string() -> Type {
        p(PrimitiveType::String)
    }

    fn flat() -> Options {
        Options {
            flatten_path: true,
            ..Options::default()
        }
    }

    fn counted() -> Options {
        Options {
            missing_values_output: true,
            excess_values_output: true,
            ..Options::default()
        }
    }

    /// `ty` with every nested id moved by `by`.
    fn shift_ids(ty: &Type, by: i32) -> Type {
        let field = |f: &NestedFieldRef| {
            let mut f = f.as_ref().clone();
            f.id += by;
            f.field_type = Box::new(shift_ids(&f.field_type, by));
            Arc::new(f)
        };
        match ty {
            Type::Primitive(_) => ty.clone(),
            Type::Struct(s) => {
                Type::Struct(StructType::new(s.fields().iter().map(field).collect()))
            }
            Type::List(l) => Type::List(ListType::new(field(&l.element_field))),
            Type::Map(m) => Type::Map(MapType::new(field(&m.key_field), field(&m.value_field))),
        }
    }

    /// The Iceberg schema of a layout's columns, with ids other than the layout's (the
    /// target table assigns its own).
    fn iceberg_schema(layout: &Layout) -> Schema {
        let fields = layout
            .columns()
            .iter()
            .enumerate()
            .map(|(i, c)| {
                NestedField::optional(i as i32 + 1001, &c.name, shift_ids(&c.ty, 1000)).into()
            })
            .collect::<Vec<_>>();
        Schema::builder()
            .with_schema_id(0)
            .with_fields(fields)
            .build()
            .unwrap()
    }

    fn target(layout: &Layout) -> SchemaRef {
        Arc::new(iceberg::arrow::schema_to_arrow_schema(&iceberg_schema(layout)).unwrap())
    }

    struct Run {
        batch: RecordBatch,
        counters: Counters,
        rows: Vec<serde_json::Map<String, Value>>,
    }

    impl Run {
        /// Row `i` as JSON without the record's partition, offset and timestamp.
        fn data(&self, i: usize) -> Value {
            let mut row = self.rows[i].clone();
            for c in ["_kafka_partition", "_offset", "_timestamp"] {
                row.remove(c);
            }
            Value::Object(row)
        }

        fn column(&self, name: &str) -> &ArrayRef {
            self.batch.column_by_name(name).unwrap()
        }

        fn errors(&self) -> Vec<i64> {
            self.rows
                .iter()
                .map(|r| r["_parse_error"].as_i64().unwrap())
                .collect()
        }
    }

    /// Whether arrow's JSON writer takes the type (it wants string map keys).
    fn json_able(dt: &DataType) -> bool {
        match dt {
            DataType::Struct(fields) => fields.iter().all(|f| json_able(f.data_type())),
            DataType::List(f) => json_able(f.data_type()),
            DataType::Map(entries, _) => match entries.data_type() {
                DataType::Struct(kv) => {
                    kv[0].data_type() == &DataType::Utf8 && json_able(kv[1].data_type())
                }
                _ => false,
            },
            _ => true,
        }
    }

    /// The rows as JSON objects, with explicit nulls (columns of maps with int or long
    /// keys left out).
    fn to_json(batch: &RecordBatch) -> Vec<serde_json::Map<String, Value>> {
        let keep: Vec<usize> = (0..batch.num_columns())
            .filter(|&i| json_able(batch.schema().field(i).data_type()))
            .collect();
        let batch = batch.project(&keep).unwrap();
        let batch = &batch;
        let mut w = arrow::json::WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, arrow::json::writer::JsonArray>(Vec::new());
        w.write(batch).unwrap();
        w.finish().unwrap();
        let text = w.into_inner();
        if text.is_empty() {
            return Vec::new();
        }
        serde_json::from_slice(&text).unwrap()
    }

    fn run_bytes(fields: Vec<NestedFieldRef>, options: &Options, records: &[Option<&[u8]>]) -> Run {
        let layout = Layout::new(&StructType::new(fields), Source::Value, options).unwrap();
        let mut e = Expander::new(&layout, target(&layout)).unwrap();
        for (i, r) in records.iter().enumerate() {
            e.push(*r, 0, i as i64, 1_000 + i as i64);
        }
        assert_eq!(e.len(), records.len());
        let (batch, counters) = e.finish().unwrap();
        assert!(e.is_empty());
        let rows = to_json(&batch);
        Run {
            batch,
            counters,
            rows,
        }
    }

    fn run(fields: Vec<NestedFieldRef>, options: &Options, records: &[&str]) -> Run {
        let records: Vec<Option<&[u8]>> = records.iter().map(|r| Some(r.as_bytes())).collect();
        run_bytes(fields, options, &records)
    }

    /// Column `v` of type `ty` after `{"v": case}` for each case, and each row's
    /// `_parse_error`.
    fn values(ty: Type, cases: &[&str]) -> (ArrayRef, Vec<i64>) {
        let records: Vec<String> = cases.iter().map(|c| format!("{{\"v\": {c}}}")).collect();
        let records: Vec<&str> = records.iter().map(String::as_str).collect();
        let r = run(vec![opt("v", ty)], &counted(), &records);
        for row in &r.rows {
            assert_eq!(row["_missing_values"], json!(0));
            assert_eq!(row["_excess_values"], json!(0));
        }
        (r.column("v").clone(), r.errors())
    }

    /// Each case's value, `None` meaning a mismatch (null and `_parse_error` = 1).
    fn check<T: ArrowPrimitiveType>(ty: Type, cases: &[(&str, Option<T::Native>)])
    where
        T::Native: PartialEq + Debug,
    {
        let texts: Vec<&str> = cases.iter().map(|c| c.0).collect();
        let (column, errors) = values(ty, &texts);
        let column = column.as_primitive::<T>();
        for (i, (text, want)) in cases.iter().enumerate() {
            let got = column.is_valid(i).then(|| column.value(i));
            assert_eq!(got, *want, "value of {text}");
            assert_eq!(
                errors[i],
                i64::from(want.is_none()),
                "parse error of {text}"
            );
        }
    }

    /// Like [`check`] for the binary-like types.
    fn check_bytes(ty: Type, cases: &[(&str, Option<&[u8]>)]) {
        let texts: Vec<&str> = cases.iter().map(|c| c.0).collect();
        let (column, errors) = values(ty, &texts);
        for (i, (text, want)) in cases.iter().enumerate() {
            let got = column.is_valid(i).then(|| match column.data_type() {
                DataType::LargeBinary => column.as_binary::<i64>().value(i).to_vec(),
                DataType::FixedSizeBinary(_) => column.as_fixed_size_binary().value(i).to_vec(),
                DataType::Utf8 => column.as_string::<i32>().value(i).as_bytes().to_vec(),
                other => panic!("{other}"),
            });
            assert_eq!(got.as_deref(), *want, "value of {text}");
            assert_eq!(
                errors[i],
                i64::from(want.is_none()),
                "parse error of {text}"
            );
        }
    }

    #[test]
    fn boolean() {
        let (column, errors) = values(
            p(PrimitiveType::Boolean),
            &["true", "false", "1", "\"true\"", "null"],
        );
        let column = column.as_boolean();
        assert!(column.value(0));
        assert!(!column.value(1));
        assert!(column.is_null(2) && column.is_null(3) && column.is_null(4));
        assert_eq!(errors, [0, 0, 1, 1, 0]);
    }

    #[test]
    fn int_and_long() {
        check::<Int32Type>(
            int(),
            &[
                ("1", Some(1)),
                ("-0", Some(0)),
                ("-2147483648", Some(i32::MIN)),
                ("2147483647", Some(i32::MAX)),
                ("2147483648", None),
                ("-2147483649", None),
                ("1.0", None),
                ("1e3", None),
                ("\"1\"", None),
                ("true", None),
                ("[1]", None),
                ("{\"a\": 1}", None),
            ],
        );
        check::<Int64Type>(
            long(),
            &[
                ("9223372036854775807", Some(i64::MAX)),
                ("-9223372036854775808", Some(i64::MIN)),
                ("42", Some(42)),
                ("9223372036854775808", None),
                ("-9223372036854775809", None),
                ("1.0", None),
                ("1e3", None),
                ("1E3", None),
                ("\"5\"", None),
            ],
        );
    }

    #[test]
    fn float_and_double() {
        check::<Float32Type>(
            p(PrimitiveType::Float),
            &[
                ("1", Some(1.0)),
                ("1.5", Some(1.5)),
                ("-2.5e3", Some(-2500.0)),
                ("0.1", Some(0.1)),
                ("3.4e38", Some(3.4e38)),
                ("1e-50", Some(0.0)),
                ("1e39", None),
                ("-1e39", None),
                ("\"1.5\"", None),
                ("false", None),
            ],
        );
        check::<Float64Type>(
            p(PrimitiveType::Double),
            &[
                ("1", Some(1.0)),
                ("0.1", Some(0.1)),
                ("1.5e300", Some(1.5e300)),
                ("-12345678901234567890", Some(-12345678901234567890.0)),
                ("1e400", None),
                ("\"1\"", None),
            ],
        );
    }

    #[test]
    fn decimal() {
        let d = |precision, scale| p(PrimitiveType::Decimal { precision, scale });
        check::<Decimal128Type>(
            d(5, 2),
            &[
                ("123.45", Some(12345)),
                ("\"123.45\"", Some(12345)),
                ("-1.5", Some(-150)),
                ("1.50", Some(150)),
                ("1.500", Some(150)),
                ("\"1e2\"", Some(10000)),
                ("1E+2", Some(10000)),
                ("12e-1", Some(120)),
                ("\"+1.5\"", Some(150)),
                ("0", Some(0)),
                ("\"-0.00\"", Some(0)),
                ("999.99", Some(99999)),
                ("\"007.10\"", Some(710)),
                ("0.000000", Some(0)),
                ("1.234", None),
                ("1234.5", None),
                ("1000", None),
                ("\"abc\"", None),
                ("\"1.\"", None),
                ("\".5\"", None),
                ("\"1e\"", None),
                ("\" 1\"", None),
                ("\"1.5 \"", None),
                ("\"1,5\"", None),
                ("\"NaN\"", None),
                ("\"--1\"", None),
                ("true", None),
                ("[1]", None),
            ],
        );
        let nines = "9".repeat(38);
        let big = format!("\"{}\"", "9".repeat(39));
        check::<Decimal128Type>(
            d(38, 0),
            &[
                (&nines, Some(10i128.pow(38) - 1)),
                (&format!("-{nines}"), Some(1 - 10i128.pow(38))),
                ("1e37", Some(10i128.pow(37))),
                ("0e999999999999999999", Some(0)),
                ("12345678901234567890123.000", Some(12345678901234567890123)),
                (&big, None),
                ("1e38", None),
                ("1e-999999999999999999", None),
                ("1e999999999999999999", None),
            ],
        );
        check::<Decimal128Type>(d(3, 3), &[("0.123", Some(123)), ("1.0", None)]);
    }

    #[test]
    fn string_type() {
        check_bytes(
            string(),
            &[
                ("\"x\"", Some(b"x")),
                ("\"\"", Some(b"")),
                ("\"a\\nb\\\"\"", Some(b"a\nb\"")),
                ("\"\\u00e9t\\u00e9\"", Some("été".as_bytes())),
                ("\"\u{1F600}\"", Some("\u{1F600}".as_bytes())),
                ("1", None),
                ("true", None),
                ("[]", None),
                ("{}", None),
            ],
        );
    }

    #[test]
    fn binary_and_fixed() {
        check_bytes(
            p(PrimitiveType::Binary),
            &[
                ("\"AQID\"", Some(&[1, 2, 3])),
                ("\"\"", Some(&[])),
                ("\"AQ==\"", Some(&[1])),
                ("\"\\/w==\"", Some(&[0xff])),
                ("\"AQ\"", None),
                ("\"AQ=\"", None),
                ("\"!!!!\"", None),
                ("\"AQID\\n\"", None),
                ("\"AQ-_\"", None),
                ("12", None),
                ("[1]", None),
            ],
        );
        check_bytes(
            p(PrimitiveType::Fixed(3)),
            &[
                ("\"AQID\"", Some(&[1, 2, 3])),
                ("\"AQI=\"", None),
                ("\"AQIDBA==\"", None),
                ("\"\"", None),
                ("3", None),
                ("\"AQID\"", Some(&[1, 2, 3])),
            ],
        );
    }

    #[test]
    fn uuid_type() {
        let u = uuid::Uuid::parse_str("67e55044-10b1-426f-9247-bb680e5fe0c8").unwrap();
        check_bytes(
            p(PrimitiveType::Uuid),
            &[
                (
                    "\"67e55044-10b1-426f-9247-bb680e5fe0c8\"",
                    Some(u.as_bytes()),
                ),
                (
                    "\"67E55044-10B1-426F-9247-BB680E5FE0C8\"",
                    Some(u.as_bytes()),
                ),
                ("\"67e5504410b1426f9247bb680e5fe0c8\"", None),
                ("\"{67e55044-10b1-426f-9247-bb680e5fe0c8}\"", None),
                ("\"urn:uuid:67e55044-10b1-426f-9247-bb680e5fe0c8\"", None),
                ("\"67e55044-10b1-426f-9247-bb680e5fe0cx\"", None),
                ("\"67e55044-10b1-426f-9247bbb680e5fe0c8\"", None),
                ("1", None),
            ],
        );
    }

    #[test]
    fn date() {
        assert_eq!(
            time::macros::date!(1970 - 01 - 01).to_julian_day(),
            UNIX_EPOCH_JULIAN_DAY
        );
        check::<Date32Type>(
            p(PrimitiveType::Date),
            &[
                ("\"1970-01-01\"", Some(0)),
                ("\"2024-02-29\"", Some(19782)),
                ("\"1969-12-31\"", Some(-1)),
                ("\"0001-01-01\"", Some(-719162)),
                ("19782", Some(19782)),
                ("-1", Some(-1)),
                ("\"2023-02-29\"", None),
                ("\"2024-2-29\"", None),
                ("\"2024-02-29T00:00:00\"", None),
                ("\"24-02-29\"", None),
                ("\"2024-13-01\"", None),
                ("\"2024-00-01\"", None),
                ("\"2024-01-32\"", None),
                ("\"2024/01/01\"", None),
                ("1.5", None),
                ("2147483648", None),
                ("true", None),
            ],
        );
    }

    #[test]
    fn time_of_day() {
        check::<Time64MicrosecondType>(
            p(PrimitiveType::Time),
            &[
                ("\"00:00:00\"", Some(0)),
                ("\"12:34:56\"", Some(45_296_000_000)),
                ("\"12:34:56.123456\"", Some(45_296_123_456)),
                ("\"12:34:56.1\"", Some(45_296_100_000)),
                ("\"23:59:59.999999\"", Some(86_399_999_999)),
                ("0", Some(0)),
                ("86399999999", Some(86_399_999_999)),
                ("86400000000", None),
                ("-1", None),
                ("\"24:00:00\"", None),
                ("\"12:60:00\"", None),
                ("\"12:34:60\"", None),
                ("\"12:34:56.1234567\"", None),
                ("\"12:34\"", None),
                ("\"12:34:56.\"", None),
                ("\"12:34:56Z\"", None),
                ("\"1:34:56\"", None),
                ("1.5", None),
            ],
        );
    }

    #[test]
    fn timestamps() {
        let t = time::macros::datetime!(2024-01-02 03:04:05 UTC).unix_timestamp() * 1_000_000;
        assert_eq!(t, 1_704_164_645_000_000);
        let cases: &[(&str, Option<i64>)] = &[
            ("\"2024-01-02T03:04:05\"", Some(t)),
            ("\"2024-01-02 03:04:05\"", Some(t)),
            ("\"2024-01-02T03:04:05.5\"", Some(t + 500_000)),
            ("\"2024-01-02T03:04:05.123456Z\"", Some(t + 123_456)),
            ("\"2024-01-02T03:04:05Z\"", Some(t)),
            ("\"2024-01-02T04:04:05+01:00\"", Some(t)),
            ("\"2024-01-01T22:04:05.25-05:00\"", Some(t + 250_000)),
            ("\"2024-01-02 03:34:05+00:30\"", Some(t)),
            ("1704164645000", Some(t)),
            ("-1", Some(-1000)),
            ("\"1969-12-31T23:59:59.999999Z\"", Some(-1)),
            ("\"2024-01-02T03:04\"", None),
            ("\"2024-01-02T03:04:05+0100\"", None),
            ("\"2024-01-02T03:04:05+01\"", None),
            ("\"2024-01-02T03:04:05+24:00\"", None),
            ("\"2024-01-02t03:04:05\"", None),
            ("\"2024-01-02T03:04:05z\"", None),
            ("\"2024-01-02T03:04:05.1234567\"", None),
            ("\"2024-01-02T03:04:05 \"", None),
            ("\"2024-01-02\"", None),
            ("\"2024-02-30T03:04:05\"", None),
            ("1.5", None),
            ("9223372036854775807", None),
            ("true", None),
        ];
        check::<TimestampMicrosecondType>(p(PrimitiveType::Timestamp), cases);
        check::<TimestampMicrosecondType>(p(PrimitiveType::Timestamptz), cases);
    }

    #[test]
    fn json_null_is_null_for_every_type_and_not_missing() {
        for ty in [
            p(PrimitiveType::Boolean),
            int(),
            long(),
            p(PrimitiveType::Float),
            p(PrimitiveType::Double),
            p(PrimitiveType::Decimal {
                precision: 9,
                scale: 2,
            }),
            p(PrimitiveType::Date),
            p(PrimitiveType::Time),
            p(PrimitiveType::Timestamp),
            p(PrimitiveType::Timestamptz),
            string(),
            p(PrimitiveType::Uuid),
            p(PrimitiveType::Fixed(4)),
            p(PrimitiveType::Binary),
            st(vec![opt("a", int())]),
            list(int()),
            map(PrimitiveType::String, int()),
        ] {
            let (column, errors) = values(ty.clone(), &["null"]);
            assert!(column.is_null(0), "{ty}");
            assert_eq!(errors, [0], "{ty}");
        }
    }

    #[test]
    fn nested_struct_list_map() {
        let fields = vec![
            opt("s", st(vec![opt("a", int()), opt("b", string())])),
            opt("l", list(int())),
            opt("m", map(PrimitiveType::String, int())),
        ];
        let r = run(
            fields,
            &counted(),
            &[
                r#"{"s": {"a": 1, "b": "x"}, "l": [1, null, 3], "m": {"k": 1, "n": null}}"#,
                r#"{"s": {"a": "x", "b": "y"}, "l": [1, "x", 3], "m": {"a": 1, "b": "x"}}"#,
                r#"{"s": [], "l": {}, "m": []}"#,
                r#"{"s": {}, "l": [], "m": {}}"#,
            ],
        );
        assert_eq!(
            r.data(0),
            json!({"s": {"a": 1, "b": "x"}, "l": [1, null, 3], "m": {"k": 1, "n": null},
                "_missing_values": 0, "_excess_values": 0, "_parse_error": 0})
        );
        // A mismatch nulls just that leaf, element or entry value.
        assert_eq!(
            r.data(1),
            json!({"s": {"a": null, "b": "y"}, "l": [1, null, 3], "m": {"a": 1, "b": null},
                "_missing_values": 0, "_excess_values": 0, "_parse_error": 1})
        );
        // Containers of the wrong JSON kind are null as a whole.
        assert_eq!(
            r.data(2),
            json!({"s": null, "l": null, "m": null,
                "_missing_values": 0, "_excess_values": 0, "_parse_error": 1})
        );
        assert_eq!(
            r.data(3),
            json!({"s": {"a": null, "b": null}, "l": [], "m": {},
                "_missing_values": 2, "_excess_values": 0, "_parse_error": 0})
        );
        assert_eq!(
            r.counters,
            Counters {
                rows: 4,
                parse_errors: 2,
                missing: 2,
                excess: 0
            }
        );
    }

    #[test]
    fn structs_in_lists_and_maps_count_per_element() {
        let item = st(vec![opt("a", int()), opt("l", list(string()))]);
        let fields = vec![
            opt("items", list(item.clone())),
            opt("by", map(PrimitiveType::String, item)),
        ];
        let r = run(
            fields,
            &counted(),
            &[
                r#"{"items": [{"a": 1, "l": ["x"]}, {"b": 2}, null, {"a": 3, "l": null, "c": {"d": 1}}],
                    "by": {"k1": {"a": 1, "l": []}, "k2": {}, "k3": {"a": 1, "l": [], "y": 2}}}"#,
            ],
        );
        assert_eq!(
            r.data(0),
            json!({
                "items": [{"a": 1, "l": ["x"]}, {"a": null, "l": null}, null, {"a": 3, "l": null}],
                "by": {"k1": {"a": 1, "l": []}, "k2": {"a": null, "l": null}, "k3": {"a": 1, "l": []}},
                // items[1] lacks a and l, by.k2 lacks a and l.
                "_missing_values": 4,
                // items[1].b, items[3].c (not descended into), by.k3.y.
                "_excess_values": 3,
                "_parse_error": 0,
            })
        );
    }

    #[test]
    fn map_keys_convert_to_int_and_long() {
        let r = run(
            vec![
                opt("m", map(PrimitiveType::Int, string())),
                opt("n", map(PrimitiveType::Long, string())),
            ],
            &Options::default(),
            &[
                r#"{"m": {"1": "a", "x": "b", "01": "c", "-5": "d", "2147483648": "e", "1.0": "f"},
                    "n": {"9223372036854775807": "max", "-9223372036854775808": "min"}}"#,
                r#"{"m": {"7": "g"}, "n": {}}"#,
            ],
        );
        assert_eq!(r.errors(), [1, 0]);
        let m = r.column("m").as_map();
        let keys = m.keys().as_primitive::<Int32Type>();
        let values = m.values().as_string::<i32>();
        assert_eq!(keys.values(), &[1, -5, 7]);
        assert_eq!(
            values.iter().collect::<Vec<_>>(),
            [Some("a"), Some("d"), Some("g")]
        );
        assert_eq!(m.value_offsets(), &[0, 2, 3]);
        let n = r.column("n").as_map();
        assert_eq!(
            n.keys().as_primitive::<Int64Type>().values(),
            &[i64::MAX, i64::MIN]
        );
    }

    #[test]
    fn missing_and_excess_values() {
        let fields = vec![
            opt("id", long()),
            opt("after", st(vec![opt("id", long()), opt("name", string())])),
            opt("tags", list(string())),
        ];
        let r = run(
            fields,
            &counted(),
            &[
                r#"{}"#,
                r#"{"id": 1, "after": null, "tags": null}"#,
                r#"{"id": 1, "after": {}, "tags": []}"#,
                r#"{"id": 1, "after": {"id": 1, "name": "x", "extra": {"deep": {"a": 1}}}, "tags": [], "more": 1}"#,
                r#"{"after": 5}"#,
                r#"{"ID": 1, "After": {}, "id": 2}"#,
            ],
        );
        let counts: Vec<(Value, Value, Value)> = r
            .rows
            .iter()
            .map(|r| {
                (
                    r["_missing_values"].clone(),
                    r["_excess_values"].clone(),
                    r["_parse_error"].clone(),
                )
            })
            .collect();
        assert_eq!(
            counts,
            [
                // An absent struct counts 1, not its fields.
                (json!(3), json!(0), json!(0)),
                // A null struct counts 0.
                (json!(0), json!(0), json!(0)),
                (json!(2), json!(0), json!(0)),
                // An excess value is not descended into.
                (json!(0), json!(2), json!(0)),
                // A mismatched struct: its fields are not counted.
                (json!(2), json!(0), json!(1)),
                // Names are case-sensitive.
                (json!(2), json!(2), json!(0)),
            ]
        );
        assert_eq!(r.data(5)["id"], json!(2));
        assert_eq!(r.data(5)["after"], Value::Null);
        assert_eq!(
            r.counters,
            Counters {
                rows: 6,
                parse_errors: 1,
                missing: 9,
                excess: 4
            }
        );
    }

    #[test]
    fn debezium_envelope_excess() {
        let row = st(vec![opt("id", long()), opt("email", string())]);
        let fields = vec![
            opt("op", string()),
            opt("ts_ms", long()),
            opt("before", row.clone()),
            opt("after", row),
        ];
        let envelope = r#"{"before": null, "after": {"id": 1, "email": "a@b"},
            "source": {"version": "2.5", "db": "inventory", "ts_ms": 1},
            "op": "c", "ts_ms": 1700000000000, "ts_us": 1700000000000000, "ts_ns": 1700000000000000000}"#;
        for options in [
            counted(),
            Options {
                flatten_path: true,
                ..counted()
            },
        ] {
            let r = run(fields.clone(), &options, &[envelope]);
            assert_eq!(r.rows[0]["_excess_values"], json!(3));
            assert_eq!(r.rows[0]["_missing_values"], json!(0));
            assert_eq!(r.rows[0]["_parse_error"], json!(0));
            assert_eq!(r.rows[0]["op"], json!("c"));
        }
        let r = run(fields, &flat(), &[envelope]);
        assert_eq!(
            r.data(0),
            json!({"op": "c", "ts_ms": 1700000000000i64, "before__id": null, "before__email": null,
                "after__id": 1, "after__email": "a@b", "_parse_error": 0})
        );
    }

    #[test]
    fn duplicate_keys_last_wins() {
        let fields = vec![
            opt("a", int()),
            opt("s", st(vec![opt("x", int()), opt("y", int())])),
            opt("l", list(int())),
            opt("m", map(PrimitiveType::String, st(vec![opt("x", int())]))),
        ];
        let r = run(
            fields,
            &counted(),
            &[
                r#"{"a": 1, "a": 2}"#,
                r#"{"s": {"x": 1, "z": 0}, "s": {"x": 2, "y": 3}, "a": 1, "l": [], "m": {}}"#,
                r#"{"l": [1, 2], "a": 1, "l": [3], "s": null, "m": null}"#,
                r#"{"m": {"k": {}, "j": {"x": 1}, "k": {"x": 2}}, "a": 1, "s": null, "l": null}"#,
                r#"{"s": {"x": 1, "x": "bad", "y": 2}, "a": null, "l": null, "m": null}"#,
                r#"{"a": 1, "s": null, "l": [1, 2], "m": {"k": {"x": 1}}, "l": ["x", 3]}"#,
            ],
        );
        assert_eq!(r.errors(), [1, 1, 1, 1, 1, 1]);
        assert_eq!(r.data(0)["a"], json!(2));
        // The first `s` lacked y and had z: both taken back with it.
        assert_eq!(r.data(1)["s"], json!({"x": 2, "y": 3}));
        assert_eq!(r.data(1)["_missing_values"], json!(0));
        assert_eq!(r.data(1)["_excess_values"], json!(0));
        assert_eq!(r.data(2)["l"], json!([3]));
        assert_eq!(r.data(2)["_missing_values"], json!(0));
        // In a map, the earlier entry goes (with what it counted).
        assert_eq!(r.data(3)["m"], json!({"j": {"x": 1}, "k": {"x": 2}}));
        assert_eq!(r.data(3)["_missing_values"], json!(0));
        // The last value wins even when it is a mismatch.
        assert_eq!(r.data(4)["s"], json!({"x": null, "y": 2}));
        assert_eq!(r.data(5)["l"], json!([null, 3]));
        assert_eq!(r.data(5)["m"], json!({"k": {"x": 1}}));
    }

    #[test]
    fn duplicate_keys_in_a_large_map() {
        let mut entries: Vec<String> = (0..20).map(|i| format!("\"k{i}\": {i}")).collect();
        entries.push("\"k5\": 500".into());
        entries.push("\"k19\": 1900".into());
        let record = format!("{{\"m\": {{{}}}}}", entries.join(", "));
        let r = run(
            vec![opt("m", map(PrimitiveType::String, int()))],
            &Options::default(),
            &[&record, r#"{"m": {"a": 1}}"#],
        );
        assert_eq!(r.errors(), [1, 0]);
        let m = r.data(0)["m"].as_object().unwrap().clone();
        assert_eq!(m.len(), 20);
        assert_eq!(m["k5"], json!(500));
        assert_eq!(m["k19"], json!(1900));
        assert_eq!(m["k4"], json!(4));
        assert_eq!(r.data(1)["m"], json!({"a": 1}));
        // The entries kept in order of their last appearance.
        let keys = r.column("m").as_map().keys().as_string::<i32>().clone();
        assert_eq!(keys.value(4), "k4");
        assert_eq!(keys.value(5), "k6");
        assert_eq!(keys.value(18), "k5");
        assert_eq!(keys.value(19), "k19");
    }

    #[test]
    fn a_map_with_many_repeated_keys_keeps_no_entry() {
        // 17 keys, each twice: past the bound, the map is emptied in one removal rather
        // than entry by entry (which costs entries x duplicates).
        let entries: Vec<String> = (0..34).map(|i| format!("\"k{}\": {i}", i % 17)).collect();
        let record = format!("{{\"m\": {{{}}}, \"n\": 1}}", entries.join(", "));
        let r = run(
            vec![opt("m", map(PrimitiveType::String, int())), opt("n", int())],
            &counted(),
            &[&record, r#"{"m": {"a": 1}, "n": 2}"#],
        );
        assert_eq!(r.errors(), [1, 0]);
        assert_eq!(r.data(0)["m"], json!({}));
        assert_eq!(r.data(0)["n"], json!(1));
        assert_eq!(r.data(1)["m"], json!({"a": 1}));
    }

    #[test]
    fn wide_struct_any_key_order() {
        let fields: Vec<NestedFieldRef> = (0..40).map(|i| opt(&format!("f{i}"), int())).collect();
        let mut keys: Vec<String> = (0..40).rev().map(|i| format!("\"f{i}\": {i}")).collect();
        keys.push("\"f40\": 1".into());
        let record = format!("{{{}}}", keys.join(", "));
        let r = run(fields, &counted(), &[&record, r#"{"f3": 3, "f3": 4}"#]);
        for i in 0..40 {
            assert_eq!(r.rows[0][&format!("f{i}")], json!(i));
        }
        assert_eq!(r.rows[0]["_excess_values"], json!(1));
        assert_eq!(r.rows[0]["_missing_values"], json!(0));
        assert_eq!(r.rows[1]["f3"], json!(4));
        assert_eq!(r.rows[1]["_missing_values"], json!(39));
        assert_eq!(r.errors(), [0, 1]);
    }

    #[test]
    fn flatten_path() {
        let fields = vec![
            opt("op", string()),
            opt(
                "after",
                st(vec![
                    opt("id", long()),
                    opt("name", string()),
                    opt("addr", st(vec![opt("city", string())])),
                ]),
            ),
        ];
        let r = run(
            fields,
            &Options {
                flatten_path: true,
                ..counted()
            },
            &[
                r#"{"op": "c", "after": {"id": 1, "name": "x", "addr": {"city": "P"}}}"#,
                r#"{"op": "d", "after": null}"#,
                r#"{"op": "d"}"#,
                r#"{"after": "x"}"#,
                r#"{"after": {"addr": null, "id": 2}}"#,
                r#"{"after": {"id": 1, "addr": {"city": "A"}}, "after": {"name": "y"}}"#,
            ],
        );
        let cols = |i: usize| {
            let d = r.data(i);
            (
                d["after__id"].clone(),
                d["after__name"].clone(),
                d["after__addr__city"].clone(),
                d["_missing_values"].clone(),
                d["_parse_error"].clone(),
            )
        };
        assert_eq!(
            cols(0),
            (json!(1), json!("x"), json!("P"), json!(0), json!(0))
        );
        assert_eq!(r.data(0)["op"], json!("c"));
        let null = Value::Null;
        assert_eq!(
            cols(1),
            (null.clone(), null.clone(), null.clone(), json!(0), json!(0))
        );
        assert_eq!(
            cols(2),
            (null.clone(), null.clone(), null.clone(), json!(1), json!(0))
        );
        assert_eq!(
            cols(3),
            (null.clone(), null.clone(), null.clone(), json!(1), json!(1))
        );
        assert_eq!(
            cols(4),
            (json!(2), null.clone(), null.clone(), json!(2), json!(0))
        );
        // A repeated flattened struct replaces all of its columns.
        assert_eq!(
            cols(5),
            (null.clone(), json!("y"), null.clone(), json!(3), json!(1))
        );
        let names: Vec<&str> = r
            .batch
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(
            &names[..4],
            ["op", "after__id", "after__name", "after__addr__city"]
        );
    }

    /// Records that are not a JSON object.
    fn not_json() -> Vec<Vec<u8>> {
        let deep = format!("{{\"x\": {}{}}}", "[".repeat(300), "]".repeat(300));
        let deep_declared = format!("{{\"a\": {}{}}}", "[".repeat(300), "]".repeat(300));
        [
            &b""[..],
            b"   ",
            b"{",
            b"{\"a\": 1",
            b"{\"a\": 1}x",
            b"{\"a\": 1} {}",
            b"{\"a\": 1,}",
            b"{'a': 1}",
            b"{\"a\": NaN}",
            b"{\"a\": 01}",
            b"{\"s\": \"\xff\"}",
            b"{\"x\": \"\xff\"}",
            b"{\"a\": \"\xff\"}",
            b"{\"\xff\": 1}",
            b"{\"x\": \"\\x\"}",
            b"[1]",
            b"1",
            b"\"s\"",
            b"null",
            b"true",
            deep.as_bytes(),
            deep_declared.as_bytes(),
        ]
        .iter()
        .map(|b| b.to_vec())
        .collect()
    }

    #[test]
    fn not_json_rows_are_null_with_a_parse_error() {
        let fields = vec![
            opt("a", int()),
            opt("s", string()),
            opt("l", list(st(vec![opt("x", list(string()))]))),
        ];
        let options = Options {
            copy_source_column: true,
            ..counted()
        };
        let bad = not_json();
        let mut records: Vec<Option<&[u8]>> = bad.iter().map(|b| Some(b.as_slice())).collect();
        records.push(Some(br#"{"a": 1, "s": "ok", "l": [{"x": ["p"]}], "z": 1}"#));
        let r = run_bytes(fields, &options, &records);
        let n = bad.len();
        for (i, source) in bad.iter().enumerate() {
            let row = r.data(i);
            assert_eq!(
                row,
                json!({"a": null, "s": null, "l": null, "value": row["value"],
                    "_missing_values": null, "_excess_values": null, "_parse_error": 1}),
                "{:?}",
                String::from_utf8_lossy(source)
            );
            // The source copy is the raw bytes, also here.
            let value = r.column("value").as_binary::<i64>();
            assert_eq!(value.value(i), source.as_slice());
        }
        assert_eq!(
            r.data(n),
            json!({"a": 1, "s": "ok", "l": [{"x": ["p"]}], "value": r.data(n)["value"],
                "_missing_values": 0, "_excess_values": 1, "_parse_error": 0})
        );
        assert_eq!(
            r.counters,
            Counters {
                rows: n as u64 + 1,
                parse_errors: n as u64,
                missing: 0,
                excess: 1
            }
        );
    }

    #[test]
    fn nesting_within_the_limit_is_json() {
        let nested = format!("{{\"x\": {}{}}}", "[".repeat(150), "]".repeat(150));
        let r = run(vec![opt("a", int())], &counted(), &[&nested]);
        assert_eq!(r.errors(), [0]);
        assert_eq!(r.rows[0]["_excess_values"], json!(1));
    }

    #[test]
    fn a_row_cut_short_is_rolled_back() {
        let item = st(vec![
            opt("a", int()),
            opt("l", list(string())),
            opt("m", map(PrimitiveType::String, list(int()))),
        ]);
        let fields = vec![
            opt("id", long()),
            opt("items", list(item)),
            opt("b", p(PrimitiveType::Binary)),
        ];
        let good1 =
            r#"{"id": 1, "items": [{"a": 1, "l": ["x", "y"], "m": {"k": [1]}}], "b": "AQ=="}"#;
        let good2 =
            r#"{"id": 2, "items": [{"a": 2, "l": ["z"], "m": {"j": [2, 3]}}], "b": "Ag=="}"#;
        let cut = [
            r#"{"id": 9, "b": "/w==", "items": [{"a": 9, "l": ["q", "r"#,
            r#"{"id": 9, "items": [{"a": 9, "l": ["q"], "m": {"k": [1, 2, }}]}"#,
            r#"{"id": 9, "items": [{"a": 9, "l": ["q"]}, {"m": {"k": [1]}}]} trailing"#,
            r#"{"id": 9, "items": [{"a": 9, "l": ["q"]}, {"m": {"k": [1]}}], "id": 10, "#,
        ];
        let mut records = vec![good1];
        for c in &cut {
            records.push(c);
            records.push(good2);
        }
        let r = run(fields, &Options::default(), &records);
        let want1 = json!({"id": 1, "items": [{"a": 1, "l": ["x", "y"], "m": {"k": [1]}}],
            "b": "01", "_parse_error": 0});
        let want2 = json!({"id": 2, "items": [{"a": 2, "l": ["z"], "m": {"j": [2, 3]}}],
            "b": "02", "_parse_error": 0});
        let null = json!({"id": null, "items": null, "b": null, "_parse_error": 1});
        assert_eq!(r.data(0), want1);
        for (i, c) in cut.iter().enumerate() {
            assert_eq!(r.data(1 + 2 * i), null, "{c}");
            assert_eq!(r.data(2 + 2 * i), want2, "after {c}");
        }
        // Nothing of the cut rows is left in the nested arrays.
        let items = r.column("items").as_list::<i32>();
        assert_eq!(items.values().len(), 1 + cut.len());
    }

    #[test]
    fn tombstones_and_the_source_copy() {
        let fields = vec![opt("a", int()), opt("s", st(vec![opt("x", int())]))];
        let options = Options {
            copy_source_column: true,
            flatten_path: true,
            ..counted()
        };
        let records: [Option<&[u8]>; 4] = [
            None,
            Some(br#"{"a": 1, "s": {"x": 2}}"#),
            Some(br#"{"a": "x"}"#),
            Some(b"not json"),
        ];
        let r = run_bytes(fields, &options, &records);
        assert_eq!(
            r.data(0),
            json!({"a": null, "s__x": null, "value": null, "_missing_values": null,
                "_excess_values": null, "_parse_error": 0})
        );
        let value = r.column("value").as_binary::<i64>();
        assert!(value.is_null(0));
        for (i, record) in records.iter().enumerate().skip(1) {
            assert_eq!(Some(value.value(i)), *record);
        }
        assert_eq!(r.errors(), [0, 0, 1, 1]);
        assert_eq!(r.data(2)["_missing_values"], json!(1));
        assert_eq!(
            r.counters,
            Counters {
                rows: 4,
                parse_errors: 2,
                missing: 1,
                excess: 0
            }
        );
    }

    #[test]
    fn key_source_copy_is_named_key() {
        let layout = Layout::new(
            &StructType::new(vec![opt("id", long())]),
            Source::Key,
            &Options {
                copy_source_column: true,
                ..Options::default()
            },
        )
        .unwrap();
        let mut e = Expander::new(&layout, target(&layout)).unwrap();
        e.push(Some(br#"{"id": 5}"#), 0, 0, 0);
        let (batch, _) = e.finish().unwrap();
        let key = batch.column_by_name("key").unwrap().as_binary::<i64>();
        assert_eq!(key.value(0), br#"{"id": 5}"#);
    }

    #[test]
    fn partition_offset_timestamp() {
        let layout = Layout::new(
            &StructType::new(vec![opt("a", int())]),
            Source::Value,
            &Options::default(),
        )
        .unwrap();
        let schema = target(&layout);
        let mut e = Expander::new(&layout, schema.clone()).unwrap();
        e.push(Some(b"{}"), 3, 42, 1_700_000_000_123);
        e.push(None, 7, 43, -5);
        e.push(Some(b"x"), 7, 44, 0);
        let (batch, _) = e.finish().unwrap();
        assert_eq!(batch.schema(), schema);
        let partition = batch
            .column_by_name("_kafka_partition")
            .unwrap()
            .as_primitive::<Int32Type>();
        assert_eq!(partition.values(), &[3, 7, 7]);
        let offset = batch
            .column_by_name("_offset")
            .unwrap()
            .as_primitive::<Int64Type>();
        assert_eq!(offset.values(), &[42, 43, 44]);
        let ts = batch.column_by_name("_timestamp").unwrap();
        assert_eq!(
            ts.data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()))
        );
        let ts = ts.as_primitive::<TimestampMicrosecondType>();
        assert_eq!(ts.values(), &[1_700_000_000_123_000, -5_000, 0]);
        assert_eq!(ts.null_count(), 0);
    }

    #[test]
    fn reuse_after_finish_and_bytes() {
        let layout = Layout::new(
            &StructType::new(vec![opt("a", int())]),
            Source::Value,
            &Options::default(),
        )
        .unwrap();
        let mut e = Expander::new(&layout, target(&layout)).unwrap();
        assert!(e.is_empty());
        e.push(Some(br#"{"a": 1}"#), 0, 0, 0);
        e.push(Some(b"bad"), 0, 1, 0);
        e.push(None, 0, 2, 0);
        assert_eq!(e.len(), 3);
        assert_eq!(e.bytes(), 11);
        let (batch, counters) = e.finish().unwrap();
        assert_eq!(batch.num_rows(), 3);
        assert_eq!(counters.rows, 3);
        assert_eq!(counters.parse_errors, 1);
        assert_eq!(e.bytes(), 0);
        e.push(Some(br#"{"a": 2}"#), 0, 3, 0);
        let (batch, counters) = e.finish().unwrap();
        assert_eq!(to_json(&batch)[0]["a"], json!(2));
        assert_eq!(batch.num_rows(), 1);
        assert_eq!(counters.rows, 1);
        assert_eq!(counters.parse_errors, 0);
        let (batch, counters) = e.finish().unwrap();
        assert_eq!(batch.num_rows(), 0);
        assert_eq!(counters, Counters::default());
    }

    #[test]
    fn target_columns_by_name() {
        let layout = Layout::new(
            &StructType::new(vec![
                opt("a", int()),
                opt("b", st(vec![opt("x", string())])),
            ]),
            Source::Value,
            &Options::default(),
        )
        .unwrap();
        let full = target(&layout);
        // Another version's column, in another order, without `a`.
        let mut fields: Vec<FieldRef> = full
            .fields()
            .iter()
            .filter(|f| f.name() != "a")
            .cloned()
            .collect();
        fields.reverse();
        fields.insert(
            1,
            Arc::new(arrow::datatypes::Field::new("old", DataType::Utf8, true)),
        );
        let schema = Arc::new(arrow::datatypes::Schema::new(fields));
        let mut e = Expander::new(&layout, schema.clone()).unwrap();
        e.push(Some(br#"{"a": 1, "b": {"x": "y"}}"#), 0, 0, 0);
        let (batch, _) = e.finish().unwrap();
        assert_eq!(batch.schema(), schema);
        let row = &to_json(&batch)[0];
        assert_eq!(row["b"], json!({"x": "y"}));
        assert_eq!(row["old"], Value::Null);
        assert!(!row.contains_key("a"));

        // A filled column of another type, or renamed nested field, is refused.
        for dt in [
            DataType::Int64,
            DataType::Struct(vec![arrow::datatypes::Field::new("z", DataType::Utf8, true)].into()),
            DataType::Struct(vec![arrow::datatypes::Field::new("x", DataType::Utf8, false)].into()),
            DataType::Struct(
                vec![arrow::datatypes::Field::new("x", DataType::LargeUtf8, true)].into(),
            ),
        ] {
            let fields: Vec<FieldRef> = full
                .fields()
                .iter()
                .map(|f| {
                    if f.name() == "b" {
                        Arc::new(arrow::datatypes::Field::new("b", dt.clone(), true))
                    } else {
                        f.clone()
                    }
                })
                .collect();
            let err = Expander::new(&layout, Arc::new(arrow::datatypes::Schema::new(fields)))
                .unwrap_err();
            assert!(err.to_string().contains("target column b"), "{err}");
        }
        // A required column the expansion cannot fill, or a required filled one.
        for f in [
            arrow::datatypes::Field::new("old", DataType::Utf8, false),
            arrow::datatypes::Field::new("a", DataType::Int32, false),
        ] {
            let mut fields: Vec<FieldRef> = full
                .fields()
                .iter()
                .filter(|g| g.name() != f.name())
                .cloned()
                .collect();
            fields.push(Arc::new(f));
            let err = Expander::new(&layout, Arc::new(arrow::datatypes::Schema::new(fields)))
                .unwrap_err();
            assert!(err.to_string().contains("required"), "{err}");
        }
    }

    #[test]
    fn expander_is_send() {
        // Sealing runs it on blocking threads.
        fn send<T: Send>() {}
        send::<Expander>();
        send::<Layout>();
    }

    #[test]
    fn parse_int_grammar() {
        assert_eq!(parse_int(b"0"), Some(0));
        assert_eq!(parse_int(b"-0"), Some(0));
        assert_eq!(parse_int(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [&b""[..], b"-", b"01", b"+1", b"1.0", b"1e3", b" 1", b"--1"] {
            assert_eq!(parse_int(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    /// Every type, nested and flattened, through the Parquet writer the tables use and
    /// back: the batches have exactly the target's types.
    #[tokio::test]
    async fn parquet_round_trip() {
        use iceberg::writer::file_writer::{FileWriter, FileWriterBuilder, ParquetWriterBuilder};
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        use parquet::file::properties::WriterProperties;

        let leaf_types = vec![
            opt("bool", p(PrimitiveType::Boolean)),
            opt("int", int()),
            opt("long", long()),
            opt("float", p(PrimitiveType::Float)),
            opt("double", p(PrimitiveType::Double)),
            opt(
                "dec",
                p(PrimitiveType::Decimal {
                    precision: 12,
                    scale: 3,
                }),
            ),
            opt("date", p(PrimitiveType::Date)),
            opt("time", p(PrimitiveType::Time)),
            opt("ts", p(PrimitiveType::Timestamp)),
            opt("tstz", p(PrimitiveType::Timestamptz)),
            opt("str", string()),
            opt("uuid", p(PrimitiveType::Uuid)),
            opt("fixed", p(PrimitiveType::Fixed(2))),
            opt("bin", p(PrimitiveType::Binary)),
        ];
        let mut fields = leaf_types.clone();
        fields.push(opt("s", st(leaf_types.clone())));
        fields.push(opt(
            "l",
            list(st(vec![opt("x", int()), opt("y", list(string()))])),
        ));
        fields.push(opt("ms", map(PrimitiveType::String, st(leaf_types))));
        fields.push(opt("mi", map(PrimitiveType::Int, list(long()))));
        fields.push(opt("ml", map(PrimitiveType::Long, p(PrimitiveType::Date))));
        let leaves = r#""bool": true, "int": 1, "long": 2, "float": 1.5, "double": 2.5,
            "dec": "123456789.123", "date": "2024-02-29", "time": "12:00:00.5",
            "ts": "2024-01-02T03:04:05", "tstz": "2024-01-02T03:04:05+01:00", "str": "é",
            "uuid": "67e55044-10b1-426f-9247-bb680e5fe0c8", "fixed": "AQI=", "bin": "AQID""#;
        let full = format!(
            r#"{{{leaves}, "s": {{{leaves}}}, "l": [{{"x": 1, "y": ["a", null]}}, null, {{}}],
                "ms": {{"k": {{{leaves}}}, "n": null}}, "mi": {{"1": [1, 2], "2": null}},
                "ml": {{"5": 19782}}}}"#
        );
        let records: Vec<Option<&[u8]>> = vec![
            Some(full.as_bytes()),
            None,
            Some(b"{}"),
            Some(b"not json"),
            Some(br#"{"int": "x", "s": {"int": 2}, "l": [], "ms": {}, "mi": {"x": []}}"#),
            Some(full.as_bytes()),
        ];
        for options in [
            Options {
                copy_source_column: true,
                ..counted()
            },
            Options {
                flatten_path: true,
                ..Options::default()
            },
        ] {
            let layout =
                Layout::new(&StructType::new(fields.clone()), Source::Value, &options).unwrap();
            let schema = Arc::new(iceberg_schema(&layout));
            let arrow_schema = Arc::new(iceberg::arrow::schema_to_arrow_schema(&schema).unwrap());
            let mut e = Expander::new(&layout, arrow_schema.clone()).unwrap();
            for (i, r) in records.iter().enumerate() {
                e.push(*r, 1, i as i64, 0);
            }
            let (batch, counters) = e.finish().unwrap();
            assert_eq!(counters.parse_errors, 2);
            assert_eq!(batch.schema(), arrow_schema);

            let io = iceberg::io::FileIO::new_with_memory();
            let location = "memory:///expansion/data.parquet";
            let mut w = ParquetWriterBuilder::new(WriterProperties::default(), schema.clone())
                .build(io.new_output(location).unwrap())
                .await
                .unwrap();
            w.write(&batch).await.unwrap();
            let files = w.close().await.unwrap();
            assert_eq!(files.len(), 1);
            let bytes = io.new_input(location).unwrap().read().await.unwrap();
            let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
                .unwrap()
                .build()
                .unwrap();
            let read: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
            assert_eq!(read.len(), 1);
            assert_eq!(read[0].num_rows(), records.len());
            for (a, b) in read[0].columns().iter().zip(batch.columns()) {
                assert_eq!(a.to_data(), b.to_data());
            }
            // The full record came through whole.
            let rows = to_json(&batch);
            assert_eq!(rows[0]["_parse_error"], json!(0));
            assert_eq!(
                rows[5],
                rows[0]
                    .clone()
                    .into_iter()
                    .map(|(k, v)| {
                        let v = if k == "_offset" { json!(5) } else { v };
                        (k, v)
                    })
                    .collect()
            );
        }
    }
}
