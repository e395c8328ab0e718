//! The catalog conformance suite: the same scenarios against every backend, through the
//! `Catalog` trait only. A backend passes when it commits and answers exactly as the
//! embedded catalog does.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use catalog::pg::{PgCatalog, PgConfig};
use catalog::{
    BucketRecord, Catalog, CatalogConfig, CatalogError, CatalogMetrics, EmbeddedCatalog,
    ObjectData, ObjectVersion, Op, OpOutcome, TopicRecord, Transaction, Versioning,
};
use common::postgres::{self, Postgres};
use storage::DriveSetConfig;

/// A catalog under test, with what keeps it alive.
struct Under {
    catalog: Arc<dyn Catalog>,
    metrics: CatalogMetrics,
    _dir: tempfile::TempDir,
    _pg: Option<Postgres>,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Embedded,
    Postgres,
}

/// A fresh catalog of `kind`; `None` when PostgreSQL is not installed (see
/// [`postgres::available`]).
async fn open(kind: Kind) -> Option<Under> {
    let dir = tempfile::tempdir().unwrap();
    let drives = DriveSetConfig::under(dir.path(), 4, 2);
    Some(match kind {
        Kind::Embedded => {
            let c = EmbeddedCatalog::open(CatalogConfig::new(drives)).unwrap();
            Under {
                metrics: c.metrics().clone(),
                catalog: c,
                _dir: dir,
                _pg: None,
            }
        }
        Kind::Postgres => {
            if !postgres::available() {
                eprintln!("skipped: PostgreSQL is not installed");
                return None;
            }
            let pg = Postgres::start().await;
            let url = pg.database("eddy").await;
            let c = PgCatalog::open(PgConfig::new(&url, "node-a", drives))
                .await
                .unwrap();
            Under {
                metrics: c.metrics().clone(),
                catalog: c,
                _dir: dir,
                _pg: Some(pg),
            }
        }
    })
}

/// One test per backend for each scenario.
macro_rules! conformance {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[tokio::test(flavor = "multi_thread")]
            async fn embedded() {
                if let Some(u) = super::open(super::Kind::Embedded).await {
                    super::$scenario(&u).await;
                }
            }

            #[tokio::test(flavor = "multi_thread")]
            async fn postgres() {
                if let Some(u) = super::open(super::Kind::Postgres).await {
                    super::$scenario(&u).await;
                }
            }
        }
    )*};
}

conformance!(
    transactions_commit_whole_or_not_at_all,
    concurrent_transactions_share_group_commits,
    listing_pages_in_byte_order,
);

fn bucket(name: &str) -> Op {
    Op::CreateBucket(BucketRecord {
        name: name.into(),
        owner: "eddyadmin".into(),
        created_ms: 1,
        versioning: Versioning::Unversioned,
        tags: BTreeMap::new(),
        settings: BTreeMap::new(),
    })
}

fn object(bucket: &str, key: &str, body: &[u8]) -> Op {
    Op::PutObject {
        bucket: bucket.into(),
        key: key.into(),
        version: ObjectVersion {
            version_id: "null".into(),
            delete_marker: false,
            size: body.len() as u64,
            etag: format!("etag-{}", body.len()),
            last_modified_ms: 2,
            data: ObjectData::Inline(body.to_vec()),
            metadata: BTreeMap::new(),
            tags: BTreeMap::new(),
            checksums: BTreeMap::new(),
            parts: Vec::new(),
            owner: String::new(),
            lock: catalog::ObjectLock::default(),
            encryption: None,
            part_checksums: Vec::new(),
        },
        replace_null: true,
    }
}

fn topic(name: &str, id: u128, partitions: u32) -> Op {
    Op::CreateTopic(TopicRecord {
        name: name.into(),
        id,
        partitions,
        configs: BTreeMap::new(),
        created_ms: 3,
    })
}

fn append(id: u128, partition: u32, count: u32, tag: u8) -> Op {
    let mut batch = vec![0u8; 8];
    batch.extend_from_slice(&[tag; 32]);
    Op::Append {
        topic_id: id,
        partition,
        offset_count: count,
        max_timestamp: 10,
        batch: batch.into(),
        producer: None,
        transactional_id: None,
    }
}

async fn commit(c: &dyn Catalog, ops: Vec<Op>) -> Result<catalog::CommitOutcome, CatalogError> {
    c.commit(Transaction::new(ops)).await
}

