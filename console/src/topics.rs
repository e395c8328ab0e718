//! The topics pages' requests: the list (a page at a time, with sizes and retention and
//! compaction settings), one topic's partitions and offsets and configs, creating,
//! changing and deleting topics, browsing records from an offset or a time, and producing
//! a test record. Each is a Kafka request the broker answers for the signed-in user.

use std::collections::BTreeMap;

use bytes::Bytes;
use http::{Method, StatusCode};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::RecordBatchDecoder;
use serde::{Deserialize, Serialize};

use crate::kafka::Kafka;
use crate::session::Signed;
use crate::{ConsoleError, ConsoleResult, Reply, Request, call, json};

/// Most topics on one page of the list.
const MAX_PAGE: usize = 200;
/// Most records one browse returns.
const MAX_RECORDS: usize = 200;
/// Most bytes one browse reads per partition.
const BROWSE_BYTES: i32 = 4 << 20;
/// Largest test record the form produces.
const MAX_TEST_RECORD: usize = 512 << 10;

/// The configs the list shows for each topic.
const LISTED_CONFIGS: &[&str] = &["cleanup.policy", "retention.ms", "retention.bytes"];

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

fn name(s: &str) -> TopicName {
    TopicName(sb(s))
}

/// Routes `/console/api/topics/...`.
pub async fn route(
    kafka: &Kafka,
    who: &Signed,
    req: Request,
    segs: &[&str],
) -> ConsoleResult<Reply> {
    match (req.method.clone(), segs) {
        (Method::GET, []) => list(kafka, who, &req).await,
        (Method::POST, []) => create(kafka, who, req).await,
        (Method::GET, [topic]) => describe(kafka, who, &req, topic).await,
        (Method::DELETE, [topic]) => delete(kafka, who, &req, topic).await,
        (Method::POST, [topic, "config"]) => alter(kafka, who, req, topic).await,
        (Method::GET, [topic, "records"]) => browse(kafka, who, &req, topic).await,
        (Method::POST, [topic, "records"]) => produce(kafka, who, req, topic).await,
        _ => Err(ConsoleError::NotFound(format!(
            "no console API {} /console/api/topics/{}",
            req.method,
            segs.join("/")
        ))),
    }
}

/// The topics the user may describe, by name, with their partition counts.
pub async fn metadata(
    kafka: &Kafka,
    who: &Signed,
    peer: std::net::SocketAddr,
    topics: Option<&[&str]>,
) -> ConsoleResult<Vec<(String, usize, bool, i16)>> {
    let request = MetadataRequest::default()
        .with_topics(topics.map(|t| {
            t.iter()
                .map(|n| metadata_request::MetadataRequestTopic::default().with_name(Some(name(n))))
                .collect()
        }))
        .with_allow_auto_topic_creation(false);
    let r = call!(kafka, &who.user, peer, 12, Metadata(request));
    Ok(r.topics
        .into_iter()
        .filter_map(|t| {
            let n = t.name?.0.to_string();
            Some((n, t.partitions.len(), t.is_internal, t.error_code))
        })
        .collect())
}

#[derive(Serialize)]
struct Listed {
    name: String,
    partitions: usize,
    internal: bool,
    bytes: u64,
    records: u64,
    configs: BTreeMap<String, String>,
}

