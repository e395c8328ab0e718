//! `eddy serve`: checks the configuration's files (`crate::preflight`) and loads the TLS
//! certificates, opens the catalog, binds the S3, Kafka and HTTP listeners, runs the
//! background scrub, and shuts down cleanly on SIGINT or SIGTERM.

use catalog::S3Op;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use catalog::{BucketRecord, Catalog, CatalogError, Op, Transaction};
use listener::tls::{Tls, TlsFiles};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::{DEFAULT_CREDENTIAL, ServeConfig};
use crate::http;
use crate::kafka_serving::KafkaServing;
use crate::listen::SecurityProtocol;
use crate::metrics::Metrics;
use crate::node_catalog::NodeCatalog;

async fn bind(addr: std::net::SocketAddr, what: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the {what} listener to {addr}"))
}

/// Makes the buckets of the broker views' tables (the default view's and every
/// `[[views]]` one's), owned by the administrator, if they are not there yet.
async fn ensure_broker_buckets(catalog: &dyn Catalog, config: &ServeConfig) -> anyhow::Result<()> {
    ensure_bucket(catalog, config, &config.broker_bucket).await?;
    for v in &config.views {
        ensure_bucket(catalog, config, &v.bucket).await?;
    }
    Ok(())
}

async fn ensure_bucket(
    catalog: &dyn Catalog,
    config: &ServeConfig,
    name: &str,
) -> anyhow::Result<()> {
    if catalog.s3().bucket(name).await?.is_some() {
        return Ok(());
    }
    let record = BucketRecord {
        name: name.to_owned(),
        owner: config.users[0].access_key.clone(),
        created_ms: now_ms(),
        versioning: catalog::Versioning::Unversioned,
        tags: BTreeMap::new(),
        settings: BTreeMap::new(),
    };
    match catalog
        .commit(Transaction::new(vec![Op::S3(S3Op::CreateBucket(record))]))
        .await
    {
        Ok(_) | Err(CatalogError::BucketExists(_)) => Ok(()),
        Err(e) => Err(e).context("creating the broker bucket"),
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Installs the SIGINT and SIGTERM handlers (before the server says it is ready, so a
/// signal sent right after that line is never lost to the default action) and returns a
/// future that resolves on the first of them.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let int = signal(SignalKind::interrupt());
    let term = signal(SignalKind::terminate());
    async move {
        let wait = |s: std::io::Result<tokio::signal::unix::Signal>, name: &'static str| async move {
            match s {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for {name}");
                    std::future::pending::<()>().await
                }
            }
        };
        tokio::select! {
            _ = wait(int, "SIGINT") => tracing::info!("SIGINT received; shutting down"),
            _ = wait(term, "SIGTERM") => tracing::info!("SIGTERM received; shutting down"),
        }
    }
}

