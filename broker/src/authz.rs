//! Policy evaluation for Kafka requests: whether the connection's principal (its SASL
//! user, or `ANONYMOUS`) may do an action on a topic, a group or the cluster, by its
//! identity policies (`docs/security.md` has the table of actions), and what every API's
//! own `authorize` and `answer_refused` (in `crate::api`, one per API module, as Kafka's
//! `Authorizer` is called from each API) share: the refused parts of a request
//! ([`Refused`]), splitting a request's topics, the error codes. A refused topic or group
//! is taken out of the request and put back into the response with
//! TOPIC_AUTHORIZATION_FAILED or GROUP_AUTHORIZATION_FAILED, so the rest of the request is
//! served as Kafka serves it; a request about one group or the cluster is answered with
//! the error alone. As the documents say, a request no statement matches is allowed
//! unless `deny_unless_allowed` is set, and an explicit Deny wins over an Allow; the
//! administrator is Kafka's super user, allowed everything whatever the policies say.

use std::collections::BTreeMap;

use kafka_protocol::messages::*;

use crate::context::{Ctx, Reply, sb};

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
pub(crate) const TOPIC_DENIED: i16 = 29;
/// GROUP_AUTHORIZATION_FAILED.
pub(crate) const GROUP_DENIED: i16 = 30;
/// CLUSTER_AUTHORIZATION_FAILED.
pub(crate) const CLUSTER_DENIED: i16 = 31;

impl Ctx {
    /// Whether the connection's principal is the administrator: Kafka's super user, whom
    /// no policy refuses (not even a Deny, nor `deny_unless_allowed`), so no policy can
    /// lock the administrator out of the broker.
    fn is_super_user(&self) -> bool {
        self.principal
            .as_deref()
            .is_some_and(|p| self.broker.directory.is_admin(p))
    }

    fn decide(&self, action: &str, resource: &str) -> bool {
        let allowed = self.allows(action, resource);
        if !allowed {
            self.broker.metrics.authz_refused.inc();
            tracing::debug!(principal = ?self.principal, action, resource, "kafka request refused by policy");
            // Describe refusals are how listings leave out what a principal may not see
            // (every Metadata request would add one per hidden topic): not audited.
            if !action.starts_with("KafkaDescribe") {
                self.audit_refusal(action, resource);
            }
        }
        allowed
    }

    /// What the policies say of an action, without acting on a refusal (no count, no
    /// audit entry): [`Self::decide`]'s question, also asked by the web console to show
    /// only the buttons that would work.
    fn allows(&self, action: &str, resource: &str) -> bool {
        if self.is_super_user() {
            return true;
        }
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
        self.broker
            .directory
            .allows_kafka(self.principal.as_deref(), &req)
    }

    /// Records a refused action in the audit trail.
    fn audit_refusal(&self, action: &str, resource: &str) {
        self.broker.directory.audit(
            iam::audit::AuditEvent::now(
                "kafka",
                self.principal.as_deref(),
                action,
                resource,
                iam::audit::Outcome::Refused,
            )
            .from(Some(self.peer.to_string()))
            .because("no policy allows it"),
        );
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

    /// Whether the policies would let the principal do `action` on a topic, asked
    /// without acting on a refusal ([`Self::allows`]).
    pub fn would_allow_topic(&self, action: &str, topic: &str) -> bool {
        let view = &self.broker.config.view;
        self.allows(action, &format!("vast:kafka:topic:{view}:{topic}"))
    }

    /// [`Self::would_allow_topic`] for a group.
    pub fn would_allow_group(&self, action: &str, group: &str) -> bool {
        let view = &self.broker.config.view;
        self.allows(action, &format!("vast:kafka:group:{view}:{group}"))
    }

    /// Whether the principal may change who may connect (users' credentials): the
    /// administrator, or a principal a statement allows it. Unlike other actions, no
    /// statement is not enough: otherwise any client that reaches the port could set any
    /// user's password.
    pub fn may_manage_principals(&self) -> bool {
        if self.is_super_user() {
            return true;
        }
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
            iam::Decision::NoMatch => false,
        };
        if !allowed {
            self.broker.metrics.authz_refused.inc();
            self.audit_refusal(ALTER, &resource);
        }
        allowed
    }
}

/// What an API's `authorize` gives: the request with what was refused taken out, or the
/// whole answer.
pub(crate) type Authorized<T> = Result<T, Reply>;

/// A response for a request refused whole.
pub(crate) fn refuse_whole<T>(r: ResponseKind) -> Result<T, Reply> {
    Err(crate::context::ready(r))
}

