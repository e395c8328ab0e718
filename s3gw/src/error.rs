//! Catalog and storage errors as S3 errors, in one place.

use catalog::CatalogError;
use s3s::{S3Error, S3ErrorCode, s3_error};
use storage::StorageError;

/// The S3 error for a catalog error.
pub fn catalog_error(e: CatalogError) -> S3Error {
    match e {
        CatalogError::NoSuchBucket(_) => {
            s3_error!(NoSuchBucket, "The specified bucket does not exist")
        }
        CatalogError::BucketExists(_) => s3_error!(
            BucketAlreadyExists,
            "The requested bucket name is not available"
        ),
        CatalogError::BucketNotEmpty(_) => s3_error!(
            BucketNotEmpty,
            "The bucket you tried to delete is not empty"
        ),
        CatalogError::NoSuchKey { .. } => s3_error!(NoSuchKey, "The specified key does not exist"),
        CatalogError::NoSuchUpload(_) => s3_error!(
            NoSuchUpload,
            "The specified multipart upload does not exist"
        ),
        CatalogError::InvalidPart(m) => S3Error::with_message(S3ErrorCode::InvalidPart, m),
        CatalogError::InvalidKey(k) if k.len() > catalog::apply::MAX_KEY_LEN => {
            s3_error!(KeyTooLongError, "Your key is too long")
        }
        CatalogError::InvalidKey(_) => s3_error!(InvalidArgument, "Invalid object key"),
        CatalogError::PreconditionFailed(_) => s3_error!(
            PreconditionFailed,
            "At least one of the pre-conditions you specified did not hold"
        ),
        // AWS refuses a removal or a shortened retention of a locked version as a
        // permission: 403 AccessDenied.
        CatalogError::ObjectLocked(m) => S3Error::with_message(
            S3ErrorCode::AccessDenied,
            format!("Access Denied because object protected by object lock ({m})"),
        ),
        CatalogError::Invalid(m) => S3Error::with_message(S3ErrorCode::InvalidArgument, m),
        CatalogError::Storage(e) => storage_error(e),
        CatalogError::Closed => s3_error!(ServiceUnavailable, "The server is shutting down"),
        CatalogError::Fenced(m) => S3Error::with_message(S3ErrorCode::ServiceUnavailable, m),
        // Clients retry a 503.
        CatalogError::Conflict(m) => S3Error::with_message(
            S3ErrorCode::ServiceUnavailable,
            format!("a concurrent update of the same records; retry ({m})"),
        ),
        // A 500 clients retry; the write may be there already, which a retry of a PUT
        // or DELETE makes no worse.
        CatalogError::Unsettled(m) => S3Error::with_message(
            S3ErrorCode::InternalError,
            format!("the write's outcome is unknown; read it back or retry ({m})"),
        ),
        // Kafka-side refusals reach S3 only through a notification append: the server's
        // fault, not the request's.
        e @ (CatalogError::UnknownTopic(_)
        | CatalogError::TopicExists(_)
        | CatalogError::UnknownPartition { .. }
        | CatalogError::DuplicateSequence { .. }
        | CatalogError::OutOfOrderSequence
        | CatalogError::ProducerFenced
        | CatalogError::TopicHasExpansion { .. }
        | CatalogError::NotExpanded { .. }
        | CatalogError::InvalidTxnState(_)
        | CatalogError::Store(_)
        | CatalogError::Corrupt(_)) => {
            tracing::error!(error = %e, "catalog error");
            S3Error::with_message(S3ErrorCode::InternalError, e.to_string())
        }
    }
}

/// The S3 error for a refused directory change.
pub fn iam_error(e: iam::IamError) -> S3Error {
    match e {
        iam::IamError::Catalog(e) => catalog_error(e),
        iam::IamError::MalformedPolicy(e) => {
            S3Error::with_message(S3ErrorCode::MalformedPolicy, e.to_string())
        }
        e @ (iam::IamError::NoSuchUser(_)
        | iam::IamError::NoSuchPolicy(_)
        | iam::IamError::Invalid(_)
        | iam::IamError::FromConfig(_)) => {
            S3Error::with_message(S3ErrorCode::InvalidArgument, e.to_string())
        }
    }
}

/// An S3 error document completed: with its `RequestId`, the same id as the response's
/// `x-amz-request-id` header (clients and support tickets quote either), and with a
/// `Message` when it has none (s3s answers some refusals, such as a bucket name its path
/// parser rejects, with a code alone, which botocore prints as "Unknown"). `None` when the
/// body is not an error document or already has both.
pub fn completed_error(body: &[u8], id: &str) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(body).ok()?;
    if !text.contains("<Error>") {
        return None;
    }
    let add_id = !text.contains("<RequestId>");
    let message = (!text.contains("<Message>"))
        .then(|| {
            let code = text.split("<Code>").nth(1)?.split("</Code>").next()?;
            Some(default_message(code))
        })
        .flatten();
    if !add_id && message.is_none() {
        return None;
    }
    let end = text.rfind("</Error>")?;
    let mut out = String::with_capacity(text.len() + 128);
    out.push_str(&text[..end]);
    if let Some(m) = message {
        // The messages are plain text of our own: nothing to escape.
        out.push_str(&format!("<Message>{m}</Message>"));
    }
    if add_id {
        // Request ids are hex digits: nothing to escape.
        out.push_str(&format!("<RequestId>{id}</RequestId>"));
    }
    out.push_str(&text[end..]);
    Some(out.into_bytes())
}

