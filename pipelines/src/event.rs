//! CloudEvents as a pipeline moves them: read from a source record (binary-mode Kafka
//! headers `ce_*`, or a plain record wrapped), sent over HTTP in binary mode (`ce-*`
//! headers) or in a JSON batch, made from a function's reply, and written back as a
//! record. Attribute names are CloudEvents' (`id`, `source`, `type`, `subject`, `time`,
//! extensions); `datacontenttype` travels as the record's and the request's
//! `content-type`.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::records::{OutRecord, SourceRecord};

/// The attributes every event carries, in the order records list them.
const CORE: [&str; 6] = ["specversion", "id", "source", "type", "subject", "time"];

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Its attributes other than `datacontenttype` (core ones and extensions).
    pub attrs: BTreeMap<String, String>,
    /// `datacontenttype`, if known.
    pub content_type: Option<String>,
    /// Its data.
    pub data: Bytes,
    /// The partition key of its records (the source record's key).
    pub key: Option<Bytes>,
}

impl Event {
    /// The event a source record holds: its `ce_*` headers are the attributes of a
    /// binary-mode CloudEvent; a record without `ce_id` is wrapped (id
    /// `topic/partition/offset`, source `/topics/<topic>`, type `<prefix>TopicRecord`).
    pub fn from_record(r: &SourceRecord, topic: &str, partition: u32, type_prefix: &str) -> Self {
        let mut attrs = BTreeMap::new();
        let mut content_type = None;
        for (k, v) in &r.headers {
            let v = String::from_utf8_lossy(v).into_owned();
            if let Some(name) = k.strip_prefix("ce_") {
                attrs.insert(name.to_ascii_lowercase(), v);
            } else if k.eq_ignore_ascii_case("content-type") {
                content_type = Some(v);
            }
        }
        if !attrs.contains_key("id") {
            attrs.insert("id".into(), format!("{topic}/{partition}/{}", r.offset));
            attrs.insert("source".into(), format!("/topics/{topic}"));
            attrs.insert("type".into(), format!("{type_prefix}TopicRecord"));
            attrs.insert("time".into(), notify::record::event_time(r.timestamp_ms));
        }
        attrs
            .entry("specversion".into())
            .or_insert_with(|| "1.0".into());
        attrs
            .entry("source".into())
            .or_insert_with(|| format!("/topics/{topic}"));
        attrs
            .entry("type".into())
            .or_insert_with(|| format!("{type_prefix}TopicRecord"));
        if !attrs.contains_key("traceparent") {
            let t = crate::trace::traceparent_of(&attrs["id"]);
            attrs.insert("traceparent".into(), t);
        }
        Self {
            attrs,
            content_type,
            data: r.value.clone().unwrap_or_default(),
            key: r.key.clone(),
        }
    }

    /// Its id.
    pub fn id(&self) -> &str {
        self.attrs.get("id").map_or("", String::as_str)
    }

    /// Its attributes as record headers: `ce_<name>` (core ones first), then
    /// `content-type`.
    pub fn record_headers(&self) -> Vec<(String, Bytes)> {
        let mut out = Vec::with_capacity(self.attrs.len() + 1);
        for name in CORE {
            if let Some(v) = self.attrs.get(name) {
                out.push((format!("ce_{name}"), Bytes::from(v.clone())));
            }
        }
        for (k, v) in &self.attrs {
            if !CORE.contains(&k.as_str()) {
                out.push((format!("ce_{k}"), Bytes::from(v.clone())));
            }
        }
        if let Some(ct) = &self.content_type {
            out.push(("content-type".into(), Bytes::from(ct.clone())));
        }
        out
    }

    /// The event as a record: its key, its data, its attributes as headers.
    pub fn to_record(&self, extra: Vec<(String, Bytes)>, timestamp_ms: i64) -> OutRecord {
        let mut headers = self.record_headers();
        headers.extend(extra);
        OutRecord {
            key: self.key.clone(),
            value: self.data.clone(),
            headers,
            timestamp_ms,
        }
    }

    /// Its attributes as binary-mode HTTP headers (`ce-<name>`); the body is its data.
    pub fn http_headers(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .attrs
            .iter()
            .map(|(k, v)| (format!("ce-{k}"), v.clone()))
            .collect();
        if let Some(t) = self.attrs.get("traceparent") {
            // The distributed-tracing extension as an attribute (`ce-traceparent`, what
            // CloudEvents SDKs read) and as the W3C header (what tracing libraries read).
            out.push(("traceparent".into(), t.clone()));
        }
        if let Some(ct) = &self.content_type {
            out.push(("content-type".into(), ct.clone()));
        }
        out
    }

