//! Kafka record batches, as stored, into Arrow record batches of the topic table schema.

use std::sync::Arc;

use arrow::array::{
    ArrayBuilder, ArrayRef, Int32Builder, Int64Builder, LargeBinaryBuilder, ListBuilder,
    RecordBatch, StringBuilder, StructBuilder, TimestampMicrosecondBuilder,
};
use arrow::datatypes::{DataType, FieldRef, Fields, SchemaRef};
use catalog::StoredBatch;
use kafka_protocol::records::{Record, RecordBatchDecoder, TimestampType};

use crate::{TableError, TableResult};

/// Rows of one partition, built a chunk at a time: each [`RowBuilder::add_batches`] call
/// decodes its batches first and then allocates every column at its exact size. With
/// one growing builder per column instead, building rows took 45 % of a seal's CPU, most
/// of it reallocating and copying the values buffer at each doubling and faulting in the
/// new pages (perf, 256 MiB of 1 KiB records in 16 partitions, docs/benchmarks.md).
pub struct RowBuilder {
    schema: SchemaRef,
    partition: i32,
    /// The headers column's list element and struct fields, from `schema`.
    header: (FieldRef, Fields),
    /// Timestamp columns' types, from `schema` (their time zone).
    timestamp_types: (DataType, DataType),
    chunks: Vec<RecordBatch>,
    rows: usize,
    /// Bytes of keys, values and headers added, to bound a file's size.
    pub bytes: usize,
}

fn list_element(schema: &SchemaRef, name: &str) -> TableResult<(FieldRef, Fields)> {
    let field = schema.field_with_name(name)?;
    let DataType::List(element) = field.data_type() else {
        return Err(TableError::Task(format!("column {name} is not a list")));
    };
    let DataType::Struct(fields) = element.data_type() else {
        return Err(TableError::Task(format!(
            "column {name} is not a list of structs"
        )));
    };
    // Each chunk builds the struct's two columns as these types.
    let types: Vec<&DataType> = fields.iter().map(|f| f.data_type()).collect();
    if types != [&DataType::Utf8, &DataType::LargeBinary] {
        return Err(TableError::Task(format!(
            "column {name} is not a list of (string, large binary) structs"
        )));
    }
    Ok((element.clone(), fields.clone()))
}

fn timestamp_type(schema: &SchemaRef, name: &str) -> TableResult<DataType> {
    Ok(schema.field_with_name(name)?.data_type().clone())
}

/// Sizes of one chunk's variable-length columns, so each is allocated once.
#[derive(Default)]
struct Sizes {
    keys: usize,
    values: usize,
    headers: usize,
    header_keys: usize,
    header_values: usize,
}

impl Sizes {
    fn of(records: &[Record]) -> Self {
        let mut s = Self::default();
        for r in records {
            s.keys += r.key.as_ref().map_or(0, |k| k.len());
            s.values += r.value.as_ref().map_or(0, |v| v.len());
            s.headers += r.headers.len();
            for (k, v) in &r.headers {
                s.header_keys += k.len();
                s.header_values += v.as_ref().map_or(0, |v| v.len());
            }
        }
        s
    }
}

impl RowBuilder {
    /// An empty builder for `partition`'s rows in `schema` (the Arrow form of the
    /// table's current Iceberg schema, field ids included).
    pub fn new(schema: SchemaRef, partition: u32) -> TableResult<Self> {
        Ok(Self {
            partition: partition as i32,
            header: list_element(&schema, crate::schema::HEADERS)?,
            timestamp_types: (
                timestamp_type(&schema, crate::schema::TIMESTAMP)?,
                timestamp_type(&schema, crate::schema::TIMESTAMP_BROKER)?,
            ),
            schema,
            chunks: Vec::new(),
            rows: 0,
            bytes: 0,
        })
    }

    /// Rows added so far.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Adds, as one chunk, the records of stored batches whose offsets are in
    /// `from..to` (control records are not data and are left out), passing each to
    /// `each` too.
    pub fn add_batches<'a>(
        &mut self,
        topic: &str,
        partition: u32,
        batches: impl IntoIterator<Item = &'a StoredBatch>,
        (from, to): (u64, u64),
        each: &mut dyn FnMut(&Record),
    ) -> TableResult<()> {
        let mut records = Vec::new();
        for batch in batches {
            let mut buf = batch.bytes.clone();
            let set =
                RecordBatchDecoder::decode(&mut buf).map_err(|e| TableError::CorruptBatch {
                    topic: topic.to_owned(),
                    partition,
                    offset: batch.base_offset,
                    reason: e.to_string(),
                })?;
            records.extend(set.records.into_iter().filter(|r| {
                u64::try_from(r.offset).is_ok_and(|o| !r.control && from <= o && o < to)
            }));
        }
        if records.is_empty() {
            return Ok(());
        }
        let chunk = self.chunk(&records)?;
        for r in &records {
            each(r);
        }
        self.rows += records.len();
        self.chunks.push(chunk);
        Ok(())
    }

    /// One chunk of rows, every column allocated at its size.
    fn chunk(&mut self, records: &[Record]) -> TableResult<RecordBatch> {
        let n = records.len();
        let sizes = Sizes::of(records);
        self.bytes += sizes.keys + sizes.values + sizes.header_keys + sizes.header_values;
        let mut partition = Int32Builder::with_capacity(n);
        partition.append_value_n(self.partition, n);
        let mut offset = Int64Builder::with_capacity(n);
        let mut timestamp = TimestampMicrosecondBuilder::with_capacity(n)
            .with_data_type(self.timestamp_types.0.clone());
        let mut timestamp_broker = TimestampMicrosecondBuilder::with_capacity(n)
            .with_data_type(self.timestamp_types.1.clone());
        let mut key = LargeBinaryBuilder::with_capacity(n, sizes.keys);
        let mut value = LargeBinaryBuilder::with_capacity(n, sizes.values);
        let (element, fields) = self.header.clone();
        let header = StructBuilder::new(
            fields,
            vec![
                Box::new(StringBuilder::with_capacity(
                    sizes.headers,
                    sizes.header_keys,
                )) as Box<dyn ArrayBuilder>,
                Box::new(LargeBinaryBuilder::with_capacity(
                    sizes.headers,
                    sizes.header_values,
                )),
            ],
        );
        let mut headers = ListBuilder::with_capacity(header, n).with_field(element);
        for r in records {
            offset.append_value(r.offset);
            let micros = r.timestamp.saturating_mul(1000);
            timestamp.append_value(micros);
            if r.timestamp_type == TimestampType::LogAppend {
                timestamp_broker.append_value(micros);
            } else {
                timestamp_broker.append_null();
            }
            key.append_option(r.key.as_deref());
            value.append_option(r.value.as_deref());
            let header = headers.values();
            for (k, v) in &r.headers {
                header
                    .field_builder::<StringBuilder>(0)
                    .ok_or_else(|| TableError::Task("header key builder".into()))?
                    .append_value(k.as_str());
                header
                    .field_builder::<LargeBinaryBuilder>(1)
                    .ok_or_else(|| TableError::Task("header value builder".into()))?
                    .append_option(v.as_deref());
                header.append(true);
            }
            headers.append(true);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(partition.finish()),
            Arc::new(offset.finish()),
            Arc::new(timestamp.finish()),
            Arc::new(timestamp_broker.finish()),
            Arc::new(key.finish()),
            Arc::new(value.finish()),
            Arc::new(headers.finish()),
        ];
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }

    /// The rows, a record batch per chunk, in offset order.
    pub fn finish(self) -> Vec<RecordBatch> {
        self.chunks
    }
}