/// `GET topics?filter=&offset=&limit=`: a page of the topics the user may describe,
/// sorted by name, and how many match in all.
async fn list(kafka: &Kafka, who: &Signed, req: &Request) -> ConsoleResult<Reply> {
    let filter = req.param("filter").unwrap_or_default();
    let offset: usize = req
        .param("offset")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let limit = req
        .param("limit")
        .and_then(|v| v.parse().ok())
        .unwrap_or(50usize)
        .clamp(1, MAX_PAGE);
    let mut all: Vec<_> = metadata(kafka, who, req.peer, None)
        .await?
        .into_iter()
        .filter(|(n, _, _, e)| *e == 0 && n.contains(filter.as_str()))
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    let total = all.len();
    let page: Vec<_> = all.into_iter().skip(offset).take(limit).collect();
    let names: Vec<&str> = page.iter().map(|(n, ..)| n.as_str()).collect();
    let mut configs = describe_configs(kafka, who, req.peer, &names, Some(LISTED_CONFIGS))
        .await
        .unwrap_or_default();
    let store = kafka.broker().catalog.kafka();
    let mut topics = Vec::with_capacity(page.len());
    for (n, partitions, internal, _) in page {
        // Sizes come from the catalog, for topics the broker just listed to this user.
        let (mut bytes, mut records) = (0u64, 0u64);
        if let Ok(Some(t)) = store.topic(&n).await {
            for p in 0..t.partitions {
                if let Ok(Some(st)) = store.partition(t.id, p).await {
                    bytes = bytes.saturating_add(st.bytes);
                    records =
                        records.saturating_add(st.next_offset.saturating_sub(st.log_start_offset));
                }
            }
        }
        topics.push(Listed {
            configs: configs.remove(&n).unwrap_or_default(),
            name: n,
            partitions,
            internal,
            bytes,
            records,
        });
    }
    Ok(json(
        StatusCode::OK,
        &serde_json::json!({ "total": total, "offset": offset, "topics": topics }),
    ))
}

/// The configs of `topics` (only `keys`, when given), by topic.
async fn describe_configs(
    kafka: &Kafka,
    who: &Signed,
    peer: std::net::SocketAddr,
    topics: &[&str],
    keys: Option<&[&str]>,
) -> ConsoleResult<BTreeMap<String, BTreeMap<String, String>>> {
    if topics.is_empty() {
        return Ok(BTreeMap::new());
    }
    let request = DescribeConfigsRequest::default().with_resources(
        topics
            .iter()
            .map(|t| {
                describe_configs_request::DescribeConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(sb(t))
                    .with_configuration_keys(keys.map(|k| k.iter().map(|k| sb(k)).collect()))
            })
            .collect(),
    );
    let r = call!(kafka, &who.user, peer, 4, DescribeConfigs(request));
    Ok(r.results
        .into_iter()
        .filter(|res| res.error_code == 0)
        .map(|res| {
            let configs = res
                .configs
                .into_iter()
                .filter_map(|c| Some((c.name.to_string(), c.value?.to_string())))
                .collect();
            (res.resource_name.to_string(), configs)
        })
        .collect())
}

#[derive(Deserialize)]
struct NewTopic {
    name: String,
    #[serde(default = "one")]
    partitions: i32,
    #[serde(default)]
    configs: BTreeMap<String, String>,
}

fn one() -> i32 {
    1
}

/// `POST topics` with `{"name", "partitions", "configs"}`: CreateTopics.
async fn create(kafka: &Kafka, who: &Signed, req: Request) -> ConsoleResult<Reply> {
    let (user, peer) = (who.user.clone(), req.peer);
    let t: NewTopic = req.json().await?;
    let request = CreateTopicsRequest::default()
        .with_topics(vec![
            create_topics_request::CreatableTopic::default()
                .with_name(name(&t.name))
                .with_num_partitions(t.partitions)
                .with_replication_factor(-1)
                .with_configs(
                    t.configs
                        .iter()
                        .map(|(k, v)| {
                            create_topics_request::CreatableTopicConfig::default()
                                .with_name(sb(k))
                                .with_value(Some(sb(v)))
                        })
                        .collect(),
                ),
        ])
        .with_timeout_ms(30_000);
    let r = call!(kafka, &user, peer, 7, CreateTopics(request));
    for t in &r.topics {
        if t.error_code != 0 {
            return Err(ConsoleError::kafka(
                t.error_code,
                &format!("creating topic {}", t.name.0),
                t.error_message.as_deref(),
            ));
        }
    }
    Ok(json(
        StatusCode::CREATED,
        &serde_json::json!({ "name": t.name, "partitions": t.partitions }),
    ))
}

/// `DELETE topics/NAME`: DeleteTopics.
async fn delete(kafka: &Kafka, who: &Signed, req: &Request, topic: &str) -> ConsoleResult<Reply> {
    let request = DeleteTopicsRequest::default()
        .with_topics(vec![
            delete_topics_request::DeleteTopicState::default().with_name(Some(name(topic))),
        ])
        .with_timeout_ms(30_000);
    let r = call!(kafka, &who.user, req.peer, 6, DeleteTopics(request));
    for t in &r.responses {
        if t.error_code != 0 {
            return Err(ConsoleError::kafka(
                t.error_code,
                &format!("deleting topic {topic}"),
                t.error_message.as_deref(),
            ));
        }
    }
    Ok(json(
        StatusCode::OK,
        &serde_json::json!({ "deleted": topic }),
    ))
}

