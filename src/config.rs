//! Configuration: command-line flags, `EDDY_*` environment variables and an optional TOML
//! file, in that order of precedence, over built-in defaults.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use serde::Deserialize;

use crate::listen::{Advertised, HttpListen, KafkaListener, SecurityProtocol};

/// Default S3 access key and secret, printed at start when in use.
pub const DEFAULT_CREDENTIAL: &str = "eddyadmin";

/// Storage flags shared by `serve` and `heal`.
#[derive(Debug, Clone, Args, Default)]
pub struct StorageArgs {
    /// TOML configuration file.
    #[arg(long, short = 'c', env = "EDDY_CONFIG")]
    pub config: Option<PathBuf>,
    /// Data directory; drives default to `drive-0` ... `drive-{k+m-1}` under it.
    #[arg(long, env = "EDDY_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Drive directories, comma-separated, in shard order (overrides the data dir layout).
    #[arg(long, env = "EDDY_DRIVES", value_delimiter = ',')]
    pub drives: Option<Vec<PathBuf>>,
    /// Data shards per stripe.
    #[arg(long, short = 'k', env = "EDDY_K")]
    pub k: Option<usize>,
    /// Parity shards per stripe (drives that may be lost).
    #[arg(long, short = 'm', env = "EDDY_M")]
    pub m: Option<usize>,
}

