//! Where internal errors become Kafka error codes: the one mapping for every API.

use catalog::CatalogError;
use kafka_protocol::error::ResponseError;

/// The Kafka error for a catalog failure.
pub fn from_catalog(e: &CatalogError) -> ResponseError {
    match e {
        CatalogError::UnknownTopic(_) | CatalogError::UnknownPartition { .. } => {
            ResponseError::UnknownTopicOrPartition
        }
        CatalogError::TopicExists(_) => ResponseError::TopicAlreadyExists,
        CatalogError::DuplicateSequence { .. } => ResponseError::DuplicateSequenceNumber,
        CatalogError::OutOfOrderSequence => ResponseError::OutOfOrderSequenceNumber,
        CatalogError::ProducerFenced => ResponseError::InvalidProducerEpoch,
        // The coordinator checks first; only a race with an EndTxn or a timeout gets here.
        CatalogError::InvalidTxnState(_) => ResponseError::InvalidTxnState,
        CatalogError::Invalid(_) => ResponseError::InvalidRequest,
        // The response's error message says which expansion holds the topic.
        CatalogError::TopicHasExpansion { .. } => ResponseError::PolicyViolation,
        // DeleteRecords waits for the expansion first; only a race gets here.
        CatalogError::NotExpanded { .. } => ResponseError::PolicyViolation,
        CatalogError::Storage(_)
        | CatalogError::Store(_)
        | CatalogError::Corrupt(_)
        | CatalogError::Closed
        // Retriable for the client, as a storage error is in Kafka.
        | CatalogError::Conflict(_) => ResponseError::KafkaStorageError,
        // Retriable and possibly persisted, as librdkafka files it; a storage error
        // says "not persisted", untrue of a commit whose outcome was lost.
        CatalogError::Unsettled(_) => ResponseError::NotEnoughReplicasAfterAppend,
        // The address moved to another node: the client refreshes its metadata.
        CatalogError::Fenced(_) => ResponseError::NotLeaderOrFollower,
        // S3-side and table-side refusals: no Kafka request makes them.
        CatalogError::PreconditionFailed(_)
        | CatalogError::ObjectLocked(_)
        | CatalogError::NoSuchBucket(_)
        | CatalogError::BucketExists(_)
        | CatalogError::BucketNotEmpty(_)
        | CatalogError::NoSuchKey { .. }
        | CatalogError::NoSuchUpload(_)
        | CatalogError::InvalidPart(_)
        | CatalogError::InvalidKey(_) => ResponseError::UnknownServerError,
    }
}

/// A fenced producer's error as a request of this API version knows it: PRODUCER_FENCED
/// came with KIP-588 (AddPartitionsToTxn, AddOffsetsToTxn and EndTxn v2, TxnOffsetCommit
/// v3); older versions, and every Produce (librdkafka takes only this one as fatal
/// there, as Kafka's partition leaders send it), get INVALID_PRODUCER_EPOCH.
pub fn fenced_for(e: ResponseError, knows_fenced: bool) -> ResponseError {
    match e {
        ResponseError::ProducerFenced if !knows_fenced => ResponseError::InvalidProducerEpoch,
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// librdkafka files KAFKA_STORAGE_ERROR as "retry, not persisted" and
    /// NOT_ENOUGH_REPLICAS_AFTER_APPEND as "retry, possibly persisted"
    /// (`rd_kafka_handle_Produce_error`); only the second is true of a commit whose
    /// outcome was lost, and it is the status a delivery report carries if the
    /// retries run out.
    #[test]
    fn a_lost_commit_outcome_is_possibly_persisted_and_a_refused_commit_is_not() {
        assert_eq!(
            from_catalog(&CatalogError::Unsettled("connection closed".into())),
            ResponseError::NotEnoughReplicasAfterAppend
        );
        for refused in [
            CatalogError::Closed,
            CatalogError::Store("postgresql: connection refused".into()),
            CatalogError::Conflict("serialization failure".into()),
        ] {
            assert_eq!(from_catalog(&refused), ResponseError::KafkaStorageError);
        }
    }
}
