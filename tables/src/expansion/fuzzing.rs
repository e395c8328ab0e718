//! Fixed expanders and the checks of one record through them, shared by the
//! `expansion_json` fuzz target (`fuzz/fuzz_targets/expansion_json.rs`) and the corpus
//! test (`tables/tests/expansion_corpus.rs`), so both exercise the same thing; and the
//! type constructors the parser's unit tests and the bench write schemas with. Not part
//! of the crate's API.
//!
//! The schema covers every type an expansion takes, nested: primitives, a struct within
//! a struct, a list of structs, a list of lists, maps with string and long keys, and a
//! Debezium-like `before`/`after` envelope. It is expanded three ways: nested with no
//! options, flattened with the counter columns and the copy of the source, and nested
//! from the record key with the copy and `_excess_values`.
//!
//! [`check`] pushes a record as row 0, a tombstone (`None`) as row 1 and the record again
//! as row 2 through every expander, then checks what the client may never cause:
//! `finish` failing, a batch that is not of the target schema or whose arrays do not
//! validate. And what must hold whatever the bytes: the tombstone row is null, a record
//! that is not a JSON object is a null row with `_parse_error` 1, the same bytes make the
//! same row twice (nothing leaks from one record into the next), the counters are the
//! sums of their columns, and every layout makes the same values and counts.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{Int32Type, Int64Type, SchemaRef, TimestampMicrosecondType};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use iceberg::spec::{
    ListType, MapType, NestedField, NestedFieldRef, PrimitiveType, StructType, Type,
};

use super::layout::{EXCESS_VALUES, MISSING_VALUES, OFFSET, PARSE_ERROR, PARTITION, TIMESTAMP};
use super::{Counters, Expander, Layout, Options, Source, target};

/// The record's partition, first offset and timestamp (ms) in every check.
const PARTITION_VALUE: i32 = 3;
const FIRST_OFFSET: i64 = 100;
const TIMESTAMP_MS: i64 = 1_700_000_000_123;

/// A primitive type (for schemas written in tests, benches and the fuzz target).
pub fn p(ty: PrimitiveType) -> Type {
    Type::Primitive(ty)
}

/// An optional field (id 0: the layout ignores ids).
pub fn opt(name: &str, ty: Type) -> NestedFieldRef {
    NestedField::optional(0, name, ty).into()
}

/// A struct of `fields`.
pub fn st(fields: Vec<NestedFieldRef>) -> Type {
    Type::Struct(StructType::new(fields))
}

/// A list of optional `ty`.
pub fn list(ty: Type) -> Type {
    Type::List(ListType::new(
        NestedField::list_element(0, ty, false).into(),
    ))
}

/// A map from `key` to optional `value`.
pub fn map(key: PrimitiveType, value: Type) -> Type {
    Type::Map(MapType::new(
        NestedField::map_key_element(0, p(key)).into(),
        NestedField::map_value_element(0, value, false).into(),
    ))
}

fn decimal(precision: u32, scale: u32) -> Type {
    p(PrimitiveType::Decimal { precision, scale })
}

/// The expansion schema of every sample. Field ids are ignored by the layout.
pub fn schema() -> StructType {
    use PrimitiveType as P;
    let row = st(vec![
        opt("id", p(P::Long)),
        opt("name", p(P::String)),
        opt("balance", decimal(10, 2)),
        opt("updated_at", p(P::Timestamptz)),
    ]);
    StructType::new(vec![
        opt("b", p(P::Boolean)),
        opt("i", p(P::Int)),
        opt("l", p(P::Long)),
        opt("f", p(P::Float)),
        opt("d", p(P::Double)),
        opt("dec", decimal(10, 2)),
        opt("big", decimal(38, 10)),
        opt("s", p(P::String)),
        opt("bin", p(P::Binary)),
        opt("fx", p(P::Fixed(4))),
        opt("date", p(P::Date)),
        opt("time", p(P::Time)),
        opt("ts", p(P::Timestamp)),
        opt("tstz", p(P::Timestamptz)),
        opt("uuid", p(P::Uuid)),
        opt(
            "nested",
            st(vec![
                opt("id", p(P::Long)),
                opt("name", p(P::String)),
                opt(
                    "inner",
                    st(vec![opt("x", p(P::Int)), opt("tags", list(p(P::String)))]),
                ),
            ]),
        ),
        opt(
            "items",
            list(st(vec![
                opt("sku", p(P::String)),
                opt("qty", p(P::Int)),
                opt("price", decimal(10, 2)),
            ])),
        ),
        opt("matrix", list(list(p(P::Int)))),
        opt("attrs", map(P::String, p(P::Long))),
        opt("names", map(P::Long, p(P::String))),
        opt("op", p(P::String)),
        opt("ts_ms", p(P::Long)),
        opt("before", row.clone()),
        opt("after", row),
    ])
}

