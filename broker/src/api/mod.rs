//! One module per Kafka API, each with what its request needs from the policies
//! (`authorize`, and `answer_refused` to put refused parts back into its response) and
//! its handler; this module dispatches both. Each handler does its checks and submits its
//! catalog transaction before returning (so requests on one connection reach the catalog
//! in the order they arrived), and returns a future of the response.

pub mod acls;
pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod api_versions;
pub mod client_quotas;
pub mod configs;
pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod delete_groups;
pub mod delete_records;
pub mod describe_cluster;
pub mod describe_groups;
pub mod describe_log_dirs;
pub mod describe_producers;
pub mod describe_topic_partitions;
pub mod describe_transactions;
pub mod elect_leaders;
pub mod end_txn;
pub mod fetch;
pub mod find_coordinator;
pub mod heartbeat;
pub mod init_producer_id;
pub mod join_group;
pub mod leave_group;
pub mod list_groups;
pub mod list_offsets;
pub mod list_transactions;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod produce;
pub mod reassignments;
pub mod scram_credentials;
pub mod share_acknowledge;
pub mod share_fetch;
pub mod share_group_describe;
pub mod share_group_heartbeat;
pub mod share_group_offsets;
pub mod sync_group;
pub mod telemetry;
pub mod topics;
pub mod txn_offset_commit;

use crate::authz::Refused;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    ApiKey, RequestKind, ResponseKind, SaslAuthenticateResponse, SaslHandshakeResponse,
};

use crate::context::{Ctx, Reply, ready, sb};

/// The versions served, per API: exactly what the handlers implement.
pub fn supported(api: ApiKey) -> Option<(i16, i16)> {
    Some(match api {
        // Produce v0-2, Fetch v0-3 (message sets), v0 of ListOffsets, DescribeConfigs,
        // v0-1 of OffsetCommit and CreateTopics: the versions Kafka 4.0 removed, read and
        // written by `crate::legacy`.
        ApiKey::Produce => (0, 13),
        ApiKey::Fetch => (0, 18),
        ApiKey::ListOffsets => (0, 10),
        ApiKey::Metadata => (0, 13),
        ApiKey::ApiVersions => (0, 5),
        ApiKey::CreateTopics => (0, 7),
        ApiKey::DeleteTopics => (1, 6),
        ApiKey::DeleteRecords => (0, 2),
        ApiKey::InitProducerId => (0, 5),
        ApiKey::DescribeConfigs => (0, 4),
        ApiKey::AlterConfigs => (0, 2),
        ApiKey::IncrementalAlterConfigs => (0, 1),
        ApiKey::CreatePartitions => (0, 3),
        ApiKey::DescribeCluster => (0, 2),
        ApiKey::FindCoordinator => (0, 6),
        ApiKey::JoinGroup => (0, 9),
        ApiKey::SyncGroup => (0, 5),
        ApiKey::Heartbeat => (0, 4),
        ApiKey::LeaveGroup => (0, 5),
        ApiKey::OffsetCommit => (0, 9),
        ApiKey::OffsetFetch => (1, 9),
        ApiKey::DescribeGroups => (0, 6),
        ApiKey::ListGroups => (0, 5),
        ApiKey::DeleteGroups => (0, 2),
        ApiKey::OffsetDelete => (0, 0),
        ApiKey::DescribeTopicPartitions => (0, 0),
        ApiKey::GetTelemetrySubscriptions => (0, 0),
        ApiKey::PushTelemetry => (0, 0),
        // After v0 the SASL tokens come as bare frames (`crate::connection`); v1 carries
        // them in SaslAuthenticate. librdkafka before 2.x needs v0 advertised.
        ApiKey::SaslHandshake => (0, 1),
        ApiKey::SaslAuthenticate => (0, 2),
        ApiKey::DescribeLogDirs => (1, 4),
        ApiKey::ElectLeaders => (0, 2),
        ApiKey::ListPartitionReassignments => (0, 0),
        ApiKey::AlterPartitionReassignments => (0, 1),
        // v4+ of AddPartitionsToTxn is the brokers' batched verification. EndTxn v5,
        // TxnOffsetCommit v5 and Produce v12 are transaction version 2's (ApiVersions
        // offers them only where that is: `api_versions::capped`).
        ApiKey::AddPartitionsToTxn => (0, 3),
        ApiKey::AddOffsetsToTxn => (0, 4),
        ApiKey::EndTxn => (0, 5),
        ApiKey::TxnOffsetCommit => (0, 5),
        ApiKey::DescribeProducers => (0, 0),
        ApiKey::DescribeTransactions => (0, 0),
        ApiKey::ListTransactions => (0, 1),
        ApiKey::ConsumerGroupHeartbeat => (0, 1),
        ApiKey::ConsumerGroupDescribe => (0, 1),
        ApiKey::DescribeClientQuotas => (0, 1),
        ApiKey::AlterClientQuotas => (0, 1),
        ApiKey::DescribeUserScramCredentials => (0, 0),
        ApiKey::AlterUserScramCredentials => (0, 0),
        ApiKey::CreateAcls => (1, 3),
        ApiKey::DescribeAcls => (1, 3),
        ApiKey::DeleteAcls => (1, 3),
        // Share groups (KIP-932) from their first stable versions (Kafka 4.1); v2 of
        // ShareFetch and ShareAcknowledge is Kafka 4.2's renewals (KIP-1222) and
        // acquire modes (KIP-1206).
        ApiKey::ShareGroupHeartbeat => (1, 1),
        ApiKey::ShareGroupDescribe => (1, 1),
        ApiKey::ShareFetch => (1, 2),
        ApiKey::ShareAcknowledge => (1, 2),
        ApiKey::DescribeShareGroupOffsets => (0, 0),
        ApiKey::AlterShareGroupOffsets => (0, 0),
        ApiKey::DeleteShareGroupOffsets => (0, 0),
        _ => return None,
    })
}

