//! The brokers: every Kafka listener address is one, numbered by its position in the
//! sorted address list. A partition's leader and a group's coordinator are picked by
//! hashing onto that list, so every address agrees without talking to the others.
//!
//! Listeners of different security protocols are Kafka's named listeners: each protocol
//! (a listener class: `PLAINTEXT`, `SSL`, ...) lists the same number of addresses, node
//! `i` is the `i`th address of every class, and a client is told the brokers of the class
//! it connected to, so a TLS client is never sent to a plaintext port. A class may have a
//! name of its own (`INTERNAL`, `EXTERNAL`: two plaintext classes, one for clients inside
//! a container network and one for the host) and advertised addresses, Kafka's
//! `advertised.listeners`: what clients of that listener are told to connect to.
//!
//! The cluster id comes from the drive set's id ([`cluster_id`]), so every node over the
//! same drives reports the same one and another store at the same address does not.

use std::net::{IpAddr, SocketAddr};

/// The Kafka cluster id of a broker view over the drive set `set_id` (`""`: the default
/// view): a name-based UUID of the set's id (of the view's name under it, for a named
/// view, which is a cluster of its own to its clients), written as Kafka writes its own
/// (URL-safe base64 of the 16 bytes, unpadded). Clients name it back in ApiVersions v5
/// to find out whether an address still reaches the cluster they knew.
pub fn cluster_id(set_id: &str, view: &str) -> String {
    use base64::Engine;
    let store = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, set_id.as_bytes());
    let id = if view.is_empty() {
        store
    } else {
        uuid::Uuid::new_v5(&store, view.as_bytes())
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id.as_bytes())
}

/// One security protocol's sorted broker addresses.
#[derive(Debug, Clone)]
struct Class {
    name: String,
    brokers: Vec<SocketAddr>,
}

/// The brokers, by listener class.
#[derive(Debug, Clone)]
pub struct Cluster {
    classes: Vec<Class>,
    /// Advertised host and port, by bound listener address.
    advertised: std::collections::HashMap<SocketAddr, (String, u16)>,
    /// Security protocol of each class named otherwise.
    protocols: std::collections::HashMap<String, String>,
}

fn sorted(mut listeners: Vec<SocketAddr>) -> Vec<SocketAddr> {
    listeners.sort();
    listeners.dedup();
    listeners
}

/// Whether a listener bound at `bound` is the one a client reached at `reached`.
fn serves(bound: SocketAddr, reached: SocketAddr) -> bool {
    bound == reached || (bound.ip().is_unspecified() && bound.port() == reached.port())
}

impl Cluster {
    /// The cluster of these plaintext listener addresses (order does not matter).
    pub fn new(listeners: Vec<SocketAddr>) -> Self {
        Self {
            classes: vec![Class {
                name: "PLAINTEXT".into(),
                brokers: sorted(listeners),
            }],
            advertised: Default::default(),
            protocols: Default::default(),
        }
    }

    /// The cluster of these listener classes (a security protocol's name and its
    /// addresses); every class must have as many addresses as the others.
    pub fn with_classes(classes: Vec<(String, Vec<SocketAddr>)>) -> Result<Self, String> {
        let classes: Vec<Class> = classes
            .into_iter()
            .map(|(name, brokers)| Class {
                name,
                brokers: sorted(brokers),
            })
            .collect();
        let Some(first) = classes.first() else {
            return Err("no Kafka listener".into());
        };
        if let Some(odd) = classes
            .iter()
            .find(|c| c.brokers.len() != first.brokers.len())
        {
            return Err(format!(
                "every listener protocol needs one address per broker: {} has {}, {} has {}",
                first.name,
                first.brokers.len(),
                odd.name,
                odd.brokers.len()
            ));
        }
        Ok(Self {
            classes,
            advertised: Default::default(),
            protocols: Default::default(),
        })
    }

    /// The same brokers with advertised addresses (by bound address) and the security
    /// protocols of classes with names of their own.
    pub fn with_advertised(
        mut self,
        advertised: Vec<(SocketAddr, String, u16)>,
        protocols: Vec<(String, String)>,
    ) -> Self {
        self.advertised = advertised
            .into_iter()
            .map(|(bound, host, port)| (bound, (host, port)))
            .collect();
        self.protocols = protocols.into_iter().collect();
        self
    }

    /// The security protocol of the listener a client reached (its class's name unless
    /// the class named itself).
    pub fn listener_protocol(&self, reached: SocketAddr) -> &str {
        let name = self.listener_name(reached);
        self.protocols.get(name).map_or(name, String::as_str)
    }

    /// How many brokers there are.
    pub fn size(&self) -> usize {
        self.classes.first().map_or(0, |c| c.brokers.len())
    }

    fn class_of(&self, reached: SocketAddr) -> Option<&Class> {
        self.classes
            .iter()
            .find(|c| c.brokers.iter().any(|b| serves(*b, reached)))
    }

    /// The node id of a listener address (its position in its class).
    pub fn node_of(&self, listener: SocketAddr) -> i32 {
        self.class_of(listener)
            .and_then(|c| c.brokers.iter().position(|a| *a == listener))
            .unwrap_or(0) as i32
    }

    /// The security protocol of the listener a client reached (`PLAINTEXT`, `SSL`).
    pub fn listener_name(&self, reached: SocketAddr) -> &str {
        self.class_of(reached)
            .map_or("PLAINTEXT", |c| c.name.as_str())
    }

