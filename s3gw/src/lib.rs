//! Eddy's S3 API on s3s: the [`s3s::S3`] trait implemented over the catalog and the
//! erasure-coded blob store, one module per operation family.
//!
//! - [`bucket`]: create, delete, head, list, location, bucket tagging
//! - [`versioning`]: bucket versioning
//! - [`put`], [`get`], [`delete`], [`copy`]: objects
//! - [`list`]: ListObjects v1/v2, ListObjectVersions
//! - [`multipart`]: multipart uploads
//! - [`tagging`]: object tagging
//! - [`notification`]: bucket notification configuration (Put and Get)
//! - [`metadata`]: S3 Metadata (a change journal topic and a live inventory table per
//!   bucket), a custom route since s3s does not know its operations
//! - [`authz`]: identity and bucket policies, checked for every request
//! - [`bucket_policy`]: Put, Get and DeleteBucketPolicy
//! - [`attributes`]: object attributes without the body (GetObjectAttributes)
//! - [`acl`]: Get/PutBucketAcl and Get/PutObjectAcl
//! - [`grants`]: access control lists (canned, grant headers, XML) and what they permit
//! - [`ownership`]: S3 Object Ownership, which says whether ACLs count
//! - [`public_access`]: Block Public Access (Put, Get, DeletePublicAccessBlock)
//! - [`lifecycle`]: lifecycle configurations, the `x-amz-expiration` header and the
//!   worker that expires what the rules say
//! - [`managed`]: the broker's buckets, read-only over S3
//! - [`cors`]: CORS configurations, preflight answers and `Access-Control-*` headers
//! - [`bucket_config`]: how those two configurations are kept in the catalog
//! - [`change`]: the one place where an object change's catalog transaction is built
//! - [`error`]: catalog and storage errors as S3 error codes
//! - [`sigv2`], [`sigv4_date`]: requests mended before s3s checks their signatures
//!
//! Every request is authenticated by s3s (SigV4 headers, presigned URLs, streaming
//! signatures) against the directory's users, then authorized by [`authz`]: a bucket
//! belongs to the user who created it and the administrator (the first configured user)
//! may use every bucket, unless a policy denies it; others, anonymous requests included,
//! get only what an identity or bucket policy, or an ACL where the bucket's object
//! ownership lets ACLs count, allows them.

pub mod acl;
pub mod attributes;
pub mod authz;
pub mod body;
pub mod bucket;
pub mod bucket_config;
pub mod bucket_policy;
pub mod bucket_settings;
pub mod change;
pub mod checksum;
pub mod copy;
pub mod cors;
pub mod delete;
pub mod error;
pub mod get;
pub mod grants;
pub mod lifecycle;
pub mod list;
pub mod managed;
pub mod metadata;
pub mod multipart;
pub mod notification;
pub mod object_lock;
pub mod ownership;
pub mod post_object;
pub mod public_access;
pub mod put;
pub mod sigv2;
pub mod sigv4_date;
pub mod sse;
pub mod tagging;
pub mod versioning;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use catalog::Catalog;
use notify::{Notifier, Requester};
use s3s::auth::{S3Auth, SecretKey};
use s3s::dto::*;
use s3s::service::{S3Service, S3ServiceBuilder};
use s3s::{S3, S3Request, S3Response, S3Result, s3_error};

use crate::error::OrS3;

/// Bodies up to this size are stored inline in the catalog record instead of a blob.
pub const INLINE_MAX: usize = 32 * 1024;

/// The client's address, put in a request's extensions by the listener (for the
/// `sourceIPAddress` of event records).
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub SocketAddr);

/// The request's id, put in its extensions by the listener, which also returns it as
/// `x-amz-request-id` (event records carry it in `responseElements`).
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

impl RequestId {
    /// A fresh id: 16 upper-case hex digits, like S3's.
    pub fn new() -> Self {
        Self(format!("{:016X}", uuid::Uuid::new_v4().as_u128() as u64))
    }
}

impl Default for RequestId {
    fn default() -> Self {
        Self::new()
    }
}

/// Where the access hook records which S3 operation a request is (s3s's name for it, as
/// `GetObject`), put in the request's extensions by the listener for its per-operation
/// counts. A request refused before that (a bad signature) leaves it empty.
#[derive(Debug, Clone, Default)]
pub struct OperationSlot(pub Arc<std::sync::OnceLock<String>>);

