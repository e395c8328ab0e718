//! Reading a pipeline's traces back from its traces topic: the recent spans, the traces
//! they make (status and duration), and one trace's spans in tree order. What `eddy
//! pipeline traces` shows.

use std::collections::BTreeMap;

use catalog::{Catalog, CatalogError};
use serde::Serialize;

use crate::records;
use crate::trace::Span;

/// One trace, summed up.
#[derive(Debug, Clone, Serialize)]
pub struct TraceSummary {
    /// The trace.
    pub trace_id: String,
    /// Its event's id.
    pub event_id: String,
    /// Its root span's name (its trigger's publish), or its first span's.
    pub root: String,
    /// `error` if an event of it went to the dead-letter topic, else `ok`.
    pub status: String,
    /// When it started, ms since the epoch.
    pub start_ms: i64,
    /// From its first span's start to its last span's end, in ms.
    pub duration_ms: f64,
    /// Its spans.
    pub spans: usize,
}

/// The newest spans of a pipeline's traces topic: about `max` of them, across its
/// partitions.
pub async fn recent_spans(
    catalog: &dyn Catalog,
    pipeline: &str,
    max: usize,
) -> Result<Vec<Span>, CatalogError> {
    let name = format!("pipeline.{pipeline}.traces");
    let Some(topic) = catalog.kafka().topic(&name).await? else {
        return Ok(Vec::new());
    };
    let per = (max / topic.partitions.max(1) as usize).max(1) as u64;
    let mut out = Vec::new();
    for p in 0..topic.partitions {
        let Some(state) = catalog.kafka().partition(topic.id, p).await? else {
            continue;
        };
        let mut at = state.next_offset.saturating_sub(per);
        while at < state.next_offset {
            let read = records::read(catalog, &topic, p, at).await?;
            if read.next == at {
                break;
            }
            at = read.next;
            for r in read.records {
                if let Some(span) = r
                    .value
                    .and_then(|v| serde_json::from_slice::<Span>(&v).ok())
                {
                    out.push(span);
                }
            }
        }
    }
    Ok(out)
}

/// The traces `spans` make, newest first.
pub fn summarize(spans: &[Span]) -> Vec<TraceSummary> {
    let mut by: BTreeMap<&str, Vec<&Span>> = BTreeMap::new();
    for s in spans {
        by.entry(&s.trace_id).or_default().push(s);
    }
    let mut out: Vec<TraceSummary> = by
        .into_iter()
        .map(|(id, ss)| {
            let start = ss.iter().map(|s| s.start_ms).min().unwrap_or(0);
            let end = ss
                .iter()
                .map(|s| s.start_ms as f64 + s.duration_ms)
                .fold(start as f64, f64::max);
            let root = ss
                .iter()
                .find(|s| s.parent_span_id.is_none())
                .or(ss.first())
                .map_or(String::new(), |s| s.name.clone());
            TraceSummary {
                trace_id: id.to_owned(),
                event_id: ss.first().map_or(String::new(), |s| s.event_id.clone()),
                root,
                status: if ss.iter().any(|s| s.name == "dead-letter") {
                    "error".into()
                } else {
                    "ok".into()
                },
                start_ms: start,
                duration_ms: end - start as f64,
                spans: ss.len(),
            }
        })
        .collect();
    out.sort_by_key(|t| std::cmp::Reverse(t.start_ms));
    out
}

/// One trace's spans, each after its parent (depth-first, children by start), with
/// their depth.
pub fn tree(spans: &[Span], trace_id: &str) -> Vec<(usize, Span)> {
    let mine: Vec<&Span> = spans.iter().filter(|s| s.trace_id == trace_id).collect();
    let known: std::collections::BTreeSet<&str> = mine.iter().map(|s| s.span_id.as_str()).collect();
    let mut children: BTreeMap<Option<&str>, Vec<&Span>> = BTreeMap::new();
    for s in &mine {
        // A span whose parent is not kept (its window was not the one that committed)
        // shows as a root.
        let parent = s.parent_span_id.as_deref().filter(|p| known.contains(p));
        children.entry(parent).or_default().push(s);
    }
    for v in children.values_mut() {
        v.sort_by(|a, b| a.start_ms.cmp(&b.start_ms).then(a.attempt.cmp(&b.attempt)));
    }
    let mut out = Vec::new();
    let mut stack: Vec<(usize, &Span)> = children
        .get(&None)
        .into_iter()
        .flatten()
        .rev()
        .map(|s| (0, *s))
        .collect();
    while let Some((depth, s)) = stack.pop() {
        out.push((depth, s.clone()));
        for c in children
            .get(&Some(s.span_id.as_str()))
            .into_iter()
            .flatten()
            .rev()
        {
            stack.push((depth + 1, c));
        }
    }
    out
}