async fn transactions_commit_whole_or_not_at_all(u: &Under) {
    let c = u.catalog.as_ref();
    commit(c, vec![bucket("b"), topic("t", 7, 3)])
        .await
        .unwrap();
    let out = commit(
        c,
        vec![
            append(7, 0, 2, 1),
            append(7, 2, 5, 2),
            object("b", "k", b"hello"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        out.ops,
        vec![
            OpOutcome::Appended { base_offset: 0 },
            OpOutcome::Appended { base_offset: 0 },
            OpOutcome::Done
        ]
    );
    // Partition 9 does not exist: nothing of this transaction may appear.
    let err = commit(
        c,
        vec![
            append(7, 1, 1, 3),
            append(7, 9, 1, 3),
            object("b", "x", b"no"),
        ],
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, CatalogError::UnknownPartition { partition: 9, .. }),
        "{err}"
    );
    assert_eq!(c.partition(7, 1).await.unwrap().unwrap().next_offset, 0);
    assert!(c.object("b", "x").await.unwrap().is_none());
    let out = commit(c, vec![append(7, 0, 3, 4)]).await.unwrap();
    assert_eq!(out.ops, vec![OpOutcome::Appended { base_offset: 2 }]);
    let batches = c.read_batches(7, 0, 3, 1 << 20).await.unwrap();
    assert_eq!(batches.len(), 1, "offset 3 lies inside the second batch");
    assert_eq!((batches[0].base_offset, batches[0].last_offset), (2, 4));
    assert_eq!(
        &batches[0].bytes[..8],
        &2i64.to_be_bytes(),
        "base offset rewritten"
    );
    assert_eq!(&batches[0].bytes[8..], &[4u8; 32], "the bytes appended");
    assert_eq!(
        c.read_batches(7, 0, 0, 1).await.unwrap().len(),
        1,
        "at least one batch"
    );
    assert_eq!(c.read_batches(7, 0, 0, 1 << 20).await.unwrap().len(), 2);
    assert!(matches!(
        commit(c, vec![Op::DeleteBucket { name: "b".into() }]).await,
        Err(CatalogError::BucketNotEmpty(_))
    ));
    assert!(matches!(
        commit(c, vec![bucket("b")]).await,
        Err(CatalogError::BucketExists(_))
    ));
}

async fn concurrent_transactions_share_group_commits(u: &Under) {
    commit(u.catalog.as_ref(), vec![topic("t", 1, 4)])
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for w in 0..64u32 {
        let c = u.catalog.clone();
        tasks.push(tokio::spawn(async move {
            let mut offsets = Vec::new();
            for _ in 0..20 {
                let out = commit(c.as_ref(), vec![append(1, w % 4, 1, w as u8)])
                    .await
                    .unwrap();
                if let OpOutcome::Appended { base_offset } = out.ops[0] {
                    offsets.push(base_offset);
                }
            }
            (w % 4, offsets)
        }));
    }
    let mut per_partition: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for t in tasks {
        let (p, offsets) = t.await.unwrap();
        assert!(offsets.windows(2).all(|w| w[0] < w[1]), "offsets increase");
        per_partition.entry(p).or_default().extend(offsets);
    }
    for (p, mut offsets) in per_partition {
        offsets.sort_unstable();
        assert_eq!(
            offsets,
            (0..320).collect::<Vec<_>>(),
            "partition {p}: no gaps or reuse"
        );
    }
    let m = &u.metrics;
    assert!(
        m.group_commits.get() < m.transactions.get(),
        "{} group commits for {} transactions",
        m.group_commits.get(),
        m.transactions.get()
    );
}

async fn listing_pages_in_byte_order(u: &Under) {
    let c = u.catalog.as_ref();
    commit(c, vec![bucket("b"), bucket("c")]).await.unwrap();
    for k in ["a/1", "a/2", "a/3", "b", "a", "é", "Z"] {
        commit(c, vec![object("b", k, k.as_bytes())]).await.unwrap();
    }
    commit(c, vec![object("c", "a/9", b"other bucket")])
        .await
        .unwrap();
    let keys = |v: Vec<(String, ObjectVersion)>| v.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    assert_eq!(
        keys(c.list_objects("b", "", None, 100).await.unwrap()),
        vec!["Z", "a", "a/1", "a/2", "a/3", "b", "é"]
    );
    assert_eq!(
        keys(c.list_objects("b", "a/", Some("a/1"), 1).await.unwrap()),
        vec!["a/2"]
    );
    assert_eq!(
        keys(c.list_objects("b", "a/", Some("a/3"), 10).await.unwrap()),
        Vec::<String>::new()
    );
    // Overwriting an unversioned key keeps one version.
    commit(c, vec![object("b", "a", b"again")]).await.unwrap();
    assert_eq!(c.list_versions("b", "a", None, 10).await.unwrap().len(), 4);
}
