//! The one schema every topic table has, and its partitioning by Kafka partition.

use std::collections::HashMap;

use iceberg::spec::{
    FormatVersion, ListType, NestedField, PrimitiveType, Schema, SortOrder, StructType,
    TableMetadata, TableMetadataBuilder, Transform, Type, UnboundPartitionSpec,
};

use crate::TableResult;

/// Namespace of every topic table.
pub const NAMESPACE: &str = "kafka_topics";

/// Column names, in schema order.
pub const PARTITION: &str = "partition";
/// Record offset.
pub const OFFSET: &str = "offset";
/// Record timestamp (as produced, or the broker's for `LogAppendTime` topics).
pub const TIMESTAMP: &str = "timestamp";
/// The broker's append time, when the topic records one.
pub const TIMESTAMP_BROKER: &str = "timestamp_broker";
/// Record key.
pub const KEY: &str = "key";
/// Record value.
pub const VALUE: &str = "value";
/// Record headers.
pub const HEADERS: &str = "headers";

/// The topic table schema: `partition`, `offset`, `timestamp`, `timestamp_broker`,
/// `key`, `value`, `headers` (list of struct `key` string, `value` binary).
pub fn topic_schema() -> TableResult<Schema> {
    let header = StructType::new(vec![
        NestedField::required(9, "key", Type::Primitive(PrimitiveType::String)).into(),
        NestedField::optional(10, "value", Type::Primitive(PrimitiveType::Binary)).into(),
    ]);
    let headers = ListType::new(NestedField::required(8, "element", Type::Struct(header)).into());
    Ok(Schema::builder()
        .with_schema_id(0)
        .with_fields(vec![
            NestedField::required(1, PARTITION, Type::Primitive(PrimitiveType::Int)).into(),
            NestedField::required(2, OFFSET, Type::Primitive(PrimitiveType::Long)).into(),
            NestedField::required(3, TIMESTAMP, Type::Primitive(PrimitiveType::Timestamptz)).into(),
            NestedField::optional(
                4,
                TIMESTAMP_BROKER,
                Type::Primitive(PrimitiveType::Timestamptz),
            )
            .into(),
            NestedField::optional(5, KEY, Type::Primitive(PrimitiveType::Binary)).into(),
            NestedField::optional(6, VALUE, Type::Primitive(PrimitiveType::Binary)).into(),
            NestedField::required(7, HEADERS, Type::List(headers)).into(),
        ])
        .build()?)
}

/// Identity partitioning on the Kafka partition, so readers prune by partition.
pub fn topic_partition_spec() -> TableResult<UnboundPartitionSpec> {
    Ok(UnboundPartitionSpec::builder()
        .with_spec_id(0)
        .add_partition_field(1, PARTITION, Transform::Identity)?
        .build())
}

/// Metadata of a new, empty Iceberg v2 table that Eddy writes (a topic's, an expansion's
/// target): unsorted, its Parquet files zstd-compressed, with `properties` besides.
pub fn new_table(
    schema: Schema,
    spec: UnboundPartitionSpec,
    location: &str,
    mut properties: HashMap<String, String>,
) -> TableResult<TableMetadata> {
    properties.insert(
        "write.parquet.compression-codec".to_owned(),
        "zstd".to_owned(),
    );
    Ok(TableMetadataBuilder::new(
        schema,
        spec,
        SortOrder::unsorted_order(),
        location.to_owned(),
        FormatVersion::V2,
        properties,
    )?
    .build()?
    .metadata)
}
