//! ApiVersions: the APIs and versions this broker serves, and its features (KIP-584):
//! `transaction.version`, which tells Kafka 4 clients which transaction protocol to
//! speak (KIP-890). A request newer than we know is answered in v0 with
//! UNSUPPORTED_VERSION and our ranges, so the client can retry lower. From v5 a client
//! names the cluster and node it means to reach (KIP-1242): another cluster, or another
//! node at that address (the brokers renumbered), is answered REBOOTSTRAP_REQUIRED, as
//! Kafka 4.4 does, and the client bootstraps again instead of sending its requests to
//! the wrong broker.

use std::sync::LazyLock;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::StrBytes;

use super::{SERVED, supported};
use crate::context::Ctx;

/// The feature that selects the transaction protocol.
const TRANSACTION_VERSION: &str = "transaction.version";

/// The epoch of the finalized features: when this process started, so a restart with
/// another `transaction.version` is newer than what clients saw (a client keeps the
/// features of the highest epoch it was given; Kafka uses its metadata offset).
static FEATURES_EPOCH: LazyLock<i64> = LazyLock::new(crate::context::now_ms);

/// The highest version offered of `api` at `transaction.version` level `level`: below
/// 2, the versions that mean the second protocol to a client are held back, so a
/// client that picks versions without reading features stays on the first.
pub fn capped(api: ApiKey, max: i16, level: i16) -> i16 {
    if level >= 2 {
        return max;
    }
    match api {
        ApiKey::Produce => max.min(11),
        ApiKey::EndTxn | ApiKey::TxnOffsetCommit => max.min(4),
        _ => max,
    }
}

/// Whether the client meant another cluster or another node than the one it reached:
/// Kafka's rule (a named cluster, and either it or the node differs).
fn misrouted(req: &ApiVersionsRequest, cluster_id: &str, node: i32) -> bool {
    req.cluster_id
        .as_deref()
        .is_some_and(|named| named != cluster_id || *req.node_id != node)
}

/// Answers ApiVersions.
pub fn handle(ctx: &Ctx, req: ApiVersionsRequest) -> ApiVersionsResponse {
    if misrouted(&req, &ctx.broker.config.cluster_id, ctx.node) {
        tracing::debug!(
            peer = %ctx.peer,
            cluster = ?req.cluster_id,
            node = *req.node_id,
            "a client reached the wrong cluster or node: rebootstrap required"
        );
        // Kafka's error answer: the code alone, no API ranges.
        return ApiVersionsResponse::default()
            .with_error_code(ResponseError::RebootstrapRequired.code());
    }
    let level = ctx.broker.txns.config().version;
    let api_keys = SERVED
        .iter()
        .filter_map(|k| {
            supported(*k).map(|(min, max)| {
                ApiVersion::default()
                    .with_api_key(*k as i16)
                    .with_min_version(min)
                    .with_max_version(capped(*k, max, level))
            })
        })
        .collect();
    let too_new = supported(ApiKey::ApiVersions).is_some_and(|(_, max)| ctx.version > max);
    let name = StrBytes::from_static_str(TRANSACTION_VERSION);
    ApiVersionsResponse::default()
        .with_error_code(if too_new {
            ResponseError::UnsupportedVersion.code()
        } else {
            0
        })
        .with_api_keys(api_keys)
        .with_supported_features(vec![
            SupportedFeatureKey::default()
                .with_name(name.clone())
                .with_min_version(0)
                .with_max_version(2),
        ])
        .with_finalized_features_epoch(*FEATURES_EPOCH)
        .with_finalized_features(vec![
            FinalizedFeatureKey::default()
                .with_name(name)
                .with_min_version_level(level)
                .with_max_version_level(level),
        ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_that_names_another_cluster_or_node_is_misrouted() {
        let req = |cluster: Option<&'static str>, node: i32| {
            ApiVersionsRequest::default()
                .with_cluster_id(cluster.map(StrBytes::from_static_str))
                .with_node_id(node.into())
        };
        // Clients before v5, and bootstrap connections, name nothing.
        assert!(!misrouted(&req(None, -1), "abc", 1));
        assert!(!misrouted(&req(None, 2), "abc", 1));
        assert!(!misrouted(&req(Some("abc"), 1), "abc", 1));
        assert!(misrouted(&req(Some("abc"), 2), "abc", 1));
        assert!(misrouted(&req(Some("xyz"), 1), "abc", 1));
        assert!(misrouted(&req(Some("abc"), -1), "abc", 1));
    }

    #[test]
    fn the_second_protocol_s_versions_are_held_back_at_level_1() {
        assert_eq!(capped(ApiKey::EndTxn, 5, 1), 4);
        assert_eq!(capped(ApiKey::TxnOffsetCommit, 5, 1), 4);
        assert_eq!(capped(ApiKey::Produce, 13, 1), 11);
        assert_eq!(capped(ApiKey::Fetch, 17, 1), 17);
        assert_eq!(capped(ApiKey::EndTxn, 5, 2), 5);
    }
}
