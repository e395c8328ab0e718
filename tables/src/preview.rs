//! A preview of a table's first rows, for the web console: the current snapshot's data
//! files, in manifest order, read until enough rows are found, each value as the text
//! Arrow displays it (binary values as text when they are UTF-8, as a record's JSON value
//! is, else as hex). Files are fetched by the caller's `read` (the console fetches them
//! through S3 as its signed-in user, so reading them is authorized as any client's
//! read). A snapshot with delete files is not previewed: its data files alone would show
//! rows that were deleted.

use std::future::Future;

use arrow::array::{Array, AsArray};
use arrow::datatypes::DataType;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use bytes::Bytes;
use iceberg::spec::{
    DataContentType, FormatVersion, Manifest, ManifestContentType, ManifestList, ManifestStatus,
    TableMetadata,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::{TableError, TableResult};

/// The first rows of a table.
#[derive(Debug, serde::Serialize)]
pub struct Preview {
    /// Column names, in the files' order.
    pub columns: Vec<String>,
    /// Rows: one text per column (`None`: null).
    pub rows: Vec<Vec<Option<String>>>,
}

/// The first `limit` rows of the table whose metadata is `metadata` (the `metadata`
/// object of a load-table answer), its files read by `read`.
pub async fn rows<F, Fut>(
    metadata: &serde_json::Value,
    limit: usize,
    read: F,
) -> TableResult<Preview>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = TableResult<Bytes>>,
{
    let metadata: TableMetadata = serde_json::from_value(metadata.clone())
        .map_err(|e| TableError::BadRequest(format!("table metadata: {e}")))?;
    let mut out = Preview {
        columns: Vec::new(),
        rows: Vec::new(),
    };
    let Some(snapshot) = metadata.current_snapshot() else {
        return Ok(out);
    };
    let version = match metadata.format_version() {
        FormatVersion::V1 => FormatVersion::V1,
        _ => FormatVersion::V2,
    };
    let list = ManifestList::parse_with_version(
        &read(snapshot.manifest_list().to_owned()).await?,
        version,
    )?;
    if list
        .entries()
        .iter()
        .any(|m| m.content == ManifestContentType::Deletes)
    {
        return Err(TableError::BadRequest(
            "the table's current snapshot has delete files: query it with an engine to see its rows".into(),
        ));
    }
    for m in list.entries() {
        let (entries, _) =
            Manifest::parse_avro(&read(m.manifest_path.clone()).await?)?.into_parts();
        for e in entries {
            if e.status() == ManifestStatus::Deleted
                || e.data_file().content_type() != DataContentType::Data
            {
                continue;
            }
            let file = read(e.data_file().file_path().to_owned()).await?;
            let reader = ParquetRecordBatchReaderBuilder::try_new(file)
                .map_err(|err| TableError::BadRequest(format!("data file: {err}")))?
                .with_batch_size(limit.max(1))
                .build()
                .map_err(|err| TableError::BadRequest(format!("data file: {err}")))?;
            for batch in reader {
                let batch = batch?;
                if out.columns.is_empty() {
                    out.columns = batch
                        .schema()
                        .fields()
                        .iter()
                        .map(|f| f.name().clone())
                        .collect();
                }
                let options = FormatOptions::default();
                let formatters = batch
                    .columns()
                    .iter()
                    .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
                    .collect::<Result<Vec<_>, _>>()?;
                for row in 0..batch.num_rows() {
                    if out.rows.len() >= limit {
                        return Ok(out);
                    }
                    out.rows.push(
                        batch
                            .columns()
                            .iter()
                            .zip(&formatters)
                            .map(|(c, f)| (!c.is_null(row)).then(|| cell(c.as_ref(), f, row)))
                            .collect(),
                    );
                }
            }
        }
    }
    Ok(out)
}

/// One value as text: binary as UTF-8 text when it is, else what Arrow displays.
fn cell(column: &dyn Array, display: &ArrayFormatter<'_>, row: usize) -> String {
    let bytes = match column.data_type() {
        DataType::Binary => Some(column.as_binary::<i32>().value(row)),
        DataType::LargeBinary => Some(column.as_binary::<i64>().value(row)),
        _ => None,
    };
    match bytes.map(std::str::from_utf8) {
        Some(Ok(text)) => text.to_owned(),
        _ => display.value(row).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{BinaryArray, Int64Array};

    use super::*;

    #[test]
    fn binary_values_show_as_text_when_they_are_utf8() {
        let values: Arc<dyn Array> = Arc::new(BinaryArray::from(vec![
            b"{\"a\": 1}".as_slice(),
            &[0xff, 0x00],
        ]));
        let options = FormatOptions::default();
        let f = ArrayFormatter::try_new(values.as_ref(), &options).unwrap();
        assert_eq!(cell(values.as_ref(), &f, 0), "{\"a\": 1}");
        assert_eq!(cell(values.as_ref(), &f, 1), "ff00");
        let longs: Arc<dyn Array> = Arc::new(Int64Array::from(vec![42]));
        let f = ArrayFormatter::try_new(longs.as_ref(), &options).unwrap();
        assert_eq!(cell(longs.as_ref(), &f, 0), "42");
    }
}
