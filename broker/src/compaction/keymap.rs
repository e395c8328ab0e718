//! The cleaner's key-offset map: the latest offset of every key in the dirty range it
//! covers, with the key replaced by its 128-bit xxh3 hash so an entry has a fixed size
//! whatever the keys (as Kafka's dedupe buffer keys by a hash). Its size is bounded: a
//! pass that would need more entries covers only the dirty batches that fit, and the
//! next pass takes the rest.

use std::collections::HashMap;

use xxhash_rust::xxh3::xxh3_128;

/// Bytes one entry takes in the map, counting hash table overhead (measured: about 40
/// for `HashMap<u128, u64>` at its usual load).
pub const ENTRY_BYTES: usize = 40;

/// Latest offset per key hash.
pub struct KeyMap {
    latest: HashMap<u128, u64>,
    capacity: usize,
}

impl KeyMap {
    /// A map of at most about `bytes` bytes.
    pub fn with_bytes(bytes: usize) -> Self {
        Self {
            latest: HashMap::new(),
            capacity: (bytes / ENTRY_BYTES).max(1),
        }
    }

    /// Records that `key` is at `offset` (offsets come in increasing order).
    pub fn insert(&mut self, key: &[u8], offset: u64) {
        self.latest.insert(xxh3_128(key), offset);
    }

    /// Whether the map is at its bound.
    pub fn full(&self) -> bool {
        self.latest.len() >= self.capacity
    }

    /// The latest offset of `key` in the mapped range.
    pub fn latest(&self, key: &[u8]) -> Option<u64> {
        self.latest.get(&xxh3_128(key)).copied()
    }

    /// Keys mapped.
    pub fn len(&self) -> usize {
        self.latest.len()
    }

    /// Whether no key is mapped.
    pub fn is_empty(&self) -> bool {
        self.latest.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_latest_offset_and_knows_its_bound() {
        let mut m = KeyMap::with_bytes(3 * ENTRY_BYTES);
        m.insert(b"a", 1);
        m.insert(b"b", 2);
        m.insert(b"a", 3);
        assert_eq!(m.latest(b"a"), Some(3));
        assert_eq!(m.latest(b"b"), Some(2));
        assert_eq!(m.latest(b"c"), None);
        assert!(!m.full());
        m.insert(b"c", 4);
        assert!(m.full());
        assert_eq!(m.len(), 3);
    }
}
