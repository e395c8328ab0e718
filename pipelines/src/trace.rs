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
