//! Who may do what, for every Kafka request: each API is an action on topics, groups or
//! the cluster (`docs/security.md` has the table), checked against the identity
//! policies of the connection's principal (its SASL user, or `ANONYMOUS`) before the
//! handler runs. A refused topic or group is taken out of the request and put back into
//! the response with TOPIC_AUTHORIZATION_FAILED or GROUP_AUTHORIZATION_FAILED, so the rest
//! of the request is served as Kafka serves it; a request about one group or the cluster
//! is answered with the error alone. As the documents say, a request no statement
//! matches is allowed unless `deny_unless_allowed` is set; an explicit Deny always wins.

use std::collections::BTreeMap;

use kafka_protocol::messages::*;

use crate::api::{Ctx, Reply, sb};

/// Reading a topic or a group (Fetch, OffsetCommit, group membership).
pub const READ: &str = "KafkaRead";
/// Writing to a topic (Produce).
pub const WRITE: &str = "KafkaWrite";
/// Creating topics and partitions, and changing their configs.
pub const CREATE: &str = "KafkaCreate";
/// Deleting topics, records and groups.
pub const DELETE: &str = "KafkaDelete";
/// Describing topics, groups and offsets.
pub const DESCRIBE: &str = "KafkaDescribe";
/// Changing the cluster (quotas, credentials, reassignments, elections).
pub const ALTER: &str = "KafkaAlter";

/// The view of the configured Kafka listeners (`[[views]]` add others).
pub const DEFAULT_VIEW: &str = "default";

/// TOPIC_AUTHORIZATION_FAILED.
const TOPIC_DENIED: i16 = 29;
/// GROUP_AUTHORIZATION_FAILED.
const GROUP_DENIED: i16 = 30;
/// CLUSTER_AUTHORIZATION_FAILED.
const CLUSTER_DENIED: i16 = 31;

impl Ctx {
    fn decide(&self, action: &str, resource: &str) -> bool {
        let mut values = BTreeMap::new();
        if let Some(p) = self.principal.as_deref() {
            values.insert("aws:username".to_owned(), vec![p.to_owned()]);
        }
        let context = iam::Context {
            source_ip: Some(self.peer.ip()),
            secure_transport: self.secure,
            values,
        };
        let req = iam::Request {
            action,
            resource,
            principal: self.principal.as_deref(),
            context: &context,
        };
        let allowed = self
            .broker
            .directory
            .allows_kafka(self.principal.as_deref(), &req);
        if !allowed {
            self.broker.metrics.authz_refused.inc();
            tracing::debug!(principal = ?self.principal, action, resource, "kafka request refused by policy");
        }
        allowed
    }

    /// Whether the principal may do `action` on a topic.
    pub fn may_topic(&self, action: &str, topic: &str) -> bool {
        let view = &self.broker.config.view;
        self.decide(action, &format!("vast:kafka:topic:{view}:{topic}"))
    }

    /// Whether the principal may do `action` on a group.
    pub fn may_group(&self, action: &str, group: &str) -> bool {
        let view = &self.broker.config.view;
        self.decide(action, &format!("vast:kafka:group:{view}:{group}"))
    }

    /// Whether the principal may do `action` on the cluster.
    pub fn may_cluster(&self, action: &str) -> bool {
        let view = &self.broker.config.view;
        self.decide(action, &format!("vast:kafka:cluster:{view}"))
    }

    /// Whether the principal may change who may connect (users' credentials): only
    /// when a statement allows it, or as the administrator no statement denies. Unlike
    /// other actions, no statement is not enough: otherwise any client that reaches the
    /// port could set any user's password.
    pub fn may_manage_principals(&self) -> bool {
        let resource = format!("vast:kafka:cluster:{}", self.broker.config.view);
        let context = iam::Context {
            source_ip: Some(self.peer.ip()),
            secure_transport: self.secure,
            values: BTreeMap::new(),
        };
        let req = iam::Request {
            action: ALTER,
            resource: &resource,
            principal: self.principal.as_deref(),
            context: &context,
        };
        let dir = &self.broker.directory;
        let allowed = match dir.identity_decision(self.principal.as_deref(), &req) {
            iam::Decision::Deny => false,
            iam::Decision::Allow => true,
            iam::Decision::NoMatch => self.principal.as_deref().is_some_and(|p| dir.is_admin(p)),
        };
        if !allowed {
            self.broker.metrics.authz_refused.inc();
        }
        allowed
    }
}