/// Every API key served.
pub const SERVED: &[ApiKey] = &[
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::Metadata,
    ApiKey::ApiVersions,
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::DeleteRecords,
    ApiKey::InitProducerId,
    ApiKey::DescribeConfigs,
    ApiKey::AlterConfigs,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::CreatePartitions,
    ApiKey::DescribeCluster,
    ApiKey::FindCoordinator,
    ApiKey::JoinGroup,
    ApiKey::SyncGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::DescribeGroups,
    ApiKey::ListGroups,
    ApiKey::DeleteGroups,
    ApiKey::OffsetDelete,
    ApiKey::DescribeTopicPartitions,
    ApiKey::GetTelemetrySubscriptions,
    ApiKey::PushTelemetry,
    ApiKey::SaslHandshake,
    ApiKey::SaslAuthenticate,
    ApiKey::DescribeLogDirs,
    ApiKey::ElectLeaders,
    ApiKey::ListPartitionReassignments,
    ApiKey::AlterPartitionReassignments,
    ApiKey::AddPartitionsToTxn,
    ApiKey::AddOffsetsToTxn,
    ApiKey::EndTxn,
    ApiKey::TxnOffsetCommit,
    ApiKey::DescribeProducers,
    ApiKey::DescribeTransactions,
    ApiKey::ListTransactions,
    ApiKey::ConsumerGroupHeartbeat,
    ApiKey::ConsumerGroupDescribe,
    ApiKey::DescribeClientQuotas,
    ApiKey::AlterClientQuotas,
    ApiKey::DescribeUserScramCredentials,
    ApiKey::AlterUserScramCredentials,
    ApiKey::CreateAcls,
    ApiKey::DescribeAcls,
    ApiKey::DeleteAcls,
    ApiKey::ShareGroupHeartbeat,
    ApiKey::ShareGroupDescribe,
    ApiKey::ShareFetch,
    ApiKey::ShareAcknowledge,
    ApiKey::DescribeShareGroupOffsets,
    ApiKey::AlterShareGroupOffsets,
    ApiKey::DeleteShareGroupOffsets,
];

