//! The catalog a node runs on: the embedded one (the default), or PostgreSQL when
//! `--catalog postgres://...` names one (docs/scale-out.md). Everything but start-up,
//! health and shutdown sees it as `Arc<dyn Catalog>`.

use std::sync::Arc;

use catalog::pg::{PgCatalog, PgConfig};
use catalog::{Catalog, CatalogConfig, CatalogMetrics, EmbeddedCatalog};
use storage::{DriveSet, DriveSetConfig};

use crate::config::StorageConfig;

/// The node's catalog.
pub enum NodeCatalog {
    /// The embedded catalog on the drives.
    Embedded(Arc<EmbeddedCatalog>),
    /// A cluster's catalog in PostgreSQL.
    Postgres(Arc<PgCatalog>),
}

impl NodeCatalog {
    /// Opens the catalog the configuration names.
    pub async fn open(config: &crate::config::ServeConfig) -> anyhow::Result<Self> {
        use anyhow::Context;
        let embedded = catalog_config(&config.storage);
        Ok(match &config.catalog_url {
            None => Self::Embedded(
                tokio::task::spawn_blocking(move || EmbeddedCatalog::open(embedded))
                    .await?
                    .context("opening the catalog")?,
            ),
            Some(url) => {
                let mut pg = PgConfig::new(url, &config.node_id, embedded.drives);
                pg.wal = embedded.wal;
                pg.stalled_transaction_timeout = config.lease_timeout;
                Self::Postgres(
                    PgCatalog::open(pg)
                        .await
                        .context("opening the PostgreSQL catalog")?,
                )
            }
        })
    }

    /// The catalog.
    pub fn catalog(&self) -> Arc<dyn Catalog> {
        match self {
            Self::Embedded(c) => c.clone(),
            Self::Postgres(c) => c.clone(),
        }
    }

    /// The commit path's metrics.
    pub fn metrics(&self) -> &CatalogMetrics {
        match self {
            Self::Embedded(c) => c.metrics(),
            Self::Postgres(c) => c.metrics(),
        }
    }

    /// The drives.
    pub fn drives(&self) -> &Arc<DriveSet> {
        match self {
            Self::Embedded(c) => c.drives(),
            Self::Postgres(c) => c.drives(),
        }
    }

    /// Whether a failed commit has stopped the catalog (the embedded catalog stops
    /// taking writes until restart; PostgreSQL's failures are per group commit).
    pub fn is_failed(&self) -> bool {
        match self {
            Self::Embedded(c) => c.is_failed(),
            Self::Postgres(_) => false,
        }
    }

    /// `failed` (the catalog stopped), `degraded` (a drive of `drives` offline) or `ok`:
    /// what `/health` and the console's overview say of the node.
    pub fn state(&self, drives: &[storage::DriveHealth]) -> &'static str {
        if self.is_failed() {
            "failed"
        } else if drives.iter().any(|d| !d.online) {
            "degraded"
        } else {
            "ok"
        }
    }

    /// Removes blobs a crash left without a catalog record. Embedded only: a node of a
    /// cluster cannot tell another node's blob that is being written from an orphan.
    pub async fn collect_orphans(&self) -> catalog::CatalogResult<catalog::orphans::OrphanReport> {
        match self {
            Self::Embedded(c) => c.collect_orphans().await,
            Self::Postgres(_) => Ok(Default::default()),
        }
    }

    /// Finishes the queued commits and stops the catalog's threads.
    pub fn shutdown(&self) {
        match self {
            Self::Embedded(c) => c.shutdown(),
            Self::Postgres(c) => c.shutdown(),
        }
    }
}

/// Catalog settings from the resolved storage settings.
pub fn catalog_config(s: &StorageConfig) -> CatalogConfig {
    let mut c = CatalogConfig::new(DriveSetConfig {
        drives: s.drives.clone(),
        k: s.k,
        m: s.m,
    });
    c.meta_dir = s.meta_dir.clone();
    c.checkpoint_bytes = s.checkpoint_mb << 20;
    if !s.wal_zero_fill {
        c.wal.zero_fill_below_record_bytes = 0;
    }
    c
}
