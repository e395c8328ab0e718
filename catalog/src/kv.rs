//! The storage interface the catalog's rules are written against: ordered tables of
//! byte keys and byte values, as [`crate::tables`] lays them out. [`crate::apply`] checks
//! and applies every operation through [`KvWrite`] and [`crate::read`] answers every
//! read through [`KvRead`], so the embedded store (redb) and PostgreSQL share one copy
//! of the domain rules; a backend only moves bytes.

use std::collections::HashMap;
use std::ops::Bound;

use redb::{ReadableDatabase, ReadableTable, TableError, TableHandle, WriteTransaction};

use crate::error::CatalogResult;
use crate::tables::Table;

/// A key range of one table.
#[derive(Debug, Clone, Copy)]
pub struct Range<'a> {
    /// Lower bound.
    pub from: Bound<&'a [u8]>,
    /// Upper bound.
    pub to: Bound<&'a [u8]>,
    /// Newest (largest key) first.
    pub reverse: bool,
    /// At most this many entries.
    pub limit: usize,
}

impl<'a> Range<'a> {
    /// Every key starting with `prefix`, in order.
    pub fn prefix(prefix: &'a [u8], end: &'a Option<Vec<u8>>) -> Self {
        Self::between(prefix, end.as_deref())
    }

    /// Keys from `from` (inclusive) to `to` (exclusive; `None`: to the end), in order.
    pub fn between(from: &'a [u8], to: Option<&'a [u8]>) -> Self {
        Self {
            from: Bound::Included(from),
            to: to.map_or(Bound::Unbounded, Bound::Excluded),
            reverse: false,
            limit: usize::MAX,
        }
    }

    /// The same range, at most `limit` entries.
    pub fn take(self, limit: usize) -> Self {
        Self { limit, ..self }
    }

    /// Whether the range can hold no key (a lower bound at or past the upper).
    pub fn is_empty(&self) -> bool {
        let (lo, lo_in) = match self.from {
            Bound::Included(k) => (k, true),
            Bound::Excluded(k) => (k, false),
            Bound::Unbounded => return self.limit == 0,
        };
        let past = match self.to {
            Bound::Included(k) => lo > k || (lo == k && !lo_in),
            Bound::Excluded(k) => lo >= k,
            Bound::Unbounded => false,
        };
        past || self.limit == 0
    }
}

/// Key-value entries, in the order a range asked for.
pub type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// The reads and writes of one write transaction. Reads see the transaction's own
/// writes. Nothing is visible to readers until the backend commits it.
pub trait KvWrite {
    /// One value.
    fn get(&mut self, table: Table, key: &[u8]) -> CatalogResult<Option<Vec<u8>>>;
    /// The entries of a range.
    fn range(&mut self, table: Table, range: Range<'_>) -> CatalogResult<Entries>;
    /// Sets a value.
    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> CatalogResult<()>;
    /// Removes a key (nothing when absent).
    fn remove(&mut self, table: Table, key: &[u8]) -> CatalogResult<()>;
}

/// Reads of one consistent snapshot of committed state.
#[async_trait::async_trait]
pub trait KvSnapshot: Send + Sync {
    /// One value.
    async fn get(&self, table: Table, key: &[u8]) -> CatalogResult<Option<Vec<u8>>>;
    /// The entries of a range.
    async fn range(&self, table: Table, range: Range<'_>) -> CatalogResult<Entries>;
}

/// Where reads come from: each call to [`KvRead::snapshot`] sees every commit that was
/// acknowledged before it.
#[async_trait::async_trait]
pub trait KvRead: Send + Sync {
    /// A snapshot for one read (or several that must agree).
    async fn snapshot(&self) -> CatalogResult<Box<dyn KvSnapshot + '_>>;
}

type RedbTable<'t> = redb::Table<'t, &'static [u8], &'static [u8]>;

/// [`KvWrite`] over a redb write transaction, opening each table the first time it is
/// used.
pub struct RedbWrite<'t> {
    w: &'t WriteTransaction,
    open: HashMap<String, RedbTable<'t>>,
}

impl<'t> RedbWrite<'t> {
    /// Reads and writes of `w`.
    pub fn new(w: &'t WriteTransaction) -> Self {
        Self {
            w,
            open: HashMap::new(),
        }
    }

    fn table(&mut self, def: Table) -> CatalogResult<&mut RedbTable<'t>> {
        let name = def.name().to_owned();
        if !self.open.contains_key(&name) {
            let t = self.w.open_table(def)?;
            self.open.insert(name.clone(), t);
        }
        // Inserted just above when missing.
        self.open
            .get_mut(&name)
            .ok_or_else(|| crate::CatalogError::Store(format!("table {name} not open")))
    }
}

/// The entries of a redb range, in the order and number `range` asks for.
fn drain(
    iter: redb::Range<'_, &'static [u8], &'static [u8]>,
    range: Range<'_>,
) -> CatalogResult<Entries> {
    let mut out = Vec::new();
    let entries: Box<dyn Iterator<Item = _>> = if range.reverse {
        Box::new(iter.rev())
    } else {
        Box::new(iter)
    };
    for e in entries.take(range.limit) {
        let (k, v) = e?;
        out.push((k.value().to_vec(), v.value().to_vec()));
    }
    Ok(out)
}

impl KvWrite for RedbWrite<'_> {
    fn get(&mut self, table: Table, key: &[u8]) -> CatalogResult<Option<Vec<u8>>> {
        Ok(self.table(table)?.get(key)?.map(|v| v.value().to_vec()))
    }

    fn range(&mut self, table: Table, range: Range<'_>) -> CatalogResult<Entries> {
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let t = self.table(table)?;
        let iter = t.range::<&[u8]>((range.from, range.to))?;
        drain(iter, range)
    }

    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> CatalogResult<()> {
        self.table(table)?.insert(key, value)?;
        Ok(())
    }

    fn remove(&mut self, table: Table, key: &[u8]) -> CatalogResult<()> {
        self.table(table)?.remove(key)?;
        Ok(())
    }
}

/// [`KvRead`] over the embedded store.
pub struct RedbRead(pub std::sync::Arc<redb::Database>);

/// A redb read transaction.
struct RedbSnapshot(redb::ReadTransaction);

impl RedbSnapshot {
    fn table(
        &self,
        def: Table,
    ) -> CatalogResult<Option<redb::ReadOnlyTable<&'static [u8], &'static [u8]>>> {
        match self.0.open_table(def) {
            Ok(t) => Ok(Some(t)),
            // A store opened before any commit touched the table.
            Err(TableError::TableDoesNotExist(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

#[async_trait::async_trait]
impl KvSnapshot for RedbSnapshot {
    async fn get(&self, table: Table, key: &[u8]) -> CatalogResult<Option<Vec<u8>>> {
        let Some(t) = self.table(table)? else {
            return Ok(None);
        };
        Ok(t.get(key)?.map(|v| v.value().to_vec()))
    }

    async fn range(&self, table: Table, range: Range<'_>) -> CatalogResult<Entries> {
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let Some(t) = self.table(table)? else {
            return Ok(Vec::new());
        };
        drain(t.range::<&[u8]>((range.from, range.to))?, range)
    }
}

#[async_trait::async_trait]
impl KvRead for RedbRead {
    async fn snapshot(&self) -> CatalogResult<Box<dyn KvSnapshot + '_>> {
        Ok(Box::new(RedbSnapshot(self.0.begin_read()?)))
    }
}
