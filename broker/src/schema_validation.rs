//! Schema validation on produce, for topics with `confluent.value.schema.validation` or
//! `confluent.key.schema.validation` on: each record's value (key) is handed to the
//! schema registry's [`SchemaValidator`], and a partition with any record refused is
//! refused whole with INVALID_RECORD, naming each record and why (`record_errors`), so
//! nothing of its batches is appended.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;

use crate::batch::{Batch, Refusal};
use crate::configs;

/// What the registry's check answers: per refused record its index and why; `Err` when
/// the check could not run (the registry's state unreadable).
pub type Checked<'a> =
    Pin<Box<dyn Future<Output = Result<Vec<(usize, String)>, String>> + Send + 'a>>;

/// Checks records against the schema registry (the eddy binary hands the broker the
/// registry's validator).
pub trait SchemaValidator: Send + Sync {
    /// Checks `payloads` (each record's key when `key`, else its value) of `topic`,
    /// whose subjects are named by `strategy` (the topic's strategy config).
    fn check<'a>(
        &'a self,
        topic: &'a str,
        key: bool,
        strategy: &'a str,
        payloads: Vec<Option<Bytes>>,
    ) -> Checked<'a>;
}

/// Which of a topic's parts are validated, with their strategies.
fn parts(configs: &std::collections::BTreeMap<String, String>) -> Vec<(bool, &str)> {
    let mut out = Vec::new();
    if configs::value(configs, "confluent.key.schema.validation") == "true" {
        out.push((
            true,
            configs::value(configs, "confluent.key.subject.name.strategy"),
        ));
    }
    if configs::value(configs, "confluent.value.schema.validation") == "true" {
        out.push((
            false,
            configs::value(configs, "confluent.value.subject.name.strategy"),
        ));
    }
    out
}

/// Refuses the partition when a record of `batches` fails the topic's validation.
pub async fn check(
    validator: Option<&dyn SchemaValidator>,
    topic: &catalog::TopicRecord,
    batches: &[Batch],
) -> Result<(), Refusal> {
    let parts = parts(&topic.configs);
    if parts.is_empty() {
        return Ok(());
    }
    let refuse = |error: ResponseError, message: String| Refusal {
        error,
        message,
        records: Vec::new(),
    };
    let Some(validator) = validator else {
        return Err(refuse(
            ResponseError::InvalidRecord,
            "schema validation is on for this topic, but no schema registry is served".into(),
        ));
    };
    let mut failed: Vec<(i32, String)> = Vec::new();
    for b in batches {
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut b.bytes.clone())
            .map_err(|e| {
                refuse(
                    ResponseError::CorruptMessage,
                    format!("records do not decode: {e}"),
                )
            })?;
        for &(key, strategy) in &parts {
            let payloads: Vec<Option<Bytes>> = set
                .records
                .iter()
                .map(|r| if key { r.key.clone() } else { r.value.clone() })
                .collect();
            let refused = validator
                .check(&topic.name, key, strategy, payloads)
                .await
                .map_err(|e| {
                    refuse(
                        ResponseError::KafkaStorageError,
                        format!("schema validation could not run: {e}"),
                    )
                })?;
            failed.extend(
                refused
                    .into_iter()
                    .map(|(i, why)| (i32::try_from(i).unwrap_or(i32::MAX), why)),
            );
        }
    }
    if failed.is_empty() {
        return Ok(());
    }
    failed.sort_by_key(|(i, _)| *i);
    Err(Refusal::invalid_records(failed))
}
