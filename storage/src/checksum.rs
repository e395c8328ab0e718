//! Block checksums. Every block on a drive carries one, keyed by where the block belongs
//! (object, shard, position), so a block that is corrupt or misplaced is detected and
//! never returned as data.

use xxhash_rust::xxh3::Xxh3;

/// xxh3-64 over the block's identity, its position and its parts.
pub fn block(identity: &[u8], position: u64, parts: &[&[u8]]) -> u64 {
    let mut h = Xxh3::new();
    h.update(identity);
    h.update(&position.to_le_bytes());
    for p in parts {
        h.update(p);
    }
    h.digest()
}

/// xxh3-64 of one byte string (headers and trailers).
pub fn bytes(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}
