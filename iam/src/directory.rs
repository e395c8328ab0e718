//! The directory: Eddy's users, named identity policies and bucket policies. They are
//! kept in the catalog (format 6) and served from an in-memory snapshot, so checking a
//! request reads no store; every change commits first and then replaces the snapshot, so
//! it takes effect at once. The config file's users are made again from the config at
//! each start (a user the config no longer names is removed); users made through the
//! admin API, the CLI or Kafka's AlterUserScramCredentials are kept as they are.

use catalog::{IamOp, S3Op};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use catalog::{Catalog, Op, PolicyRecord, ScramCredential, Transaction, UserRecord};

use crate::policy::{Decision, Policy, PolicyError, PolicyKind, Request};
use crate::scram::{Credential, MIN_ITERATIONS, ScramHash};

/// The principal of a client that did not authenticate, as Kafka names it.
pub const ANONYMOUS: &str = "ANONYMOUS";
/// The attachment that applies a policy to every principal, anonymous ones included.
pub const EVERYONE: &str = "*";

/// Why a directory change was refused.
#[derive(Debug, thiserror::Error)]
pub enum IamError {
    /// The catalog could not commit or read.
    #[error(transparent)]
    Catalog(#[from] catalog::CatalogError),
    /// A policy document is not valid.
    #[error("malformed policy: {0}")]
    MalformedPolicy(#[from] PolicyError),
    /// No user of that name.
    #[error("no user named {0:?}")]
    NoSuchUser(String),
    /// No policy of that name.
    #[error("no policy named {0:?}")]
    NoSuchPolicy(String),
    /// A name or value that cannot be used.
    #[error("{0}")]
    Invalid(String),
    /// The config file owns this user; change it there.
    #[error("user {0:?} comes from the config file; change it there")]
    FromConfig(String),
}

/// A user as the config file declares it.
#[derive(Debug, Clone)]
pub struct ConfigUser {
    /// Name (also the S3 access key and the Kafka principal).
    pub name: String,
    /// S3 secret access key.
    pub s3_secret: String,
    /// Kafka SASL password.
    pub kafka_password: String,
}

/// A named identity policy, parsed.
#[derive(Debug)]
pub struct NamedPolicy {
    /// The stored record (document text and attachments).
    pub record: PolicyRecord,
    /// The parsed document.
    pub policy: Policy,
}

#[derive(Debug, Default)]
struct Snapshot {
    users: BTreeMap<String, UserRecord>,
    policies: BTreeMap<String, Arc<NamedPolicy>>,
    /// Principal (a user name, [`ANONYMOUS`] or [`EVERYONE`]) -> the policies attached.
    attached: HashMap<String, Vec<Arc<NamedPolicy>>>,
    bucket_policies: BTreeMap<String, (String, Arc<Policy>)>,
}

impl Snapshot {
    fn build(
        users: Vec<UserRecord>,
        policies: Vec<PolicyRecord>,
        buckets: Vec<catalog::BucketPolicy>,
    ) -> Self {
        let mut s = Snapshot {
            users: users.into_iter().map(|u| (u.name.clone(), u)).collect(),
            ..Default::default()
        };
        for record in policies {
            // Stored documents were validated when put; one a later build reads
            // differently is skipped loudly rather than failing every request.
            match Policy::parse(&record.document, PolicyKind::Identity) {
                Ok(policy) => {
                    let named = Arc::new(NamedPolicy { record, policy });
                    for p in &named.record.attached {
                        s.attached.entry(p.clone()).or_default().push(named.clone());
                    }
                    s.policies.insert(named.record.name.clone(), named);
                }
                Err(e) => {
                    tracing::error!(policy = %record.name, error = %e, "stored policy unreadable; ignored")
                }
            }
        }
        for b in buckets {
            match Policy::parse(&b.document, PolicyKind::Resource) {
                Ok(p) => {
                    s.bucket_policies
                        .insert(b.bucket.clone(), (b.document, Arc::new(p)));
                }
                Err(e) => {
                    tracing::error!(bucket = %b.bucket, error = %e, "stored bucket policy unreadable; ignored")
                }
            }
        }
        s
    }
}

/// Users, identity policies and bucket policies.
pub struct Directory {
    catalog: Option<Arc<dyn Catalog>>,
    admin: String,
    /// Whether a Kafka action no statement matches is refused.
    kafka_deny_unless_allowed: std::sync::atomic::AtomicBool,
    snapshot: RwLock<Arc<Snapshot>>,
    /// Serializes read-modify-write changes (an attach reads the policy it rewrites).
    edits: tokio::sync::Mutex<()>,
    /// Where the audit trail goes (none: nowhere, as in tools and tests).
    audit: std::sync::OnceLock<Arc<dyn crate::audit::AuditSink>>,
}

impl std::fmt::Debug for Directory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directory")
            .field("admin", &self.admin)
            .finish_non_exhaustive()
    }
}

