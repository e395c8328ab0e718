//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics, share groups'
//! `share.*` configs (GROUP resources, `crate::group::share::configs`), and read-only
//! broker configs. Config changes are one catalog transaction per resource.

use crate::authz::*;
use catalog::KafkaOp;
use kafka_protocol::messages::{
    alter_configs_response, describe_configs_response, incremental_alter_configs_response,
};
use std::collections::BTreeMap;

use catalog::{Op, TopicRecord, Transaction};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, ResponseKind,
};

use kafka_protocol::protocol::StrBytes;

use crate::configs::{self, Kind};
use crate::context::{Ctx, Reply, sb};
use crate::error::from_catalog;

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const GROUP: i8 = 32;
/// Config sources.
const DYNAMIC_TOPIC: i8 = 1;
const DYNAMIC_GROUP: i8 = 8;
const STATIC_BROKER: i8 = 4;
const DEFAULT: i8 = 5;

fn broker_configs(ctx: &Ctx) -> Vec<(&'static str, String, Kind)> {
    let c = &ctx.broker.config;
    let (host, port) = ctx.broker.cluster.advertised(ctx.node, ctx.local);
    let name = ctx.broker.cluster.listener_name(ctx.local);
    let listener = format!("{name}://{host}:{port}");
    let ms = |d: std::time::Duration| d.as_millis().to_string();
    vec![
        ("broker.id", ctx.node.to_string(), Kind::Int(0)),
        ("node.id", ctx.node.to_string(), Kind::Int(0)),
        // What tools read to find the node; the same address Metadata gives.
        ("advertised.listeners", listener.clone(), Kind::Text),
        ("listeners", listener, Kind::Text),
        (
            "listener.security.protocol.map",
            format!("{name}:{}", ctx.broker.cluster.listener_protocol(ctx.local)),
            Kind::Text,
        ),
        ("inter.broker.listener.name", name.to_owned(), Kind::Text),
        ("log.dirs", c.log_dir.clone(), Kind::Text),
        ("process.roles", "broker,controller".into(), Kind::Text),
        ("offsets.topic.replication.factor", "1".into(), Kind::Int(1)),
        (
            "transaction.state.log.replication.factor",
            "1".into(),
            Kind::Int(1),
        ),
        ("compression.type", "producer".into(), Kind::Text),
        ("log.cleanup.policy", "delete".into(), Kind::Text),
        ("connections.max.idle.ms", ms(c.idle_timeout), Kind::Long(0)),
        (
            "group.initial.rebalance.delay.ms",
            ms(c.groups.initial_rebalance_delay),
            Kind::Int(0),
        ),
        (
            "group.min.session.timeout.ms",
            ms(c.groups.min_session_timeout),
            Kind::Int(0),
        ),
        (
            "group.max.session.timeout.ms",
            ms(c.groups.max_session_timeout),
            Kind::Int(0),
        ),
        (
            "log.cleaner.backoff.ms",
            ms(c.compaction_check_interval),
            Kind::Long(0),
        ),
        (
            "auto.create.topics.enable",
            c.auto_create_topics.to_string(),
            Kind::Boolean,
        ),
        (
            "num.partitions",
            c.default_partitions.to_string(),
            Kind::Int(1),
        ),
        ("default.replication.factor", "1".into(), Kind::Int(1)),
        ("min.insync.replicas", "1".into(), Kind::Int(1)),
        ("message.max.bytes", "1048588".into(), Kind::Int(0)),
        (
            "socket.request.max.bytes",
            c.max_frame_bytes.to_string(),
            Kind::Int(1),
        ),
        ("log.retention.ms", "604800000".into(), Kind::Long(-1)),
        (
            "log.retention.check.interval.ms",
            c.retention_check_interval.as_millis().to_string(),
            Kind::Long(1),
        ),
    ]
}

fn entry(
    name: &str,
    value: &str,
    source: i8,
    read_only: bool,
    kind: Kind,
) -> DescribeConfigsResourceResult {
    DescribeConfigsResourceResult::default()
        .with_name(sb(name))
        .with_value(Some(sb(value)))
        .with_config_source(source)
        .with_read_only(read_only)
        .with_config_type(kind.type_code())
}

