//! Browser-form uploads (PostObject): the limits Eddy puts on them and AWS's answer to a
//! policy condition that does not hold.
//!
//! s3s checks the POST policy (signature, expiration, every condition, every form field
//! covered by one) and hands the upload to `put_object`; it holds the whole file in memory
//! while it does, before the signature is checked. Unbounded, one unsigned POST of 400 MiB
//! raised the server's RSS from 39 to 436 MiB (measured with a debug build), and its
//! default cap is 5 GiB per request. So a POST file is capped at [`MAX_FILE_BYTES`] and at
//! most [`IN_FLIGHT`] are read at once: POST uploads hold at most 256 MiB together.
//!
//! A form's `key` may hold `${filename}`, which AWS replaces with the name of the file
//! uploaded; s3s drops that name before the upload reaches `put_object`, so the listener
//! rewrites the key field in the form's head ([`expand_filename`]) before s3s reads it.
//! The form's fields come before its file (as S3 requires), so only the head is read
//! ahead, at most [`HEAD_LIMIT`] bytes; the file streams on untouched.

use std::sync::Arc;

use crate::authz::OpAction;
use tokio::sync::Semaphore;

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[OpAction::new("PostObject", "s3:PutObject")];

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

/// The most bytes of a form read ahead looking for its file part's headers.
pub const HEAD_LIMIT: usize = 1 << 20;

/// What the head of a form upload says about `${filename}`.
#[derive(Debug, PartialEq, Eq)]
pub enum FormHead {
    /// The file part's headers are not in the head yet: read more.
    NeedMore,
    /// Nothing to change (no `${filename}` in the key, or no file name).
    Unchanged,
    /// The head with the key field's `${filename}` replaced.
    Rewritten(Vec<u8>),
}

/// The boundary of a `multipart/form-data` content type.
pub fn boundary(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.trim().split_once('=')?;
        k.eq_ignore_ascii_case("boundary")
            .then(|| v.trim_matches('"'))
            .filter(|b| !b.is_empty())
    })
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// A Content-Disposition parameter's quoted value (`name`, `filename`).
fn disposition_param<'a>(headers: &'a str, param: &str) -> Option<&'a str> {
    let line = headers
        .split("\r\n")
        .find(|l| l.to_ascii_lowercase().starts_with("content-disposition:"))?;
    line.split(';').skip(1).find_map(|p| {
        let (k, v) = p.trim().split_once('=')?;
        k.eq_ignore_ascii_case(param)
            .then(|| v.trim().trim_matches('"'))
    })
}

/// Replaces `${filename}` in the key field of a form's head, once the head holds the
/// file part's headers (where the name is).
pub fn expand_filename(head: &[u8], boundary: &str) -> FormHead {
    let delimiter = format!("--{boundary}");
    let mut key: Option<(usize, usize)> = None;
    let mut at = match find(head, delimiter.as_bytes(), 0) {
        Some(p) => p,
        None => return FormHead::NeedMore,
    };
    loop {
        let part = at + delimiter.len() + 2;
        let Some(headers_end) = find(head, b"\r\n\r\n", part) else {
            return FormHead::NeedMore;
        };
        let Ok(headers) = std::str::from_utf8(&head[part..headers_end]) else {
            return FormHead::Unchanged;
        };
        let value = headers_end + 4;
        let name = disposition_param(headers, "name");
        if name == Some("file") {
            let (Some((start, end)), Some(file)) = (key, disposition_param(headers, "filename"))
            else {
                return FormHead::Unchanged;
            };
            // A name with a path keeps its last segment, as browsers send.
            let file = file.rsplit(['/', '\\']).next().unwrap_or(file);
            let Ok(k) = std::str::from_utf8(&head[start..end]) else {
                return FormHead::Unchanged;
            };
            if !k.contains("${filename}") || file.is_empty() {
                return FormHead::Unchanged;
            }
            let mut out = head[..start].to_vec();
            out.extend_from_slice(k.replace("${filename}", file).as_bytes());
            out.extend_from_slice(&head[end..]);
            return FormHead::Rewritten(out);
        }
        let Some(next) = find(head, format!("\r\n{delimiter}").as_bytes(), value) else {
            return FormHead::NeedMore;
        };
        if name == Some("key") {
            key = Some((value, next));
        }
        at = next + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(key: &str, filename: &str) -> Vec<u8> {
        format!(
            "--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n{key}\r\n\
             --XyZ\r\nContent-Disposition: form-data; name=\"policy\"\r\n\r\neyJ9\r\n\
             --XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n\
             Content-Type: image/png\r\n\r\nPNGDATA"
        )
        .into_bytes()
    }

    #[test]
    fn the_key_gets_the_file_name() {
        assert_eq!(boundary("multipart/form-data; boundary=XyZ"), Some("XyZ"));
        assert_eq!(
            boundary("multipart/form-data; boundary=\"XyZ\""),
            Some("XyZ")
        );
        let head = form("uploads/${filename}", "cat.png");
        let FormHead::Rewritten(out) = expand_filename(&head, "XyZ") else {
            panic!("not rewritten");
        };
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("\r\n\r\nuploads/cat.png\r\n--XyZ"), "{text}");
        assert!(text.ends_with("PNGDATA"));
        // A path in the name keeps its last segment.
        let FormHead::Rewritten(out) =
            expand_filename(&form("u/${filename}", "C:\\pics\\dog.png"), "XyZ")
        else {
            panic!("not rewritten");
        };
        assert!(String::from_utf8(out).unwrap().contains("u/dog.png\r\n"));
        assert_eq!(
            expand_filename(&form("uploads/fixed.png", "cat.png"), "XyZ"),
            FormHead::Unchanged
        );
        // Cut before the file part's headers end: more is needed.
        let cut = &head[..head.len() - 20];
        assert_eq!(expand_filename(cut, "XyZ"), FormHead::NeedMore);
    }

    /// The fuzz corpus's seeds (`fuzz/corpus/post_form`), cut short and with bytes
    /// flipped: every head gets an answer, never a panic.
    #[test]
    fn mangled_forms_never_panic() {
        let seeds = [
            form("uploads/${filename}", "cat.png"),
            form("${filename}${filename}", "a/b\\c"),
            form("k", ""),
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for seed in &seeds {
            for cut in 0..=seed.len() {
                let _ = expand_filename(&seed[..cut], "XyZ");
            }
            for _ in 0..2000 {
                let mut m = seed.clone();
                for _ in 0..1 + next() % 4 {
                    let i = (next() % m.len() as u64) as usize;
                    m[i] = next() as u8;
                }
                let _ = expand_filename(&m, "XyZ");
                let _ = expand_filename(&m, "");
            }
        }
    }

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