/// Authorizes a decoded request ([`crate::authz`]) and dispatches what is allowed.
///
/// Two phases: awaiting this runs the request up to its commit, which it queues
/// ([`catalog::Catalog::commit`]); the returned reply then waits for the outcome. A
/// connection awaits the first phase before it reads its next request, so pipelined
/// requests commit in the order they were sent.
pub async fn handle(ctx: Ctx, request: RequestKind) -> Reply {
    let (request, refused) = match authorize(&ctx, request).await {
        Ok(r) => r,
        Err(answer) => return answer,
    };
    let change = crate::audit::of(&request);
    if refused.is_empty() && change.is_none() {
        return dispatch(ctx, request).await;
    }
    let check = ctx.clone();
    let reply = dispatch(ctx, request).await;
    Box::pin(async move {
        let response = reply.await?;
        // What the handler did, before the refused parts are put back in.
        if let Some(change) = &change {
            crate::audit::record(&check, change, &response);
        }
        Some(answer_refused(&check, response, refused))
    })
}

/// Authorizes a request before its handler, by its API module's own `authorize`
/// (`crate::authz` keeps the policy evaluation): `Err` with the whole answer when it is
/// refused outright, else the request with what was refused taken out.
pub(crate) async fn authorize(
    ctx: &Ctx,
    request: RequestKind,
) -> Result<(RequestKind, Refused), Reply> {
    let mut out = Refused::default();
    // Each API's check, by what it takes: the request alone (a request about one group or
    // the cluster, refused whole), or also what it refuses in part (`out`).
    macro_rules! checks {
        (whole: [$($w:ident => $wf:path,)*] in_part: [$($p:ident => $pf:path,)*]) => {
            match request {
                $(RequestKind::$w(r) => RequestKind::$w($wf(ctx, r)?),)*
                $(RequestKind::$p(r) => RequestKind::$p($pf(ctx, r, &mut out)?),)*
                RequestKind::Fetch(r) => RequestKind::Fetch(fetch::authorize(ctx, r, &mut out).await?),
                RequestKind::DeleteTopics(r) => RequestKind::DeleteTopics(
                    topics::authorize_delete_topics(ctx, r, &mut out).await?,
                ),
                RequestKind::ListGroups(r) => {
                    RequestKind::ListGroups(list_groups::authorize(r, &mut out)?)
                }
                // The rest need no policy check of their own: the handshake and version
                // APIs, SASL (answered by the connection), telemetry, DescribeCluster (what
                // Metadata tells too), the transaction coordinator's own APIs
                // (InitProducerId, AddPartitionsToTxn, EndTxn: the writes they frame are
                // checked where they land, as a transactional Produce is a Produce, and
                // TxnOffsetCommit above) and the transaction listings.
                other => other,
            }
        };
    }
    let request = checks! {
        whole: [
            CreateAcls => acls::authorize_create_acls,
            DeleteAcls => acls::authorize_delete_acls,
            DescribeAcls => acls::authorize_describe_acls,
            AlterClientQuotas => client_quotas::authorize_alter_client_quotas,
            DescribeClientQuotas => client_quotas::authorize_describe_client_quotas,
            ConsumerGroupHeartbeat => consumer_group_heartbeat::authorize,
            ShareGroupHeartbeat => share_group_heartbeat::authorize,
            ShareFetch => share_fetch::authorize,
            ShareAcknowledge => share_acknowledge::authorize,
            AlterShareGroupOffsets => share_group_offsets::authorize_alter,
            DeleteShareGroupOffsets => share_group_offsets::authorize_delete,
            ElectLeaders => elect_leaders::authorize,
            Heartbeat => heartbeat::authorize,
            JoinGroup => join_group::authorize,
            LeaveGroup => leave_group::authorize,
            SyncGroup => sync_group::authorize,
            OffsetDelete => offset_delete::authorize,
            AddOffsetsToTxn => add_offsets_to_txn::authorize,
            DescribeLogDirs => describe_log_dirs::authorize,
            AlterPartitionReassignments => reassignments::authorize_alter_partition_reassignments,
            AlterUserScramCredentials => scram_credentials::authorize_alter_user_scram_credentials,
            DescribeUserScramCredentials =>
                scram_credentials::authorize_describe_user_scram_credentials,
        ]
        in_part: [
            DescribeConfigs => configs::authorize_describe_configs,
            AlterConfigs => configs::authorize_alter_configs,
            IncrementalAlterConfigs => configs::authorize_incremental_alter_configs,
            DeleteGroups => delete_groups::authorize,
            DeleteRecords => delete_records::authorize,
            DescribeGroups => describe_groups::authorize,
            DescribeTopicPartitions => describe_topic_partitions::authorize,
            FindCoordinator => find_coordinator::authorize,
            ListOffsets => list_offsets::authorize,
            Metadata => metadata::authorize,
            OffsetCommit => offset_commit::authorize,
            OffsetFetch => offset_fetch::authorize,
            Produce => produce::authorize,
            CreateTopics => topics::authorize_create_topics,
            CreatePartitions => topics::authorize_create_partitions,
            ConsumerGroupDescribe => consumer_group_describe::authorize,
            ShareGroupDescribe => share_group_describe::authorize,
            TxnOffsetCommit => txn_offset_commit::authorize,
            DescribeProducers => describe_producers::authorize,
        ]
    };
    Ok((request, out))
}

