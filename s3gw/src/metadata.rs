//! S3 Metadata for a bucket: `CreateBucketMetadataConfiguration`,
//! `GetBucketMetadataConfiguration`, `DeleteBucketMetadataConfiguration`,
//! `UpdateBucketMetadataInventoryTableConfiguration` and
//! `UpdateBucketMetadataJournalTableConfiguration` (`?metadataConfiguration`,
//! `?metadataInventoryTable`, `?metadataJournalTable`). s3s does not know these newer
//! operations, so they are a custom route, signed and checked like every other request.
//!
//! Creating one makes the bucket's journal topic (`s3-journal.<bucket>`, one partition,
//! its retention the journal's record expiration) and stores the configuration in the
//! bucket's settings in the same transaction; from then on every object change appends
//! its event record to the journal in its own transaction (`notify::metadata`), and the
//! Iceberg catalog serves `b_<bucket>.journal` and, when enabled, the live
//! `b_<bucket>.inventory`. Deleting it drops the inventory table and keeps the journal
//! topic (as AWS keeps the tables), which Kafka can delete.

use std::collections::BTreeMap;

use bytes::Bytes;
use catalog::{BucketRecord, CatalogError, IcebergOp, KafkaOp, Op, S3Op, TopicRecord, Transaction};
use http::{Extensions, HeaderMap, Method, StatusCode, Uri};
use notify::MetadataConfig;
use notify::metadata::{journal_topic, namespace};
use s3s::route::S3Route;
use s3s::{Body, S3Error, S3ErrorCode, S3Request, S3Response, S3Result, s3_error};
use serde::{Deserialize, Serialize};

use crate::error::{OrS3, catalog_error};
use crate::{Domains, Gateway, authz};

/// The operations, by the query parameter and method that name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Create,
    Get,
    Delete,
    UpdateInventory,
    UpdateJournal,
}

impl Call {
    fn of(method: &Method, query: &str) -> Option<Self> {
        let has = |p: &str| form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == p);
        if has("metadataConfiguration") {
            match *method {
                Method::POST => Some(Call::Create),
                Method::GET => Some(Call::Get),
                Method::DELETE => Some(Call::Delete),
                _ => None,
            }
        } else if has("metadataInventoryTable") && method == Method::PUT {
            Some(Call::UpdateInventory)
        } else if has("metadataJournalTable") && method == Method::PUT {
            Some(Call::UpdateJournal)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Call::Create => "CreateBucketMetadataConfiguration",
            Call::Get => "GetBucketMetadataConfiguration",
            Call::Delete => "DeleteBucketMetadataConfiguration",
            Call::UpdateInventory => "UpdateBucketMetadataInventoryTableConfiguration",
            Call::UpdateJournal => "UpdateBucketMetadataJournalTableConfiguration",
        }
    }

    /// The IAM action, as AWS names it.
    fn action(self) -> &'static str {
        match self {
            Call::Create => "s3:CreateBucketMetadataTableConfiguration",
            Call::Get => "s3:GetBucketMetadataTableConfiguration",
            Call::Delete => "s3:DeleteBucketMetadataTableConfiguration",
            Call::UpdateInventory => "s3:UpdateBucketMetadataInventoryTableConfiguration",
            Call::UpdateJournal => "s3:UpdateBucketMetadataJournalTableConfiguration",
        }
    }
}

/// What `is_match` found, for `call`.
#[derive(Debug, Clone)]
struct Matched {
    call: Call,
    bucket: String,
}

/// The custom route serving the metadata configuration operations.
pub struct MetadataRoute {
    gw: Gateway,
    domains: Domains,
}

impl MetadataRoute {
    pub(crate) fn new(gw: Gateway, domains: Domains) -> Self {
        Self { gw, domains }
    }
}

/// The bucket a request names: `bucket.DOMAIN` (path `/`), or the path's only segment.
fn bucket_of(domains: &Domains, uri: &Uri, headers: &HeaderMap) -> Option<String> {
    let host = headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| uri.host())
        .unwrap_or_default();
    let path = uri.path();
    if let (_, Some(bucket)) = domains.split(host) {
        return (path == "/" || path.is_empty()).then(|| bucket.to_owned());
    }
    let segment = path.strip_prefix('/')?.trim_end_matches('/');
    if segment.is_empty() || segment.contains('/') {
        return None;
    }
    percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

