//! The durable part of a group, stored in the catalog's `GroupRecord`: what a restarted
//! coordinator needs so that members that keep heartbeating keep their generation and
//! assignment, and what DescribeGroups shows.

use serde::{Deserialize, Serialize};

/// Format version, first byte of the encoded state.
const VERSION: u8 = 1;

/// A group as stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StoredGroup {
    /// Generation.
    pub generation: i32,
    /// Protocol type; `None` for a group that only has committed offsets.
    pub protocol_type: Option<String>,
    /// The selected protocol.
    pub protocol_name: Option<String>,
    /// The leader's member id.
    pub leader: Option<String>,
    /// Members of the generation (empty for an empty group).
    pub members: Vec<StoredMember>,
}

/// A member as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMember {
    /// Member id.
    pub id: String,
    /// `group.instance.id`.
    pub instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client address.
    pub client_host: String,
    /// Session timeout, ms.
    pub session_timeout_ms: u32,
    /// Rebalance timeout, ms.
    pub rebalance_timeout_ms: u32,
    /// Protocols and metadata.
    pub protocols: Vec<(String, Vec<u8>)>,
    /// Assignment.
    pub assignment: Vec<u8>,
}

/// `GroupRecord::state` of a state format: its version byte, then postcard.
pub(crate) fn encode_versioned<T: Serialize>(version: u8, state: &T) -> Vec<u8> {
    let mut out = vec![version];
    // Serializing plain owned data into a Vec cannot fail.
    out.extend(postcard::to_stdvec(state).unwrap_or_default());
    out
}

/// The state of `version` in `GroupRecord::state`; `None` for another version.
pub(crate) fn decode_versioned<T: serde::de::DeserializeOwned>(
    version: u8,
    state: &[u8],
) -> Option<T> {
    match state.split_first() {
        Some((v, rest)) if *v == version => postcard::from_bytes(rest).ok(),
        _ => None,
    }
}

impl StoredGroup {
    /// Encodes for `GroupRecord::state`.
    pub fn encode(&self) -> Vec<u8> {
        encode_versioned(VERSION, self)
    }

    /// Decodes `GroupRecord::state`; `None` for an unknown format.
    pub fn decode(state: &[u8]) -> Option<Self> {
        decode_versioned(VERSION, state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let g = StoredGroup {
            generation: 7,
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            leader: Some("m-1".into()),
            members: vec![StoredMember {
                id: "m-1".into(),
                instance_id: Some("i".into()),
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                session_timeout_ms: 6000,
                rebalance_timeout_ms: 30000,
                protocols: vec![("range".into(), vec![1, 2])],
                assignment: vec![3],
            }],
        };
        assert_eq!(StoredGroup::decode(&g.encode()), Some(g));
        assert_eq!(StoredGroup::decode(&[9, 1, 2]), None);
        assert_eq!(StoredGroup::decode(&[]), None);
    }
}
