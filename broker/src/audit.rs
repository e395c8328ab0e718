//! Kafka's administrative changes in the audit trail (docs/security.md): after an admin
//! request's reply, each part its response reports done (error code 0) is one event,
//! with the connection's principal and address. Validate-only requests change nothing
//! and are not recorded; refusals are recorded where policies refuse
//! ([`crate::authz`]).

use iam::audit::{AuditEvent, Outcome};
use kafka_protocol::messages::{RequestKind, ResponseKind};

use crate::context::Ctx;

/// An administrative request whose response says what it changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    CreateTopics,
    DeleteTopics,
    CreatePartitions,
    AlterConfigs,
    IncrementalAlterConfigs,
    DeleteRecords,
    DeleteGroups,
    AlterUserScramCredentials,
    /// The ACLs asked for, described, in request order (the response's results are
    /// in the same order).
    CreateAcls(Vec<String>),
    DeleteAcls,
}

/// An ACL as the audit trail names it: Kafka's numeric codes, as in the request.
fn acl(
    resource_type: i8,
    name: &str,
    pattern: i8,
    principal: &str,
    host: &str,
    operation: i8,
    permission: i8,
) -> String {
    format!(
        "acl:resource_type={resource_type},name={name},pattern={pattern},principal={principal},host={host},operation={operation},permission={permission}"
    )
}

impl Change {
    /// The API's name, the audit event's action.
    fn name(&self) -> &'static str {
        match self {
            Change::CreateTopics => "CreateTopics",
            Change::DeleteTopics => "DeleteTopics",
            Change::CreatePartitions => "CreatePartitions",
            Change::AlterConfigs => "AlterConfigs",
            Change::IncrementalAlterConfigs => "IncrementalAlterConfigs",
            Change::DeleteRecords => "DeleteRecords",
            Change::DeleteGroups => "DeleteGroups",
            Change::AlterUserScramCredentials => "AlterUserScramCredentials",
            Change::CreateAcls(_) => "CreateAcls",
            Change::DeleteAcls => "DeleteAcls",
        }
    }
}

/// The change `request` asks for, if it is administrative and not validate-only.
pub(crate) fn of(request: &RequestKind) -> Option<Change> {
    Some(match request {
        RequestKind::CreateTopics(r) if !r.validate_only => Change::CreateTopics,
        RequestKind::DeleteTopics(_) => Change::DeleteTopics,
        RequestKind::CreatePartitions(r) if !r.validate_only => Change::CreatePartitions,
        RequestKind::AlterConfigs(r) if !r.validate_only => Change::AlterConfigs,
        RequestKind::IncrementalAlterConfigs(r) if !r.validate_only => {
            Change::IncrementalAlterConfigs
        }
        RequestKind::DeleteRecords(_) => Change::DeleteRecords,
        RequestKind::DeleteGroups(_) => Change::DeleteGroups,
        RequestKind::AlterUserScramCredentials(_) => Change::AlterUserScramCredentials,
        RequestKind::CreateAcls(r) => Change::CreateAcls(
            r.creations
                .iter()
                .map(|c| {
                    acl(
                        c.resource_type,
                        &c.resource_name,
                        c.resource_pattern_type,
                        &c.principal,
                        &c.host,
                        c.operation,
                        c.permission_type,
                    )
                })
                .collect(),
        ),
        RequestKind::DeleteAcls(_) => Change::DeleteAcls,
        _ => return None,
    })
}

/// Records what `response` reports done.
pub(crate) fn record(ctx: &Ctx, change: &Change, response: &ResponseKind) {
    let view = &ctx.broker.config.view;
    let topic = |name: &str| format!("vast:kafka:topic:{view}:{name}");
    let mut done: Vec<String> = Vec::new();
    match response {
        ResponseKind::CreateTopics(r) => done.extend(
            r.topics
                .iter()
                .filter(|t| t.error_code == 0)
                .map(|t| topic(&t.name)),
        ),
        ResponseKind::DeleteTopics(r) => done.extend(
            r.responses
                .iter()
                .filter(|t| t.error_code == 0)
                .filter_map(|t| t.name.as_ref().map(|n| topic(n))),
        ),
        ResponseKind::CreatePartitions(r) => done.extend(
            r.results
                .iter()
                .filter(|t| t.error_code == 0)
                .map(|t| topic(&t.name)),
        ),
        ResponseKind::AlterConfigs(r) => done.extend(
            r.responses
                .iter()
                .filter(|c| c.error_code == 0)
                .map(|c| config_resource(view, c.resource_type, &c.resource_name)),
        ),
        ResponseKind::IncrementalAlterConfigs(r) => done.extend(
            r.responses
                .iter()
                .filter(|c| c.error_code == 0)
                .map(|c| config_resource(view, c.resource_type, &c.resource_name)),
        ),
        ResponseKind::DeleteRecords(r) => done.extend(r.topics.iter().flat_map(|t| {
            t.partitions
                .iter()
                .filter(|p| p.error_code == 0)
                .map(move |p| format!("{}/{}", topic(&t.name), p.partition_index))
        })),
        ResponseKind::DeleteGroups(r) => done.extend(
            r.results
                .iter()
                .filter(|g| g.error_code == 0)
                .map(|g| format!("vast:kafka:group:{view}:{}", &*g.group_id)),
        ),
        ResponseKind::CreateAcls(r) => {
            if let Change::CreateAcls(asked) = change {
                done.extend(
                    r.results
                        .iter()
                        .zip(asked)
                        .filter(|(res, _)| res.error_code == 0)
                        .map(|(_, a)| a.clone()),
                );
            }
        }
        ResponseKind::DeleteAcls(r) => done.extend(
            r.filter_results
                .iter()
                .filter(|f| f.error_code == 0)
                .flat_map(|f| f.matching_acls.iter())
                .filter(|m| m.error_code == 0)
                .map(|m| {
                    acl(
                        m.resource_type,
                        &m.resource_name,
                        m.pattern_type,
                        &m.principal,
                        &m.host,
                        m.operation,
                        m.permission_type,
                    )
                }),
        ),
        ResponseKind::AlterUserScramCredentials(r) => done.extend(
            r.results
                .iter()
                .filter(|u| u.error_code == 0)
                .map(|u| format!("vast:kafka:user:{}", &*u.user)),
        ),
        _ => {}
    }
    for resource in done {
        ctx.broker.directory.audit(
            AuditEvent::now(
                "kafka",
                ctx.principal.as_deref(),
                change.name(),
                resource,
                Outcome::Changed,
            )
            .from(Some(ctx.peer.to_string())),
        );
    }
}

/// A config resource as a policy resource: a topic, or the broker (the cluster).
fn config_resource(view: &str, resource_type: i8, name: &str) -> String {
    // 2 is TOPIC in Kafka's ConfigResource.Type.
    if resource_type == 2 {
        format!("vast:kafka:topic:{view}:{name}")
    } else {
        format!("vast:kafka:cluster:{view}")
    }
}
