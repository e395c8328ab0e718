//! Opening the embedded store at start. What the store file says (its format, how far it
//! has applied the log) is read first without writing the file, and the store is opened
//! for writing only once the first log record to replay has passed its format check, so a
//! data dir written by a newer Eddy is refused before anything in it is written.

use std::path::{Path, PathBuf};

use redb::{Database, Durability, ReadOnlyDatabase, ReadableDatabase, TableError};
use storage::BlobStore;

use crate::checkpoint::{self, CheckpointPointer};
use crate::error::{CatalogError, CatalogResult};
use crate::format::{self, STORE_FORMAT, STORE_FORMAT_KEY};
use crate::tables::META;

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
            from: applied + 1,
        })
    }

    /// The store, opened for writing now if it is not yet.
    pub fn writable(&mut self) -> CatalogResult<&Database> {
        if self.db.is_none() {
            self.db = Some(Database::create(&self.path)?);
        }
        self.db.as_ref().ok_or(CatalogError::Closed)
    }

    /// The store for the catalog to run on, with its format recorded (every path here
    /// has checked a format the store already records).
    pub fn open(mut self) -> CatalogResult<Database> {
        self.writable()?;
        let db = self.db.take().ok_or(CatalogError::Closed)?;
        // Every format before this build's migrates by recording the new number: format
        // 2 only added a table, which a format-1 store lacks.
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