/// Listener and credential flags of `serve`.
#[derive(Debug, Clone, Args, Default)]
pub struct ServeArgs {
    /// Storage settings.
    #[command(flatten)]
    pub storage: StorageArgs,
    /// S3 listen address: `ip:port` (`:port` is every interface), or `https://ip:port`
    /// for TLS.
    #[arg(long, env = "EDDY_S3_LISTEN")]
    pub s3_listen: Option<HttpListen>,
    /// Kafka listeners, comma-separated, in Kafka's form (`PLAINTEXT://127.0.0.1:9092,
    /// SSL://127.0.0.1:9093`; a bare `ip:port` is plaintext; `:port` is every interface).
    /// Each address of a protocol is a broker; every protocol lists the same number of
    /// them.
    #[arg(long, env = "EDDY_KAFKA_LISTEN", value_delimiter = ',')]
    pub kafka_listen: Option<Vec<KafkaListener>>,
    /// The security protocol of each Kafka listener that names itself, comma-separated
    /// `NAME:PROTOCOL` (Kafka's `listener.security.protocol.map`), as in
    /// `--kafka-listen INTERNAL://:29092,EXTERNAL://:9092
    /// --kafka-listener-protocols INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT`.
    #[arg(long, env = "EDDY_KAFKA_LISTENER_PROTOCOLS", value_delimiter = ',')]
    pub kafka_listener_protocols: Option<Vec<String>>,
    /// The addresses clients are told to connect to, comma-separated `NAME://host:port`
    /// (Kafka's `advertised.listeners`): for each listener name, one per address of that
    /// name in `--kafka-listen`, in the same order. A listener without one advertises
    /// its own address (the one the client reached, for `0.0.0.0`).
    #[arg(long, env = "EDDY_KAFKA_ADVERTISE", value_delimiter = ',')]
    pub kafka_advertise: Option<Vec<Advertised>>,
    /// HTTP listen address (Iceberg REST catalog, /metrics, /health): `ip:port` (`:port`
    /// is every interface), or `https://ip:port` for TLS.
    #[arg(long, env = "EDDY_HTTP_LISTEN")]
    pub http_listen: Option<HttpListen>,
    /// Certificate chain (PEM) of every TLS listener.
    #[arg(long, env = "EDDY_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// Private key (PEM) of the TLS certificate.
    #[arg(long, env = "EDDY_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// CA certificates (PEM): `SSL://` Kafka listeners then require client certificates
    /// signed by them (mutual TLS, TLS 1.3).
    #[arg(long, env = "EDDY_TLS_CLIENT_CA")]
    pub tls_client_ca: Option<PathBuf>,
    /// How a client certificate's subject becomes its principal, in Kafka's
    /// `ssl.principal.mapping.rules` syntax (`RULE:^CN=([^,]*),.*$/$1/L,DEFAULT`); by
    /// default the certificate's CN.
    #[arg(long, env = "EDDY_TLS_PRINCIPAL_RULES")]
    pub tls_principal_rules: Option<String>,
    /// SASL mechanisms of `SASL_PLAINTEXT://` and `SASL_SSL://` listeners,
    /// comma-separated (default `PLAIN,SCRAM-SHA-256,SCRAM-SHA-512`).
    #[arg(long, env = "EDDY_SASL_MECHANISMS", value_delimiter = ',')]
    pub sasl_mechanisms: Option<Vec<String>>,
    /// How long a SASL session lasts before the client must re-authenticate, ms (Kafka's
    /// `connections.max.reauth.ms`; default 0: sessions do not expire).
    #[arg(long, env = "EDDY_KAFKA_SASL_SESSION_LIFETIME_MS")]
    pub kafka_sasl_session_lifetime_ms: Option<u64>,
    /// Bucket holding the broker's topics.
    #[arg(long, env = "EDDY_BROKER_BUCKET")]
    pub broker_bucket: Option<String>,
    /// Create unknown topics when clients ask for them (off by default).
    #[arg(long, env = "EDDY_KAFKA_AUTO_CREATE_TOPICS")]
    pub kafka_auto_create_topics: bool,
    /// Refuse a Kafka request that no policy statement allows (by default, a request no
    /// statement matches is allowed, and only an explicit Deny refuses; Kafka's
    /// `allow.everyone.if.no.acl.found=false`).
    #[arg(long, env = "EDDY_KAFKA_DENY_UNLESS_ALLOWED")]
    pub kafka_deny_unless_allowed: bool,
    /// How long the first rebalance of an empty consumer group waits for more members,
    /// in ms (Kafka's `group.initial.rebalance.delay.ms`; default 3000).
    #[arg(long, env = "EDDY_KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS")]
    pub kafka_group_initial_rebalance_delay_ms: Option<u64>,
    /// Shortest session timeout a group member may ask for, in ms (Kafka's
    /// `group.min.session.timeout.ms`; default 6000).
    #[arg(long, env = "EDDY_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS")]
    pub kafka_group_min_session_timeout_ms: Option<u64>,
    /// Session timeout of consumer-protocol (KIP-848) group members, in ms (Kafka's
    /// `group.consumer.session.timeout.ms`; default 45000).
    #[arg(long, env = "EDDY_KAFKA_CONSUMER_GROUP_SESSION_TIMEOUT_MS")]
    pub kafka_consumer_group_session_timeout_ms: Option<u64>,
    /// Heartbeat interval given to consumer-protocol (KIP-848) group members, in ms
    /// (Kafka's `group.consumer.heartbeat.interval.ms`; default 5000).
    #[arg(long, env = "EDDY_KAFKA_CONSUMER_GROUP_HEARTBEAT_INTERVAL_MS")]
    pub kafka_consumer_group_heartbeat_interval_ms: Option<u64>,
    /// How often topics' `retention.ms` and `retention.bytes` are applied, in ms (Kafka's
    /// `log.retention.check.interval.ms`; default 300000).
    #[arg(long, env = "EDDY_KAFKA_RETENTION_CHECK_INTERVAL_MS")]
    pub kafka_retention_check_interval_ms: Option<u64>,
    /// How often compacted partitions are looked at, in ms (Kafka's
    /// `log.cleaner.backoff.ms`; default 15000). A topic config change starts a look at
    /// once.
    #[arg(long, env = "EDDY_KAFKA_COMPACTION_CHECK_INTERVAL_MS")]
    pub kafka_compaction_check_interval_ms: Option<u64>,
    /// Memory for the log cleaner's key map, in MiB (Kafka's
    /// `log.cleaner.dedupe.buffer.size`; default 64, about 1.6 million keys per pass).
    #[arg(long, env = "EDDY_KAFKA_COMPACTION_MAP_MB")]
    pub kafka_compaction_map_mb: Option<usize>,
    /// Most rewritten batch bytes one compaction pass commits, in MiB (default 16): a pass
    /// holds them in memory until its commit, so the cleaner's memory grows with this
    /// (about 5x: 80 MiB at 16, 258 MiB at 64, docs/benchmarks.md); a partition that
    /// needs more takes several passes.
    #[arg(long, env = "EDDY_KAFKA_COMPACTION_PASS_MB")]
    pub kafka_compaction_pass_mb: Option<usize>,
    /// The longest `transaction.timeout.ms` a transactional producer may ask, ms
    /// (Kafka's `transaction.max.timeout.ms`; default 900000).
    #[arg(long, env = "EDDY_KAFKA_TRANSACTION_MAX_TIMEOUT_MS")]
    pub kafka_transaction_max_timeout_ms: Option<u64>,
    /// How often the transaction coordinator aborts transactions past their timeout, ms
    /// (Kafka's `transaction.abort.timed.out.transaction.cleanup.interval.ms`; default
    /// 10000).
    #[arg(long, env = "EDDY_KAFKA_TRANSACTION_ABORT_INTERVAL_MS")]
    pub kafka_transaction_abort_interval_ms: Option<u64>,
    /// The transaction protocol offered to clients as the `transaction.version` feature
    /// (KIP-890): 2 (default) lets Kafka 4 clients bump the epoch at every EndTxn and add
    /// partitions and groups by producing; 1 keeps every client on the first protocol.
    /// A cluster of nodes offers 1 whatever this says.
    #[arg(long, env = "EDDY_KAFKA_TRANSACTION_VERSION", value_parser = clap::value_parser!(i16).range(1..=2))]
    pub kafka_transaction_version: Option<i16>,
    /// A transactional id with no open transaction and no use for this long is forgotten,
    /// ms (Kafka's `transactional.id.expiration.ms`; default 604800000, 7 days).
    #[arg(long, env = "EDDY_KAFKA_TRANSACTIONAL_ID_EXPIRATION_MS")]
    pub kafka_transactional_id_expiration_ms: Option<u64>,
    /// Fetch sessions (KIP-227) kept at once (Kafka's
    /// `max.incremental.fetch.session.cache.slots`; default 1000).
    #[arg(long, env = "EDDY_KAFKA_FETCH_SESSION_CACHE_SLOTS")]
    pub kafka_fetch_session_cache_slots: Option<usize>,
    /// Also write committed offsets to a `__consumer_offsets` topic in Kafka's record
    /// format, for tools that read it (Burrow); off by default (offsets are in the
    /// catalog either way).
    #[arg(long, env = "EDDY_KAFKA_OFFSETS_TOPIC")]
    pub kafka_offsets_topic: bool,
    /// Samples a client quota's rate is measured over (Kafka's `quota.window.num`;
    /// default 11).
    #[arg(long, env = "EDDY_KAFKA_QUOTA_WINDOW_NUM")]
    pub kafka_quota_window_num: Option<usize>,
    /// Seconds one client quota sample spans (Kafka's `quota.window.size.seconds`;
    /// default 1).
    #[arg(long, env = "EDDY_KAFKA_QUOTA_WINDOW_SIZE_SECONDS")]
    pub kafka_quota_window_size_seconds: Option<u64>,
    /// Domains of the S3 endpoint for virtual-host-style requests
    /// (`bucket.DOMAIN`), comma-separated; path style always works.
    #[arg(long, env = "EDDY_S3_DOMAIN", value_delimiter = ',')]
    pub s3_domain: Option<Vec<String>>,
    /// Time between lifecycle passes, ms (default 60000).
    #[arg(long, env = "EDDY_S3_LIFECYCLE_INTERVAL_MS")]
    pub s3_lifecycle_interval_ms: Option<u64>,
    /// The length of a lifecycle day, seconds (default 86400): rules' `Days` count in
    /// these, and expiry times round up to a multiple of them. Shorter only for tests and
    /// benchmarks.
    #[arg(long, env = "EDDY_S3_LIFECYCLE_DAY_SECS")]
    pub s3_lifecycle_day_secs: Option<u64>,
    /// The most expirations one lifecycle pass commits (default 100000).
    #[arg(long, env = "EDDY_S3_LIFECYCLE_MAX_ACTIONS")]
    pub s3_lifecycle_max_actions: Option<usize>,
    /// The SSE-S3 master key file: 64 hex digits, made with a random key (mode 0600) when
    /// missing (default `<data-dir>/sse-master.key`). Objects stored with SSE-S3 cannot
    /// be read without it: keep it backed up, and away from the drives for a stolen
    /// drive to reveal nothing.
    #[arg(long, env = "EDDY_SSE_MASTER_KEY_FILE")]
    pub sse_master_key_file: Option<PathBuf>,
    /// The catalog: `postgres://user:password@host:port/database` keeps it in PostgreSQL,
    /// shared by every node of a cluster over the same drives (docs/scale-out.md);
    /// default: the embedded catalog on the drives.
    #[arg(long, env = "EDDY_CATALOG")]
    pub catalog: Option<String>,
    /// This node's name in a cluster (default: the host name); its batch log on the
    /// shared drives is kept under a number PostgreSQL assigns to the name.
    #[arg(long, env = "EDDY_NODE_ID")]
    pub node_id: Option<String>,
    /// How long a cluster node's address leases last without renewal (default 6000): a
    /// dead node's addresses move to the others about this long after it stops.
    #[arg(long, env = "EDDY_LEASE_TIMEOUT_MS")]
    pub lease_timeout_ms: Option<u64>,
    /// Prefix of the `ce_type` of bucket notification records (default `eddy:`, giving
    /// `eddy:Element.ElementCreated`; `vastdata.com:` gives the VAST event format's).
    #[arg(long, env = "EDDY_NOTIFY_CE_TYPE_PREFIX")]
    pub notify_ce_type_prefix: Option<String>,
    /// Topic table snapshots older than this many seconds are expired (default 600).
    #[arg(long, env = "EDDY_TABLE_SNAPSHOT_MAX_AGE_SECS")]
    pub table_snapshot_max_age_secs: Option<u64>,
    /// The background tabler seals a topic whose untabled data is this many seconds old
    /// (default 30).
    #[arg(long, env = "EDDY_TABLE_SEAL_AGE_SECS")]
    pub table_seal_age_secs: Option<u64>,
    /// Users' Iceberg tables are maintained (snapshot expiry, orphan-file removal, as
    /// each table's properties say) every this many seconds (default 3600).
    #[arg(long, env = "EDDY_TABLE_MAINTENANCE_SECS")]
    pub table_maintenance_secs: Option<u64>,
    /// The background tabler seals a topic once this many MiB were stored in it since
    /// its last seal (default 64).
    #[arg(long, env = "EDDY_TABLE_SEAL_MB")]
    pub table_seal_mb: Option<u64>,
    /// Every bucket's size and object count are counted again every this many seconds
    /// (default 300), for the `eddy_bucket_*` metrics and the console.
    #[arg(long, env = "EDDY_BUCKET_USAGE_SECS")]
    pub bucket_usage_secs: Option<u64>,
    /// Connections each listener (S3, every Kafka address, HTTP) keeps open at most;
    /// more are closed as they arrive (default 4096).
    #[arg(long, env = "EDDY_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// A connection that sends no request for this many seconds is closed (default 600,
    /// Kafka's `connections.max.idle.ms`).
    #[arg(long, env = "EDDY_IDLE_TIMEOUT_SECS")]
    pub idle_timeout_secs: Option<u64>,
    /// Kafka request MiB the whole process holds at once; when they are spent,
    /// connections stop reading until responses go out (default 256).
    #[arg(long, env = "EDDY_KAFKA_MAX_REQUEST_MB_IN_FLIGHT")]
    pub kafka_max_request_mb_in_flight: Option<usize>,
}

