//! `eddy heal`: verifies every block on every drive and rebuilds what is missing or
//! corrupt, with a progress bar, then reports what it found and fixed. Runs with the
//! server stopped (it takes the drives' locks).

use std::sync::Arc;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use storage::heal::{HealOptions, Progress};
use storage::{BlobStore, DriveSet, DriveSetConfig};

use crate::config::StorageConfig;

struct Bar(ProgressBar);

impl Progress for Bar {
    fn total(&self, blobs: u64) {
        self.0.set_length(blobs);
    }
    fn tick(&self) {
        self.0.inc(1);
    }
}

/// Runs one heal pass; fails when something could not be rebuilt.
pub fn run(config: &StorageConfig, json: bool) -> anyhow::Result<()> {
    let set = DriveSet::open(&DriveSetConfig {
        drives: config.drives.clone(),
        k: config.k,
        m: config.m,
    })
    .context("opening the drives")?;
    let offline: Vec<usize> = set
        .health()
        .into_iter()
        .filter(|h| !h.online)
        .map(|h| h.index)
        .collect();
    let set = Arc::new(set);
    let _locks = set
        .lock()
        .context("locking the drives (is `eddy serve` running?)")?;
    let blobs = BlobStore::new(set.clone(), storage::blob::DEFAULT_SHARD_SIZE)?;
    let bar = ProgressBar::new(0);
    if json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("healing {bar:40} {pos}/{len} blobs ({per_sec}, eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let options = HealOptions {
        include_active_segment: true,
        pause: None,
        keep_unfinished: false,
    };
    let report = storage::heal::heal(&blobs, options, &Bar(bar.clone()))?;
    bar.finish_and_clear();
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("drives offline at start: {offline:?}");
        println!("drives formatted:        {:?}", report.drives_formatted);
        println!(
            "log segments:            {} checked, {} drive copies rewritten",
            report.log_segments_checked, report.log_segments_rewritten
        );
        println!(
            "blobs:                   {} checked, {} healed ({} shards rebuilt), {} unfinished removed",
            report.blobs_checked,
            report.blobs_healed,
            report.shards_rebuilt,
            report.blobs_unfinished_removed
        );
        if report.blobs_unrecoverable.is_empty() {
            println!(
                "full redundancy: every block verifies on all {} drives",
                set.drives().len()
            );
        }
    }
    if !report.blobs_unrecoverable.is_empty() {
        anyhow::bail!(
            "{} blobs lost more than {} shards and cannot be rebuilt: {}",
            report.blobs_unrecoverable.len(),
            config.m,
            report.blobs_unrecoverable.join(", ")
        );
    }
    Ok(())
}
