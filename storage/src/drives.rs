//! The drive set: `k+m` directories, one shard of every stripe on each. A drive carries a
//! small format file naming its set and position, so a drive that is missing, empty or in
//! the wrong slot is told apart from a healthy one.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::erasure::{ErasureCode, ReedSolomon};
use crate::error::{StorageError, StorageResult};

const FORMAT_FILE: &str = ".eddy-drive.json";
/// The drive layout this build writes and the newest it reads: the drive format file, the
/// blob shard files and the log segments as `docs/format.md` describes them. A build that
/// changes any of them in a way older builds would misread bumps it, so an older build
/// refuses the drives at start instead of misreading them.
pub const DRIVE_FORMAT: u32 = 1;

/// Which drives and which code.
#[derive(Debug, Clone)]
pub struct DriveSetConfig {
    /// One directory per drive, in shard order.
    pub drives: Vec<PathBuf>,
    /// Data shards per stripe.
    pub k: usize,
    /// Parity shards per stripe.
    pub m: usize,
}

impl DriveSetConfig {
    /// `k+m` drive directories `drive-0`, `drive-1`, ... under `data_dir`.
    pub fn under(data_dir: &Path, k: usize, m: usize) -> Self {
        Self {
            drives: (0..k + m)
                .map(|i| data_dir.join(format!("drive-{i}")))
                .collect(),
            k,
            m,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct DriveFormat {
    format: u32,
    set: String,
    index: usize,
    k: usize,
    m: usize,
}

/// One drive of the set.
#[derive(Debug)]
pub struct Drive {
    /// Position in the set (= shard index).
    pub index: usize,
    /// Root directory.
    pub path: PathBuf,
    online: AtomicBool,
    errors: AtomicU64,
}

impl Drive {
    /// Whether the drive is formatted and usable.
    pub fn is_online(&self) -> bool {
        self.online.load(Ordering::Relaxed)
    }

    /// I/O errors seen on this drive since start.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// Records an I/O error; a drive that fails a write is taken offline until healed.
    pub fn record_error(&self, write: bool) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        if write {
            self.online.store(false, Ordering::Relaxed);
        }
    }

    /// A path on this drive.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.path.join(rel)
    }
}

/// The drives and the erasure code over them.
pub struct DriveSet {
    drives: Vec<Drive>,
    code: Arc<dyn ErasureCode>,
    set_id: String,
}

/// Health of one drive, for metrics and reports.
#[derive(Debug, Clone, Serialize)]
pub struct DriveHealth {
    /// Position in the set.
    pub index: usize,
    /// Root directory.
    pub path: PathBuf,
    /// Formatted and usable.
    pub online: bool,
    /// I/O errors since start.
    pub errors: u64,
}

impl DriveSet {
    /// Opens the set, formatting every drive if none is formatted yet. Drives that are
    /// missing or unformatted in an existing set are reported and left offline; opening
    /// fails if more than `m` are.
    pub fn open(config: &DriveSetConfig) -> StorageResult<Self> {
        let (k, m) = (config.k, config.m);
        if config.drives.len() != k + m {
            return Err(StorageError::Config(format!(
                "{} drives given for a {k}+{m} code",
                config.drives.len()
            )));
        }
        let code = Arc::new(ReedSolomon::new(k, m)?);
        let formats: Vec<Option<DriveFormat>> = config
            .drives
            .iter()
            .map(|p| read_format(p))
            .collect::<StorageResult<_>>()?;
        let set_id = match formats.iter().flatten().next() {
            Some(f) => f.set.clone(),
            None => {
                let set = format!("{:032x}", rand::random::<u128>());
                for (index, path) in config.drives.iter().enumerate() {
                    write_format(path, &set, index, k, m)?;
                }
                tracing::info!(drives = k + m, k, m, "formatted a new drive set");
                set
            }
        };
        let mut drives = Vec::with_capacity(k + m);
        for (index, path) in config.drives.iter().enumerate() {
            let format = match &formats[index] {
                Some(f) => Some(f),
                // Formatted just now.
                None if formats.iter().all(Option::is_none) => None,
                None => {
                    tracing::warn!(drive = index, path = %path.display(), "drive is missing or unformatted; running degraded until `eddy heal`");
                    drives.push(Drive {
                        index,
                        path: path.clone(),
                        online: AtomicBool::new(false),
                        errors: AtomicU64::new(0),
                    });
                    continue;
                }
            };
            if let Some(f) = format
                && (f.set != set_id || f.index != index || f.k != k || f.m != m)
            {
                return Err(StorageError::Config(format!(
                    "{} belongs to set {} as drive {} of {}+{}; expected drive {index} of set {set_id} ({k}+{m})",
                    path.display(),
                    f.set,
                    f.index,
                    f.k,
                    f.m
                )));
            }
            drives.push(Drive {
                index,
                path: path.clone(),
                online: AtomicBool::new(true),
                errors: AtomicU64::new(0),
            });
        }
        let set = Self {
            drives,
            code,
            set_id,
        };
        let missing = set.offline_count();
        if missing > m {
            return Err(StorageError::TooManyDrivesMissing {
                missing,
                total: k + m,
                tolerated: m,
            });
        }
        Ok(set)
    }