/// DescribeConfigs.
pub async fn describe(ctx: &Ctx, req: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let results = {
        let mut out = Vec::new();
        for r in req.resources.into_iter() {
            out.push({
                let keys: Option<Vec<String>> = r
                    .configuration_keys
                    .as_ref()
                    .map(|k| k.iter().map(|s| s.to_string()).collect());
                let wanted = |n: &str| keys.as_ref().is_none_or(|k| k.iter().any(|x| x == n));
                let mut out = DescribeConfigsResult::default()
                    .with_resource_type(r.resource_type)
                    .with_resource_name(r.resource_name.clone());
                match r.resource_type {
                    TOPIC => match ctx.broker.catalog.kafka().topic(&r.resource_name).await {
                        Ok(Some(t)) => {
                            out.configs = configs::TOPIC_CONFIGS
                                .iter()
                                .filter(|d| wanted(d.name))
                                .map(|d| match t.configs.get(d.name) {
                                    Some(v) => entry(d.name, v, DYNAMIC_TOPIC, false, d.kind),
                                    None => entry(d.name, d.default, DEFAULT, false, d.kind),
                                })
                                .collect();
                        }
                        Ok(None) => {
                            out.error_code = ResponseError::UnknownTopicOrPartition.code();
                            out.error_message =
                                Some(sb(&format!("unknown topic {}", &*r.resource_name)));
                        }
                        Err(e) => out.error_code = from_catalog(&e).code(),
                    },
                    GROUP => match ctx.broker.groups.share_configs(&r.resource_name).await {
                        Ok(c) => {
                            out.configs = c
                                .describe(ctx.broker.groups.shares.config())
                                .into_iter()
                                .filter(|(n, _, _)| wanted(n))
                                .map(|(n, v, set)| {
                                    let source = if set { DYNAMIC_GROUP } else { DEFAULT };
                                    let kind = if v.parse::<i64>().is_ok() {
                                        Kind::Int(0)
                                    } else {
                                        Kind::Text
                                    };
                                    entry(n, &v, source, false, kind)
                                })
                                .collect();
                        }
                        Err((e, m)) => {
                            out.error_code = e.code();
                            out.error_message = Some(sb(&m));
                        }
                    },
                    BROKER => {
                        out.configs = broker_configs(ctx)
                            .into_iter()
                            .filter(|(n, _, _)| wanted(n))
                            .map(|(n, v, k)| entry(n, &v, STATIC_BROKER, true, k))
                            .collect();
                    }
                    other => {
                        out.error_code = ResponseError::InvalidRequest.code();
                        out.error_message =
                            Some(sb(&format!("resource type {other} has no configs here")));
                    }
                }
                out
            });
        }
        out
    };
    DescribeConfigsResponse::default().with_results(results)
}

/// The outcome of one resource's change: error code and message.
type Outcome = (i16, Option<String>);

/// Validates and commits new configs for one topic resource.
async fn change_topic(
    ctx: &Ctx,
    resource_type: i8,
    name: &str,
    validate_only: bool,
    edit: impl FnOnce(&mut BTreeMap<String, String>) -> Result<(), String>,
) -> Result<Option<catalog::CommitFuture>, Outcome> {
    if resource_type == BROKER {
        return Err((
            ResponseError::PolicyViolation.code(),
            Some("broker configs are set in Eddy's configuration, not over Kafka".into()),
        ));
    }
    if resource_type != TOPIC {
        return Err((
            ResponseError::InvalidRequest.code(),
            Some("unsupported resource type".into()),
        ));
    }
    let mut topic: TopicRecord = match ctx.broker.catalog.kafka().topic(name).await {
        Ok(Some(t)) => t,
        Ok(None) => {
            return Err((
                ResponseError::UnknownTopicOrPartition.code(),
                Some(format!("unknown topic {name}")),
            ));
        }
        Err(e) => return Err((from_catalog(&e).code(), Some(e.to_string()))),
    };
    edit(&mut topic.configs).map_err(|m| (ResponseError::InvalidConfig.code(), Some(m)))?;
    configs::validate_all(&topic.configs)
        .map_err(|m| (ResponseError::InvalidConfig.code(), Some(m)))?;
    if validate_only {
        return Ok(None);
    }
    Ok(Some(ctx.broker.catalog.commit(Transaction::new(vec![
        Op::Kafka(KafkaOp::UpdateTopic(topic)),
    ]))))
}