/// A response for a request refused whole.
fn refused(r: ResponseKind) -> Result<(RequestKind, Refused), Reply> {
    Err(crate::api::ready(r))
}

/// What [`check`] took out of a request, to put back into its response.
#[derive(Default)]
pub struct Refused {
    topics: Vec<(String, Vec<i32>)>,
    /// The ids of refused topics the request named by id (Fetch v13 on).
    ids: BTreeMap<String, uuid::Uuid>,
    groups: Vec<String>,
    /// Config resources refused: (resource type, name, error).
    resources: Vec<(i8, String, i16)>,
    /// Topics (and all-topics listings) the principal may not see: left out of the
    /// response.
    hidden: bool,
}

impl Refused {
    /// Whether nothing was taken out (the response needs no change).
    pub fn is_empty(&self) -> bool {
        self.topics.is_empty()
            && self.groups.is_empty()
            && self.resources.is_empty()
            && !self.hidden
    }
}

/// Splits a request's topics into those allowed and those refused (with their
/// partitions).
fn split<T>(
    items: Vec<T>,
    name: impl Fn(&T) -> String,
    partitions: impl Fn(&T) -> Vec<i32>,
    allowed: impl Fn(&str) -> bool,
    refused: &mut Refused,
) -> Vec<T> {
    let mut kept = Vec::with_capacity(items.len());
    for t in items {
        let n = name(&t);
        if allowed(&n) {
            kept.push(t);
        } else {
            refused.topics.push((n, partitions(&t)));
        }
    }
    kept
}

