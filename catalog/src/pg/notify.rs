//! Wakeups across nodes: a long-polling fetch parked on one node wakes for a commit made
//! on another. Each group commit that changes partitions sends `NOTIFY eddy_wake` inside
//! its transaction (PostgreSQL delivers it on commit, never for a rolled-back one), and
//! every node listens on a connection of its own and wakes its parked fetches. A node
//! skips its own notifications: its committer woke them already.
//!
//! Payload: `<node>;` then `<topic id, 32 hex digits>/<partition>` entries separated by
//! `,`, or `<node>;*` for every partition (a deleted topic, or more partitions than fit
//! in PostgreSQL's 8000-byte payload).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio_postgres::{AsyncMessage, NoTls};

use crate::wakeups::{Changed, Wakeups};

/// The channel.
pub const CHANNEL: &str = "eddy_wake";

/// Payloads stay below PostgreSQL's 8000-byte limit.
const MAX_PAYLOAD: usize = 7000;

/// The payload announcing `changed` from node `node`.
pub fn payload(node: u16, changed: &Changed) -> String {
    let mut out = format!("{node};");
    match changed {
        Changed::All => out.push('*'),
        Changed::Partitions(ps) => {
            for (i, (topic, partition)) in ps.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&format!("{topic:032x}/{partition}"));
                if out.len() > MAX_PAYLOAD {
                    return format!("{node};*");
                }
            }
        }
    }
    out
}

/// The sending node and what changed, from a payload (`None`: not one of ours).
pub fn parse(payload: &str) -> Option<(u16, Changed)> {
    let (node, rest) = payload.split_once(';')?;
    let node = node.parse().ok()?;
    if rest == "*" {
        return Some((node, Changed::All));
    }
    let mut ps = Vec::new();
    for entry in rest.split(',').filter(|e| !e.is_empty()) {
        let (topic, partition) = entry.split_once('/')?;
        ps.push((
            u128::from_str_radix(topic, 16).ok()?,
            partition.parse().ok()?,
        ));
    }
    Some((node, Changed::Partitions(ps)))
}

/// Listens until the process ends, reconnecting after a lost connection (and waking
/// every fetch then: notifications sent meanwhile are lost).
pub async fn listen(url: String, node: u16, wakeups: Arc<Wakeups>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        match listen_once(&url, node, &wakeups).await {
            Ok(()) => backoff = Duration::from_millis(100),
            Err(e) => tracing::warn!(error = %e, "listening for other nodes' commits failed"),
        }
        wakeups.wake_all();
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

async fn listen_once(url: &str, node: u16, wakeups: &Wakeups) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = tokio_postgres::connect(url, NoTls).await?;
    // The connection is driven here, its notifications handed over as they come; it
    // ends (and with it the channel) when the connection does.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let driver = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(m) = messages.next().await {
            match m {
                Ok(AsyncMessage::Notification(n)) => {
                    if tx.send(n.payload().to_owned()).is_err() {
                        break;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "the wakeup connection ended");
                    break;
                }
            }
        }
    });
    client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
    // Commits made before the LISTEN took effect were not announced to this node.
    wakeups.wake_all();
    while let Some(payload) = rx.recv().await {
        match parse(&payload) {
            Some((from, _)) if from == node => {}
            Some((_, changed)) => wakeups.wake_changed(&changed),
            // Unreadable, so whatever it announced is treated as changed: a fetch that
            // skipped a partition by its generation would otherwise miss the change.
            None => {
                tracing::debug!(payload, "unknown wakeup notification");
                wakeups.wake_all();
            }
        }
    }
    driver.abort();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_and_fall_back_to_everything() {
        let ps = vec![(u128::MAX, 0), (7, 12)];
        let Some((3, Changed::Partitions(back))) =
            parse(&payload(3, &Changed::Partitions(ps.clone())))
        else {
            panic!("no round trip")
        };
        assert_eq!(back, ps);
        let many: Vec<crate::wakeups::PartitionId> = (0..1000).map(|p| (1, p)).collect();
        let p = payload(9, &Changed::Partitions(many));
        assert!(p.len() < 8000);
        assert!(matches!(parse(&p), Some((9, Changed::All))));
        assert!(parse("x;1/2").is_none());
    }
}
