//! What a response's client quotas say: each request is recorded against the quotas
//! that apply to its client (its handling time against `request_percentage`, a
//! produce's bytes against `producer_byte_rate`, a fetch's against
//! `consumer_byte_rate`), and the longest wait among them goes into the response's
//! `throttle_time_ms`; the connection then mutes itself for that long.

use std::time::{Duration, Instant};

use kafka_protocol::messages::{ApiKey, ResponseKind};

use super::{QuotaKind, Quotas};

/// What one request cost.
#[derive(Debug, Clone, Copy)]
pub struct Cost {
    /// The API.
    pub api: ApiKey,
    /// Request frame bytes.
    pub request_bytes: usize,
    /// Time spent handling it (its future's polls, not its waits).
    pub busy: Duration,
}

/// Records the request against the client's quotas and throttles the response: the
/// wait (zero within quota) and the quota that set it. A throttled fetch keeps its
/// records. Kafka answers it without them and counts their bytes all the same, so a
/// client whose every fetch is over its quota (a fetch larger than the quota's window
/// holds; measured here with a two-second window) is answered empty forever; here the
/// bytes counted are the bytes sent, and the wait paces the next fetch.
pub fn throttle(
    quotas: &Quotas,
    user: &str,
    client: &str,
    cost: Cost,
    response: Option<&mut ResponseKind>,
    now: Instant,
) -> (Duration, Option<QuotaKind>) {
    let mut worst = (Duration::ZERO, None);
    let mut take = |t: Duration, k: QuotaKind| {
        if t > worst.0 {
            worst = (t, Some(k));
        }
    };
    // ApiVersions must always get through, so a client can learn the protocol.
    if cost.api != ApiKey::ApiVersions {
        let percent_seconds = cost.busy.as_secs_f64() * 100.0;
        take(
            quotas.record(QuotaKind::Request, user, client, percent_seconds, now),
            QuotaKind::Request,
        );
    }
    if cost.api == ApiKey::Produce {
        let t = quotas.record(
            QuotaKind::Produce,
            user,
            client,
            cost.request_bytes as f64,
            now,
        );
        take(t, QuotaKind::Produce);
    }
    let Some(response) = response else {
        return worst;
    };
    if let ResponseKind::Fetch(f) = &*response {
        let bytes: usize = f
            .responses
            .iter()
            .flat_map(|t| t.partitions.iter())
            .map(|p| p.records.as_ref().map_or(0, |r| r.len()))
            .sum();
        take(
            quotas.record(QuotaKind::Fetch, user, client, bytes as f64, now),
            QuotaKind::Fetch,
        );
    }
    if worst.0 > Duration::ZERO {
        set_throttle_ms(
            response,
            i32::try_from(worst.0.as_millis()).unwrap_or(i32::MAX),
        );
    }
    worst
}