/// The parts [`authorize`] took out back into the response, by its API's own
/// `answer_refused`.
pub(crate) fn answer_refused(ctx: &Ctx, response: ResponseKind, refused: Refused) -> ResponseKind {
    if refused.is_empty() {
        return response;
    }
    // Each API's answer, by what it takes: the refused parts, or also the connection's
    // principal (listings filtered by what it may see).
    macro_rules! answers {
        (refused: [$($k:ident => $f:path,)*] with_ctx: [$($c:ident => $cf:path,)*]) => {
            match response {
                $(ResponseKind::$k(r) => ResponseKind::$k($f(r, refused)),)*
                $(ResponseKind::$c(r) => ResponseKind::$c($cf(ctx, r, refused)),)*
                ResponseKind::ListGroups(r) => {
                    ResponseKind::ListGroups(list_groups::answer_refused(ctx, r))
                }
                other => other,
            }
        };
    }
    answers! {
        refused: [
            DescribeConfigs => configs::answer_refused_describe_configs,
            AlterConfigs => configs::answer_refused_alter_configs,
            IncrementalAlterConfigs => configs::answer_refused_incremental_alter_configs,
            DeleteGroups => delete_groups::answer_refused,
            DeleteRecords => delete_records::answer_refused,
            DescribeGroups => describe_groups::answer_refused,
            DescribeTopicPartitions => describe_topic_partitions::answer_refused,
            Fetch => fetch::answer_refused,
            FindCoordinator => find_coordinator::answer_refused,
            ConsumerGroupDescribe => consumer_group_describe::answer_refused,
            ShareGroupDescribe => share_group_describe::answer_refused,
            TxnOffsetCommit => txn_offset_commit::answer_refused,
            DescribeProducers => describe_producers::answer_refused,
            ListOffsets => list_offsets::answer_refused,
            OffsetCommit => offset_commit::answer_refused,
            Produce => produce::answer_refused,
            CreateTopics => topics::answer_refused_create_topics,
            CreatePartitions => topics::answer_refused_create_partitions,
            DeleteTopics => topics::answer_refused_delete_topics,
        ]
        with_ctx: [
            Metadata => metadata::answer_refused,
            OffsetFetch => offset_fetch::answer_refused,
        ]
    }
}

