//! CreateAcls, DescribeAcls and DeleteAcls: Kafka's ACL calls as a view onto Eddy's
//! policies, so ACL tooling and admin clients work. An ACL binding of `User:NAME` is one
//! statement of the identity policy `kafka-acl:User:NAME`, attached to NAME (`User:*` to
//! everyone, `User:ANONYMOUS` to unauthenticated clients): its operation becomes the
//! action, its resource pattern the resource (a prefixed pattern ends in `*`), its host a
//! `aws:SourceIp` condition, its permission the effect. The same evaluation then enforces
//! ACLs and policies alike, and `eddy policy list` shows them. DescribeAcls and
//! DeleteAcls see the bindings made this way.

use crate::authz::*;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse, ResponseKind,
};
use kafka_protocol::messages::{create_acls_response, delete_acls_response};
use serde_json::{Value, json};

use crate::context::{Ctx, Reply, sb};

/// Names of the policies that hold ACL bindings: this prefix and the principal.
pub const PREFIX: &str = "kafka-acl:";

// Kafka's enum values.
const ANY: i8 = 1;
const MATCH: i8 = 2;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const CLUSTER: i8 = 4;
const OP_ALL: i8 = 2;
const DENY: i8 = 2;
const ALLOW: i8 = 3;

/// One ACL binding.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Binding {
    /// The broker view it belongs to.
    pub view: String,
    /// TOPIC, GROUP or CLUSTER.
    pub resource_type: i8,
    /// The name, or prefix.
    pub resource_name: String,
    /// LITERAL or PREFIXED.
    pub pattern_type: i8,
    /// `User:NAME`.
    pub principal: String,
    /// `*` or an address.
    pub host: String,
    /// Kafka's operation.
    pub operation: i8,
    /// ALLOW or DENY.
    pub permission: i8,
}

/// The Eddy action of a Kafka ACL operation (`None`: one Eddy has no action for).
fn action_of(op: i8) -> Option<&'static str> {
    Some(match op {
        OP_ALL => "Kafka*",
        3 => "KafkaRead",
        4 => "KafkaWrite",
        5 => "KafkaCreate",
        6 => "KafkaDelete",
        7 => "KafkaAlter",
        8 => "KafkaDescribe",
        _ => return None,
    })
}

fn op_of(action: &str) -> Option<i8> {
    Some(match action {
        "Kafka*" => OP_ALL,
        "KafkaRead" => 3,
        "KafkaWrite" => 4,
        "KafkaCreate" => 5,
        "KafkaDelete" => 6,
        "KafkaAlter" => 7,
        "KafkaDescribe" => 8,
        _ => return None,
    })
}

fn kind_of(resource_type: i8) -> Option<&'static str> {
    match resource_type {
        TOPIC => Some("topic"),
        GROUP => Some("group"),
        CLUSTER => Some("cluster"),
        _ => None,
    }
}

impl Binding {
    /// Checks the binding and says why Kafka would refuse it.
    fn check(&self) -> Result<(), String> {
        let kind = kind_of(self.resource_type)
            .ok_or("only TOPIC, GROUP and CLUSTER resources have ACLs here")?;
        action_of(self.operation).ok_or(
            "only the operations ALL, READ, WRITE, CREATE, DELETE, ALTER and DESCRIBE have ACLs here",
        )?;
        if self.permission != ALLOW && self.permission != DENY {
            return Err("the permission must be ALLOW or DENY".into());
        }
        if self.pattern_type != LITERAL && self.pattern_type != PREFIXED {
            return Err("the pattern type must be LITERAL or PREFIXED".into());
        }
        if kind == "cluster" && self.resource_name != "kafka-cluster" {
            return Err("the cluster resource is named kafka-cluster".into());
        }
        let wild = self.resource_name.contains(['*', '?']);
        if self.resource_name.is_empty() || (wild && self.resource_name != "*") {
            return Err(
                "a resource name is not empty and has no wildcard other than a lone *".into(),
            );
        }
        if self.principal_name().is_none() {
            return Err("the principal must be User:NAME".into());
        }
        if self.host != "*" && self.host.parse::<std::net::IpAddr>().is_err() {
            return Err("the host must be * or an IP address".into());
        }
        Ok(())
    }

    fn principal_name(&self) -> Option<&str> {
        self.principal
            .strip_prefix("User:")
            .filter(|n| !n.is_empty())
    }

    fn resource(&self) -> String {
        let kind = kind_of(self.resource_type).unwrap_or("topic");
        let view = &self.view;
        if kind == "cluster" {
            return format!("vast:kafka:cluster:{view}");
        }
        let star = if self.pattern_type == PREFIXED {
            "*"
        } else {
            ""
        };
        format!("vast:kafka:{kind}:{view}:{}{star}", self.resource_name)
    }

