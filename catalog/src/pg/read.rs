//! [`KvRead`] over a pool of PostgreSQL connections. A snapshot is one `REPEATABLE READ`
//! read-only transaction on a pooled connection, so the reads of one snapshot agree; it
//! is rolled back when the snapshot is dropped (in the background: the connection goes
//! back to the pool once the rollback is through, on the runtime that drives the pool).
//!
//! The `BEGIN` goes out in one pipeline with the snapshot's first query, not a round
//! trip ahead of it: most snapshots make one query, and a produce request's reads were
//! three of the four PostgreSQL transactions it cost (docs/benchmarks.md, "PostgreSQL
//! catalog: transactions per produce request").

use std::ops::Bound;

use deadpool_postgres::{Object, Pool};
use redb::TableHandle;
use tokio::runtime::Handle;
use tokio_postgres::types::ToSql;

use super::statements::range_sql;
use crate::error::CatalogResult;
use crate::kv::{Entries, KvRead, KvSnapshot, Range};
use crate::tables::Table;

/// Snapshots from a pool.
pub struct PgRead {
    pool: Pool,
    /// Where a dropped snapshot's `ROLLBACK` runs: the runtime that drives the pool's
    /// connections, not the one that dropped it, which may be a seal's at `SCHED_IDLE`.
    runtime: Handle,
}

impl PgRead {
    /// Reads through `pool`, whose connections run on `runtime`.
    pub fn new(pool: Pool, runtime: Handle) -> Self {
        Self { pool, runtime }
    }

    /// A connection of the pool, for work of its own (lease rounds).
    pub async fn client(&self) -> CatalogResult<Object> {
        Ok(self.pool.get().await?)
    }
}

const BEGIN: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

/// One read-only transaction on a pooled connection.
struct PgSnapshot {
    client: Option<Object>,
    /// Whether `BEGIN` was sent (or tried). Locked through the first query, so no
    /// query of the snapshot can reach the connection ahead of it.
    begun: tokio::sync::Mutex<bool>,
    /// Where its `ROLLBACK` runs ([`PgRead::runtime`]).
    runtime: Handle,
}

impl PgSnapshot {
    fn client(&self) -> CatalogResult<&Object> {
        self.client
            .as_ref()
            .ok_or_else(|| crate::CatalogError::Store("snapshot already closed".into()))
    }

    /// Runs `query` in the snapshot's transaction; the first one is pipelined behind
    /// its `BEGIN` (tokio-postgres sends requests in the order their futures are first
    /// polled, and `try_join!` polls in order).
    async fn inside<T>(
        &self,
        query: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> CatalogResult<T> {
        let mut begun = self.begun.lock().await;
        if *begun {
            drop(begun);
            return Ok(query.await?);
        }
        let client = self.client()?;
        // Set before the outcome is known: a snapshot whose BEGIN may have gone through
        // is rolled back on drop (a ROLLBACK outside a transaction only warns), so its
        // connection never goes back to the pool inside a transaction.
        *begun = true;
        let ((), out) = tokio::try_join!(client.batch_execute(BEGIN), query)?;
        Ok(out)
    }
}

impl Drop for PgSnapshot {
    fn drop(&mut self) {
        // A snapshot that never queried has no transaction to end.
        let begun = *self.begun.get_mut();
        if let Some(client) = self.client.take()
            && begun
        {
            // Once that runtime has shut down, the task is dropped unrun, and with it the
            // connection, whose driver ended with the runtime.
            drop(self.runtime.spawn(async move {
                if client.batch_execute("ROLLBACK").await.is_err() {
                    // A connection that cannot roll back is not handed out again.
                    let _ = Object::take(client);
                }
            }));
        }
    }
}

#[async_trait::async_trait]
impl KvSnapshot for PgSnapshot {
    async fn get(&self, table: Table, key: &[u8]) -> CatalogResult<Option<Vec<u8>>> {
        let client = self.client()?;
        let stmt = client
            .prepare_cached("SELECT v FROM eddy_kv WHERE t = $1 AND k = $2")
            .await?;
        let row = self
            .inside(client.query_opt(&stmt, &[&table.name(), &key]))
            .await?;
        Ok(row.map(|r| r.get(0)))
    }

    async fn range(&self, table: Table, range: Range<'_>) -> CatalogResult<Entries> {
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let client = self.client()?;
        let stmt = client.prepare_cached(&range_sql(&range)).await?;
        let name = table.name();
        let limit = i64::try_from(range.limit).unwrap_or(i64::MAX);
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&name];
        if let Bound::Included(f) | Bound::Excluded(f) = &range.from {
            params.push(f);
        }
        if let Bound::Included(t) | Bound::Excluded(t) = &range.to {
            params.push(t);
        }
        params.push(&limit);
        let rows = self.inside(client.query(&stmt, &params)).await?;
        Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}

#[async_trait::async_trait]
impl KvRead for PgRead {
    async fn snapshot(&self) -> CatalogResult<Box<dyn KvSnapshot + '_>> {
        let client = self.pool.get().await?;
        Ok(Box::new(PgSnapshot {
            client: Some(client),
            begun: tokio::sync::Mutex::new(false),
            runtime: self.runtime.clone(),
        }))
    }
}
