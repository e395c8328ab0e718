//! The columns of an expansion's target table, from the expansion's Iceberg struct schema
//! and options, and the refusals of schemas an expansion cannot fill.
//!
//! Every field may be absent from a record, so every column is optional. With
//! `flatten_path`, struct fields become top-level columns named along their path; the
//! layout keeps the tree of JSON names that leads to each column, for the parser.

use std::collections::HashMap;
use std::str::FromStr;

use iceberg::spec::{ListType, MapType, NestedField, PrimitiveType, StructType, Type};

/// Column counting the schema fields a record lacks.
pub const MISSING_VALUES: &str = "_missing_values";
/// Column counting the JSON keys the schema does not name.
pub const EXCESS_VALUES: &str = "_excess_values";
/// Column that is 1 when a record's JSON did not parse or did not fit the schema.
pub const PARSE_ERROR: &str = "_parse_error";
/// The record's Kafka partition. Not `_partition`, one of Iceberg's reserved metadata
/// column names (Spark's Iceberg scan takes a column of that name for the metadata
/// column and fails every query that reads it).
pub const PARTITION: &str = "_kafka_partition";
/// The partition column's name in target tables made before it was renamed; such a
/// column is renamed by field id when the table is next read or written
/// ([`super::target::renamed_legacy`]).
pub const LEGACY_PARTITION: &str = "_partition";
/// The record's offset.
pub const OFFSET: &str = "_offset";
/// The record's timestamp.
pub const TIMESTAMP: &str = "_timestamp";

/// The names the expansion keeps for its own columns, whether or not the options ask for
/// them: a field may not take one, so turning an option on later cannot clash.
const SYSTEM_COLUMNS: [&str; 7] = [
    MISSING_VALUES,
    EXCESS_VALUES,
    PARSE_ERROR,
    PARTITION,
    LEGACY_PARTITION,
    OFFSET,
    TIMESTAMP,
];

/// How deep types may nest (structs, lists and maps): far beyond real schemas, and it
/// bounds the parser's recursion, which follows the schema.
pub const MAX_DEPTH: usize = 64;

/// Which record column the JSON comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The record key.
    Key,
    /// The record value.
    Value,
}

impl Source {
    /// `key` or `value`: the name of the source copy column too.
    pub fn name(&self) -> &'static str {
        match self {
            Source::Key => "key",
            Source::Value => "value",
        }
    }
}

impl FromStr for Source {
    type Err = LayoutError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "key" => Ok(Source::Key),
            "value" => Ok(Source::Value),
            _ => Err(LayoutError::UnknownSource(s.to_owned())),
        }
    }
}

/// The expansion's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Struct fields become top-level columns named `parent{delimiter}child`.
    pub flatten_path: bool,
    /// What joins the names of a flattened path.
    pub flatten_delimiter: String,
    /// Keep the raw source bytes in a binary column named like the source.
    pub copy_source_column: bool,
    /// Add `_missing_values`.
    pub missing_values_output: bool,
    /// Add `_excess_values`.
    pub excess_values_output: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            flatten_path: false,
            flatten_delimiter: "__".to_owned(),
            copy_source_column: false,
            missing_values_output: false,
            excess_values_output: false,
        }
    }
}

/// One column of the target table the expansion fills.
///
/// The field ids nested inside `ty` are unique across the layout and above
/// `columns().len()`, so `NestedField::optional(i + 1, name, ty)` for column `i` makes a
/// valid schema; the target table assigns its own ids anyway.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Column name.
    pub name: String,
    /// Column type; every nested field, list element and map value is optional.
    pub ty: Type,
}

/// Where the value of one JSON key goes: a column, or (a flattened struct) the columns of
/// its fields.
#[derive(Debug, Clone)]
pub(crate) enum Shape {
    /// The index of the column in [`Layout::columns`].
    Column(usize),
    /// A flattened struct's fields.
    Flattened(Vec<TreeField>),
}

/// A field of the schema by its JSON name.
#[derive(Debug, Clone)]
pub(crate) struct TreeField {
    pub(crate) name: String,
    pub(crate) shape: Shape,
}