/// Who a request is from (`None`: anonymous) and the bucket it names, filled in by the
/// access check for the audit trail's record of a bucket's configuration change (the
/// listener sees the outcome, the access check the parties).
#[derive(Debug, Clone, Default)]
pub struct PartySlot(pub Arc<std::sync::OnceLock<(Option<String>, Option<String>)>>);

/// The S3 front end over one catalog.
#[derive(Clone)]
pub struct Gateway {
    catalog: Arc<dyn Catalog>,
    directory: Arc<iam::Directory>,
    notifier: Arc<Notifier>,
    /// The length of a lifecycle day, ms.
    lifecycle_day_ms: i64,
    /// The SSE-S3 master key (`None`: SSE-S3 is refused).
    master_key: Option<Arc<sse::MasterKey>>,
    /// The buckets Eddy manages, which S3 may read but not change.
    managed: Arc<managed::ManagedBuckets>,
    /// Per bucket: held while one of this node's requests changes its settings.
    setting_changes:
        Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

impl Gateway {
    /// A gateway over the directory's users and policies, with default event record
    /// settings.
    pub fn new(catalog: Arc<dyn Catalog>, directory: Arc<iam::Directory>) -> Self {
        Self::with_notifier(catalog, directory, Arc::new(Notifier::default()))
    }

    /// A gateway whose object changes raise events through `notifier`.
    pub fn with_notifier(
        catalog: Arc<dyn Catalog>,
        directory: Arc<iam::Directory>,
        notifier: Arc<Notifier>,
    ) -> Self {
        Self {
            catalog,
            directory,
            notifier,
            lifecycle_day_ms: 86_400_000,
            master_key: None,
            managed: Arc::default(),
            setting_changes: Arc::default(),
        }
    }

    /// The lock one bucket's setting changes on this node take turns on.
    pub(crate) fn setting_change_lock(&self, bucket: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self
            .setting_changes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // Locks of buckets no change holds go, so the map stays as small as the
        // changes in flight.
        if locks.len() > 1024 {
            locks.retain(|_, l| Arc::strong_count(l) > 1);
        }
        locks.entry(bucket.to_owned()).or_default().clone()
    }

    /// The gateway with `buckets` managed by Eddy: readable, never changed over S3.
    pub fn with_managed_buckets(mut self, buckets: managed::ManagedBuckets) -> Self {
        self.managed = Arc::new(buckets);
        self
    }

    /// The buckets Eddy manages.
    pub fn managed_buckets(&self) -> &managed::ManagedBuckets {
        &self.managed
    }

    /// The gateway with SSE-S3 data keys wrapped by `key`.
    pub fn with_master_key(mut self, key: sse::MasterKey) -> Self {
        self.master_key = Some(Arc::new(key));
        self
    }

    /// The SSE-S3 master key, if there is one.
    pub fn master_key(&self) -> Option<&sse::MasterKey> {
        self.master_key.as_deref()
    }

    /// The gateway with lifecycle days of `day_ms` (86,400,000 unless a test or benchmark
    /// wants days of seconds).
    pub fn with_lifecycle_day_ms(mut self, day_ms: i64) -> Self {
        self.lifecycle_day_ms = day_ms.max(1);
        self
    }

    /// The length of a lifecycle day, ms.
    pub fn lifecycle_day_ms(&self) -> i64 {
        self.lifecycle_day_ms
    }

    /// The users and policies.
    pub fn directory(&self) -> &iam::Directory {
        &self.directory
    }

    /// The catalog.
    pub fn catalog(&self) -> &dyn Catalog {
        self.catalog.as_ref()
    }

    /// The builder of event rows.
    pub fn notifier(&self) -> &Notifier {
        &self.notifier
    }

    /// Who sent a request, for its event records.
    pub fn requester<T>(&self, req: &S3Request<T>) -> Requester {
        Requester {
            principal: req
                .credentials
                .as_ref()
                .map(|c| c.access_key.clone())
                .unwrap_or_default(),
            source_ip: req
                .extensions
                .get::<ClientAddr>()
                .map(|a| a.0.ip().to_string())
                .unwrap_or_default(),
            request_id: req
                .extensions
                .get::<RequestId>()
                .cloned()
                .unwrap_or_default()
                .0,
        }
    }

    /// The access key of the request's user: `AccessDenied` for an anonymous request
    /// (operations that need an owner, such as making a bucket, are not for them).
    pub fn user<T>(&self, req: &S3Request<T>) -> S3Result<String> {
        req.credentials
            .as_ref()
            .map(|c| c.access_key.clone())
            .ok_or_else(|| s3_error!(AccessDenied, "Access Denied"))
    }