    fn statement(&self) -> Value {
        let mut s = json!({
            "Effect": if self.permission == ALLOW { "Allow" } else { "Deny" },
            "Action": action_of(self.operation).unwrap_or("Kafka*"),
            "Resource": self.resource(),
        });
        if self.host != "*" {
            s["Condition"] = json!({"IpAddress": {"aws:SourceIp": self.host}});
        }
        s
    }

    /// The binding a statement of an ACL policy holds.
    fn of_statement(principal: &str, s: &Value) -> Option<Binding> {
        let resource = s["Resource"].as_str()?;
        let rest = resource.strip_prefix("vast:kafka:")?;
        let (resource_type, view, name) = if let Some(n) = rest.strip_prefix("topic:") {
            let (view, name) = n.split_once(':')?;
            (TOPIC, view, name)
        } else if let Some(n) = rest.strip_prefix("group:") {
            let (view, name) = n.split_once(':')?;
            (GROUP, view, name)
        } else {
            (CLUSTER, rest.strip_prefix("cluster:")?, "kafka-cluster")
        };
        let (pattern_type, name) = match name.strip_suffix('*') {
            Some(prefix) if !prefix.is_empty() => (PREFIXED, prefix),
            _ => (LITERAL, name),
        };
        Some(Binding {
            view: view.to_owned(),
            resource_type,
            resource_name: name.to_owned(),
            pattern_type,
            principal: principal.to_owned(),
            host: s["Condition"]["IpAddress"]["aws:SourceIp"]
                .as_str()
                .unwrap_or("*")
                .to_owned(),
            operation: op_of(s["Action"].as_str()?)?,
            permission: if s["Effect"] == "Deny" { DENY } else { ALLOW },
        })
    }
}

/// A DescribeAcls or DeleteAcls filter.
struct Filter {
    view: String,
    resource_type: i8,
    name: Option<String>,
    pattern_type: i8,
    principal: Option<String>,
    host: Option<String>,
    operation: i8,
    permission: i8,
}

impl Filter {
    fn matches(&self, b: &Binding) -> bool {
        let name_ok = match (&self.name, self.pattern_type) {
            (None, _) => true,
            (Some(n), MATCH) => {
                (b.pattern_type == LITERAL && (b.resource_name == *n || b.resource_name == "*"))
                    || (b.pattern_type == PREFIXED && n.starts_with(&b.resource_name))
            }
            (Some(n), _) => b.resource_name == *n,
        };
        let pattern_ok =
            matches!(self.pattern_type, ANY | MATCH) || self.pattern_type == b.pattern_type;
        self.view == b.view
            && (self.resource_type == ANY || self.resource_type == b.resource_type)
            && name_ok
            && pattern_ok
            && self.principal.as_ref().is_none_or(|p| *p == b.principal)
            && self.host.as_ref().is_none_or(|h| *h == b.host)
            && (self.operation == ANY || self.operation == b.operation)
            && (self.permission == ANY || self.permission == b.permission)
    }
}

/// The principal's name as the policy is attached (`*` for everyone).
fn attachment(principal: &str) -> String {
    principal
        .strip_prefix("User:")
        .unwrap_or(principal)
        .to_owned()
}

/// Every ACL binding, from the ACL policies.
fn bindings(ctx: &Ctx) -> Vec<Binding> {
    let mut out = Vec::new();
    for p in ctx.broker.directory.policies() {
        let Some(principal) = p.record.name.strip_prefix(PREFIX) else {
            continue;
        };
        let doc: Value = serde_json::from_str(&p.record.document).unwrap_or(Value::Null);
        for s in doc["Statement"].as_array().into_iter().flatten() {
            out.extend(Binding::of_statement(principal, s));
        }
    }
    out.sort();
    out
}

/// The ACL policy records holding `all`, one per principal.
fn records(all: &[Binding]) -> Vec<catalog::PolicyRecord> {
    let mut by: std::collections::BTreeMap<&str, Vec<Value>> = Default::default();
    for b in all {
        by.entry(&b.principal).or_default().push(b.statement());
    }
    by.into_iter()
        .map(|(principal, statements)| catalog::PolicyRecord {
            name: format!("{PREFIX}{principal}"),
            document: json!({"Version": "2012-10-17", "Statement": statements}).to_string(),
            attached: vec![attachment(principal)],
        })
        .collect()
}

