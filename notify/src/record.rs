//! One event as a Kafka record: key `bucket/key`, value an AWS S3 event JSON document,
//! headers the CloudEvents Kafka binary-mode attributes; and records as a magic-v2
//! batch for `KafkaOp::Append`.

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, Record,
    RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use serde_json::{Map, Value, json};

use crate::error::RecordError;
use crate::event::EventKind;

/// Who made a change, for `userIdentity`, `requestParameters` and `responseElements`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requester {
    /// Access key of the user.
    pub principal: String,
    /// Client address.
    pub source_ip: String,
    /// The request's id (also its `x-amz-request-id` response header).
    pub request_id: String,
}

/// One object change that may raise events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectChange {
    /// What happened.
    pub kind: EventKind,
    /// Bucket.
    pub bucket: String,
    /// Key, as stored.
    pub key: String,
    /// Object size (created and tagged objects).
    pub size: Option<u64>,
    /// ETag without quotes (created and tagged objects).
    pub etag: Option<String>,
    /// Version id as S3 reports it (none in a never-versioned bucket).
    pub version_id: Option<String>,
}

/// What a record carries besides the change itself.
#[derive(Debug, Clone)]
pub struct Envelope<'a> {
    /// `awsRegion`.
    pub region: &'a str,
    /// Prefix of `ce_type` (`eddy:` gives `eddy:Element.ElementCreated`).
    pub ce_type_prefix: &'a str,
    /// The bucket owner's access key.
    pub bucket_owner: &'a str,
    /// Who asked for the change.
    pub requester: &'a Requester,
    /// Event time, ms since the epoch.
    pub time_ms: i64,
    /// Orders the events of one key (hex in the record).
    pub sequencer: u64,
    /// The matching configuration's id.
    pub configuration_id: &'a str,
}

/// One event, ready to batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRecord {
    /// `bucket/key`.
    pub key: Bytes,
    /// The S3 event JSON.
    pub value: Bytes,
    /// CloudEvents attributes and the other headers, in order.
    pub headers: Vec<(&'static str, Bytes)>,
    /// Record timestamp (the event time).
    pub timestamp_ms: i64,
    /// The CloudEvents id.
    pub id: String,
}

/// Time as AWS writes it in events: `2026-11-30T13:29:14.123Z`.
pub fn event_time(ms: i64) -> String {
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
        .format(&fmt)
        .unwrap_or_default()
}

/// A key URL-encoded the way S3 event records carry it: form encoding (space as `+`,
/// reserved characters as `%XX`) with `/` left as is.
pub fn encode_key(key: &str) -> String {
    key.split('/')
        .map(|seg| form_urlencoded::byte_serialize(seg.as_bytes()).collect::<String>())
        .collect::<Vec<_>>()
        .join("/")
}

/// The S3 event JSON document of one change.
pub fn event_json(change: &ObjectChange, env: &Envelope<'_>) -> Value {
    let mut object = Map::new();
    object.insert("key".into(), encode_key(&change.key).into());
    if let Some(size) = change.size {
        object.insert("size".into(), size.into());
    }
    if let Some(etag) = &change.etag {
        object.insert("eTag".into(), etag.clone().into());
    }
    if let Some(v) = &change.version_id {
        object.insert("versionId".into(), v.clone().into());
    }
    object.insert("sequencer".into(), format!("{:016X}", env.sequencer).into());
    json!({
        "Records": [{
            "eventVersion": "2.1",
            "eventSource": "aws:s3",
            "awsRegion": env.region,
            "eventTime": event_time(env.time_ms),
            "eventName": change.kind.aws_name(),
            "userIdentity": { "principalId": env.requester.principal },
            "requestParameters": { "sourceIPAddress": env.requester.source_ip },
            "responseElements": {
                "x-amz-request-id": env.requester.request_id,
                "x-amz-id-2": env.requester.request_id,
            },
            "s3": {
                "s3SchemaVersion": "1.0",
                "configurationId": env.configuration_id,
                "bucket": {
                    "name": change.bucket,
                    "ownerIdentity": { "principalId": env.bucket_owner },
                    "arn": format!("arn:aws:s3:::{}", change.bucket),
                },
                "object": object,
            },
        }]
    })
}

