//! A cluster node's address leases (docs/scale-out.md): every node is given the whole
//! cluster's Kafka addresses and serves the ones it holds a lease on. A round every third
//! of the lease timeout renews them, takes free ones up to the node's fair share and
//! gives back the rest ([`catalog::pg::leases::round`]), and one runs at once when an
//! address falls vacant (asked every [`VACANCY_CHECK`]: a node that died, found by its
//! liveness lock, or one that gave an address back); this module binds what was taken,
//! stops serving what was lost or given back (its listener and its connections), and
//! keeps the broker's view of the epochs current for fencing.
//!
//! When rounds fail (PostgreSQL unreachable) past the lease timeout, the node stops
//! serving every address itself: the others will take them over.
//!
//! Operators see the rounds' times and the addresses held, taken and lost in the
//! catalog's metrics (`eddy_catalog_lease_round_seconds`, `eddy_catalog_addresses_*`).
//! Apart from addresses given back to a node that joined, an address a living node lost
//! is a takeover that rounds a whole lease timeout late let happen.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use catalog::pg::PgCatalog;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::kafka_serving::KafkaServing;
use crate::listen::KafkaListener;

/// The epochs of the addresses this node holds, as the broker sees them, each with the
/// moment its lease runs out by this node's own clock: the round that renewed it started
/// before PostgreSQL set its expiry, so the lease is valid at least that long. A node
/// that wakes from a pause past it stops answering for the address (`NOT_COORDINATOR`,
/// `NOT_LEADER_OR_FOLLOWER`) before its next round has told it what it lost.
#[derive(Debug, Default)]
pub struct Epochs(RwLock<HashMap<SocketAddr, (i64, Instant)>>);

impl broker::AddressLeases for Epochs {
    fn epoch(&self, address: SocketAddr) -> Option<i64> {
        let held = self.0.read().unwrap_or_else(|p| p.into_inner());
        let (epoch, until) = held.get(&address)?;
        (Instant::now() < *until).then_some(*epoch)
    }
}

/// Which pipeline cursors this node runs: each belongs to one of the cluster's Kafka
/// addresses (`pipelines::ownership::slot`), and runs where that address's lease is,
/// its hand-offs made under the lease.
pub struct PipelineCursors {
    /// The whole cluster's Kafka addresses, in the configured order.
    pub addresses: Vec<SocketAddr>,
    /// What this node holds now.
    pub epochs: Arc<Epochs>,
}

impl pipelines::ownership::Ownership for PipelineCursors {
    fn owns(&self, key: &str) -> Option<Vec<catalog::Lease>> {
        use broker::AddressLeases;
        let address = *self
            .addresses
            .get(pipelines::ownership::slot(key, self.addresses.len()))?;
        let epoch = self.epochs.epoch(address)?;
        Some(vec![catalog::Lease {
            address: address.to_string(),
            epoch,
        }])
    }
}

/// A node's leases: what it needs to run its rounds.
#[derive(Clone)]
pub struct Leases {
    catalog: Arc<PgCatalog>,
    /// The whole cluster's Kafka addresses.
    pub addresses: Vec<KafkaListener>,
    timeout: Duration,
    /// What the node holds now.
    pub epochs: Arc<Epochs>,
}

impl Leases {
    /// The leases of `catalog`'s node over the cluster's `addresses`.
    pub fn new(catalog: Arc<PgCatalog>, addresses: Vec<KafkaListener>, timeout: Duration) -> Self {
        Self {
            catalog,
            addresses,
            timeout,
            epochs: Arc::default(),
        }
    }
}

/// How often a node asks whether an address fell vacant between its rounds. A killed
/// node's addresses were served again 6-8 s after the kill with 6 s leases when only
/// rounds (every 2 s) and lease expiry moved them (measured 2026-12-02).
pub const VACANCY_CHECK: Duration = Duration::from_millis(250);