/// The target table's columns and how the JSON reaches them.
#[derive(Debug, Clone)]
pub struct Layout {
    source: Source,
    options: Options,
    columns: Vec<Column>,
    /// The top-level fields of the schema; their columns are the first of `columns`.
    tree: Vec<TreeField>,
    /// How many of `columns` the schema's fields make.
    expansion_columns: usize,
}

/// Why a schema or its options cannot make an expansion. Each message names the field and
/// can be shown to the client as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// The schema has no field.
    #[error("the expansion schema has no fields")]
    EmptySchema,
    /// `flatten_path` with an empty delimiter.
    #[error("flatten_delimiter is empty: flatten_path needs a delimiter to join field names")]
    EmptyDelimiter,
    /// A field without a name.
    #[error("{parent} has a field with an empty name")]
    EmptyName {
        /// `the schema` or `struct \`a.b\``.
        parent: String,
    },
    /// Two fields of one struct with the same name.
    #[error("{parent} has two fields named `{name}`")]
    DuplicateField {
        /// `the schema` or `struct \`a.b\``.
        parent: String,
        /// The name.
        name: String,
    },
    /// Two fields that would be columns of the same name.
    #[error("fields `{first}` and `{second}` would both be the column `{column}`")]
    DuplicateColumn {
        /// The column name.
        column: String,
        /// One field's path.
        first: String,
        /// The other's.
        second: String,
    },
    /// A field that would be named like the copy of the source.
    #[error(
        "field `{field}` would be the column `{column}`, the copy of the record's {column}: rename the field or turn copy_source_column off"
    )]
    SourceColumn {
        /// The field's path.
        field: String,
        /// `key` or `value`.
        column: String,
    },
    /// A field that would be named like a system column.
    #[error(
        "field `{field}` would be the column `{column}`, a name the expansion keeps for its own column"
    )]
    Reserved {
        /// The field's path.
        field: String,
        /// The system column.
        column: String,
    },
    /// A required field.
    #[error(
        "field `{field}` is required, but every field of an expansion must be optional: any field may be absent from a record"
    )]
    Required {
        /// The field's path.
        field: String,
    },
    /// A list of required elements.
    #[error(
        "the elements of list `{field}` are required, but they must be optional: an element may be null or fail to convert"
    )]
    RequiredElement {
        /// The list's path.
        field: String,
    },
    /// A map of required values.
    #[error(
        "the values of map `{field}` are required, but they must be optional: a value may be null or fail to convert"
    )]
    RequiredValue {
        /// The map's path.
        field: String,
    },
    /// A map whose keys are not string, int or long.
    #[error(
        "map `{field}` has keys of type {key}, but map keys must be string, int or long: they are JSON object keys"
    )]
    MapKey {
        /// The map's path.
        field: String,
        /// The key type.
        key: String,
    },
    /// A struct without fields (Parquet cannot store one).
    #[error("struct `{field}` has no fields")]
    EmptyStruct {
        /// The struct's path.
        field: String,
    },
    /// A type the parser has no rule for.
    #[error("field `{field}` has type {ty}, which expansions do not support")]
    Unsupported {
        /// The field's path.
        field: String,
        /// The type.
        ty: String,
    },
    /// Types nested too deep.
    #[error("field `{field}` is nested more than {MAX_DEPTH} levels deep")]
    TooDeep {
        /// The field's path.
        field: String,
    },
    /// A source other than `key` or `value`.
    #[error("unknown source `{0}`: expected `key` or `value`")]
    UnknownSource(String),
}

/// `name` under `parent` in Iceberg's dotted notation.
fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}.{name}")
    }
}

/// How a struct is named in messages.
fn describe_parent(path: &str) -> String {
    if path.is_empty() {
        "the schema".to_owned()
    } else {
        format!("struct `{path}`")
    }
}

/// A short name of a type for messages (the iceberg crate's Display of nested types is
/// not meant for people).
fn describe(ty: &Type) -> String {
    match ty {
        Type::Primitive(p) => p.to_string(),
        Type::Struct(_) => "struct".to_owned(),
        Type::List(_) => "list".to_owned(),
        Type::Map(_) => "map".to_owned(),
    }
}

/// Builds the layout: checks the schema, assigns ids and names the columns.
struct Builder<'a> {
    options: &'a Options,
    columns: Vec<Column>,
    /// Path of the field each of `columns` comes from, for messages.
    paths: Vec<String>,
    next_id: i32,
}