/// Checks a request before its handler: `Err` with the whole answer when it is refused
/// outright, else the request with what was refused taken out.
pub async fn check(ctx: &Ctx, request: RequestKind) -> Result<(RequestKind, Refused), Reply> {
    let mut out = Refused::default();
    let request = match request {
        RequestKind::Produce(mut r) => {
            r.topic_data = split(
                r.topic_data,
                |t| t.name.0.to_string(),
                |t| t.partition_data.iter().map(|p| p.index).collect(),
                |n| ctx.may_topic(WRITE, n),
                &mut out,
            );
            RequestKind::Produce(r)
        }
        RequestKind::Fetch(mut r) if r.replica_id.0 < 0 => {
            let names = topic_names_by_id(ctx, r.topics.iter().map(|t| t.topic_id)).await;
            out.ids = names.iter().map(|(id, n)| (n.clone(), *id)).collect();
            r.topics = split(
                r.topics,
                |t| topic_name(&names, &t.topic.0, t.topic_id),
                |t| t.partitions.iter().map(|p| p.partition).collect(),
                |n| ctx.may_topic(READ, n),
                &mut out,
            );
            RequestKind::Fetch(r)
        }
        RequestKind::ListOffsets(mut r) => {
            r.topics = split(
                r.topics,
                |t| t.name.0.to_string(),
                |t| t.partitions.iter().map(|p| p.partition_index).collect(),
                |n| ctx.may_topic(DESCRIBE, n),
                &mut out,
            );
            RequestKind::ListOffsets(r)
        }
        RequestKind::Metadata(mut r) => {
            match r.topics.take() {
                Some(topics) => {
                    r.topics = Some(split(
                        topics,
                        |t| t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default(),
                        |_| Vec::new(),
                        |n| ctx.may_topic(DESCRIBE, n),
                        &mut out,
                    ))
                }
                None => out.hidden = true,
            }
            RequestKind::Metadata(r)
        }
        RequestKind::DescribeTopicPartitions(mut r) => {
            r.topics = split(
                r.topics,
                |t| t.name.0.to_string(),
                |_| Vec::new(),
                |n| ctx.may_topic(DESCRIBE, n),
                &mut out,
            );
            RequestKind::DescribeTopicPartitions(r)
        }
        RequestKind::DeleteRecords(mut r) => {
            r.topics = split(
                r.topics,
                |t| t.name.0.to_string(),
                |t| t.partitions.iter().map(|p| p.partition_index).collect(),
                |n| ctx.may_topic(DELETE, n),
                &mut out,
            );
            RequestKind::DeleteRecords(r)
        }
        RequestKind::CreateTopics(mut r) => {
            r.topics = split(
                r.topics,
                |t| t.name.0.to_string(),
                |_| Vec::new(),
                |n| ctx.may_topic(CREATE, n),
                &mut out,
            );
            RequestKind::CreateTopics(r)
        }
        RequestKind::CreatePartitions(mut r) => {
            r.topics = split(
                r.topics,
                |t| t.name.0.to_string(),
                |_| Vec::new(),
                |n| ctx.may_topic(CREATE, n),
                &mut out,
            );
            RequestKind::CreatePartitions(r)
        }
        RequestKind::DeleteTopics(mut r) => {
            let names = topic_names_by_id(ctx, r.topics.iter().map(|t| t.topic_id)).await;
            r.topic_names = split(
                r.topic_names,
                |t| t.0.to_string(),
                |_| Vec::new(),
                |n| ctx.may_topic(DELETE, n),
                &mut out,
            );
            r.topics = split(
                r.topics,
                |t| {
                    topic_name(
                        &names,
                        t.name.as_ref().map_or("", |n| n.0.as_str()),
                        t.topic_id,
                    )
                },
                |_| Vec::new(),
                |n| ctx.may_topic(DELETE, n),
                &mut out,
            );
            RequestKind::DeleteTopics(r)
        }
        RequestKind::DescribeConfigs(mut r) => {
            r.resources.retain(|c| {
                config_allowed(ctx, c.resource_type, &c.resource_name, DESCRIBE, &mut out)
            });
            RequestKind::DescribeConfigs(r)
        }
        RequestKind::AlterConfigs(mut r) => {
            r.resources.retain(|c| {
                config_allowed(ctx, c.resource_type, &c.resource_name, CREATE, &mut out)
            });
            RequestKind::AlterConfigs(r)
        }
        RequestKind::IncrementalAlterConfigs(mut r) => {
            r.resources.retain(|c| {
                config_allowed(ctx, c.resource_type, &c.resource_name, CREATE, &mut out)
            });
            RequestKind::IncrementalAlterConfigs(r)
        }
        RequestKind::OffsetCommit(mut r) => {
            if !ctx.may_group(READ, &r.group_id.0) {
                let mut resp = OffsetCommitResponse::default();
                resp.topics = r
                    .topics
                    .iter()
                    .map(|t| {
                        let mut rt = offset_commit_response::OffsetCommitResponseTopic::default();
                        rt.name = t.name.clone();
                        rt.topic_id = t.topic_id;
                        rt.partitions = t
                            .partitions
                            .iter()
                            .map(|p| {
                                offset_commit_response::OffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(GROUP_DENIED)
                            })
                            .collect();
                        rt
                    })
                    .collect();
                return refused(ResponseKind::OffsetCommit(resp));
            }
            r.topics = split(
                r.topics,
                |t| t.name.0.to_string(),
                |t| t.partitions.iter().map(|p| p.partition_index).collect(),
                |n| ctx.may_topic(READ, n),
                &mut out,
            );
            RequestKind::OffsetCommit(r)
        }
        RequestKind::OffsetFetch(r) => {
            if r.groups.is_empty() && !ctx.may_group(DESCRIBE, &r.group_id.0) {
                return refused(ResponseKind::OffsetFetch(
                    OffsetFetchResponse::default().with_error_code(GROUP_DENIED),
                ));
            }
            out.groups = r
                .groups
                .iter()
                .map(|g| g.group_id.0.to_string())
                .filter(|g| !ctx.may_group(DESCRIBE, g))
                .collect();
            // Offsets of topics the principal may not describe are left out.
            out.hidden = true;
            RequestKind::OffsetFetch(r)
        }
        RequestKind::JoinGroup(r) if !ctx.may_group(READ, &r.group_id.0) => {
            return refused(ResponseKind::JoinGroup(
                JoinGroupResponse::default()
                    .with_error_code(GROUP_DENIED)
                    .with_generation_id(-1),
            ));
        }
        RequestKind::SyncGroup(r) if !ctx.may_group(READ, &r.group_id.0) => {
            return refused(ResponseKind::SyncGroup(
                SyncGroupResponse::default().with_error_code(GROUP_DENIED),
            ));
        }
        RequestKind::Heartbeat(r) if !ctx.may_group(READ, &r.group_id.0) => {
            return refused(ResponseKind::Heartbeat(
                HeartbeatResponse::default().with_error_code(GROUP_DENIED),
            ));
        }
        RequestKind::LeaveGroup(r) if !ctx.may_group(READ, &r.group_id.0) => {
            return refused(ResponseKind::LeaveGroup(
                LeaveGroupResponse::default().with_error_code(GROUP_DENIED),
            ));
        }
        RequestKind::ConsumerGroupHeartbeat(r) if !ctx.may_group(READ, &r.group_id.0) => {
            return refused(ResponseKind::ConsumerGroupHeartbeat(
                ConsumerGroupHeartbeatResponse::default().with_error_code(GROUP_DENIED),
            ));
        }
        RequestKind::OffsetDelete(r) if !ctx.may_group(DELETE, &r.group_id.0) => {
            return refused(ResponseKind::OffsetDelete(
                OffsetDeleteResponse::default().with_error_code(GROUP_DENIED),
            ));
        }
        RequestKind::FindCoordinator(r) => {
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
            RequestKind::FindCoordinator(r)
        }
        RequestKind::DescribeGroups(mut r) => {
            let (kept, denied): (Vec<_>, Vec<_>) = r
                .groups
                .into_iter()
                .partition(|g| ctx.may_group(DESCRIBE, &g.0));
            r.groups = kept;
            out.groups = denied.into_iter().map(|g| g.0.to_string()).collect();
            RequestKind::DescribeGroups(r)
        }
        RequestKind::DeleteGroups(mut r) => {
            let (kept, denied): (Vec<_>, Vec<_>) = r
                .groups_names
                .into_iter()
                .partition(|g| ctx.may_group(DELETE, &g.0));
            r.groups_names = kept;
            out.groups = denied.into_iter().map(|g| g.0.to_string()).collect();
            RequestKind::DeleteGroups(r)
        }
        RequestKind::ListGroups(r) => {
            out.hidden = true;
            RequestKind::ListGroups(r)
        }
        RequestKind::AlterClientQuotas(r) if !ctx.may_cluster(ALTER) => {
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
            return refused(ResponseKind::AlterClientQuotas(
                AlterClientQuotasResponse::default().with_entries(entries),
            ));
        }
        RequestKind::AlterUserScramCredentials(r) if !ctx.may_manage_principals() => {
            let mut users: Vec<String> = r
                .deletions
                .iter()
                .map(|d| d.name.to_string())
                .chain(r.upsertions.iter().map(|u| u.name.to_string()))
                .collect();
            users.sort();
            users.dedup();
            let results = users
                .iter()
                .map(|u| {
                    alter_user_scram_credentials_response::AlterUserScramCredentialsResult::default()
                        .with_user(sb(u))
                        .with_error_code(CLUSTER_DENIED)
                        .with_error_message(Some(sb(
                            "only the administrator, or a principal a policy allows KafkaAlter on the cluster, changes credentials",
                        )))
                })
                .collect();
            return refused(ResponseKind::AlterUserScramCredentials(
                AlterUserScramCredentialsResponse::default().with_results(results),
            ));
        }
        RequestKind::CreateAcls(r) if !ctx.may_manage_principals() => {
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
            return refused(ResponseKind::CreateAcls(
                CreateAclsResponse::default().with_results(results),
            ));
        }
        RequestKind::DeleteAcls(r) if !ctx.may_manage_principals() => {
            let results = r
                .filters
                .iter()
                .map(|_| {
                    delete_acls_response::DeleteAclsFilterResult::default()
                        .with_error_code(CLUSTER_DENIED)
                })
                .collect();
            return refused(ResponseKind::DeleteAcls(
                DeleteAclsResponse::default().with_filter_results(results),
            ));
        }
        RequestKind::DescribeAcls(_) if !ctx.may_cluster(DESCRIBE) => {
            return refused(ResponseKind::DescribeAcls(
                DescribeAclsResponse::default().with_error_code(CLUSTER_DENIED),
            ));
        }
        RequestKind::DescribeUserScramCredentials(_) if !ctx.may_cluster(DESCRIBE) => {
            return refused(ResponseKind::DescribeUserScramCredentials(
                DescribeUserScramCredentialsResponse::default().with_error_code(CLUSTER_DENIED),
            ));
        }
        RequestKind::ElectLeaders(_) if !ctx.may_cluster(ALTER) => {
            return refused(ResponseKind::ElectLeaders(
                ElectLeadersResponse::default().with_error_code(CLUSTER_DENIED),
            ));
        }
        RequestKind::AlterPartitionReassignments(_) if !ctx.may_cluster(ALTER) => {
            return refused(ResponseKind::AlterPartitionReassignments(
                AlterPartitionReassignmentsResponse::default().with_error_code(CLUSTER_DENIED),
            ));
        }
        other => other,
    };
    Ok((request, out))
}

