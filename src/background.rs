//! A runtime for background work (sealing topic tables, scrubbing) whose threads run at
//! a lower CPU priority than the request-serving ones.
//!
//! Sealing turns every produced byte into Parquet a second time (decode, encode,
//! compress); on a busy machine that competes with produce and fetch for the same
//! cores and shows up as produce latency. Background work has no client waiting on it,
//! so its threads run under `SCHED_IDLE` and take the CPU that serving leaves over; a
//! table load that needs a seal runs it on the serving threads instead.
//!
//! A nice value was not enough: with nice 10 the seal still tripled produce p99 at a
//! steady 244 MiB/s on two cores (36-37 ms against 12-14 ms with seals deferred,
//! measured 2026-12-05). Linux lets a woken serving thread preempt a `SCHED_IDLE` one at
//! once, where a niced thread keeps the core to the end of its slice, and each produce
//! request wakes several threads (connection, committer, reply).
//!
//! Nothing that serving shares may be driven here: a socket or task made on this runtime
//! runs only when its one idle-priority thread does. A PostgreSQL pool connection a seal
//! opened here stalled the lease rounds that took it next for up to 18 s on a busy node,
//! so the pool now opens every connection on the main runtime (`catalog/src/pg/pool.rs`).

use std::future::Future;

use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

/// The nice value of background threads where `SCHED_IDLE` is refused: a tenth of a
/// serving thread's CPU share under contention (Linux's weights).
pub const NICENESS: libc::c_int = 10;

/// The background runtime. Drop it off the async threads (see [`Background::stop`]).
pub struct Background {
    runtime: Runtime,
}

impl Background {
    /// Starts one worker thread (blocking threads on demand), all at idle priority.
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

/// Lowers the calling thread's priority to `SCHED_IDLE`, or failing that to
/// [`NICENESS`] (on Linux both apply to the thread named, this one only). Failure only
/// means background work competes at full weight.
fn lower_priority() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: gettid takes nothing; sched_setscheduler reads `param`, which outlives the
    // call; setpriority takes no pointers. All three affect this thread only.
    let r = unsafe {
        let tid = libc::gettid();
        if libc::sched_setscheduler(tid, libc::SCHED_IDLE, &param) == 0 {
            0
        } else {
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, NICENESS)
        }
    };
    if r != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "could not lower a background thread's priority");
    }
}
