//! Listing cost against bucket size, below HTTP: fills one bucket through the catalog
//! (10,000 objects per transaction) and times `list_page` (what ListObjectsV2 runs) at
//! growing sizes. Ignored by default; `bench/list_scale.sh` runs it:
//!
//! ```sh
//! EDDY_LIST_KEYS=1000000 cargo test -p eddy-s3gw --test list_scale -- --ignored --nocapture
//! ```

use catalog::S3Op;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use catalog::{
    BucketRecord, Catalog, CatalogConfig, EmbeddedCatalog, ObjectData, ObjectVersion, Op,
    Transaction, Versioning,
};
use s3gw::Gateway;
use s3gw::list::list_page;
use storage::DriveSetConfig;

fn key(i: usize) -> String {
    format!("dir-{:04}/key-{i:09}", i % 1000)
}

fn version() -> ObjectVersion {
    ObjectVersion::new(
        "null".into(),
        ObjectData::Inline(b"x".to_vec()),
        1,
        "9dd4e461268c8034f5c8564e155c67a6".into(),
        1,
    )
}

/// Best of five runs, in milliseconds.
async fn best(mut f: impl AsyncFnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        f().await;
        best = best.min(t.elapsed().as_secs_f64() * 1000.0);
    }
    best
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: run by bench/list_scale.sh"]
async fn listing_cost_does_not_grow_with_bucket_size() {
    let total: usize = std::env::var("EDDY_LIST_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let mut config = CatalogConfig::new(DriveSetConfig::under(dir.path(), 4, 2));
    config.checkpoint_bytes = u64::MAX;
    let cat = EmbeddedCatalog::open(config).unwrap();
    cat.commit(Transaction::new(vec![Op::S3(S3Op::CreateBucket(
        BucketRecord {
            name: "bench".into(),
            owner: "admin".into(),
            created_ms: 0,
            versioning: Versioning::Unversioned,
            tags: BTreeMap::new(),
            settings: BTreeMap::new(),
        },
    ))]))
    .await
    .unwrap();
    let gw = Gateway::new(
        cat.clone() as Arc<dyn Catalog>,
        Arc::new(iam::Directory::in_memory(&[])),
    );
    println!(
        "{:>9} {:>9} {:>14} {:>15} {:>17} {:>18}",
        "keys", "insert/s", "first page ms", "middle page ms", "delimiter pg ms", "prefix+delim ms"
    );
    let mut done = 0usize;
    let mut checkpoint = 10_000usize.min(total);
    let mut first_page = None;
    loop {
        let t = Instant::now();
        while done < checkpoint {
            let end = (done + 10_000).min(checkpoint);
            let ops = (done..end)
                .map(|i| {
                    Op::S3(S3Op::PutObject {
                        bucket: "bench".into(),
                        key: key(i),
                        version: version(),
                        replace_null: true,
                    })
                })
                .collect();
            cat.commit(Transaction::new(ops)).await.unwrap();
            done = end;
        }
        let rate = done as f64 / t.elapsed().as_secs_f64().max(1e-9);
        let mid = key(done / 2);
        let page = async |prefix: &str, delim: &str, after: Option<String>| {
            let p = list_page(&gw, "bench", prefix, delim, after, 1000)
                .await
                .unwrap();
            assert_eq!(p.objects.len() + p.prefixes.len(), 1000.min(done));
        };
        let first = best(async || page("", "", None).await).await;
        let middle = best(async || page("", "", Some(mid.clone())).await).await;
        let delim = best(async || page("", "/", None).await).await;
        let pd = best(async || {
            list_page(&gw, "bench", "dir-0500/", "/", None, 1000)
                .await
                .unwrap();
        })
        .await;
        println!("{done:>9} {rate:>9.0} {first:>14.2} {middle:>15.2} {delim:>17.2} {pd:>18.2}");
        first_page.get_or_insert(first);
        if checkpoint == total {
            break;
        }
        checkpoint = (checkpoint * 10).min(total);
    }
}