/// The record of one change for one configuration.
pub fn event_record(change: &ObjectChange, env: &Envelope<'_>) -> EventRecord {
    let path = format!("{}/{}", change.bucket, change.key);
    let id = uuid::Uuid::new_v4().to_string();
    let time = event_time(env.time_ms);
    let value = serde_json::to_vec(&event_json(change, env)).unwrap_or_default();
    let s = |v: String| Bytes::from(v.into_bytes());
    let headers = vec![
        ("ce_specversion", Bytes::from_static(b"1.0")),
        ("ce_id", s(id.clone())),
        ("ce_source", s(format!("arn:aws:s3:::{}", change.bucket))),
        (
            "ce_type",
            s(format!(
                "{}{}",
                env.ce_type_prefix,
                change.kind.element().type_suffix()
            )),
        ),
        ("ce_subject", s(change.key.clone())),
        ("ce_time", s(time)),
        ("ce_elementpath", s(path.clone())),
        ("ce_eventname", s(format!("s3:{}", change.kind.aws_name()))),
        (
            "ce_minioeventname",
            Bytes::from_static(change.kind.minio_name().as_bytes()),
        ),
        ("content-type", Bytes::from_static(b"application/json")),
    ];
    EventRecord {
        key: s(path),
        value: Bytes::from(value),
        headers,
        timestamp_ms: env.time_ms,
        id,
    }
}

/// A magic-v2 batch of records for one partition, uncompressed, base offset 0 (the
/// catalog assigns the real one at commit).
#[derive(Debug, Clone)]
pub struct EncodedBatch {
    /// The batch bytes.
    pub bytes: Bytes,
    /// Offsets it covers.
    pub offset_count: u32,
    /// Its largest timestamp.
    pub max_timestamp: i64,
}

/// A record Eddy writes itself (event rows, pipeline events): no producer, so neither
/// idempotent nor transactional.
#[derive(Debug, Clone)]
pub struct PlainRecord {
    /// Its key.
    pub key: Option<Bytes>,
    /// Its value (`None`: a tombstone).
    pub value: Option<Bytes>,
    /// Its headers, in order.
    pub headers: Vec<(StrBytes, Bytes)>,
    /// Its timestamp, ms since the epoch.
    pub timestamp_ms: i64,
}

/// Encodes `records` into one batch with kafka-protocol's encoder.
pub fn encode_batch(
    records: &[EventRecord],
    log_append_time: bool,
) -> Result<EncodedBatch, RecordError> {
    let plain: Vec<PlainRecord> = records
        .iter()
        .map(|r| PlainRecord {
            key: Some(r.key.clone()),
            value: Some(r.value.clone()),
            headers: r
                .headers
                .iter()
                .map(|(k, v)| (StrBytes::from_static_str(k), v.clone()))
                .collect(),
            timestamp_ms: r.timestamp_ms,
        })
        .collect();
    encode_plain(plain, log_append_time)
}

/// Encodes plain records into one uncompressed magic-v2 batch at base offset 0 (the
/// catalog assigns the real one at commit).
pub fn encode_plain(
    records: Vec<PlainRecord>,
    log_append_time: bool,
) -> Result<EncodedBatch, RecordError> {
    // On a LogAppendTime topic the batch says so, and its records' time (taken when the
    // change was built, just before it commits) is the append time consumers see.
    let timestamp_type = if log_append_time {
        TimestampType::LogAppend
    } else {
        TimestampType::Creation
    };
    let records: Vec<Record> = records
        .into_iter()
        .enumerate()
        .map(|(i, r)| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            timestamp_type,
            offset: i as i64,
            // The encoder starts a new batch where offset minus sequence changes; with
            // no producer the batch's base sequence stays NO_SEQUENCE.
            sequence: NO_SEQUENCE.wrapping_add(i as i32),
            timestamp: r.timestamp_ms,
            key: r.key,
            value: r.value,
            headers: r
                .headers
                .into_iter()
                .map(|(k, v)| (k, Some(v)))
                .collect::<IndexMap<_, _>>(),
        })
        .collect();
    let offset_count =
        u32::try_from(records.len()).map_err(|_| RecordError::Encode("too many records".into()))?;
    let max_timestamp = records.iter().map(|r| r.timestamp).max().unwrap_or(-1);
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        &records,
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .map_err(|e| RecordError::Encode(e.to_string()))?;
    Ok(EncodedBatch {
        bytes: buf.freeze(),
        offset_count,
        max_timestamp,
    })
}

