//! Opening the embedded store at start. What the store file says (its format, how far it
//! has applied the log) is read first without writing the file, and the store is opened
//! for writing only once the first log record to replay has passed its format check, so a
//! data dir written by a newer Eddy is refused before anything in it is written.

use std::path::{Path, PathBuf};

use redb::{
    Database, Durability, ReadOnlyDatabase, ReadableDatabase, ReadableTable, TableError,
    WriteTransaction,
};
use storage::BlobStore;

use crate::checkpoint::{self, CheckpointPointer};
use crate::error::{CatalogError, CatalogResult};
use crate::format::{self, STORE_FORMAT, STORE_FORMAT_KEY, Stored, v1};
use crate::model::{ObjectVersion, UploadRecord};
use crate::tables::{META, OBJECTS, Table, UPLOADS, VERSIONS};

/// The store file as found.
enum OnDisk {
    /// No file.
    Missing,
    /// A cleanly closed store of a format this build reads, at this applied LSN.
    Clean { applied: u64 },
    /// A store that was not closed cleanly: only opening it for writing (which repairs
    /// it) can tell more.
    NeedsRepair,
}

fn peek(path: &Path) -> CatalogResult<OnDisk> {
    if !path.exists() {
        return Ok(OnDisk::Missing);
    }
    match ReadOnlyDatabase::open(path) {
        Ok(db) => {
            check_format(&db)?;
            Ok(OnDisk::Clean {
                applied: checkpoint::applied_lsn(&db)?,
            })
        }
        // Repair needs a writer; anything else unreadable is rebuilt below.
        Err(_) => Ok(OnDisk::NeedsRepair),
    }
}

