//! Small files kept whole on every drive (the checkpoint pointer): too small to be worth
//! striping, and readable from any one surviving drive. Each copy carries a version and a
//! checksum; the newest valid copy wins.

use crate::checksum;
use crate::drives::{DriveSet, write_durable};
use crate::error::{StorageError, StorageResult};

/// Writes `bytes` as version `version` of `name` on every online drive; succeeds when at
/// least `k` copies are durable, like a stripe would.
pub fn write(set: &DriveSet, name: &str, version: u64, bytes: &[u8]) -> StorageResult<()> {
    let mut file = Vec::with_capacity(bytes.len() + 16);
    file.extend_from_slice(&version.to_le_bytes());
    file.extend_from_slice(bytes);
    let sum = checksum::bytes(&file);
    file.extend_from_slice(&sum.to_le_bytes());
    let mut ok = 0;
    for d in set.drives().iter().filter(|d| d.is_online()) {
        match write_durable(&d.join("meta").join(name), &file) {
            Ok(()) => ok += 1,
            Err(e) => {
                tracing::warn!(drive = d.index, error = %e, "replicated write failed");
                d.record_error(true);
            }
        }
    }
    if ok < set.k() {
        return Err(StorageError::TooFewShards {
            present: ok,
            needed: set.k(),
        });
    }
    Ok(())
}

/// The newest valid copy of `name` and its version, if any drive has one.
pub fn read(set: &DriveSet, name: &str) -> Option<(u64, Vec<u8>)> {
    set.drives()
        .iter()
        .filter_map(|d| {
            let file = std::fs::read(d.join("meta").join(name)).ok()?;
            if file.len() < 16 {
                return None;
            }
            let (body, sum) = file.split_at(file.len() - 8);
            if checksum::bytes(body) != u64::from_le_bytes(sum.try_into().ok()?) {
                tracing::warn!(drive = d.index, name, "corrupt replicated file ignored");
                return None;
            }
            let version = u64::from_le_bytes(body[..8].try_into().ok()?);
            Some((version, body[8..].to_vec()))
        })
        .max_by_key(|(v, _)| *v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drives::DriveSetConfig;

    #[test]
    fn newest_valid_copy_wins() {
        let dir = tempfile::tempdir().unwrap();
        let set = DriveSet::open(&DriveSetConfig::under(dir.path(), 2, 1)).unwrap();
        write(&set, "p", 1, b"one").unwrap();
        write(&set, "p", 2, b"two").unwrap();
        let path = dir.path().join("drive-0/meta/p");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[9] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(read(&set, "p"), Some((2, b"two".to_vec())));
        assert_eq!(read(&set, "missing"), None);
    }
}