/// Validates and (unless `validate_only`) applies SET and DELETE operations on a share
/// group's configs; done when durable, as the group coordinator commits them.
async fn change_group(
    ctx: &Ctx,
    name: &str,
    validate_only: bool,
    ops: Vec<(String, i8, Option<String>)>,
) -> Result<Option<catalog::CommitFuture>, Outcome> {
    let invalid = |m: String| (ResponseError::InvalidConfig.code(), Some(m));
    let mut changes = Vec::with_capacity(ops.len());
    for (key, op, value) in ops {
        match (op, value) {
            (0, Some(v)) => {
                crate::group::share::configs::GroupConfigs::check(&key, &v).map_err(invalid)?;
                changes.push((key, Some(v)));
            }
            (1, _) => changes.push((key, None)),
            (op, _) => {
                return Err((
                    ResponseError::InvalidRequest.code(),
                    Some(format!(
                        "config operation {op} is not served on group {key}"
                    )),
                ));
            }
        }
    }
    if validate_only {
        return ctx
            .broker
            .groups
            .share_configs(name)
            .await
            .map(|_| None)
            .map_err(|(e, m)| (e.code(), Some(m)));
    }
    let done = ctx.broker.groups.alter_share_configs(name, changes).await;
    done.await
        .map(|_| None)
        .map_err(|(e, m)| (e.code(), (!m.is_empty()).then_some(m)))
}

async fn settle(p: Result<Option<catalog::CommitFuture>, Outcome>) -> Outcome {
    match p {
        Ok(Some(c)) => match c.await {
            Ok(_) => (0, None),
            Err(e) => (from_catalog(&e).code(), Some(e.to_string())),
        },
        Ok(None) => (0, None),
        Err(o) => o,
    }
}

/// A resource's change in flight: its type, name and pending commit.
type Pending = (i8, StrBytes, Result<Option<catalog::CommitFuture>, Outcome>);

/// Awaits every resource's change, in order: (type, name, error code, message). Wakes
/// the log cleaner once any change committed, so new compaction settings apply at once.
async fn settle_all(
    broker: &crate::Broker,
    pending: Vec<Pending>,
) -> Vec<(i8, StrBytes, i16, Option<StrBytes>)> {
    let mut out = Vec::with_capacity(pending.len());
    let mut changed = false;
    for (t, name, p) in pending {
        changed |= matches!(p, Ok(Some(_)));
        let (code, message) = settle(p).await;
        out.push((t, name, code, message.as_deref().map(sb)));
    }
    if changed {
        broker.compaction_wake.notify_one();
    }
    out
}

/// AlterConfigs: replaces a topic's whole set of configs.
pub async fn alter(ctx: Ctx, req: AlterConfigsRequest) -> Reply {
    let pending: Vec<Pending> = {
        let mut out = Vec::new();
        for r in req.resources.into_iter() {
            out.push({
                let new: BTreeMap<String, String> = r
                    .configs
                    .iter()
                    .filter_map(|c| {
                        c.value
                            .as_ref()
                            .map(|v| (c.name.to_string(), v.to_string()))
                    })
                    .collect();
                let p = change_topic(
                    &ctx,
                    r.resource_type,
                    &r.resource_name,
                    req.validate_only,
                    |c| {
                        *c = new;
                        Ok(())
                    },
                )
                .await;
                (r.resource_type, r.resource_name, p)
            });
        }
        out
    };
    Box::pin(async move {
        let responses = settle_all(&ctx.broker, pending)
            .await
            .into_iter()
            .map(|(t, name, code, message)| {
                kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse::default()
                    .with_resource_type(t)
                    .with_resource_name(name)
                    .with_error_code(code)
                    .with_error_message(message)
            })
            .collect();
        Some(ResponseKind::AlterConfigs(
            AlterConfigsResponse::default().with_responses(responses),
        ))
    })
}

/// IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT on single configs.
pub async fn incremental_alter(ctx: Ctx, req: IncrementalAlterConfigsRequest) -> Reply {
    let pending: Vec<Pending> = {
        let mut out = Vec::new();
        for r in req.resources.into_iter() {
            out.push(
                async {
                    let ops: Vec<(String, i8, Option<String>)> = r
                        .configs
                        .iter()
                        .map(|c| {
                            (
                                c.name.to_string(),
                                c.config_operation,
                                c.value.as_ref().map(|v| v.to_string()),
                            )
                        })
                        .collect();
                    if r.resource_type == GROUP {
                        let p = change_group(&ctx, &r.resource_name, req.validate_only, ops).await;
                        return (r.resource_type, r.resource_name, p);
                    }
                    let p = change_topic(
                        &ctx,
                        r.resource_type,
                        &r.resource_name,
                        req.validate_only,
                        |c| {
                            for (name, op, value) in ops {
                                let list = |c: &BTreeMap<String, String>| -> Vec<String> {
                                    configs::value(c, &name)
                                        .split(',')
                                        .filter(|s| !s.is_empty())
                                        .map(String::from)
                                        .collect()
                                };
                                match (op, value) {
                                    (0, Some(v)) => {
                                        c.insert(name, v);
                                    }
                                    (1, _) => {
                                        c.remove(&name);
                                    }
                                    (2, Some(v)) => {
                                        let mut items = list(c);
                                        items.extend(v.split(',').map(String::from));
                                        c.insert(name, items.join(","));
                                    }
                                    (3, Some(v)) => {
                                        let gone: Vec<&str> = v.split(',').collect();
                                        let items: Vec<String> = list(c)
                                            .into_iter()
                                            .filter(|i| !gone.contains(&i.as_str()))
                                            .collect();
                                        c.insert(name, items.join(","));
                                    }
                                    (op, _) => {
                                        return Err(format!(
                                            "config operation {op} on {name} needs a value"
                                        ));
                                    }
                                }
                            }
                            Ok(())
                        },
                    )
                    .await;
                    (r.resource_type, r.resource_name, p)
                }
                .await,
            );
        }
        out
    };
    Box::pin(async move {
        let responses = settle_all(&ctx.broker, pending)
            .await
            .into_iter()
            .map(|(t, name, code, message)| {
                kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                    .with_resource_type(t)
                    .with_resource_name(name)
                    .with_error_code(code)
                    .with_error_message(message)
            })
            .collect();
        Some(ResponseKind::IncrementalAlterConfigs(
            IncrementalAlterConfigsResponse::default().with_responses(responses),
        ))
    })
}

/// The `authorize` and `answer_refused` of a configs API: each resource is checked by
/// [`config_allowed`] (the topic action on a topic's, the cluster's on a broker's), and a
/// refused one goes back into the response's `field` as an `entry` with its error.
macro_rules! config_authorization {
    ($(#[$doc:meta])* fn $authorize:ident($req:ty, $action:expr);
     fn $answer:ident($resp:ty, $field:ident, $entry:ty)) => {
        $(#[$doc])*
        pub(crate) fn $authorize(ctx: &Ctx, mut r: $req, out: &mut Refused) -> Authorized<$req> {
            r.resources
                .retain(|c| config_allowed(ctx, c.resource_type, &c.resource_name, $action, out));
            Ok(r)
        }

        /// The resources the `authorize` above refused, put back into the response with
        /// their errors.
        pub(crate) fn $answer(mut r: $resp, refused: Refused) -> $resp {
            r.$field.extend(refused.resources.into_iter().map(|(kind, name, code)| {
                <$entry>::default()
                    .with_resource_type(kind)
                    .with_resource_name(sb(&name))
                    .with_error_code(code)
            }));
            r
        }
    };
}

config_authorization! {
    /// DescribeConfigs needs KafkaDescribe on each topic resource, on the cluster for a
    /// broker's.
    fn authorize_describe_configs(DescribeConfigsRequest, DESCRIBE);
    fn answer_refused_describe_configs(DescribeConfigsResponse, results,
        describe_configs_response::DescribeConfigsResult)
}

config_authorization! {
    /// AlterConfigs needs KafkaCreate on each topic resource, KafkaAlter on the cluster for
    /// a broker's.
    fn authorize_alter_configs(AlterConfigsRequest, CREATE);
    fn answer_refused_alter_configs(AlterConfigsResponse, responses,
        alter_configs_response::AlterConfigsResourceResponse)
}

config_authorization! {
    /// IncrementalAlterConfigs needs KafkaCreate on each topic resource, KafkaAlter on the
    /// cluster for a broker's.
    fn authorize_incremental_alter_configs(IncrementalAlterConfigsRequest, CREATE);
    fn answer_refused_incremental_alter_configs(IncrementalAlterConfigsResponse, responses,
        incremental_alter_configs_response::AlterConfigsResourceResponse)
}