#[async_trait::async_trait]
impl S3Route for MetadataRoute {
    fn is_match(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        ext: &mut Extensions,
    ) -> bool {
        let Some(call) = uri.query().and_then(|q| Call::of(method, q)) else {
            return false;
        };
        let Some(bucket) = bucket_of(&self.domains, uri, headers) else {
            return false;
        };
        ext.insert(Matched { call, bucket });
        true
    }

    async fn check_access(&self, req: &mut S3Request<Body>) -> S3Result<()> {
        let Some(m) = req.extensions.get::<Matched>().cloned() else {
            return Err(s3_error!(InternalError, "metadata route without its match"));
        };
        if let Some(slot) = req.extensions.get::<crate::OperationSlot>().cloned() {
            let _ = slot.0.set(m.call.name().to_owned());
        }
        let principal = req.credentials.as_ref().map(|c| c.access_key.clone());
        let source = req.extensions.get::<crate::ClientAddr>().map(|a| a.0.ip());
        let secure = req
            .extensions
            .get::<authz::SecureTransport>()
            .is_some_and(|s| s.0);
        let who = authz::AuthzContext {
            context: authz::context(principal.as_deref(), source, secure, req.uri.query()),
            principal,
        };
        self.gw
            .authorize(&who, m.call.action(), Some(&m.bucket), None)
            .await
    }

    async fn call(&self, mut req: S3Request<Body>) -> S3Result<S3Response<Body>> {
        let Some(m) = req.extensions.get::<Matched>().cloned() else {
            return Err(s3_error!(InternalError, "metadata route without its match"));
        };
        let body =
            req.input.store_all_limited(MAX_BODY).await.map_err(|_| {
                s3_error!(MaxMessageLengthExceeded, "The request body is too large")
            })?;
        match m.call {
            Call::Create => create(&self.gw, &m.bucket, &body).await,
            Call::Get => get(&self.gw, &m.bucket).await,
            Call::Delete => delete(&self.gw, &m.bucket).await,
            Call::UpdateInventory => update_inventory(&self.gw, &m.bucket, &body).await,
            Call::UpdateJournal => update_journal(&self.gw, &m.bucket, &body).await,
        }
    }
}

/// The largest configuration document taken.
const MAX_BODY: usize = 64 * 1024;

/// `MetadataConfiguration`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct MetadataConfiguration {
    journal_table_configuration: Option<JournalTableConfiguration>,
    inventory_table_configuration: Option<InventoryTableConfiguration>,
    annotation_table_configuration: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct JournalTableConfiguration {
    record_expiration: Option<RecordExpiration>,
    encryption_configuration: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "PascalCase")]
