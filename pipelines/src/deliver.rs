//! Sending events to a function over HTTP as Knative does: one event per POST in
//! CloudEvents binary mode (attributes as `ce-*` headers, data as the body), or a batch
//! as `application/cloudevents-batch+json`. A 2xx answer is success and its body the
//! reply; anything else, a timeout or a refused connection is a [`Failure`].

use std::time::Duration;

use bytes::Bytes;

use crate::event::{Event, Reply};

/// Most bytes of a failed answer's body kept for the dead-letter record.
pub const ERROR_DATA_CAP: usize = 4096;
/// Most bytes of a reply (one event's, or a batch's): a bigger answer fails the attempt
/// (`bad-reply`) instead of filling the server's memory.
pub const REPLY_CAP: usize = 8 << 20;

/// Why an attempt failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A non-2xx answer and its body (capped).
    Status(u16, Bytes),
    /// No answer within the function's `timeout_ms`.
    Timeout,
    /// The connection failed (refused, reset).
    Connection(String),
    /// A 2xx answer that is not a valid reply (a batch of the wrong length).
    BadReply(String),
}

impl Failure {
    /// `ce_knativeerrorcode`: the HTTP status, or `timeout`, `connection`, `bad-reply`.
    pub fn code(&self) -> String {
        match self {
            Failure::Status(s, _) => s.to_string(),
            Failure::Timeout => "timeout".into(),
            Failure::Connection(_) => "connection".into(),
            Failure::BadReply(_) => "bad-reply".into(),
        }
    }

    /// The error's body (an answer's, or what went wrong), for `ce_knativeerrordata`.
    pub fn data(&self) -> Bytes {
        match self {
            Failure::Status(_, body) => body.clone(),
            Failure::Timeout => Bytes::from_static(b"no answer within the function's timeout_ms"),
            Failure::Connection(m) | Failure::BadReply(m) => Bytes::from(m.clone()),
        }
    }
}

/// Classifies a client error.
fn failure(e: reqwest::Error) -> Failure {
    if e.is_timeout() {
        Failure::Timeout
    } else {
        let mut msg = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            msg = format!("{msg}: {s}");
            src = s.source();
        }
        Failure::Connection(msg)
    }
}

/// The body of a failed answer, the first [`ERROR_DATA_CAP`] bytes of it.
async fn error_body(mut r: reqwest::Response) -> Bytes {
    let mut body = Vec::new();
    while body.len() < ERROR_DATA_CAP {
        match r.chunk().await {
            Ok(Some(c)) => body.extend_from_slice(&c),
            _ => break,
        }
    }
    body.truncate(ERROR_DATA_CAP);
    Bytes::from(body)
}

/// A reply's body, refused past [`REPLY_CAP`].
async fn reply_body(mut r: reqwest::Response) -> Result<Bytes, Failure> {
    let mut body = Vec::new();
    while let Some(c) = r.chunk().await.map_err(failure)? {
        if body.len() + c.len() > REPLY_CAP {
            return Err(Failure::BadReply(format!(
                "the reply is over {REPLY_CAP} bytes"
            )));
        }
        body.extend_from_slice(&c);
    }
    Ok(Bytes::from(body))
}

/// Sends one event in binary mode.
pub async fn send_one(
    client: &reqwest::Client,
    url: &str,
    timeout: Duration,
    event: &Event,
) -> Result<Reply, Failure> {
    let mut req = client.post(url).timeout(timeout).body(event.data.clone());
    for (k, v) in event.http_headers() {
        req = req.header(k, v);
    }
    let r = req.send().await.map_err(failure)?;
    if !r.status().is_success() {
        let code = r.status().as_u16();
        return Err(Failure::Status(code, error_body(r).await));
    }
    let headers = r.headers().clone();
    let body = reply_body(r).await?;
    Reply::from_http(&headers, body).map_err(Failure::BadReply)
}

/// Sends events as one CloudEvents batch; the answer must be a JSON list of as many
/// replies, in order.
pub async fn send_batch(
    client: &reqwest::Client,
    url: &str,
    timeout: Duration,
    events: &[&Event],
) -> Result<Vec<Reply>, Failure> {
    let body = serde_json::Value::Array(events.iter().map(|e| e.to_json()).collect());
    let mut req = client
        .post(url)
        .timeout(timeout)
        .header("content-type", "application/cloudevents-batch+json")
        .body(body.to_string());
    if let Some(t) = events.first().and_then(|e| e.attrs.get("traceparent")) {
        req = req.header("traceparent", t);
    }
    let r = req.send().await.map_err(failure)?;
    if !r.status().is_success() {
        let code = r.status().as_u16();
        return Err(Failure::Status(code, error_body(r).await));
    }
    let body = reply_body(r).await?;
    let items: Vec<serde_json::Value> = serde_json::from_slice(&body)
        .map_err(|e| Failure::BadReply(format!("a batch reply must be a JSON list: {e}")))?;
    if items.len() != events.len() {
        return Err(Failure::BadReply(format!(
            "a batch of {} events was answered with {} replies",
            events.len(),
            items.len()
        )));
    }
    items
        .iter()
        .map(|v| Reply::from_json(v).map_err(Failure::BadReply))
        .collect()
}