    /// Whether `user` is the administrator.
    pub fn is_admin(&self, user: &str) -> bool {
        self.directory.is_admin(user)
    }

    /// The bucket a request names (`NoSuchBucket` when it does not exist); the access
    /// hook has already checked that the requester may use it ([`authz`]).
    /// Its settings are decoded here, once for the request.
    pub async fn bucket_for<T>(
        &self,
        _req: &S3Request<T>,
        name: &str,
    ) -> S3Result<bucket_settings::Bucket> {
        self.catalog
            .s3()
            .bucket(name)
            .await
            .or_s3()?
            .map(bucket_settings::Bucket::decode)
            .ok_or_else(|| s3_error!(NoSuchBucket, "The specified bucket does not exist"))
    }

    /// Who sent a request and under what conditions, as the access hook found it.
    pub fn authz_context<T>(&self, req: &S3Request<T>) -> authz::AuthzContext {
        req.extensions
            .get::<authz::AuthzContext>()
            .cloned()
            .unwrap_or_else(|| authz::AuthzContext {
                principal: req.credentials.as_ref().map(|c| c.access_key.clone()),
                context: iam::Context::default(),
            })
    }
}

/// The users' secrets, for s3s's signature checks.
struct Users(Arc<iam::Directory>);

#[async_trait::async_trait]
impl S3Auth for Users {
    async fn get_secret_key(&self, access_key: &str) -> S3Result<SecretKey> {
        self.0
            .s3_secret(access_key)
            .map(SecretKey::from)
            .ok_or_else(|| {
                s3_error!(
                    InvalidAccessKeyId,
                    "The AWS Access Key Id you provided does not exist in our records."
                )
            })
    }
}

/// What the S3 listener serves: the s3s service, and the CORS answers and headers that
/// wrap it.
pub struct Front {
    /// The s3s service.
    pub service: S3Service,
    /// Preflights and `Access-Control-*` headers.
    pub cors: cors::Cors,
    /// Admits form uploads a few at a time (s3s holds each in memory).
    pub post_gate: post_object::Gate,
}

/// The s3s service over `gateway`: authentication against the directory's users,
/// authorization by their policies and the buckets' ([`authz`]), and the operations of
/// [`Gateway`]. With `domains`, requests to `bucket.DOMAIN` are virtual-host style; path
/// style always works.
pub fn service(gateway: Gateway, domains: &[String]) -> Result<Front, String> {
    let mut b = S3ServiceBuilder::new(gateway.clone());
    let mut config = s3s::config::S3Config::default();
    config.post_object_max_file_size = post_object::MAX_FILE_BYTES;
    b.set_config(Arc::new(s3s::config::StaticConfigProvider::new(Arc::new(
        config,
    ))));
    b.set_auth(Users(gateway.directory.clone()));
    b.set_access(Access(gateway.clone()));
    let domains = Domains::new(domains)?;
    if !domains.0.is_empty() {
        b.set_host(domains.clone());
    }
    b.set_route(metadata::MetadataRoute::new(
        gateway.clone(),
        domains.clone(),
    ));
    Ok(Front {
        service: b.build(),
        cors: cors::Cors::new(gateway, domains),
        post_gate: post_object::Gate::default(),
    })
}

/// Checks `--s3-domain` values as [`service`] takes them (a host name: no port, no path),
/// so a bad one stops the start before anything touches the disk.
pub fn check_domains(domains: &[String]) -> Result<(), String> {
    Domains::new(domains).map(|_| ())
}

/// The longest a SigV4 presigned URL may be valid, as AWS allows: 7 days.
const MAX_PRESIGNED_EXPIRES_SECS: i64 = 7 * 24 * 3600;

/// AWS's refusal of a presigned URL's `X-Amz-Expires` (negative, not a number, or more
/// than 7 days), as its message: `403 AuthorizationQueryParametersError`. None when it is
/// fine or absent. s3s checks the signature and the expiry, not these limits (a negative
/// one it refuses as a malformed URL, with a 400 the listener turns into this).
pub fn expires_refusal(query: Option<&str>) -> Option<&'static str> {
    let v = query?
        .split('&')
        .find_map(|p| p.strip_prefix("X-Amz-Expires="))?;
    match v.parse::<i64>() {
        Ok(s) if s < 0 => Some("X-Amz-Expires must be non-negative"),
        Ok(s) if s > MAX_PRESIGNED_EXPIRES_SECS => {
            Some("X-Amz-Expires must be less than a week (in seconds) that is 604800")
        }
        Ok(_) => None,
        Err(_) => Some("X-Amz-Expires should be a number"),
    }
}