    /// Its structured-mode JSON (for a batch): the attributes, then `data` (JSON data as
    /// JSON, text as a string) or `data_base64`.
    pub fn to_json(&self) -> Value {
        let mut m: Map<String, Value> = self
            .attrs
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        if let Some(ct) = &self.content_type {
            m.insert("datacontenttype".into(), Value::String(ct.clone()));
        }
        let json = self.content_type.as_deref().is_none_or(is_json);
        match (json, serde_json::from_slice::<Value>(&self.data)) {
            (true, Ok(v)) if !self.data.is_empty() => {
                m.insert("data".into(), v);
            }
            _ => match std::str::from_utf8(&self.data) {
                Ok(s) if !json => {
                    m.insert("data".into(), Value::String(s.to_owned()));
                }
                _ => {
                    m.insert(
                        "data_base64".into(),
                        Value::String(base64_simd::STANDARD.encode_to_string(&self.data)),
                    );
                }
            },
        }
        Value::Object(m)
    }

    /// The next event a function's reply makes from this one: its id, subject, key and
    /// trace kept, source the function, type the reply's or `<prefix>Function`, the
    /// extensions the function set (its labels), the reply's data.
    pub fn reply(&self, function: &str, type_prefix: &str, reply: Reply) -> Event {
        let mut attrs = BTreeMap::new();
        attrs.insert("specversion".into(), "1.0".into());
        for (k, v) in reply.attrs {
            if !matches!(k.as_str(), "id" | "subject" | "source" | "specversion") {
                attrs.insert(k, v);
            }
        }
        attrs.insert("id".into(), self.id().to_owned());
        attrs.insert("source".into(), function.to_owned());
        attrs
            .entry("type".into())
            .or_insert_with(|| format!("{type_prefix}Function"));
        attrs
            .entry("time".into())
            .or_insert_with(|| notify::record::event_time(crate::now_ms()));
        for kept in ["subject", "traceparent", "partitionkey"] {
            if let Some(v) = self.attrs.get(kept) {
                attrs.insert(kept.into(), v.clone());
            }
        }
        Event {
            attrs,
            content_type: reply.content_type,
            data: reply.data,
            key: self.key.clone(),
        }
    }

    /// Whether every label is one of its attributes with that value.
    pub fn has_labels(&self, labels: &BTreeMap<String, String>) -> bool {
        labels.iter().all(|(k, v)| self.attrs.get(k) == Some(v))
    }
}

/// What a function answered (one event's worth).
#[derive(Debug, Clone, Default)]
pub struct Reply {
    /// The attributes it set.
    pub attrs: BTreeMap<String, String>,
    /// Its content type.
    pub content_type: Option<String>,
    /// Its data.
    pub data: Bytes,
}

impl Reply {
    /// A binary-mode (or plain) HTTP reply: `ce-*` headers are attributes; a
    /// structured-mode body (`application/cloudevents+json`) is read as one event.
    pub fn from_http(headers: &reqwest::header::HeaderMap, body: Bytes) -> Result<Self, String> {
        let content_type = headers
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if content_type
            .as_deref()
            .is_some_and(|c| c.starts_with("application/cloudevents+json"))
        {
            let v: Value = serde_json::from_slice(&body)
                .map_err(|e| format!("structured reply is not JSON: {e}"))?;
            return Self::from_json(&v);
        }
        let mut attrs = BTreeMap::new();
        for (name, value) in headers {
            if let Some(attr) = name.as_str().strip_prefix("ce-")
                && let Ok(v) = value.to_str()
            {
                attrs.insert(attr.to_owned(), v.to_owned());
            }
        }
        Ok(Self {
            attrs,
            content_type,
            data: body,
        })
    }

