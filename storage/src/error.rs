//! Storage errors.

use std::path::PathBuf;

/// Result of a storage operation.
pub type StorageResult<T> = Result<T, StorageError>;

/// What can go wrong in the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// An I/O error on one path.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Bad configuration (drive count, code parameters).
    #[error("configuration: {0}")]
    Config(String),
    /// More drives are missing than the code tolerates.
    #[error("{missing} of {total} drives are unavailable; at most {tolerated} may be")]
    TooManyDrivesMissing {
        /// Drives unavailable.
        missing: usize,
        /// Drives in the set.
        total: usize,
        /// The code's `m`.
        tolerated: usize,
    },
    /// Fewer than `k` good shards: the data cannot be rebuilt.
    #[error("only {present} good shards, {needed} needed")]
    TooFewShards {
        /// Good shards found.
        present: usize,
        /// The code's `k`.
        needed: usize,
    },
    /// A blob stripe cannot be read back.
    #[error("blob {blob}: stripe {stripe} unrecoverable ({present} good shards, {needed} needed)")]
    Unrecoverable {
        /// The blob.
        blob: String,
        /// Stripe index.
        stripe: u64,
        /// Good shards found.
        present: usize,
        /// The code's `k`.
        needed: usize,
    },
    /// The blob does not exist (no readable shard trailer).
    #[error("blob {0} not found")]
    BlobNotFound(String),
    /// A read past the end of a blob.
    #[error("range {offset}+{len} is outside blob {blob} of {size} bytes")]
    OutOfRange {
        /// The blob.
        blob: String,
        /// Requested offset.
        offset: u64,
        /// Requested length.
        len: u64,
        /// Blob size.
        size: u64,
    },
    /// The write-ahead log cannot be recovered consistently.
    #[error("write-ahead log: {0}")]
    Log(String),
    /// The erasure codec refused its input.
    #[error("erasure codec: {0}")]
    Codec(String),
    /// Data written in a format newer than this build reads: refused, never misread or
    /// rewritten.
    #[error(
        "{what} is format {found}, but this build reads formats up to {newest}: the data was written by a newer Eddy"
    )]
    Format {
        /// Which encoding (the log frame layout, a drive's format file, ...).
        what: String,
        /// The version found.
        found: u32,
        /// The newest version this build reads.
        newest: u32,
    },
    /// The storage is shutting down.
    #[error("storage is closed")]
    Closed,
}

impl StorageError {
    /// Wraps an I/O error with what was done and where.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }
}