/// The format a store records (`None`: a new store, or one written by a build before
/// formats were recorded, which wrote format 1).
fn recorded_format(db: &impl ReadableDatabase) -> CatalogResult<Option<u64>> {
    let r = db.begin_read()?;
    let meta = match r.open_table(META) {
        Ok(t) => t,
        Err(TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let found = meta.get(STORE_FORMAT_KEY)?;
    found.map(|v| checkpoint::u64_value(v.value())).transpose()
}

/// Refuses a store whose recorded format is newer than this build reads.
fn check_format(db: &impl ReadableDatabase) -> CatalogResult<()> {
    recorded_format(db)?.map_or(Ok(()), format::check_store_format)
}

/// The store, ready to replay the log from [`Store::from`].
pub(crate) struct Store {
    path: PathBuf,
    db: Option<Database>,
    /// Whether the store's values are in this build's format (checked when it is first
    /// opened for writing).
    migrated: bool,
    /// The first LSN the store has not applied.
    pub from: u64,
}

impl Store {
    /// Finds the store at `path` and brings it to the newest checkpoint when it is
    /// missing, unreadable or behind it.
    pub fn prepare(
        path: &Path,
        blobs: &BlobStore,
        ptr: Option<&CheckpointPointer>,
    ) -> CatalogResult<Self> {
        let (db, applied) = match peek(path)? {
            OnDisk::Missing => (None, None),
            OnDisk::Clean { applied } => (None, Some(applied)),
            OnDisk::NeedsRepair => match Database::create(path) {
                Ok(db) => {
                    check_format(&db)?;
                    let applied = checkpoint::applied_lsn(&db)?;
                    (Some(db), Some(applied))
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "catalog store unreadable; rebuilding");
                    let _ = std::fs::rename(path, path.with_extension("corrupt"));
                    (None, None)
                }
            },
        };
        let behind = match (applied, ptr) {
            (Some(applied), Some(p)) => applied < p.lsn,
            (Some(_), None) => false,
            (None, _) => true,
        };
        let (db, applied) = match (behind, ptr) {
            (true, Some(p)) => {
                drop(db);
                checkpoint::restore(path, blobs, p)?;
                match peek(path)? {
                    OnDisk::Clean { applied } => (None, applied),
                    _ => return Err(CatalogError::Corrupt("restored store unreadable".into())),
                }
            }
            _ => (db, applied.unwrap_or(0)),
        };
        Ok(Self {
            path: path.to_path_buf(),
            db,
            migrated: false,
            from: applied + 1,
        })
    }

    /// The store, opened for writing now if it is not yet, its values migrated to this
    /// build's format before anything (a replayed record) writes one.
    pub fn writable(&mut self) -> CatalogResult<&Database> {
        if self.db.is_none() {
            self.db = Some(Database::create(&self.path)?);
        }
        let db = self.db.as_ref().ok_or(CatalogError::Closed)?;
        if !self.migrated {
            migrate_values(db)?;
            self.migrated = true;
        }
        Ok(db)
    }

    /// The store for the catalog to run on, with its format recorded (every path here
    /// has checked a format the store already records).
    pub fn open(mut self) -> CatalogResult<Database> {
        self.writable()?;
        let db = self.db.take().ok_or(CatalogError::Closed)?;
        // Values were migrated by `writable`; what is left of every older format is
        // recording the new number (the tables formats 2 to 7 added are only missing).
        if recorded_format(&db)? != Some(STORE_FORMAT) {
            let mut w = db.begin_write()?;
            w.set_durability(Durability::Immediate)?;
            w.open_table(META)?
                .insert(STORE_FORMAT_KEY, STORE_FORMAT.to_be_bytes().as_slice())?;
            w.commit()?;
        }
        Ok(db)
    }
}

/// Entries rewritten per step of a migration (each step reads this many, then writes them;
/// the whole migration is one write transaction, so a crash leaves the old store whole).
const MIGRATE_CHUNK: usize = 10_000;

/// Rewrites a store of a format before 8 into format 8's value encodings: object versions
/// (`objects`, `versions`) and uploads (`uploads`) gained fields, which a format-1
/// encoding reads as absent. One durable transaction, the new format recorded in it.
fn migrate_values(db: &Database) -> CatalogResult<()> {
    let found = recorded_format(db)?.unwrap_or(1);
    if found >= 8 {
        return Ok(());
    }
    let mut w = db.begin_write()?;
    w.set_durability(Durability::Immediate)?;
    let mut n = rewrite::<v1::ObjectVersion, ObjectVersion>(&w, OBJECTS)?;
    n += rewrite::<v1::ObjectVersion, ObjectVersion>(&w, VERSIONS)?;
    n += rewrite::<v1::UploadRecord, UploadRecord>(&w, UPLOADS)?;
    w.open_table(META)?
        .insert(STORE_FORMAT_KEY, STORE_FORMAT.to_be_bytes().as_slice())?;
    w.commit()?;
    tracing::info!(
        from = found,
        to = STORE_FORMAT,
        values = n,
        "catalog store migrated"
    );
    Ok(())
}

/// Re-encodes every value of `table` from the frozen type `Old` into the live type's
/// current encoding; the number rewritten.
fn rewrite<Old, Live>(w: &WriteTransaction, table: Table) -> CatalogResult<u64>
where
    Old: serde::de::DeserializeOwned,
    Live: From<Old> + Stored,
{
    let mut t = w.open_table(table)?;
    let mut after: Option<Vec<u8>> = None;
    let mut n = 0u64;
    loop {
        let mut chunk = Vec::with_capacity(MIGRATE_CHUNK);
        let range = match &after {
            Some(k) => t.range::<&[u8]>((
                std::ops::Bound::Excluded(k.as_slice()),
                std::ops::Bound::Unbounded,
            ))?,
            None => t.range::<&[u8]>(..)?,
        };
        for e in range.take(MIGRATE_CHUNK) {
            let (k, v) = e?;
            let old: Old = postcard::from_bytes(v.value())?;
            chunk.push((k.value().to_vec(), Live::from(old).encode()?));
        }
        let Some((last, _)) = chunk.last() else {
            return Ok(n);
        };
        after = Some(last.clone());
        for (k, v) in &chunk {
            t.insert(k.as_slice(), v.as_slice())?;
        }
        n += chunk.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::{ObjectData, ObjectLock};

    fn version(id: &str) -> ObjectVersion {
        ObjectVersion {
            metadata: BTreeMap::from([("content-type".into(), "text/plain".into())]),
            ..ObjectVersion::new(
                id.into(),
                ObjectData::Inline(b"foo".to_vec()),
                3,
                "acbd18db4cc2f85cedef654fccc4a4d8".into(),
                1_764_500_000_000,
            )
        }
    }

    fn upload() -> UploadRecord {
        UploadRecord {
            upload_id: "u1".into(),
            bucket: "b".into(),
            key: "k".into(),
            owner: "alice".into(),
            initiated_ms: 1,
            metadata: BTreeMap::new(),
            tags: BTreeMap::new(),
            checksum_algorithm: None,
            checksum_type: None,
            lock: ObjectLock::default(),
            encryption: None,
            acl: None,
        }
    }

    /// A format-7 store (format 1's value encodings) with more versions than one
    /// migration step takes.
    fn format_7_store(path: &Path, versions: usize) -> Database {
        let db = Database::create(path).unwrap();
        let w = db.begin_write().unwrap();
        {
            let v1 = |v: ObjectVersion| postcard::to_stdvec(&v1::ObjectVersion::from(v)).unwrap();
            let mut t = w.open_table(VERSIONS).unwrap();
            for i in 0..versions {
                let key = format!("b\0k{i:06}");
                t.insert(key.as_bytes(), v1(version(&format!("v{i}"))).as_slice())
                    .unwrap();
            }
            w.open_table(OBJECTS)
                .unwrap()
                .insert(b"b\0k".as_slice(), v1(version("null")).as_slice())
                .unwrap();
            let u = postcard::to_stdvec(&v1::UploadRecord::from(upload())).unwrap();
            w.open_table(UPLOADS)
                .unwrap()
                .insert(b"b\0k\0u1".as_slice(), u.as_slice())
                .unwrap();
            w.open_table(META)
                .unwrap()
                .insert(STORE_FORMAT_KEY, 7u64.to_be_bytes().as_slice())
                .unwrap();
        }
        w.commit().unwrap();
        db
    }

    #[test]
    fn a_format_7_store_is_rewritten_in_the_current_format_once() {
        let dir = tempfile::tempdir().unwrap();
        let n = MIGRATE_CHUNK + 7;
        let db = format_7_store(&dir.path().join("c.redb"), n);
        migrate_values(&db).unwrap();
        assert_eq!(recorded_format(&db).unwrap(), Some(STORE_FORMAT));
        let r = db.begin_read().unwrap();
        let t = r.open_table(VERSIONS).unwrap();
        let mut seen = 0;
        for (i, e) in t.iter().unwrap().enumerate() {
            let (_, v) = e.unwrap();
            assert_eq!(
                ObjectVersion::decode(v.value()).unwrap(),
                version(&format!("v{i}"))
            );
            seen += 1;
        }
        assert_eq!(seen, n);
        let current = r.open_table(OBJECTS).unwrap();
        let v = current.get(b"b\0k".as_slice()).unwrap().unwrap();
        assert_eq!(ObjectVersion::decode(v.value()).unwrap(), version("null"));
        let uploads = r.open_table(UPLOADS).unwrap();
        let u = uploads.get(b"b\0k\0u1".as_slice()).unwrap().unwrap();
        assert_eq!(UploadRecord::decode(u.value()).unwrap(), upload());
        drop((t, current, uploads, r));
        // A second open finds format 8 and leaves the values alone.
        migrate_values(&db).unwrap();
        let r = db.begin_read().unwrap();
        let t = r.open_table(OBJECTS).unwrap();
        let v = t.get(b"b\0k".as_slice()).unwrap().unwrap();
        assert_eq!(ObjectVersion::decode(v.value()).unwrap(), version("null"));
    }
}