/// The TOML file's shape (every key optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    data_dir: Option<PathBuf>,
    drives: Option<Vec<PathBuf>>,
    k: Option<usize>,
    m: Option<usize>,
    meta_dir: Option<PathBuf>,
    s3_listen: Option<HttpListen>,
    kafka_listen: Option<Vec<KafkaListener>>,
    kafka_listener_protocols: Option<Vec<String>>,
    kafka_advertise: Option<Vec<Advertised>>,
    http_listen: Option<HttpListen>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    tls_client_ca: Option<PathBuf>,
    tls_principal_rules: Option<String>,
    sasl_mechanisms: Option<Vec<String>>,
    kafka_sasl_session_lifetime_ms: Option<u64>,
    broker_bucket: Option<String>,
    s3_domain: Option<Vec<String>>,
    s3_lifecycle_interval_ms: Option<u64>,
    s3_lifecycle_day_secs: Option<u64>,
    s3_lifecycle_max_actions: Option<usize>,
    sse_master_key_file: Option<PathBuf>,
    catalog: Option<String>,
    node_id: Option<String>,
    lease_timeout_ms: Option<u64>,
    checkpoint_mb: Option<u64>,
    wal_zero_fill: Option<bool>,
    scrub_interval_secs: Option<u64>,
    kafka_auto_create_topics: Option<bool>,
    kafka_deny_unless_allowed: Option<bool>,
    kafka_default_partitions: Option<u32>,
    kafka_max_frame_mb: Option<usize>,
    kafka_group_initial_rebalance_delay_ms: Option<u64>,
    kafka_group_min_session_timeout_ms: Option<u64>,
    kafka_consumer_group_session_timeout_ms: Option<u64>,
    kafka_consumer_group_heartbeat_interval_ms: Option<u64>,
    kafka_retention_check_interval_ms: Option<u64>,
    kafka_compaction_check_interval_ms: Option<u64>,
    kafka_compaction_map_mb: Option<usize>,
    kafka_compaction_pass_mb: Option<usize>,
    kafka_transaction_max_timeout_ms: Option<u64>,
    kafka_transaction_abort_interval_ms: Option<u64>,
    kafka_transaction_version: Option<i16>,
    kafka_transactional_id_expiration_ms: Option<u64>,
    kafka_fetch_session_cache_slots: Option<usize>,
    kafka_quota_window_num: Option<usize>,
    kafka_quota_window_size_seconds: Option<u64>,
    kafka_offsets_topic: Option<bool>,
    notify_ce_type_prefix: Option<String>,
    table_snapshot_max_age_secs: Option<u64>,
    table_seal_age_secs: Option<u64>,
    table_maintenance_secs: Option<u64>,
    table_seal_mb: Option<u64>,
    bucket_usage_secs: Option<u64>,
    max_connections: Option<usize>,
    idle_timeout_secs: Option<u64>,
    kafka_max_request_mb_in_flight: Option<usize>,
    #[serde(default)]
    users: Vec<User>,
    #[serde(default)]
    views: Vec<ViewFile>,
}

/// A broker view in the config file (`[[views]]`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
struct ViewFile {
    name: String,
    kafka_listen: Vec<KafkaListener>,
    bucket: Option<String>,
    #[serde(default)]
    users: Vec<String>,
}

