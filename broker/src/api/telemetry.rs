//! GetTelemetrySubscriptions and PushTelemetry (KIP-714). librdkafka and the Java client
//! ask for a subscription on connecting; Eddy collects no client metrics, so the answer
//! is a subscription that requests none (the client then pushes nothing), and a push that
//! arrives anyway is accepted and dropped.

use kafka_protocol::messages::{
    GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse, PushTelemetryRequest,
    PushTelemetryResponse,
};

/// How often a client would push, if metrics were requested (Kafka's default).
const PUSH_INTERVAL_MS: i32 = 300_000;

/// Answers GetTelemetrySubscriptions: an id for a client without one, no metrics.
pub fn subscriptions(req: GetTelemetrySubscriptionsRequest) -> GetTelemetrySubscriptionsResponse {
    let id = if req.client_instance_id.is_nil() {
        uuid::Uuid::new_v4()
    } else {
        req.client_instance_id
    };
    GetTelemetrySubscriptionsResponse::default()
        .with_client_instance_id(id)
        .with_subscription_id(0)
        .with_accepted_compression_types(vec![0])
        .with_push_interval_ms(PUSH_INTERVAL_MS)
        .with_telemetry_max_bytes(1 << 20)
        .with_delta_temporality(true)
        .with_requested_metrics(Vec::new())
}

/// Answers PushTelemetry: accepted, not kept.
pub fn push(req: PushTelemetryRequest) -> PushTelemetryResponse {
    let _ = req;
    PushTelemetryResponse::default()
}
