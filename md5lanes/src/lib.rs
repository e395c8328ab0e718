//! The MD5 of request bodies and of table files (their ETags), hashed on SIMD lanes that
//! concurrent streams share: uploads to the S3 gateway, and the data files one table
//! seal writes together.
//!
//! One MD5 stream is serial: each 64-byte block needs the result of the one before, so
//! a lone upload hashes at one core's scalar speed. Blocks of several uploads hashed
//! side by side in one AVX2 pass cost about as much as one upload's. Measured with
//! md5-many on this project's 2-core EPYC VM (2026-12-06): 8 streams of 1 MiB chunks
//! hash at 3.9 GB/s together, one stream at 0.5-0.7 GB/s. MD5 was 43 % of the server's
//! CPU on concurrent 64 MiB PUTs (docs/benchmarks.md).
//!
//! Chunks of at least [`LANE_MIN`] bytes go to one hashing thread. That thread runs every
//! stream that has work in lockstep, up to the engine's lane count. Smaller chunks
//! (small objects, the tail of a body) are hashed where they are, since a hand-off costs
//! more than hashing them.
//!
//! md5-many 0.1.0-alpha.4 is about 25x slower with 5 to 7 streams than with 8 on AVX2
//! (measured as above: 138-187 MB/s together). So a pass always fills every lane, and
//! the spare lanes hash a copy of a real stream's chunk into states that are thrown
//! away.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

use bytes::Bytes;
use md5_many::{Md5Many, Md5State};
use tokio::sync::oneshot;

/// Chunks smaller than this are hashed by the caller.
pub const LANE_MIN: usize = 64 * 1024;

/// Bytes of each stream per pass. Streams that arrive meanwhile join at the next pass.
const PASS: usize = 256 * 1024;

/// Passes that hashed more than one stream (read by tests: batching happened).
static SHARED_PASSES: AtomicU64 = AtomicU64::new(0);

/// Work for the hashing thread: a stream's state and its next chunk.
struct Job {
    state: Md5State,
    data: Bytes,
    done: oneshot::Sender<Md5State>,
}

/// A job being hashed: how far into its chunk the thread is.
struct Running {
    job: Job,
    at: usize,
}

impl Running {
    fn left(&self) -> usize {
        self.job.data.len() - self.at
    }
}

/// The hashing thread's queue, started on first use. `None` when this CPU has no
/// multi-lane MD5 (then every chunk is hashed by its caller).
fn lanes() -> Option<&'static mpsc::Sender<Job>> {
    static LANES: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    LANES
        .get_or_init(|| {
            let engine = Md5Many::new();
            if engine.lanes() < 2 {
                return None;
            }
            let (tx, rx) = mpsc::channel();
            std::thread::Builder::new()
                .name("md5-lanes".into())
                .spawn(move || run(engine, rx))
                .map_err(|e| tracing::warn!(error = %e, "no MD5 lanes thread; hashing inline"))
                .ok()?;
            Some(tx)
        })
        .as_ref()
}

/// The hashing thread: takes whatever streams are waiting, up to the lane count, and
/// hashes them a pass at a time until the queue is empty.
fn run(engine: Md5Many, rx: mpsc::Receiver<Job>) {
    let width = engine.lanes();
    let mut running: Vec<Running> = Vec::with_capacity(width);
    let mut states = vec![Md5State::new(); width];
    loop {
        if running.is_empty() {
            match rx.recv() {
                Ok(job) => running.push(Running { job, at: 0 }),
                Err(_) => return,
            }
        }
        while running.len() < width {
            match rx.try_recv() {
                Ok(job) => running.push(Running { job, at: 0 }),
                Err(_) => break,
            }
        }
        let step = running
            .iter()
            .map(Running::left)
            .min()
            .unwrap_or(0)
            .min(PASS);
        if let [one] = running.as_mut_slice() {
            one.job.state.update(&one.job.data[one.at..one.at + step]);
        } else {
            SHARED_PASSES.fetch_add(1, Ordering::Relaxed);
            for (i, s) in states.iter_mut().enumerate() {
                *s = running[i % running.len()].job.state;
            }
            let inputs: Vec<&[u8]> = (0..width)
                .map(|i| {
                    let r = &running[i % running.len()];
                    &r.job.data[r.at..r.at + step]
                })
                .collect();
            engine.update_many(&mut states, &inputs);
            for (r, s) in running.iter_mut().zip(&states) {
                r.job.state = *s;
            }
        }
        for r in &mut running {
            r.at += step;
        }
        let mut i = 0;
        while i < running.len() {
            if running[i].left() == 0 {
                let r = running.swap_remove(i);
                // A receiver gone means its request was dropped: nothing to tell.
                let _ = r.job.done.send(r.job.state);
            } else {
                i += 1;
            }
        }
    }
}

/// A chunk on the lanes: its result, and what to hash inline if the thread is gone.
struct Pending {
    result: oneshot::Receiver<Md5State>,
    before: Md5State,
    data: Bytes,
}

/// The MD5 of one body, fed chunk by chunk in order. A chunk handed to the lanes is
/// hashed while the caller receives the next one.
pub struct Md5Stream {
    state: Md5State,
    pending: Option<Pending>,
}

impl Default for Md5Stream {
    fn default() -> Self {
        Self::new()
    }
}

