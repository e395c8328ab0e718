//! FindCoordinator: a group's or a transactional id's coordinator is the node its id
//! hashes to, so every address answers alike. Single keys (v0-3) and batches (v4+).

use crate::authz::*;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;

use crate::context::{Ctx, sb};

/// Key type of a consumer group.
const GROUP: i8 = 0;
/// Key type of a transactional id.
const TRANSACTION: i8 = 1;

/// Handles FindCoordinator.
pub fn handle(ctx: &Ctx, req: FindCoordinatorRequest) -> FindCoordinatorResponse {
    let keys: Vec<StrBytes> = if ctx.version >= 4 {
        req.coordinator_keys
    } else {
        vec![req.key]
    };
    let coordinators: Vec<Coordinator> = keys
        .into_iter()
        .map(|key| {
            let refused = |e: ResponseError| {
                Coordinator::default()
                    .with_key(key.clone())
                    .with_node_id(BrokerId(-1))
                    .with_host(sb(""))
                    .with_port(-1)
                    .with_error_code(e.code())
                    .with_error_message(Some(sb(&e.to_string())))
            };
            match req.key_type {
                GROUP | TRANSACTION => {
                    let node = ctx.broker.cluster.coordinator(&key);
                    let (host, port) = ctx.broker.cluster.advertised(node, ctx.local);
                    Coordinator::default()
                        .with_key(key.clone())
                        .with_node_id(BrokerId(node))
                        .with_host(sb(&host))
                        .with_port(i32::from(port))
                }
                _ => refused(ResponseError::InvalidRequest),
            }
        })
        .collect();
    if ctx.version >= 4 {
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let c = coordinators.into_iter().next().unwrap_or_default();
    FindCoordinatorResponse::default()
        .with_error_code(c.error_code)
        .with_error_message(c.error_message)
        .with_node_id(c.node_id)
        .with_host(c.host)
        .with_port(c.port)
}

/// FindCoordinator needs KafkaDescribe on each group asked about.
pub(crate) fn authorize(
    ctx: &Ctx,
    r: FindCoordinatorRequest,
    out: &mut Refused,
) -> Authorized<FindCoordinatorRequest> {
    let keys = if r.coordinator_keys.is_empty() {
        vec![r.key.to_string()]
    } else {
        r.coordinator_keys.iter().map(|k| k.to_string()).collect()
    };
    if r.key_type == 0 {
        out.groups = keys
            .into_iter()
            .filter(|g| !ctx.may_group(DESCRIBE, g))
            .collect();
    }
    Ok(r)
}

/// The parts [`authorize`] refused, put back into the response with their errors.
pub(crate) fn answer_refused(
    mut r: FindCoordinatorResponse,
    refused: Refused,
) -> FindCoordinatorResponse {
    if r.coordinators.is_empty() {
        if !refused.groups.is_empty() {
            r.error_code = GROUP_DENIED;
            r.node_id = BrokerId(-1);
            r.host = sb("");
            r.port = -1;
        }
    } else {
        for c in &mut r.coordinators {
            if refused.groups.iter().any(|g| *g == *c.key) {
                c.error_code = GROUP_DENIED;
                c.node_id = BrokerId(-1);
                c.host = sb("");
                c.port = -1;
            }
        }
    }
    r
}
