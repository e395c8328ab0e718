//! DescribeClientQuotas and AlterClientQuotas (KIP-546): the quotas of users, client ids
//! and their defaults. Alters are checked as Kafka checks them (entity types `user` and
//! `client-id`, each at most once; the quota keys Eddy enforces; positive values),
//! committed to the catalog per entity, and take effect at once. `ip` entities
//! (connection-rate quotas) and other keys are refused with the reason: no client is
//! told it has a limit that is not enforced.

use crate::authz::*;
use catalog::KafkaOp;
use kafka_protocol::messages::alter_client_quotas_response;
use std::collections::BTreeMap;

use catalog::{Op, QuotaEntity};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_client_quotas_response::{
    EntityData as AlteredEntity, EntryData as AlteredEntry,
};
use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use crate::context::{Ctx, Reply, sb};
use crate::quota::QuotaKind;

const USER: &str = "user";
const CLIENT_ID: &str = "client-id";

/// `MatchType` of a DescribeClientQuotas component.
const MATCH_EXACT: i8 = 0;
const MATCH_DEFAULT: i8 = 1;
const MATCH_ANY: i8 = 2;

fn invalid(message: impl Into<String>) -> (ResponseError, String) {
    (ResponseError::InvalidRequest, message.into())
}

/// An entity from (type, name) pairs.
fn entity_of<'a>(
    parts: impl Iterator<Item = (&'a StrBytes, Option<&'a StrBytes>)>,
) -> Result<QuotaEntity, (ResponseError, String)> {
    let mut e = QuotaEntity::default();
    let mut any = false;
    for (kind, name) in parts {
        any = true;
        let slot = match kind.as_str() {
            USER => &mut e.user,
            CLIENT_ID => &mut e.client_id,
            "ip" => {
                return Err(invalid(
                    "ip quotas (connection_creation_rate) are not enforced",
                ));
            }
            other => return Err(invalid(format!("unknown entity type {other}"))),
        };
        if slot.is_some() {
            return Err(invalid(format!("entity type {kind} given twice")));
        }
        *slot = Some(name.map(|n| n.to_string()));
    }
    if !any {
        return Err(invalid("an entity needs a user or a client-id"));
    }
    Ok(e)
}

fn parts_of(e: &QuotaEntity) -> Vec<(&'static str, Option<String>)> {
    let mut out = Vec::new();
    if let Some(u) = &e.user {
        out.push((USER, u.clone()));
    }
    if let Some(c) = &e.client_id {
        out.push((CLIENT_ID, c.clone()));
    }
    out
}

/// Whether one component of a filter matches an entity part.
fn matches(part: &Option<Option<String>>, match_type: i8, name: Option<&str>) -> Option<bool> {
    Some(match match_type {
        MATCH_EXACT => part.as_ref().is_some_and(|p| p.as_deref() == name),
        MATCH_DEFAULT => matches!(part, Some(None)),
        MATCH_ANY => part.is_some(),
        _ => return None,
    })
}