#[derive(Deserialize)]
struct ConfigChange {
    #[serde(default)]
    set: BTreeMap<String, String>,
    #[serde(default)]
    delete: Vec<String>,
}

/// `POST topics/NAME/config` with `{"set": {k: v}, "delete": [k]}`:
/// IncrementalAlterConfigs.
async fn alter(kafka: &Kafka, who: &Signed, req: Request, topic: &str) -> ConsoleResult<Reply> {
    let (user, peer) = (who.user.clone(), req.peer);
    let change: ConfigChange = req.json().await?;
    let mut configs: Vec<_> = change
        .set
        .iter()
        .map(|(k, v)| {
            incremental_alter_configs_request::AlterableConfig::default()
                .with_name(sb(k))
                .with_config_operation(0)
                .with_value(Some(sb(v)))
        })
        .collect();
    configs.extend(change.delete.iter().map(|k| {
        incremental_alter_configs_request::AlterableConfig::default()
            .with_name(sb(k))
            .with_config_operation(1)
    }));
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
        incremental_alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(sb(topic))
            .with_configs(configs),
    ]);
    let r = call!(kafka, &user, peer, 1, IncrementalAlterConfigs(request));
    for res in &r.responses {
        if res.error_code != 0 {
            return Err(ConsoleError::kafka(
                res.error_code,
                &format!("changing the configs of {topic}"),
                res.error_message.as_deref(),
            ));
        }
    }
    Ok(json(
        StatusCode::OK,
        &serde_json::json!({ "changed": topic }),
    ))
}

/// The offsets of `partitions` of `topic` at `timestamp` (-2 earliest, -1 latest, or a
/// time in ms: the first offset at or after it, -1 where none is).
pub async fn offsets_at(
    kafka: &Kafka,
    who: &Signed,
    peer: std::net::SocketAddr,
    topic: &str,
    partitions: &[i32],
    timestamp: i64,
) -> ConsoleResult<BTreeMap<i32, i64>> {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![
            list_offsets_request::ListOffsetsTopic::default()
                .with_name(name(topic))
                .with_partitions(
                    partitions
                        .iter()
                        .map(|p| {
                            list_offsets_request::ListOffsetsPartition::default()
                                .with_partition_index(*p)
                                .with_current_leader_epoch(-1)
                                .with_timestamp(timestamp)
                        })
                        .collect(),
                ),
        ]);
    let r = call!(kafka, &who.user, peer, 7, ListOffsets(request));
    let mut out = BTreeMap::new();
    for t in r.topics {
        for p in t.partitions {
            if p.error_code != 0 {
                return Err(ConsoleError::kafka(
                    p.error_code,
                    &format!("listing the offsets of {topic}"),
                    None,
                ));
            }
            out.insert(p.partition_index, p.offset);
        }
    }
    Ok(out)
}

/// `GET topics/NAME`: partitions with their first and next offsets, every config, and
/// what the user may do with the topic.
async fn describe(kafka: &Kafka, who: &Signed, req: &Request, topic: &str) -> ConsoleResult<Reply> {
    let found = metadata(kafka, who, req.peer, Some(&[topic])).await?;
    let Some((_, partitions, internal, error)) = found.into_iter().next() else {
        return Err(ConsoleError::NotFound(format!("no topic {topic}")));
    };
    if error != 0 {
        return Err(ConsoleError::kafka(error, &format!("topic {topic}"), None));
    }
    let ids: Vec<i32> = (0..partitions as i32).collect();
    let first = offsets_at(kafka, who, req.peer, topic, &ids, -2).await?;
    let next = offsets_at(kafka, who, req.peer, topic, &ids, -1).await?;
    let configs = describe_configs(kafka, who, req.peer, &[topic], None)
        .await?
        .remove(topic)
        .unwrap_or_default();
    let ctx = kafka.ctx(&who.user, req.peer);
    let parts: Vec<_> = ids
        .iter()
        .map(|p| {
            serde_json::json!({
                "partition": p,
                "first_offset": first.get(p),
                "next_offset": next.get(p),
            })
        })
        .collect();
    Ok(json(
        StatusCode::OK,
        &serde_json::json!({
            "name": topic,
            "internal": internal,
            "partitions": parts,
            "configs": configs,
            "can": {
                "read": ctx.would_allow_topic(broker::authz::READ, topic),
                "write": !internal && ctx.would_allow_topic(broker::authz::WRITE, topic),
                "alter": !internal && ctx.would_allow_topic(broker::authz::CREATE, topic),
                "delete": !internal && ctx.would_allow_topic(broker::authz::DELETE, topic),
            },
        }),
    ))
}

