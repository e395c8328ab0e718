//! Stores, checkpoints and log records of a newer format than this build reads are refused, and left untouched.

use super::*;

/// Every file under `dir` (but the drives' lock files) with its bytes.
pub(super) fn files(dir: &Path) -> BTreeMap<std::path::PathBuf, Vec<u8>> {
    fn walk(p: &Path, out: &mut BTreeMap<std::path::PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(p).unwrap().flatten() {
            let path = e.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.file_name().is_some_and(|n| n != ".lock") {
                out.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, &mut out);
    out
}

/// A catalog with one bucket and a checkpoint, closed.
pub(super) async fn closed_catalog(dir: &Path) {
    let c = open(dir);
    commit(&c, vec![bucket("b")]).await.unwrap();
    c.checkpoint().unwrap();
    c.shutdown();
}

pub(super) fn store_path(dir: &Path) -> std::path::PathBuf {
    dir.join("drive-0/catalog/catalog.redb")
}

pub(super) fn set_store_format(dir: &Path, format: u64) {
    use redb::ReadableDatabase;
    let db = redb::Database::create(store_path(dir)).unwrap();
    let w = db.begin_write().unwrap();
    w.open_table(catalog::tables::META)
        .unwrap()
        .insert(
            catalog::format::STORE_FORMAT_KEY,
            format.to_be_bytes().as_slice(),
        )
        .unwrap();
    w.commit().unwrap();
    assert!(db.begin_read().is_ok());
}

/// Opening fails with a message naming the found and the newest readable format, and
/// leaves every file as it was.
pub(super) fn assert_refused(dir: &Path, what: &str) {
    let before = files(dir);
    let err = EmbeddedCatalog::open(CatalogConfig::new(DriveSetConfig::under(dir, 4, 2)))
        .err()
        .unwrap_or_else(|| panic!("{what} of a newer format was opened"));
    let newest = catalog::format::STORE_FORMAT;
    assert_eq!(newest, u64::from(catalog::format::NEWEST_RECORD_FORMAT));
    assert!(
        err.to_string().contains(&format!(
            "is format {}, but this build reads formats up to {newest}",
            newest + 1
        )),
        "{what}: {err}"
    );
    let after = files(dir);
    let changed: Vec<_> = before
        .keys()
        .chain(after.keys())
        .filter(|p| before.get(*p) != after.get(*p))
        .collect();
    assert!(
        changed.is_empty(),
        "{what}: a refused data dir was written: {changed:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_of_a_newer_format_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    closed_catalog(dir.path()).await;
    set_store_format(dir.path(), catalog::format::STORE_FORMAT + 1);
    assert_refused(dir.path(), "the store");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_checkpoint_of_a_newer_store_format_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    closed_catalog(dir.path()).await;
    set_store_format(dir.path(), catalog::format::STORE_FORMAT + 1);
    // A checkpoint of that store, then the store file lost: opening would restore it.
    {
        let set =
            Arc::new(storage::DriveSet::open(&DriveSetConfig::under(dir.path(), 4, 2)).unwrap());
        let blobs = storage::BlobStore::new(set, storage::blob::DEFAULT_SHARD_SIZE).unwrap();
        let db = redb::Database::create(store_path(dir.path())).unwrap();
        catalog::checkpoint::write(&db, &blobs).unwrap();
    }
    std::fs::remove_file(store_path(dir.path())).unwrap();
    assert_refused(dir.path(), "the checkpoint");
    assert!(!store_path(dir.path()).exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_log_record_of_a_newer_format_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    closed_catalog(dir.path()).await;
    {
        let set =
            Arc::new(storage::DriveSet::open(&DriveSetConfig::under(dir.path(), 4, 2)).unwrap());
        let config = storage::WalConfig {
            payload_format: catalog::format::NEWEST_RECORD_FORMAT + 1,
            ..storage::WalConfig::default()
        };
        let mut wal = storage::Wal::open(set, config, 1, |_| Ok(())).unwrap();
        wal.append(b"a record of a format from the future".to_vec())
            .unwrap();
    }
    assert_refused(dir.path(), "the log");
}