/// AWS's message for an error code, for documents that came without one.
fn default_message(code: &str) -> String {
    match code {
        "InvalidBucketName" => "The specified bucket is not valid.".into(),
        "InvalidURI" => "Couldn't parse the specified URI.".into(),
        "MethodNotAllowed" => "The specified method is not allowed against this resource.".into(),
        "NoSuchBucket" => "The specified bucket does not exist".into(),
        "NoSuchKey" => "The specified key does not exist.".into(),
        "AccessDenied" => "Access Denied".into(),
        "NotImplemented" => {
            "A header you provided implies functionality that is not implemented".into()
        }
        "SignatureDoesNotMatch" => "The request signature we calculated does not match the \
                                    signature you provided. Check your key and signing method."
            .into(),
        other => format!("The request was refused ({other})."),
    }
}

/// The S3 error for a storage error.
pub fn storage_error(e: StorageError) -> S3Error {
    match e {
        StorageError::OutOfRange { .. } => {
            s3_error!(InvalidRange, "The requested range is not satisfiable")
        }
        StorageError::Closed => s3_error!(ServiceUnavailable, "The server is shutting down"),
        // Too many drives away: a retry may succeed once they are back.
        e @ (StorageError::TooManyDrivesMissing { .. }
        | StorageError::TooFewShards { .. }
        | StorageError::Unrecoverable { .. }) => {
            tracing::error!(error = %e, "storage unavailable");
            S3Error::with_message(S3ErrorCode::ServiceUnavailable, e.to_string())
        }
        e @ (StorageError::Io { .. }
        | StorageError::Config(_)
        | StorageError::BlobNotFound(_)
        | StorageError::Log(_)
        | StorageError::Codec(_)
        | StorageError::Format { .. }) => {
            tracing::error!(error = %e, "storage error");
            S3Error::with_message(S3ErrorCode::InternalError, e.to_string())
        }
    }
}

/// Turns catalog and storage results into S3 results.
pub trait OrS3<T> {
    /// Maps the error.
    fn or_s3(self) -> s3s::S3Result<T>;
}

impl<T> OrS3<T> for Result<T, CatalogError> {
    fn or_s3(self) -> s3s::S3Result<T> {
        self.map_err(catalog_error)
    }
}

impl<T> OrS3<T> for Result<T, StorageError> {
    fn or_s3(self) -> s3s::S3Result<T> {
        self.map_err(storage_error)
    }
}

/// An internal error from a failed background task.
pub fn join_error(e: tokio::task::JoinError) -> S3Error {
    S3Error::with_message(S3ErrorCode::InternalError, format!("task failed: {e}"))
}

/// An error with a code s3s does not define, and its status.
pub fn custom(code: &'static str, status: http::StatusCode, message: impl Into<String>) -> S3Error {
    let mut e = S3Error::with_message(S3ErrorCode::Custom(code.into()), message.into());
    e.set_status_code(status);
    e
}

/// The S3 error for a refused notification configuration: `InvalidArgument`, except
/// destinations Eddy does not deliver to (`NotImplemented`) and an unreadable stored
/// configuration (`InternalError`).
pub fn notify_config_error(e: notify::ConfigError) -> S3Error {
    use notify::ConfigError;
    match e {
        ConfigError::UnsupportedDestination(_) => {
            S3Error::with_message(S3ErrorCode::NotImplemented, e.to_string())
        }
        ConfigError::Corrupt(_) => {
            tracing::error!(error = %e, "notification configuration");
            S3Error::with_message(S3ErrorCode::InternalError, e.to_string())
        }
        e => S3Error::with_message(S3ErrorCode::InvalidArgument, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::completed_error;

    #[test]
    fn an_error_document_gets_the_request_id_once() {
        let doc = b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>NoSuchKey</Code><Message>m</Message></Error>";
        let got = String::from_utf8(completed_error(doc, "ABC123").unwrap()).unwrap();
        assert!(got.ends_with("<Message>m</Message><RequestId>ABC123</RequestId></Error>"));
        assert_eq!(completed_error(got.as_bytes(), "ABC123"), None);
        assert_eq!(completed_error(b"<ListBucketResult/>", "ABC123"), None);
        assert_eq!(completed_error(b"", "ABC123"), None);
    }

    #[test]
    fn an_error_document_without_a_message_gets_one() {
        let doc = b"<Error><Code>InvalidBucketName</Code></Error>";
        let got = String::from_utf8(completed_error(doc, "ABC123").unwrap()).unwrap();
        assert_eq!(
            got,
            "<Error><Code>InvalidBucketName</Code><Message>The specified bucket is not valid.\
             </Message><RequestId>ABC123</RequestId></Error>"
        );
    }
}