/// One address being served: what stops it.
struct Serving {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

/// Runs lease rounds until `stop` flips, binding and unbinding addresses as they come
/// and go.
pub async fn run(leases: Leases, serving: KafkaServing, mut stop: watch::Receiver<bool>) {
    let names: Vec<String> = leases
        .addresses
        .iter()
        .map(|l| l.addr.to_string())
        .collect();
    let by_name: HashMap<String, KafkaListener> = leases
        .addresses
        .iter()
        .map(|l| (l.addr.to_string(), l.clone()))
        .collect();
    let mut bound: HashMap<String, Serving> = HashMap::new();
    let mut last_ok = Instant::now();
    let every = leases.timeout / 3;
    loop {
        let started = Instant::now();
        let round = leases.catalog.lease_round(&names, leases.timeout).await;
        let metrics = leases.catalog.metrics();
        metrics
            .lease_round_seconds
            .observe(started.elapsed().as_secs_f64());
        match round {
            Ok(held) => {
                last_ok = Instant::now();
                // Fencing first: commits from now on are made under what is held now.
                leases.catalog.hold(&held);
                *leases.epochs.0.write().unwrap_or_else(|p| p.into_inner()) = held
                    .iter()
                    .filter_map(|(a, e)| {
                        Some((by_name.get(a)?.addr, (*e, started + leases.timeout)))
                    })
                    .collect();
                let lost: Vec<String> = bound
                    .keys()
                    .filter(|a| !held.contains_key(*a))
                    .cloned()
                    .collect();
                let changed = lost.len() + held.keys().filter(|a| !bound.contains_key(*a)).count();
                for a in lost {
                    tracing::info!(address = %a, "address lease lost or given back; no longer serving it");
                    metrics.addresses_lost.inc();
                    if let Some(s) = bound.remove(&a) {
                        let _ = s.stop.send(true);
                        drop(s.task);
                    }
                }
                let gained: Vec<&String> =
                    held.keys().filter(|a| !bound.contains_key(*a)).collect();
                for a in gained {
                    let Some(listen) = by_name.get(a) else {
                        continue;
                    };
                    // The address may still be bound by the node that held it last,
                    // closing; the next round tries again.
                    match TcpListener::bind(listen.addr).await {
                        Ok(l) => {
                            tracing::info!(address = %a, epoch = held[a], "address lease taken; serving it");
                            metrics.addresses_taken.inc();
                            let (tx, rx) = watch::channel(false);
                            let task = tokio::spawn(serving.serve(l, listen.clone(), rx, false));
                            bound.insert(a.clone(), Serving { stop: tx, task });
                        }
                        Err(e) => {
                            tracing::warn!(address = %a, error = %e, "cannot bind a leased address yet")
                        }
                    }
                }
                // The coordinators follow the leases, not the listeners: a group's state
                // is loaded once its broker's lease is held, even before its address binds.
                if changed > 0 {
                    serving.hand_over().await;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "address lease round failed");
                if last_ok.elapsed() >= leases.timeout && !bound.is_empty() {
                    tracing::warn!("address leases expired unrenewed: no longer serving any");
                    leases
                        .epochs
                        .0
                        .write()
                        .unwrap_or_else(|p| p.into_inner())
                        .clear();
                    metrics.addresses_lost.inc_by(bound.len() as u64);
                    for (_, s) in bound.drain() {
                        let _ = s.stop.send(true);
                    }
                    serving.hand_over().await;
                }
            }
        }
        metrics.addresses_held.set(bound.len() as i64);
        if !wait_for_round(&leases, &names, started + every, &mut stop).await {
            break;
        }
    }
    serving.close_groups();
    leases.catalog.metrics().addresses_held.set(0);
    for (_, s) in bound.drain() {
        let _ = s.stop.send(true);
        let _ = s.task.await;
    }
}

/// Waits until `next_round`, or less when an address falls vacant before; false when
/// `stop` flips.
async fn wait_for_round(
    leases: &Leases,
    names: &[String],
    next_round: Instant,
    stop: &mut watch::Receiver<bool>,
) -> bool {
    loop {
        let now = Instant::now();
        if now >= next_round {
            return true;
        }
        tokio::select! {
            _ = tokio::time::sleep(VACANCY_CHECK.min(next_round - now)) => {}
            _ = stop.changed() => return false,
        }
        // A failed check waits for the round, which reports the error.
        if leases
            .catalog
            .lease_vacant(names, leases.timeout)
            .await
            .unwrap_or(false)
        {
            return true;
        }
    }
}
