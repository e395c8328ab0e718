//! Kafka record batches, as stored, into Arrow record batches of the topic table schema.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Int32Builder, Int64Builder, LargeBinaryBuilder, ListBuilder, RecordBatch,
    StringBuilder, StructBuilder, TimestampMicrosecondBuilder,
};
use arrow::datatypes::{DataType, FieldRef, Fields, SchemaRef};
use catalog::StoredBatch;
use kafka_protocol::records::{RecordBatchDecoder, TimestampType};

use crate::{TableError, TableResult};

/// Rows of one partition, accumulated column by column.
pub struct RowBuilder {
    schema: SchemaRef,
    partition: i32,
    offset: Int64Builder,
    timestamp: TimestampMicrosecondBuilder,
    timestamp_broker: TimestampMicrosecondBuilder,
    key: LargeBinaryBuilder,
    value: LargeBinaryBuilder,
    headers: ListBuilder<StructBuilder>,
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
    Ok((element.clone(), fields.clone()))
}

fn timestamp_builder(schema: &SchemaRef, name: &str) -> TableResult<TimestampMicrosecondBuilder> {
    let field = schema.field_with_name(name)?;
    Ok(TimestampMicrosecondBuilder::new().with_data_type(field.data_type().clone()))
}

impl RowBuilder {
    /// An empty builder for `partition`'s rows in `schema` (the Arrow form of the
    /// table's current Iceberg schema, field ids included).
    pub fn new(schema: SchemaRef, partition: u32) -> TableResult<Self> {
        let (element, fields) = list_element(&schema, crate::schema::HEADERS)?;
        let header = StructBuilder::from_fields(fields, 0);
        Ok(Self {
            partition: partition as i32,
            offset: Int64Builder::new(),
            timestamp: timestamp_builder(&schema, crate::schema::TIMESTAMP)?,
            timestamp_broker: timestamp_builder(&schema, crate::schema::TIMESTAMP_BROKER)?,
            key: LargeBinaryBuilder::new(),
            value: LargeBinaryBuilder::new(),
            headers: ListBuilder::new(header).with_field(element),
            schema,
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

    /// Adds the records of a stored batch whose offsets are in `from..to` (control
    /// records are not data and are left out), passing each to `each` too.
    pub fn add_batch(
        &mut self,
        topic: &str,
        partition: u32,
        batch: &StoredBatch,
        from: u64,
        to: u64,
        each: &mut dyn FnMut(&kafka_protocol::records::Record),
    ) -> TableResult<()> {
        let mut buf = batch.bytes.clone();
        let set = RecordBatchDecoder::decode(&mut buf).map_err(|e| TableError::CorruptBatch {
            topic: topic.to_owned(),
            partition,
            offset: batch.base_offset,
            reason: e.to_string(),
        })?;
        for r in set.records {
            let Ok(offset) = u64::try_from(r.offset) else {
                continue;
            };
            if r.control || offset < from || offset >= to {
                continue;
            }
            self.offset.append_value(r.offset);
            let micros = r.timestamp.saturating_mul(1000);
            self.timestamp.append_value(micros);
            if r.timestamp_type == TimestampType::LogAppend {
                self.timestamp_broker.append_value(micros);
            } else {
                self.timestamp_broker.append_null();
            }
            self.key.append_option(r.key.as_deref());
            self.value.append_option(r.value.as_deref());
            self.bytes +=
                r.key.as_ref().map_or(0, |k| k.len()) + r.value.as_ref().map_or(0, |v| v.len());
            let header = self.headers.values();
            for (k, v) in &r.headers {
                self.bytes += k.len() + v.as_ref().map_or(0, |v| v.len());
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
            self.headers.append(true);
            self.rows += 1;
            each(&r);
        }
        Ok(())
    }

    /// The rows as one Arrow record batch.
    pub fn finish(mut self) -> TableResult<RecordBatch> {
        let partition = {
            let mut b = Int32Builder::with_capacity(self.rows);
            b.append_value_n(self.partition, self.rows);
            b.finish()
        };
        let columns: Vec<ArrayRef> = vec![
            Arc::new(partition),
            Arc::new(self.offset.finish()),
            Arc::new(self.timestamp.finish()),
            Arc::new(self.timestamp_broker.finish()),
            Arc::new(self.key.finish()),
            Arc::new(self.value.finish()),
            Arc::new(self.headers.finish()),
        ];
        Ok(RecordBatch::try_new(self.schema, columns)?)
    }
}