/// A record as the browser shows it: text where the bytes are UTF-8, else hex.
#[derive(Serialize)]
pub struct Shown {
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// Timestamp (ms).
    pub timestamp: i64,
    /// The key.
    pub key: Option<Payload>,
    /// The value.
    pub value: Option<Payload>,
    /// Headers.
    pub headers: Vec<(String, Option<Payload>)>,
}

/// Bytes as text, or as hex when they are not UTF-8.
#[derive(Serialize)]
pub struct Payload {
    /// `utf8` or `hex`.
    pub encoding: &'static str,
    /// The text.
    pub data: String,
    /// How many bytes.
    pub size: usize,
}

impl Payload {
    fn of(b: &[u8]) -> Self {
        match std::str::from_utf8(b) {
            Ok(s) => Self {
                encoding: "utf8",
                data: s.to_owned(),
                size: b.len(),
            },
            Err(_) => Self {
                encoding: "hex",
                data: b.iter().map(|x| format!("{x:02x}")).collect(),
                size: b.len(),
            },
        }
    }
}

/// Reads records of `topic`'s `partition` from `offset` (at most `limit`).
pub async fn read(
    kafka: &Kafka,
    who: &Signed,
    peer: std::net::SocketAddr,
    topic: &str,
    partition: i32,
    offset: i64,
    limit: usize,
) -> ConsoleResult<Vec<Shown>> {
    let mut out = Vec::new();
    if limit == 0 {
        return Ok(out);
    }
    let mut at = offset;
    // A few rounds: a compacted or transactional stretch may hold fewer records than
    // asked for in one read.
    for _ in 0..4 {
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(0)
            .with_max_bytes(BROWSE_BYTES)
            .with_isolation_level(1)
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_topics(vec![
                fetch_request::FetchTopic::default()
                    .with_topic(name(topic))
                    .with_partitions(vec![
                        fetch_request::FetchPartition::default()
                            .with_partition(partition)
                            .with_current_leader_epoch(-1)
                            .with_fetch_offset(at)
                            .with_last_fetched_epoch(-1)
                            .with_log_start_offset(-1)
                            .with_partition_max_bytes(BROWSE_BYTES),
                    ]),
            ]);
        let r = call!(kafka, &who.user, peer, 12, Fetch(request));
        if r.error_code != 0 {
            return Err(ConsoleError::kafka(
                r.error_code,
                &format!("reading {topic}"),
                None,
            ));
        }
        let Some(p) = r.responses.into_iter().flat_map(|t| t.partitions).next() else {
            break;
        };
        if p.error_code != 0 {
            return Err(ConsoleError::kafka(
                p.error_code,
                &format!("reading {topic}"),
                None,
            ));
        }
        let mut records = p.records.unwrap_or_default();
        let mut progressed = false;
        while !records.is_empty() {
            let Ok(set) = RecordBatchDecoder::decode(&mut records) else {
                // A batch cut at the byte limit ends this read.
                break;
            };
            for rec in set.records {
                if rec.offset < at {
                    continue;
                }
                at = rec.offset.saturating_add(1);
                progressed = true;
                if rec.control {
                    continue;
                }
                out.push(Shown {
                    partition,
                    offset: rec.offset,
                    timestamp: rec.timestamp,
                    key: rec.key.as_deref().map(Payload::of),
                    value: rec.value.as_deref().map(Payload::of),
                    headers: rec
                        .headers
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.as_deref().map(Payload::of)))
                        .collect(),
                });
                if out.len() >= limit {
                    return Ok(out);
                }
            }
        }
        if !progressed || at >= p.high_watermark {
            break;
        }
    }
    Ok(out)
}