struct RecordExpiration {
    expiration: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    days: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InventoryTableConfiguration {
    configuration_state: String,
    encryption_configuration: Option<serde::de::IgnoredAny>,
}

fn malformed(why: &str) -> S3Error {
    S3Error::with_message(
        S3ErrorCode::MalformedXML,
        format!(
            "The XML you provided was not well-formed or did not validate against our published schema: {why}"
        ),
    )
}

fn parse<T: serde::de::DeserializeOwned>(body: &Bytes) -> S3Result<T> {
    let text = std::str::from_utf8(body).map_err(|_| malformed("not UTF-8"))?;
    quick_xml::de::from_str(text).map_err(|e| malformed(&e.to_string()))
}

/// Table files are objects of the broker bucket, encrypted as it is: a table encryption
/// configuration would promise what Eddy does not do, so it is refused.
fn no_table_encryption(e: &Option<serde::de::IgnoredAny>) -> S3Result<()> {
    if e.is_some() {
        return Err(s3_error!(
            NotImplemented,
            "EncryptionConfiguration of metadata tables is not supported: their files are objects of the broker bucket"
        ));
    }
    Ok(())
}

/// The journal's record expiration as days kept (`None`: kept forever).
fn expiration_days(r: &Option<RecordExpiration>) -> S3Result<Option<u32>> {
    let Some(r) = r else {
        return Err(malformed("RecordExpiration is required"));
    };
    match (r.expiration.as_str(), r.days) {
        ("DISABLED", None) => Ok(None),
        ("DISABLED", Some(_)) => Err(s3_error!(
            InvalidArgument,
            "Days must not be given when Expiration is DISABLED"
        )),
        // AWS's bounds: at least 7 days.
        ("ENABLED", Some(d)) if (7..=2_147_483_647).contains(&d) => Ok(Some(d as u32)),
        ("ENABLED", _) => Err(s3_error!(
            InvalidArgument,
            "Days must be an integer of at least 7 when Expiration is ENABLED"
        )),
        (other, _) => Err(s3_error!(
            InvalidArgument,
            "Expiration must be ENABLED or DISABLED, not {other:?}"
        )),
    }
}

fn inventory_state(s: &str) -> S3Result<bool> {
    match s {
        "ENABLED" => Ok(true),
        "DISABLED" => Ok(false),
        other => Err(s3_error!(
            InvalidArgument,
            "ConfigurationState must be ENABLED or DISABLED, not {other:?}"
        )),
    }
}

fn not_configured(bucket: &str) -> S3Error {
    let mut e = S3Error::with_message(
        S3ErrorCode::Custom("MetadataConfigurationNotFound".into()),
        format!("The bucket {bucket} has no metadata configuration"),
    );
    e.set_status_code(StatusCode::NOT_FOUND);
    e
}

async fn bucket_record(gw: &Gateway, bucket: &str) -> S3Result<BucketRecord> {
    gw.catalog()
        .s3()
        .bucket(bucket)
        .await
        .or_s3()?
        .ok_or_else(|| s3_error!(NoSuchBucket, "The specified bucket does not exist"))
}

fn stored(record: &BucketRecord) -> S3Result<Option<MetadataConfig>> {
    MetadataConfig::load(&record.settings).map_err(|e| {
        catalog_error(CatalogError::Corrupt(format!(
            "bucket {}: {e}",
            record.name
        )))
    })
}

/// Attempts at a change before giving up on concurrent changes of the bucket's record.
const ATTEMPTS: usize = 8;

/// A change of a bucket's metadata configuration.
enum Edit {
    Create(MetadataConfig),
    Delete,
    Inventory(bool),
    Journal(Option<u32>),
}

/// Commits `edit`'s ops for the bucket's record as read, retrying when another change
/// of the record committed first.
async fn commit_with(gw: &Gateway, bucket: &str, edit: &Edit) -> S3Result<()> {
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(1 << attempt)).await;
        }
        let record = bucket_record(gw, bucket).await?;
        let ops = ops_for(gw, bucket, &record, edit).await?;
        match gw.catalog().commit(Transaction::new(ops)).await {
            Ok(_) => return Ok(()),
            Err(CatalogError::PreconditionFailed(_)) => continue,
            Err(e) => return Err(catalog_error(e)),
        }
    }
    Err(s3_error!(
        OperationAborted,
        "A conflicting conditional operation is currently in progress against this resource. Please try again."
    ))
}

/// The ops of `edit` on the bucket's record as read.
async fn ops_for(
    gw: &Gateway,
    bucket: &str,
    record: &BucketRecord,
    edit: &Edit,
) -> S3Result<Vec<Op>> {
    let current = stored(record)?;
    let mut ops = Vec::new();
    match edit {
        Edit::Create(config) => {
            if current.is_some() {
                let mut e = S3Error::with_message(
                    S3ErrorCode::Custom("MetadataConfigurationAlreadyExists".into()),
                    format!(
                        "The bucket {bucket} already has a metadata configuration: delete it first or update its tables"
                    ),
                );
                e.set_status_code(StatusCode::CONFLICT);
                return Err(e);
            }
            // A journal topic kept from an earlier configuration goes on.
            if gw
                .catalog()
                .kafka()
                .topic(&config.journal_topic)
                .await
                .or_s3()?
                .is_none()
            {
                ops.push(Op::Kafka(KafkaOp::CreateTopic(TopicRecord {
                    name: config.journal_topic.clone(),
                    id: uuid::Uuid::new_v4().as_u128(),
                    partitions: 1,
                    configs: BTreeMap::from([("retention.ms".to_owned(), config.retention_ms())]),
                    created_ms: config.created_ms,
                })));
            }
            ops.push(replace(record, |s| config.store(s)));
        }
        Edit::Delete => {
            if current.is_none() {
                return Err(not_configured(bucket));
            }
            ops.push(replace(record, MetadataConfig::remove));
            ops.extend(drop_inventory(gw, bucket).await?);
        }
        Edit::Inventory(enabled) => {
            let mut config = current.ok_or_else(|| not_configured(bucket))?;
            config.inventory = *enabled;
            ops.push(replace(record, |s| config.store(s)));
            if !enabled {
                ops.extend(drop_inventory(gw, bucket).await?);
            }
        }
        Edit::Journal(days) => {
            let mut config = current.ok_or_else(|| not_configured(bucket))?;
            config.expiration_days = *days;
            ops.push(replace(record, |s| config.store(s)));
            if let Some(mut topic) = gw
                .catalog()
                .kafka()
                .topic(&config.journal_topic)
                .await
                .or_s3()?
            {
                topic
                    .configs
                    .insert("retention.ms".to_owned(), config.retention_ms());
                ops.push(Op::Kafka(KafkaOp::UpdateTopic(topic)));
            }
        }
    }
    Ok(ops)
}

