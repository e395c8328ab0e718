//! An expansion's target table: an ordinary Iceberg table whose schema is the layout's
//! columns, partitioned by `_kafka_partition` like the topic tables are by `partition`
//! (tables made before it was renamed call it `_partition`, one of Iceberg's reserved
//! metadata column names: it is renamed by field id, [`renamed_legacy`]). Its
//! schema evolves by name: a column the new layout keeps keeps its field id, a new one
//! gets fresh ids past the table's last, a dropped one leaves the current schema (old
//! data files still hold it, readers ignore it by id). Rows of files written under an
//! older schema are read into the current one by field id.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, new_null_array};
use arrow::datatypes::SchemaRef;
use iceberg::spec::{
    ListType, MapType, NestedField, NestedFieldRef, Schema, StructType, TableMetadata,
    TableMetadataBuilder, Transform, Type, UnboundPartitionSpec,
};

use super::layout::Column;
use crate::TableResult;

/// The column the target table is partitioned by (identity), as topic tables are by
/// `partition`.
pub const PARTITION_COLUMN: &str = super::layout::PARTITION;

/// Arrow metadata key of a field's Iceberg id, as the iceberg crate and Parquet write it.
const FIELD_ID: &str = "PARQUET:field_id";

/// `ty` with fresh field ids taken after `*last` (nested fields included), every field
/// optional.
fn fresh(ty: &Type, last: &mut i32) -> Type {
    fn next(last: &mut i32) -> i32 {
        *last += 1;
        *last
    }
    match ty {
        Type::Primitive(_) => ty.clone(),
        Type::Struct(s) => {
            let mut fields = Vec::with_capacity(s.fields().len());
            for f in s.fields() {
                let id = next(last);
                let t = fresh(&f.field_type, last);
                fields.push(Arc::new(NestedField::optional(id, &f.name, t)));
            }
            Type::Struct(StructType::new(fields))
        }
        Type::List(l) => {
            let id = next(last);
            let t = fresh(&l.element_field.field_type, last);
            Type::List(ListType::new(Arc::new(NestedField::list_element(
                id, t, false,
            ))))
        }
        Type::Map(m) => {
            let key_id = next(last);
            let value_id = next(last);
            let kt = fresh(&m.key_field.field_type, last);
            let vt = fresh(&m.value_field.field_type, last);
            Type::Map(MapType::new(
                Arc::new(NestedField::map_key_element(key_id, kt)),
                Arc::new(NestedField::map_value_element(value_id, vt, false)),
            ))
        }
    }
}

/// Whether two types are the same but for field ids.
pub fn same_shape(a: &Type, b: &Type) -> bool {
    match (a, b) {
        (Type::Primitive(x), Type::Primitive(y)) => x == y,
        (Type::Struct(x), Type::Struct(y)) => {
            x.fields().len() == y.fields().len()
                && x.fields().iter().zip(y.fields()).all(|(f, g)| {
                    f.name == g.name
                        && f.required == g.required
                        && same_shape(&f.field_type, &g.field_type)
                })
        }
        (Type::List(x), Type::List(y)) => {
            same_shape(&x.element_field.field_type, &y.element_field.field_type)
        }
        (Type::Map(x), Type::Map(y)) => {
            same_shape(&x.key_field.field_type, &y.key_field.field_type)
                && same_shape(&x.value_field.field_type, &y.value_field.field_type)
        }
        _ => false,
    }
}

/// `new` as an evolution of `current`, keeping `current`'s ids where Iceberg lets a
/// column evolve in place: a struct keeps its fields by name (a field gone is dropped,
/// a new one gets fresh ids after `*last`), a list its element and a map its key and
/// value when they evolve in place, a primitive when it is the same or a promotion
/// Iceberg allows (int to long, float to double, a decimal to a wider precision at the
/// same scale). `None`: `new` is another column.
fn merge(current: &Type, new: &Type, last: &mut i32) -> Option<Type> {
    use iceberg::spec::PrimitiveType as P;
    match (current, new) {
        (Type::Primitive(a), Type::Primitive(b)) => {
            let promoted = match (a, b) {
                _ if a == b => true,
                (P::Int, P::Long) | (P::Float, P::Double) => true,
                (
                    P::Decimal {
                        precision: p1,
                        scale: s1,
                    },
                    P::Decimal {
                        precision: p2,
                        scale: s2,
                    },
                ) => s1 == s2 && p2 >= p1,
                _ => false,
            };
            promoted.then(|| new.clone())
        }
        (Type::Struct(a), Type::Struct(b)) => {
            let mut fields = Vec::with_capacity(b.fields().len());
            for f in b.fields() {
                let kept = a
                    .field_by_name(&f.name)
                    .filter(|g| !g.required)
                    .and_then(|g| Some((g.id, merge(&g.field_type, &f.field_type, last)?)));
                fields.push(Arc::new(match kept {
                    Some((id, t)) => NestedField::optional(id, &f.name, t),
                    None => {
                        *last += 1;
                        let id = *last;
                        NestedField::optional(id, &f.name, fresh(&f.field_type, last))
                    }
                }));
            }
            Some(Type::Struct(StructType::new(fields)))
        }
        (Type::List(a), Type::List(b)) => {
            let t = merge(
                &a.element_field.field_type,
                &b.element_field.field_type,
                last,
            )?;
            Some(Type::List(ListType::new(Arc::new(
                NestedField::list_element(a.element_field.id, t, false),
            ))))
        }
        (Type::Map(a), Type::Map(b)) => {
            if !same_shape(&a.key_field.field_type, &b.key_field.field_type) {
                return None;
            }
            let v = merge(&a.value_field.field_type, &b.value_field.field_type, last)?;
            Some(Type::Map(MapType::new(
                a.key_field.clone(),
                Arc::new(NestedField::map_value_element(a.value_field.id, v, false)),
            )))
        }
        _ => None,
    }
}

