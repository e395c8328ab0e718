//! Address leases: which node serves which of the cluster's Kafka addresses. Every node
//! is given the whole list; a node serves (binds) only the addresses it holds a lease on,
//! renews them every round, and takes its fair share of the free ones: an address never
//! leased, released, or whose holder stopped renewing (a dead or paused node), or whose
//! holder's liveness lock is free (a node whose process ended: `super::liveness`). Each
//! taking bumps the lease's epoch; a commit made for an address checks, in its own
//! transaction, that its node still holds that address at that epoch (fencing), so a node
//! that was paused past its lease cannot commit once it wakes.
//!
//! `eddy_leases (address, node, epoch, expires_at)`; `eddy_nodes.seen_at` is each node's
//! heartbeat, which counts the live nodes the addresses are spread over, and
//! `eddy_nodes.liveness_since` when the node last took its liveness lock (null for
//! builds before it, which are never taken for dead by its absence).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use tokio_postgres::{Client, IsolationLevel};

use crate::error::{CatalogError, CatalogResult};

/// The lease tables, created when missing.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS eddy_leases (
    address text PRIMARY KEY,
    node text,
    epoch bigint NOT NULL DEFAULT 0,
    expires_at timestamptz NOT NULL DEFAULT '-infinity'
);
ALTER TABLE eddy_nodes ADD COLUMN IF NOT EXISTS seen_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE eddy_nodes ADD COLUMN IF NOT EXISTS liveness_since timestamptz;
";

/// The nodes other than `$1` whose process has ended: they took a liveness lock once and
/// it is free now (PostgreSQL lists the advisory locks of every live session in
/// `pg_locks`; a two-key lock has `objsubid` 2).
fn dead_nodes_sql() -> String {
    format!(
        "SELECT n.name FROM eddy_nodes n WHERE n.liveness_since IS NOT NULL AND n.name <> $1 \
         AND NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' \
         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         AND l.classid = {}::oid AND l.objid = n.number::oid AND l.objsubid = 2 AND l.granted)",
        super::liveness::LOCK_CLASS
    )
}

/// Whether any of `addresses` is there for the taking now: unleased, expired, given
/// back, or held by a dead node (only with `trust_locks`: see `super::liveness`). Cheap
/// enough to ask several times a second, so a dead node's addresses move at once
/// rather than at the next round.
pub async fn vacant(
    client: &Client,
    me: &str,
    addresses: &[String],
    trust_locks: bool,
) -> CatalogResult<bool> {
    let dead: Vec<String> = if trust_locks {
        client
            .query(&dead_nodes_sql(), &[&me])
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect()
    } else {
        Vec::new()
    };
    let row = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM eddy_leases WHERE address = ANY($1) \
             AND (expires_at <= now() OR node = ANY($2)))",
            &[&addresses, &dead],
        )
        .await?;
    Ok(row.get(0))
}

/// The addresses a node holds, with their epochs.
pub type Held = BTreeMap<String, i64>;

/// How many of `addresses` each of `live` nodes should hold: all of them spread evenly,
/// the first ones in name order taking one more when they do not divide.
pub fn fair_share(addresses: usize, live: &[String], me: &str) -> usize {
    let n = live.len().max(1);
    let base = addresses / n;
    let extra = addresses % n;
    let rank = live.iter().position(|l| l == me).unwrap_or(n - 1);
    base + usize::from(rank < extra)
}

/// A wait before a lease round's `attempt`-th run again: random up to a ceiling that
/// doubles from 10 ms to 160 ms. Every round reads the rows the others write (heartbeats,
/// leases), so two at once fail to serialize and one runs again; run again at once, as
/// they were, the three nodes' rounds on a loaded machine collided again and again until
/// their leases ran out unrenewed and the addresses moved for nothing (2026-12-07, three
/// nodes on two busy cores: "lease round kept conflicting", then "address leases expired
/// unrenewed"). The rounds stay `SERIALIZABLE`: fencing needs PostgreSQL to see a
/// takeover's write of a lease row against a group commit's read of it
/// (`super::committer`).
fn jitter(attempt: u32) -> Duration {
    let ceiling_ms = 10u64 << attempt.clamp(1, 5).saturating_sub(1);
    Duration::from_millis(rand::random_range(1..=ceiling_ms))
}

