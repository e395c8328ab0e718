//! ListObjects (v1), ListObjectsV2 and ListObjectVersions: prefix, delimiter and common
//! prefixes, max-keys, markers, continuation tokens, encoding-type=url. Keys come in
//! byte order from catalog range scans; a common prefix is skipped by continuing after
//! its end, so a page costs about max-keys scanned entries whatever the bucket holds.

use catalog::ObjectVersion;
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};

use crate::authz::OpAction;
use crate::error::OrS3;
use crate::{Gateway, etag, owner, timestamp, versioning};

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new("ListObjects", "s3:ListBucket"),
    OpAction::new("ListObjectsV2", "s3:ListBucket"),
    OpAction::new("ListObjectVersions", "s3:ListBucketVersions"),
];

/// Above every character: a key starting with a common prefix sorts before
/// `prefix + MAX_CHAR` unless that very character follows it.
const MAX_CHAR: char = '\u{10FFFF}';

/// Most entries scanned per catalog call.
const BATCH: usize = 1000;
/// Entries scanned by the first call after a common prefix: the scan restarts after
/// every common prefix, so fetching a full batch each time would decode up to max-keys
/// entries per prefix. Batches double while no prefix interrupts them.
const FIRST_BATCH: usize = 16;

/// Percent-encodes like S3's encoding-type=url (unreserved characters and `/` kept).
pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The common prefix `key` rolls up into, if any.
pub fn common_prefix<'a>(key: &'a str, prefix: &str, delimiter: &str) -> Option<&'a str> {
    if delimiter.is_empty() {
        return None;
    }
    let rest = key.get(prefix.len()..)?;
    rest.find(delimiter)
        .map(|i| &key[..prefix.len() + i + delimiter.len()])
}

fn skip_past(cp: &str) -> String {
    format!("{cp}{MAX_CHAR}")
}

/// Where to resume after a marker: a marker that is itself a common prefix (what
/// NextMarker returns for one) skips the whole prefix.
fn resume_after(marker: &str, prefix: &str, delimiter: &str) -> String {
    match common_prefix(marker, prefix, delimiter) {
        Some(cp) if cp == marker => skip_past(cp),
        _ => marker.to_owned(),
    }
}

/// One page of current objects.
#[derive(Default)]
pub struct Page {
    /// Objects.
    pub objects: Vec<(String, ObjectVersion)>,
    /// Common prefixes.
    pub prefixes: Vec<String>,
    /// More follow.
    pub truncated: bool,
    /// The last key or prefix returned.
    pub last: Option<String>,
    /// Where the next page starts (exclusive).
    pub cursor: Option<String>,
}

/// Lists up to `max` entries (objects and common prefixes) after `after`.
pub async fn list_page(
    gw: &Gateway,
    bucket: &str,
    prefix: &str,
    delimiter: &str,
    after: Option<String>,
    max: usize,
) -> S3Result<Page> {
    let mut page = Page::default();
    let mut cursor = after;
    if max == 0 {
        return Ok(page);
    }
    let mut count = 0usize;
    let mut batch_size = if delimiter.is_empty() {
        BATCH
    } else {
        FIRST_BATCH
    };
    loop {
        let want = (max - count + 1).min(batch_size);
        let batch = gw
            .catalog()
            .s3()
            .list_objects(bucket, prefix, cursor.as_deref(), want)
            .await
            .or_s3()?;
        let n = batch.len();
        let mut restart = false;
        for (key, v) in batch {
            if let Some(cp) = page.prefixes.last()
                && key.starts_with(cp.as_str())
            {
                cursor = Some(key);
                continue;
            }
            if count == max {
                page.truncated = true;
                page.cursor = cursor;
                return Ok(page);
            }
            if let Some(cp) = common_prefix(&key, prefix, delimiter) {
                let cp = cp.to_owned();
                cursor = Some(skip_past(&cp));
                page.last = Some(cp.clone());
                page.prefixes.push(cp);
                count += 1;
                restart = true;
                break;
            }
            cursor = Some(key.clone());
            page.last = Some(key.clone());
            page.objects.push((key, v));
            count += 1;
        }
        if restart {
            batch_size = FIRST_BATCH;
        } else if n < want {
            break;
        } else {
            batch_size = (batch_size * 2).min(BATCH);
        }
    }
    page.cursor = cursor;
    Ok(page)
}