/// The target schema for `columns`: a column of `current` with the same name keeps its
/// field id when it evolves in place (`merge`: nested fields by name, Iceberg's type
/// promotions), every other one gets fresh ids after `last_column_id`. The partition
/// column keeps the field of its legacy name too, renamed.
pub fn schema_for(
    columns: &[Column],
    current: Option<&Schema>,
    last_column_id: i32,
) -> TableResult<Schema> {
    let mut last = last_column_id.max(0);
    let mut fields: Vec<NestedFieldRef> = Vec::with_capacity(columns.len());
    for c in columns {
        let kept = current
            .and_then(|s| {
                s.as_struct().field_by_name(&c.name).or_else(|| {
                    (c.name == PARTITION_COLUMN)
                        .then(|| s.as_struct().field_by_name(super::layout::LEGACY_PARTITION))
                        .flatten()
                })
            })
            .filter(|f| !f.required)
            .and_then(|f| {
                let t = merge(&f.field_type, &c.ty, &mut last)?;
                Some(if f.name == c.name && *f.field_type == t {
                    f.clone()
                } else {
                    Arc::new(NestedField::optional(f.id, &c.name, t))
                })
            });
        match kept {
            Some(f) => fields.push(f),
            None => {
                last += 1;
                let id = last;
                let ty = fresh(&c.ty, &mut last);
                fields.push(Arc::new(NestedField::optional(id, &c.name, ty)));
            }
        }
    }
    Ok(Schema::builder().with_fields(fields).build()?)
}

/// Metadata of a new, empty target table at `location` holding `columns`.
pub fn new_metadata(location: &str, columns: &[Column]) -> TableResult<TableMetadata> {
    let schema = schema_for(columns, None, 0)?;
    let partition_id = schema
        .field_by_name(PARTITION_COLUMN)
        .map(|f| f.id)
        .ok_or_else(|| crate::TableError::Task("layout without _partition".into()))?;
    let spec = UnboundPartitionSpec::builder()
        .with_spec_id(0)
        .add_partition_field(partition_id, PARTITION_COLUMN, Transform::Identity)?
        .build();
    crate::schema::new_table(schema, spec, location, HashMap::new())
}

/// `metadata` with its legacy partition column (`_partition`) renamed to
/// [`PARTITION_COLUMN`], same field id, as a new current schema; `None` when it has none.
/// Data files find the column by id, so every row reads back under the new name.
pub fn renamed_legacy(
    metadata: &TableMetadata,
    previous_location: Option<&str>,
) -> TableResult<Option<TableMetadataBuilder>> {
    let current = metadata.current_schema();
    let fields = current.as_struct().fields();
    if !fields
        .iter()
        .any(|f| f.name == super::layout::LEGACY_PARTITION)
        || fields.iter().any(|f| f.name == PARTITION_COLUMN)
    {
        return Ok(None);
    }
    let renamed: Vec<NestedFieldRef> = fields
        .iter()
        .map(|f| {
            if f.name == super::layout::LEGACY_PARTITION {
                let mut g = f.as_ref().clone();
                g.name = PARTITION_COLUMN.to_owned();
                Arc::new(g)
            } else {
                f.clone()
            }
        })
        .collect();
    let schema = Schema::builder().with_fields(renamed).build()?;
    Ok(Some(
        TableMetadataBuilder::new_from_metadata(
            metadata.clone(),
            previous_location.map(str::to_owned),
        )
        .add_current_schema(schema)?,
    ))
}

/// `metadata` with `columns` as its current schema (unchanged when they already are).
pub fn evolve(
    metadata: &TableMetadata,
    previous_location: &str,
    columns: &[Column],
) -> TableResult<Option<TableMetadataBuilder>> {
    let current = metadata.current_schema();
    let schema = schema_for(columns, Some(current), metadata.last_column_id())?;
    if schema.as_struct() == current.as_struct() {
        return Ok(None);
    }
    Ok(Some(
        TableMetadataBuilder::new_from_metadata(
            metadata.clone(),
            Some(previous_location.to_owned()),
        )
        .add_current_schema(schema)?,
    ))
}

