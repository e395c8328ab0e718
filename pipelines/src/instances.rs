//! Functions Eddy runs itself (`command:`): each instance is the command with `PORT` set
//! to a free loopback port, sent events once it is ready (its health path answers below
//! 500: a server without the route answering 404 is up), restarted with a growing
//! backoff when it exits, and scaled between `instances.min` and `max` on the events in
//! flight. What instances print goes to the tracing log and, line by line, to the
//! pipeline's logs topic. For production, point `url:` at your own services instead.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::spec::Function;

/// Longest wait for a new instance to be ready.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of an instance's stderr kept for the reason of a failed start.
const KEPT_STDERR: usize = 4096;
/// Events in flight per instance before another one starts (up to `max`).
const PER_INSTANCE: usize = 4;
/// How long one instance fewer must have sufficed before the newest is stopped (default
/// of `instances.scale_down_ms`).
pub const SCALE_DOWN_AFTER: Duration = Duration::from_secs(30);
/// Longest restart backoff.
const MAX_RESTART_BACKOFF: Duration = Duration::from_secs(30);

/// One line an instance printed.
#[derive(Debug, Clone)]
pub struct LogLine {
    /// The function.
    pub function: String,
    /// The instance's port.
    pub port: u16,
    /// `stdout` or `stderr`.
    pub stream: &'static str,
    /// The line.
    pub line: String,
}

/// The running instances of one function.
pub struct Instances {
    function: Function,
    ready: Mutex<Vec<String>>,
    /// Each instance's URL and supervisor, oldest first.
    supervisors: Mutex<Vec<(String, JoinHandle<()>)>>,
    /// The last time the events in flight needed every instance running.
    busy: Mutex<std::time::Instant>,
    next: AtomicUsize,
    logs: mpsc::UnboundedSender<LogLine>,
}

impl Instances {
    /// Starts `instances.min` instances and waits until each is ready; the error is the
    /// reason a pipeline shows (the exit status and what the command printed on stderr).
    pub async fn start(
        function: &Function,
        logs: mpsc::UnboundedSender<LogLine>,
    ) -> Result<Arc<Self>, String> {
        let this = Arc::new(Self {
            function: function.clone(),
            ready: Mutex::new(Vec::new()),
            supervisors: Mutex::new(Vec::new()),
            busy: Mutex::new(std::time::Instant::now()),
            next: AtomicUsize::new(0),
            logs,
        });
        let min = function.instances.map_or(1, |i| i.min);
        for _ in 0..min {
            this.add().await?;
        }
        Ok(this)
    }