impl Builder<'_> {
    /// The tree of `fields` (of the struct at `path`, flattened under column `prefix`).
    fn fields(
        &mut self,
        fields: &[iceberg::spec::NestedFieldRef],
        path: &str,
        prefix: &str,
        depth: usize,
    ) -> Result<Vec<TreeField>, LayoutError> {
        check_names(fields, path)?;
        let mut tree = Vec::with_capacity(fields.len());
        for field in fields {
            let field_path = join(path, &field.name);
            if field.required {
                return Err(LayoutError::Required { field: field_path });
            }
            let column = if prefix.is_empty() {
                field.name.clone()
            } else {
                format!("{prefix}{}{}", self.options.flatten_delimiter, field.name)
            };
            let shape = match field.field_type.as_ref() {
                Type::Struct(s) if self.options.flatten_path => {
                    if s.fields().is_empty() {
                        return Err(LayoutError::EmptyStruct { field: field_path });
                    }
                    if depth >= MAX_DEPTH {
                        return Err(LayoutError::TooDeep { field: field_path });
                    }
                    Shape::Flattened(self.fields(s.fields(), &field_path, &column, depth + 1)?)
                }
                ty => {
                    let ty = self.ty(ty, &field_path, depth)?;
                    self.columns.push(Column { name: column, ty });
                    self.paths.push(field_path);
                    Shape::Column(self.columns.len() - 1)
                }
            };
            tree.push(TreeField {
                name: field.name.clone(),
                shape,
            });
        }
        Ok(tree)
    }

    fn id(&mut self) -> i32 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// `ty` (of the field at `path`) checked, with every nested field optional and fresh
    /// ids.
    fn ty(&mut self, ty: &Type, path: &str, depth: usize) -> Result<Type, LayoutError> {
        if depth >= MAX_DEPTH && !ty.is_primitive() {
            return Err(LayoutError::TooDeep {
                field: path.to_owned(),
            });
        }
        match ty {
            Type::Primitive(p) => {
                let supported = match p {
                    PrimitiveType::TimestampNs | PrimitiveType::TimestamptzNs => false,
                    // What Arrow's Decimal128 holds, as the iceberg crate maps it.
                    PrimitiveType::Decimal { precision, scale } => {
                        (1..=38).contains(precision) && scale <= precision
                    }
                    // A zero width has no Parquet form; past i32 Arrow has no fixed form.
                    PrimitiveType::Fixed(len) => *len > 0 && *len <= i32::MAX as u64,
                    _ => true,
                };
                if !supported {
                    return Err(LayoutError::Unsupported {
                        field: path.to_owned(),
                        ty: p.to_string(),
                    });
                }
                Ok(ty.clone())
            }
            Type::Struct(s) => {
                if s.fields().is_empty() {
                    return Err(LayoutError::EmptyStruct {
                        field: path.to_owned(),
                    });
                }
                check_names(s.fields(), path)?;
                // Ids of one struct's fields first, then of what they nest, as Iceberg
                // assigns them.
                let ids: Vec<i32> = s.fields().iter().map(|_| self.id()).collect();
                let mut fields = Vec::with_capacity(ids.len());
                for (field, id) in s.fields().iter().zip(ids) {
                    let field_path = join(path, &field.name);
                    if field.required {
                        return Err(LayoutError::Required { field: field_path });
                    }
                    let ty = self.ty(&field.field_type, &field_path, depth + 1)?;
                    fields.push(NestedField::optional(id, field.name.clone(), ty).into());
                }
                Ok(Type::Struct(StructType::new(fields)))
            }
            Type::List(l) => {
                if l.element_field.required {
                    return Err(LayoutError::RequiredElement {
                        field: path.to_owned(),
                    });
                }
                let id = self.id();
                let element = self.ty(
                    &l.element_field.field_type,
                    &join(path, "element"),
                    depth + 1,
                )?;
                Ok(Type::List(ListType::new(
                    NestedField::list_element(id, element, false).into(),
                )))
            }
            Type::Map(m) => {
                let key = m.key_field.field_type.as_ref();
                if !matches!(
                    key,
                    Type::Primitive(
                        PrimitiveType::String | PrimitiveType::Int | PrimitiveType::Long
                    )
                ) {
                    return Err(LayoutError::MapKey {
                        field: path.to_owned(),
                        key: describe(key),
                    });
                }
                if m.value_field.required {
                    return Err(LayoutError::RequiredValue {
                        field: path.to_owned(),
                    });
                }
                let key_id = self.id();
                let value_id = self.id();
                let value = self.ty(&m.value_field.field_type, &join(path, "value"), depth + 1)?;
                Ok(Type::Map(MapType::new(
                    NestedField::map_key_element(key_id, key.clone()).into(),
                    NestedField::map_value_element(value_id, value, false).into(),
                )))
            }
        }
    }
}

