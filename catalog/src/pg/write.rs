//! [`KvWrite`] over one PostgreSQL transaction, for the committer thread. Writes are
//! kept in memory and sent in two statements at the end of the group ([`PgWrite::flush`]):
//! a group commit applies many small ops, and a round trip per put would cost more than
//! the ops. Reads see the group's own writes first, then the server, and remember what
//! the server said for the rest of the transaction.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use redb::TableHandle;
use tokio::runtime::Runtime;
use tokio_postgres::Transaction;
use tokio_postgres::types::ToSql;

use super::statements::Statements;
use crate::error::CatalogResult;
use crate::kv::{Entries, KvWrite, Range};
use crate::tables::Table;

type Key = (String, Vec<u8>);

/// The reads and writes of one group commit.
pub struct PgWrite<'a> {
    rt: &'a Runtime,
    txn: &'a Transaction<'a>,
    statements: &'a mut Statements,
    /// Writes not sent yet; `None` removes.
    writes: BTreeMap<Key, Option<Vec<u8>>>,
    /// What the server answered for keys read in this transaction.
    reads: HashMap<Key, Option<Vec<u8>>>,
}

impl<'a> PgWrite<'a> {
    /// Reads and writes of `txn`, waiting on `rt`.
    pub fn new(rt: &'a Runtime, txn: &'a Transaction<'a>, statements: &'a mut Statements) -> Self {
        Self {
            rt,
            txn,
            statements,
            writes: BTreeMap::new(),
            reads: HashMap::new(),
        }
    }

    /// Sends the writes: one upsert of every put, one delete of every removal.
    pub fn flush(self) -> CatalogResult<()> {
        let (mut put_t, mut put_k, mut put_v) = (Vec::new(), Vec::new(), Vec::new());
        let (mut del_t, mut del_k) = (Vec::new(), Vec::new());
        for ((t, k), v) in self.writes {
            match v {
                Some(v) => {
                    put_t.push(t);
                    put_k.push(k);
                    put_v.push(v);
                }
                None => {
                    del_t.push(t);
                    del_k.push(k);
                }
            }
        }
        let txn = self.txn;
        self.rt.block_on(async {
            if !del_t.is_empty() {
                txn.execute(
                    "DELETE FROM eddy_kv WHERE (t, k) IN \
                     (SELECT * FROM UNNEST($1::text[], $2::bytea[]))",
                    &[&del_t, &del_k],
                )
                .await?;
            }
            if !put_t.is_empty() {
                txn.execute(
                    "INSERT INTO eddy_kv (t, k, v) \
                     SELECT * FROM UNNEST($1::text[], $2::bytea[], $3::bytea[]) \
                     ON CONFLICT (t, k) DO UPDATE SET v = EXCLUDED.v",
                    &[&put_t, &put_k, &put_v],
                )
                .await?;
            }
            Ok(())
        })
    }
}

/// Whether `key` is inside the range's bounds.
pub(super) fn within(range: &Range<'_>, key: &[u8]) -> bool {
    let above = match range.from {
        Bound::Included(f) => key >= f,
        Bound::Excluded(f) => key > f,
        Bound::Unbounded => true,
    };
    let below = match range.to {
        Bound::Included(t) => key <= t,
        Bound::Excluded(t) => key < t,
        Bound::Unbounded => true,
    };
    above && below
}

impl KvWrite for PgWrite<'_> {
    fn get(&mut self, table: Table, key: &[u8]) -> CatalogResult<Option<Vec<u8>>> {
        let k = (table.name().to_owned(), key.to_vec());
        if let Some(v) = self.writes.get(&k) {
            return Ok(v.clone());
        }
        if let Some(v) = self.reads.get(&k) {
            return Ok(v.clone());
        }
        let txn = self.txn;
        let stmt = self.rt.block_on(self.statements.get(txn))?;
        let row = self.rt.block_on(txn.query_opt(&stmt, &[&k.0, &k.1]))?;
        let v: Option<Vec<u8>> = row.map(|r| r.get(0));
        self.reads.insert(k, v.clone());
        Ok(v)
    }

    fn range(&mut self, table: Table, range: Range<'_>) -> CatalogResult<Entries> {
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let name = table.name().to_owned();
        let from = (name.clone(), Vec::new());
        // This group's writes in the range: removals hide server rows, so ask the server
        // for that many more.
        let pending: Vec<(&Vec<u8>, &Option<Vec<u8>>)> = self
            .writes
            .range(from..)
            .take_while(|((t, _), _)| *t == name)
            .filter(|((_, k), _)| within(&range, k))
            .map(|((_, k), v)| (k, v))
            .collect();
        let extra = pending.len();
        let txn = self.txn;
        let stmt = self.rt.block_on(self.statements.range(txn, &range))?;
        let limit = i64::try_from(range.limit.saturating_add(extra)).unwrap_or(i64::MAX);
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&name];
        if let Bound::Included(f) | Bound::Excluded(f) = &range.from {
            params.push(f);
        }
        if let Bound::Included(t) | Bound::Excluded(t) = &range.to {
            params.push(t);
        }
        params.push(&limit);
        let rows = self.rt.block_on(txn.query(&stmt, &params))?;
        // A full answer covers the range only up to its last key: a pending put past it
        // could sort before server rows that were not sent.
        let edge: Option<Vec<u8>> = (rows.len() as i64 == limit)
            .then(|| rows.last().map(|r| r.get::<_, Vec<u8>>(0)))
            .flatten();
        let mut merged: BTreeMap<Vec<u8>, Vec<u8>> = rows
            .into_iter()
            .map(|r| (r.get::<_, Vec<u8>>(0), r.get::<_, Vec<u8>>(1)))
            .collect();
        let inside = |k: &[u8]| match &edge {
            None => true,
            Some(e) if range.reverse => k >= e.as_slice(),
            Some(e) => k <= e.as_slice(),
        };
        for (k, v) in pending.into_iter().filter(|(k, _)| inside(k)) {
            match v {
                Some(v) => merged.insert(k.clone(), v.clone()),
                None => merged.remove(k),
            };
        }
        let out: Box<dyn Iterator<Item = (Vec<u8>, Vec<u8>)>> = if range.reverse {
            Box::new(merged.into_iter().rev())
        } else {
            Box::new(merged.into_iter())
        };
        Ok(out.take(range.limit).collect())
    }

    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> CatalogResult<()> {
        self.writes.insert(
            (table.name().to_owned(), key.to_vec()),
            Some(value.to_vec()),
        );
        Ok(())
    }

    fn remove(&mut self, table: Table, key: &[u8]) -> CatalogResult<()> {
        self.writes
            .insert((table.name().to_owned(), key.to_vec()), None);
        Ok(())
    }
}