/// Runs the server until a shutdown signal.
pub async fn run(config: ServeConfig) -> anyhow::Result<()> {
    // Everything the configuration names is read and checked before the catalog opens,
    // which formats fresh drives and creates a PostgreSQL catalog's tables: a start that
    // fails on a flag leaves the data dir as it found it.
    crate::preflight::check(&config)?;
    let listener_metrics = listener::ListenerMetrics::default();
    let tls = Listeners::load(&config, &listener_metrics)?;
    if config.default_credentials {
        tracing::warn!(
            access_key = DEFAULT_CREDENTIAL,
            secret_key = DEFAULT_CREDENTIAL,
            "using the default S3 credentials; set EDDY_ACCESS_KEY and EDDY_SECRET_KEY"
        );
        println!("S3 credentials: {DEFAULT_CREDENTIAL} / {DEFAULT_CREDENTIAL} (default)");
    }
    // The ports are taken before the catalog opens too, so an address in use stops the
    // start before any drive is formatted; connections wait in the backlog meanwhile.
    let s3 = bind(config.s3_listen.addr, "S3").await?;
    let http_listener = bind(config.http_listen.addr, "HTTP").await?;
    // A cluster node binds the Kafka addresses its leases give it, as they come
    // (crate::cluster); a single node binds them all now.
    let mut kafka = Vec::new();
    if config.catalog_url.is_none() {
        for l in &config.kafka_listen {
            kafka.push(bind(l.addr, "Kafka").await?);
        }
    }
    let mut view_listeners = Vec::new();
    for v in &config.views {
        let mut ls = Vec::new();
        for l in &v.kafka_listen {
            ls.push(bind(l.addr, "Kafka").await?);
        }
        view_listeners.push(ls);
    }
    let node_catalog = Arc::new(NodeCatalog::open(&config).await?);
    let catalog: Arc<dyn Catalog> = node_catalog.catalog();
    ensure_broker_buckets(catalog.as_ref(), &config).await?;
    let metrics = Arc::new(Metrics::new(node_catalog.metrics(), listener_metrics));
    let catalog_dyn: Arc<dyn Catalog> = catalog.clone();

    let leases = match &*node_catalog {
        NodeCatalog::Postgres(pg) => {
            // Broker views with PostgreSQL were refused by crate::preflight.
            Some(crate::cluster::Leases::new(
                pg.clone(),
                config.kafka_listen.clone(),
                config.lease_timeout,
            ))
        }
        NodeCatalog::Embedded(_) => None,
    };
    // Of a cluster's nodes, the one serving a topic's partition 0 leader seals its table
    // in the background.
    let sealer = match &leases {
        None => tables::background::every_topic(),
        Some(l) => {
            let mut brokers =
                broker::BrokerConfig::new(l.addresses.iter().map(|a| a.addr).collect());
            brokers.listener_classes = listener_classes(&l.addresses)?;
            let holdings = broker::Holdings::new(brokers.cluster(), Some(l.epochs.clone()));
            Arc::new(move |topic: &str| holdings.leads(topic, 0)) as tables::background::Sealer
        }
    };
    tokio::spawn(reload_on_sighup(tls.all()));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    let config_users: Vec<iam::ConfigUser> = config
        .users
        .iter()
        .map(|u| iam::ConfigUser {
            name: u.access_key.clone(),
            s3_secret: u.secret_key.clone(),
            kafka_password: u.sasl_password().to_owned(),
        })
        .collect();
    let directory = Arc::new(
        iam::Directory::open(catalog_dyn.clone(), &config_users)
            .await
            .context("opening the users and policies")?,
    );
    let notifier = Arc::new(notify::Notifier::new(notify::NotifySettings {
        ce_type_prefix: config.notify_ce_type_prefix.clone(),
    }));
    metrics.register_notify(notifier.metrics());
    let gateway = s3gw::Gateway::with_notifier(catalog.clone(), directory.clone(), notifier)
        .with_lifecycle_day_ms(config.s3_lifecycle.day_ms)
        .with_managed_buckets(s3gw::managed::ManagedBuckets::new(
            std::iter::once(config.broker_bucket.clone())
                .chain(config.views.iter().map(|v| v.bucket.clone())),
        ))
        .with_master_key(
            s3gw::sse::MasterKey::load_or_create(&config.sse_master_key_file)
                .context("the SSE-S3 master key")?,
        );
    let s3_service =
        s3gw::service(gateway.clone(), &config.s3_domains).map_err(anyhow::Error::msg)?;
    let lifecycle_metrics = Arc::new(s3gw::lifecycle::worker::LifecycleMetrics::default());
    metrics.register_lifecycle(&lifecycle_metrics);
    let limits = listener::Limits {
        max_connections: config.max_connections,
        idle_timeout: config.idle_timeout,
    };
    let s3_front = crate::s3::S3Front::new(
        s3_service,
        gateway.clone(),
        directory.clone(),
        metrics.clone(),
        tls.s3.is_some(),
        config.s3_listen.addr.to_string(),
    );
    tasks.spawn(crate::s3::serve(
        s3,
        tls.s3.clone(),
        limits,
        metrics.clone(),
        s3_front.clone(),
        stop_rx.clone(),
    ));
    // The default view sees neither the other views' topics nor their groups.
    let default_view: Arc<dyn Catalog> = Arc::new(catalog::view::ViewCatalog::default_view(
        catalog_dyn.clone(),
    ));
    // Administrative changes and refused requests of every protocol, through the
    // directory each of them holds.
    let (audit_log, audit_writer) = crate::audit::start(default_view.clone(), stop_rx.clone())
        .await
        .context("starting the audit trail")?;
    directory.set_audit(audit_log);
    let background =
        crate::background::Background::start().context("starting the background runtime")?;
    // A view's topics are tabled in its bucket by a tabler over its names, sealed in the
    // background.
    let start_tabler = |catalog: Arc<dyn Catalog>, bucket: &str| {
        let tabler = Arc::new(
            tables::Tabler::new(catalog, bucket.to_owned())
                .with_snapshot_max_age(config.table_snapshot_max_age),
        );
        let sealing = background.spawn(tables::background::run(
            tabler.clone(),
            tables::background::Thresholds {
                max_age: config.table_seal_age,
                max_bytes: config.table_seal_bytes,
                ..Default::default()
            },
            sealer.clone(),
            stop_rx.clone(),
        ));
        (tabler, sealing)
    };
    let (tabler, sealing) = start_tabler(default_view.clone(), &config.broker_bucket);
    metrics.register_tables(tabler.metrics());
    let mut view_tables = Vec::new();
    let mut view_sealing = Vec::new();
    for view in &config.views {
        let view_catalog: Arc<dyn Catalog> = Arc::new(catalog::view::ViewCatalog::named(
            catalog_dyn.clone(),
            &view.name,
        ));
        let (view_tabler, sealing) = start_tabler(view_catalog.clone(), &view.bucket);
        view_sealing.push(sealing);
        view_tables.push((view_catalog, view_tabler));
    }
    let iceberg = Arc::new(tables::rest::RestCatalog::new(
        tabler.clone(),
        Arc::new(tables::rest::Tokens::new(
            directory.clone(),
            Duration::from_secs(3600),
        )),
        tables::rest::S3Access {
            endpoint: None,
            port: config.s3_listen.addr.port(),
            scheme: config.s3_listen.scheme(),
            region: "us-east-1".to_owned(),
        },
    ));
    // Function pipelines run over the default view's topics.
    let pipeline_metrics = pipelines::PipelineMetrics::default();
    metrics.register_pipelines(&pipeline_metrics);
    let ownership: Arc<dyn pipelines::ownership::Ownership> = match &leases {
        None => Arc::new(pipelines::ownership::Alone),
        Some(l) => Arc::new(crate::cluster::PipelineCursors {
            addresses: l.addresses.iter().map(|a| a.addr).collect(),
            epochs: l.epochs.clone(),
        }),
    };
    let pipeline_runtime = pipelines::Runtime::new(
        default_view.clone(),
        &config.notify_ce_type_prefix,
        pipeline_metrics,
        ownership,
    );
    let _pipelines_running = PipelinesRunning(pipeline_runtime.clone(), pipeline_runtime.spawn());
    let registry_metrics = registry::metrics::RegistryMetrics::default();
    metrics.register_registry(&registry_metrics);
    let admin = Arc::new(
        admin::Admin::new(tabler.clone(), iceberg.tokens().clone()).with_pipelines(
            admin::pipelines::PipelineApi {
                pipelines: pipelines::Pipelines::new(default_view.clone()),
                runtime: pipeline_runtime,
            },
        ),
    );
    // A view's tables have a REST catalog of their own, at /iceberg/views/NAME.
    let view_icebergs: Vec<(String, Arc<tables::rest::RestCatalog>)> = config
        .views
        .iter()
        .zip(&view_tables)
        .map(|(v, (_, t))| {
            (
                v.name.clone(),
                Arc::new(iceberg.for_view(&v.name, t.clone())),
            )
        })
        .collect();
    // Users' tables are maintained on the background runtime, each catalog's own.
    let mut maintenance = vec![background.spawn(tables::warehouse::maintenance::run(
        iceberg.warehouse().clone(),
        config.table_maintenance,
        stop_rx.clone(),
    ))];
    for (_, c) in &view_icebergs {
        maintenance.push(background.spawn(tables::warehouse::maintenance::run(
            c.warehouse().clone(),
            config.table_maintenance,
            stop_rx.clone(),
        )));
    }
    // The console makes its Kafka requests through the default view's broker, started
    // below; until then its pages answer 503.
    let console_slot: Arc<std::sync::OnceLock<Arc<console::Console>>> = Arc::default();
    let console_rest = (iceberg.clone(), admin.clone());
    tasks.spawn(http::serve(
        "http",
        http_listener,
        tls.http.clone(),
        limits,
        metrics.clone(),
        http::endpoint(
            node_catalog.clone(),
            metrics.clone(),
            // Topic sizes and group lag in /metrics are the default view's.
            default_view.clone(),
            http::Apis {
                iceberg,
                views: view_icebergs,
                admin,
                registry: Arc::new(
                    registry::Registry::new(
                        catalog_dyn.clone(),
                        directory.clone(),
                        registry_metrics.clone(),
                    )
                    // A registration evolves the typed expansions of the default view's
                    // topics in its own transaction.
                    .with_registrations(Arc::new(
                        tables::expansion::registered::evolve::Evolution::new(tabler.clone()),
                    )),
                ),
                console: console_slot.clone(),
            },
        ),
        stop_rx.clone(),
    ));
    let principal_rules = Arc::new(match &config.tls_principal_rules {
        Some(r) => listener::principal::PrincipalRules::parse(r).map_err(anyhow::Error::msg)?,
        None => listener::principal::PrincipalRules::default(),
    });
    let view_metrics = broker::metrics::ViewMetrics::default();
    metrics.register_kafka_views(&view_metrics);
    let shared = KafkaShared {
        config: &config,
        directory: directory.clone(),
        schema_validator: Arc::new(RegistryValidator(registry::validate::Validator::new(
            catalog_dyn.clone(),
            registry_metrics.clone(),
        ))),
        tls: &tls,
        limits,
        metrics: metrics.clone(),
        principal_rules,
        view_metrics,
        stop: stop_rx.clone(),
    };
    if config.kafka_offsets_topic {
        broker::offsets_topic::ensure(default_view.as_ref())
            .await
            .context("creating __consumer_offsets")?;
    }
    let console_addresses = match &leases {
        Some(l) => crate::console_parts::Addresses::Cluster(
            l.addresses.iter().map(|a| a.addr).collect(),
            l.epochs.clone(),
        ),
        None => crate::console_parts::Addresses::Own(
            config.kafka_listen.iter().map(|l| l.addr).collect(),
        ),
    };
    let kafka_broker = start_kafka(
        &shared,
        broker::authz::DEFAULT_VIEW,
        Vec::new(),
        kafka
            .into_iter()
            .zip(config.kafka_listen.iter().cloned())
            .collect(),
        leases,
        default_view.clone(),
        tabler.clone(),
        &mut tasks,
    )
    .await?;
    metrics.register_kafka(&kafka_broker.metrics);
    let scrub_metrics = crate::scrub::ScrubMetrics::default();
    metrics.register_scrub(&scrub_metrics);
    let overview = Arc::new(console::overview::Overview::default());
    tasks.spawn(crate::console_parts::sample(
        overview.clone(),
        metrics.clone(),
        node_catalog.clone(),
        stop_rx.clone(),
    ));
    // Its Kafka requests are made as if to this node's first listener.
    if let Some(first) = config.kafka_listen.first() {
        let _ = console_slot.set(Arc::new(console::Console::new(console::Parts {
            kafka: console::kafka::Kafka::new(kafka_broker.clone(), first.addr, tls.http.is_some()),
            s3: Arc::new(s3_front),
            iceberg: console_rest.0,
            admin: console_rest.1,
            overview,
            nodes: Arc::new(crate::console_parts::NodeView {
                catalog: node_catalog.clone(),
                erasure: format!("{}+{}", config.storage.k, config.storage.m),
                addresses: console_addresses,
                scrub: scrub_metrics.clone(),
                views: config.views.clone(),
            }),
            secure: tls.http.is_some(),
        })));
    }
    for ((view, listeners), (view_catalog, view_tabler)) in
        config.views.iter().zip(view_listeners).zip(view_tables)
    {
        start_kafka(
            &shared,
            &view.name,
            view.users.clone(),
            listeners
                .into_iter()
                .zip(view.kafka_listen.iter().cloned())
                .collect(),
            None,
            view_catalog,
            view_tabler,
            &mut tasks,
        )
        .await?;
    }
    let signalled = shutdown_signal();
    let scrub = crate::scrub::spawn(
        &background,
        catalog.clone(),
        Duration::from_secs(config.storage.scrub_interval_secs),
        scrub_metrics,
        stop_rx.clone(),
    );
    let usage_metrics = crate::usage::UsageMetrics::default();
    metrics.register_usage(&usage_metrics);
    let usage = background.spawn(crate::usage::run(
        catalog.clone(),
        usage_metrics,
        config.bucket_usage,
        stop_rx.clone(),
    ));
    let lifecycle = background.spawn(s3gw::lifecycle::worker::run(
        gateway,
        config.s3_lifecycle,
        lifecycle_metrics,
        stop_rx.clone(),
    ));
    // Not awaited at shutdown: what a stopped collection leaves is collected next start.
    drop(background.spawn(collect_orphans(node_catalog.clone())));
    println!(
        "eddy ready: s3 {} kafka {} http {} (data on {} drives, {}+{})",
        config.s3_listen,
        every_kafka_listener(&config)
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(","),
        config.http_listen,
        config.storage.drives.len(),
        config.storage.k,
        config.storage.m,
    );
    tracing::info!("eddy ready");

    signalled.await;
    let _ = stop_tx.send(true);
    while tasks.join_next().await.is_some() {}
    // The trail's last events (those of the requests just drained) are appended.
    let _ = audit_writer.await;
    let _ = scrub.await;
    let _ = lifecycle.await;
    let _ = usage.await;
    let _ = sealing.await;
    for s in view_sealing.into_iter().chain(maintenance) {
        let _ = s.await;
    }
    background.stop().await;
    drop(catalog);
    tokio::task::spawn_blocking(move || node_catalog.shutdown()).await?;
    tracing::info!("eddy stopped");
    Ok(())
}

