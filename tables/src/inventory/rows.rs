//! The inventory table's schema (the columns of S3 Metadata's inventory table that Eddy
//! has) and a bucket's current objects as Arrow rows of it.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanBuilder, Int64Builder, MapBuilder, MapFieldNames, RecordBatch, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow::datatypes::{DataType, SchemaRef};
use catalog::{Encryption, ObjectVersion};
use iceberg::spec::{MapType, NestedField, PrimitiveType, Schema, Type};

use crate::{TableError, TableResult};

/// Prefix of user metadata entries in an object's stored metadata map (as the S3
/// gateway stores them).
const META_PREFIX: &str = "x-amz-meta-";

fn string_map(key_id: i32, value_id: i32) -> Type {
    Type::Map(MapType::new(
        NestedField::map_key_element(key_id, Type::Primitive(PrimitiveType::String)).into(),
        NestedField::map_value_element(value_id, Type::Primitive(PrimitiveType::String), true)
            .into(),
    ))
}

/// `bucket`, `key`, `version_id` (null for an unversioned write), `size`,
/// `last_modified_date`, `e_tag`, `storage_class`, `is_multipart`, `encryption_status`,
/// `checksum_algorithm`, `object_tags` and `user_metadata` (string maps).
pub fn schema() -> TableResult<Schema> {
    use PrimitiveType::*;
    let p = Type::Primitive;
    Ok(Schema::builder()
        .with_schema_id(0)
        .with_identifier_field_ids([1, 2])
        .with_fields(vec![
            NestedField::required(1, "bucket", p(String)).into(),
            NestedField::required(2, "key", p(String)).into(),
            NestedField::optional(3, "version_id", p(String)).into(),
            NestedField::required(4, "size", p(Long)).into(),
            NestedField::required(5, "last_modified_date", p(Timestamptz)).into(),
            NestedField::required(6, "e_tag", p(String)).into(),
            NestedField::required(7, "storage_class", p(String)).into(),
            NestedField::required(8, "is_multipart", p(Boolean)).into(),
            NestedField::optional(9, "encryption_status", p(String)).into(),
            NestedField::optional(10, "checksum_algorithm", p(String)).into(),
            NestedField::required(11, "object_tags", string_map(13, 14)).into(),
            NestedField::required(12, "user_metadata", string_map(15, 16)).into(),
        ])
        .build()?)
}

type StringMap = MapBuilder<StringBuilder, StringBuilder>;

fn map_builder(schema: &SchemaRef, name: &str) -> TableResult<StringMap> {
    let field = schema.field_with_name(name)?;
    let DataType::Map(entries, _) = field.data_type() else {
        return Err(TableError::Task(format!("column {name} is not a map")));
    };
    let DataType::Struct(kv) = entries.data_type() else {
        return Err(TableError::Task(format!("column {name} has no entries")));
    };
    let (Some(k), Some(v)) = (kv.first(), kv.get(1)) else {
        return Err(TableError::Task(format!(
            "column {name} has no key or value"
        )));
    };
    let names = MapFieldNames {
        entry: entries.name().clone(),
        key: k.name().clone(),
        value: v.name().clone(),
    };
    Ok(
        MapBuilder::new(Some(names), StringBuilder::new(), StringBuilder::new())
            .with_keys_field(k.clone())
            .with_values_field(v.clone()),
    )
}

/// Rows of one data file, accumulated column by column.
pub struct InventoryRows {
    schema: SchemaRef,
    bucket: String,
    key: StringBuilder,
    version_id: StringBuilder,
    size: Int64Builder,
    modified: TimestampMicrosecondBuilder,
    etag: StringBuilder,
    multipart: BooleanBuilder,
    encryption: StringBuilder,
    checksum: StringBuilder,
    tags: StringMap,
    user_metadata: StringMap,
    rows: usize,
}