/// Refuses empty and repeated names among one struct's fields (the JSON lookup is by
/// name, so a repeated one could never be told apart).
fn check_names(fields: &[iceberg::spec::NestedFieldRef], path: &str) -> Result<(), LayoutError> {
    for (i, field) in fields.iter().enumerate() {
        if field.name.is_empty() {
            return Err(LayoutError::EmptyName {
                parent: describe_parent(path),
            });
        }
        if fields[..i].iter().any(|f| f.name == field.name) {
            return Err(LayoutError::DuplicateField {
                parent: describe_parent(path),
                name: field.name.clone(),
            });
        }
    }
    Ok(())
}

/// How many top-level columns `fields` make.
fn count_columns(fields: &[iceberg::spec::NestedFieldRef], flatten: bool) -> usize {
    fields
        .iter()
        .map(|f| match f.field_type.as_ref() {
            Type::Struct(s) if flatten => count_columns(s.fields(), flatten),
            _ => 1,
        })
        .sum()
}

impl Layout {
    /// The layout of an expansion of `source` into `schema` (whose field ids are ignored).
    pub fn new(
        schema: &StructType,
        source: Source,
        options: &Options,
    ) -> Result<Layout, LayoutError> {
        if options.flatten_path && options.flatten_delimiter.is_empty() {
            return Err(LayoutError::EmptyDelimiter);
        }
        if schema.fields().is_empty() {
            return Err(LayoutError::EmptySchema);
        }
        let system = 4
            + usize::from(options.copy_source_column)
            + usize::from(options.missing_values_output)
            + usize::from(options.excess_values_output);
        let total = count_columns(schema.fields(), options.flatten_path) + system;
        let mut builder = Builder {
            options,
            columns: Vec::with_capacity(total),
            paths: Vec::with_capacity(total),
            // Top-level columns take 1..=total, nested fields the ids after them.
            next_id: i32::try_from(total).unwrap_or(i32::MAX).saturating_add(1),
        };
        let tree = builder.fields(schema.fields(), "", "", 1)?;
        let Builder { columns, paths, .. } = builder;
        let expansion_columns = columns.len();

        let mut seen: HashMap<&str, &str> = HashMap::with_capacity(columns.len());
        for (column, path) in columns.iter().zip(&paths) {
            if let Some(system) = SYSTEM_COLUMNS.iter().find(|s| **s == column.name) {
                return Err(LayoutError::Reserved {
                    field: path.clone(),
                    column: (*system).to_owned(),
                });
            }
            if options.copy_source_column && column.name == source.name() {
                return Err(LayoutError::SourceColumn {
                    field: path.clone(),
                    column: source.name().to_owned(),
                });
            }
            if let Some(first) = seen.insert(&column.name, path) {
                return Err(LayoutError::DuplicateColumn {
                    column: column.name.clone(),
                    first: first.to_owned(),
                    second: path.clone(),
                });
            }
        }

        let mut columns = columns;
        let mut system_column = |name: &str, ty: PrimitiveType| {
            columns.push(Column {
                name: name.to_owned(),
                ty: Type::Primitive(ty),
            })
        };
        if options.copy_source_column {
            system_column(source.name(), PrimitiveType::Binary);
        }
        if options.missing_values_output {
            system_column(MISSING_VALUES, PrimitiveType::Int);
        }
        if options.excess_values_output {
            system_column(EXCESS_VALUES, PrimitiveType::Int);
        }
        system_column(PARSE_ERROR, PrimitiveType::Int);
        system_column(PARTITION, PrimitiveType::Int);
        system_column(OFFSET, PrimitiveType::Long);
        system_column(TIMESTAMP, PrimitiveType::Timestamptz);

        Ok(Layout {
            source,
            options: options.clone(),
            columns,
            tree,
            expansion_columns,
        })
    }