/// One expander over [`schema`] and what it was made from.
#[derive(Debug)]
pub struct Sample {
    /// What the sample is called in messages.
    pub name: &'static str,
    /// The layout the expander follows.
    pub layout: Layout,
    /// The target table's Arrow schema.
    pub target: SchemaRef,
    /// The expander; empty between checks.
    pub expander: Expander,
}

/// The expanders every record goes through; the first (nested, no options) is the
/// reference the others are compared with.
pub fn sample_expanders() -> Vec<Sample> {
    let schema = schema();
    let nested = Options::default();
    let flat = Options {
        flatten_path: true,
        copy_source_column: true,
        missing_values_output: true,
        excess_values_output: true,
        ..Options::default()
    };
    let key = Options {
        copy_source_column: true,
        excess_values_output: true,
        ..Options::default()
    };
    [
        ("nested", Source::Value, nested),
        ("flat", Source::Value, flat),
        ("key", Source::Key, key),
    ]
    .into_iter()
    .map(|(name, source, options)| {
        let layout = Layout::new(&schema, source, &options)
            .unwrap_or_else(|e| panic!("{name}: layout: {e}"));
        let iceberg = target::schema_for(layout.columns(), None, 0)
            .unwrap_or_else(|e| panic!("{name}: target schema: {e}"));
        let target = Arc::new(
            iceberg::arrow::schema_to_arrow_schema(&iceberg)
                .unwrap_or_else(|e| panic!("{name}: arrow schema: {e}")),
        );
        let expander = Expander::new(&layout, target.clone())
            .unwrap_or_else(|e| panic!("{name}: expander: {e}"));
        Sample {
            name,
            layout,
            target,
            expander,
        }
    })
    .collect()
}

/// What the expanders made of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The record is a JSON object (otherwise its row is null).
    pub json_object: bool,
    /// Its `_parse_error`: not a JSON object, or a value that did not fit.
    pub parse_error: bool,
    /// The counters of the record's row (the batch's divided by its two records).
    pub counters: Counters,
}

const NULL: &str = "\u{2205}null";

/// Row `row` of `array` as text, nulls included (to compare values across layouts,
/// whose nested field ids differ).
fn render(array: &dyn Array, row: usize) -> Result<String, String> {
    let options = FormatOptions::new().with_null(NULL);
    let f = ArrayFormatter::try_new(array, &options).map_err(|e| format!("format: {e}"))?;
    Ok(f.value(row).to_string())
}

/// The column of `batch` at `path`: a top-level column, then struct fields.
fn resolve(batch: &RecordBatch, path: &[&str]) -> Option<ArrayRef> {
    let (first, rest) = path.split_first()?;
    let mut array = batch.column_by_name(first)?.clone();
    for name in rest {
        array = array.as_struct_opt()?.column_by_name(name)?.clone();
    }
    Some(array)
}

/// The three rows of one sample, checked on their own.
struct Checked {
    batch: RecordBatch,
    counters: Counters,
    outcome: Outcome,
}

fn int(batch: &RecordBatch, name: &str) -> Result<Option<[Option<i32>; 3]>, String> {
    let Some(c) = batch.column_by_name(name) else {
        return Ok(None);
    };
    let a = c
        .as_primitive_opt::<Int32Type>()
        .ok_or_else(|| format!("{name} is not int"))?;
    Ok(Some([0, 1, 2].map(|i| a.is_valid(i).then(|| a.value(i)))))
}