/// CreateAcls.
pub fn create(ctx: Ctx, req: CreateAclsRequest) -> Reply {
    Box::pin(async move {
        let mut results = Vec::with_capacity(req.creations.len());
        let mut new = Vec::new();
        for c in &req.creations {
            let b = Binding {
                view: ctx.broker.config.view.clone(),
                resource_type: c.resource_type,
                resource_name: c.resource_name.to_string(),
                pattern_type: c.resource_pattern_type,
                principal: c.principal.to_string(),
                host: c.host.to_string(),
                operation: c.operation,
                permission: c.permission_type,
            };
            match b.check() {
                Ok(()) => {
                    new.push(b);
                    results.push(Ok(()));
                }
                Err(m) => results.push(Err(m)),
            }
        }
        let committed = ctx
            .broker
            .directory
            .replace_policies(PREFIX, |_| {
                let mut all = bindings(&ctx);
                for b in new {
                    if !all.contains(&b) {
                        all.push(b);
                    }
                }
                Ok(records(&all))
            })
            .await;
        let results = results
            .into_iter()
            .map(|r| match (r, &committed) {
                (Err(m), _) => AclCreationResult::default()
                    .with_error_code(ResponseError::InvalidRequest.code())
                    .with_error_message(Some(sb(&m))),
                (Ok(()), Err(e)) => AclCreationResult::default()
                    .with_error_code(ResponseError::KafkaStorageError.code())
                    .with_error_message(Some(sb(&e.to_string()))),
                (Ok(()), Ok(())) => AclCreationResult::default(),
            })
            .collect();
        Some(ResponseKind::CreateAcls(
            CreateAclsResponse::default().with_results(results),
        ))
    })
}

/// DescribeAcls.
pub fn describe(ctx: &Ctx, req: DescribeAclsRequest) -> DescribeAclsResponse {
    let f = Filter {
        view: ctx.broker.config.view.clone(),
        resource_type: req.resource_type_filter,
        name: req.resource_name_filter.map(|s| s.to_string()),
        pattern_type: req.pattern_type_filter,
        principal: req.principal_filter.map(|s| s.to_string()),
        host: req.host_filter.map(|s| s.to_string()),
        operation: req.operation,
        permission: req.permission_type,
    };
    let mut resources: Vec<DescribeAclsResource> = Vec::new();
    for b in bindings(ctx).into_iter().filter(|b| f.matches(b)) {
        let acl = AclDescription::default()
            .with_principal(sb(&b.principal))
            .with_host(sb(&b.host))
            .with_operation(b.operation)
            .with_permission_type(b.permission);
        match resources.iter_mut().find(|r| {
            r.resource_type == b.resource_type
                && r.resource_name.as_str() == b.resource_name
                && r.pattern_type == b.pattern_type
        }) {
            Some(r) => r.acls.push(acl),
            None => resources.push(
                DescribeAclsResource::default()
                    .with_resource_type(b.resource_type)
                    .with_resource_name(sb(&b.resource_name))
                    .with_pattern_type(b.pattern_type)
                    .with_acls(vec![acl]),
            ),
        }
    }
    DescribeAclsResponse::default().with_resources(resources)
}

/// DeleteAcls.
pub fn delete(ctx: Ctx, req: DeleteAclsRequest) -> Reply {
    Box::pin(async move {
        let filters: Vec<Filter> = req
            .filters
            .iter()
            .map(|f| Filter {
                view: ctx.broker.config.view.clone(),
                resource_type: f.resource_type_filter,
                name: f.resource_name_filter.as_ref().map(|s| s.to_string()),
                pattern_type: f.pattern_type_filter,
                principal: f.principal_filter.as_ref().map(|s| s.to_string()),
                host: f.host_filter.as_ref().map(|s| s.to_string()),
                operation: f.operation,
                permission: f.permission_type,
            })
            .collect();
        let mut matched: Vec<Vec<Binding>> = vec![Vec::new(); filters.len()];
        let committed = ctx
            .broker
            .directory
            .replace_policies(PREFIX, |_| {
                let all = bindings(&ctx);
                for (i, f) in filters.iter().enumerate() {
                    matched[i] = all.iter().filter(|b| f.matches(b)).cloned().collect();
                }
                let kept: Vec<Binding> = all
                    .into_iter()
                    .filter(|b| !filters.iter().any(|f| f.matches(b)))
                    .collect();
                Ok(records(&kept))
            })
            .await;
        let filter_results = matched
            .into_iter()
            .map(|bs| match &committed {
                Err(e) => DeleteAclsFilterResult::default()
                    .with_error_code(ResponseError::KafkaStorageError.code())
                    .with_error_message(Some(sb(&e.to_string()))),
                Ok(()) => DeleteAclsFilterResult::default().with_matching_acls(
                    bs.into_iter()
                        .map(|b| {
                            DeleteAclsMatchingAcl::default()
                                .with_resource_type(b.resource_type)
                                .with_resource_name(sb(&b.resource_name))
                                .with_pattern_type(b.pattern_type)
                                .with_principal(sb(&b.principal))
                                .with_host(sb(&b.host))
                                .with_operation(b.operation)
                                .with_permission_type(b.permission)
                        })
                        .collect(),
                ),
            })
            .collect();
        Some(ResponseKind::DeleteAcls(
            DeleteAclsResponse::default().with_filter_results(filter_results),
        ))
    })
}