/// Handles DescribeClientQuotas.
pub fn describe(ctx: &Ctx, req: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse {
    let refused = |(e, m): (ResponseError, String)| {
        DescribeClientQuotasResponse::default()
            .with_error_code(e.code())
            .with_error_message(Some(sb(&m)))
    };
    let mut filter = Vec::new();
    for c in &req.components {
        match c.entity_type.as_str() {
            USER | CLIENT_ID => {}
            other => return refused(invalid(format!("unknown entity type {other}"))),
        }
        if c.match_type == MATCH_EXACT && c._match.is_none() {
            return refused(invalid("an exact match needs a name"));
        }
        filter.push((
            c.entity_type.to_string(),
            c.match_type,
            c._match.as_ref().map(|m| m.to_string()),
        ));
    }
    let mut entries = Vec::new();
    for (entity, values) in ctx.broker.quotas.all() {
        let mut ok = true;
        for (kind, match_type, name) in &filter {
            let part = if kind == USER {
                &entity.user
            } else {
                &entity.client_id
            };
            match matches(part, *match_type, name.as_deref()) {
                Some(m) => ok &= m,
                None => return refused(invalid(format!("unknown match type {match_type}"))),
            }
        }
        if req.strict {
            let kinds: Vec<&str> = parts_of(&entity).into_iter().map(|(k, _)| k).collect();
            ok &= kinds.len() == filter.len()
                && kinds.iter().all(|k| filter.iter().any(|(f, _, _)| f == k));
        }
        if !ok {
            continue;
        }
        entries.push(
            EntryData::default()
                .with_entity(
                    parts_of(&entity)
                        .into_iter()
                        .map(|(k, n)| {
                            EntityData::default()
                                .with_entity_type(sb(k))
                                .with_entity_name(n.as_deref().map(sb))
                        })
                        .collect(),
                )
                .with_values(
                    values
                        .into_iter()
                        .map(|(k, v)| ValueData::default().with_key(sb(&k)).with_value(v))
                        .collect(),
                ),
        );
    }
    DescribeClientQuotasResponse::default().with_entries(Some(entries))
}

/// Handles AlterClientQuotas: each entry is checked and committed on its own (as
/// Kafka answers per entry); `validate_only` checks and commits nothing.
pub fn alter(ctx: Ctx, req: AlterClientQuotasRequest) -> Reply {
    Box::pin(async move {
        let broker = &ctx.broker;
        let _serial = broker.quotas.alter_lock.lock().await;
        let mut entries = Vec::new();
        for entry in req.entries {
            let echo: Vec<AlteredEntity> = entry
                .entity
                .iter()
                .map(|e| {
                    AlteredEntity::default()
                        .with_entity_type(e.entity_type.clone())
                        .with_entity_name(e.entity_name.clone())
                })
                .collect();
            let result = async {
                let entity = entity_of(
                    entry
                        .entity
                        .iter()
                        .map(|e| (&e.entity_type, e.entity_name.as_ref())),
                )?;
                let mut values: BTreeMap<String, f64> = broker.quotas.values(&entity);
                for op in &entry.ops {
                    if QuotaKind::of_key(&op.key).is_none() {
                        let served: Vec<&str> = QuotaKind::ALL.iter().map(|k| k.key()).collect();
                        return Err(invalid(format!(
                            "quota key {} is not enforced; the keys are {}",
                            op.key.as_str(),
                            served.join(", ")
                        )));
                    }
                    if op.remove {
                        values.remove(op.key.as_str());
                    } else if op.value.is_finite() && op.value > 0.0 {
                        values.insert(op.key.to_string(), op.value);
                    } else {
                        return Err(invalid(format!(
                            "quota {} must be a positive number, not {}",
                            op.key.as_str(),
                            op.value
                        )));
                    }
                }
                if req.validate_only {
                    return Ok(());
                }
                let commit = crate::context::commit_ops(
                    broker.catalog.as_ref(),
                    vec![Op::Kafka(KafkaOp::PutQuotas {
                        entity: entity.clone(),
                        values: values.clone(),
                    })],
                );
                if let Some(e) = commit.await {
                    return Err((e, "storing the quotas failed".into()));
                }
                broker.quotas.set(entity, values);
                Ok(())
            }
            .await;
            let (code, message) = match result {
                Ok(()) => (0, None),
                Err((e, m)) => (e.code(), Some(sb(&m))),
            };
            entries.push(
                AlteredEntry::default()
                    .with_entity(echo)
                    .with_error_code(code)
                    .with_error_message(message),
            );
        }
        Some(ResponseKind::AlterClientQuotas(
            AlterClientQuotasResponse::default().with_entries(entries),
        ))
    })
}

/// AlterClientQuotas needs KafkaAlter on the cluster.
pub(crate) fn authorize_alter_client_quotas(
    ctx: &Ctx,
    r: AlterClientQuotasRequest,
) -> Authorized<AlterClientQuotasRequest> {
    if !ctx.may_cluster(ALTER) {
        let entries = r
            .entries
            .iter()
            .map(|e| {
                alter_client_quotas_response::EntryData::default()
                    .with_error_code(CLUSTER_DENIED)
                    .with_entity(
                        e.entity
                            .iter()
                            .map(|x| {
                                alter_client_quotas_response::EntityData::default()
                                    .with_entity_type(x.entity_type.clone())
                                    .with_entity_name(x.entity_name.clone())
                            })
                            .collect(),
                    )
            })
            .collect();
        return refuse_whole(ResponseKind::AlterClientQuotas(
            AlterClientQuotasResponse::default().with_entries(entries),
        ));
    }
    Ok(r)
}

authorize_whole! {
    /// DescribeClientQuotas needs KafkaDescribe on the cluster.
    fn authorize_describe_client_quotas(ctx, r: DescribeClientQuotasRequest)
        if ctx.may_cluster(DESCRIBE);
    else ResponseKind::DescribeClientQuotas(DescribeClientQuotasResponse::default()
        .with_error_code(CLUSTER_DENIED)
        .with_error_message(Some(sb(
            "describing client quotas needs KafkaDescribe on the cluster"))))
}