/// What every broker view's Kafka front end shares.
struct KafkaShared<'a> {
    config: &'a ServeConfig,
    directory: Arc<iam::Directory>,
    /// The schema registry's record checks (schemas are shared by every view).
    schema_validator: Arc<RegistryValidator>,
    tls: &'a Listeners,
    limits: listener::Limits,
    metrics: Arc<Metrics>,
    principal_rules: Arc<listener::principal::PrincipalRules>,
    view_metrics: broker::metrics::ViewMetrics,
    stop: watch::Receiver<bool>,
}

/// Starts one broker view: its broker over `catalog` (the view's names), its background
/// work (lag, retention, transaction timeouts, compaction) and its listeners.
#[allow(clippy::too_many_arguments)]
async fn start_kafka(
    shared: &KafkaShared<'_>,
    view: &str,
    users: Vec<String>,
    listeners: Vec<(TcpListener, crate::listen::KafkaListener)>,
    leases: Option<crate::cluster::Leases>,
    catalog: Arc<dyn Catalog>,
    tabler: Arc<tables::Tabler>,
    tasks: &mut tokio::task::JoinSet<()>,
) -> anyhow::Result<Arc<broker::Broker>> {
    let config = shared.config;
    // A cluster node's brokers are the whole cluster's addresses, whichever it holds.
    let listens: Vec<crate::listen::KafkaListener> = match &leases {
        Some(l) => l.addresses.clone(),
        None => listeners.iter().map(|(_, l)| l.clone()).collect(),
    };
    let mut kafka_config = broker::BrokerConfig::new(listens.iter().map(|l| l.addr).collect());
    kafka_config.listener_classes = listener_classes(&listens)?;
    kafka_config.listener_protocols = listens
        .iter()
        .filter(|l| !l.named_by_protocol())
        .map(|l| (l.name.clone(), l.protocol.name().to_owned()))
        .collect();
    kafka_config.advertised_listeners = config.kafka_advertised.clone();
    kafka_config.view = view.to_owned();
    kafka_config.cluster_id = broker::cluster::cluster_id(catalog.blobs().drives().set_id(), view);
    kafka_config.view_users = users;
    kafka_config.view_metrics = Some(shared.view_metrics.clone());
    kafka_config.sasl_mechanisms = config.sasl_mechanisms.clone();
    kafka_config.sasl_session_lifetime = config.kafka_sasl_session_lifetime;
    kafka_config.directory = Some(shared.directory.clone());
    kafka_config.deny_unless_allowed = config.deny_unless_allowed;
    kafka_config.auto_create_topics = config.kafka_auto_create_topics;
    // The drives' common parent: the data dir when the drives are its subdirectories.
    kafka_config.log_dir = config
        .storage
        .drives
        .first()
        .and_then(|d| d.parent())
        .map_or_else(|| "eddy-data".to_owned(), |p| p.display().to_string());
    kafka_config.default_partitions = config.kafka_default_partitions;
    kafka_config.max_frame_bytes = config.kafka_max_frame_mb << 20;
    kafka_config.max_request_bytes_in_flight = config.kafka_max_request_mb_in_flight << 20;
    kafka_config.idle_timeout = config.idle_timeout;
    kafka_config.groups.initial_rebalance_delay =
        Duration::from_millis(config.kafka_group_initial_rebalance_delay_ms);
    kafka_config.groups.min_session_timeout =
        Duration::from_millis(config.kafka_group_min_session_timeout_ms);
    kafka_config.groups.consumer.session_timeout =
        Duration::from_millis(config.kafka_consumer_group_session_timeout_ms);
    kafka_config.groups.consumer.heartbeat_interval =
        Duration::from_millis(config.kafka_consumer_group_heartbeat_interval_ms);
    kafka_config.retention_check_interval =
        Duration::from_millis(config.kafka_retention_check_interval_ms);
    kafka_config.compaction_check_interval =
        Duration::from_millis(config.kafka_compaction_check_interval_ms);
    kafka_config.compaction.map_bytes = config.kafka_compaction_map_mb << 20;
    kafka_config.compaction.max_pass_bytes = config.kafka_compaction_pass_mb << 20;
    kafka_config.fetch_session_slots = config.kafka_fetch_session_cache_slots;
    kafka_config.quota = broker::quota::QuotaConfig {
        window: Duration::from_secs(config.kafka_quota_window_size_seconds),
        windows: config.kafka_quota_window_num,
    };
    kafka_config.txn = broker::txn::TxnConfig {
        max_timeout: Duration::from_millis(config.kafka_transaction_max_timeout_ms),
        abort_interval: Duration::from_millis(config.kafka_transaction_abort_interval_ms),
        id_expiration: Duration::from_millis(config.kafka_transactional_id_expiration_ms),
        // A produce on one node cannot add its partition to a transaction another node
        // coordinates (there is no request between nodes), so a cluster keeps every
        // client on the first protocol, which adds partitions at the coordinator.
        version: if leases.is_some() {
            1
        } else {
            config.kafka_transaction_version
        },
    };
    // `__consumer_offsets` mirrors the default view's groups only.
    kafka_config.offsets_topic = config.kafka_offsets_topic && view == broker::authz::DEFAULT_VIEW;
    kafka_config.address_leases = leases
        .as_ref()
        .map(|l| l.epochs.clone() as Arc<dyn broker::AddressLeases>);
    let kafka_broker = broker::Broker::new(catalog, kafka_config).await;
    let _ = kafka_broker
        .table_sealer
        .set(Arc::new(TablerSealer(tabler)));
    let _ = kafka_broker
        .schema_validator
        .set(shared.schema_validator.clone());
    let stop_rx = &shared.stop;
    tasks.spawn(broker::group::lag::run(
        kafka_broker.clone(),
        kafka_broker.config.lag_interval,
        stop_rx.clone(),
    ));
    tasks.spawn(broker::retention::run(
        kafka_broker.clone(),
        kafka_broker.config.retention_check_interval,
        stop_rx.clone(),
    ));
    tasks.spawn(broker::txn::coordinator::run(
        kafka_broker.txns.clone(),
        kafka_broker.config.txn.abort_interval,
        stop_rx.clone(),
    ));
    tasks.spawn(broker::compaction::run(
        kafka_broker.clone(),
        kafka_broker.config.compaction_check_interval,
        stop_rx.clone(),
    ));
    let serving = KafkaServing {
        broker: kafka_broker.clone(),
        kafka_ssl: shared.tls.kafka_ssl.clone(),
        kafka_sasl_ssl: shared.tls.kafka_sasl_ssl.clone(),
        limits: shared.limits,
        metrics: shared.metrics.clone(),
        principal_rules: shared.principal_rules.clone(),
        handshake_timeout: config.idle_timeout,
    };
    for (l, listen) in listeners {
        tasks.spawn(serving.serve(l, listen, stop_rx.clone(), true));
    }
    if let Some(leases) = leases {
        tasks.spawn(crate::cluster::run(leases, serving, stop_rx.clone()));
    }
    Ok(kafka_broker)
}