    /// Formats drives that are offline (missing or empty) so heal can rebuild onto them;
    /// returns the indexes it formatted.
    pub fn format_missing(&self) -> StorageResult<Vec<usize>> {
        let mut formatted = Vec::new();
        for d in &self.drives {
            if !d.is_online() || read_format(&d.path)?.is_none() {
                write_format(&d.path, &self.set_id, d.index, self.k(), self.m())?;
                d.online.store(true, Ordering::Relaxed);
                formatted.push(d.index);
            }
        }
        Ok(formatted)
    }

    /// The set's id: 128 random bits drawn when its drives were first formatted, written
    /// on each of them, shared by every node over the set.
    pub fn set_id(&self) -> &str {
        &self.set_id
    }

    /// Data shards per stripe.
    pub fn k(&self) -> usize {
        self.code.data_shards()
    }

    /// Parity shards per stripe.
    pub fn m(&self) -> usize {
        self.code.parity_shards()
    }

    /// The erasure code.
    pub fn code(&self) -> &dyn ErasureCode {
        self.code.as_ref()
    }

    /// All drives, in shard order.
    pub fn drives(&self) -> &[Drive] {
        &self.drives
    }

    /// Drives currently unusable.
    pub fn offline_count(&self) -> usize {
        self.drives.iter().filter(|d| !d.is_online()).count()
    }

    /// Takes an exclusive lock on every online drive, so two processes never write the
    /// same drives; held until the returned files are dropped.
    pub fn lock(&self) -> StorageResult<Vec<fs::File>> {
        use std::os::fd::AsRawFd;
        let mut locks = Vec::new();
        for d in self.drives.iter().filter(|d| d.is_online()) {
            let path = d.join(".lock");
            let f = fs::File::create(&path).map_err(|e| StorageError::io("create", &path, e))?;
            // SAFETY: flock on a descriptor we own; no memory is shared with the call.
            let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if rc != 0 {
                return Err(StorageError::Config(format!(
                    "{} is in use by another Eddy process",
                    d.path.display()
                )));
            }
            locks.push(f);
        }
        Ok(locks)
    }

    /// Per-drive health.
    pub fn health(&self) -> Vec<DriveHealth> {
        self.drives
            .iter()
            .map(|d| DriveHealth {
                index: d.index,
                path: d.path.clone(),
                online: d.is_online(),
                errors: d.errors(),
            })
            .collect()
    }
}

/// The drive's format file: `None` when it has none or an unreadable one (a drive to
/// format, or to heal), an error when it names a layout newer than [`DRIVE_FORMAT`].
fn read_format(path: &Path) -> StorageResult<Option<DriveFormat>> {
    let Ok(bytes) = fs::read(path.join(FORMAT_FILE)) else {
        return Ok(None);
    };
    // The version is checked before the rest: a newer layout may change the other fields.
    let version = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.get("format").and_then(serde_json::Value::as_u64));
    if let Some(found) = version.filter(|v| *v > DRIVE_FORMAT as u64) {
        return Err(StorageError::Format {
            what: format!("drive {}", path.display()),
            found: u32::try_from(found).unwrap_or(u32::MAX),
            newest: DRIVE_FORMAT,
        });
    }
    Ok(serde_json::from_slice(&bytes).ok())
}

