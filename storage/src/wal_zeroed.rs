//! The log's next segment, written full of zeros ahead of need. A commit `fdatasync`s a
//! frame on every drive; when the frame makes the file grow, each of those syncs must
//! also commit the file's new size and blocks (on ext4, a journal commit). Overwriting
//! zeros already on disk needs none: on the 2-core VM of 2026-12-06, six files took 858
//! commits/s overwritten against 440 appended and 564 over `fallocate`d space, whose
//! unwritten extents still need converting (`bench/wal_fsync.py`, docs/benchmarks.md).
//!
//! One background thread per log writes a file of zeros on each online drive, fsyncs it
//! and hands it over; [`crate::wal::Wal`] renames it to the next segment's name when it
//! rotates, and makes a new file as before when none is ready. The zeros cost disk
//! bandwidth, so they are written at a bounded rate, only for a log that has filled a
//! quarter of its current segment (an idle log never makes one),
//! and only while its records are small (`WalConfig::zero_fill_below_record_bytes`):
//! large records mean few commits per segment, and little for the zeros to save.
//!
//! Crash safety: the files are named [`FILE_NAME`], which is never a segment's name, so
//! recovery does not read them; [`remove_leftovers`] deletes any an earlier process left.
//! A zero-filled segment reads like a shorter one: a frame header of zeros is no frame,
//! so a scan stops where the frames stop.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A drive's zero-filled next segment, in the log's directory.
pub(crate) const FILE_NAME: &str = "next-segment.zeroed";

/// Zero bytes written per second, over all drives. At this rate the default segment
/// (64 MiB of records, about 96 MiB of frames on six drives) takes under a second, while
/// a log written faster than that (where commits are large and a sync's journal commit
/// is shared by many records) gets a zero-filled segment only now and then and gives up
/// at most this much of the disk's bandwidth (1.0 GB/s of direct writes on that VM).
const BYTES_PER_SECOND: u64 = 128 << 20;

/// Zeros per write call.
const CHUNK: usize = 1 << 20;

enum State {
    Idle,
    Making,
    /// The files, by drive, each `bytes` long and durable.
    Ready(Vec<(usize, PathBuf)>),
}

/// The next segment's zero-filled files and the thread that makes them.
pub(crate) struct ZeroedSegments {
    state: Arc<Mutex<State>>,
    cancel: Arc<AtomicBool>,
    worker: Option<JoinHandle<()>>,
}

impl ZeroedSegments {
    pub(crate) fn new() -> Self {
        Self {
            state: Arc::new(Mutex::new(State::Idle)),
            cancel: Arc::new(AtomicBool::new(false)),
            worker: None,
        }
    }

    /// Starts making a file of `bytes` zeros at each of `paths()` (by drive), unless files
    /// are being made or are ready (then `paths` is not called: the log asks on every
    /// append).
    pub(crate) fn request(&mut self, paths: impl FnOnce() -> Vec<(usize, PathBuf)>, bytes: u64) {
        {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if !matches!(*state, State::Idle) {
                return;
            }
            *state = State::Making;
        }
        if let Some(done) = self.worker.take() {
            let _ = done.join();
        }
        let paths = paths();
        let state = self.state.clone();
        let cancel = self.cancel.clone();
        let spawned = std::thread::Builder::new()
            .name("wal-zeroed".into())
            .spawn(move || {
                let made = make(&paths, bytes, &cancel);
                let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
                *state = match made {
                    Ok(()) => State::Ready(paths),
                    Err(e) => {
                        if !cancel.load(Ordering::Relaxed) {
                            tracing::warn!(error = %e, "could not zero-fill the next log segment; it will grow as it is written");
                        }
                        for (_, p) in &paths {
                            let _ = fs::remove_file(p);
                        }
                        State::Idle
                    }
                };
            });
        match spawned {
            Ok(handle) => self.worker = Some(handle),
            Err(e) => {
                tracing::warn!(error = %e, "could not start the log's zero-fill thread");
                *self.state.lock().unwrap_or_else(|p| p.into_inner()) = State::Idle;
            }
        }
    }

    /// Whether files are ready to be taken.
    #[cfg(test)]
    pub(crate) fn is_ready(&self) -> bool {
        matches!(
            *self.state.lock().unwrap_or_else(|p| p.into_inner()),
            State::Ready(_)
        )
    }

    /// Whether files were ever asked for.
    #[cfg(test)]
    pub(crate) fn requested(&self) -> bool {
        self.worker.is_some()
    }

    /// The ready files by drive, handed over (the next request makes new ones).
    pub(crate) fn take(&mut self) -> Option<Vec<(usize, PathBuf)>> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match std::mem::replace(&mut *state, State::Idle) {
            State::Ready(paths) => Some(paths),
            other => {
                *state = other;
                None
            }
        }
    }
}

impl Drop for ZeroedSegments {
    /// Stops a fill in progress (its files are removed) and waits for the thread, so a
    /// log reopened in this process never shares its directory with a stray writer.
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// Writes `bytes` zeros to each path, paced to [`BYTES_PER_SECOND`], and fsyncs each.
fn make(paths: &[(usize, PathBuf)], bytes: u64, cancel: &AtomicBool) -> std::io::Result<()> {
    let zeros = vec![0u8; CHUNK];
    let started = Instant::now();
    let mut written = 0u64;
    for (_, path) in paths {
        let mut f = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(path)?;
        let mut left = bytes;
        while left > 0 {
            if cancel.load(Ordering::Relaxed) {
                return Err(std::io::Error::other("cancelled"));
            }
            let n = left.min(CHUNK as u64);
            f.write_all(&zeros[..n as usize])?;
            left -= n;
            written += n;
            let due = Duration::from_secs_f64(written as f64 / BYTES_PER_SECOND as f64);
            if let Some(ahead) = due.checked_sub(started.elapsed()) {
                std::thread::sleep(ahead);
            }
        }
        f.sync_all()?;
    }
    Ok(())
}

/// Deletes the zero-filled files an earlier process left in the log's directories `dirs`
/// (one per drive).
pub(crate) fn remove_leftovers<'a>(dirs: impl IntoIterator<Item = &'a Path>) {
    for dir in dirs {
        let path = dir.join(FILE_NAME);
        match fs::remove_file(&path) {
            Ok(()) => {
                tracing::debug!(path = %path.display(), "removed a zero-filled segment left by an earlier process")
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "could not remove a leftover zero-filled segment")
            }
        }
    }
}

/// Opens a ready zero-filled file, renamed to `path`, for writing at offsets.
pub(crate) fn adopt(zeroed: &Path, path: &Path) -> std::io::Result<File> {
    fs::rename(zeroed, path)?;
    OpenOptions::new().write(true).open(path)
}
