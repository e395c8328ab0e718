//! Catalog errors. Front ends map these to their protocol's codes in one place each
//! (the broker to Kafka error codes, the S3 gateway to S3 error XML).

/// Result of a catalog operation.
pub type CatalogResult<T> = Result<T, CatalogError>;

/// What can go wrong in the catalog.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The bucket does not exist.
    #[error("no such bucket: {0}")]
    NoSuchBucket(String),
    /// The bucket exists already.
    #[error("bucket already exists: {0}")]
    BucketExists(String),
    /// The bucket still holds objects or versions.
    #[error("bucket is not empty: {0}")]
    BucketNotEmpty(String),
    /// The object or version does not exist.
    #[error("no such object: {bucket}/{key}")]
    NoSuchKey {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
    },
    /// The multipart upload does not exist (never did, completed or aborted).
    #[error("no such upload: {0}")]
    NoSuchUpload(String),
    /// A multipart part is not (or no longer) the one the request names.
    #[error("invalid part: {0}")]
    InvalidPart(String),
    /// A key the catalog cannot store.
    #[error("invalid key: {0}")]
    InvalidKey(String),
    /// A transaction precondition did not hold.
    #[error("precondition failed: {0}")]
    PreconditionFailed(String),
    /// An object version's lock (retention or legal hold) forbids the change.
    #[error("object locked: {0}")]
    ObjectLocked(String),
    /// The topic does not exist.
    #[error("unknown topic: {0}")]
    UnknownTopic(String),
    /// The topic exists already.
    #[error("topic already exists: {0}")]
    TopicExists(String),
    /// The partition does not exist.
    #[error("unknown partition {partition} of topic {topic}")]
    UnknownPartition {
        /// Topic name or id.
        topic: String,
        /// Partition.
        partition: u32,
    },
    /// An idempotent producer resent a batch already stored at this offset.
    #[error("duplicate sequence (stored at offset {base_offset})")]
    DuplicateSequence {
        /// Where the original batch is.
        base_offset: u64,
    },
    /// An idempotent producer skipped or reordered sequence numbers.
    #[error("out of order sequence number")]
    OutOfOrderSequence,
    /// A newer epoch of this producer exists.
    #[error("producer fenced by a newer epoch")]
    ProducerFenced,
    /// A transactional write or end that the transaction's stored state does not allow
    /// (not open, another producer or epoch, a partition or group not in it).
    #[error("transaction state: {0}")]
    InvalidTxnState(String),
    /// The topic still has an expansion, so it cannot be deleted.
    #[error(
        "topic {topic} has an expansion of its {column} column into {target}: drop the expansion first"
    )]
    TopicHasExpansion {
        /// Topic name.
        topic: String,
        /// The expanded column.
        column: String,
        /// The target table, `namespace.table`.
        target: String,
    },
    /// Records a topic's expansion has not read yet cannot be removed (retention,
    /// DeleteRecords, compaction wait until the topic's table holds them).
    #[error("records of {topic}/{partition} from offset {tabled} are not expanded yet")]
    NotExpanded {
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
        /// The first offset the expansion has not read.
        tabled: u64,
    },
    /// A request the catalog refuses as malformed.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The storage under the catalog failed.
    #[error(transparent)]
    Storage(#[from] storage::StorageError),
    /// The embedded store failed.
    #[error("embedded store: {0}")]
    Store(String),
    /// A stored record does not decode.
    #[error("corrupt catalog record: {0}")]
    Corrupt(String),
    /// The transaction was made under an address lease its node no longer holds (another
    /// node took the address over): nothing of it was applied.
    #[error("not the address's holder any more: {0}")]
    Fenced(String),
    /// Another node's transaction touched the same records at the same time
    /// (PostgreSQL's serialization failure) more often than the committer retries.
    #[error("concurrent update: {0}")]
    Conflict(String),
    /// The catalog is shutting down or its log failed; the process must restart.
    #[error("catalog is closed")]
    Closed,
    /// The commit may have gone through: its outcome was lost on the way back
    /// (PostgreSQL's connection ended during COMMIT, or the log record was written and
    /// the store failed after it, so a restart applies it). A client must not take the
    /// write for refused: a retry of an idempotent write finds it, any other may repeat
    /// it.
    #[error("the commit's outcome is unknown: {0}")]
    Unsettled(String),
}

macro_rules! store_error {
    ($($t:ty),*) => {$(
        impl From<$t> for CatalogError {
            fn from(e: $t) -> Self {
                Self::Store(e.to_string())
            }
        }
    )*};
}
store_error!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::SetDurabilityError
);

impl From<tokio_postgres::Error> for CatalogError {
    fn from(e: tokio_postgres::Error) -> Self {
        use tokio_postgres::error::SqlState;
        // The server's own message: the client's Display says only "db error".
        let why = match e.as_db_error() {
            Some(db) => format!("{} ({})", db.message(), db.code().code()),
            None => e.to_string(),
        };
        match e.code() {
            Some(c)
                if *c == SqlState::T_R_SERIALIZATION_FAILURE
                    || *c == SqlState::T_R_DEADLOCK_DETECTED =>
            {
                Self::Conflict(why)
            }
            _ => Self::Store(format!("postgresql: {why}")),
        }
    }
}

impl From<deadpool_postgres::PoolError> for CatalogError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        Self::Store(format!("postgresql pool: {e}"))
    }
}

impl From<postcard::Error> for CatalogError {
    fn from(e: postcard::Error) -> Self {
        Self::Corrupt(e.to_string())
    }
}