/// The `authorize` of an API whose request lists topics or groups: the entries the
/// principal may do the action on stay, the others are noted as refused (`keep` for
/// topic entries, `keep_groups` for group ids). Written in the API's module as
/// `authorize_each! { /// doc  fn name(Request, field, keep, ACTION) }`.
macro_rules! authorize_each {
    ($(#[$doc:meta])* fn $name:ident($req:ty, $field:ident, $keep:ident, $action:expr)) => {
        $(#[$doc])*
        pub(crate) fn $name(
            ctx: &$crate::context::Ctx,
            mut r: $req,
            out: &mut $crate::authz::Refused,
        ) -> $crate::authz::Authorized<$req> {
            r.$field = out.$keep(ctx, $action, r.$field);
            Ok(r)
        }
    };
}
pub(crate) use authorize_each;

/// The `authorize` of an API whose request is about one resource (a group, the
/// cluster): the request as it came when `allowed` holds, else `refusal` is the whole
/// answer. Written as `authorize_whole! { /// doc  fn name(ctx, r: Request) if allowed;
/// else refusal }`.
macro_rules! authorize_whole {
    ($(#[$doc:meta])* fn $name:ident($ctx:ident, $r:ident: $req:ty)
     if $allowed:expr; else $refusal:expr) => {
        $(#[$doc])*
        pub(crate) fn $name($ctx: &$crate::context::Ctx, $r: $req) -> $crate::authz::Authorized<$req> {
            if $allowed {
                Ok($r)
            } else {
                $crate::authz::refuse_whole($refusal)
            }
        }
    };
}
pub(crate) use authorize_whole;

/// The `answer_refused` that puts the refused groups back into a list of the response,
/// each an `entry` with GROUP_AUTHORIZATION_FAILED. Written as
/// `answer_refused_groups! { /// doc  fn name(Response, field, Entry) }`.
macro_rules! answer_refused_groups {
    ($(#[$doc:meta])* fn $name:ident($resp:ty, $field:ident, $entry:ty)) => {
        $(#[$doc])*
        pub(crate) fn $name(mut r: $resp, refused: $crate::authz::Refused) -> $resp {
            r.$field.extend(refused.group_ids().map(|g| {
                <$entry>::default()
                    .with_group_id(g)
                    .with_error_code($crate::authz::GROUP_DENIED)
            }));
            r
        }
    };
}
pub(crate) use answer_refused_groups;

/// The `answer_refused` that puts the refused topics back into a list of the response:
/// `topic` makes a topic's entry of its name and partition entries, `partition` a
/// partition's entry of its index. Written as `answer_refused_topics! { /// doc
/// fn name(Response, field) |name, parts| topic, |p| partition }`.
macro_rules! answer_refused_topics {
    ($(#[$doc:meta])* fn $name:ident($resp:ty, $field:ident)
     |$n:ident, $ps:ident| $topic:expr, |$p:ident| $partition:expr) => {
        $(#[$doc])*
        pub(crate) fn $name(mut r: $resp, refused: $crate::authz::Refused) -> $resp {
            r.$field
                .extend(refused.topic_results(|$n, $ps| $topic, |$p| $partition));
            r
        }
    };
}
pub(crate) use answer_refused_topics;

/// What an API's `authorize` took out of a request, to put back into its response.
#[derive(Default)]
pub struct Refused {
    pub(crate) topics: Vec<(String, Vec<i32>)>,
    /// The ids of refused topics the request named by id (Fetch v13 on).
    pub(crate) ids: BTreeMap<String, uuid::Uuid>,
    pub(crate) groups: Vec<String>,
    /// Config resources refused: (resource type, name, error).
    pub(crate) resources: Vec<(i8, String, i16)>,
    /// Topics (and all-topics listings) the principal may not see: left out of the
    /// response.
    pub(crate) hidden: bool,
}

impl Refused {
    /// The refused topics as a response's topic entries: `topic` makes one of a topic's
    /// name and its partitions' entries, which `partition` makes of each partition index.
    pub(crate) fn topic_results<'a, T: 'a, P>(
        &'a self,
        topic: impl Fn(TopicName, Vec<P>) -> T + 'a,
        partition: impl Fn(i32) -> P + 'a,
    ) -> impl Iterator<Item = T> + 'a {
        self.topics.iter().map(move |(name, parts)| {
            topic(
                topic_of(name),
                parts.iter().map(|p| partition(*p)).collect(),
            )
        })
    }

    /// The ids of the refused groups, as responses carry them.
    pub(crate) fn group_ids(&self) -> impl Iterator<Item = GroupId> + '_ {
        self.groups.iter().map(|g| GroupId(sb(g)))
    }

    /// The names of the refused topics, as responses carry them.
    pub(crate) fn topic_names(&self) -> impl Iterator<Item = TopicName> + '_ {
        self.topics.iter().map(|(name, _)| topic_of(name))
    }

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
pub(crate) fn split<T>(
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

/// A request's entry about one topic, by its name: the partitions it names (none for
/// requests about whole topics).
pub(crate) trait TopicEntry {
    /// The topic's name.
    fn topic(&self) -> String;
    /// The partitions the entry names.
    fn partitions(&self) -> Vec<i32> {
        Vec::new()
    }
}

/// [`TopicEntry`] for each request type: `type => name, partitions;` (partitions left out
/// for entries about whole topics).
macro_rules! topic_entries {
    ($($ty:ty => |$t:ident| $name:expr $(, $parts:expr)?;)*) => {$(
        impl TopicEntry for $ty {
            fn topic(&self) -> String {
                let $t = self;
                $name
            }
            $(fn partitions(&self) -> Vec<i32> {
                let $t = self;
                $parts
            })?
        }
    )*};
}

topic_entries! {
    produce_request::TopicProduceData => |t| t.name.0.to_string(),
        t.partition_data.iter().map(|p| p.index).collect();
    list_offsets_request::ListOffsetsTopic => |t| t.name.0.to_string(),
        t.partitions.iter().map(|p| p.partition_index).collect();
    delete_records_request::DeleteRecordsTopic => |t| t.name.0.to_string(),
        t.partitions.iter().map(|p| p.partition_index).collect();
    offset_commit_request::OffsetCommitRequestTopic => |t| t.name.0.to_string(),
        t.partitions.iter().map(|p| p.partition_index).collect();
    metadata_request::MetadataRequestTopic =>
        |t| t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
    describe_topic_partitions_request::TopicRequest => |t| t.name.0.to_string();
    create_topics_request::CreatableTopic => |t| t.name.0.to_string();
    create_partitions_request::CreatePartitionsTopic => |t| t.name.0.to_string();
    TopicName => |t| t.0.to_string();
    txn_offset_commit_request::TxnOffsetCommitRequestTopic => |t| t.name.0.to_string(),
        t.partitions.iter().map(|p| p.partition_index).collect();
    describe_producers_request::TopicRequest => |t| t.name.0.to_string(),
        t.partition_indexes.clone();
}

impl Refused {
    /// The groups `ctx`'s principal may do `action` on; the others are noted as refused.
    pub(crate) fn keep_groups(
        &mut self,
        ctx: &Ctx,
        action: &str,
        groups: Vec<GroupId>,
    ) -> Vec<GroupId> {
        let (kept, denied): (Vec<_>, Vec<_>) = groups
            .into_iter()
            .partition(|g| ctx.may_group(action, &g.0));
        self.groups = denied.into_iter().map(|g| g.0.to_string()).collect();
        kept
    }

    /// The entries `ctx`'s principal may do `action` on; the others are noted as refused.
    pub(crate) fn keep<T: TopicEntry>(&mut self, ctx: &Ctx, action: &str, items: Vec<T>) -> Vec<T> {
        split(
            items,
            T::topic,
            T::partitions,
            |n| ctx.may_topic(action, n),
            self,
        )
    }
}

/// Whether a config resource may be described or changed: a topic's (type 2) by the
/// topic action (`topic_action`), a share group's (type 32) by the group's Describe, or
/// Alter for a change, a broker's or the cluster's by the cluster's. A refused one is
/// noted with its error.
pub(crate) fn config_allowed(
    ctx: &Ctx,
    resource_type: i8,
    name: &str,
    topic_action: &str,
    out: &mut Refused,
) -> bool {
    const TOPIC: i8 = 2;
    const GROUP: i8 = 32;
    let action = if topic_action == DESCRIBE {
        DESCRIBE
    } else {
        ALTER
    };
    let (allowed, code) = match resource_type {
        TOPIC => (ctx.may_topic(topic_action, name), TOPIC_DENIED),
        GROUP => (ctx.may_group(action, name), GROUP_DENIED),
        _ => (ctx.may_cluster(action), CLUSTER_DENIED),
    };
    if !allowed {
        out.resources.push((resource_type, name.to_owned(), code));
    }
    allowed
}

/// Names of topics a request gives by id (Fetch v13 on, DeleteTopics v6).
pub(crate) async fn topic_names_by_id(
    ctx: &Ctx,
    ids: impl Iterator<Item = uuid::Uuid>,
) -> BTreeMap<uuid::Uuid, String> {
    let mut names = BTreeMap::new();
    for id in ids.filter(|id| !id.is_nil()) {
        if let Ok(Some(t)) = ctx.broker.catalog.kafka().topic_by_id(id.as_u128()).await {
            names.insert(id, t.name);
        }
    }
    names
}

pub(crate) fn id_or_name(
    names: &BTreeMap<uuid::Uuid, String>,
    name: &str,
    id: uuid::Uuid,
) -> String {
    if !name.is_empty() {
        return name.to_owned();
    }
    // An unknown id is answered by the handler (UNKNOWN_TOPIC_ID), not refused here.
    names.get(&id).cloned().unwrap_or_default()
}

/// A refused topic's name, as responses carry it.
pub(crate) fn topic_of(n: &str) -> TopicName {
    TopicName(sb(n))
}