/// The SCRAM credentials of a password: one per hash, each with a fresh salt.
pub fn credentials_of(password: &str) -> Vec<ScramCredential> {
    ScramHash::ALL
        .into_iter()
        .map(|h| Credential::new(h, password, Credential::fresh_salt(), MIN_ITERATIONS).into())
        .collect()
}

/// Whether `password` is the one these credentials were made from.
pub fn password_matches(creds: &[ScramCredential], password: &str) -> bool {
    !creds.is_empty()
        && creds
            .iter()
            .all(|c| Credential::from(c.clone()).verifies(password))
}

/// A user name Eddy accepts: 1 to 128 characters, none of them a control character,
/// and not one of the names with a meaning of their own.
pub fn check_user_name(name: &str) -> Result<(), IamError> {
    if name.is_empty() || name.chars().count() > 128 || name.chars().any(char::is_control) {
        return Err(IamError::Invalid(format!(
            "user name {name:?}: 1 to 128 characters, no control characters"
        )));
    }
    if name == ANONYMOUS || name == EVERYONE {
        return Err(IamError::Invalid(format!("user name {name:?} is reserved")));
    }
    Ok(())
}

impl Directory {
    /// Opens the directory kept in `catalog`, making the config file's users as the
    /// config says (the first is the administrator).
    pub async fn open(catalog: Arc<dyn Catalog>, config: &[ConfigUser]) -> Result<Self, IamError> {
        let stored = catalog.iam().users().await?;
        let mut ops = Vec::new();
        for c in config {
            let old = stored.iter().find(|u| u.name == c.name);
            // PBKDF2 runs only when the password changed: a start checks, it does not
            // re-salt (4096 rounds of SHA-512 per user per start would add up).
            let scram = match old {
                Some(u) if password_matches(&u.scram, &c.kafka_password) => u.scram.clone(),
                _ => credentials_of(&c.kafka_password),
            };
            let record = UserRecord {
                name: c.name.clone(),
                s3_secret: Some(c.s3_secret.clone()),
                scram,
                from_config: true,
            };
            if old != Some(&record) {
                ops.push(Op::Iam(IamOp::PutUser {
                    name: c.name.clone(),
                    record: Some(record),
                }));
            }
        }
        for u in &stored {
            if u.from_config && !config.iter().any(|c| c.name == u.name) {
                ops.push(Op::Iam(IamOp::PutUser {
                    name: u.name.clone(),
                    record: None,
                }));
            }
        }
        if !ops.is_empty() {
            catalog.commit(Transaction::new(ops)).await?;
        }
        let d = Self {
            admin: config.first().map(|u| u.name.clone()).unwrap_or_default(),
            kafka_deny_unless_allowed: Default::default(),
            catalog: Some(catalog),
            snapshot: RwLock::new(Arc::default()),
            edits: tokio::sync::Mutex::new(()),
            audit: Default::default(),
        };
        d.reload().await?;
        Ok(d)
    }

    /// A directory kept in memory only, with these users (tests and tools).
    pub fn in_memory(config: &[ConfigUser]) -> Self {
        let users = config
            .iter()
            .map(|c| UserRecord {
                name: c.name.clone(),
                s3_secret: Some(c.s3_secret.clone()),
                scram: credentials_of(&c.kafka_password),
                from_config: true,
            })
            .collect();
        Self {
            admin: config.first().map(|u| u.name.clone()).unwrap_or_default(),
            kafka_deny_unless_allowed: Default::default(),
            catalog: None,
            snapshot: RwLock::new(Arc::new(Snapshot::build(users, Vec::new(), Vec::new()))),
            edits: tokio::sync::Mutex::new(()),
            audit: Default::default(),
        }
    }

    /// Sends the audit trail to `sink` from now on (once; a second sink is ignored).
    pub fn set_audit(&self, sink: Arc<dyn crate::audit::AuditSink>) {
        let _ = self.audit.set(sink);
    }