    /// The URL of a ready instance, round robin (none while none is ready).
    pub fn url(&self) -> Option<String> {
        let ready = self.ready.lock().unwrap_or_else(|p| p.into_inner());
        if ready.is_empty() {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % ready.len();
        Some(ready[i].clone())
    }

    /// Instances running now.
    pub fn count(&self) -> usize {
        self.supervisors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    /// Starts one more instance when `in_flight` events keep the ones running busy (up
    /// to `max`), and stops the newest when one fewer would have done for
    /// `instances.scale_down_ms` (down to `min`).
    pub async fn scale(self: &Arc<Self>, in_flight: usize) {
        let (min, max) = self.function.instances.map_or((1, 1), |i| {
            (i.min as usize, i.max.unwrap_or(i.min) as usize)
        });
        let n = self.count();
        if in_flight > n.saturating_sub(1) * PER_INSTANCE {
            *self.busy.lock().unwrap_or_else(|p| p.into_inner()) = std::time::Instant::now();
        }
        if n < max && in_flight > n * PER_INSTANCE {
            if let Err(e) = self.add().await {
                tracing::warn!(function = %self.function.name, error = %e, "could not add an instance");
            }
            return;
        }
        let idle = self
            .busy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .elapsed();
        let after = self
            .function
            .instances
            .and_then(|i| i.scale_down_ms)
            .map_or(SCALE_DOWN_AFTER, Duration::from_millis);
        if n > min && idle >= after {
            self.remove_newest();
        }
    }

    /// Stops the newest instance: no new event goes to it, and it is stopped once the
    /// events sent to it had their time to finish.
    fn remove_newest(&self) {
        let Some((url, sup)) = self
            .supervisors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
        else {
            return;
        };
        self.ready
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|u| *u != url);
        *self.busy.lock().unwrap_or_else(|p| p.into_inner()) = std::time::Instant::now();
        let grace = self.function.timeout();
        tracing::info!(function = %self.function.name, %url, "stopping an idle instance");
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            sup.abort();
        });
    }

    /// Starts one instance, waits until it is ready, and supervises it from then on.
    async fn add(self: &Arc<Self>) -> Result<(), String> {
        let (child, port, stderr) = self.spawn()?;
        let url = format!("http://127.0.0.1:{port}/");
        let child = wait_ready(&self.function, child, port, &stderr).await?;
        self.ready
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(url.clone());
        let this = self.clone();
        let u = url.clone();
        let sup = tokio::spawn(async move { this.supervise(child, port, u).await });
        self.supervisors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((url, sup));
        Ok(())
    }

    /// Waits for an instance to exit, then starts it again (on its port) after a backoff
    /// that doubles while it keeps failing to start.
    async fn supervise(self: Arc<Self>, mut child: Child, port: u16, url: String) {
        let mut backoff = Duration::from_millis(500);
        loop {
            let status = child.wait().await;
            self.ready
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|u| *u != url);
            tracing::warn!(function = %self.function.name, port, ?status, "function instance exited; restarting");
            loop {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_RESTART_BACKOFF);
                let started = match self.spawn_on(port) {
                    Ok((c, stderr)) => wait_ready(&self.function, c, port, &stderr).await,
                    Err(e) => Err(e),
                };
                match started {
                    Ok(c) => {
                        child = c;
                        backoff = Duration::from_millis(500);
                        // Unless it was scaled away meanwhile.
                        let kept = self
                            .supervisors
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .iter()
                            .any(|(u, _)| *u == url);
                        if kept {
                            self.ready
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .push(url.clone());
                        }
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(function = %self.function.name, port, error = %e, "function instance failed to restart")
                    }
                }
            }
        }
    }

    fn spawn(&self) -> Result<(Child, u16, Arc<Mutex<String>>), String> {
        let port = free_port()?;
        let (child, stderr) = self.spawn_on(port)?;
        Ok((child, port, stderr))
    }

    /// Starts the command with `PORT` set; its output is shipped line by line, and the
    /// tail of its stderr kept.
    fn spawn_on(&self, port: u16) -> Result<(Child, Arc<Mutex<String>>), String> {
        let cmd = self.function.command.clone().unwrap_or_default();
        let Some((program, args)) = cmd.split_first() else {
            return Err("command is empty".into());
        };
        let mut c = Command::new(program);
        c.args(args)
            .envs(&self.function.env)
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        // SAFETY: prctl is async-signal-safe and touches only the child's own state.
        // An instance dies with the server, even one killed with SIGKILL, so no
        // orphan keeps serving (or holding its port) for a server that is gone.
        unsafe {
            c.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = c
            .spawn()
            .map_err(|e| format!("function {}: cannot run {program}: {e}", self.function.name))?;
        let kept = Arc::new(Mutex::new(String::new()));
        if let Some(out) = child.stdout.take() {
            self.ship(out, port, "stdout", None);
        }
        if let Some(err) = child.stderr.take() {
            self.ship(err, port, "stderr", Some(kept.clone()));
        }
        Ok((child, kept))
    }

    fn ship(
        &self,
        stream: impl tokio::io::AsyncRead + Unpin + Send + 'static,
        port: u16,
        name: &'static str,
        kept: Option<Arc<Mutex<String>>>,
    ) {
        let logs = self.logs.clone();
        let function = self.function.name.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stream).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(target: "eddy::function", function = %function, port, stream = name, "{line}");
                if let Some(k) = &kept {
                    let mut k = k.lock().unwrap_or_else(|p| p.into_inner());
                    k.push_str(&line);
                    k.push('\n');
                    if k.len() > KEPT_STDERR {
                        let cut = k.len() - KEPT_STDERR;
                        let cut = (cut..k.len()).find(|i| k.is_char_boundary(*i)).unwrap_or(0);
                        k.drain(..cut);
                    }
                }
                let _ = logs.send(LogLine {
                    function: function.clone(),
                    port,
                    stream: name,
                    line,
                });
            }
        });
    }

    /// Stops every instance.
    pub fn stop(&self) {
        for (_, s) in self
            .supervisors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            // Dropping the supervisor drops its child, which kills it.
            s.abort();
        }
        self.ready.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

impl Drop for Instances {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A loopback port nothing listens on now.
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// Waits until the instance answers its health path; fails when it exits first (the
/// reason holds its stderr) or is not ready in time.
async fn wait_ready(
    f: &Function,
    mut child: Child,
    port: u16,
    stderr: &Arc<Mutex<String>>,
) -> Result<Child, String> {
    let path = f.health_path.as_deref().unwrap_or("/health");
    let url = format!("http://127.0.0.1:{port}{path}");
    let client = reqwest::Client::new();
    let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            // Let the output readers catch the last lines.
            tokio::time::sleep(Duration::from_millis(200)).await;
            let err = stderr.lock().unwrap_or_else(|p| p.into_inner()).clone();
            return Err(format!(
                "function {} exited ({status}) before it was ready:\n{}",
                f.name,
                err.trim_end()
            ));
        }
        if let Ok(r) = client
            .get(&url)
            .timeout(Duration::from_secs(1))
            .send()
            .await
            && r.status().as_u16() < 500
        {
            return Ok(child);
        }
        if tokio::time::Instant::now() >= deadline {
            let _ = child.kill().await;
            return Err(format!(
                "function {} was not ready within {} s (GET {path} on port {port})",
                f.name,
                READY_TIMEOUT.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