/// Dispatches a request to its handler.
async fn dispatch(ctx: Ctx, request: RequestKind) -> Reply {
    match request {
        RequestKind::ApiVersions(r) => {
            ready(ResponseKind::ApiVersions(api_versions::handle(&ctx, r)))
        }
        RequestKind::Metadata(r) => metadata::handle(ctx, r).await,
        RequestKind::CreateTopics(r) => topics::create(ctx, r).await,
        RequestKind::DeleteTopics(r) => topics::delete(ctx, r).await,
        RequestKind::CreatePartitions(r) => topics::create_partitions(ctx, r).await,
        RequestKind::DescribeConfigs(r) => ready(ResponseKind::DescribeConfigs(
            configs::describe(&ctx, r).await,
        )),
        RequestKind::AlterConfigs(r) => configs::alter(ctx, r).await,
        RequestKind::IncrementalAlterConfigs(r) => configs::incremental_alter(ctx, r).await,
        RequestKind::Produce(r) => produce::handle(ctx, r).await,
        RequestKind::Fetch(r) => fetch::handle(ctx, r),
        RequestKind::ListOffsets(r) => list_offsets::handle(ctx, r).await,
        RequestKind::InitProducerId(r) => init_producer_id::handle(ctx, r).await,
        RequestKind::DescribeCluster(r) => ready(ResponseKind::DescribeCluster(
            describe_cluster::handle(&ctx, r),
        )),
        RequestKind::DeleteRecords(r) => delete_records::handle(ctx, r),
        RequestKind::FindCoordinator(r) => ready(ResponseKind::FindCoordinator(
            find_coordinator::handle(&ctx, r),
        )),
        RequestKind::JoinGroup(r) => join_group::handle(ctx, r).await,
        RequestKind::SyncGroup(r) => sync_group::handle(ctx, r).await,
        RequestKind::Heartbeat(r) => {
            ready(ResponseKind::Heartbeat(heartbeat::handle(&ctx, r).await))
        }
        RequestKind::LeaveGroup(r) => leave_group::handle(ctx, r).await,
        RequestKind::OffsetCommit(r) => offset_commit::handle(ctx, r).await,
        RequestKind::OffsetFetch(r) => ready(ResponseKind::OffsetFetch(
            offset_fetch::handle(&ctx, r).await,
        )),
        RequestKind::DescribeGroups(r) => ready(ResponseKind::DescribeGroups(
            describe_groups::handle(&ctx, r).await,
        )),
        RequestKind::ListGroups(r) => {
            ready(ResponseKind::ListGroups(list_groups::handle(&ctx, r).await))
        }
        RequestKind::DeleteGroups(r) => delete_groups::handle(ctx, r).await,
        RequestKind::OffsetDelete(r) => offset_delete::handle(ctx, r).await,
        RequestKind::DescribeTopicPartitions(r) => ready(ResponseKind::DescribeTopicPartitions(
            describe_topic_partitions::handle(&ctx, r).await,
        )),
        RequestKind::GetTelemetrySubscriptions(r) => ready(
            ResponseKind::GetTelemetrySubscriptions(telemetry::subscriptions(r)),
        ),
        RequestKind::PushTelemetry(r) => ready(ResponseKind::PushTelemetry(telemetry::push(r))),
        // A SASL listener's connection answers these itself (`crate::sasl::session`);
        // here the listener has no SASL, and Kafka answers ILLEGAL_SASL_STATE.
        RequestKind::SaslHandshake(_) => ready(ResponseKind::SaslHandshake(
            SaslHandshakeResponse::default()
                .with_error_code(ResponseError::IllegalSaslState.code()),
        )),
        RequestKind::SaslAuthenticate(_) => ready(ResponseKind::SaslAuthenticate(
            SaslAuthenticateResponse::default()
                .with_error_code(ResponseError::IllegalSaslState.code())
                .with_error_message(Some(sb("this listener does not use SASL"))),
        )),
        RequestKind::DescribeLogDirs(r) => ready(ResponseKind::DescribeLogDirs(
            describe_log_dirs::handle(&ctx, r).await,
        )),
        RequestKind::ElectLeaders(r) => ready(ResponseKind::ElectLeaders(
            elect_leaders::handle(&ctx, r).await,
        )),
        RequestKind::ListPartitionReassignments(r) => ready(
            ResponseKind::ListPartitionReassignments(reassignments::list(r)),
        ),
        RequestKind::AlterPartitionReassignments(r) => ready(
            ResponseKind::AlterPartitionReassignments(reassignments::alter(&ctx, r).await),
        ),
        RequestKind::AddPartitionsToTxn(r) => add_partitions_to_txn::handle(ctx, r).await,
        RequestKind::AddOffsetsToTxn(r) => add_offsets_to_txn::handle(ctx, r).await,
        RequestKind::EndTxn(r) => end_txn::handle(ctx, r).await,
        RequestKind::TxnOffsetCommit(r) => txn_offset_commit::handle(ctx, r).await,
        RequestKind::DescribeProducers(r) => ready(ResponseKind::DescribeProducers(
            describe_producers::handle(&ctx, r).await,
        )),
        RequestKind::DescribeTransactions(r) => ready(ResponseKind::DescribeTransactions(
            describe_transactions::handle(&ctx, r).await,
        )),
        RequestKind::ListTransactions(r) => ready(ResponseKind::ListTransactions(
            list_transactions::handle(&ctx, r).await,
        )),
        RequestKind::ConsumerGroupHeartbeat(r) => consumer_group_heartbeat::handle(ctx, r).await,
        RequestKind::ConsumerGroupDescribe(r) => ready(ResponseKind::ConsumerGroupDescribe(
            consumer_group_describe::handle(&ctx, r).await,
        )),
        RequestKind::ShareGroupHeartbeat(r) => share_group_heartbeat::handle(ctx, r).await,
        RequestKind::ShareGroupDescribe(r) => ready(ResponseKind::ShareGroupDescribe(
            share_group_describe::handle(&ctx, r).await,
        )),
        RequestKind::ShareFetch(r) => share_fetch::handle(ctx, r),
        RequestKind::ShareAcknowledge(r) => share_acknowledge::handle(ctx, r),
        RequestKind::DescribeShareGroupOffsets(r) => ready(
            ResponseKind::DescribeShareGroupOffsets(share_group_offsets::describe(&ctx, r).await),
        ),
        RequestKind::AlterShareGroupOffsets(r) => ready(share_group_offsets::alter(&ctx, r).await),
        RequestKind::DeleteShareGroupOffsets(r) => {
            ready(share_group_offsets::delete(&ctx, r).await)
        }
        RequestKind::DescribeClientQuotas(r) => ready(ResponseKind::DescribeClientQuotas(
            client_quotas::describe(&ctx, r),
        )),
        RequestKind::AlterClientQuotas(r) => client_quotas::alter(ctx, r),
        RequestKind::DescribeUserScramCredentials(r) => ready(
            ResponseKind::DescribeUserScramCredentials(scram_credentials::describe(&ctx, r)),
        ),
        RequestKind::AlterUserScramCredentials(r) => scram_credentials::alter(ctx, r),
        RequestKind::CreateAcls(r) => acls::create(ctx, r),
        RequestKind::DescribeAcls(r) => ready(ResponseKind::DescribeAcls(acls::describe(&ctx, r))),
        RequestKind::DeleteAcls(r) => acls::delete(ctx, r),
        other => {
            tracing::warn!(request = ?std::mem::discriminant(&other), "request without a handler");
            Box::pin(std::future::ready(None))
        }
    }
}
