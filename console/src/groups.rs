//! The consumer groups pages' requests: the list with each group's state and total lag,
//! one group's members and committed offsets with the lag of each partition, resetting
//! an empty group's offsets (to the earliest, the latest, or the first at a time) and
//! deleting a group. Each is a Kafka request the broker answers for the signed-in user;
//! a reset is an OffsetCommit outside any generation, as `kafka-consumer-groups
//! --reset-offsets` makes it.

use std::collections::BTreeMap;

use http::{Method, StatusCode};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use serde::{Deserialize, Serialize};

use crate::kafka::Kafka;
use crate::session::Signed;
use crate::topics::offsets_at;
use crate::{ConsoleError, ConsoleResult, Reply, Request, call, json};

/// Most groups on one page of the list.
const MAX_PAGE: usize = 200;

fn group(s: &str) -> GroupId {
    GroupId(StrBytes::from_string(s.to_owned()))
}

/// Routes `/console/api/groups/...`.
pub async fn route(
    kafka: &Kafka,
    who: &Signed,
    req: Request,
    segs: &[&str],
) -> ConsoleResult<Reply> {
    match (req.method.clone(), segs) {
        (Method::GET, []) => list(kafka, who, &req).await,
        (Method::GET, [g]) => describe(kafka, who, &req, g).await,
        (Method::POST, [g, "reset"]) => reset(kafka, who, req, g).await,
        (Method::DELETE, [g]) => delete(kafka, who, &req, g).await,
        _ => Err(ConsoleError::NotFound(format!(
            "no console API {} /console/api/groups/{}",
            req.method,
            segs.join("/")
        ))),
    }
}

/// A partition's committed offset and lag.
#[derive(Serialize)]
struct PartitionLag {
    topic: String,
    partition: i32,
    committed: i64,
    end: i64,
    lag: i64,
}

/// The committed offsets of `g` and their lag behind each partition's end.
async fn lags(
    kafka: &Kafka,
    who: &Signed,
    peer: std::net::SocketAddr,
    g: &str,
) -> ConsoleResult<Vec<PartitionLag>> {
    let request = OffsetFetchRequest::default()
        .with_group_id(group(g))
        .with_topics(None);
    let r = call!(kafka, &who.user, peer, 7, OffsetFetch(request));
    if r.error_code != 0 {
        return Err(ConsoleError::kafka(
            r.error_code,
            &format!("reading the offsets of group {g}"),
            None,
        ));
    }
    let mut out = Vec::new();
    for t in r.topics {
        let topic = t.name.0.to_string();
        let committed: Vec<_> = t
            .partitions
            .iter()
            .filter(|p| p.error_code == 0 && p.committed_offset >= 0)
            .map(|p| (p.partition_index, p.committed_offset))
            .collect();
        if committed.is_empty() {
            continue;
        }
        let ids: Vec<i32> = committed.iter().map(|(p, _)| *p).collect();
        // A topic the user may not describe (or gone) shows its offsets without a lag.
        let ends = offsets_at(kafka, who, peer, &topic, &ids, -1)
            .await
            .unwrap_or_default();
        for (p, c) in committed {
            let end = ends.get(&p).copied().unwrap_or(-1);
            out.push(PartitionLag {
                topic: topic.clone(),
                partition: p,
                committed: c,
                end,
                lag: if end >= 0 { (end - c).max(0) } else { -1 },
            });
        }
    }
    out.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    Ok(out)
}

/// `GET groups?offset=&limit=`: the groups the user may describe, with state, protocol
/// and total lag.
async fn list(kafka: &Kafka, who: &Signed, req: &Request) -> ConsoleResult<Reply> {
    let offset: usize = req
        .param("offset")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let limit = req
        .param("limit")
        .and_then(|v| v.parse().ok())
        .unwrap_or(50usize)
        .clamp(1, MAX_PAGE);
    let r = call!(
        kafka,
        &who.user,
        req.peer,
        5,
        ListGroups(ListGroupsRequest::default())
    );
    if r.error_code != 0 {
        return Err(ConsoleError::kafka(r.error_code, "listing groups", None));
    }
    let mut groups: Vec<_> = r.groups;
    groups.sort_by(|a, b| a.group_id.0.cmp(&b.group_id.0));
    let total = groups.len();
    let mut out = Vec::new();
    for g in groups.into_iter().skip(offset).take(limit) {
        let name = g.group_id.0.to_string();
        let lag: i64 = lags(kafka, who, req.peer, &name)
            .await
            .map(|l| l.iter().filter(|p| p.lag > 0).map(|p| p.lag).sum())
            .unwrap_or(-1);
        out.push(serde_json::json!({
            "group": name,
            "state": g.group_state.to_string(),
            "protocol_type": g.protocol_type.to_string(),
            "type": g.group_type.to_string(),
            "lag": lag,
        }));
    }
    Ok(json(
        StatusCode::OK,
        &serde_json::json!({ "total": total, "offset": offset, "groups": out }),
    ))
}

/// The state and members of a group (DescribeGroups).
async fn described(
    kafka: &Kafka,
    who: &Signed,
    peer: std::net::SocketAddr,
    g: &str,
) -> ConsoleResult<describe_groups_response::DescribedGroup> {
    let request = DescribeGroupsRequest::default().with_groups(vec![group(g)]);
    let r = call!(kafka, &who.user, peer, 5, DescribeGroups(request));
    let d = r
        .groups
        .into_iter()
        .next()
        .ok_or_else(|| ConsoleError::Internal("DescribeGroups answered no group".into()))?;
    if d.error_code != 0 {
        return Err(ConsoleError::kafka(
            d.error_code,
            &format!("group {g}"),
            d.error_message.as_deref(),
        ));
    }
    Ok(d)
}