fn max_keys(m: Option<i32>) -> S3Result<usize> {
    match m {
        None => Ok(1000),
        Some(m) if m < 0 => Err(s3_error!(InvalidArgument, "max-keys must be non-negative")),
        Some(m) => Ok((m as usize).min(1000)),
    }
}

fn url_mode(e: Option<&EncodingType>) -> S3Result<bool> {
    match e {
        None => Ok(false),
        Some(e) if e.as_str().eq_ignore_ascii_case("url") => Ok(true),
        Some(_) => Err(s3_error!(
            InvalidArgument,
            "Invalid Encoding Method specified in Request"
        )),
    }
}

fn enc(url: bool, s: &str) -> String {
    if url { url_encode(s) } else { s.to_owned() }
}

/// Who a version belongs to: its writer, recorded since format 8 (before, and for
/// anonymous writes, the bucket's owner).
fn version_owner<'a>(b: &'a catalog::BucketRecord, v: &'a ObjectVersion) -> &'a str {
    if v.owner.is_empty() {
        &b.owner
    } else {
        &v.owner
    }
}

fn object_entry(url: bool, key: &str, v: &ObjectVersion, owner_key: Option<&str>) -> Object {
    let algs: Vec<ChecksumAlgorithm> = v
        .checksums
        .keys()
        .map(|a| ChecksumAlgorithm::from(a.clone()))
        .collect();
    Object {
        key: Some(enc(url, key)),
        size: Some(v.size as i64),
        e_tag: Some(etag(&v.etag)),
        last_modified: Some(timestamp(v.last_modified_ms)),
        storage_class: Some(ObjectStorageClass::from_static(
            ObjectStorageClass::STANDARD,
        )),
        owner: owner_key.map(owner),
        checksum_algorithm: (!algs.is_empty()).then_some(algs),
        ..Default::default()
    }
}

fn prefixes(url: bool, p: &[String]) -> Option<CommonPrefixList> {
    (!p.is_empty()).then(|| {
        p.iter()
            .map(|p| CommonPrefix {
                prefix: Some(enc(url, p)),
            })
            .collect()
    })
}

/// ListObjects (v1).
pub async fn list_objects(
    gw: &Gateway,
    req: S3Request<ListObjectsInput>,
) -> S3Result<S3Response<ListObjectsOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let i = req.input;
    let url = url_mode(i.encoding_type.as_ref())?;
    let prefix = i.prefix.clone().unwrap_or_default();
    let delimiter = i.delimiter.clone().unwrap_or_default();
    let max = max_keys(i.max_keys)?;
    let after = i
        .marker
        .as_deref()
        .filter(|m| !m.is_empty())
        .map(|m| resume_after(m, &prefix, &delimiter));
    let page = list_page(gw, &b.name, &prefix, &delimiter, after, max).await?;
    let contents: Vec<Object> = page
        .objects
        .iter()
        .map(|(k, v)| object_entry(url, k, v, Some(version_owner(&b, v))))
        .collect();
    Ok(S3Response::new(ListObjectsOutput {
        name: Some(b.name.clone()),
        prefix: Some(enc(url, &prefix)),
        marker: Some(enc(url, i.marker.as_deref().unwrap_or(""))),
        max_keys: Some(max as i32),
        is_truncated: Some(page.truncated),
        contents: Some(contents),
        common_prefixes: prefixes(url, &page.prefixes),
        delimiter: i
            .delimiter
            .as_deref()
            .filter(|d| !d.is_empty())
            .map(|d| enc(url, d)),
        next_marker: page
            .last
            .as_deref()
            .filter(|_| page.truncated)
            .map(|m| enc(url, m)),
        encoding_type: i.encoding_type,
        request_charged: None,
    }))
}

fn encode_token(cursor: &str) -> String {
    base64_simd::URL_SAFE_NO_PAD.encode_to_string(cursor.as_bytes())
}

