//! Spans exported over OTLP/HTTP (opentelemetry-otlp), when the standard variables name
//! a collector: `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL; `/v1/traces` is added) or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is), with `OTEL_EXPORTER_OTLP_PROTOCOL`
//! (`http/protobuf`, the default, or `http/json`) and the library's other
//! `OTEL_EXPORTER_OTLP_*` settings. The spans a hand-off committed are queued and sent in
//! batches by one task; a full queue drops spans (counted) rather than slowing events:
//! the traces topic keeps every one anyway.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter as _, SpanLinks};
use prometheus_client::metrics::counter::Counter;
use tokio::sync::mpsc;

use crate::trace::Span;

/// Batches of spans waiting to be sent.
const QUEUE: usize = 1024;

/// Where committed spans go.
#[derive(Clone)]
pub struct Exporter {
    tx: mpsc::Sender<(String, Vec<Span>)>,
    dropped: Counter,
}

impl Exporter {
    /// An exporter to the collector the environment names, or none when it names none.
    /// Spans it cannot queue are counted in `dropped`.
    pub fn from_env(dropped: Counter) -> Option<Self> {
        let configured = [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
        if !configured {
            return None;
        }
        let exporter = match opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build()
        {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "OTLP exporter not built; spans stay in the traces topics");
                return None;
            }
        };
        let (tx, mut rx) = mpsc::channel::<(String, Vec<Span>)>(QUEUE);
        tokio::spawn(async move {
            while let Some(first) = rx.recv().await {
                let mut batch: Vec<SpanData> = data(&first.0, &first.1);
                while let Ok((p, spans)) = rx.try_recv() {
                    batch.extend(data(&p, &spans));
                    if batch.len() >= 512 {
                        break;
                    }
                }
                if let Err(e) = exporter.export(batch).await {
                    tracing::warn!(error = %e, "OTLP export failed");
                }
            }
        });
        tracing::info!("exporting pipeline spans over OTLP");
        Some(Self { tx, dropped })
    }

    /// Queues the spans a hand-off of `pipeline` committed.
    pub fn send(&self, pipeline: &str, spans: Vec<Span>) {
        let n = spans.len() as u64;
        if self.tx.try_send((pipeline.to_owned(), spans)).is_err() {
            self.dropped.inc_by(n);
        }
    }
}

/// The spans as the OpenTelemetry SDK hands them to an exporter.
fn data(pipeline: &str, spans: &[Span]) -> Vec<SpanData> {
    spans.iter().filter_map(|s| one(pipeline, s)).collect()
}

fn one(pipeline: &str, s: &Span) -> Option<SpanData> {
    let trace = TraceId::from_hex(&s.trace_id).ok()?;
    let span = SpanId::from_hex(&s.span_id).ok()?;
    let parent = match &s.parent_span_id {
        Some(p) => SpanId::from_hex(p).ok()?,
        None => SpanId::INVALID,
    };
    let start = SystemTime::UNIX_EPOCH + Duration::from_millis(u64::try_from(s.start_ms).ok()?);
    let end = start + Duration::from_secs_f64(s.duration_ms.max(0.0) / 1000.0);
    let mut attributes = vec![
        KeyValue::new("eddy.pipeline", pipeline.to_owned()),
        KeyValue::new("cloudevents.event_id", s.event_id.clone()),
    ];
    if !s.link.is_empty() {
        attributes.push(KeyValue::new("eddy.link", s.link.clone()));
    }
    if s.attempt > 0 {
        attributes.push(KeyValue::new("eddy.attempt", i64::from(s.attempt)));
    }
    let status = match &s.code {
        Some(code) => Status::Error {
            description: Cow::Owned(code.clone()),
        },
        None => Status::Ok,
    };
    Some(SpanData {
        span_context: SpanContext::new(
            trace,
            span,
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        ),
        parent_span_id: parent,
        parent_span_is_remote: false,
        span_kind: if s.attempt > 0 {
            SpanKind::Client
        } else {
            SpanKind::Internal
        },
        name: Cow::Owned(s.name.clone()),
        start_time: start,
        end_time: end,
        attributes,
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status,
        instrumentation_scope: InstrumentationScope::builder("eddy.pipelines").build(),
    })
}
