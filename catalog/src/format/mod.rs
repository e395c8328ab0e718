//! The catalog's persistent encodings and their versions (`docs/format.md` describes them
//! byte by byte). Three things are versioned here:
//!
//! - **log record payloads**: the log frame names each record's format
//!   ([`RECORD_FORMAT`] is written, every format up to [`NEWEST_RECORD_FORMAT`] is read);
//! - **store values**: the embedded store keeps its format in its `meta` table
//!   ([`STORE_FORMAT_KEY`]; a store without the key is format 1), and a checkpoint, being
//!   a dump of the store, carries it in the same entry;
//! - **checkpoint dumps**: the digit of the dump's magic ([`CHECKPOINT_LAYOUT`]).
//!
//! Each released format's types are frozen in their own module ([`v1`]; [`v2`]: what
//! format 2 added, log compaction; [`v3`]: what format 3 added, blob expansion; [`v4`]:
//! what format 4 added, Kafka transactions; [`v5`]: client quotas; [`v6`]: users,
//! policies and bucket policies; [`v7`]: bucket lifecycle and CORS configurations; [`v8`]:
//! object lock, owners and encryption on object versions and uploads; [`v9`]: function
//! pipelines and their cursors; [`v10`]: users' Iceberg namespaces and views; [`v11`]:
//! S3 access control lists on object versions and uploads; [`v12`]: the schema
//! registry's schemas and subjects; [`v13`]: share groups' partition states) and
//! converted to and from the live types; the live types are never encoded directly, so
//! changing them never changes what stored bytes mean. A format this build does not
//! know is refused with [`storage::StorageError::Format`] (the one error for every
//! layer's formats), naming both versions, before anything is written.

/// Both directions between a frozen struct and its live twin, naming every field (a field
/// missing on either side is a compile error). A field converts with `.into()`, or, named
/// as `field: each` or `field: opt`, element by element.
macro_rules! twin {
    ($frozen:ident <=> $live:path { $($field:ident $(: $conv:ident)?),* $(,)? }) => {
        impl From<$frozen> for $live {
            fn from(v: $frozen) -> Self {
                let $frozen { $($field),* } = v;
                Self { $($field: twin!(@conv $field $($conv)?)),* }
            }
        }
        impl From<$live> for $frozen {
            fn from(v: $live) -> Self {
                let $live { $($field),* } = v;
                Self { $($field: twin!(@conv $field $($conv)?)),* }
            }
        }
    };
    (@conv $field:ident) => { $field.into() };
    (@conv $field:ident $conv:ident) => { $conv($field) };
}

/// A vector's elements converted (frozen to live or back).
fn each<A, B: From<A>>(v: Vec<A>) -> Vec<B> {
    v.into_iter().map(B::from).collect()
}

/// An option's value converted (frozen to live or back).
fn opt<A, B: From<A>>(v: Option<A>) -> Option<B> {
    v.map(B::from)
}

pub mod v1;
pub mod v10;
pub mod v11;
pub mod v12;
pub mod v13;
pub mod v2;
pub mod v3;
pub mod v4;
pub mod v5;
pub mod v6;
pub mod v7;
pub mod v8;
pub mod v9;

use crate::error::{CatalogError, CatalogResult};
use crate::model::{AbortedTxn, ClientQuotas, TxnPartition, TxnRecord};
use crate::model::{BucketConfig, BucketPolicy, PolicyRecord, UserRecord};
use crate::model::{
    BucketRecord, CheckpointPointer, CompactionState, Expansion, GroupRecord, ObjectVersion,
    OffsetRecord, PartRecord, PartitionState, ProducerState, TableRecord, TopicRecord, TopicTable,
    UploadRecord,
};
use crate::model::{NamespaceRecord, PipelinePosition, PipelineRecord};
use crate::model::{SchemaRecord, ShareStateRecord, SubjectRecord};

/// The log record payload format this build writes.
pub const RECORD_FORMAT: u16 = 13;
/// The newest log record payload format this build reads (it reads every older one).
pub const NEWEST_RECORD_FORMAT: u16 = 13;
/// The store value format this build writes and the newest it reads. Format 2 added the
/// `compaction` table, format 3 the `expansions` and `other_tables` tables, format 4 the
/// `txns`, `txn_offsets`, `txn_partitions` and `aborted_txns` tables, format 5 the
/// `client_quotas` table, format 6 the `users`, `policies` and `bucket_policies` tables, format 7 the
/// `bucket_configs` table, format 8 new encodings of the values of `objects`, `versions`
/// and `uploads` ([`v8`]), format 9 the `pipelines` and `pipeline_positions` tables,
/// format 10 the `namespaces` and `iceberg_views` tables, format 11 an access control
/// list in the metadata map of versions and uploads ([`v11::ACL_KEY`]), format 12 the
/// `schemas`, `schema_subjects` and `schema_fingerprints` tables, format 13 the
/// `share_states` table. An older store is migrated when it is opened: a store before
/// format 8 has those three tables rewritten (`crate::store_open`); every other format
/// only lacks tables or entries, so for them only the recorded format changes.
pub const STORE_FORMAT: u64 = 13;
/// `meta` key of the store's value format (u64, big-endian, like the other counters).
pub const STORE_FORMAT_KEY: &[u8] = b"store_format";
/// The checkpoint dump layout this build writes and the newest it reads: the last byte of
/// the dump's magic, `EDDYCKP9`. Layout 2 is layout 1 with table tag 16 (`compaction`),
/// layout 3 layout 2 with tags 17 (`expansions`) and 18 (`other_tables`), layout 4
/// layout 3 with tags 19 to 22 (the transaction tables), layout 5 layout 4 with tag 23
/// (`client_quotas`), layout 6 layout 5 with tags 24 to 26 (`users`, `policies`,
/// `bucket_policies`), layout 7 layout 6 with tag 27 (`bucket_configs`), layout 8 layout
/// 7 with tags 28 (`pipelines`) and 29 (`pipeline_positions`), layout 9 layout 8 with
/// tags 30 (`namespaces`) and 31 (`iceberg_views`); all are read. Format 8
/// changed values, not tables: its dumps are layout 7, their `meta` entry naming store
/// format 8. Layout 9 is the last digit: a later format's new tables are new tags of
/// layout 9 (format 12's tags 32 to 34, format 13's tag 35), which an older build never
/// reaches, since the dump's first entries are the `meta` table's and it refuses the
/// store format there.
pub const CHECKPOINT_LAYOUT: u8 = b'9';

