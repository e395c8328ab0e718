//! The pool of PostgreSQL connections for reads and lease rounds, each connection
//! driven by the runtime that opened the catalog, whichever runtime asked for it.
//!
//! deadpool opens a connection inside the `get` that needs one, and tokio-postgres's
//! connection (the task that reads the socket and sends the queries) then runs on the
//! caller's runtime. The table seals run on a runtime of their own, on one thread at
//! `SCHED_IDLE` (`tables::background`); a connection they opened went back to the pool
//! and was taken next by lease rounds and Produce reads, whose answers then waited for
//! the seal's Parquet encoding to yield. On three nodes under load that was a 3.6-18.5 s
//! stall after a failover, long enough for the stalled node to lose its own addresses
//! (docs/benchmarks.md, "Failover pause with the PostgreSQL catalog").

use deadpool_postgres::{Manager, ManagerConfig, Pool, tokio_postgres};
use futures::future::BoxFuture;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio_postgres::{Client, Config, NoTls};

use crate::error::{CatalogError, CatalogResult};

/// A pool of at most `size` connections to `config`, each opened and driven on
/// `runtime`.
pub fn on_runtime(config: Config, runtime: Handle, size: usize) -> CatalogResult<Pool> {
    let manager = Manager::from_connect(config, OnRuntime(runtime), ManagerConfig::default());
    Pool::builder(manager)
        .max_size(size)
        .build()
        .map_err(|e| CatalogError::Store(format!("postgresql pool: {e}")))
}

/// Opens connections on one runtime.
struct OnRuntime(Handle);

impl deadpool_postgres::Connect for OnRuntime {
    fn connect(
        &self,
        config: &Config,
    ) -> BoxFuture<'_, Result<(Client, JoinHandle<()>), tokio_postgres::Error>> {
        let config = config.clone();
        let opened = self.0.spawn(open(config.clone()));
        Box::pin(async move {
            match opened.await {
                Ok(result) => result,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                // That runtime is shutting down: this one will do for the little left.
                Err(_) => open(config).await,
            }
        })
    }
}

/// Connects on the current runtime (the socket is registered with its I/O driver) and
/// runs the connection there.
async fn open(config: Config) -> Result<(Client, JoinHandle<()>), tokio_postgres::Error> {
    let (client, connection) = config.connect(NoTls).await?;
    let driver = tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "postgresql pool connection ended");
        }
    });
    Ok((client, driver))
}
