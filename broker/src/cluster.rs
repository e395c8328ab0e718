//! The brokers: every Kafka listener address is one, numbered by its position in the
//! sorted address list. A partition's leader and a group's coordinator are picked by
//! hashing onto that list, so every address agrees without talking to the others.

use std::net::{IpAddr, SocketAddr};

/// The sorted broker addresses.
#[derive(Debug, Clone)]
pub struct Cluster {
    brokers: Vec<SocketAddr>,
}

impl Cluster {
    /// The cluster of these listener addresses (order does not matter).
    pub fn new(mut listeners: Vec<SocketAddr>) -> Self {
        listeners.sort();
        listeners.dedup();
        Self { brokers: listeners }
    }

    /// Broker addresses by node id.
    pub fn brokers(&self) -> &[SocketAddr] {
        &self.brokers
    }

    /// The node id of a listener address.
    pub fn node_of(&self, listener: SocketAddr) -> i32 {
        self.brokers
            .iter()
            .position(|a| *a == listener)
            .unwrap_or(0) as i32
    }

    fn pick(&self, key: &[u8]) -> i32 {
        let n = self.brokers.len().max(1) as u64;
        (xxhash_rust::xxh3::xxh3_64(key) % n) as i32
    }

    /// The node leading a partition.
    pub fn leader(&self, topic: &str, partition: i32) -> i32 {
        let mut key = topic.as_bytes().to_vec();
        key.extend_from_slice(&partition.to_be_bytes());
        self.pick(&key)
    }

    /// The node coordinating a group.
    pub fn coordinator(&self, group: &str) -> i32 {
        self.pick(group.as_bytes())
    }

    /// The host and port clients should use for a node. A listener on the unspecified
    /// address advertises the address the client reached it on.
    pub fn advertised(&self, node: i32, reached: SocketAddr) -> (String, u16) {
        let addr = self.brokers.get(node as usize).copied().unwrap_or(reached);
        let ip: IpAddr = if addr.ip().is_unspecified() {
            reached.ip()
        } else {
            addr.ip()
        };
        (ip.to_string(), addr.port())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaders_are_stable_and_spread() {
        let addrs: Vec<SocketAddr> = ["127.0.0.3:9092", "127.0.0.1:9092", "127.0.0.2:9092"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        let c = Cluster::new(addrs.clone());
        assert_eq!(c.node_of("127.0.0.1:9092".parse().unwrap()), 0);
        assert_eq!(c.node_of("127.0.0.3:9092".parse().unwrap()), 2);
        let mut reversed = addrs;
        reversed.reverse();
        let d = Cluster::new(reversed);
        let mut used = [0; 3];
        for p in 0..60 {
            assert_eq!(c.leader("t", p), d.leader("t", p));
            used[c.leader("t", p) as usize] += 1;
        }
        assert!(used.iter().all(|n| *n > 5), "{used:?}");
    }
}