/// Every Kafka listener, the default view's and the `[[views]]` ones'.
fn every_kafka_listener(
    config: &ServeConfig,
) -> impl Iterator<Item = &crate::listen::KafkaListener> {
    config
        .kafka_listen
        .iter()
        .chain(config.views.iter().flat_map(|v| v.kafka_listen.iter()))
}

/// The TLS configurations of the listeners that serve TLS.
struct Listeners {
    s3: Option<Arc<Tls>>,
    http: Option<Arc<Tls>>,
    /// Shared by every `SSL://` Kafka listener; mutual when a client CA is configured.
    kafka_ssl: Option<Arc<Tls>>,
    /// Shared by every `SASL_SSL://` Kafka listener (clients authenticate with SASL, not
    /// certificates).
    kafka_sasl_ssl: Option<Arc<Tls>>,
}

impl Listeners {
    fn load(config: &ServeConfig, metrics: &listener::ListenerMetrics) -> anyhow::Result<Self> {
        let Some(files) = &config.tls else {
            return Ok(Self {
                s3: None,
                http: None,
                kafka_ssl: None,
                kafka_sasl_ssl: None,
            });
        };
        // The HTTP ports never ask for client certificates: clients there sign requests.
        let server_only = TlsFiles {
            client_ca: None,
            ..files.clone()
        };
        let load = |files: &TlsFiles, alpn: &[&[u8]], name: &str| {
            Tls::load(files.clone(), alpn, name, metrics)
                .with_context(|| format!("loading the {name} listener's TLS certificate"))
        };
        let http1: &[&[u8]] = &[b"http/1.1"];
        Ok(Self {
            s3: config
                .s3_listen
                .tls
                .then(|| load(&server_only, http1, "s3"))
                .transpose()?,
            http: config
                .http_listen
                .tls
                .then(|| load(&server_only, http1, "http"))
                .transpose()?,
            kafka_ssl: every_kafka_listener(config)
                .any(|l| l.protocol == SecurityProtocol::Ssl)
                .then(|| load(files, &[], "kafka"))
                .transpose()?,
            kafka_sasl_ssl: every_kafka_listener(config)
                .any(|l| l.protocol == SecurityProtocol::SaslSsl)
                .then(|| load(&server_only, &[], "kafka"))
                .transpose()?,
        })
    }