/// A value kept in the embedded store (and so in checkpoints), in the store's format.
pub trait Stored: Sized {
    /// Its bytes in [`STORE_FORMAT`].
    fn encode(&self) -> CatalogResult<Vec<u8>>;
    /// Reads bytes of [`STORE_FORMAT`] (a store of an older format is migrated when it
    /// is opened, so values are always in the current one).
    fn decode(bytes: &[u8]) -> CatalogResult<Self>;
}

/// Stores a live type as its frozen twin of the format that introduced it.
macro_rules! stored_as {
    ($($live:ty => $frozen:ty),* $(,)?) => {
        $(
            impl Stored for $live {
                fn encode(&self) -> CatalogResult<Vec<u8>> {
                    Ok(postcard::to_stdvec(&<$frozen>::from(self.clone()))?)
                }
                fn decode(bytes: &[u8]) -> CatalogResult<Self> {
                    Ok(postcard::from_bytes::<$frozen>(bytes)?.into())
                }
            }
        )*
    };
}

stored_as!(
    BucketRecord => v1::BucketRecord,
    ObjectVersion => v8::ObjectVersion,
    UploadRecord => v8::UploadRecord,
    PartRecord => v1::PartRecord,
    TopicRecord => v1::TopicRecord,
    PartitionState => v1::PartitionState,
    ProducerState => v1::ProducerState,
    OffsetRecord => v1::OffsetRecord,
    GroupRecord => v1::GroupRecord,
    TopicTable => v1::TopicTable,
    CheckpointPointer => v1::CheckpointPointer,
    CompactionState => v2::CompactionState,
    Expansion => v3::Expansion,
    TableRecord => v3::TableRecord,
    TxnRecord => v4::TxnRecord,
    TxnPartition => v4::TxnPartition,
    AbortedTxn => v4::AbortedTxn,
    ClientQuotas => v5::ClientQuotas,
    UserRecord => v6::UserRecord,
    PolicyRecord => v6::PolicyRecord,
    BucketPolicy => v6::BucketPolicy,
    BucketConfig => v7::BucketConfig,
    PipelineRecord => v9::PipelineRecord,
    PipelinePosition => v9::PipelinePosition,
    NamespaceRecord => v10::NamespaceRecord,
    SchemaRecord => v12::SchemaRecord,
    SubjectRecord => v12::SubjectRecord,
    ShareStateRecord => v13::ShareStateRecord,
);

/// The refusal of data in a format newer than `newest`.
fn newer(what: String, found: u64, newest: u64) -> CatalogError {
    CatalogError::Storage(storage::StorageError::Format {
        what,
        found: u32::try_from(found).unwrap_or(u32::MAX),
        newest: u32::try_from(newest).unwrap_or(u32::MAX),
    })
}

/// Checks a store (or checkpoint) value format found on disk: `Ok` when this build reads
/// it.
pub fn check_store_format(found: u64) -> CatalogResult<()> {
    match found {
        1..=STORE_FORMAT => Ok(()),
        0 => Err(CatalogError::Corrupt("store format 0".into())),
        _ => Err(newer("catalog store".into(), found, STORE_FORMAT)),
    }
}

/// Checks a log record's payload format.
pub fn check_record_format(lsn: u64, found: u16) -> CatalogResult<()> {
    match found {
        1..=NEWEST_RECORD_FORMAT => Ok(()),
        0 => Err(CatalogError::Corrupt(format!("log record {lsn}: format 0"))),
        _ => Err(newer(
            format!("log record {lsn}"),
            found.into(),
            NEWEST_RECORD_FORMAT.into(),
        )),
    }
}

/// Checks a checkpoint's magic: `EDDYCKP` and the layout digit.
pub fn check_checkpoint_magic(magic: &[u8]) -> CatalogResult<()> {
    match magic.split_last() {
        Some((b'1'..=CHECKPOINT_LAYOUT, b"EDDYCKP")) => Ok(()),
        Some((&digit, b"EDDYCKP")) if digit.is_ascii_digit() && digit > CHECKPOINT_LAYOUT => {
            Err(newer(
                "checkpoint".into(),
                (digit - b'0').into(),
                (CHECKPOINT_LAYOUT - b'0').into(),
            ))
        }
        _ => Err(CatalogError::Corrupt("checkpoint magic".into())),
    }
}

#[cfg(test)]
mod tests;