/// A broker view: a Kafka namespace of its own (topics, groups, transactional ids) on
/// its own listeners, whose topics are tabled in its own bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewConfig {
    /// Its name (policy resources say `vast:kafka:topic:NAME:TOPIC`).
    pub name: String,
    /// Its Kafka listeners (each address belongs to one view).
    pub kafka_listen: Vec<KafkaListener>,
    /// The bucket of its topic tables.
    pub bucket: String,
    /// The principals allowed on it (empty: every principal).
    pub users: Vec<String>,
}

/// An S3 user.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct User {
    /// Access key id; also the user's Kafka (SASL) name.
    pub access_key: String,
    /// Secret access key; also the user's SASL password unless `kafka_password` is set.
    pub secret_key: String,
    /// The user's SASL password, when it differs from the secret key.
    #[serde(default)]
    pub kafka_password: Option<String>,
}

impl User {
    /// The user's SASL password.
    pub fn sasl_password(&self) -> &str {
        self.kafka_password.as_deref().unwrap_or(&self.secret_key)
    }
}

/// Resolved storage settings.
#[derive(Debug, Clone)]
pub struct StorageConfig {
    /// Drive directories in shard order.
    pub drives: Vec<PathBuf>,
    /// Data shards.
    pub k: usize,
    /// Parity shards.
    pub m: usize,
    /// Where the embedded store's file lives (default: first online drive).
    pub meta_dir: Option<PathBuf>,
    /// Log megabytes between checkpoints.
    pub checkpoint_mb: u64,
    /// Whether the log's next segment is zero-filled ahead (while its records are small).
    pub wal_zero_fill: bool,
    /// Seconds between background scrubs.
    pub scrub_interval_secs: u64,
}

/// Resolved `serve` settings.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Storage.
    pub storage: StorageConfig,
    /// S3 listener.
    pub s3_listen: HttpListen,
    /// Kafka listeners.
    pub kafka_listen: Vec<KafkaListener>,
    /// What clients that reached a Kafka listener address are told to connect to
    /// (`--kafka-advertise`), by bound address.
    pub kafka_advertised: Vec<(SocketAddr, String, u16)>,
    /// HTTP listener.
    pub http_listen: HttpListen,
    /// The TLS files of the TLS listeners (present when any listener is TLS).
    pub tls: Option<listener::tls::TlsFiles>,
    /// How client certificates' subjects become principals (`None`: their CN).
    pub tls_principal_rules: Option<String>,
    /// SASL mechanisms of SASL listeners.
    pub sasl_mechanisms: Vec<broker::sasl::Mechanism>,
    /// SASL session lifetime (`None`: no expiry).
    pub kafka_sasl_session_lifetime: Option<std::time::Duration>,
    /// Broker bucket.
    pub broker_bucket: String,
    /// Domains for virtual-host-style S3 requests (none: path style only).
    pub s3_domains: Vec<String>,
    /// How the lifecycle worker runs.
    pub s3_lifecycle: s3gw::lifecycle::worker::Settings,
    /// The SSE-S3 master key file.
    pub sse_master_key_file: PathBuf,
    /// The PostgreSQL catalog's URL (none: the embedded catalog).
    pub catalog_url: Option<String>,
    /// This node's name.
    pub node_id: String,
    /// How long a cluster node's address leases last without renewal.
    pub lease_timeout: std::time::Duration,
    /// S3 users; the first is the administrator.
    pub users: Vec<User>,
    /// Broker views besides the default one (`[[views]]`).
    pub views: Vec<ViewConfig>,
    /// Whether the administrator uses the default credentials.
    pub default_credentials: bool,
    /// Create unknown topics when clients ask for them.
    pub kafka_auto_create_topics: bool,
    /// Refuse Kafka requests no policy statement allows.
    pub deny_unless_allowed: bool,
    /// Partitions of topics created without a count.
    pub kafka_default_partitions: u32,
    /// Largest Kafka request, in MiB.
    pub kafka_max_frame_mb: usize,
    /// Kafka request MiB held at once by the whole process.
    pub kafka_max_request_mb_in_flight: usize,
    /// Connections per listener.
    pub max_connections: usize,
    /// Idle time after which a connection is closed.
    pub idle_timeout: std::time::Duration,
    /// First-rebalance delay of an empty group, ms.
    pub kafka_group_initial_rebalance_delay_ms: u64,
    /// Shortest member session timeout, ms.
    pub kafka_group_min_session_timeout_ms: u64,
    /// Consumer-protocol member session timeout, ms.
    pub kafka_consumer_group_session_timeout_ms: u64,
    /// Consumer-protocol heartbeat interval, ms.
    pub kafka_consumer_group_heartbeat_interval_ms: u64,
    /// Interval between retention passes, ms.
    pub kafka_retention_check_interval_ms: u64,
    /// Interval between compaction rounds, ms.
    pub kafka_compaction_check_interval_ms: u64,
    /// Key map memory of one compaction pass, MiB.
    pub kafka_compaction_map_mb: usize,
    /// Rewritten bytes of one compaction pass, MiB.
    pub kafka_compaction_pass_mb: usize,
    /// Longest transaction timeout a producer may ask, ms.
    pub kafka_transaction_max_timeout_ms: u64,
    /// Interval between looks for timed-out transactions, ms.
    pub kafka_transaction_abort_interval_ms: u64,
    /// The `transaction.version` feature level offered (1 or 2).
    pub kafka_transaction_version: i16,
    /// Idle time after which a transactional id is forgotten, ms.
    pub kafka_transactional_id_expiration_ms: u64,
    /// Fetch sessions kept at once.
    pub kafka_fetch_session_cache_slots: usize,
    /// Client quota samples.
    pub kafka_quota_window_num: usize,
    /// Client quota sample span, s.
    pub kafka_quota_window_size_seconds: u64,
    /// Mirror commits into `__consumer_offsets`.
    pub kafka_offsets_topic: bool,
    /// Prefix of bucket notification records' `ce_type`.
    pub notify_ce_type_prefix: String,
    /// Age after which topic table snapshots expire.
    pub table_snapshot_max_age: std::time::Duration,
    /// Age of untabled data after which the background tabler seals a topic.
    pub table_seal_age: std::time::Duration,
    /// How often users' Iceberg tables are maintained.
    pub table_maintenance: std::time::Duration,
    /// Bytes stored since a topic's last seal after which the background tabler seals it.
    pub table_seal_bytes: u64,
    /// How often buckets' sizes are counted.
    pub bucket_usage: std::time::Duration,
}