    fn all(&self) -> Vec<Arc<Tls>> {
        [&self.s3, &self.http, &self.kafka_ssl, &self.kafka_sasl_ssl]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }
}

/// Reloads every TLS listener's certificate and key on SIGHUP (new handshakes use them;
/// open connections keep theirs); a file that does not load leaves the old ones in use.
async fn reload_on_sighup(tls: Vec<Arc<Tls>>) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hup = match signal(SignalKind::hangup()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGHUP; certificates are not reloadable");
            return;
        }
    };
    while hup.recv().await.is_some() {
        for t in &tls {
            match t.reload() {
                Ok(()) => tracing::info!(tls = ?t, "TLS certificate reloaded"),
                Err(e) => {
                    tracing::error!(tls = ?t, error = %e, "TLS reload failed; the old certificate stays")
                }
            }
        }
    }
}

/// The Kafka listeners grouped by listener name (their security protocol's, unless they
/// name themselves), as the broker numbers them.
pub fn listener_classes(
    listeners: &[crate::listen::KafkaListener],
) -> anyhow::Result<Vec<(String, Vec<std::net::SocketAddr>)>> {
    let mut classes: BTreeMap<&str, Vec<std::net::SocketAddr>> = BTreeMap::new();
    for l in listeners {
        classes.entry(l.name.as_str()).or_default().push(l.addr);
    }
    let classes: Vec<(String, Vec<std::net::SocketAddr>)> = classes
        .into_iter()
        .map(|(name, addrs)| (name.to_owned(), addrs))
        .collect();
    broker::Cluster::with_classes(classes.clone()).map_err(anyhow::Error::msg)?;
    Ok(classes)
}

