//! The batch logs of a cluster's nodes: each node appends to its own log, in directory
//! `nodes/<number>` of every shared drive, and any node reads any node's batches. A
//! position's segment carries the writing node's number in its top 16 bits, so the
//! index entries PostgreSQL keeps (`tables::BatchEntry`, unchanged) say which log holds
//! the bytes; segment starts are LSNs of one node's log, far below 2^48.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use storage::DriveSet;
use storage::wal::{LogPosition, WalReader};

use crate::error::{CatalogError, CatalogResult};
use crate::read::BatchLog;

const NODE_SHIFT: u32 = 48;

/// The directory (under every drive) of node `node`'s log.
pub fn dir_of(node: u16) -> PathBuf {
    PathBuf::from(format!("nodes/{node}"))
}

/// `position` of node `node`'s log, as the catalog stores it.
pub fn position_of(node: u16, position: LogPosition) -> LogPosition {
    LogPosition {
        segment: (u64::from(node) << NODE_SHIFT) | position.segment,
        ..position
    }
}

/// The node and its own position, from a stored position.
pub fn split(position: &LogPosition) -> (u16, LogPosition) {
    let node = (position.segment >> NODE_SHIFT) as u16;
    let segment = position.segment & ((1 << NODE_SHIFT) - 1);
    (
        node,
        LogPosition {
            segment,
            ..*position
        },
    )
}

/// Readers of every node's log, opened on first use.
pub struct NodeLogs {
    set: Arc<DriveSet>,
    readers: Mutex<HashMap<u16, WalReader>>,
}

impl NodeLogs {
    /// The logs on `set`.
    pub fn new(set: Arc<DriveSet>) -> Self {
        Self {
            set,
            readers: Mutex::new(HashMap::new()),
        }
    }
}

impl BatchLog for NodeLogs {
    fn read(&self, position: &LogPosition, offset: u64, len: usize) -> CatalogResult<Vec<u8>> {
        let (node, own) = split(position);
        let reader = {
            let mut readers = self.readers.lock().unwrap_or_else(|p| p.into_inner());
            readers
                .entry(node)
                .or_insert_with(|| WalReader::new_in(self.set.clone(), &dir_of(node)))
                .clone()
        };
        reader
            .read(&own, offset, len)
            .map_err(CatalogError::Storage)
    }
}