fn write_format(path: &Path, set: &str, index: usize, k: usize, m: usize) -> StorageResult<()> {
    fs::create_dir_all(path).map_err(|e| StorageError::io("create drive", path, e))?;
    let format = DriveFormat {
        format: DRIVE_FORMAT,
        set: set.to_string(),
        index,
        k,
        m,
    };
    let bytes = serde_json::to_vec_pretty(&format)
        .map_err(|e| StorageError::Config(format!("drive format: {e}")))?;
    write_durable(&path.join(FORMAT_FILE), &bytes)
}

/// Writes a whole file so that after a crash it holds either its old content or `bytes`:
/// a temporary file, fsync'd, renamed over, and the directory fsync'd.
pub fn write_durable(path: &Path, bytes: &[u8]) -> StorageResult<()> {
    let dir = path
        .parent()
        .ok_or_else(|| StorageError::Config(format!("{} has no parent", path.display())))?;
    fs::create_dir_all(dir).map_err(|e| StorageError::io("create dir", dir, e))?;
    let tmp = path.with_extension(format!("tmp-{:x}", rand::random::<u64>()));
    let result = (|| {
        let mut f = fs::File::create(&tmp).map_err(|e| StorageError::io("create", &tmp, e))?;
        f.write_all(bytes)
            .map_err(|e| StorageError::io("write", &tmp, e))?;
        f.sync_all()
            .map_err(|e| StorageError::io("fsync", &tmp, e))?;
        fs::rename(&tmp, path).map_err(|e| StorageError::io("rename", path, e))?;
        fsync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// fsyncs a directory, making the names created or removed in it durable.
pub fn fsync_dir(dir: &Path) -> StorageResult<()> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StorageError::io("fsync dir", dir, e))
}

/// Starts writing the file's dirty pages to the drive without waiting for them, so the
/// `fdatasync` that makes them durable finds little left to do: a large blob's disk
/// writes overlap its upload, and a log record's frames are on their way to every drive
/// before the first of their syncs. Advisory: failure changes nothing.
pub(crate) fn start_writeback(f: &fs::File) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid open descriptor; offset 0 with length 0 means the whole file.
    unsafe {
        libc::sync_file_range(f.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
    }
}

/// Waits until the file's bytes before `end` are written to the drive, starting the
/// writeback of any not yet started. Not durability (no cache flush, no metadata): it
/// keeps a writer from queueing more at the drive than it has waited for. Advisory:
/// failure changes nothing.
pub(crate) fn await_writeback(f: &fs::File, end: u64) {
    use std::os::fd::AsRawFd;
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
        | libc::SYNC_FILE_RANGE_WRITE
        | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    let end = libc::off64_t::try_from(end).unwrap_or(libc::off64_t::MAX);
    // SAFETY: a valid open descriptor; the range starts at 0 and is `end` bytes long.
    unsafe {
        libc::sync_file_range(f.as_raw_fd(), 0, end, flags);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_set_is_formatted_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = DriveSetConfig::under(dir.path(), 4, 2);
        let set = DriveSet::open(&cfg).unwrap();
        assert_eq!(set.offline_count(), 0);
        drop(set);
        let set = DriveSet::open(&cfg).unwrap();
        assert_eq!(set.offline_count(), 0);
    }

    #[test]
    fn missing_drives_within_m_run_degraded_beyond_fail() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = DriveSetConfig::under(dir.path(), 4, 2);
        DriveSet::open(&cfg).unwrap();
        fs::remove_dir_all(&cfg.drives[1]).unwrap();
        fs::remove_dir_all(&cfg.drives[4]).unwrap();
        let set = DriveSet::open(&cfg).unwrap();
        assert_eq!(set.offline_count(), 2);
        assert_eq!(set.format_missing().unwrap(), vec![1, 4]);
        drop(set);
        for i in [0, 2, 5] {
            fs::remove_dir_all(&cfg.drives[i]).unwrap();
        }
        assert!(matches!(
            DriveSet::open(&cfg),
            Err(StorageError::TooManyDrivesMissing { missing: 3, .. })
        ));
    }

    #[test]
    fn swapped_drives_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = DriveSetConfig::under(dir.path(), 2, 1);
        DriveSet::open(&cfg).unwrap();
        cfg.drives.swap(0, 1);
        assert!(matches!(DriveSet::open(&cfg), Err(StorageError::Config(_))));
    }
}