/// `GET groups/NAME`: state, protocol, members, and each partition's committed offset
/// and lag.
async fn describe(kafka: &Kafka, who: &Signed, req: &Request, g: &str) -> ConsoleResult<Reply> {
    let d = described(kafka, who, req.peer, g).await?;
    let offsets = lags(kafka, who, req.peer, g).await?;
    let members: Vec<_> = d
        .members
        .iter()
        .map(|m| {
            serde_json::json!({
                "member_id": m.member_id.to_string(),
                "instance_id": m.group_instance_id.as_ref().map(ToString::to_string),
                "client_id": m.client_id.to_string(),
                "client_host": m.client_host.to_string(),
            })
        })
        .collect();
    let ctx = kafka.ctx(&who.user, req.peer);
    let state = d.group_state.to_string();
    let empty = members.is_empty();
    Ok(json(
        StatusCode::OK,
        &serde_json::json!({
            "group": g,
            "state": state,
            "protocol_type": d.protocol_type.to_string(),
            "protocol": d.protocol_data.to_string(),
            "members": members,
            "offsets": offsets,
            "lag": offsets.iter().filter(|p| p.lag > 0).map(|p| p.lag).sum::<i64>(),
            "can": {
                "reset": empty && ctx.would_allow_group(broker::authz::READ, g),
                "delete": empty && ctx.would_allow_group(broker::authz::DELETE, g),
            },
        }),
    ))
}

#[derive(Deserialize)]
struct Reset {
    /// `earliest`, `latest` or `time`.
    to: String,
    /// With `time`: ms since the epoch.
    #[serde(default)]
    time: Option<i64>,
    /// Only this topic's offsets (else every topic the group has offsets of).
    #[serde(default)]
    topic: Option<String>,
}

/// `POST groups/NAME/reset` with `{"to": "earliest"|"latest"|"time", "time"?, "topic"?}`:
/// moves an empty group's committed offsets (409 while it has members, as Kafka's tool
/// refuses).
async fn reset(kafka: &Kafka, who: &Signed, req: Request, g: &str) -> ConsoleResult<Reply> {
    let peer = req.peer;
    let reset: Reset = req.json().await?;
    let timestamp = match (reset.to.as_str(), reset.time) {
        ("earliest", _) => -2,
        ("latest", _) => -1,
        ("time", Some(t)) if t >= 0 => t,
        _ => {
            return Err(ConsoleError::BadRequest(
                "to is earliest, latest, or time with a time in ms".into(),
            ));
        }
    };
    let d = described(kafka, who, peer, g).await?;
    if !d.members.is_empty() {
        return Err(ConsoleError::Conflict(format!(
            "group {g} has {} active members ({}): stop them before resetting its offsets",
            d.members.len(),
            d.group_state
        )));
    }
    let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for p in lags(kafka, who, peer, g).await? {
        if reset.topic.as_ref().is_none_or(|t| *t == p.topic) {
            by_topic.entry(p.topic).or_default().push(p.partition);
        }
    }
    if by_topic.is_empty() {
        return Err(ConsoleError::NotFound(format!(
            "group {g} has no committed offsets to reset"
        )));
    }
    let mut topics = Vec::new();
    let mut moved = Vec::new();
    for (topic, partitions) in &by_topic {
        let mut targets = offsets_at(kafka, who, peer, topic, partitions, timestamp).await?;
        if timestamp >= 0 {
            // No record at or after the time: the end, as Kafka's tool does.
            let ends = offsets_at(kafka, who, peer, topic, partitions, -1).await?;
            for (p, o) in targets.iter_mut() {
                if *o < 0 {
                    *o = ends.get(p).copied().unwrap_or(0);
                }
            }
        }
        topics.push(
            offset_commit_request::OffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.clone())))
                .with_partitions(
                    targets
                        .iter()
                        .map(|(p, o)| {
                            moved.push(
                                serde_json::json!({"topic": topic, "partition": p, "offset": o}),
                            );
                            offset_commit_request::OffsetCommitRequestPartition::default()
                                .with_partition_index(*p)
                                .with_committed_offset(*o)
                                .with_committed_leader_epoch(-1)
                                .with_committed_metadata(Some(StrBytes::from_static_str("")))
                        })
                        .collect(),
                ),
        );
    }
    let request = OffsetCommitRequest::default()
        .with_group_id(group(g))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(StrBytes::from_static_str(""))
        .with_topics(topics);
    let r = call!(kafka, &who.user, peer, 8, OffsetCommit(request));
    for t in &r.topics {
        for p in &t.partitions {
            if p.error_code != 0 {
                return Err(ConsoleError::kafka(
                    p.error_code,
                    &format!("resetting group {g} on {}", t.name.0),
                    None,
                ));
            }
        }
    }
    Ok(json(
        StatusCode::OK,
        &serde_json::json!({ "group": g, "offsets": moved }),
    ))
}

/// `DELETE groups/NAME`: DeleteGroups (an empty group only, as Kafka).
async fn delete(kafka: &Kafka, who: &Signed, req: &Request, g: &str) -> ConsoleResult<Reply> {
    let request = DeleteGroupsRequest::default().with_groups_names(vec![group(g)]);
    let r = call!(kafka, &who.user, req.peer, 2, DeleteGroups(request));
    for res in &r.results {
        if res.error_code != 0 {
            return Err(ConsoleError::kafka(
                res.error_code,
                &format!("deleting group {g}"),
                None,
            ));
        }
    }
    Ok(json(StatusCode::OK, &serde_json::json!({ "deleted": g })))
}