fn replace(expected: &BucketRecord, change: impl FnOnce(&mut BTreeMap<String, Vec<u8>>)) -> Op {
    let mut record = expected.clone();
    change(&mut record.settings);
    Op::S3(S3Op::ReplaceBucket {
        expected: expected.clone(),
        record,
    })
}

/// The op dropping the bucket's inventory table and its files, if there is one.
pub(crate) async fn drop_inventory(gw: &Gateway, bucket: &str) -> S3Result<Option<Op>> {
    let ns = namespace(bucket);
    Ok(gw
        .catalog()
        .iceberg()
        .other_table(&ns, "inventory")
        .await
        .or_s3()?
        .map(|rec| {
            Op::Iceberg(IcebergOp::PutTable {
                namespace: ns,
                name: "inventory".to_owned(),
                expected: rec.generation,
                table: None,
            })
        }))
}

async fn create(gw: &Gateway, bucket: &str, body: &Bytes) -> S3Result<S3Response<Body>> {
    let doc: MetadataConfiguration = parse(body)?;
    let journal = doc
        .journal_table_configuration
        .ok_or_else(|| malformed("JournalTableConfiguration is required"))?;
    no_table_encryption(&journal.encryption_configuration)?;
    let expiration_days = expiration_days(&journal.record_expiration)?;
    let inventory = match &doc.inventory_table_configuration {
        Some(i) => {
            no_table_encryption(&i.encryption_configuration)?;
            inventory_state(&i.configuration_state)?
        }
        None => false,
    };
    if doc.annotation_table_configuration.is_some() {
        return Err(s3_error!(
            NotImplemented,
            "AnnotationTableConfiguration is not supported"
        ));
    }
    let config = MetadataConfig {
        journal_topic: journal_topic(bucket),
        expiration_days,
        inventory,
        created_ms: crate::now_ms(),
    };
    commit_with(gw, bucket, &Edit::Create(config)).await?;
    tracing::info!(bucket, inventory, "bucket metadata configuration created");
    Ok(S3Response::new(Body::empty()))
}

async fn delete(gw: &Gateway, bucket: &str) -> S3Result<S3Response<Body>> {
    commit_with(gw, bucket, &Edit::Delete).await?;
    let mut resp = S3Response::new(Body::empty());
    resp.status = Some(StatusCode::NO_CONTENT);
    Ok(resp)
}

/// `InventoryTableConfiguration` as the update's body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InventoryUpdate {
    configuration_state: String,
    encryption_configuration: Option<serde::de::IgnoredAny>,
}

async fn update_inventory(gw: &Gateway, bucket: &str, body: &Bytes) -> S3Result<S3Response<Body>> {
    let doc: InventoryUpdate = parse(body)?;
    no_table_encryption(&doc.encryption_configuration)?;
    let enabled = inventory_state(&doc.configuration_state)?;
    commit_with(gw, bucket, &Edit::Inventory(enabled)).await?;
    Ok(S3Response::new(Body::empty()))
}

/// `JournalTableConfiguration` as the update's body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct JournalUpdate {
    record_expiration: Option<RecordExpiration>,
}

async fn update_journal(gw: &Gateway, bucket: &str, body: &Bytes) -> S3Result<S3Response<Body>> {
    let doc: JournalUpdate = parse(body)?;
    let days = expiration_days(&doc.record_expiration)?;
    commit_with(gw, bucket, &Edit::Journal(days)).await?;
    Ok(S3Response::new(Body::empty()))
}