/// Removes blobs a crash left without a catalog record, off the serving threads.
async fn collect_orphans(catalog: Arc<NodeCatalog>) {
    // The collection lists and deletes blobs on the drives: on a blocking thread, which
    // waits there for the catalog's reads.
    let runtime = tokio::runtime::Handle::current();
    match tokio::task::spawn_blocking(move || runtime.block_on(catalog.collect_orphans())).await {
        Ok(Ok(r)) if r.removed > 0 => tracing::info!(
            removed = r.removed,
            checked = r.candidates,
            "removed orphaned blobs"
        ),
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "collecting orphaned blobs failed"),
        Err(e) => tracing::warn!(error = %e, "collecting orphaned blobs panicked"),
    }
}

/// How DeleteRecords has a topic's expansions read what it removes: the tabler seals the
/// topic first.
struct TablerSealer(Arc<tables::Tabler>);

impl broker::TableSealer for TablerSealer {
    fn seal<'a>(
        &'a self,
        topic: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async move {
            self.0
                .seal(topic)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    }
}

/// The schema registry's validator, as the broker's produce path calls it.
struct RegistryValidator(registry::validate::Validator);

impl broker::schema_validation::SchemaValidator for RegistryValidator {
    fn check<'a>(
        &'a self,
        topic: &'a str,
        key: bool,
        strategy: &'a str,
        payloads: Vec<Option<bytes::Bytes>>,
    ) -> broker::schema_validation::Checked<'a> {
        use registry::validate::{Part, Strategy};
        Box::pin(async move {
            // The topic config only takes the three strategies.
            let strategy = Strategy::named(strategy).unwrap_or(Strategy::TopicName);
            let part = if key { Part::Key } else { Part::Value };
            self.0
                .check(topic, part, strategy, &payloads)
                .await
                .map_err(|e| e.to_string())
        })
    }
}

/// The pipelines runtime and its task: when `serve` returns, the pipelines stop and the
/// function instances they run are killed.
struct PipelinesRunning(Arc<pipelines::Runtime>, tokio::task::JoinHandle<()>);

impl Drop for PipelinesRunning {
    fn drop(&mut self) {
        self.1.abort();
        self.0.shutdown();
    }
}