/// Whether a config resource may be described or changed: a topic's (type 2) by the
/// topic action (`topic_action`), a broker's or the cluster's by the cluster action
/// (Describe, or Alter for a change). A refused one is noted with its error.
fn config_allowed(
    ctx: &Ctx,
    resource_type: i8,
    name: &str,
    topic_action: &str,
    out: &mut Refused,
) -> bool {
    const TOPIC: i8 = 2;
    let (allowed, code) = if resource_type == TOPIC {
        (ctx.may_topic(topic_action, name), TOPIC_DENIED)
    } else {
        let action = if topic_action == DESCRIBE {
            DESCRIBE
        } else {
            ALTER
        };
        (ctx.may_cluster(action), CLUSTER_DENIED)
    };
    if !allowed {
        out.resources.push((resource_type, name.to_owned(), code));
    }
    allowed
}

/// Names of topics a request gives by id (Fetch v13 on, DeleteTopics v6).
async fn topic_names_by_id(
    ctx: &Ctx,
    ids: impl Iterator<Item = uuid::Uuid>,
) -> BTreeMap<uuid::Uuid, String> {
    let mut names = BTreeMap::new();
    for id in ids.filter(|id| !id.is_nil()) {
        if let Ok(Some(t)) = ctx.broker.catalog.topic_by_id(id.as_u128()).await {
            names.insert(id, t.name);
        }
    }
    names
}