    fn pick(&self, key: &[u8]) -> i32 {
        let n = self.size().max(1) as u64;
        (xxhash_rust::xxh3::xxh3_64(key) % n) as i32
    }

    /// A node's address in the first listener class (the one its lease is taken on in
    /// a cluster of nodes).
    pub fn address(&self, node: i32) -> Option<SocketAddr> {
        let i = usize::try_from(node).ok()?;
        self.classes.first()?.brokers.get(i).copied()
    }

    /// The node leading a partition: the topic's hash picks the node of partition 0 and
    /// the rest follow round-robin, as Kafka's own assignment does, so a topic with at
    /// least as many partitions as nodes uses every node. (Hashing each partition alone
    /// left a node without any of a 12-partition topic in about 2% of topics.)
    pub fn leader(&self, topic: &str, partition: i32) -> i32 {
        let n = self.size().max(1) as i64;
        let first = i64::from(self.pick(topic.as_bytes()));
        ((first + i64::from(partition)).rem_euclid(n)) as i32
    }

    /// The node coordinating a group.
    pub fn coordinator(&self, group: &str) -> i32 {
        self.pick(group.as_bytes())
    }

    /// The host and port clients that reached us at `reached` should use for a node: its
    /// advertised address in the same listener class, else its address there. A listener
    /// on the unspecified address advertises the address the client reached it on.
    pub fn advertised(&self, node: i32, reached: SocketAddr) -> (String, u16) {
        let addr = self
            .class_of(reached)
            .and_then(|c| c.brokers.get(node as usize))
            .copied()
            .unwrap_or(reached);
        if let Some((host, port)) = self.advertised.get(&addr) {
            return (host.clone(), *port);
        }
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
    fn cluster_ids_are_the_set_s_and_differ_per_view() {
        let id = cluster_id("0123456789abcdef0123456789abcdef", "");
        assert_eq!(id.len(), 22, "{id}");
        assert_eq!(id, cluster_id("0123456789abcdef0123456789abcdef", ""));
        assert_ne!(id, cluster_id("fedcba9876543210fedcba9876543210", ""));
        assert_ne!(id, cluster_id("0123456789abcdef0123456789abcdef", "tenant"));
    }

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
        assert_eq!(used, [20, 20, 20]);
        for topic in ["a", "b", "orders", "spread-1f3a"] {
            let mut nodes: Vec<i32> = (0..3).map(|p| c.leader(topic, p)).collect();
            nodes.sort();
            assert_eq!(nodes, [0, 1, 2], "{topic}");
        }
    }

    #[test]
    fn named_classes_advertise_their_addresses() {
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        let c = Cluster::with_classes(vec![
            ("EXTERNAL".into(), vec![a("0.0.0.0:9092")]),
            ("INTERNAL".into(), vec![a("0.0.0.0:29092")]),
        ])
        .unwrap()
        .with_advertised(
            vec![
                (a("0.0.0.0:9092"), "localhost".into(), 9092),
                (a("0.0.0.0:29092"), "eddy".into(), 29092),
            ],
            vec![
                ("EXTERNAL".into(), "PLAINTEXT".into()),
                ("INTERNAL".into(), "PLAINTEXT".into()),
            ],
        );
        assert_eq!(
            c.advertised(0, a("172.18.0.2:29092")),
            ("eddy".into(), 29092)
        );
        assert_eq!(
            c.advertised(0, a("172.18.0.2:9092")),
            ("localhost".into(), 9092)
        );
        assert_eq!(c.listener_name(a("10.0.0.1:29092")), "INTERNAL");
        assert_eq!(c.listener_protocol(a("10.0.0.1:29092")), "PLAINTEXT");
    }

    #[test]
    fn each_listener_class_sees_its_own_addresses() {
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        let c = Cluster::with_classes(vec![
            (
                "PLAINTEXT".into(),
                vec![a("127.0.0.2:9092"), a("127.0.0.1:9092")],
            ),
            ("SSL".into(), vec![a("127.0.0.1:9093"), a("127.0.0.2:9093")]),
        ])
        .unwrap();
        assert_eq!(c.size(), 2);
        assert_eq!(c.node_of(a("127.0.0.2:9093")), 1);
        assert_eq!(c.listener_name(a("127.0.0.2:9093")), "SSL");
        assert_eq!(
            c.advertised(1, a("127.0.0.1:9093")),
            ("127.0.0.2".into(), 9093)
        );
        assert_eq!(
            c.advertised(1, a("127.0.0.1:9092")),
            ("127.0.0.2".into(), 9092)
        );
        assert!(
            Cluster::with_classes(vec![
                ("PLAINTEXT".into(), vec![a("127.0.0.1:9092")]),
                ("SSL".into(), vec![a("127.0.0.1:9093"), a("127.0.0.2:9093")]),
            ])
            .is_err()
        );
        // A wildcard listener serves whatever address it is reached on.
        let w = Cluster::with_classes(vec![("SSL".into(), vec![a("0.0.0.0:9093")])]).unwrap();
        assert_eq!(w.listener_name(a("10.0.0.5:9093")), "SSL");
        assert_eq!(
            w.advertised(0, a("10.0.0.5:9093")),
            ("10.0.0.5".into(), 9093)
        );
    }
}
