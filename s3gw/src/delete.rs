//! DeleteObject and DeleteObjects: permanent version deletes, delete markers in
//! versioned buckets, `null` markers in suspended ones. Each deleted object is its own
//! transaction; DeleteObjects runs up to [`DELETES_IN_FLIGHT`] of them at once.
//! Conditional deletes as AWS documents them: `If-Match`,
//! `x-amz-if-match-last-modified-time` and `x-amz-if-match-size` (and, per key of a
//! DeleteObjects, `ETag`, `LastModifiedTime` and `Size`) are checked against the version
//! named, or the current one: `412 PreconditionFailed` when one does not hold, `404
//! NoSuchKey` when there is no such version to check.

use catalog::{ObjectData, ObjectVersion, Versioning};

use crate::bucket_settings::Bucket;
use futures::StreamExt;
use s3s::dto::*;
use s3s::{S3Error, S3Request, S3Response, S3Result, s3_error};

use notify::Requester;

use crate::authz::OpAction;
use crate::change::{Change, Event};
use crate::error::OrS3;
use crate::{Gateway, new_id, now_ms, object_lock};

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new("DeleteObject", "s3:DeleteObject").or_versioned("s3:DeleteObjectVersion"),
    OpAction::new("DeleteObjects", "s3:DeleteObject"),
];

/// What a delete did: the version id it concerned and whether that is a delete marker.
struct Deleted {
    version_id: Option<String>,
    delete_marker: bool,
}

/// A delete marker made now.
fn marker(version_id: String, owner: String) -> ObjectVersion {
    ObjectVersion {
        delete_marker: true,
        owner,
        ..ObjectVersion::new(
            version_id,
            ObjectData::Inline(Vec::new()),
            0,
            String::new(),
            now_ms(),
        )
    }
}

fn ignore_missing(r: S3Result<catalog::CommitOutcome>) -> S3Result<()> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if *e.code() == s3s::S3ErrorCode::NoSuchKey => Ok(()),
        Err(e) => Err(e),
    }
}

/// The conditions of a delete.
#[derive(Default, Clone, Copy)]
struct Conditions<'a> {
    etag: Option<&'a ETagCondition>,
    last_modified: Option<&'a Timestamp>,
    size: Option<i64>,
}

impl Conditions<'_> {
    fn any(&self) -> bool {
        self.etag.is_some() || self.last_modified.is_some() || self.size.is_some()
    }

    /// Checks them against the version they concern: the named one, or the current.
    fn check(&self, v: Option<&ObjectVersion>) -> S3Result<()> {
        let Some(v) = v.filter(|v| !v.delete_marker) else {
            return Err(s3_error!(NoSuchKey, "The specified key does not exist"));
        };
        let etag_ok = self.etag.is_none_or(|c| crate::get::matches(c, Some(v)));
        // HTTP dates have whole seconds.
        let time_ok = self
            .last_modified
            .is_none_or(|t| crate::timestamp_secs(t) == v.last_modified_ms.div_euclid(1000));
        let size_ok = self.size.is_none_or(|s| u64::try_from(s) == Ok(v.size));
        if etag_ok && time_ok && size_ok {
            Ok(())
        } else {
            Err(s3_error!(
                PreconditionFailed,
                "At least one of the pre-conditions you specified did not hold"
            ))
        }
    }
}

/// Adds to `change` what a delete without a version id does to `key`'s current version in
/// `b`: removes it for good in an unversioned bucket (raising `removed`), hides it under a
/// new delete marker in a versioned one, or under a `null` marker replacing the `null`
/// version in a suspended one (raising `marked`). Returns the marker's version id, if one
/// is made. Client deletes and lifecycle expirations both go through here.
pub(crate) fn remove_current<'a>(
    change: Change<'a>,
    b: &'a Bucket,
    key: &str,
    removed: Event,
    marked: Event,
) -> (Change<'a>, Option<String>) {
    match b.versioning {
        Versioning::Unversioned => (change.delete_version_as(removed, b, key, "null"), None),
        Versioning::Enabled => {
            let id = new_id();
            let v = marker(id.clone(), change.principal().to_owned());
            (change.put_version(marked, b, key, v, false), Some(id))
        }
        Versioning::Suspended => (
            {
                let m = marker("null".into(), change.principal().to_owned());
                change.put_version(marked, b, key, m, true)
            },
            Some("null".into()),
        ),
    }
}

