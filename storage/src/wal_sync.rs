//! The log's sync threads: a commit's `fdatasync`s run at once, one per drive, rather
//! than one after another. The calling thread syncs the first file itself; each other
//! file goes to a thread of its own, kept for the life of the log (started when first
//! needed) so a commit pays a wake-up per drive, not a thread start.
//!
//! Why (the 2-core VM of 2026-12-06, six files on one ext4 disk): with the frames written
//! and their writeback started, syncing the six at once gave 1.85x the commits per second
//! of syncing them in turn when the files grow, 1.25x into `fallocate`d files and 1.08x
//! into zero-filled ones (`bench/wal_fsync.py --parallel`, whose helpers are processes
//! woken through pipes); a C probe with threads, as here, gave 1.25-1.5x into zero-filled
//! files. In the server, the log stage of a one-partition produce fell from 1.36 to 1.13 ms
//! (`bench/peers/commit_stages.py`, docs/benchmarks.md).

use std::fs::File;
use std::sync::Arc;
use std::sync::mpsc::{Sender, channel};
use std::thread::JoinHandle;

/// One file to make durable, and where its drive's result goes.
struct Job {
    drive: usize,
    file: Arc<File>,
    done: Sender<(usize, std::io::Result<()>)>,
}

struct Worker {
    jobs: Sender<Job>,
    thread: JoinHandle<()>,
}

/// The threads that sync all but one of a commit's files.
#[derive(Default)]
pub(crate) struct SyncThreads {
    workers: Vec<Worker>,
}

impl SyncThreads {
    /// Makes every file durable (`fdatasync`), all at once, and returns each drive's
    /// result. A file whose thread cannot be had is synced on the calling thread.
    pub fn sync_data(
        &mut self,
        files: Vec<(usize, Arc<File>)>,
    ) -> Vec<(usize, std::io::Result<()>)> {
        let drives: Vec<usize> = files.iter().map(|(i, _)| *i).collect();
        let mut files = files.into_iter();
        let Some((first_drive, first)) = files.next() else {
            return Vec::new();
        };
        let (done, answers) = channel();
        let mut inline = Vec::new();
        for (n, (drive, file)) in files.enumerate() {
            let job = Job {
                drive,
                file,
                done: done.clone(),
            };
            match self.worker(n) {
                Some(w) => {
                    if let Err(refused) = w.jobs.send(job) {
                        inline.push(refused.0);
                    }
                }
                None => inline.push(job),
            }
        }
        drop(done);
        let mut out = vec![(first_drive, first.sync_data())];
        out.extend(inline.into_iter().map(|j| (j.drive, j.file.sync_data())));
        // Ends when every job's sender is gone: answered, or dropped by a thread that died.
        out.extend(answers);
        for drive in drives {
            if !out.iter().any(|(i, _)| *i == drive) {
                out.push((
                    drive,
                    Err(std::io::Error::other("the log sync thread died")),
                ));
            }
        }
        out
    }

    /// The `n`th thread, started if it is not yet; `None` if it cannot be.
    fn worker(&mut self, n: usize) -> Option<&Worker> {
        while self.workers.len() <= n {
            let (jobs, rx) = channel::<Job>();
            let thread = std::thread::Builder::new()
                .name(format!("log-sync-{}", self.workers.len()))
                .spawn(move || {
                    for job in rx {
                        let _ = job.done.send((job.drive, job.file.sync_data()));
                    }
                });
            match thread {
                Ok(thread) => self.workers.push(Worker { jobs, thread }),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot start a log sync thread; syncing inline");
                    return None;
                }
            }
        }
        self.workers.get(n)
    }
}

impl Drop for SyncThreads {
    fn drop(&mut self) {
        for w in self.workers.drain(..) {
            drop(w.jobs);
            let _ = w.thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &std::path::Path, name: &str) -> Arc<File> {
        use std::io::Write;
        let mut f = File::create(dir.join(name)).unwrap();
        f.write_all(b"frame").unwrap();
        Arc::new(f)
    }

    #[test]
    fn every_drive_gets_its_own_result_and_the_threads_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut sync = SyncThreads::default();
        // A pipe cannot be synced (EINVAL): drive 3's failure is reported as drive 3's.
        let (reader, _writer) = std::io::pipe().unwrap();
        let pipe = Arc::new(File::from(std::os::fd::OwnedFd::from(reader)));
        for round in 0..3 {
            let files = vec![
                (0, file(dir.path(), "a")),
                (2, file(dir.path(), "b")),
                (3, pipe.clone()),
                (5, file(dir.path(), "c")),
            ];
            let mut results = sync.sync_data(files);
            results.sort_by_key(|(i, _)| *i);
            let drives: Vec<(usize, bool)> = results.iter().map(|(i, r)| (*i, r.is_ok())).collect();
            assert_eq!(
                drives,
                [(0, true), (2, true), (3, false), (5, true)],
                "round {round}"
            );
            assert_eq!(
                sync.workers.len(),
                3,
                "one thread per file but the first, reused"
            );
        }
        assert!(sync.sync_data(Vec::new()).is_empty());
        let one = sync.sync_data(vec![(4, file(dir.path(), "d"))]);
        assert!(matches!(one.as_slice(), [(4, Ok(()))]));
    }

    #[test]
    fn a_dead_thread_counts_as_its_drives_failure() {
        let dir = tempfile::tempdir().unwrap();
        let mut sync = SyncThreads::default();
        sync.sync_data(vec![(0, file(dir.path(), "a")), (1, file(dir.path(), "b"))]);
        // Its thread gone (as after a panic), the job is refused and synced inline.
        let w = sync.workers.pop().unwrap();
        drop(w.jobs);
        w.thread.join().unwrap();
        let (jobs, rx) = channel::<Job>();
        drop(rx);
        let thread = std::thread::spawn(|| {});
        sync.workers.push(Worker { jobs, thread });
        let mut results =
            sync.sync_data(vec![(0, file(dir.path(), "a")), (1, file(dir.path(), "b"))]);
        results.sort_by_key(|(i, _)| *i);
        assert!(matches!(results.as_slice(), [(0, Ok(())), (1, Ok(()))]));
        // A thread that takes the job and dies without answering: its drive fails.
        let (jobs, rx) = channel::<Job>();
        let thread = std::thread::spawn(move || drop(rx.recv()));
        sync.workers[0] = Worker { jobs, thread };
        let mut results =
            sync.sync_data(vec![(0, file(dir.path(), "a")), (1, file(dir.path(), "b"))]);
        results.sort_by_key(|(i, _)| *i);
        assert!(matches!(results.as_slice(), [(0, Ok(())), (1, Err(_))]));
    }
}