/// Sets `throttle_time_ms` (every response Eddy serves has it; versions without the
/// field do not encode it).
fn set_throttle_ms(response: &mut ResponseKind, ms: i32) {
    match response {
        ResponseKind::Produce(r) => r.throttle_time_ms = ms,
        ResponseKind::Fetch(r) => r.throttle_time_ms = ms,
        ResponseKind::ListOffsets(r) => r.throttle_time_ms = ms,
        ResponseKind::Metadata(r) => r.throttle_time_ms = ms,
        ResponseKind::ApiVersions(r) => r.throttle_time_ms = ms,
        ResponseKind::CreateTopics(r) => r.throttle_time_ms = ms,
        ResponseKind::DeleteTopics(r) => r.throttle_time_ms = ms,
        ResponseKind::DeleteRecords(r) => r.throttle_time_ms = ms,
        ResponseKind::InitProducerId(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeConfigs(r) => r.throttle_time_ms = ms,
        ResponseKind::AlterConfigs(r) => r.throttle_time_ms = ms,
        ResponseKind::IncrementalAlterConfigs(r) => r.throttle_time_ms = ms,
        ResponseKind::CreatePartitions(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeCluster(r) => r.throttle_time_ms = ms,
        ResponseKind::FindCoordinator(r) => r.throttle_time_ms = ms,
        ResponseKind::JoinGroup(r) => r.throttle_time_ms = ms,
        ResponseKind::SyncGroup(r) => r.throttle_time_ms = ms,
        ResponseKind::Heartbeat(r) => r.throttle_time_ms = ms,
        ResponseKind::LeaveGroup(r) => r.throttle_time_ms = ms,
        ResponseKind::OffsetCommit(r) => r.throttle_time_ms = ms,
        ResponseKind::OffsetFetch(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeGroups(r) => r.throttle_time_ms = ms,
        ResponseKind::ListGroups(r) => r.throttle_time_ms = ms,
        ResponseKind::DeleteGroups(r) => r.throttle_time_ms = ms,
        ResponseKind::OffsetDelete(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeTopicPartitions(r) => r.throttle_time_ms = ms,
        ResponseKind::GetTelemetrySubscriptions(r) => r.throttle_time_ms = ms,
        ResponseKind::PushTelemetry(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeLogDirs(r) => r.throttle_time_ms = ms,
        ResponseKind::ElectLeaders(r) => r.throttle_time_ms = ms,
        ResponseKind::ListPartitionReassignments(r) => r.throttle_time_ms = ms,
        ResponseKind::AlterPartitionReassignments(r) => r.throttle_time_ms = ms,
        ResponseKind::AddPartitionsToTxn(r) => r.throttle_time_ms = ms,
        ResponseKind::AddOffsetsToTxn(r) => r.throttle_time_ms = ms,
        ResponseKind::EndTxn(r) => r.throttle_time_ms = ms,
        ResponseKind::TxnOffsetCommit(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeProducers(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeTransactions(r) => r.throttle_time_ms = ms,
        ResponseKind::ListTransactions(r) => r.throttle_time_ms = ms,
        ResponseKind::ConsumerGroupHeartbeat(r) => r.throttle_time_ms = ms,
        ResponseKind::ConsumerGroupDescribe(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeClientQuotas(r) => r.throttle_time_ms = ms,
        ResponseKind::AlterClientQuotas(r) => r.throttle_time_ms = ms,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use catalog::{ClientQuotas, QuotaEntity};
    use kafka_protocol::messages::FetchResponse;
    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};

    fn quotas(key: &str, value: f64) -> Quotas {
        Quotas::new(
            Default::default(),
            vec![ClientQuotas {
                entity: QuotaEntity {
                    client_id: Some(None),
                    ..Default::default()
                },
                values: [(key.to_string(), value)].into(),
            }],
        )
    }

    #[test]
    fn a_fetch_over_its_quota_keeps_its_records_and_carries_the_wait() {
        let q = quotas("consumer_byte_rate", 10.0);
        let mut response = ResponseKind::Fetch(FetchResponse::default().with_responses(vec![
            FetchableTopicResponse::default().with_partitions(vec![
                PartitionData::default().with_records(Some(bytes::Bytes::from(vec![0u8; 1000]))),
            ]),
        ]));
        let cost = Cost {
            api: ApiKey::Fetch,
            request_bytes: 50,
            busy: Duration::ZERO,
        };
        let (wait, kind) = throttle(&q, "u", "c", cost, Some(&mut response), Instant::now());
        assert_eq!(kind, Some(QuotaKind::Fetch));
        assert!(wait > Duration::from_secs(5), "{wait:?}");
        let ResponseKind::Fetch(f) = response else {
            unreachable!()
        };
        assert_eq!(f.throttle_time_ms as u128, wait.as_millis());
        assert!(f.responses[0].partitions[0].records.is_some());
    }

    #[test]
    fn within_quota_nothing_changes() {
        let q = quotas("producer_byte_rate", 1e9);
        let cost = Cost {
            api: ApiKey::Produce,
            request_bytes: 1000,
            busy: Duration::from_millis(1),
        };
        assert_eq!(
            throttle(&q, "u", "c", cost, None, Instant::now()),
            (Duration::ZERO, None)
        );
    }
}
