//! Which brokers' work this node does. A single node is every broker. A cluster node
//! (docs/scale-out.md) is the brokers whose addresses it holds leases on: it coordinates
//! their groups and transactional ids and runs retention and compaction for the
//! partitions they lead, and commits that work under the broker's lease, so a node that
//! lost the address (paused past its lease, say) cannot overwrite what the new holder
//! does.

use std::sync::Arc;

use catalog::Lease;

use crate::{AddressLeases, Cluster};

/// The brokers this node acts for.
#[derive(Debug, Clone)]
pub struct Holdings {
    cluster: Cluster,
    leases: Option<Arc<dyn AddressLeases>>,
}

impl Holdings {
    /// A node of `cluster`: every broker, or (with `leases`) the ones it holds.
    pub fn new(cluster: Cluster, leases: Option<Arc<dyn AddressLeases>>) -> Self {
        Self { cluster, leases }
    }

    /// The leases work for broker `node` is committed under: nothing on a single node;
    /// in a cluster, its address at the epoch held, or at none (-1, which the catalog
    /// refuses as fenced) once this node lost it.
    pub fn under(&self, node: i32) -> Vec<Lease> {
        let Some(leases) = &self.leases else {
            return Vec::new();
        };
        let Some(address) = self.cluster.address(node) else {
            return Vec::new();
        };
        vec![Lease {
            address: address.to_string(),
            epoch: leases.epoch(address).unwrap_or(-1),
        }]
    }

    /// Whether this is a cluster node: the other brokers' work is done by other nodes,
    /// whose in-memory state this node does not see.
    pub fn is_cluster(&self) -> bool {
        self.leases.is_some()
    }

    /// Whether this node does broker `node`'s work now.
    pub fn holds(&self, node: i32) -> bool {
        match &self.leases {
            None => true,
            Some(leases) => self
                .cluster
                .address(node)
                .is_some_and(|a| leases.epoch(a).is_some()),
        }
    }

    /// Whether this node coordinates the group or transactional id `key`.
    pub fn coordinates(&self, key: &str) -> bool {
        self.holds(self.cluster.coordinator(key))
    }

    /// The leases a coordinator's write for `key` is committed under.
    pub fn under_coordinator(&self, key: &str) -> Vec<Lease> {
        self.under(self.cluster.coordinator(key))
    }

    /// Whether this node leads the partition.
    pub fn leads(&self, topic: &str, partition: i32) -> bool {
        self.holds(self.cluster.leader(topic, partition))
    }

    /// The leases a partition leader's write is committed under.
    pub fn under_leader(&self, topic: &str, partition: i32) -> Vec<Lease> {
        self.under(self.cluster.leader(topic, partition))
    }
}