/// `GetBucketMetadataConfigurationResult`.
#[derive(Serialize)]
#[serde(
    rename = "GetBucketMetadataConfigurationResult",
    rename_all = "PascalCase"
)]
struct GetResult {
    #[serde(rename = "@xmlns")]
    xmlns: &'static str,
    metadata_configuration_result: ConfigurationResult,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct ConfigurationResult {
    destination_result: DestinationResult,
    journal_table_configuration_result: JournalResult,
    inventory_table_configuration_result: InventoryResult,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct DestinationResult {
    table_bucket_type: &'static str,
    table_bucket_arn: String,
    table_namespace: String,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct JournalResult {
    table_status: &'static str,
    table_name: &'static str,
    table_arn: String,
    record_expiration: RecordExpiration,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct InventoryResult {
    configuration_state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    table_status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    table_name: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    table_arn: Option<String>,
}

async fn get(gw: &Gateway, bucket: &str) -> S3Result<S3Response<Body>> {
    let record = bucket_record(gw, bucket).await?;
    let config = stored(&record)?.ok_or_else(|| not_configured(bucket))?;
    let ns = namespace(bucket);
    let warehouse = "arn:aws:s3tables:::bucket/eddy".to_owned();
    let table_arn = |t: &str| format!("{warehouse}/table/{ns}/{t}");
    let journal_exists = gw
        .catalog()
        .kafka()
        .topic(&config.journal_topic)
        .await
        .or_s3()?
        .is_some();
    let result = GetResult {
        xmlns: "http://s3.amazonaws.com/doc/2006-03-01/",
        metadata_configuration_result: ConfigurationResult {
            destination_result: DestinationResult {
                table_bucket_type: "aws",
                table_bucket_arn: warehouse.clone(),
                table_namespace: ns.clone(),
            },
            journal_table_configuration_result: JournalResult {
                table_status: if journal_exists { "ACTIVE" } else { "FAILED" },
                table_name: "journal",
                table_arn: table_arn("journal"),
                record_expiration: RecordExpiration {
                    expiration: if config.expiration_days.is_some() {
                        "ENABLED"
                    } else {
                        "DISABLED"
                    }
                    .to_owned(),
                    days: config.expiration_days.map(i64::from),
                },
            },
            inventory_table_configuration_result: if config.inventory {
                InventoryResult {
                    configuration_state: "ENABLED",
                    table_status: Some("ACTIVE"),
                    table_name: Some("inventory"),
                    table_arn: Some(table_arn("inventory")),
                }
            } else {
                InventoryResult {
                    configuration_state: "DISABLED",
                    table_status: None,
                    table_name: None,
                    table_arn: None,
                }
            },
        },
    };
    let xml = quick_xml::se::to_string(&result)
        .map_err(|e| s3_error!(InternalError, "metadata configuration XML: {e}"))?;
    let mut resp = S3Response::new(Body::from(format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>{xml}"
    )));
    resp.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/xml"),
    );
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_named_by_query_and_method() {
        assert_eq!(
            Call::of(&Method::POST, "metadataConfiguration"),
            Some(Call::Create)
        );
        assert_eq!(
            Call::of(&Method::GET, "metadataConfiguration="),
            Some(Call::Get)
        );
        assert_eq!(
            Call::of(&Method::PUT, "metadataInventoryTable"),
            Some(Call::UpdateInventory)
        );
        assert_eq!(Call::of(&Method::PUT, "metadataConfiguration"), None);
        assert_eq!(Call::of(&Method::GET, "metadata"), None);
    }

    #[test]
    fn a_configuration_document_parses() {
        let doc: MetadataConfiguration = parse(&Bytes::from_static(
            b"<MetadataConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><JournalTableConfiguration><RecordExpiration><Expiration>ENABLED</Expiration><Days>30</Days></RecordExpiration></JournalTableConfiguration><InventoryTableConfiguration><ConfigurationState>ENABLED</ConfigurationState></InventoryTableConfiguration></MetadataConfiguration>",
        ))
        .unwrap();
        let j = doc.journal_table_configuration.unwrap();
        assert_eq!(expiration_days(&j.record_expiration).unwrap(), Some(30));
        assert!(
            inventory_state(
                &doc.inventory_table_configuration
                    .unwrap()
                    .configuration_state
            )
            .unwrap()
        );
        assert!(parse::<MetadataConfiguration>(&Bytes::from_static(b"<Metadata")).is_err());
        let bad = Some(RecordExpiration {
            expiration: "ENABLED".into(),
            days: Some(3),
        });
        assert!(expiration_days(&bad).is_err());
    }
}