    /// Target columns in order: the expansion columns (flattened or not), then the raw
    /// source copy (named `value`/`key`, binary) when `copy_source_column`, then
    /// `_missing_values` (int) and `_excess_values` (int) when asked, then always
    /// `_parse_error` (int), `_kafka_partition` (int), `_offset` (long), `_timestamp`
    /// (timestamptz). All optional.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The record column the JSON comes from.
    pub fn source(&self) -> Source {
        self.source
    }

    /// The options the layout was made with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The schema's top-level fields by JSON name.
    pub(crate) fn tree(&self) -> &[TreeField] {
        &self.tree
    }

    /// How many of the columns the schema's fields make (the rest are system columns).
    pub(crate) fn expansion_columns(&self) -> usize {
        self.expansion_columns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(ty: PrimitiveType) -> Type {
        Type::Primitive(ty)
    }

    fn opt(name: &str, ty: Type) -> iceberg::spec::NestedFieldRef {
        NestedField::optional(0, name, ty).into()
    }

    fn st(fields: Vec<iceberg::spec::NestedFieldRef>) -> Type {
        Type::Struct(StructType::new(fields))
    }

    fn schema(fields: Vec<iceberg::spec::NestedFieldRef>) -> StructType {
        StructType::new(fields)
    }

    fn flat() -> Options {
        Options {
            flatten_path: true,
            ..Options::default()
        }
    }

    fn names(layout: &Layout) -> Vec<&str> {
        layout.columns().iter().map(|c| c.name.as_str()).collect()
    }

    const SYSTEM: [&str; 4] = ["_parse_error", "_kafka_partition", "_offset", "_timestamp"];

    #[test]
    fn source_names_and_parse() {
        assert_eq!(Source::Key.name(), "key");
        assert_eq!(Source::Value.name(), "value");
        assert_eq!("key".parse::<Source>(), Ok(Source::Key));
        assert_eq!("value".parse::<Source>(), Ok(Source::Value));
        let err = "Value".parse::<Source>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown source `Value`: expected `key` or `value`"
        );
    }

    #[test]
    fn default_options() {
        let o = Options::default();
        assert!(!o.flatten_path && !o.copy_source_column);
        assert!(!o.missing_values_output && !o.excess_values_output);
        assert_eq!(o.flatten_delimiter, "__");
    }

    #[test]
    fn columns_in_order_with_system_columns() {
        let s = schema(vec![
            opt("id", p(PrimitiveType::Long)),
            opt("name", p(PrimitiveType::String)),
        ]);
        let l = Layout::new(&s, Source::Value, &Options::default()).unwrap();
        let mut want = vec!["id", "name"];
        want.extend(SYSTEM);
        assert_eq!(names(&l), want);
        assert_eq!(l.expansion_columns(), 2);
        let tys: Vec<&Type> = l.columns().iter().map(|c| &c.ty).collect();
        assert_eq!(tys[2], &p(PrimitiveType::Int));
        assert_eq!(tys[3], &p(PrimitiveType::Int));
        assert_eq!(tys[4], &p(PrimitiveType::Long));
        assert_eq!(tys[5], &p(PrimitiveType::Timestamptz));

        let all = Options {
            copy_source_column: true,
            missing_values_output: true,
            excess_values_output: true,
            ..Options::default()
        };
        let l = Layout::new(&s, Source::Key, &all).unwrap();
        let mut want = vec!["id", "name", "key", "_missing_values", "_excess_values"];
        want.extend(SYSTEM);
        assert_eq!(names(&l), want);
        assert_eq!(l.columns()[2].ty, p(PrimitiveType::Binary));
        assert_eq!(l.source(), Source::Key);
    }

