//! The catalog's reads, one handle per domain ([`crate::Catalog::s3`], `kafka`,
//! `groups`, `txns`, `iam`, `iceberg`), each written once over the core's committed
//! state ([`crate::kv::KvRead`], [`crate::read::BatchLog`]) for every backend and every
//! view. The view-scoped domains (topics, groups, transactions, expansions and their
//! tables) map names through [`names::Names`] here, once; buckets, objects, users,
//! policies, quotas and partitions by id are shared by every view.

pub mod groups;
pub mod iam;
pub mod iceberg;
pub mod kafka;
pub mod names;
pub mod pipelines;
pub mod s3;
pub mod schemas;
pub mod txns;

use std::marker::PhantomData;

use crate::error::CatalogResult;
use crate::kv::KvRead;
use crate::read::{self, BatchLog};
use crate::tables::Table;
use names::Names;

/// One domain's reads of one catalog (`D` is the domain, whose module has the reads):
/// its committed state, its batch log, and how its clients name things.
pub struct Reads<'a, D> {
    pub(crate) kv: &'a dyn KvRead,
    pub(crate) log: &'a dyn BatchLog,
    pub(crate) names: Names<'a>,
    domain: PhantomData<D>,
}

impl<'a, D> Reads<'a, D> {
    /// The reads of the catalog whose state, log and view these are.
    pub(crate) fn new(kv: &'a dyn KvRead, log: &'a dyn BatchLog, view: Option<&'a str>) -> Self {
        Self {
            kv,
            log,
            names: Names(view),
            domain: PhantomData,
        }
    }
}

/// Declares each domain (the type parameter of its reads, whose module has them) and
/// the name of its reads.
macro_rules! domains {
    ($($(#[$doc:meta])* $domain:ident => $reads:ident,)*) => {$(
        $(#[$doc])*
        pub enum $domain {}
        #[doc = concat!("The reads of the [`", stringify!($domain), "`] domain.")]
        pub type $reads<'a> = Reads<'a, $domain>;
    )*};
}

domains! {
    /// Buckets, objects, uploads and bucket settings ([`crate::Catalog::s3`]).
    S3 => S3Reads,
    /// Users and identity policies ([`crate::Catalog::iam`]).
    Iam => IamReads,
    /// Topics, partitions, batches, producers, quotas ([`crate::Catalog::kafka`]).
    Kafka => KafkaReads,
    /// Consumer groups, their offsets and share groups' partition states
    /// ([`crate::Catalog::groups`]).
    Groups => GroupReads,
    /// Transactions ([`crate::Catalog::txns`]).
    Txns => TxnReads,
    /// Topic tables, other tables and expansions ([`crate::Catalog::iceberg`]).
    Iceberg => IcebergReads,
    /// Function pipelines and their cursors ([`crate::Catalog::pipelines`]).
    Pipelines => PipelineReads,
    /// The schema registry's schemas and subjects ([`crate::Catalog::schemas`]).
    Schemas => SchemaReads,
}

impl<D> Reads<'_, D> {
    /// A partition's value in `table` (none when absent).
    async fn of_partition<T: crate::format::Stored>(
        &self,
        table: Table,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<T>> {
        read::get(
            self.kv,
            table,
            &crate::tables::partition_key(topic_id, partition),
        )
        .await
    }
}

/// Every decoded value of a table, in key order.
async fn all<T: crate::format::Stored>(kv: &dyn KvRead, table: Table) -> CatalogResult<Vec<T>> {
    read::scan(kv, table, b"", usize::MAX)
        .await
        .map(|v| v.into_iter().map(|(_, t)| t).collect())
}