#[cfg(test)]
mod tests {
    use kafka_protocol::records::RecordBatchDecoder;

    use super::*;

    fn change(kind: EventKind, key: &str) -> ObjectChange {
        ObjectChange {
            kind,
            bucket: "photos".into(),
            key: key.into(),
            size: Some(5),
            etag: Some("5d41402abc4b2a76b9719d911017c592".into()),
            version_id: None,
        }
    }

    fn envelope(requester: &Requester) -> Envelope<'_> {
        Envelope {
            region: "us-east-1",
            ce_type_prefix: "vastdata.com:",
            bucket_owner: "eddyadmin",
            requester,
            time_ms: 1_700_000_000_123,
            sequencer: 0xAB,
            configuration_id: "cfg",
        }
    }

    #[test]
    fn keys_are_encoded_as_s3_does() {
        assert_eq!(encode_key("a b/c(1)+d.jpg"), "a+b/c%281%29%2Bd.jpg");
        assert_eq!(encode_key("dir/é"), "dir/%C3%A9");
        assert_eq!(event_time(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }

    #[test]
    fn record_fields() {
        let who = Requester {
            principal: "alice".into(),
            source_ip: "127.0.0.1".into(),
            request_id: "R1".into(),
        };
        let r = event_record(&change(EventKind::TaggingPut, "a b.txt"), &envelope(&who));
        assert_eq!(&r.key[..], b"photos/a b.txt");
        let h = |name: &str| {
            r.headers
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| String::from_utf8(v.to_vec()).unwrap())
                .unwrap()
        };
        assert_eq!(h("ce_type"), "vastdata.com:Element.ElementTagCreated");
        assert_eq!(h("ce_minioeventname"), "s3:ObjectCreated:PutTagging");
        assert_eq!(h("ce_eventname"), "s3:ObjectTagging:Put");
        assert_eq!(h("ce_elementpath"), "photos/a b.txt");
        assert_eq!(h("ce_id"), r.id);
        let v: Value = serde_json::from_slice(&r.value).unwrap();
        let rec = &v["Records"][0];
        assert_eq!(rec["eventName"], "ObjectTagging:Put");
        assert_eq!(rec["s3"]["object"]["key"], "a+b.txt");
        assert_eq!(rec["s3"]["object"]["sequencer"], "00000000000000AB");
        assert_eq!(rec["userIdentity"]["principalId"], "alice");
        assert!(rec["s3"]["object"].get("versionId").is_none());
    }

    #[test]
    fn batches_decode_with_kafka_protocol() {
        let who = Requester::default();
        let env = envelope(&who);
        let rs = [
            event_record(&change(EventKind::Put, "k"), &env),
            event_record(&change(EventKind::Delete, "k"), &env),
        ];
        let b = encode_batch(&rs, false).unwrap();
        assert_eq!(b.offset_count, 2);
        // Header: producer id (bytes 43..51) and base sequence (53..57) say "none".
        assert_eq!(&b.bytes[43..51], &(-1i64).to_be_bytes());
        assert_eq!(&b.bytes[53..57], &(-1i32).to_be_bytes());
        let mut bytes = b.bytes.clone();
        let decoded = RecordBatchDecoder::decode(&mut bytes).unwrap();
        assert_eq!(decoded.records.len(), 2);
        assert_eq!(decoded.records[1].offset, 1);
        assert_eq!(decoded.records[0].value.as_ref(), Some(&rs[0].value));
        assert_eq!(decoded.records[0].headers.len(), rs[0].headers.len());
        assert_eq!(decoded.records[0].timestamp_type, TimestampType::Creation);
        let mut stamped = encode_batch(&rs, true).unwrap().bytes;
        let decoded = RecordBatchDecoder::decode(&mut stamped).unwrap();
        assert_eq!(decoded.records[0].timestamp_type, TimestampType::LogAppend);
    }
}