    #[test]
    fn flatten_along_struct_paths_only() {
        let inner = st(vec![opt("c", p(PrimitiveType::Int))]);
        let s = schema(vec![
            opt("op", p(PrimitiveType::String)),
            opt(
                "after",
                st(vec![
                    opt("id", p(PrimitiveType::Long)),
                    opt("b", inner.clone()),
                ]),
            ),
            opt(
                "items",
                Type::List(ListType::new(
                    NestedField::list_element(0, inner.clone(), false).into(),
                )),
            ),
        ]);
        let l = Layout::new(&s, Source::Value, &flat()).unwrap();
        let mut want = vec!["op", "after__id", "after__b__c", "items"];
        want.extend(SYSTEM);
        assert_eq!(names(&l), want);
        // The struct inside the list stays nested.
        let Type::List(list) = &l.columns()[3].ty else {
            panic!("items is a list");
        };
        assert!(list.element_field.field_type.is_struct());

        let dotted = Options {
            flatten_delimiter: ".".into(),
            ..flat()
        };
        let l = Layout::new(&s, Source::Value, &dotted).unwrap();
        assert_eq!(names(&l)[..3], ["op", "after.id", "after.b.c"]);

        // Without flatten, the struct is one column.
        let l = Layout::new(&s, Source::Value, &Options::default()).unwrap();
        assert_eq!(names(&l)[..3], ["op", "after", "items"]);
    }

    /// Walks every nested field id of a type.
    fn ids(ty: &Type, out: &mut Vec<i32>) {
        match ty {
            Type::Primitive(_) => {}
            Type::Struct(s) => {
                for f in s.fields() {
                    out.push(f.id);
                    ids(&f.field_type, out);
                }
            }
            Type::List(l) => {
                out.push(l.element_field.id);
                ids(&l.element_field.field_type, out);
            }
            Type::Map(m) => {
                out.push(m.key_field.id);
                out.push(m.value_field.id);
                ids(&m.value_field.field_type, out);
            }
        }
    }

    #[test]
    fn ids_are_fresh_unique_and_after_the_columns() {
        let inner = st(vec![
            NestedField::optional(7, "x", p(PrimitiveType::Int)).into(),
            NestedField::optional(7, "y", p(PrimitiveType::Int)).into(),
        ]);
        let s = schema(vec![
            NestedField::optional(7, "a", inner.clone()).into(),
            NestedField::optional(7, "b", inner.clone()).into(),
            NestedField::optional(
                7,
                "m",
                Type::Map(MapType::new(
                    NestedField::map_key_element(7, p(PrimitiveType::String)).into(),
                    NestedField::map_value_element(7, inner, false).into(),
                )),
            )
            .into(),
        ]);
        let l = Layout::new(&s, Source::Value, &Options::default()).unwrap();
        let n = l.columns().len() as i32;
        let mut all = Vec::new();
        for c in l.columns() {
            ids(&c.ty, &mut all);
        }
        assert_eq!(all.len(), 8);
        assert!(all.iter().all(|id| *id > n), "{all:?}");
        let mut dedup = all.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(dedup.len(), all.len(), "{all:?}");
        // A schema of them builds (the iceberg crate checks ids are unique).
        let fields = l
            .columns()
            .iter()
            .enumerate()
            .map(|(i, c)| NestedField::optional(i as i32 + 1, &c.name, c.ty.clone()).into())
            .collect::<Vec<_>>();
        iceberg::spec::Schema::builder()
            .with_fields(fields)
            .build()
            .unwrap();
    }

    #[test]
    fn refuses_empty_schema_names_and_delimiter() {
        let err = Layout::new(&schema(vec![]), Source::Value, &Options::default()).unwrap_err();
        assert_eq!(err, LayoutError::EmptySchema);

        let s = schema(vec![opt("", p(PrimitiveType::Int))]);
        let err = Layout::new(&s, Source::Value, &Options::default()).unwrap_err();
        assert_eq!(err.to_string(), "the schema has a field with an empty name");

        let s = schema(vec![opt("a", st(vec![opt("", p(PrimitiveType::Int))]))]);
        let err = Layout::new(&s, Source::Value, &Options::default()).unwrap_err();
        assert_eq!(err.to_string(), "struct `a` has a field with an empty name");
        let err = Layout::new(&s, Source::Value, &flat()).unwrap_err();
        assert_eq!(err.to_string(), "struct `a` has a field with an empty name");

        let s = schema(vec![opt("a", p(PrimitiveType::Int))]);
        let no_delimiter = Options {
            flatten_delimiter: String::new(),
            ..flat()
        };
        let err = Layout::new(&s, Source::Value, &no_delimiter).unwrap_err();
        assert_eq!(err, LayoutError::EmptyDelimiter);
        // Without flatten the delimiter does not matter.
        let unused = Options {
            flatten_delimiter: String::new(),
            ..Options::default()
        };
        Layout::new(&s, Source::Value, &unused).unwrap();

        let s = schema(vec![opt("a", st(vec![]))]);
        let err = Layout::new(&s, Source::Value, &Options::default()).unwrap_err();
        assert_eq!(err.to_string(), "struct `a` has no fields");
        let err = Layout::new(&s, Source::Value, &flat()).unwrap_err();
        assert_eq!(err.to_string(), "struct `a` has no fields");
    }