impl InventoryRows {
    /// An empty builder for rows of `bucket` in `schema` (the Arrow form of the table's
    /// Iceberg schema, field ids included).
    pub fn new(schema: SchemaRef, bucket: &str) -> TableResult<Self> {
        let modified = schema
            .field_with_name("last_modified_date")?
            .data_type()
            .clone();
        Ok(Self {
            bucket: bucket.to_owned(),
            key: StringBuilder::new(),
            version_id: StringBuilder::new(),
            size: Int64Builder::new(),
            modified: TimestampMicrosecondBuilder::new().with_data_type(modified),
            etag: StringBuilder::new(),
            multipart: BooleanBuilder::new(),
            encryption: StringBuilder::new(),
            checksum: StringBuilder::new(),
            tags: map_builder(&schema, "object_tags")?,
            user_metadata: map_builder(&schema, "user_metadata")?,
            schema,
            rows: 0,
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

    fn append_map<'a>(
        b: &mut StringMap,
        entries: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> TableResult<()> {
        for (k, v) in entries {
            b.keys().append_value(k);
            b.values().append_value(v);
        }
        Ok(b.append(true)?)
    }

    /// Adds the current version of `key` (a delete marker is not an object: no row).
    pub fn add(&mut self, key: &str, v: &ObjectVersion) -> TableResult<()> {
        if v.delete_marker {
            return Ok(());
        }
        self.key.append_value(key);
        self.version_id
            .append_option((v.version_id != "null").then_some(v.version_id.as_str()));
        self.size
            .append_value(i64::try_from(v.size).unwrap_or(i64::MAX));
        self.modified
            .append_value(v.last_modified_ms.saturating_mul(1000));
        self.etag.append_value(&v.etag);
        self.multipart.append_value(!v.parts.is_empty());
        self.encryption
            .append_option(v.encryption.as_ref().map(|e| match e {
                Encryption::S3 { .. } => "SSE-S3",
                Encryption::Customer { .. } => "SSE-C",
            }));
        self.checksum
            .append_option(v.checksums.keys().next().map(|a| a.to_ascii_uppercase()));
        Self::append_map(
            &mut self.tags,
            v.tags.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        )?;
        Self::append_map(&mut self.user_metadata, user_metadata(&v.metadata))?;
        self.rows += 1;
        Ok(())
    }

    /// The rows as one Arrow record batch, leaving the builder empty.
    pub fn take(&mut self) -> TableResult<RecordBatch> {
        let storage_class = {
            let mut b = StringBuilder::with_capacity(self.rows, self.rows * 8);
            let mut bucket = StringBuilder::with_capacity(self.rows, self.rows * self.bucket.len());
            for _ in 0..self.rows {
                b.append_value("STANDARD");
                bucket.append_value(&self.bucket);
            }
            (b.finish(), bucket.finish())
        };
        let columns: Vec<ArrayRef> = vec![
            Arc::new(storage_class.1),
            Arc::new(self.key.finish()),
            Arc::new(self.version_id.finish()),
            Arc::new(self.size.finish()),
            Arc::new(self.modified.finish()),
            Arc::new(self.etag.finish()),
            Arc::new(storage_class.0),
            Arc::new(self.multipart.finish()),
            Arc::new(self.encryption.finish()),
            Arc::new(self.checksum.finish()),
            Arc::new(self.tags.finish()),
            Arc::new(self.user_metadata.finish()),
        ];
        self.rows = 0;
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }
}

/// The user metadata (`x-amz-meta-*`) of a stored metadata map, without the prefix.
fn user_metadata(m: &BTreeMap<String, String>) -> impl Iterator<Item = (&str, &str)> {
    m.iter()
        .filter_map(|(k, v)| k.strip_prefix(META_PREFIX).map(|k| (k, v.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, MapArray, StringArray};
    use catalog::ObjectData;

    #[test]
    fn rows_hold_what_a_listing_and_a_head_show() {
        let arrow = Arc::new(iceberg::arrow::schema_to_arrow_schema(&schema().unwrap()).unwrap());
        let mut rows = InventoryRows::new(arrow, "photos").unwrap();
        let mut v = ObjectVersion::new(
            "null".into(),
            ObjectData::Inline(b"abc".to_vec()),
            3,
            "e1".into(),
            1000,
        );
        v.tags.insert("team".into(), "red".into());
        v.metadata.insert("x-amz-meta-owner".into(), "ann".into());
        v.metadata
            .insert("content-type".into(), "text/plain".into());
        rows.add("a.txt", &v).unwrap();
        let mut marker = v.clone();
        marker.delete_marker = true;
        rows.add("gone", &marker).unwrap();
        assert_eq!(rows.len(), 1);
        let batch = rows.take().unwrap();
        assert!(rows.is_empty());
        assert_eq!(batch.num_rows(), 1);
        let col = |n: &str| batch.column_by_name(n).unwrap().clone();
        let key = col("key");
        assert_eq!(
            key.as_any().downcast_ref::<StringArray>().unwrap().value(0),
            "a.txt"
        );
        assert!(col("version_id").is_null(0));
        let meta = col("user_metadata");
        let meta = meta.as_any().downcast_ref::<MapArray>().unwrap();
        assert_eq!(meta.value(0).len(), 1, "content-type is not user metadata");
    }
}
