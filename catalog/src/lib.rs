//! Eddy's catalog: the one transactional metadata store. Buckets, objects and their
//! versions, topics, partitions with their batches, consumer groups, committed offsets
//! and share groups' partition states all change through [`Catalog::commit`], one
//! transaction at a time.
//!
//! The [`Catalog`] trait is the seam between the front ends and a backend: commit,
//! watch, and committed state as byte tables; every read is written once over that
//! state, one handle per domain ([`reads`]). Its implementations:
//! - [`EmbeddedCatalog`], the single-process one, group-commits to the erasure-coded
//!   write-ahead log and materializes the tables in an embedded store (redb);
//! - [`pg::PgCatalog`] keeps the same tables in PostgreSQL for a cluster of nodes over
//!   shared drives (docs/scale-out.md);
//! - [`view::ViewCatalog`], one broker view of either: its names are stored under a
//!   prefix, mapped once on commit and once in the reads ([`reads::names`]).
//!
//! Both backends check and apply every operation with the same rules ([`apply`]) and
//! answer every read with the same code ([`reads`], [`read`]), over the byte tables of
//! [`kv`].

pub mod apply;
pub mod checkpoint;
mod committer;
pub mod domain;
mod embedded;
pub mod error;
pub mod format;
pub mod kv;
pub mod metrics;
pub mod model;
pub mod orphans;
pub mod pg;
pub mod read;
pub mod reads;
mod reaper;
mod record;
mod store_open;
pub mod tables;
pub mod txn;
pub mod view;
pub mod wakeups;

use std::future::Future;
use std::pin::Pin;

use storage::BlobStore;

pub use domain::{
    ExpansionOp, GroupOp, IamOp, IcebergOp, KafkaOp, PipelineOp, S3Op, SchemaOp, TxnOp,
};
pub use embedded::{CatalogConfig, EmbeddedCatalog};
pub use error::{CatalogError, CatalogResult};
pub use metrics::CatalogMetrics;
pub use model::*;
pub use reads::{
    GroupReads, IamReads, IcebergReads, KafkaReads, PipelineReads, Reads, S3Reads, SchemaReads,
    TxnReads, names::Names,
};
pub use txn::{
    CommitOutcome, CompactedBatch, Lease, Op, OpOutcome, ProducerBatch, Transaction, TxnMarker,
};

/// A commit in flight; resolves once the transaction is durable and visible.
pub type CommitFuture = Pin<Box<dyn Future<Output = CatalogResult<CommitOutcome>> + Send>>;

/// The domain handles of [`Catalog`], each made of the catalog's state, log and view.
macro_rules! handles {
    ($($(#[$doc:meta])* $name:ident: $reads:ident,)*) => {$(
        $(#[$doc])*
        fn $name(&self) -> $reads<'_> {
            Reads::new(self.kv(), self.log(), self.view())
        }
    )*};
}

/// The catalog's operations: the seam between the front ends and a backend (the
/// embedded store, or PostgreSQL for several nodes).
///
/// Contract every backend keeps:
/// - **Commit order.** [`Catalog::commit`] queues the transaction when it is *called*,
///   not when its future is first polled: two commits called one after the other from
///   one task are checked and applied in that order. The broker relies on this for a
///   connection's produce requests (their offsets follow the request order) and the S3
///   gateway for one key's event order.
/// - **Ack means durable.** A commit's future resolves `Ok` only once the transaction is
///   durable and visible to every reader of this catalog (on every node sharing it).
/// - **Committed reads.** Reads see committed state only, never a transaction in flight,
///   and a read that starts after a commit resolved sees it.
/// - **Reads are async** and may wait on the network (PostgreSQL): callers must not hold
///   a lock another task needs across them.
pub trait Catalog: Send + Sync {
    /// Commits a transaction: all of its operations or none (see the ordering contract
    /// above: it is queued by this call).
    fn commit(&self, txn: Transaction) -> CommitFuture;
    /// Registers a long-polling reader on these partitions: it is woken by the commits
    /// that append to (or truncate) one of them, and only by those.
    fn watch_partitions(&self, partitions: &[wakeups::PartitionId]) -> wakeups::PartitionWaiter;
    /// Each partition's generation ([`wakeups::Wakeups::generations`]): read before a
    /// partition's state, the same number later means no commit changed that state since.
    fn partition_generations(&self, partitions: &[wakeups::PartitionId]) -> Vec<u64>;
    /// The blob store that object data lives in.
    fn blobs(&self) -> &BlobStore;
    /// Snapshots of committed state, which every read goes through ([`reads`]).
    fn kv(&self) -> &dyn kv::KvRead;
    /// Where stored batches' bytes are.
    fn log(&self) -> &dyn read::BatchLog;
    /// The view this catalog is, as the prefix its names are stored under (`""`: the
    /// default view); `None` (the default): the whole catalog, every name as stored.
    fn view(&self) -> Option<&str> {
        None
    }

    handles! {
        /// Buckets, objects, uploads and bucket settings.
        s3: S3Reads,
        /// Topics, partitions, batches, producers and quotas.
        kafka: KafkaReads,
        /// Consumer groups, their offsets and share groups' partition states.
        groups: GroupReads,
        /// Transactions.
        txns: TxnReads,
        /// Users and identity policies.
        iam: IamReads,
        /// Topic tables, other tables and expansions.
        iceberg: IcebergReads,
        /// Function pipelines and their cursors.
        pipelines: PipelineReads,
        /// The schema registry's schemas and subjects.
        schemas: SchemaReads,
    }
}