fn load_file(path: Option<&Path>) -> anyhow::Result<FileConfig> {
    let Some(path) = path else {
        return Ok(FileConfig::default());
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading config file {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("parsing config file {}", path.display()))
}

/// `--kafka-listener-protocols` as a map of listener name to protocol.
fn listener_protocols(entries: Vec<String>) -> anyhow::Result<BTreeMap<String, SecurityProtocol>> {
    let mut map = BTreeMap::new();
    for e in entries {
        let Some((name, protocol)) = e.split_once(':') else {
            bail!("--kafka-listener-protocols {e:?}: expected NAME:PROTOCOL");
        };
        let Some(p) = SecurityProtocol::of_name(protocol.trim()) else {
            bail!(
                "--kafka-listener-protocols {e:?}: unknown security protocol {protocol:?} (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)"
            );
        };
        map.insert(name.trim().to_ascii_uppercase(), p);
    }
    Ok(map)
}

/// Gives each listener that names itself its protocol from the map; one the map does not
/// name is refused, so a mistyped `SSL` never serves plaintext.
fn apply_protocols(
    listeners: &mut [KafkaListener],
    protocols: &BTreeMap<String, SecurityProtocol>,
) -> anyhow::Result<()> {
    for l in listeners {
        match protocols.get(&l.name) {
            Some(p) if l.named_by_protocol() && *p != l.protocol => bail!(
                "--kafka-listener-protocols maps {} to {}: a listener named after a protocol is that protocol",
                l.name,
                p.name()
            ),
            Some(p) => l.protocol = *p,
            None if l.named_by_protocol() => {}
            None => bail!(
                "Kafka listener {l} names no security protocol: use PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, or map the name with --kafka-listener-protocols {}:PROTOCOL",
                l.name
            ),
        }
    }
    Ok(())
}

/// `--kafka-advertise` matched to the listeners: the `i`th advertised address of a name
/// is the `i`th listen address of that name.
fn advertised_addresses(
    listeners: &[KafkaListener],
    advertised: Vec<Advertised>,
) -> anyhow::Result<Vec<(SocketAddr, String, u16)>> {
    let mut by_name: BTreeMap<String, Vec<Advertised>> = BTreeMap::new();
    for a in advertised {
        by_name.entry(a.name.clone()).or_default().push(a);
    }
    let mut out = Vec::new();
    for (name, given) in by_name {
        let bound: Vec<&KafkaListener> = listeners.iter().filter(|l| l.name == name).collect();
        if bound.len() != given.len() {
            bail!(
                "--kafka-advertise names {} address(es) of listener {name}, which --kafka-listen has {} of",
                given.len(),
                bound.len()
            );
        }
        for (l, a) in bound.into_iter().zip(given) {
            out.push((l.addr, a.host, a.port));
        }
    }
    Ok(out)
}

/// Checks the config file's views: names of lower-case letters, digits and dashes, none
/// named `default` or twice; each with listeners no other view (or the default one)
/// has; buckets of their own.
fn resolve_views(
    views: Vec<ViewFile>,
    default_listen: &[KafkaListener],
    broker_bucket: &str,
) -> anyhow::Result<Vec<ViewConfig>> {
    let mut out: Vec<ViewConfig> = Vec::new();
    let mut addrs: Vec<SocketAddr> = default_listen.iter().map(|l| l.addr).collect();
    for v in views {
        let name_ok = !v.name.is_empty()
            && v.name.len() <= 32
            && v.name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !name_ok || v.name == "default" {
            bail!(
                "view name {:?}: 1 to 32 lower-case letters, digits and dashes, not \"default\"",
                v.name
            );
        }
        if out.iter().any(|o| o.name == v.name) {
            bail!("view {} is configured twice", v.name);
        }
        if v.kafka_listen.is_empty() {
            bail!("view {} has no kafka_listen", v.name);
        }
        for l in &v.kafka_listen {
            if addrs.contains(&l.addr) {
                bail!(
                    "view {}: {} is already another view's listener (an address belongs to one view)",
                    v.name,
                    l.addr
                );
            }
            addrs.push(l.addr);
        }
        let bucket = v.bucket.unwrap_or_else(|| format!("kafka-{}", v.name));
        if bucket == broker_bucket || out.iter().any(|o| o.bucket == bucket) {
            bail!("view {}: bucket {bucket} is another view's", v.name);
        }
        out.push(ViewConfig {
            name: v.name,
            kafka_listen: v.kafka_listen,
            bucket,
            users: v.users,
        });
    }
    Ok(out)
}

fn resolve_storage(args: &StorageArgs, file: &FileConfig) -> anyhow::Result<StorageConfig> {
    let k = args.k.or(file.k).unwrap_or(4);
    let m = args.m.or(file.m).unwrap_or(2);
    if k == 0 {
        bail!("k must be at least 1");
    }
    let drives = match args.drives.clone().or_else(|| file.drives.clone()) {
        Some(d) => d,
        None => {
            let dir = args
                .data_dir
                .clone()
                .or_else(|| file.data_dir.clone())
                .unwrap_or_else(|| PathBuf::from("eddy-data"));
            (0..k + m).map(|i| dir.join(format!("drive-{i}"))).collect()
        }
    };
    if drives.len() != k + m {
        bail!(
            "{} drives given, but k + m = {} + {} = {}",
            drives.len(),
            k,
            m,
            k + m
        );
    }
    Ok(StorageConfig {
        drives,
        k,
        m,
        meta_dir: file.meta_dir.clone(),
        checkpoint_mb: file.checkpoint_mb.unwrap_or(1024),
        wal_zero_fill: file.wal_zero_fill.unwrap_or(true),
        scrub_interval_secs: file.scrub_interval_secs.unwrap_or(24 * 3600),
    })
}

/// The SASL mechanisms named (all of them by default); an unknown one is an error.
fn mechanisms(names: Option<&[String]>) -> anyhow::Result<Vec<broker::sasl::Mechanism>> {
    let Some(names) = names else {
        return Ok(broker::sasl::Mechanism::ALL.to_vec());
    };
    let mut out = Vec::new();
    for n in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let m = broker::sasl::Mechanism::from_name(&n.to_ascii_uppercase()).with_context(|| {
            format!("unknown SASL mechanism {n:?} (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)")
        })?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if out.is_empty() {
        bail!("--sasl-mechanisms names no mechanism");
    }
    Ok(out)
}

/// The TLS files, checked against the listeners: a TLS listener needs a certificate and
/// a key, and a client CA needs an `SSL://` listener.
fn tls_files(
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    client_ca: Option<PathBuf>,
    s3: HttpListen,
    kafka: &[KafkaListener],
    http: HttpListen,
) -> anyhow::Result<Option<listener::tls::TlsFiles>> {
    let any_tls = s3.tls || http.tls || kafka.iter().any(|l| l.protocol.tls());
    if client_ca.is_some() && !kafka.iter().any(|l| l.protocol == SecurityProtocol::Ssl) {
        bail!("--tls-client-ca is for SSL:// Kafka listeners, and none is configured");
    }
    match (cert, key) {
        (Some(cert), Some(key)) => Ok(Some(listener::tls::TlsFiles {
            cert,
            key,
            client_ca,
        })),
        (None, None) if !any_tls => Ok(None),
        (None, None) => bail!("a TLS listener (SSL://, https://) needs --tls-cert and --tls-key"),
        _ => bail!("--tls-cert and --tls-key go together"),
    }
}

impl StorageArgs {
    /// Resolves the storage settings.
    pub fn resolve(&self) -> anyhow::Result<StorageConfig> {
        resolve_storage(self, &load_file(self.config.as_deref())?)
    }
}

impl ServeArgs {
    /// Resolves every `serve` setting; credentials come from `EDDY_ACCESS_KEY` and
    /// `EDDY_SECRET_KEY`, then the file's users.
    pub fn resolve(&self) -> anyhow::Result<ServeConfig> {
        let file = load_file(self.storage.config.as_deref())?;
        let storage = resolve_storage(&self.storage, &file)?;
        let access = std::env::var("EDDY_ACCESS_KEY").ok();
        let secret = std::env::var("EDDY_SECRET_KEY").ok();
        if access.is_some() != secret.is_some() {
            bail!("set both EDDY_ACCESS_KEY and EDDY_SECRET_KEY, or neither");
        }
        let default_credentials = access.is_none();
        let admin = User {
            access_key: access.unwrap_or_else(|| DEFAULT_CREDENTIAL.into()),
            secret_key: secret.unwrap_or_else(|| DEFAULT_CREDENTIAL.into()),
            kafka_password: None,
        };
        let mut users = vec![admin];
        for u in file.users {
            if users.iter().any(|x| x.access_key == u.access_key) {
                bail!("user {} is configured twice", u.access_key);
            }
            users.push(u);
        }
        let parse = |s: &str| s.parse::<SocketAddr>().expect("built-in address");
        let s3_listen = self
            .s3_listen
            .or(file.s3_listen)
            .unwrap_or_else(|| HttpListen::plain(parse("0.0.0.0:9000")));
        let mut kafka_listen = self
            .kafka_listen
            .clone()
            .or(file.kafka_listen)
            .unwrap_or_else(|| {
                vec![KafkaListener {
                    name: SecurityProtocol::Plaintext.name().to_owned(),
                    protocol: SecurityProtocol::Plaintext,
                    addr: parse("0.0.0.0:9092"),
                }]
            });
        let protocols = listener_protocols(
            self.kafka_listener_protocols
                .clone()
                .or(file.kafka_listener_protocols)
                .unwrap_or_default(),
        )?;
        apply_protocols(&mut kafka_listen, &protocols)?;
        let kafka_advertised = advertised_addresses(
            &kafka_listen,
            self.kafka_advertise
                .clone()
                .or(file.kafka_advertise)
                .unwrap_or_default(),
        )?;
        let http_listen = self
            .http_listen
            .or(file.http_listen)
            .unwrap_or_else(|| HttpListen::plain(parse("0.0.0.0:8181")));
        let broker_bucket_name = self
            .broker_bucket
            .clone()
            .or(file.broker_bucket.clone())
            .unwrap_or_else(|| "kafka".into());
        let mut views = resolve_views(file.views, &kafka_listen, &broker_bucket_name)?;
        for v in &mut views {
            apply_protocols(&mut v.kafka_listen, &protocols)?;
        }
        let every_listener: Vec<KafkaListener> = kafka_listen
            .iter()
            .chain(views.iter().flat_map(|v| v.kafka_listen.iter()))
            .cloned()
            .collect();
        let tls = tls_files(
            self.tls_cert.clone().or(file.tls_cert),
            self.tls_key.clone().or(file.tls_key),
            self.tls_client_ca.clone().or(file.tls_client_ca),
            s3_listen,
            &every_listener,
            http_listen,
        )?;
        let tls_principal_rules = self
            .tls_principal_rules
            .clone()
            .or(file.tls_principal_rules);
        if let Some(r) = &tls_principal_rules {
            listener::principal::PrincipalRules::parse(r).map_err(anyhow::Error::msg)?;
        }
        let broker_bucket = self
            .broker_bucket
            .clone()
            .or(file.broker_bucket)
            .unwrap_or_else(|| "kafka".into());
        Ok(ServeConfig {
            storage,
            s3_listen,
            kafka_listen,
            kafka_advertised,
            http_listen,
            tls,
            tls_principal_rules,
            sasl_mechanisms: mechanisms(
                self.sasl_mechanisms
                    .clone()
                    .or(file.sasl_mechanisms)
                    .as_deref(),
            )?,
            kafka_sasl_session_lifetime: self
                .kafka_sasl_session_lifetime_ms
                .or(file.kafka_sasl_session_lifetime_ms)
                .filter(|ms| *ms > 0)
                .map(std::time::Duration::from_millis),
            broker_bucket,
            s3_domains: self
                .s3_domain
                .clone()
                .or(file.s3_domain)
                .unwrap_or_default(),
            s3_lifecycle: s3gw::lifecycle::worker::Settings {
                interval: std::time::Duration::from_millis(
                    self.s3_lifecycle_interval_ms
                        .or(file.s3_lifecycle_interval_ms)
                        .unwrap_or(60_000)
                        .max(10),
                ),
                day_ms: self
                    .s3_lifecycle_day_secs
                    .or(file.s3_lifecycle_day_secs)
                    .unwrap_or(86_400)
                    .clamp(1, 86_400 * 365)
                    .saturating_mul(1000) as i64,
                max_actions: self
                    .s3_lifecycle_max_actions
                    .or(file.s3_lifecycle_max_actions)
                    .unwrap_or(100_000)
                    .max(1),
            },
            sse_master_key_file: self
                .sse_master_key_file
                .clone()
                .or(file.sse_master_key_file.clone())
                .unwrap_or_else(|| {
                    self.storage
                        .data_dir
                        .clone()
                        .or_else(|| file.data_dir.clone())
                        .unwrap_or_else(|| PathBuf::from("eddy-data"))
                        .join("sse-master.key")
                }),
            catalog_url: self.catalog.clone().or(file.catalog.clone()),
            node_id: self
                .node_id
                .clone()
                .or(file.node_id.clone())
                .unwrap_or_else(host_name),
            lease_timeout: std::time::Duration::from_millis(
                self.lease_timeout_ms
                    .or(file.lease_timeout_ms)
                    .unwrap_or(6000)
                    .max(300),
            ),
            users,
            views,
            default_credentials,
            kafka_auto_create_topics: self.kafka_auto_create_topics
                || file.kafka_auto_create_topics.unwrap_or(false),
            deny_unless_allowed: self.kafka_deny_unless_allowed
                || file.kafka_deny_unless_allowed.unwrap_or(false),
            kafka_default_partitions: file.kafka_default_partitions.unwrap_or(1).max(1),
            kafka_max_frame_mb: file.kafka_max_frame_mb.unwrap_or(100).clamp(1, 1024),
            kafka_max_request_mb_in_flight: self
                .kafka_max_request_mb_in_flight
                .or(file.kafka_max_request_mb_in_flight)
                .unwrap_or(256)
                .clamp(1, 4095),
            max_connections: self
                .max_connections
                .or(file.max_connections)
                .unwrap_or(listener::DEFAULT_MAX_CONNECTIONS)
                .max(1),
            idle_timeout: self
                .idle_timeout_secs
                .or(file.idle_timeout_secs)
                .map_or(listener::DEFAULT_IDLE_TIMEOUT, |s| {
                    std::time::Duration::from_secs(s.max(1))
                }),
            kafka_group_initial_rebalance_delay_ms: self
                .kafka_group_initial_rebalance_delay_ms
                .or(file.kafka_group_initial_rebalance_delay_ms)
                .unwrap_or(3000),
            kafka_group_min_session_timeout_ms: self
                .kafka_group_min_session_timeout_ms
                .or(file.kafka_group_min_session_timeout_ms)
                .unwrap_or(6000),
            kafka_consumer_group_session_timeout_ms: self
                .kafka_consumer_group_session_timeout_ms
                .or(file.kafka_consumer_group_session_timeout_ms)
                .unwrap_or(45_000)
                .max(1),
            kafka_consumer_group_heartbeat_interval_ms: self
                .kafka_consumer_group_heartbeat_interval_ms
                .or(file.kafka_consumer_group_heartbeat_interval_ms)
                .unwrap_or(5_000)
                .max(1),
            kafka_retention_check_interval_ms: self
                .kafka_retention_check_interval_ms
                .or(file.kafka_retention_check_interval_ms)
                .unwrap_or(300_000)
                .max(1),
            kafka_compaction_check_interval_ms: self
                .kafka_compaction_check_interval_ms
                .or(file.kafka_compaction_check_interval_ms)
                .unwrap_or(15_000)
                .max(1),
            kafka_compaction_map_mb: self
                .kafka_compaction_map_mb
                .or(file.kafka_compaction_map_mb)
                .unwrap_or(64)
                .max(1),
            kafka_compaction_pass_mb: self
                .kafka_compaction_pass_mb
                .or(file.kafka_compaction_pass_mb)
                .unwrap_or(16)
                .max(1),
            kafka_transaction_max_timeout_ms: self
                .kafka_transaction_max_timeout_ms
                .or(file.kafka_transaction_max_timeout_ms)
                .unwrap_or(900_000)
                .max(1),
            kafka_transaction_abort_interval_ms: self
                .kafka_transaction_abort_interval_ms
                .or(file.kafka_transaction_abort_interval_ms)
                .unwrap_or(10_000)
                .max(1),
            kafka_transaction_version: match self
                .kafka_transaction_version
                .or(file.kafka_transaction_version)
                .unwrap_or(2)
            {
                v @ 1..=2 => v,
                v => bail!("kafka_transaction_version {v}: expected 1 or 2"),
            },
            kafka_transactional_id_expiration_ms: self
                .kafka_transactional_id_expiration_ms
                .or(file.kafka_transactional_id_expiration_ms)
                .unwrap_or(604_800_000)
                .max(1),
            kafka_fetch_session_cache_slots: self
                .kafka_fetch_session_cache_slots
                .or(file.kafka_fetch_session_cache_slots)
                .unwrap_or(1000),
            kafka_quota_window_num: self
                .kafka_quota_window_num
                .or(file.kafka_quota_window_num)
                .unwrap_or(11)
                .max(2),
            kafka_quota_window_size_seconds: self
                .kafka_quota_window_size_seconds
                .or(file.kafka_quota_window_size_seconds)
                .unwrap_or(1)
                .max(1),
            kafka_offsets_topic: self.kafka_offsets_topic
                || file.kafka_offsets_topic.unwrap_or(false),
            notify_ce_type_prefix: self
                .notify_ce_type_prefix
                .clone()
                .or(file.notify_ce_type_prefix)
                .unwrap_or_else(|| notify::DEFAULT_CE_TYPE_PREFIX.into()),
            table_snapshot_max_age: std::time::Duration::from_secs(
                self.table_snapshot_max_age_secs
                    .or(file.table_snapshot_max_age_secs)
                    .unwrap_or(600),
            ),
            table_seal_age: std::time::Duration::from_secs(
                self.table_seal_age_secs
                    .or(file.table_seal_age_secs)
                    .unwrap_or(30)
                    .max(1),
            ),
            table_maintenance: std::time::Duration::from_secs(
                self.table_maintenance_secs
                    .or(file.table_maintenance_secs)
                    .unwrap_or(3600)
                    .max(1),
            ),
            table_seal_bytes: self
                .table_seal_mb
                .or(file.table_seal_mb)
                .unwrap_or(64)
                .clamp(1, 1 << 20)
                << 20,
            bucket_usage: std::time::Duration::from_secs(
                self.bucket_usage_secs
                    .or(file.bucket_usage_secs)
                    .unwrap_or(300)
                    .max(1),
            ),
        })
    }
}

/// The host name (`/proc/sys/kernel/hostname`), or `eddy` when it cannot be read.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "eddy".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_beat_file_beats_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eddy.toml");
        std::fs::write(
            &path,
            "data_dir = \"/srv/eddy\"\nk = 2\nm = 1\nhttp_listen = \"127.0.0.1:1\"\n\
             s3_domain = [\"s3.example.com\"]\n\
             notify_ce_type_prefix = \"file.example:\"\ntable_seal_mb = 256\n\
             kafka_retention_check_interval_ms = 5000\n\
             kafka_compaction_check_interval_ms = 700\nkafka_compaction_map_mb = 8\n\
             kafka_compaction_pass_mb = 4\n\
             max_connections = 100\nidle_timeout_secs = 30\nkafka_max_request_mb_in_flight = 64\n\
             [[users]]\naccess_key = \"alice\"\nsecret_key = \"alicesecret\"\n",
        )
        .unwrap();
        let args = ServeArgs {
            storage: StorageArgs {
                config: Some(path.clone()),
                k: Some(3),
                ..StorageArgs::default()
            },
            ..ServeArgs::default()
        };
        let c = args.resolve().unwrap();
        assert_eq!(c.storage.k, 3);
        assert_eq!(c.storage.m, 1);
        assert_eq!(c.storage.drives.len(), 4);
        assert_eq!(c.storage.drives[3], PathBuf::from("/srv/eddy/drive-3"));
        assert_eq!(c.http_listen.addr.port(), 1);
        assert_eq!(c.s3_listen.addr.port(), 9000);
        assert_eq!(c.users[1].access_key, "alice");
        assert_eq!(c.s3_domains, ["s3.example.com"]);
        assert_eq!(c.notify_ce_type_prefix, "file.example:");
        assert_eq!(c.table_seal_bytes, 256 << 20);
        assert_eq!(c.kafka_retention_check_interval_ms, 5000);
        assert_eq!(c.kafka_compaction_check_interval_ms, 700);
        assert_eq!(c.kafka_compaction_map_mb, 8);
        assert_eq!(c.kafka_compaction_pass_mb, 4);
        assert_eq!(c.max_connections, 100);
        assert_eq!(c.idle_timeout, std::time::Duration::from_secs(30));
        assert_eq!(c.kafka_max_request_mb_in_flight, 64);
        let flagged = ServeArgs {
            notify_ce_type_prefix: Some("flag.example:".into()),
            table_seal_mb: Some(8),
            kafka_retention_check_interval_ms: Some(200),
            kafka_compaction_check_interval_ms: Some(100),
            max_connections: Some(7),
            idle_timeout_secs: Some(5),
            kafka_max_request_mb_in_flight: Some(16),
            ..args.clone()
        };
        let flagged = flagged.resolve().unwrap();
        assert_eq!(flagged.notify_ce_type_prefix, "flag.example:");
        assert_eq!(flagged.table_seal_bytes, 8 << 20);
        assert_eq!(flagged.kafka_retention_check_interval_ms, 200);
        assert_eq!(flagged.kafka_compaction_check_interval_ms, 100);
        assert_eq!(flagged.kafka_compaction_map_mb, 8);
        assert_eq!(flagged.max_connections, 7);
        assert_eq!(flagged.idle_timeout, std::time::Duration::from_secs(5));
        assert_eq!(flagged.kafka_max_request_mb_in_flight, 16);
        let defaults = ServeArgs::default().resolve().unwrap();
        assert_eq!(defaults.table_seal_bytes, 64 << 20);
        assert_eq!(defaults.kafka_retention_check_interval_ms, 300_000);
        assert_eq!(defaults.kafka_compaction_check_interval_ms, 15_000);
        assert_eq!(defaults.kafka_compaction_map_mb, 64);
        assert_eq!(defaults.kafka_compaction_pass_mb, 16);
        assert_eq!(defaults.max_connections, listener::DEFAULT_MAX_CONNECTIONS);
        assert_eq!(defaults.idle_timeout, listener::DEFAULT_IDLE_TIMEOUT);
        assert_eq!(defaults.kafka_max_request_mb_in_flight, 256);

        std::fs::write(&path, "colour = \"blue\"\n").unwrap();
        let err = args.resolve().unwrap_err();
        assert!(format!("{err:#}").contains("unknown field"), "{err:#}");
    }

    #[test]
    fn every_listen_key_takes_colon_port() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eddy.toml");
        std::fs::write(
            &path,
            "s3_listen = \":9100\"\nhttp_listen = \"https://:9181\"\n\
             kafka_listen = [\":9192\"]\n\
             [[views]]\nname = \"blue\"\nkafka_listen = [\"SSL://:9193\"]\n",
        )
        .unwrap();
        let args = ServeArgs {
            storage: StorageArgs {
                config: Some(path),
                ..StorageArgs::default()
            },
            tls_cert: Some("cert.pem".into()),
            tls_key: Some("key.pem".into()),
            ..ServeArgs::default()
        };
        let c = args.resolve().unwrap();
        assert_eq!(c.s3_listen.to_string(), "http://0.0.0.0:9100");
        assert_eq!(c.http_listen.to_string(), "https://0.0.0.0:9181");
        assert_eq!(c.kafka_listen[0].to_string(), "PLAINTEXT://0.0.0.0:9192");
        assert_eq!(c.views[0].kafka_listen[0].to_string(), "SSL://0.0.0.0:9193");
        // The flags parse the same way.
        let flagged = ServeArgs {
            s3_listen: Some(":9000".parse().unwrap()),
            ..args
        };
        assert_eq!(
            flagged.resolve().unwrap().s3_listen.to_string(),
            "http://0.0.0.0:9000"
        );
    }

    #[test]
    fn drive_count_must_match_the_code() {
        let args = StorageArgs {
            drives: Some(vec!["/a".into(), "/b".into()]),
            ..StorageArgs::default()
        };
        let err = args.resolve().unwrap_err().to_string();
        assert!(err.contains("2 drives given"), "{err}");
    }
}
