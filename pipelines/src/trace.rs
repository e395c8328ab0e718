//! W3C trace context of pipeline events (the CloudEvents distributed-tracing extension):
//! a trigger starts a trace, each delivery is a span of it, a reply carries it on.

/// A new trace's `traceparent`: version 00, a random trace id and span id, sampled.
pub fn new_traceparent() -> String {
    let trace = uuid::Uuid::new_v4().simple().to_string();
    format!("00-{trace}-{}-01", span_id())
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
    }
}