/// Runs a round again after serialization failures for at most a third of the lease
/// timeout, when the next round is due anyway.
const RETRY_SHARE: u32 = 3;

/// One round of this node's leases: heartbeat, renew what it holds, take free addresses
/// up to its fair share and give back what it holds beyond it (the highest first).
/// With `trust_locks`, dead nodes (`super::liveness`) count as neither live nor holding.
/// Every serialization failure counts in `conflicts`. Returns what it holds afterwards.
pub async fn round(
    client: &mut Client,
    me: &str,
    addresses: &[String],
    timeout: Duration,
    trust_locks: bool,
    conflicts: &Counter,
) -> CatalogResult<Held> {
    let secs = timeout.as_secs_f64();
    let give_up = Instant::now() + timeout / RETRY_SHARE;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let t = client
            .build_transaction()
            .isolation_level(IsolationLevel::Serializable)
            .start()
            .await?;
        let outcome: CatalogResult<Held> = async {
            t.execute(
                "INSERT INTO eddy_leases (address) SELECT * FROM UNNEST($1::text[]) \
                 ON CONFLICT (address) DO NOTHING",
                &[&addresses],
            )
            .await?;
            t.execute(
                "UPDATE eddy_nodes SET seen_at = now() WHERE name = $1",
                &[&me],
            )
            .await?;
            let dead: Vec<String> = if trust_locks {
                t.query(&dead_nodes_sql(), &[&me])
                    .await?
                    .iter()
                    .map(|r| r.get(0))
                    .collect()
            } else {
                Vec::new()
            };
            let live: Vec<String> = t
                .query(
                    "SELECT name FROM eddy_nodes \
                     WHERE seen_at > now() - make_interval(secs => $1) \
                     AND name <> ALL($2) ORDER BY name",
                    &[&secs, &dead],
                )
                .await?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let mut held: Held = t
                .query(
                    "UPDATE eddy_leases SET expires_at = now() + make_interval(secs => $2) \
                     WHERE node = $1 AND expires_at > now() AND address = ANY($3) \
                     RETURNING address, epoch",
                    &[&me, &secs, &addresses],
                )
                .await?
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect();
            let share = fair_share(addresses.len(), &live, me);
            if held.len() < share {
                let free: Vec<String> = t
                    .query(
                        "SELECT address FROM eddy_leases \
                         WHERE (expires_at <= now() OR node = ANY($3)) AND address = ANY($1) \
                         ORDER BY address LIMIT $2",
                        &[&addresses, &((share - held.len()) as i64), &dead],
                    )
                    .await?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                for r in t
                    .query(
                        "UPDATE eddy_leases SET node = $1, epoch = epoch + 1, \
                         expires_at = now() + make_interval(secs => $2) \
                         WHERE address = ANY($3) RETURNING address, epoch",
                        &[&me, &secs, &free],
                    )
                    .await?
                {
                    held.insert(r.get(0), r.get(1));
                }
            } else if held.len() > share {
                let surplus: Vec<String> = held
                    .keys()
                    .rev()
                    .take(held.len() - share)
                    .cloned()
                    .collect();
                t.execute(
                    "UPDATE eddy_leases SET expires_at = '-infinity' \
                     WHERE node = $1 AND address = ANY($2)",
                    &[&me, &surplus],
                )
                .await?;
                for a in surplus {
                    held.remove(&a);
                }
            }
            Ok(held)
        }
        .await;
        let committed = match outcome {
            Ok(held) => t.commit().await.map(|()| held).map_err(CatalogError::from),
            Err(e) => Err(e),
        };
        match committed {
            Ok(held) => return Ok(held),
            Err(CatalogError::Conflict(_)) => conflicts.inc(),
            Err(e) => return Err(e),
        };
        if Instant::now() >= give_up {
            return Err(CatalogError::Conflict(
                "lease round kept conflicting".into(),
            ));
        }
        tokio::time::sleep(jitter(attempt)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::fair_share;

    #[test]
    fn addresses_spread_evenly_over_live_nodes() {
        let live: Vec<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
        assert_eq!(fair_share(3, &live, "a"), 2);
        assert_eq!(fair_share(3, &live, "b"), 1);
        assert_eq!(fair_share(3, &live[..1], "a"), 3);
        // A node not counted live yet takes a share as the last one.
        assert_eq!(fair_share(3, &live, "c"), 1);
    }
}