fn decode_token(t: &str) -> S3Result<String> {
    base64_simd::URL_SAFE_NO_PAD
        .decode_to_vec(t)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| {
            s3_error!(
                InvalidArgument,
                "The continuation token provided is incorrect"
            )
        })
}

/// ListObjectsV2.
pub async fn list_objects_v2(
    gw: &Gateway,
    req: S3Request<ListObjectsV2Input>,
) -> S3Result<S3Response<ListObjectsV2Output>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let i = req.input;
    let url = url_mode(i.encoding_type.as_ref())?;
    let prefix = i.prefix.clone().unwrap_or_default();
    let delimiter = i.delimiter.clone().unwrap_or_default();
    let max = max_keys(i.max_keys)?;
    let after = match (&i.continuation_token, &i.start_after) {
        (Some(t), _) => Some(decode_token(t)?),
        (None, Some(s)) if !s.is_empty() => Some(resume_after(s, &prefix, &delimiter)),
        _ => None,
    };
    let page = list_page(gw, &b.name, &prefix, &delimiter, after, max).await?;
    let fetch_owner = i.fetch_owner.unwrap_or(false);
    let contents: Vec<Object> = page
        .objects
        .iter()
        .map(|(k, v)| object_entry(url, k, v, fetch_owner.then(|| version_owner(&b, v))))
        .collect();
    let key_count = (page.objects.len() + page.prefixes.len()) as i32;
    Ok(S3Response::new(ListObjectsV2Output {
        name: Some(b.name.clone()),
        prefix: Some(enc(url, &prefix)),
        max_keys: Some(max as i32),
        key_count: Some(key_count),
        continuation_token: i.continuation_token,
        is_truncated: Some(page.truncated),
        next_continuation_token: page
            .cursor
            .as_deref()
            .filter(|_| page.truncated)
            .map(encode_token),
        contents: Some(contents),
        common_prefixes: prefixes(url, &page.prefixes),
        delimiter: i
            .delimiter
            .as_deref()
            .filter(|d| !d.is_empty())
            .map(|d| enc(url, d)),
        encoding_type: i.encoding_type,
        start_after: i.start_after.as_deref().map(|s| enc(url, s)),
        request_charged: None,
    }))
}

