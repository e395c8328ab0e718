//! The audit log page's request: the latest entries of the audit trail's topic
//! (`__eddy_audit`, one partition), newest first, read with a Fetch as the signed-in user,
//! so only those allowed to read that topic (the administrator, or whom a policy lets)
//! see it.

use http::StatusCode;

use crate::kafka::Kafka;
use crate::session::Signed;
use crate::topics::{offsets_at, read};
use crate::{ConsoleResult, Reply, Request, json};

/// The audit trail's topic.
const TOPIC: &str = broker::offsets_topic::AUDIT_TOPIC;
/// Most entries one page shows.
const MAX_ENTRIES: i64 = 500;

/// `GET /console/api/audit?limit=&before=`: the latest entries (or those before an
/// offset), newest first.
pub async fn route(kafka: &Kafka, who: &Signed, req: &Request) -> ConsoleResult<Reply> {
    let limit = req
        .param("limit")
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(100)
        .clamp(1, MAX_ENTRIES);
    let first = offsets_at(kafka, who, req.peer, TOPIC, &[0], -2)
        .await?
        .get(&0)
        .copied()
        .unwrap_or(0);
    let end = match req.param("before").and_then(|v| v.parse::<i64>().ok()) {
        Some(b) => b,
        None => offsets_at(kafka, who, req.peer, TOPIC, &[0], -1)
            .await?
            .get(&0)
            .copied()
            .unwrap_or(0),
    };
    let from = end.saturating_sub(limit).max(first);
    if end <= from {
        return Ok(json(
            StatusCode::OK,
            &serde_json::json!({ "first": first, "from": from, "entries": [] }),
        ));
    }
    let records = read(
        kafka,
        who,
        req.peer,
        TOPIC,
        0,
        from,
        usize::try_from(end.saturating_sub(from)).unwrap_or(0),
    )
    .await?;
    let mut entries: Vec<serde_json::Value> = records
        .into_iter()
        .filter(|r| r.offset < end)
        .map(|r| {
            let mut v = r
                .value
                .and_then(|v| serde_json::from_str::<serde_json::Value>(&v.data).ok())
                .unwrap_or(serde_json::Value::Null);
            if let Some(o) = v.as_object_mut() {
                o.insert("offset".into(), r.offset.into());
            }
            v
        })
        .collect();
    entries.reverse();
    Ok(json(
        StatusCode::OK,
        &serde_json::json!({ "first": first, "from": from, "entries": entries }),
    ))
}