    /// One structured-mode event (an item of a batch reply, or a structured reply). An
    /// item that is not an object is the event's JSON data itself.
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let Value::Object(m) = v else {
            return Ok(Self {
                attrs: BTreeMap::new(),
                content_type: Some("application/json".into()),
                data: Bytes::from(v.to_string()),
            });
        };
        let mut out = Self::default();
        for (k, v) in m {
            match (k.as_str(), v) {
                ("data", Value::String(s)) => {
                    out.data = Bytes::from(s.clone());
                    out.content_type.get_or_insert_with(|| "text/plain".into());
                }
                ("data", other) => {
                    out.data = Bytes::from(other.to_string());
                    out.content_type
                        .get_or_insert_with(|| "application/json".into());
                }
                ("data_base64", Value::String(s)) => {
                    out.data = Bytes::from(
                        base64_simd::STANDARD
                            .decode_to_vec(s)
                            .map_err(|e| format!("data_base64: {e}"))?,
                    );
                }
                ("datacontenttype", Value::String(s)) => out.content_type = Some(s.clone()),
                (_, Value::String(s)) => {
                    out.attrs.insert(k.clone(), s.clone());
                }
                (_, other) => {
                    out.attrs.insert(k.clone(), other.to_string());
                }
            }
        }
        Ok(out)
    }
}

fn is_json(content_type: &str) -> bool {
    let ct = content_type.split(';').next().unwrap_or("").trim();
    ct == "application/json" || ct.ends_with("+json") || ct == "text/json"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(headers: &[(&str, &str)]) -> SourceRecord {
        SourceRecord {
            offset: 7,
            timestamp_ms: 1_764_800_000_000,
            key: Some(Bytes::from_static(b"images/a.jpg")),
            value: Some(Bytes::from_static(b"{\"a\":1}")),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), Bytes::from(v.to_string())))
                .collect(),
        }
    }

    #[test]
    fn binary_mode_records_keep_their_attributes_and_plain_ones_are_wrapped() {
        let e = Event::from_record(
            &record(&[
                ("ce_id", "abc"),
                ("ce_type", "eddy:Element.ElementCreated"),
                ("ce_elementpath", "images/a.jpg"),
                ("content-type", "application/json"),
            ]),
            "t",
            0,
            "eddy:",
        );
        assert_eq!(e.id(), "abc");
        assert_eq!(e.attrs["elementpath"], "images/a.jpg");
        assert_eq!(e.content_type.as_deref(), Some("application/json"));
        assert!(e.attrs["traceparent"].starts_with("00-"));
        let w = Event::from_record(&record(&[]), "orders", 2, "eddy:");
        assert_eq!(w.id(), "orders/2/7");
        assert_eq!(w.attrs["type"], "eddy:TopicRecord");
    }

    #[test]
    fn a_reply_keeps_id_subject_key_and_trace_and_carries_the_functions_labels() {
        let mut e = Event::from_record(
            &record(&[("ce_id", "abc"), ("ce_subject", "a.jpg")]),
            "t",
            0,
            "eddy:",
        );
        e.attrs.insert("elementpath".into(), "images/a.jpg".into());
        let mut attrs = BTreeMap::new();
        attrs.insert("kind".into(), "image".into());
        attrs.insert("id".into(), "other".into());
        let r = e.reply(
            "thumbnail",
            "eddy:",
            Reply {
                attrs,
                content_type: Some("text/plain".into()),
                data: Bytes::from_static(b"done"),
            },
        );
        assert_eq!(r.id(), "abc");
        assert_eq!(r.attrs["subject"], "a.jpg");
        assert_eq!(r.attrs["source"], "thumbnail");
        assert_eq!(r.attrs["type"], "eddy:Function");
        assert_eq!(r.attrs["traceparent"], e.attrs["traceparent"]);
        assert!(!r.attrs.contains_key("elementpath"));
        assert_eq!(r.key, e.key);
        let mut want = BTreeMap::new();
        want.insert("kind".to_string(), "image".to_string());
        assert!(r.has_labels(&want));
        want.insert("kind".to_string(), "video".to_string());
        assert!(!r.has_labels(&want));
    }

    #[test]
    fn structured_json_round_trips_json_text_and_binary_data() {
        let mut e = Event::from_record(
            &record(&[("ce_id", "x"), ("content-type", "application/json")]),
            "t",
            0,
            "p:",
        );
        let back = Reply::from_json(&e.to_json()).unwrap();
        assert_eq!(back.data, e.data);
        e.content_type = Some("application/octet-stream".into());
        e.data = Bytes::from_static(&[0, 255, 1]);
        let back = Reply::from_json(&e.to_json()).unwrap();
        assert_eq!(back.data, e.data);
    }
}