/// The error document of an [`expires_refusal`].
pub fn expires_refusal_document(message: &str) -> Vec<u8> {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AuthorizationQueryParametersError</Code><Message>{message}</Message></Error>"
    )
    .into_bytes()
}

/// Checks every request after its signature: a presigned URL's `X-Amz-Expires` within
/// AWS's limits ([`expires_refusal`]), and the requester allowed the operation
/// ([`authz`]).
struct Access(Gateway);

#[async_trait::async_trait]
impl s3s::access::S3Access for Access {
    async fn check(&self, cx: &mut s3s::access::S3AccessContext<'_>) -> S3Result<()> {
        if let Some(message) = expires_refusal(cx.uri().query()) {
            let mut e = s3s::S3Error::with_message(
                s3s::S3ErrorCode::AuthorizationQueryParametersError,
                message,
            );
            e.set_status_code(http::StatusCode::FORBIDDEN);
            return Err(e);
        }
        // An empty or malformed Content-MD5 is refused whatever the operation, as AWS
        // does (a well-formed one that does not match the body is BadDigest later).
        if let Some(md5) = cx.headers().get("content-md5")
            && md5
                .to_str()
                .ok()
                .and_then(|v| base64_simd::STANDARD.decode_to_vec(v.trim()).ok())
                .is_none_or(|d| d.len() != 16)
        {
            return Err(s3_error!(
                InvalidDigest,
                "The Content-MD5 you specified is not valid"
            ));
        }
        let principal = cx.credentials().map(|c| c.access_key.clone());
        let source = cx.extensions_mut().get::<ClientAddr>().map(|a| a.0.ip());
        let secure = cx
            .extensions_mut()
            .get::<authz::SecureTransport>()
            .is_some_and(|s| s.0);
        let query = cx.uri().query();
        let version = query.and_then(|q| {
            form_urlencoded::parse(q.as_bytes())
                .find(|(k, v)| k == "versionId" && !v.is_empty())
                .map(|(_, v)| v.into_owned())
        });
        let versioned = version.is_some();
        let who = authz::AuthzContext {
            context: authz::context(principal.as_deref(), source, secure, query),
            principal,
        };
        if let Some(slot) = cx.extensions_mut().get::<OperationSlot>().cloned() {
            let _ = slot.0.set(cx.s3_op().name().to_owned());
        }
        let party = cx.extensions_mut().get::<PartySlot>().cloned();
        let op = cx.s3_op().name();
        let (bucket, key) = match cx.s3_path() {
            s3s::path::S3Path::Root => (None, None),
            s3s::path::S3Path::Bucket { bucket } => (Some(bucket.to_string()), None),
            s3s::path::S3Path::Object { bucket, key } => {
                (Some(bucket.to_string()), Some(key.to_string()))
            }
        };
        if let Some(slot) = party {
            let _ = slot.0.set((who.principal.clone(), bucket.clone()));
        }
        // Each key of a multi-object delete is checked as a DeleteObject of its own.
        if op != "DeleteObjects" {
            self.0
                .authorize_version(
                    &who,
                    &authz::action(op, versioned),
                    bucket.as_deref(),
                    key.as_deref(),
                    version.as_deref(),
                )
                .await?;
        }
        cx.extensions_mut().insert(who);
        Ok(())
    }
}

/// Virtual-host-style addressing: `bucket.DOMAIN[:port]` names a bucket; any other
/// host (an IP address, the bare domain, another name) is path style.
#[derive(Clone)]
pub(crate) struct Domains(Vec<String>);

impl Domains {
    fn new(domains: &[String]) -> Result<Self, String> {
        let mut v = Vec::new();
        for d in domains {
            let d = d.trim().trim_end_matches('.').to_ascii_lowercase();
            if d.is_empty() || d.contains(':') || d.contains('/') {
                return Err(format!("invalid S3 domain {d:?}"));
            }
            v.push(d);
        }
        // Longest first, so `s3.example.com` wins over `example.com`.
        v.sort_by_key(|d| std::cmp::Reverse(d.len()));
        Ok(Self(v))
    }
}