/// `GET topics/NAME/records?partition=&offset=|time=&limit=`: records from an offset,
/// or from the first at or after a time (ms since the epoch).
async fn browse(kafka: &Kafka, who: &Signed, req: &Request, topic: &str) -> ConsoleResult<Reply> {
    let partition: i32 = req
        .param("partition")
        .map(|p| p.parse())
        .transpose()
        .map_err(|_| ConsoleError::BadRequest("partition must be a number".into()))?
        .unwrap_or(0);
    let limit = req
        .param("limit")
        .and_then(|v| v.parse().ok())
        .unwrap_or(50usize)
        .clamp(1, MAX_RECORDS);
    let offset = match (req.param("offset"), req.param("time")) {
        (Some(o), _) => o
            .parse::<i64>()
            .map_err(|_| ConsoleError::BadRequest("offset must be a number".into()))?,
        (None, Some(t)) => {
            let t = t
                .parse::<i64>()
                .map_err(|_| ConsoleError::BadRequest("time must be milliseconds".into()))?;
            let found = offsets_at(kafka, who, req.peer, topic, &[partition], t).await?;
            match found.get(&partition) {
                Some(o) if *o >= 0 => *o,
                // Nothing at or after that time: from the end.
                _ => offsets_at(kafka, who, req.peer, topic, &[partition], -1)
                    .await?
                    .get(&partition)
                    .copied()
                    .unwrap_or(0),
            }
        }
        (None, None) => offsets_at(kafka, who, req.peer, topic, &[partition], -2)
            .await?
            .get(&partition)
            .copied()
            .unwrap_or(0),
    };
    let records = read(kafka, who, req.peer, topic, partition, offset, limit).await?;
    Ok(json(
        StatusCode::OK,
        &serde_json::json!({ "partition": partition, "from": offset, "records": records }),
    ))
}

#[derive(Deserialize)]
struct TestRecord {
    #[serde(default)]
    partition: Option<i32>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    value: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// `POST topics/NAME/records` with `{"partition"?, "key"?, "value"?, "headers"?}`:
/// Produce with acks=all (partition 0 unless given).
async fn produce(kafka: &Kafka, who: &Signed, req: Request, topic: &str) -> ConsoleResult<Reply> {
    let (user, peer) = (who.user.clone(), req.peer);
    let rec: TestRecord = req.json().await?;
    let size = rec.key.as_ref().map_or(0, String::len) + rec.value.as_ref().map_or(0, String::len);
    if size > MAX_TEST_RECORD {
        return Err(ConsoleError::BadRequest(format!(
            "a test record holds at most {MAX_TEST_RECORD} bytes"
        )));
    }
    let partition = rec.partition.unwrap_or(0);
    let batch = notify::record::encode_plain(
        vec![notify::record::PlainRecord {
            key: rec.key.map(Bytes::from),
            value: rec.value.map(Bytes::from),
            headers: rec
                .headers
                .into_iter()
                .map(|(k, v)| (StrBytes::from_string(k), Bytes::from(v)))
                .collect(),
            timestamp_ms: broker::context::now_ms(),
        }],
        false,
    )
    .map_err(|e| ConsoleError::Internal(format!("encoding the record: {e}")))?;
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![
            produce_request::TopicProduceData::default()
                .with_name(name(topic))
                .with_partition_data(vec![
                    produce_request::PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(batch.bytes)),
                ]),
        ]);
    let r = call!(kafka, &user, peer, 9, Produce(request));
    let p = r
        .responses
        .into_iter()
        .flat_map(|t| t.partition_responses)
        .next()
        .ok_or_else(|| ConsoleError::Internal("the produce response is empty".into()))?;
    if p.error_code != 0 {
        return Err(ConsoleError::kafka(
            p.error_code,
            &format!("producing to {topic}"),
            p.error_message.as_deref(),
        ));
    }
    Ok(json(
        StatusCode::CREATED,
        &serde_json::json!({ "partition": partition, "offset": p.base_offset }),
    ))
}
