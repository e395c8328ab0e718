//! Browser-form uploads (PostObject): the limits Eddy puts on them and AWS's answer to a
//! policy condition that does not hold.
//!
//! s3s checks the POST policy (signature, expiration, every condition, every form field
//! covered by one) and hands the upload to `put_object`; it holds the whole file in memory
//! while it does, before the signature is checked. Unbounded, one unsigned POST of 400 MiB
//! raised the server's RSS from 39 to 436 MiB (measured with a debug build), and its
//! default cap is 5 GiB per request. So a POST file is capped at [`MAX_FILE_BYTES`] and at
//! most [`IN_FLIGHT`] are read at once: POST uploads hold at most 256 MiB together.

use std::sync::Arc;

use tokio::sync::Semaphore;

/// The largest file a POST upload may carry (`EntityTooLarge` beyond).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// POST uploads read at once; more wait for a turn.
pub const IN_FLIGHT: usize = 4;

/// Admits POST uploads [`IN_FLIGHT`] at a time.
#[derive(Clone)]
pub struct Gate(Arc<Semaphore>);

impl Default for Gate {
    fn default() -> Self {
        Self(Arc::new(Semaphore::new(IN_FLIGHT)))
    }
}

impl Gate {
    /// Waits for a turn when `req` is a form upload (a POST with a multipart body);
    /// `None` for any other request, or when the gate is closed.
    pub async fn admit<B>(
        &self,
        req: &http::Request<B>,
    ) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let form = req
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.trim_start().starts_with("multipart/form-data"));
        if req.method() != http::Method::POST || !form {
            return None;
        }
        self.0.clone().acquire_owned().await.ok()
    }
}

/// AWS's answer to a POST whose policy condition failed: `403 AccessDenied`, "Invalid
/// according to Policy: Policy Condition failed: ...". s3s answers `400
/// InvalidPolicyDocument` (the code AWS keeps for a policy that does not parse). The
/// rewritten error document, or `None` when `body` is not that refusal.
pub fn condition_refusal(body: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(body).ok()?;
    if !text.contains("<Code>InvalidPolicyDocument</Code>") {
        return None;
    }
    let start = text.find("<Message>")? + "<Message>".len();
    let end = text[start..].find("</Message>")? + start;
    let message = &text[start..end];
    if !message.starts_with("Policy condition") {
        return None;
    }
    Some(
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code><Message>Invalid according to Policy: {message}</Message></Error>"
        )
        .into_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_failed_conditions_become_access_denied() {
        let failed = b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>InvalidPolicyDocument</Code><Message>Policy condition &apos;eq&apos; for field &apos;key&apos; failed</Message></Error>";
        let doc = String::from_utf8(condition_refusal(failed).unwrap()).unwrap();
        assert!(doc.contains("<Code>AccessDenied</Code>"), "{doc}");
        assert!(
            doc.contains("Invalid according to Policy: Policy condition &apos;eq&apos;"),
            "{doc}"
        );
        let unparsable = b"<Error><Code>InvalidPolicyDocument</Code><Message>failed to parse POST policy</Message></Error>";
        assert!(condition_refusal(unparsable).is_none());
        assert!(condition_refusal(b"<Error><Code>NoSuchKey</Code></Error>").is_none());
    }
}