    #[test]
    fn refuses_duplicate_columns() {
        // `a__b` beside struct `a` with field `b`, under flatten.
        let s = schema(vec![
            opt("a__b", p(PrimitiveType::Int)),
            opt("a", st(vec![opt("b", p(PrimitiveType::Int))])),
        ]);
        let err = Layout::new(&s, Source::Value, &flat()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "fields `a__b` and `a.b` would both be the column `a__b`"
        );
        Layout::new(&s, Source::Value, &Options::default()).unwrap();

        // Same name twice in one struct.
        let s = schema(vec![
            opt("x", p(PrimitiveType::Int)),
            opt("x", p(PrimitiveType::Long)),
        ]);
        let err = Layout::new(&s, Source::Value, &Options::default()).unwrap_err();
        assert_eq!(err.to_string(), "the schema has two fields named `x`");
        let s = schema(vec![opt(
            "s",
            st(vec![
                opt("x", p(PrimitiveType::Int)),
                opt("x", p(PrimitiveType::Int)),
            ]),
        )]);
        let err = Layout::new(&s, Source::Value, &Options::default()).unwrap_err();
        assert_eq!(err.to_string(), "struct `s` has two fields named `x`");

        // The source copy's name.
        let s = schema(vec![opt("value", p(PrimitiveType::String))]);
        let copy = Options {
            copy_source_column: true,
            ..Options::default()
        };
        let err = Layout::new(&s, Source::Value, &copy).unwrap_err();
        assert!(matches!(err, LayoutError::SourceColumn { .. }), "{err}");
        assert!(err.to_string().contains("`value`"), "{err}");
        Layout::new(&s, Source::Key, &copy).unwrap();
        Layout::new(&s, Source::Value, &Options::default()).unwrap();
        // Flattened into the source copy's name: `k` + `e` + `y`.
        let s = schema(vec![opt("k", st(vec![opt("y", p(PrimitiveType::Int))]))]);
        let odd = Options {
            flatten_path: true,
            flatten_delimiter: "e".into(),
            ..copy
        };
        let err = Layout::new(&s, Source::Key, &odd).unwrap_err();
        assert_eq!(
            err,
            LayoutError::SourceColumn {
                field: "k.y".into(),
                column: "key".into()
            }
        );
    }

    #[test]
    fn refuses_system_column_names() {
        for name in SYSTEM_COLUMNS {
            let s = schema(vec![opt(name, p(PrimitiveType::Int))]);
            let err = Layout::new(&s, Source::Value, &Options::default()).unwrap_err();
            assert_eq!(
                err,
                LayoutError::Reserved {
                    field: name.into(),
                    column: name.into()
                }
            );
        }
        // Through flatten too: struct `_missing` with field `values` joined by `_`.
        let s = schema(vec![opt(
            "_missing",
            st(vec![opt("values", p(PrimitiveType::Int))]),
        )]);
        let underscore = Options {
            flatten_delimiter: "_".into(),
            ..flat()
        };
        let err = Layout::new(&s, Source::Value, &underscore).unwrap_err();
        assert_eq!(
            err.to_string(),
            "field `_missing.values` would be the column `_missing_values`, a name the expansion keeps for its own column"
        );
        // Other names with an underscore, and system names nested in a struct, are fine.
        let s = schema(vec![
            opt("_id", p(PrimitiveType::Int)),
            opt("s", st(vec![opt("_offset", p(PrimitiveType::Int))])),
        ]);
        Layout::new(&s, Source::Value, &Options::default()).unwrap();
    }

