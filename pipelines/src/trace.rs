//! W3C trace context of pipeline events (the CloudEvents distributed-tracing extension):
//! a trigger starts a trace, each delivery is a span of it, a reply carries it on.

/// A new trace's `traceparent`: version 00, a random trace id and span id, sampled.
pub fn new_traceparent() -> String {
    let trace = uuid::Uuid::new_v4().simple().to_string();
    format!("00-{trace}-{}-01", span_id())
}

/// The `traceparent` of an event that came without one: derived from its id, so every
/// read of the event (a window read again after a crash) puts it in the same trace.
pub fn traceparent_of(id: &str) -> String {
    let u = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, id.as_bytes())
        .simple()
        .to_string();
    let span = &uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, id.as_bytes())
        .simple()
        .to_string()[..16];
    format!("00-{u}-{span}-01")
}

/// The `traceparent` of a child span of `parent` (a new trace when `parent` is not one).
pub fn child_of(parent: &str) -> String {
    match parent.split('-').collect::<Vec<_>>().as_slice() {
        ["00", trace, _, flags] if trace.len() == 32 && flags.len() == 2 => {
            format!("00-{trace}-{}-{flags}", span_id())
        }
        _ => new_traceparent(),
    }
}

/// A random 8-byte span id in hex.
fn span_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    id[..16].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_keep_the_trace_and_change_the_span() {
        let p = new_traceparent();
        assert_eq!(p.len(), 55);
        let c = child_of(&p);
        assert_eq!(c[..35], p[..35]);
        assert_ne!(c[36..52], p[36..52]);
        assert!(child_of("garbage").starts_with("00-"));
        assert_eq!(traceparent_of("e1"), traceparent_of("e1"));
        assert_ne!(traceparent_of("e1")[3..35], traceparent_of("e2")[3..35]);
    }
}

/// The trace id and span id of a `traceparent`.
pub fn ids(traceparent: &str) -> Option<(&str, &str)> {
    match traceparent.split('-').collect::<Vec<_>>().as_slice() {
        ["00", trace, span, _] if trace.len() == 32 && span.len() == 16 => Some((trace, span)),
        _ => None,
    }
}

/// One span of an event's trace, as the pipeline's traces topic keeps it (JSON, keyed by
/// the trace id): a trigger's publish, a delivery attempt, a dead letter.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Span {
    /// The trace.
    pub trace_id: String,
    /// This span.
    pub span_id: String,
    /// Its parent (none: the trace's root, a trigger's publish).
    pub parent_span_id: Option<String>,
    /// What it was: `publish <trigger>`, `deliver <function>`, `dead-letter`.
    pub name: String,
    /// The link (empty for a publish).
    pub link: String,
    /// The event's id.
    pub event_id: String,
    /// The attempt (deliveries), from 1.
    pub attempt: u32,
    /// `ok` or `error`.
    pub status: String,
    /// The failure's code (`ce_knativeerrorcode`'s values), on errors.
    pub code: Option<String>,
    /// When it started, ms since the epoch.
    pub start_ms: i64,
    /// How long it took, in ms.
    pub duration_ms: f64,
}

impl Span {
    /// A span under `parent` (a traceparent) whose own traceparent is `own`.
    pub fn under(
        parent: &str,
        own: &str,
        name: String,
        link: &str,
        event_id: &str,
    ) -> Option<Self> {
        let (trace, parent_span) = ids(parent)?;
        let (_, span) = ids(own)?;
        Some(Self {
            trace_id: trace.to_owned(),
            span_id: span.to_owned(),
            parent_span_id: Some(parent_span.to_owned()),
            name,
            link: link.to_owned(),
            event_id: event_id.to_owned(),
            attempt: 0,
            status: "ok".into(),
            code: None,
            start_ms: crate::now_ms(),
            duration_ms: 0.0,
        })
    }

    /// The root span a traceparent names (a trigger's publish of an event).
    pub fn root(traceparent: &str, name: String, event_id: &str, at_ms: i64) -> Option<Self> {
        let (trace, span) = ids(traceparent)?;
        Some(Self {
            trace_id: trace.to_owned(),
            span_id: span.to_owned(),
            parent_span_id: None,
            name,
            link: String::new(),
            event_id: event_id.to_owned(),
            attempt: 0,
            status: "ok".into(),
            code: None,
            start_ms: at_ms,
            duration_ms: 0.0,
        })
    }
}