    /// Records an administrative change or a refused request in the audit trail.
    pub fn audit(&self, event: crate::audit::AuditEvent) {
        if let Some(sink) = self.audit.get() {
            sink.record(event);
        }
    }

    /// Reads everything again from the catalog.
    pub async fn reload(&self) -> Result<(), IamError> {
        let Some(c) = &self.catalog else {
            return Ok(());
        };
        let s = Snapshot::build(
            c.iam().users().await?,
            c.iam().policies().await?,
            c.s3().bucket_policies().await?,
        );
        *self.snapshot.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(s);
        Ok(())
    }

    fn now(&self) -> Arc<Snapshot> {
        self.snapshot
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The administrator's name (the config file's first user): allowed everything no
    /// policy denies, on every bucket and every admin endpoint.
    pub fn admin(&self) -> &str {
        &self.admin
    }

    /// Whether `name` is the administrator.
    pub fn is_admin(&self, name: &str) -> bool {
        !self.admin.is_empty() && name == self.admin
    }

    /// A user's S3 secret key.
    pub fn s3_secret(&self, name: &str) -> Option<String> {
        self.now().users.get(name)?.s3_secret.clone()
    }

    /// A user's SCRAM credential for one hash.
    pub fn scram(&self, name: &str, hash: ScramHash) -> Option<Credential> {
        let want = hash.mechanism();
        self.now()
            .users
            .get(name)?
            .scram
            .iter()
            .find(|c| c.mechanism == want)
            .cloned()
            .map(Credential::from)
    }

    /// A user.
    pub fn user(&self, name: &str) -> Option<UserRecord> {
        self.now().users.get(name).cloned()
    }

    /// Every user, by name.
    pub fn users(&self) -> Vec<UserRecord> {
        self.now().users.values().cloned().collect()
    }

    /// A named policy.
    pub fn policy(&self, name: &str) -> Option<Arc<NamedPolicy>> {
        self.now().policies.get(name).cloned()
    }

    /// Every named policy, by name.
    pub fn policies(&self) -> Vec<Arc<NamedPolicy>> {
        self.now().policies.values().cloned().collect()
    }

    /// A bucket's policy document, as it was put.
    pub fn bucket_policy_text(&self, bucket: &str) -> Option<String> {
        self.now()
            .bucket_policies
            .get(bucket)
            .map(|(t, _)| t.clone())
    }

    /// What the identity policies attached to `principal` (`None`: anonymous), or to
    /// everyone, say of a request.
    pub fn identity_decision(&self, principal: Option<&str>, req: &Request<'_>) -> Decision {
        let s = self.now();
        let mut d = Decision::NoMatch;
        for key in [principal.unwrap_or(ANONYMOUS), EVERYONE] {
            for p in s.attached.get(key).into_iter().flatten() {
                d = d.and(p.policy.evaluate(req));
                if matches!(d, Decision::Deny) {
                    return d;
                }
            }
        }
        d
    }