/// Pushes `data`, a tombstone and `data` again through `sample` and checks the batch.
fn check_one(sample: &mut Sample, data: &[u8]) -> Result<Checked, String> {
    let e = &mut sample.expander;
    for (i, source) in [Some(data), None, Some(data)].into_iter().enumerate() {
        e.push(
            source,
            PARTITION_VALUE,
            FIRST_OFFSET + i as i64,
            TIMESTAMP_MS,
        );
    }
    if e.len() != 3 || e.bytes() != 2 * data.len() {
        return Err(format!(
            "len {} and bytes {} after 3 pushes",
            e.len(),
            e.bytes()
        ));
    }
    let (batch, counters) = e.finish().map_err(|e| format!("finish failed: {e}"))?;
    if !e.is_empty() || e.bytes() != 0 {
        return Err("the expander is not empty after finish".into());
    }
    if batch.schema() != sample.target {
        return Err(format!(
            "batch schema {:?} is not the target's {:?}",
            batch.schema(),
            sample.target
        ));
    }
    if batch.num_rows() != 3 {
        return Err(format!("{} rows, not 3", batch.num_rows()));
    }
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        let name = field.name();
        if column.len() != 3 {
            return Err(format!("column {name} has {} rows", column.len()));
        }
        column
            .to_data()
            .validate_full()
            .map_err(|e| format!("column {name} does not validate: {e}"))?;
    }
    if counters.rows != 3 {
        return Err(format!("counters {counters:?}: rows is not 3"));
    }
    if counters.parse_errors % 2 != 0 || counters.missing % 2 != 0 || counters.excess % 2 != 0 {
        return Err(format!(
            "counters {counters:?}: the two records of the same bytes count differently"
        ));
    }
    let per_record = Counters {
        rows: 1,
        parse_errors: counters.parse_errors / 2,
        missing: counters.missing / 2,
        excess: counters.excess / 2,
    };

    // The system columns.
    let Some(errors) = int(&batch, PARSE_ERROR)? else {
        return Err("no _parse_error".into());
    };
    let parse_error = match errors {
        [Some(a), Some(0), Some(b)] if a == b && (a == 0 || a == 1) => a == 1,
        other => return Err(format!("_parse_error {other:?}")),
    };
    if per_record.parse_errors != u64::from(parse_error) {
        return Err(format!("counters {counters:?} but _parse_error {errors:?}"));
    }
    if int(&batch, PARTITION)? != Some([Some(PARTITION_VALUE); 3]) {
        return Err(format!("{PARTITION} {:?}", int(&batch, PARTITION)?));
    }
    let offsets = batch
        .column_by_name(OFFSET)
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
        .ok_or("no long _offset")?;
    if offsets.null_count() != 0 || offsets.values().to_vec() != [100, 101, 102] {
        return Err(format!("_offset {offsets:?}"));
    }
    let timestamps = batch
        .column_by_name(TIMESTAMP)
        .and_then(|c| c.as_primitive_opt::<TimestampMicrosecondType>())
        .ok_or("no timestamp _timestamp")?;
    if timestamps.null_count() != 0
        || timestamps
            .values()
            .iter()
            .any(|t| *t != TIMESTAMP_MS * 1000)
    {
        return Err(format!("_timestamp {timestamps:?}"));
    }
    let options = sample.layout.options();
    if options.copy_source_column {
        let name = sample.layout.source().name();
        let copy = batch
            .column_by_name(name)
            .and_then(|c| c.as_binary_opt::<i64>())
            .ok_or_else(|| format!("no binary {name}"))?;
        let ok = copy.is_valid(0)
            && copy.is_null(1)
            && copy.is_valid(2)
            && copy.value(0) == data
            && copy.value(2) == data;
        if !ok {
            return Err(format!(
                "the copy {name} is not [the record, null, the record]"
            ));
        }
    }
    // Whether the record is a JSON object shows in the counter columns (null when not).
    let mut json_object = None;
    for (name, wanted, total) in [
        (
            MISSING_VALUES,
            options.missing_values_output,
            counters.missing,
        ),
        (EXCESS_VALUES, options.excess_values_output, counters.excess),
    ] {
        let values = int(&batch, name)?;
        if values.is_some() != wanted {
            return Err(format!("{name} present: {}", values.is_some()));
        }
        let Some(values) = values else { continue };
        let object = match values {
            [Some(a), None, Some(b)] if a == b && a >= 0 => {
                if i64::from(a) * 2 != total as i64 && a != i32::MAX {
                    return Err(format!("{name} {values:?} but counters {counters:?}"));
                }
                true
            }
            [None, None, None] => {
                if total != 0 {
                    return Err(format!("{name} {values:?} but counters {counters:?}"));
                }
                false
            }
            _ => return Err(format!("{name} {values:?}")),
        };
        if json_object.is_some_and(|o| o != object) {
            return Err(format!("{MISSING_VALUES} and {EXCESS_VALUES} disagree"));
        }
        json_object = Some(object);
    }
    if json_object == Some(false) && !parse_error {
        return Err("not a JSON object, but _parse_error is 0".into());
    }

    // The expansion columns: null for the tombstone, and for a record that is not JSON;
    // the same for the two records.
    let expansion = sample.layout.columns().len()
        - 4
        - usize::from(options.copy_source_column)
        - usize::from(options.missing_values_output)
        - usize::from(options.excess_values_output);
    for (field, column) in batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .take(expansion)
    {
        let name = field.name();
        if column.is_valid(1) {
            return Err(format!("column {name} is not null for the tombstone"));
        }
        if json_object == Some(false) && column.is_valid(0) {
            return Err(format!(
                "column {name} is not null, but the record is not JSON"
            ));
        }
        let (first, second) = (render(column, 0)?, render(column, 2)?);
        if first != second {
            return Err(format!(
                "column {name} differs between two records of the same bytes: {first} then {second}"
            ));
        }
    }
    if per_record.missing + per_record.excess > 0 && json_object == Some(false) {
        return Err(format!("not JSON, but counters {counters:?}"));
    }
    Ok(Checked {
        batch,
        counters,
        outcome: Outcome {
            json_object: json_object.unwrap_or(true),
            parse_error,
            counters: per_record,
        },
    })
}