    #[test]
    fn refuses_required_at_any_depth() {
        let s = schema(vec![
            NestedField::required(1, "id", p(PrimitiveType::Long)).into(),
        ]);
        let err = Layout::new(&s, Source::Value, &Options::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "field `id` is required, but every field of an expansion must be optional: any field may be absent from a record"
        );
        let s = schema(vec![opt(
            "after",
            st(vec![
                NestedField::required(1, "id", p(PrimitiveType::Long)).into(),
            ]),
        )]);
        for o in [Options::default(), flat()] {
            let err = Layout::new(&s, Source::Value, &o).unwrap_err();
            assert_eq!(
                err,
                LayoutError::Required {
                    field: "after.id".into()
                }
            );
        }
        // Inside a list's struct.
        let s = schema(vec![opt(
            "items",
            Type::List(ListType::new(
                NestedField::list_element(
                    0,
                    st(vec![
                        NestedField::required(1, "sku", p(PrimitiveType::String)).into(),
                    ]),
                    false,
                )
                .into(),
            )),
        )]);
        let err = Layout::new(&s, Source::Value, &flat()).unwrap_err();
        assert_eq!(
            err,
            LayoutError::Required {
                field: "items.element.sku".into()
            }
        );
        // Required list elements and map values.
        let s = schema(vec![opt(
            "tags",
            Type::List(ListType::new(
                NestedField::list_element(0, p(PrimitiveType::String), true).into(),
            )),
        )]);
        let err = Layout::new(&s, Source::Value, &Options::default()).unwrap_err();
        assert_eq!(
            err,
            LayoutError::RequiredElement {
                field: "tags".into()
            }
        );
        assert!(err.to_string().contains("must be optional"));
        let s = schema(vec![opt(
            "m",
            Type::Map(MapType::new(
                NestedField::map_key_element(0, p(PrimitiveType::String)).into(),
                NestedField::map_value_element(0, p(PrimitiveType::Int), true).into(),
            )),
        )]);
        let err = Layout::new(&s, Source::Value, &Options::default()).unwrap_err();
        assert_eq!(err, LayoutError::RequiredValue { field: "m".into() });
    }

    #[test]
    fn map_keys_string_int_long_only() {
        let map = |key: Type| {
            schema(vec![opt(
                "m",
                Type::Map(MapType::new(
                    NestedField::map_key_element(0, key).into(),
                    NestedField::map_value_element(0, p(PrimitiveType::Int), false).into(),
                )),
            )])
        };
        for key in [
            PrimitiveType::String,
            PrimitiveType::Int,
            PrimitiveType::Long,
        ] {
            Layout::new(&map(p(key)), Source::Value, &Options::default()).unwrap();
        }
        for key in [
            p(PrimitiveType::Uuid),
            p(PrimitiveType::Date),
            st(vec![opt("a", p(PrimitiveType::Int))]),
        ] {
            let err = Layout::new(&map(key), Source::Value, &Options::default()).unwrap_err();
            assert!(matches!(err, LayoutError::MapKey { .. }), "{err}");
        }
        let err = Layout::new(&map(p(PrimitiveType::Boolean)), Source::Value, &flat()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "map `m` has keys of type boolean, but map keys must be string, int or long: they are JSON object keys"
        );
    }

    #[test]
    fn refuses_unsupported_types_and_deep_nesting() {
        for ty in [PrimitiveType::TimestampNs, PrimitiveType::TimestamptzNs] {
            let s = schema(vec![opt("t", p(ty))]);
            let err = Layout::new(&s, Source::Value, &Options::default()).unwrap_err();
            assert!(matches!(err, LayoutError::Unsupported { .. }), "{err}");
        }
        let s = schema(vec![opt("f", p(PrimitiveType::Fixed(0)))]);
        assert!(Layout::new(&s, Source::Value, &Options::default()).is_err());

        let mut ty = p(PrimitiveType::Int);
        for _ in 0..MAX_DEPTH {
            ty = st(vec![opt("a", ty)]);
        }
        let s = schema(vec![opt("a", ty)]);
        let err = Layout::new(&s, Source::Value, &Options::default()).unwrap_err();
        assert!(matches!(err, LayoutError::TooDeep { .. }), "{err}");
        let err = Layout::new(&s, Source::Value, &flat()).unwrap_err();
        assert!(matches!(err, LayoutError::TooDeep { .. }), "{err}");
    }
}