    /// Makes Kafka actions no statement matches refused (Kafka's
    /// `allow.everyone.if.no.acl.found=false`) or, by default, allowed.
    pub fn set_kafka_deny_unless_allowed(&self, deny: bool) {
        self.kafka_deny_unless_allowed
            .store(deny, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a Kafka action (`KafkaRead`, ...) on a resource is allowed to `principal`
    /// (`None`: anonymous): an explicit Deny refuses, an Allow allows, and no statement
    /// allows unless [`Self::set_kafka_deny_unless_allowed`]. The broker and the Iceberg
    /// catalog (a topic's table) decide the same way.
    pub fn allows_kafka(&self, principal: Option<&str>, req: &Request<'_>) -> bool {
        match self.identity_decision(principal, req) {
            Decision::Deny => false,
            Decision::Allow => true,
            Decision::NoMatch => !self
                .kafka_deny_unless_allowed
                .load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// What the policies say of an S3 request: the identity policies of `principal`
    /// and, for a request on a bucket, the bucket's policy (Deny wins over Allow wins over
    /// `NoMatch`, which the caller decides: the S3 gateway lets the bucket's owner and the
    /// administrator through).
    pub fn s3_decision(
        &self,
        principal: Option<&str>,
        bucket: Option<&str>,
        req: &Request<'_>,
    ) -> Decision {
        let decision = self.identity_decision(principal, req);
        match bucket {
            Some(b) => decision.and(self.bucket_decision(b, req)),
            None => decision,
        }
    }

    /// What a bucket's policy says of a request (`NoMatch` when it has none).
    pub fn bucket_decision(&self, bucket: &str, req: &Request<'_>) -> Decision {
        match self.now().bucket_policies.get(bucket) {
            Some((_, p)) => p.evaluate(req),
            None => Decision::NoMatch,
        }
    }

    async fn commit(&self, ops: Vec<Op>) -> Result<(), IamError> {
        match &self.catalog {
            Some(c) => {
                c.commit(Transaction::new(ops)).await?;
                self.reload().await
            }
            None => {
                // In memory: apply the few ops this module makes by hand.
                let mut s = self.now();
                let (mut users, mut policies, mut buckets) = (
                    s.users.values().cloned().collect::<Vec<_>>(),
                    s.policies
                        .values()
                        .map(|p| p.record.clone())
                        .collect::<Vec<_>>(),
                    s.bucket_policies
                        .iter()
                        .map(|(b, (t, _))| catalog::BucketPolicy {
                            bucket: b.clone(),
                            document: t.clone(),
                        })
                        .collect::<Vec<_>>(),
                );
                for op in ops {
                    match op {
                        Op::Iam(IamOp::PutUser { name, record }) => {
                            users.retain(|u| u.name != name);
                            users.extend(record);
                        }
                        Op::Iam(IamOp::PutPolicy { name, record }) => {
                            policies.retain(|p| p.name != name);
                            policies.extend(record);
                        }
                        Op::S3(S3Op::PutBucketPolicy { bucket, document }) => {
                            buckets.retain(|b| b.bucket != bucket);
                            buckets.extend(
                                document.map(|document| catalog::BucketPolicy { bucket, document }),
                            );
                        }
                        _ => {}
                    }
                }
                s = Arc::new(Snapshot::build(users, policies, buckets));
                *self.snapshot.write().unwrap_or_else(|p| p.into_inner()) = s;
                Ok(())
            }
        }
    }

    /// Makes a user or changes one: a new S3 secret and a new Kafka password (its SCRAM
    /// credentials are made here; the password is not kept) where given.
    pub async fn put_user(
        &self,
        name: &str,
        s3_secret: Option<String>,
        kafka_password: Option<&str>,
    ) -> Result<UserRecord, IamError> {
        check_user_name(name)?;
        let _edit = self.edits.lock().await;
        let mut u = self.user(name).unwrap_or_else(|| UserRecord {
            name: name.to_owned(),
            ..Default::default()
        });
        if u.from_config {
            return Err(IamError::FromConfig(name.to_owned()));
        }
        if let Some(s) = s3_secret {
            if s.chars().count() < 8 || s.chars().any(char::is_control) {
                return Err(IamError::Invalid(
                    "an S3 secret key has at least 8 characters and no control characters".into(),
                ));
            }
            u.s3_secret = Some(s);
        }
        if let Some(p) = kafka_password {
            if p.is_empty() {
                return Err(IamError::Invalid("an empty Kafka password".into()));
            }
            u.scram = credentials_of(p);
        }
        self.commit(vec![Op::Iam(IamOp::PutUser {
            name: name.to_owned(),
            record: Some(u.clone()),
        })])
        .await?;
        Ok(u)
    }

    /// Removes a user, and detaches it from every policy.
    pub async fn delete_user(&self, name: &str) -> Result<(), IamError> {
        let _edit = self.edits.lock().await;
        let u = self
            .user(name)
            .ok_or_else(|| IamError::NoSuchUser(name.to_owned()))?;
        if u.from_config {
            return Err(IamError::FromConfig(name.to_owned()));
        }
        let mut ops = vec![Op::Iam(IamOp::PutUser {
            name: name.to_owned(),
            record: None,
        })];
        for p in self.policies() {
            if p.record.attached.iter().any(|a| a == name) {
                let mut r = p.record.clone();
                r.attached.retain(|a| a != name);
                ops.push(Op::Iam(IamOp::PutPolicy {
                    name: r.name.clone(),
                    record: Some(r),
                }));
            }
        }
        self.commit(ops).await
    }

    /// Sets (`Some`) or removes (`None`) one SCRAM credential of a principal, as Kafka's
    /// AlterUserScramCredentials does: a principal without a user gets one (with no S3
    /// access), and a user left with neither credentials nor an S3 secret is removed.
    pub async fn set_scram(
        &self,
        name: &str,
        hash: ScramHash,
        credential: Option<Credential>,
    ) -> Result<(), IamError> {
        check_user_name(name)?;
        let _edit = self.edits.lock().await;
        let old = self.user(name);
        if old.as_ref().is_some_and(|u| u.from_config) {
            return Err(IamError::FromConfig(name.to_owned()));
        }
        let mut u = old.clone().unwrap_or_else(|| UserRecord {
            name: name.to_owned(),
            ..Default::default()
        });
        let mechanism = hash.mechanism();
        let had = u.scram.iter().any(|c| c.mechanism == mechanism);
        u.scram.retain(|c| c.mechanism != mechanism);
        match credential {
            Some(c) => u.scram.push(c.into()),
            None if !had => return Err(IamError::NoSuchUser(name.to_owned())),
            None => {}
        }
        u.scram.sort_by_key(|c| c.mechanism);
        let record = (!u.scram.is_empty() || u.s3_secret.is_some()).then_some(u);
        self.commit(vec![Op::Iam(IamOp::PutUser {
            name: name.to_owned(),
            record,
        })])
        .await
    }

    /// Makes or replaces a named identity policy (validated first); `attached` `None`
    /// keeps the attachments it had.
    pub async fn put_policy(
        &self,
        name: &str,
        document: &str,
        attached: Option<Vec<String>>,
    ) -> Result<(), IamError> {
        if name.is_empty() || name.chars().count() > 128 || name.chars().any(char::is_control) {
            return Err(IamError::Invalid(format!(
                "policy name {name:?}: 1 to 128 characters, no control characters"
            )));
        }
        Policy::parse(document, PolicyKind::Identity)?;
        let _edit = self.edits.lock().await;
        let attached = match attached {
            Some(a) => a,
            None => self
                .policy(name)
                .map(|p| p.record.attached.clone())
                .unwrap_or_default(),
        };
        self.commit(vec![Op::Iam(IamOp::PutPolicy {
            name: name.to_owned(),
            record: Some(PolicyRecord {
                name: name.to_owned(),
                document: document.to_owned(),
                attached,
            }),
        })])
        .await
    }

    /// Removes a named policy.
    pub async fn delete_policy(&self, name: &str) -> Result<(), IamError> {
        let _edit = self.edits.lock().await;
        if self.policy(name).is_none() {
            return Err(IamError::NoSuchPolicy(name.to_owned()));
        }
        self.commit(vec![Op::Iam(IamOp::PutPolicy {
            name: name.to_owned(),
            record: None,
        })])
        .await
    }

    /// Attaches (`attach`) or detaches a policy to or from a principal: a user name,
    /// [`ANONYMOUS`] or [`EVERYONE`].
    pub async fn attach(
        &self,
        policy: &str,
        principal: &str,
        attach: bool,
    ) -> Result<(), IamError> {
        let _edit = self.edits.lock().await;
        let p = self
            .policy(policy)
            .ok_or_else(|| IamError::NoSuchPolicy(policy.to_owned()))?;
        let mut r = p.record.clone();
        r.attached.retain(|a| a != principal);
        if attach {
            if principal != ANONYMOUS && principal != EVERYONE && self.user(principal).is_none() {
                return Err(IamError::NoSuchUser(principal.to_owned()));
            }
            r.attached.push(principal.to_owned());
            r.attached.sort();
        }
        self.commit(vec![Op::Iam(IamOp::PutPolicy {
            name: policy.to_owned(),
            record: Some(r),
        })])
        .await
    }

    /// Sets (`Some`, validated first) or removes a bucket's policy.
    pub async fn put_bucket_policy(
        &self,
        bucket: &str,
        document: Option<&str>,
    ) -> Result<(), IamError> {
        if let Some(d) = document {
            Policy::parse(d, PolicyKind::Resource)?;
        }
        let _edit = self.edits.lock().await;
        self.commit(vec![Op::S3(S3Op::PutBucketPolicy {
            bucket: bucket.to_owned(),
            document: document.map(str::to_owned),
        })])
        .await
    }

    /// Replaces every policy whose name starts with `prefix` by `records` in one
    /// transaction (Kafka's ACL calls keep their bindings in such policies).
    pub async fn replace_policies(
        &self,
        prefix: &str,
        edit: impl FnOnce(Vec<PolicyRecord>) -> Result<Vec<PolicyRecord>, IamError>,
    ) -> Result<(), IamError> {
        let _edit = self.edits.lock().await;
        let old: Vec<PolicyRecord> = self
            .policies()
            .into_iter()
            .filter(|p| p.record.name.starts_with(prefix))
            .map(|p| p.record.clone())
            .collect();
        let new = edit(old.clone())?;
        let mut ops = Vec::new();
        for r in &new {
            if !r.name.starts_with(prefix) {
                return Err(IamError::Invalid(format!(
                    "policy {} outside {prefix}",
                    r.name
                )));
            }
            Policy::parse(&r.document, PolicyKind::Identity)?;
            if !old.contains(r) {
                ops.push(Op::Iam(IamOp::PutPolicy {
                    name: r.name.clone(),
                    record: Some(r.clone()),
                }));
            }
        }
        for r in old {
            if !new.iter().any(|n| n.name == r.name) {
                ops.push(Op::Iam(IamOp::PutPolicy {
                    name: r.name,
                    record: None,
                }));
            }
        }
        if ops.is_empty() {
            return Ok(());
        }
        self.commit(ops).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Context;

    fn alice() -> Vec<ConfigUser> {
        vec![ConfigUser {
            name: "alice".into(),
            s3_secret: "alice-secret".into(),
            kafka_password: "pw".into(),
        }]
    }

    #[tokio::test]
    async fn config_users_have_credentials_and_cannot_be_changed_here() {
        let d = Directory::in_memory(&alice());
        assert!(d.is_admin("alice"));
        assert_eq!(d.s3_secret("alice").as_deref(), Some("alice-secret"));
        assert!(d.scram("alice", ScramHash::Sha512).unwrap().verifies("pw"));
        assert!(matches!(
            d.put_user("alice", None, Some("new")).await,
            Err(IamError::FromConfig(_))
        ));
        assert!(matches!(
            d.put_user(ANONYMOUS, None, Some("x")).await,
            Err(IamError::Invalid(_))
        ));
    }

    #[tokio::test]
    async fn policies_apply_to_their_principals_and_deny_wins() {
        let d = Directory::in_memory(&alice());
        d.put_user("bob", Some("bob-secret-key".into()), Some("pw"))
            .await
            .unwrap();
        let allow = r#"{"Statement":{"Effect":"Allow","Action":"KafkaRead","Resource":"*"}}"#;
        let deny = r#"{"Statement":{"Effect":"Deny","Action":"KafkaRead","Resource":"vast:kafka:topic:*:secret"}}"#;
        d.put_policy("read", allow, Some(vec!["bob".into()]))
            .await
            .unwrap();
        d.put_policy("no-secret", deny, Some(vec![EVERYONE.into()]))
            .await
            .unwrap();
        let cx = Context::default();
        let req = |resource| Request {
            action: "KafkaRead",
            resource,
            principal: None,
            context: &cx,
        };
        let t = "vast:kafka:topic:default:orders";
        let s = "vast:kafka:topic:default:secret";
        assert!(matches!(
            d.identity_decision(Some("bob"), &req(t)),
            Decision::Allow
        ));
        assert!(matches!(
            d.identity_decision(Some("bob"), &req(s)),
            Decision::Deny
        ));
        assert!(matches!(
            d.identity_decision(Some("alice"), &req(t)),
            Decision::NoMatch
        ));
        assert!(matches!(d.identity_decision(None, &req(s)), Decision::Deny));
        d.delete_user("bob").await.unwrap();
        assert!(d.policy("read").unwrap().record.attached.is_empty());
        assert!(d.put_policy("bad", "{}", None).await.is_err());
    }

    #[tokio::test]
    async fn scram_credentials_set_and_removed() {
        let d = Directory::in_memory(&alice());
        let c = Credential::new(ScramHash::Sha256, "pw2", b"salt".to_vec(), 4096);
        d.set_scram("carol", ScramHash::Sha256, Some(c))
            .await
            .unwrap();
        assert!(d.scram("carol", ScramHash::Sha256).unwrap().verifies("pw2"));
        assert!(d.scram("carol", ScramHash::Sha512).is_none());
        d.set_scram("carol", ScramHash::Sha256, None).await.unwrap();
        assert!(d.user("carol").is_none(), "nothing left: the user is gone");
        assert!(matches!(
            d.set_scram("carol", ScramHash::Sha256, None).await,
            Err(IamError::NoSuchUser(_))
        ));
    }
}
