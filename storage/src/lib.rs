//! Eddy's storage: erasure-coded drives with checksummed blocks, streaming blobs, a
//! write-ahead log whose every record is erasure-coded and fsync'd, and heal.
//!
//! This crate knows nothing of S3 or Kafka: it stores bytes and log records.

pub mod blob;
pub mod checksum;
pub mod drives;
pub mod erasure;
pub mod error;
pub mod heal;
pub mod replicated;
mod spare;
pub mod wal;
mod wal_sync;
mod wal_zeroed;

pub use blob::{BlobId, BlobMeta, BlobReader, BlobStore, BlobWriter, Urgency};
pub use drives::{DriveHealth, DriveSet, DriveSetConfig};
pub use erasure::{ErasureCode, ReedSolomon};
pub use error::{StorageError, StorageResult};
pub use heal::{HealOptions, HealReport};
pub use wal::{Record, Wal, WalConfig};