/// CreateAcls changes who may connect: only the administrator, or a principal a statement
/// allows KafkaAlter on the cluster.
pub(crate) fn authorize_create_acls(
    ctx: &Ctx,
    r: CreateAclsRequest,
) -> Authorized<CreateAclsRequest> {
    if !ctx.may_manage_principals() {
        let results = r
                .creations
                .iter()
                .map(|_| {
                    create_acls_response::AclCreationResult::default()
                        .with_error_code(CLUSTER_DENIED)
                        .with_error_message(Some(sb(
                            "only the administrator, or a principal a policy allows KafkaAlter on the cluster, changes ACLs",
                        )))
                })
                .collect();
        return refuse_whole(ResponseKind::CreateAcls(
            CreateAclsResponse::default().with_results(results),
        ));
    }
    Ok(r)
}

/// DeleteAcls changes who may connect: only the administrator, or a principal a statement
/// allows KafkaAlter on the cluster.
pub(crate) fn authorize_delete_acls(
    ctx: &Ctx,
    r: DeleteAclsRequest,
) -> Authorized<DeleteAclsRequest> {
    if !ctx.may_manage_principals() {
        let results = r
            .filters
            .iter()
            .map(|_| {
                delete_acls_response::DeleteAclsFilterResult::default()
                    .with_error_code(CLUSTER_DENIED)
            })
            .collect();
        return refuse_whole(ResponseKind::DeleteAcls(
            DeleteAclsResponse::default().with_filter_results(results),
        ));
    }
    Ok(r)
}

authorize_whole! {
    /// DescribeAcls needs KafkaDescribe on the cluster.
    fn authorize_describe_acls(ctx, r: DescribeAclsRequest) if ctx.may_cluster(DESCRIBE);
    else ResponseKind::DescribeAcls(DescribeAclsResponse::default().with_error_code(CLUSTER_DENIED))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(name: &str, pattern: i8, op: i8, permission: i8) -> Binding {
        Binding {
            view: "default".into(),
            resource_type: TOPIC,
            resource_name: name.into(),
            pattern_type: pattern,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: op,
            permission,
        }
    }

    #[test]
    fn bindings_round_trip_through_statements() {
        for b in [
            binding("orders", LITERAL, 3, ALLOW),
            binding("logs-", PREFIXED, OP_ALL, DENY),
            binding("*", LITERAL, 8, ALLOW),
            Binding {
                host: "10.0.0.1".into(),
                resource_type: GROUP,
                ..binding("g1", LITERAL, 3, ALLOW)
            },
            Binding {
                resource_type: CLUSTER,
                ..binding("kafka-cluster", LITERAL, 7, ALLOW)
            },
        ] {
            b.check().unwrap();
            assert_eq!(Binding::of_statement("User:alice", &b.statement()), Some(b));
        }
        assert!(binding("a*b", LITERAL, 3, ALLOW).check().is_err());
        assert!(binding("t", LITERAL, 12, ALLOW).check().is_err());
        assert!(
            Binding {
                principal: "Group:x".into(),
                ..binding("t", LITERAL, 3, ALLOW)
            }
            .check()
            .is_err()
        );
    }

    #[test]
    fn match_filters_find_literal_wildcard_and_prefixed_bindings() {
        let f = Filter {
            view: "default".into(),
            resource_type: TOPIC,
            name: Some("logs-app".into()),
            pattern_type: MATCH,
            principal: None,
            host: None,
            operation: ANY,
            permission: ANY,
        };
        assert!(f.matches(&binding("logs-app", LITERAL, 3, ALLOW)));
        assert!(f.matches(&binding("*", LITERAL, 3, ALLOW)));
        assert!(f.matches(&binding("logs-", PREFIXED, 3, ALLOW)));
        assert!(!f.matches(&binding("logs-other", LITERAL, 3, ALLOW)));
        assert!(!f.matches(&binding("metrics-", PREFIXED, 3, ALLOW)));
    }
}
