//! The durable part of a consumer-protocol group (KIP-848), stored in the catalog's
//! `GroupRecord` like a classic group's but under its own version byte (2), so a build
//! that knows only classic groups refuses the record instead of taking it for an empty
//! classic group: the group epoch, the target assignment and what each member holds,
//! which a restarted coordinator needs for members to go on where they were.

use serde::{Deserialize, Serialize};

/// Format version, first byte of the encoded state (1 is the classic group's).
pub const VERSION: u8 = 2;

/// A consumer group as stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StoredConsumerGroup {
    /// Group epoch.
    pub epoch: i32,
    /// The epoch the target assignment was computed for.
    pub assignment_epoch: i32,
    /// The assignor of the target assignment.
    pub assignor: String,
    /// Subscribed topics' metadata at the group epoch: id, name, partition count.
    pub topics: Vec<(u128, String, u32)>,
    /// Members.
    pub members: Vec<StoredConsumerMember>,
}

/// A member as stored; partitions as (topic id, partitions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredConsumerMember {
    /// Member id.
    pub id: String,
    /// `group.instance.id`.
    pub instance_id: Option<String>,
    /// `client.rack`.
    pub rack_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client address.
    pub client_host: String,
    /// Rebalance timeout, ms.
    pub rebalance_timeout_ms: u32,
    /// Subscribed topic names.
    pub names: Vec<String>,
    /// Subscribed regex.
    pub regex: Option<String>,
    /// Requested server assignor.
    pub assignor: Option<String>,
    /// Member epoch.
    pub epoch: i32,
    /// Previous member epoch.
    pub previous_epoch: i32,
    /// Held partitions.
    pub assigned: Vec<(u128, Vec<u32>)>,
    /// Partitions being revoked.
    pub revoking: Vec<(u128, Vec<u32>)>,
    /// The member's target assignment.
    pub target: Vec<(u128, Vec<u32>)>,
    /// A static member that left for now.
    pub left: bool,
}

impl StoredConsumerGroup {
    /// Encodes for `GroupRecord::state`.
    pub fn encode(&self) -> Vec<u8> {
        crate::group::durable::encode_versioned(VERSION, self)
    }

    /// Decodes `GroupRecord::state`; `None` for another format.
    pub fn decode(state: &[u8]) -> Option<Self> {
        crate::group::durable::decode_versioned(VERSION, state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of a stored group are frozen: this build and every later one read them.
    #[test]
    fn encoding_is_frozen() {
        let g = StoredConsumerGroup {
            epoch: 3,
            assignment_epoch: 3,
            assignor: "uniform".into(),
            topics: vec![(5, "t".into(), 2)],
            members: vec![StoredConsumerMember {
                id: "m".into(),
                instance_id: None,
                rack_id: None,
                client_id: "c".into(),
                client_host: "/h".into(),
                rebalance_timeout_ms: 300,
                names: vec!["t".into()],
                regex: None,
                assignor: None,
                epoch: 3,
                previous_epoch: 2,
                assigned: vec![(5, vec![0, 1])],
                revoking: vec![],
                target: vec![(5, vec![0, 1])],
                left: false,
            }],
        };
        let bytes = g.encode();
        assert_eq!(
            bytes,
            [
                // Signed integers are zigzag varints: epoch 3 is 6, 2 is 4.
                2, 6, 6, 7, b'u', b'n', b'i', b'f', b'o', b'r', b'm', 1, 5, 1, b't', 2, 1, 1, b'm',
                0, 0, 1, b'c', 2, b'/', b'h', 172, 2, 1, 1, b't', 0, 0, 6, 4, 1, 5, 2, 0, 1, 0, 1,
                5, 2, 0, 1, 0
            ]
        );
        assert_eq!(StoredConsumerGroup::decode(&bytes), Some(g));
        assert_eq!(StoredConsumerGroup::decode(&[1, 0]), None);
    }
}