fn topic_name(names: &BTreeMap<uuid::Uuid, String>, name: &str, id: uuid::Uuid) -> String {
    if !name.is_empty() {
        return name.to_owned();
    }
    // An unknown id is answered by the handler (UNKNOWN_TOPIC_ID), not refused here.
    names.get(&id).cloned().unwrap_or_default()
}

/// Puts what [`check`] took out back into the response, with its error.
pub fn answer(ctx: &Ctx, response: ResponseKind, refused: Refused) -> ResponseKind {
    if refused.is_empty() {
        return response;
    }
    let topic = |n: &str| TopicName(sb(n));
    match response {
        ResponseKind::Produce(mut r) => {
            for (name, parts) in refused.topics {
                r.responses.push(
                    produce_response::TopicProduceResponse::default()
                        .with_name(topic(&name))
                        .with_partition_responses(
                            parts
                                .into_iter()
                                .map(|p| {
                                    produce_response::PartitionProduceResponse::default()
                                        .with_index(p)
                                        .with_error_code(TOPIC_DENIED)
                                        .with_base_offset(-1)
                                        .with_log_append_time_ms(-1)
                                        .with_log_start_offset(-1)
                                })
                                .collect(),
                        ),
                );
            }
            ResponseKind::Produce(r)
        }
        ResponseKind::Fetch(mut r) => {
            for (name, parts) in refused.topics {
                let id = refused.ids.get(&name).copied().unwrap_or_default();
                r.responses.push(
                    fetch_response::FetchableTopicResponse::default()
                        .with_topic(topic(&name))
                        .with_topic_id(id)
                        .with_partitions(
                            parts
                                .into_iter()
                                .map(|p| {
                                    fetch_response::PartitionData::default()
                                        .with_partition_index(p)
                                        .with_error_code(TOPIC_DENIED)
                                        .with_high_watermark(-1)
                                        .with_last_stable_offset(-1)
                                        .with_log_start_offset(-1)
                                })
                                .collect(),
                        ),
                );
            }
            ResponseKind::Fetch(r)
        }
        ResponseKind::ListOffsets(mut r) => {
            for (name, parts) in refused.topics {
                r.topics.push(
                    list_offsets_response::ListOffsetsTopicResponse::default()
                        .with_name(topic(&name))
                        .with_partitions(
                            parts
                                .into_iter()
                                .map(|p| {
                                    list_offsets_response::ListOffsetsPartitionResponse::default()
                                        .with_partition_index(p)
                                        .with_error_code(TOPIC_DENIED)
                                        .with_timestamp(-1)
                                        .with_offset(-1)
                                })
                                .collect(),
                        ),
                );
            }
            ResponseKind::ListOffsets(r)
        }
        ResponseKind::Metadata(mut r) => {
            if refused.hidden {
                r.topics.retain(|t| {
                    t.name
                        .as_ref()
                        .is_none_or(|n| ctx.may_topic(DESCRIBE, &n.0))
                });
            }
            for (name, _) in refused.topics {
                r.topics.push(
                    metadata_response::MetadataResponseTopic::default()
                        .with_name(Some(topic(&name)))
                        .with_error_code(TOPIC_DENIED),
                );
            }
            ResponseKind::Metadata(r)
        }
        ResponseKind::DescribeTopicPartitions(mut r) => {
            for (name, _) in refused.topics {
                r.topics.push(
                    describe_topic_partitions_response::DescribeTopicPartitionsResponseTopic::default()
                        .with_name(Some(topic(&name)))
                        .with_error_code(TOPIC_DENIED),
                );
            }
            ResponseKind::DescribeTopicPartitions(r)
        }
        ResponseKind::DeleteRecords(mut r) => {
            for (name, parts) in refused.topics {
                r.topics.push(
                    delete_records_response::DeleteRecordsTopicResult::default()
                        .with_name(topic(&name))
                        .with_partitions(
                            parts
                                .into_iter()
                                .map(|p| {
                                    delete_records_response::DeleteRecordsPartitionResult::default()
                                        .with_partition_index(p)
                                        .with_error_code(TOPIC_DENIED)
                                        .with_low_watermark(-1)
                                })
                                .collect(),
                        ),
                );
            }
            ResponseKind::DeleteRecords(r)
        }
        ResponseKind::CreateTopics(mut r) => {
            for (name, _) in refused.topics {
                r.topics.push(
                    create_topics_response::CreatableTopicResult::default()
                        .with_name(topic(&name))
                        .with_error_code(TOPIC_DENIED)
                        .with_error_message(Some(sb("not authorized to create this topic")))
                        .with_num_partitions(-1)
                        .with_replication_factor(-1),
                );
            }
            ResponseKind::CreateTopics(r)
        }
        ResponseKind::CreatePartitions(mut r) => {
            for (name, _) in refused.topics {
                r.results.push(
                    create_partitions_response::CreatePartitionsTopicResult::default()
                        .with_name(topic(&name))
                        .with_error_code(TOPIC_DENIED),
                );
            }
            ResponseKind::CreatePartitions(r)
        }
        ResponseKind::DeleteTopics(mut r) => {
            for (name, _) in refused.topics {
                r.responses.push(
                    delete_topics_response::DeletableTopicResult::default()
                        .with_name(Some(topic(&name)))
                        .with_error_code(TOPIC_DENIED),
                );
            }
            ResponseKind::DeleteTopics(r)
        }
        ResponseKind::DescribeConfigs(mut r) => {
            for (kind, name, code) in refused.resources {
                r.results.push(
                    describe_configs_response::DescribeConfigsResult::default()
                        .with_resource_type(kind)
                        .with_resource_name(sb(&name))
                        .with_error_code(code),
                );
            }
            ResponseKind::DescribeConfigs(r)
        }
        ResponseKind::AlterConfigs(mut r) => {
            for (kind, name, code) in refused.resources {
                r.responses.push(
                    alter_configs_response::AlterConfigsResourceResponse::default()
                        .with_resource_type(kind)
                        .with_resource_name(sb(&name))
                        .with_error_code(code),
                );
            }
            ResponseKind::AlterConfigs(r)
        }
        ResponseKind::IncrementalAlterConfigs(mut r) => {
            for (kind, name, code) in refused.resources {
                r.responses.push(
                    incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                        .with_resource_type(kind)
                        .with_resource_name(sb(&name))
                        .with_error_code(code),
                );
            }
            ResponseKind::IncrementalAlterConfigs(r)
        }
        ResponseKind::OffsetCommit(mut r) => {
            for (name, parts) in refused.topics {
                r.topics.push(
                    offset_commit_response::OffsetCommitResponseTopic::default()
                        .with_name(topic(&name))
                        .with_partitions(
                            parts
                                .into_iter()
                                .map(|p| {
                                    offset_commit_response::OffsetCommitResponsePartition::default()
                                        .with_partition_index(p)
                                        .with_error_code(TOPIC_DENIED)
                                })
                                .collect(),
                        ),
                );
            }
            ResponseKind::OffsetCommit(r)
        }
        ResponseKind::OffsetFetch(mut r) => {
            r.topics.retain(|t| ctx.may_topic(DESCRIBE, &t.name.0));
            for g in &mut r.groups {
                if refused.groups.iter().any(|d| *d == *g.group_id.0) {
                    g.error_code = GROUP_DENIED;
                    g.topics.clear();
                }
                g.topics.retain(|t| ctx.may_topic(DESCRIBE, &t.name.0));
            }
            ResponseKind::OffsetFetch(r)
        }
        ResponseKind::FindCoordinator(mut r) => {
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
            ResponseKind::FindCoordinator(r)
        }
        ResponseKind::DescribeGroups(mut r) => {
            for g in refused.groups {
                r.groups.push(
                    describe_groups_response::DescribedGroup::default()
                        .with_group_id(GroupId(sb(&g)))
                        .with_error_code(GROUP_DENIED),
                );
            }
            ResponseKind::DescribeGroups(r)
        }
        ResponseKind::DeleteGroups(mut r) => {
            for g in refused.groups {
                r.results.push(
                    delete_groups_response::DeletableGroupResult::default()
                        .with_group_id(GroupId(sb(&g)))
                        .with_error_code(GROUP_DENIED),
                );
            }
            ResponseKind::DeleteGroups(r)
        }
        ResponseKind::ListGroups(mut r) => {
            r.groups.retain(|g| ctx.may_group(DESCRIBE, &g.group_id.0));
            ResponseKind::ListGroups(r)
        }
        other => other,
    }
}