fn field_id(f: &arrow::datatypes::Field) -> Option<&str> {
    f.metadata().get(FIELD_ID).map(String::as_str)
}

/// A batch read from a data file, in `schema` (the table's current Arrow schema): its
/// columns matched by field id, nulls for columns the file does not have, columns the
/// schema dropped left out.
pub fn project(batch: RecordBatch, schema: &SchemaRef) -> TableResult<RecordBatch> {
    if let Ok(b) = RecordBatch::try_new(schema.clone(), batch.columns().to_vec()) {
        return Ok(b);
    }
    let file = batch.schema();
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| {
            let found = field_id(f).and_then(|id| {
                file.fields()
                    .iter()
                    .position(|g| field_id(g) == Some(id) && g.data_type() == f.data_type())
            });
            match found {
                Some(i) => batch.column(i).clone(),
                None => new_null_array(f.data_type(), batch.num_rows()),
            }
        })
        .collect();
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

#[cfg(test)]
mod tests {
    use iceberg::spec::PrimitiveType;

    use super::*;
    use crate::expansion::layout::LEGACY_PARTITION;

    fn column(name: &str, ty: PrimitiveType) -> Column {
        Column {
            name: name.to_owned(),
            ty: Type::Primitive(ty),
        }
    }

    #[test]
    fn a_legacy_partition_column_is_renamed_by_field_id() {
        // A table as builds before the rename made it: `_partition`, partitioned by it.
        let legacy = Schema::builder()
            .with_fields(vec![
                Arc::new(NestedField::optional(
                    1,
                    "id",
                    Type::Primitive(PrimitiveType::Long),
                )),
                Arc::new(NestedField::optional(
                    2,
                    LEGACY_PARTITION,
                    Type::Primitive(PrimitiveType::Int),
                )),
            ])
            .build()
            .unwrap();
        let spec = UnboundPartitionSpec::builder()
            .with_spec_id(0)
            .add_partition_field(2, LEGACY_PARTITION, Transform::Identity)
            .unwrap()
            .build();
        let metadata =
            crate::schema::new_table(legacy.clone(), spec, "s3://b/t", HashMap::new()).unwrap();
        let renamed = renamed_legacy(&metadata, None)
            .unwrap()
            .expect("a rename")
            .build()
            .unwrap()
            .metadata;
        let field = renamed
            .current_schema()
            .field_by_name(PARTITION_COLUMN)
            .unwrap();
        assert_eq!(field.id, 2);
        assert!(
            renamed
                .current_schema()
                .field_by_name(LEGACY_PARTITION)
                .is_none()
        );
        assert!(renamed_legacy(&renamed, None).unwrap().is_none(), "once");
        // An expansion change keeps the field too.
        let columns = [
            column("id", PrimitiveType::Long),
            column(PARTITION_COLUMN, PrimitiveType::Int),
        ];
        let evolved = schema_for(&columns, Some(&legacy), 2).unwrap();
        assert_eq!(evolved.field_by_name(PARTITION_COLUMN).unwrap().id, 2);
        assert_eq!(evolved.highest_field_id(), 2, "no new column");
    }
    fn field(id: i32, name: &str, ty: Type) -> NestedFieldRef {
        Arc::new(NestedField::optional(id, name, ty))
    }

    fn p(ty: PrimitiveType) -> Type {
        Type::Primitive(ty)
    }

    #[test]
    fn columns_evolve_in_place_where_iceberg_allows() {
        use PrimitiveType as P;
        let customer = |fields| Type::Struct(StructType::new(fields));
        let current = Schema::builder()
            .with_fields(vec![
                field(1, "qty", p(P::Int)),
                field(
                    2,
                    "customer",
                    customer(vec![field(3, "name", p(P::String))]),
                ),
                field(4, "note", p(P::Long)),
            ])
            .build()
            .unwrap();
        let columns = vec![
            Column {
                name: "qty".into(),
                ty: p(P::Long),
            },
            Column {
                name: "customer".into(),
                ty: customer(vec![
                    field(0, "name", p(P::String)),
                    field(0, "email", p(P::String)),
                ]),
            },
            column("note", P::String),
        ];
        let next = schema_for(&columns, Some(&current), 4).unwrap();
        let id = |n: &str| next.field_by_name(n).map(|f| f.id);
        // A promotion and a struct that gained a field keep their ids, nested ones too.
        assert_eq!(id("qty"), Some(1));
        assert_eq!(id("customer"), Some(2));
        assert_eq!(id("customer.name"), Some(3));
        assert!(id("customer.email").is_some_and(|i| i > 4));
        // A long does not become a string in place: a new column of the same name.
        assert!(id("note").is_some_and(|i| i > 4 && Some(i) != id("customer.email")));
    }
}
