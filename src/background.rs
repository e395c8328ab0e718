//! A runtime for background work (sealing topic tables, scrubbing) whose threads run at
//! a lower CPU priority than the request-serving ones.
//!
//! Sealing turns every produced byte into Parquet a second time (decode, encode,
//! compress); on a busy machine that competes with produce and fetch for the same
//! cores and shows up as produce latency. Background work has no client waiting on it,
//! so its threads get a nice value and take the CPU that serving leaves over; a table
//! load that needs a seal runs it on the serving threads instead.

use std::future::Future;

use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

/// The nice value of background threads: a tenth of a serving thread's CPU share
/// under contention (Linux's weights), but never starved outright.
pub const NICENESS: libc::c_int = 10;

/// The background runtime. Drop it off the async threads (see [`Background::stop`]).
pub struct Background {
    runtime: Runtime,
}

impl Background {
    /// Starts one worker thread (blocking threads on demand), all niced.
    pub fn start() -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(4)
            .thread_name("eddy-background")
            .on_thread_start(lower_priority)
            .enable_all()
            .build()?;
        Ok(Self { runtime })
    }

    /// Runs `task` on a background thread.
    pub fn spawn<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.runtime.spawn(task)
    }

    /// Stops the runtime once its tasks have returned (they watch the stop signal).
    pub async fn stop(self) {
        let runtime = self.runtime;
        let _ = tokio::task::spawn_blocking(move || {
            runtime.shutdown_timeout(std::time::Duration::from_secs(10))
        })
        .await;
    }
}

/// Lowers the calling thread's priority (on Linux `setpriority` on a thread id applies
/// to that thread only). Failure only means background work competes at full weight.
fn lower_priority() {
    // SAFETY: gettid and setpriority take no pointers and only affect this thread.
    let r = unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, NICENESS)
    };
    if r != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "could not lower a background thread's priority");
    }
}
