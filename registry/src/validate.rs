//! Broker-side schema validation (Confluent Server's `confluent.value.schema.validation`
//! and `confluent.key.schema.validation`): each record's key or value must be in the
//! registry's wire format (magic byte 0, a 4-byte schema id, then the data), its id a
//! live version of the subject the topic's strategy names, and its data decode with
//! that schema. Parsed schemas are kept by id (an id never changes its schema); the
//! subjects are read from the catalog on every check, so a deleted version stops
//! passing at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::error::RegistryResult;
use crate::formats::Parsed;
use crate::store::{Store, versions};

/// Most parsed schemas kept; beyond it the cache starts over (schemas in use are parsed
/// again on their next record).
const MAX_CACHED: usize = 1024;

/// How a topic's records name their subject (the `*.subject.name.strategy` configs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// `<topic>-key` / `<topic>-value`.
    TopicName,
    /// The record's full name (Avro name, Protobuf message, JSON Schema `title`).
    RecordName,
    /// `<topic>-<record full name>`.
    TopicRecordName,
}

impl Strategy {
    /// The strategy a config value names (Confluent's class names, or the short ones).
    pub fn named(s: &str) -> Option<Self> {
        let short = s.rsplit('.').next().unwrap_or(s);
        Some(match short {
            "TopicNameStrategy" => Strategy::TopicName,
            "RecordNameStrategy" => Strategy::RecordName,
            "TopicRecordNameStrategy" => Strategy::TopicRecordName,
            _ => return None,
        })
    }
}

/// Which part of the record is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The key.
    Key,
    /// The value.
    Value,
}

impl Part {
    fn name(self) -> &'static str {
        match self {
            Part::Key => "key",
            Part::Value => "value",
        }
    }
}

/// Checks records against the registry.
pub struct Validator {
    store: Store,
    parsed: Mutex<HashMap<u32, Arc<Parsed>>>,
    metrics: crate::metrics::RegistryMetrics,
}

impl Validator {
    /// A validator over `catalog`'s registry, counting into `metrics`.
    pub fn new(
        catalog: Arc<dyn catalog::Catalog>,
        metrics: crate::metrics::RegistryMetrics,
    ) -> Self {
        Self {
            store: Store::new(catalog),
            parsed: Mutex::new(HashMap::new()),
            metrics,
        }
    }

    /// The parsed schema of `id` (none: no such id).
    async fn schema(&self, id: u32) -> RegistryResult<Option<Arc<Parsed>>> {
        if let Some(p) = self.cached(id) {
            return Ok(Some(p));
        }
        let Some(record) = self.store.schema(id).await? else {
            return Ok(None);
        };
        let parsed = Arc::new(self.store.parsed(&record).await?);
        let mut cache = self.parsed.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(id, parsed.clone());
        Ok(Some(parsed))
    }

    fn cached(&self, id: u32) -> Option<Arc<Parsed>> {
        let cache = self.parsed.lock().unwrap_or_else(|p| p.into_inner());
        cache.get(&id).cloned()
    }

    /// Why each of `payloads` (the records' keys or values, by their index) fails, in
    /// record order; empty when all pass. A null key or value passes (a tombstone, or a
    /// record without a key).
    pub async fn check(
        &self,
        topic: &str,
        part: Part,
        strategy: Strategy,
        payloads: &[Option<Bytes>],
    ) -> RegistryResult<Vec<(usize, String)>> {
        let mut failed = Vec::new();
        let mut subjects: HashMap<String, Vec<u32>> = HashMap::new();
        for (i, payload) in payloads.iter().enumerate() {
            let Some(p) = payload else {
                continue;
            };
            self.metrics.validated.inc();
            match self
                .check_one(topic, part, strategy, p, &mut subjects)
                .await?
            {
                Ok(()) => {}
                Err(why) => {
                    self.metrics.refused.inc();
                    failed.push((i, why));
                }
            }
        }
        Ok(failed)
    }

    async fn check_one(
        &self,
        topic: &str,
        part: Part,
        strategy: Strategy,
        p: &[u8],
        subjects: &mut HashMap<String, Vec<u32>>,
    ) -> RegistryResult<Result<(), String>> {
        let name = part.name();
        let (Some((&0, rest)), true) = (p.split_first(), p.len() >= 5) else {
            return Ok(Err(format!(
                "the {name} is not in the schema registry's wire format (magic byte 0 and a 4-byte schema id)"
            )));
        };
        let id = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let data = &rest[4..];
        let Some(schema) = self.schema(id).await? else {
            return Ok(Err(format!(
                "the {name}'s schema id {id} is not registered"
            )));
        };
        let subject = match strategy {
            Strategy::TopicName => format!("{topic}-{name}"),
            Strategy::RecordName | Strategy::TopicRecordName => {
                let Some(record) = schema.record_name(data) else {
                    return Ok(Err(format!(
                        "the {name}'s schema {id} has no record name for the subject"
                    )));
                };
                if strategy == Strategy::RecordName {
                    record
                } else {
                    format!("{topic}-{record}")
                }
            }
        };
        if !subjects.contains_key(&subject) {
            let ids = match self.store.subject(&subject).await? {
                Some(r) => versions(&r, false).map(|v| v.id).collect(),
                None => Vec::new(),
            };
            subjects.insert(subject.clone(), ids);
        }
        if !subjects.get(&subject).is_some_and(|ids| ids.contains(&id)) {
            return Ok(Err(format!(
                "the {name}'s schema id {id} is not a version of subject {subject}"
            )));
        }
        Ok(schema
            .decode(data)
            .map_err(|e| format!("the {name} does not decode with schema {id}: {e}")))
    }
}