/// ListObjectVersions.
pub async fn list_object_versions(
    gw: &Gateway,
    req: S3Request<ListObjectVersionsInput>,
) -> S3Result<S3Response<ListObjectVersionsOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let i = req.input;
    let url = url_mode(i.encoding_type.as_ref())?;
    let prefix = i.prefix.clone().unwrap_or_default();
    let delimiter = i.delimiter.clone().unwrap_or_default();
    let max = max_keys(i.max_keys)?;
    let key_marker = i.key_marker.clone().filter(|k| !k.is_empty());
    let vid_marker = i.version_id_marker.clone().filter(|v| !v.is_empty());

    // Scan state: versions come newest first within a key.
    let mut start: Option<String> = None;
    let mut skip_marker_key = None;
    if let Some(km) = &key_marker {
        let r = resume_after(km, &prefix, &delimiter);
        if r == *km {
            start = Some(km.clone());
            skip_marker_key = Some(km.clone());
        } else {
            start = Some(r);
        }
    }
    let mut passed_vid = vid_marker.is_none();
    let mut cur_key: Option<String> = None;
    let mut seen_of_cur = 0usize;
    let mut versions = Vec::new();
    let mut markers = Vec::new();
    let mut cps: Vec<String> = Vec::new();
    let mut count = 0usize;
    let mut truncated = false;
    let mut next: Option<(String, Option<String>)> = None;
    let mut last: Option<(String, Option<String>)> = None;
    let mut batch_size = if delimiter.is_empty() {
        BATCH
    } else {
        FIRST_BATCH
    };
    'scan: loop {
        // Resuming inside a key re-reads its versions already seen: fetch past them.
        let mut skip = if start.is_some() && start == cur_key {
            seen_of_cur
        } else {
            0
        };
        let fetch = batch_size + skip;
        let batch = gw
            .catalog()
            .s3()
            .list_versions(&b.name, &prefix, start.as_deref(), fetch)
            .await
            .or_s3()?;
        let n = batch.len();
        let mut restart = false;
        for (key, v) in batch {
            if skip > 0 && Some(&key) == cur_key.as_ref() {
                skip -= 1;
                continue;
            }
            if cur_key.as_ref() != Some(&key) {
                cur_key = Some(key.clone());
                seen_of_cur = 0;
            }
            let idx = seen_of_cur;
            seen_of_cur += 1;
            if skip_marker_key.as_ref() == Some(&key) {
                match &vid_marker {
                    None => continue,
                    Some(vid) if !passed_vid => {
                        if &v.version_id == vid {
                            passed_vid = true;
                        }
                        continue;
                    }
                    Some(_) => {}
                }
            }
            if let Some(cp) = cps.last()
                && key.starts_with(cp.as_str())
            {
                continue;
            }
            if count == max {
                truncated = true;
                next = last.clone();
                break 'scan;
            }
            if let Some(cp) = common_prefix(&key, &prefix, &delimiter) {
                let cp = cp.to_owned();
                start = Some(skip_past(&cp));
                last = Some((cp.clone(), None));
                cps.push(cp);
                count += 1;
                cur_key = None;
                seen_of_cur = 0;
                restart = true;
                break;
            }
            last = Some((key.clone(), Some(v.version_id.clone())));
            count += 1;
            if v.delete_marker {
                markers.push(DeleteMarkerEntry {
                    is_latest: Some(idx == 0),
                    key: Some(enc(url, &key)),
                    last_modified: Some(timestamp(v.last_modified_ms)),
                    owner: Some(owner(version_owner(&b, &v))),
                    version_id: Some(v.version_id.clone()),
                });
            } else {
                versions.push(s3s::dto::ObjectVersion {
                    e_tag: Some(etag(&v.etag)),
                    is_latest: Some(idx == 0),
                    key: Some(enc(url, &key)),
                    last_modified: Some(timestamp(v.last_modified_ms)),
                    owner: Some(owner(version_owner(&b, &v))),
                    size: Some(v.size as i64),
                    storage_class: Some(ObjectVersionStorageClass::from_static(
                        ObjectVersionStorageClass::STANDARD,
                    )),
                    version_id: Some(v.version_id.clone()),
                    ..Default::default()
                });
            }
        }
        if restart {
            batch_size = FIRST_BATCH;
            continue;
        }
        if n < fetch {
            break;
        }
        batch_size = (batch_size * 2).min(BATCH);
        start = cur_key.clone();
    }
    let _ = versioning::reported_version;
    Ok(S3Response::new(ListObjectVersionsOutput {
        common_prefixes: prefixes(url, &cps),
        delete_markers: (!markers.is_empty()).then_some(markers),
        delimiter: i
            .delimiter
            .as_deref()
            .filter(|d| !d.is_empty())
            .map(|d| enc(url, d)),
        encoding_type: i.encoding_type,
        is_truncated: Some(truncated),
        key_marker: Some(enc(url, i.key_marker.as_deref().unwrap_or(""))),
        max_keys: Some(max as i32),
        name: Some(b.name.clone()),
        next_key_marker: next.as_ref().map(|(k, _)| enc(url, k)),
        next_version_id_marker: next.and_then(|(_, v)| v),
        prefix: Some(enc(url, &prefix)),
        request_charged: None,
        version_id_marker: i.version_id_marker,
        versions: Some(versions),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_encoding() {
        assert_eq!(common_prefix("a/b/c", "a/", "/"), Some("a/b/"));
        assert_eq!(common_prefix("a/b", "a/", "/"), None);
        assert_eq!(common_prefix("a/b", "", ""), None);
        assert_eq!(url_encode("a b/ü+"), "a%20b/%C3%BC%2B");
        assert_eq!(resume_after("a/", "", "/"), format!("a/{MAX_CHAR}"));
        assert_eq!(resume_after("a/b", "", "/"), "a/b");
    }
}