/// Runs `data` through every sample (see the module's documentation); `Err` says what
/// went wrong where, and is a bug.
pub fn check(samples: &mut [Sample], data: &[u8]) -> Result<Outcome, String> {
    let mut checked = Vec::with_capacity(samples.len());
    for sample in samples.iter_mut() {
        let c = check_one(sample, data).map_err(|e| format!("{}: {e}", sample.name))?;
        checked.push(c);
    }
    let Some(reference) = checked.first() else {
        return Err("no samples".into());
    };
    // Whether it is a JSON object is known from the samples with counter columns.
    let json_object = checked.iter().all(|c| c.outcome.json_object);
    for (sample, c) in samples.iter().zip(&checked).skip(1) {
        if c.counters != reference.counters
            || c.outcome.parse_error != reference.outcome.parse_error
        {
            return Err(format!(
                "{}: counters {:?}, but {} counted {:?}",
                sample.name, c.counters, samples[0].name, reference.counters
            ));
        }
        let delimiter = sample.layout.options().flatten_delimiter.as_str();
        let flatten = sample.layout.options().flatten_path;
        for (field, column) in c.batch.schema().fields().iter().zip(c.batch.columns()) {
            let name = field.name();
            let path: Vec<&str> = if flatten {
                name.split(delimiter).collect()
            } else {
                vec![name.as_str()]
            };
            let Some(theirs) = resolve(&reference.batch, &path) else {
                // The copy and the counter columns, checked on their own.
                continue;
            };
            for row in 0..3 {
                let (a, b) = (render(column, row)?, render(&theirs, row)?);
                if a != b {
                    return Err(format!(
                        "{}: column {name} row {row} is {a}, but {} made {b}",
                        sample.name, samples[0].name
                    ));
                }
            }
        }
    }
    if !json_object && !reference.outcome.parse_error {
        return Err("not a JSON object, but no _parse_error".into());
    }
    Ok(Outcome {
        json_object,
        ..reference.outcome
    })
}