impl Domains {
    /// A Host header's domain and, for `bucket.DOMAIN`, its bucket (`None`: path style).
    fn split<'a>(&'a self, host: &'a str) -> (&'a str, Option<&'a str>) {
        let name = match host.rsplit_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => host,
        };
        for d in &self.0 {
            if name.eq_ignore_ascii_case(d) {
                return (d.as_str(), None);
            }
            // The dot is ASCII, so after it is a character boundary.
            if name.len() > d.len() + 1
                && name.as_bytes()[name.len() - d.len() - 1] == b'.'
                && name[name.len() - d.len()..].eq_ignore_ascii_case(d)
            {
                return (d.as_str(), Some(&name[..name.len() - d.len() - 1]));
            }
        }
        (name, None)
    }
}

impl s3s::host::S3Host for Domains {
    fn parse_host_header<'a>(&'a self, host: &'a str) -> S3Result<s3s::host::VirtualHost<'a>> {
        Ok(match self.split(host) {
            (domain, Some(bucket)) => s3s::host::VirtualHost::new(domain).with_bucket(bucket),
            (domain, None) => s3s::host::VirtualHost::new(domain),
        })
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A catalog time as an S3 timestamp.
pub fn timestamp(ms: i64) -> Timestamp {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    Timestamp::from(t)
}

/// Whole seconds of an S3 timestamp.
pub fn timestamp_secs(t: &Timestamp) -> i64 {
    time::OffsetDateTime::from(t.clone()).unix_timestamp()
}

/// A quoted strong ETag.
pub fn etag(value: &str) -> ETag {
    ETag::Strong(value.to_owned())
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(D[(b >> 4) as usize] as char);
        s.push(D[(b & 15) as usize] as char);
    }
    s
}

/// A fresh version or upload id: 32 hex digits.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The owner element of listings.
pub fn owner(access_key: &str) -> Owner {
    Owner {
        display_name: Some(access_key.to_owned()),
        id: Some(access_key.to_owned()),
    }
}

/// Content headers and user metadata of a request, as the catalog stores them.
#[derive(Default)]
pub struct ContentHeaders<'a> {
    /// Content-Type.
    pub content_type: Option<&'a str>,
    /// Content-Encoding.
    pub content_encoding: Option<&'a str>,
    /// Content-Disposition.
    pub content_disposition: Option<&'a str>,
    /// Content-Language.
    pub content_language: Option<&'a str>,
    /// Cache-Control.
    pub cache_control: Option<&'a str>,
    /// Expires.
    pub expires: Option<&'a Timestamp>,
    /// `x-amz-meta-*`.
    pub metadata: Option<&'a Metadata>,
}

/// Prefix of user metadata entries in the stored map.
pub const META_PREFIX: &str = "x-amz-meta-";

impl ContentHeaders<'_> {
    /// The stored form.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        let pairs = [
            ("content-type", self.content_type),
            ("content-encoding", self.content_encoding),
            ("content-disposition", self.content_disposition),
            ("content-language", self.content_language),
            ("cache-control", self.cache_control),
        ];
        for (k, v) in pairs {
            if let Some(v) = v {
                m.insert(k.to_owned(), v.to_owned());
            }
        }
        if let Some(t) = self.expires {
            let mut buf = Vec::new();
            if t.format(TimestampFormat::HttpDate, &mut buf).is_ok() {
                m.insert("expires".into(), String::from_utf8_lossy(&buf).into_owned());
            }
        }
        if let Some(meta) = self.metadata {
            for (k, v) in meta {
                m.insert(
                    format!("{META_PREFIX}{}", k.to_ascii_lowercase()),
                    v.clone(),
                );
            }
        }
        m
    }
}

/// The stored metadata's pieces, for responses.
pub struct StoredHeaders {
    /// Content-Type.
    pub content_type: Option<String>,
    /// Content-Encoding.
    pub content_encoding: Option<String>,
    /// Content-Disposition.
    pub content_disposition: Option<String>,
    /// Content-Language.
    pub content_language: Option<String>,
    /// Cache-Control.
    pub cache_control: Option<String>,
    /// Expires.
    pub expires: Option<Timestamp>,
    /// User metadata.
    pub metadata: Option<Metadata>,
}