impl Md5Stream {
    /// An empty stream.
    pub fn new() -> Self {
        Self {
            state: Md5State::new(),
            pending: None,
        }
    }

    /// Hashes `data` here and now; for callers off the async threads. Never called
    /// after [`Md5Stream::push`] (which only async callers use).
    pub fn update_blocking(&mut self, data: &[u8]) {
        debug_assert!(self.pending.is_none());
        self.state.update(data);
    }

    /// Adds `chunk`: on the lanes when it is large enough, else here. Returns once the
    /// chunk before it is hashed, not this one.
    pub async fn push(&mut self, chunk: Bytes) {
        self.settle().await;
        let lanes = if chunk.len() >= LANE_MIN {
            lanes()
        } else {
            None
        };
        let Some(lanes) = lanes else {
            self.state.update(&chunk);
            return;
        };
        let (done, result) = oneshot::channel();
        let job = Job {
            state: self.state,
            data: chunk.clone(),
            done,
        };
        if lanes.send(job).is_err() {
            self.state.update(&chunk);
            return;
        }
        self.pending = Some(Pending {
            result,
            before: self.state,
            data: chunk,
        });
    }

    /// Waits for the chunk on the lanes, if any. Should the thread have gone, the chunk
    /// is hashed here from the state before it, so the result is the same.
    async fn settle(&mut self) {
        if let Some(p) = self.pending.take() {
            self.state = match p.result.await {
                Ok(s) => s,
                Err(_) => {
                    let mut s = p.before;
                    s.update(&p.data);
                    s
                }
            };
        }
    }

    /// The digest of everything pushed.
    pub async fn finish(mut self) -> [u8; 16] {
        self.settle().await;
        self.state.finalize()
    }

    /// The digest, for callers that only used [`Md5Stream::update_blocking`].
    pub fn finish_blocking(self) -> [u8; 16] {
        debug_assert!(self.pending.is_none());
        self.state.finalize()
    }
}

/// The MD5 of `data`, on the lanes when it is large enough: callers that hash several
/// bodies at once await these together, so the bodies share passes.
pub async fn digest(data: Bytes) -> [u8; 16] {
    let mut s = Md5Stream::new();
    s.push(data).await;
    s.finish().await
}

#[cfg(test)]
mod tests {
    use md5::Digest as _;

    use super::*;

    /// RustCrypto's MD5, an implementation independent of the one under test.
    fn reference(data: &[u8]) -> [u8; 16] {
        md5::Md5::digest(data).into()
    }

    /// Bytes that differ per stream and position, so a lane mix-up changes a digest.
    fn body(seed: u64, len: usize) -> Bytes {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect::<Vec<u8>>()
            .into()
    }

    async fn hash_in_chunks(data: Bytes, sizes: &[usize]) -> [u8; 16] {
        let mut s = Md5Stream::new();
        let mut at = 0;
        let mut i = 0;
        while at < data.len() {
            let n = sizes[i % sizes.len()].min(data.len() - at);
            s.push(data.slice(at..at + n)).await;
            at += n;
            i += 1;
        }
        s.finish().await
    }

    #[tokio::test]
    async fn one_stream_matches_md5_at_every_chunking() {
        for (len, sizes) in [
            (0, vec![1]),
            (1, vec![1]),
            (63, vec![64 << 10]),
            (64 << 10, vec![64 << 10]),
            ((1 << 20) + 13, vec![LANE_MIN, 1, LANE_MIN + 63, 100]),
            (3 << 20, vec![1 << 20]),
            ((3 << 20) + 5, vec![(1 << 20) + 7, 65, LANE_MIN - 1]),
        ] {
            let data = body(len as u64, len);
            assert_eq!(
                hash_in_chunks(data.clone(), &sizes).await,
                reference(&data),
                "{len} bytes in chunks of {sizes:?}"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_streams_each_get_their_own_digest() {
        // More streams than lanes, of different lengths and chunkings, so passes mix
        // streams joining, finishing and sharing lanes with copies.
        let shared_before = SHARED_PASSES.load(Ordering::Relaxed);
        let mut tasks = Vec::new();
        for i in 0..21u64 {
            let len = (1 << 20) * (1 + (i as usize % 3)) + (i as usize * 4099);
            let sizes = vec![LANE_MIN + (i as usize) * 1000, 1 << 20, 333];
            tasks.push(tokio::spawn(async move {
                let data = body(i + 100, len);
                (hash_in_chunks(data.clone(), &sizes).await, reference(&data))
            }));
        }
        for t in tasks {
            let (got, want) = t.await.unwrap();
            assert_eq!(got, want);
        }
        if Md5Many::new().lanes() > 1 {
            assert!(SHARED_PASSES.load(Ordering::Relaxed) > shared_before);
        }
    }

    #[tokio::test]
    async fn small_chunks_in_place_and_large_on_the_lanes_mix() {
        let data = body(7, (2 << 20) + 300);
        let mut s = Md5Stream::new();
        s.push(data.slice(..100)).await;
        s.push(data.slice(100..(1 << 20) + 100)).await;
        s.push(data.slice((1 << 20) + 100..(1 << 20) + 200)).await;
        s.push(data.slice((1 << 20) + 200..)).await;
        assert_eq!(s.finish().await, reference(&data));
    }
}