async fn delete_one(
    gw: &Gateway,
    b: &Bucket,
    key: &str,
    version_id: Option<&str>,
    conditions: Conditions<'_>,
    requester: &Requester,
    bypass_governance: bool,
) -> S3Result<Deleted> {
    let mut change = Change::new()
        .by(requester.clone())
        .bypass_governance(bypass_governance);
    if conditions.any() {
        let target = match version_id {
            Some(vid) => gw
                .catalog()
                .s3()
                .object_version(&b.name, key, vid)
                .await
                .or_s3()?,
            None => gw.catalog().s3().object(&b.name, key).await.or_s3()?,
        };
        conditions.check(target.as_ref())?;
        // The current version could be replaced between the check and the commit: the
        // commit fails unless it still has the ETag checked. A named version never
        // changes.
        if let (None, Some(v)) = (version_id, &target) {
            change = change.expect_etag(&b.name, key, Some(v.etag.clone()));
        }
    }
    if let Some(vid) = version_id {
        let Some(v) = gw
            .catalog()
            .s3()
            .object_version(&b.name, key, vid)
            .await
            .or_s3()?
        else {
            return Ok(Deleted {
                version_id: Some(vid.to_owned()),
                delete_marker: false,
            });
        };
        ignore_missing(change.delete_version(b, key, vid).commit(gw).await)?;
        return Ok(Deleted {
            version_id: Some(vid.to_owned()),
            delete_marker: v.delete_marker,
        });
    }
    if b.versioning == Versioning::Unversioned
        && gw
            .catalog()
            .s3()
            .object_version(&b.name, key, "null")
            .await
            .or_s3()?
            .is_none()
    {
        return Ok(Deleted {
            version_id: None,
            delete_marker: false,
        });
    }
    let (change, marker_id) =
        remove_current(change, b, key, Event::Delete, Event::DeleteMarkerCreated);
    match marker_id {
        None => ignore_missing(change.commit(gw).await)?,
        Some(_) => {
            change.commit(gw).await?;
        }
    }
    Ok(Deleted {
        delete_marker: marker_id.is_some(),
        version_id: marker_id,
    })
}

/// DeleteObject.
pub async fn delete_object(
    gw: &Gateway,
    req: S3Request<DeleteObjectInput>,
) -> S3Result<S3Response<DeleteObjectOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let i = &req.input;
    let conditions = Conditions {
        etag: i.if_match.as_ref(),
        last_modified: i.if_match_last_modified_time.as_ref(),
        size: i.if_match_size,
    };
    let bypass = object_lock::bypass(
        gw,
        &req,
        &b.name,
        Some(&i.key),
        i.bypass_governance_retention,
    )
    .await?;
    let d = delete_one(
        gw,
        &b,
        &i.key,
        i.version_id.as_deref(),
        conditions,
        &gw.requester(&req),
        bypass,
    )
    .await?;
    Ok(S3Response::new(DeleteObjectOutput {
        delete_marker: d.delete_marker.then_some(true),
        version_id: d.version_id,
        request_charged: None,
    }))
}

/// Keys of one DeleteObjects request deleted at a time.
const DELETES_IN_FLIGHT: usize = 64;

/// DeleteObjects (at most 1000 keys; quiet mode reports only errors).
pub async fn delete_objects(
    gw: &Gateway,
    req: S3Request<DeleteObjectsInput>,
) -> S3Result<S3Response<DeleteObjectsOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let del = &req.input.delete;
    if del.objects.len() > 1000 {
        return Err(s3_error!(
            MalformedXML,
            "At most 1000 keys may be deleted at once"
        ));
    }
    let quiet = del.quiet.unwrap_or(false);
    let requester = gw.requester(&req);
    let who = gw.authz_context(&req);
    let bypass_asked = req.input.bypass_governance_retention == Some(true);
    let mut deleted = Vec::new();
    let mut errors = Vec::new();
    // Each key is its own transaction; with many in flight the catalog commits them in
    // shared group commits instead of one fsync round per key. Results keep request order.
    let mut results = futures::stream::iter(del.objects.iter().cloned())
        .map(|o| {
            let (b, requester, who) = (&b, &requester, &who);
            async move {
                // Each key is authorized as a DeleteObject of its own, as AWS does: a
                // refused key is an error entry and the others are deleted.
                let action = match o.version_id {
                    Some(_) => "s3:DeleteObjectVersion",
                    None => "s3:DeleteObject",
                };
                let etag = o.e_tag.clone().map(ETagCondition::ETag);
                let conditions = Conditions {
                    etag: etag.as_ref(),
                    last_modified: o.last_modified_time.as_ref(),
                    size: o.size,
                };
                let allowed = async {
                    gw.authorize(who, action, Some(&b.name), Some(&o.key))
                        .await?;
                    if bypass_asked {
                        gw.authorize(
                            who,
                            "s3:BypassGovernanceRetention",
                            Some(&b.name),
                            Some(&o.key),
                        )
                        .await?;
                    }
                    Ok(bypass_asked)
                }
                .await;
                let r = match allowed {
                    Ok(bypass) => {
                        let vid = o.version_id.as_deref();
                        delete_one(gw, b, &o.key, vid, conditions, requester, bypass).await
                    }
                    Err(e) => Err(e),
                };
                (o, r)
            }
        })
        .buffered(DELETES_IN_FLIGHT);
    while let Some((o, r)) = results.next().await {
        match r {
            Ok(d) => {
                if !quiet {
                    deleted.push(DeletedObject {
                        key: Some(o.key.clone()),
                        version_id: o.version_id.clone(),
                        delete_marker: d.delete_marker.then_some(true),
                        delete_marker_version_id: d
                            .version_id
                            .filter(|_| d.delete_marker && o.version_id.is_none()),
                    });
                }
            }
            Err(e) => errors.push(error_entry(&o.key, o.version_id.clone(), &e)),
        }
    }
    Ok(S3Response::new(DeleteObjectsOutput {
        deleted: Some(deleted),
        errors: (!errors.is_empty()).then_some(errors),
        request_charged: None,
    }))
}

fn error_entry(key: &str, version_id: Option<String>, e: &S3Error) -> Error {
    Error {
        code: Some(e.code().as_str().to_owned()),
        key: Some(key.to_owned()),
        message: e.message().map(str::to_owned),
        version_id,
    }
}