/// Splits a stored metadata map into response headers.
pub fn stored_headers(m: &BTreeMap<String, String>) -> StoredHeaders {
    let user: Metadata = m
        .iter()
        .filter_map(|(k, v)| {
            k.strip_prefix(META_PREFIX)
                .map(|k| (k.to_owned(), v.clone()))
        })
        .collect();
    StoredHeaders {
        content_type: m.get("content-type").cloned(),
        content_encoding: m.get("content-encoding").cloned(),
        content_disposition: m.get("content-disposition").cloned(),
        content_language: m.get("content-language").cloned(),
        cache_control: m.get("cache-control").cloned(),
        expires: m
            .get("expires")
            .and_then(|s| Timestamp::parse(TimestampFormat::HttpDate, s).ok()),
        metadata: (!user.is_empty()).then_some(user),
    }
}

#[async_trait::async_trait]
impl S3 for Gateway {
    async fn get_object_attributes(
        &self,
        req: S3Request<GetObjectAttributesInput>,
    ) -> S3Result<S3Response<GetObjectAttributesOutput>> {
        attributes::get_object_attributes(self, req).await
    }
    async fn put_bucket_acl(
        &self,
        req: S3Request<PutBucketAclInput>,
    ) -> S3Result<S3Response<PutBucketAclOutput>> {
        acl::put_bucket_acl(self, req).await
    }
    async fn get_bucket_acl(
        &self,
        req: S3Request<GetBucketAclInput>,
    ) -> S3Result<S3Response<GetBucketAclOutput>> {
        acl::get_bucket_acl(self, req).await
    }
    async fn put_object_acl(
        &self,
        req: S3Request<PutObjectAclInput>,
    ) -> S3Result<S3Response<PutObjectAclOutput>> {
        acl::put_object_acl(self, req).await
    }
    async fn get_object_acl(
        &self,
        req: S3Request<GetObjectAclInput>,
    ) -> S3Result<S3Response<GetObjectAclOutput>> {
        acl::get_object_acl(self, req).await
    }
    async fn put_bucket_ownership_controls(
        &self,
        req: S3Request<PutBucketOwnershipControlsInput>,
    ) -> S3Result<S3Response<PutBucketOwnershipControlsOutput>> {
        ownership::put_bucket_ownership_controls(self, req).await
    }
    async fn get_bucket_ownership_controls(
        &self,
        req: S3Request<GetBucketOwnershipControlsInput>,
    ) -> S3Result<S3Response<GetBucketOwnershipControlsOutput>> {
        ownership::get_bucket_ownership_controls(self, req).await
    }
    async fn delete_bucket_ownership_controls(
        &self,
        req: S3Request<DeleteBucketOwnershipControlsInput>,
    ) -> S3Result<S3Response<DeleteBucketOwnershipControlsOutput>> {
        ownership::delete_bucket_ownership_controls(self, req).await
    }
    async fn put_public_access_block(
        &self,
        req: S3Request<PutPublicAccessBlockInput>,
    ) -> S3Result<S3Response<PutPublicAccessBlockOutput>> {
        public_access::put_public_access_block(self, req).await
    }
    async fn get_public_access_block(
        &self,
        req: S3Request<GetPublicAccessBlockInput>,
    ) -> S3Result<S3Response<GetPublicAccessBlockOutput>> {
        public_access::get_public_access_block(self, req).await
    }
    async fn delete_public_access_block(
        &self,
        req: S3Request<DeletePublicAccessBlockInput>,
    ) -> S3Result<S3Response<DeletePublicAccessBlockOutput>> {
        public_access::delete_public_access_block(self, req).await
    }
    async fn get_bucket_policy_status(
        &self,
        req: S3Request<GetBucketPolicyStatusInput>,
    ) -> S3Result<S3Response<GetBucketPolicyStatusOutput>> {
        bucket_policy::get_bucket_policy_status(self, req).await
    }
    async fn put_bucket_policy(
        &self,
        req: S3Request<PutBucketPolicyInput>,
    ) -> S3Result<S3Response<PutBucketPolicyOutput>> {
        bucket_policy::put_bucket_policy(self, req).await
    }
    async fn get_bucket_policy(
        &self,
        req: S3Request<GetBucketPolicyInput>,
    ) -> S3Result<S3Response<GetBucketPolicyOutput>> {
        bucket_policy::get_bucket_policy(self, req).await
    }
    async fn delete_bucket_policy(
        &self,
        req: S3Request<DeleteBucketPolicyInput>,
    ) -> S3Result<S3Response<DeleteBucketPolicyOutput>> {
        bucket_policy::delete_bucket_policy(self, req).await
    }
    async fn put_bucket_lifecycle_configuration(
        &self,
        req: S3Request<PutBucketLifecycleConfigurationInput>,
    ) -> S3Result<S3Response<PutBucketLifecycleConfigurationOutput>> {
        lifecycle::put_bucket_lifecycle_configuration(self, req).await
    }
    async fn get_bucket_lifecycle_configuration(
        &self,
        req: S3Request<GetBucketLifecycleConfigurationInput>,
    ) -> S3Result<S3Response<GetBucketLifecycleConfigurationOutput>> {
        lifecycle::get_bucket_lifecycle_configuration(self, req).await
    }
    async fn delete_bucket_lifecycle(
        &self,
        req: S3Request<DeleteBucketLifecycleInput>,
    ) -> S3Result<S3Response<DeleteBucketLifecycleOutput>> {
        lifecycle::delete_bucket_lifecycle(self, req).await
    }
    async fn put_object_lock_configuration(
        &self,
        req: S3Request<PutObjectLockConfigurationInput>,
    ) -> S3Result<S3Response<PutObjectLockConfigurationOutput>> {
        object_lock::put_object_lock_configuration(self, req).await
    }
    async fn get_object_lock_configuration(
        &self,
        req: S3Request<GetObjectLockConfigurationInput>,
    ) -> S3Result<S3Response<GetObjectLockConfigurationOutput>> {
        object_lock::get_object_lock_configuration(self, req).await
    }
    async fn put_object_retention(
        &self,
        req: S3Request<PutObjectRetentionInput>,
    ) -> S3Result<S3Response<PutObjectRetentionOutput>> {
        object_lock::put_object_retention(self, req).await
    }
    async fn get_object_retention(
        &self,
        req: S3Request<GetObjectRetentionInput>,
    ) -> S3Result<S3Response<GetObjectRetentionOutput>> {
        object_lock::get_object_retention(self, req).await
    }
    async fn put_object_legal_hold(
        &self,
        req: S3Request<PutObjectLegalHoldInput>,
    ) -> S3Result<S3Response<PutObjectLegalHoldOutput>> {
        object_lock::put_object_legal_hold(self, req).await
    }
    async fn get_object_legal_hold(
        &self,
        req: S3Request<GetObjectLegalHoldInput>,
    ) -> S3Result<S3Response<GetObjectLegalHoldOutput>> {
        object_lock::get_object_legal_hold(self, req).await
    }
    async fn put_bucket_encryption(
        &self,
        req: S3Request<PutBucketEncryptionInput>,
    ) -> S3Result<S3Response<PutBucketEncryptionOutput>> {
        sse::put_bucket_encryption(self, req).await
    }
    async fn get_bucket_encryption(
        &self,
        req: S3Request<GetBucketEncryptionInput>,
    ) -> S3Result<S3Response<GetBucketEncryptionOutput>> {
        sse::get_bucket_encryption(self, req).await
    }
    async fn delete_bucket_encryption(
        &self,
        req: S3Request<DeleteBucketEncryptionInput>,
    ) -> S3Result<S3Response<DeleteBucketEncryptionOutput>> {
        sse::delete_bucket_encryption(self, req).await
    }
    async fn put_bucket_cors(
        &self,
        req: S3Request<PutBucketCorsInput>,
    ) -> S3Result<S3Response<PutBucketCorsOutput>> {
        cors::put_bucket_cors(self, req).await
    }
    async fn get_bucket_cors(
        &self,
        req: S3Request<GetBucketCorsInput>,
    ) -> S3Result<S3Response<GetBucketCorsOutput>> {
        cors::get_bucket_cors(self, req).await
    }
    async fn delete_bucket_cors(
        &self,
        req: S3Request<DeleteBucketCorsInput>,
    ) -> S3Result<S3Response<DeleteBucketCorsOutput>> {
        cors::delete_bucket_cors(self, req).await
    }
    async fn list_buckets(
        &self,
        req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        bucket::list_buckets(self, req).await
    }
    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        bucket::create_bucket(self, req).await
    }
    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        bucket::delete_bucket(self, req).await
    }
    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        bucket::head_bucket(self, req).await
    }
    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        bucket::get_bucket_location(self, req).await
    }
    async fn put_bucket_tagging(
        &self,
        req: S3Request<PutBucketTaggingInput>,
    ) -> S3Result<S3Response<PutBucketTaggingOutput>> {
        bucket::put_bucket_tagging(self, req).await
    }
    async fn get_bucket_tagging(
        &self,
        req: S3Request<GetBucketTaggingInput>,
    ) -> S3Result<S3Response<GetBucketTaggingOutput>> {
        bucket::get_bucket_tagging(self, req).await
    }
    async fn delete_bucket_tagging(
        &self,
        req: S3Request<DeleteBucketTaggingInput>,
    ) -> S3Result<S3Response<DeleteBucketTaggingOutput>> {
        bucket::delete_bucket_tagging(self, req).await
    }
    async fn put_bucket_versioning(
        &self,
        req: S3Request<PutBucketVersioningInput>,
    ) -> S3Result<S3Response<PutBucketVersioningOutput>> {
        versioning::put_bucket_versioning(self, req).await
    }
    async fn get_bucket_versioning(
        &self,
        req: S3Request<GetBucketVersioningInput>,
    ) -> S3Result<S3Response<GetBucketVersioningOutput>> {
        versioning::get_bucket_versioning(self, req).await
    }
    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        put::put_object(self, req).await
    }
    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        get::get_object(self, req).await
    }
    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        get::head_object(self, req).await
    }
    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        delete::delete_object(self, req).await
    }
    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        delete::delete_objects(self, req).await
    }
    async fn copy_object(
        &self,
        req: S3Request<CopyObjectInput>,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        copy::copy_object(self, req).await
    }
    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        list::list_objects(self, req).await
    }
    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        list::list_objects_v2(self, req).await
    }
    async fn list_object_versions(
        &self,
        req: S3Request<ListObjectVersionsInput>,
    ) -> S3Result<S3Response<ListObjectVersionsOutput>> {
        list::list_object_versions(self, req).await
    }
    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        multipart::create_multipart_upload(self, req).await
    }
    async fn upload_part(
        &self,
        req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        multipart::upload_part(self, req).await
    }
    async fn upload_part_copy(
        &self,
        req: S3Request<UploadPartCopyInput>,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        copy::upload_part_copy(self, req).await
    }
    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        multipart::complete_multipart_upload(self, req).await
    }
    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        multipart::abort_multipart_upload(self, req).await
    }
    async fn list_parts(
        &self,
        req: S3Request<ListPartsInput>,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        multipart::list_parts(self, req).await
    }
    async fn list_multipart_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        multipart::list_multipart_uploads(self, req).await
    }
    async fn put_object_tagging(
        &self,
        req: S3Request<PutObjectTaggingInput>,
    ) -> S3Result<S3Response<PutObjectTaggingOutput>> {
        tagging::put_object_tagging(self, req).await
    }
    async fn put_bucket_notification_configuration(
        &self,
        req: S3Request<PutBucketNotificationConfigurationInput>,
    ) -> S3Result<S3Response<PutBucketNotificationConfigurationOutput>> {
        notification::put_bucket_notification_configuration(self, req).await
    }
    async fn get_bucket_notification_configuration(
        &self,
        req: S3Request<GetBucketNotificationConfigurationInput>,
    ) -> S3Result<S3Response<GetBucketNotificationConfigurationOutput>> {
        notification::get_bucket_notification_configuration(self, req).await
    }
    async fn get_object_tagging(
        &self,
        req: S3Request<GetObjectTaggingInput>,
    ) -> S3Result<S3Response<GetObjectTaggingOutput>> {
        tagging::get_object_tagging(self, req).await
    }
    async fn delete_object_tagging(
        &self,
        req: S3Request<DeleteObjectTaggingInput>,
    ) -> S3Result<S3Response<DeleteObjectTaggingOutput>> {
        tagging::delete_object_tagging(self, req).await
    }
}

#[cfg(test)]
mod tests {
    use s3s::host::S3Host;

    use super::Domains;

    #[test]
    fn virtual_hosts() {
        let d = Domains::new(&["example.com".into(), "s3.example.com".into()]).unwrap();
        let bucket = |h: &str| d.parse_host_header(h).unwrap().bucket().map(str::to_owned);
        assert_eq!(bucket("b.s3.example.com:9000").as_deref(), Some("b"));
        assert_eq!(bucket("a.b.example.com").as_deref(), Some("a.b"));
        assert_eq!(bucket("S3.Example.com"), None);
        assert_eq!(bucket("localhost:9000"), None);
        assert_eq!(bucket("é.example.com").as_deref(), Some("é"));
        assert_eq!(bucket("xéxample.com"), None);
        assert!(Domains::new(&["a:1".into()]).is_err());
    }
}
