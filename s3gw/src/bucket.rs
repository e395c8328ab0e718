//! Buckets: create, delete, head, list, location, bucket tagging.

use catalog::S3Op;
use std::collections::BTreeMap;

use catalog::{BucketRecord, CatalogError, Op, Transaction, Versioning};
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};

use crate::authz::OpAction;
use crate::bucket_settings::{location_of, region, set_location, update_bucket};
use crate::error::{OrS3, catalog_error};
use crate::tagging::{tag_set, validate_tags};
use crate::{Gateway, now_ms, timestamp};

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new("ListBuckets", "s3:ListAllMyBuckets"),
    OpAction::new("CreateBucket", "s3:CreateBucket"),
    OpAction::new("DeleteBucket", "s3:DeleteBucket"),
    OpAction::new("HeadBucket", "s3:ListBucket"),
    OpAction::new("GetBucketLocation", "s3:GetBucketLocation"),
    OpAction::new("PutBucketTagging", "s3:PutBucketTagging"),
    OpAction::new("GetBucketTagging", "s3:GetBucketTagging"),
    OpAction::new("DeleteBucketTagging", "s3:PutBucketTagging"),
];

/// Whether `name` follows S3's bucket naming rules.
pub fn valid_bucket_name(name: &str) -> bool {
    let b = name.as_bytes();
    if !(3..=63).contains(&b.len()) {
        return false;
    }
    let edge_ok = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    if !edge_ok(b[0]) || !edge_ok(b[b.len() - 1]) {
        return false;
    }
    if !b
        .iter()
        .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-')
    {
        return false;
    }
    if name.contains("..") || name.contains(".-") || name.contains("-.") {
        return false;
    }
    if name.parse::<std::net::Ipv4Addr>().is_ok() {
        return false;
    }
    !(name.starts_with("xn--") || name.ends_with("-s3alias") || name.ends_with("--ol-s3"))
}

/// CreateBucket.
pub async fn create_bucket(
    gw: &Gateway,
    req: S3Request<CreateBucketInput>,
) -> S3Result<S3Response<CreateBucketOutput>> {
    let user = gw.user(&req)?;
    let name = req.input.bucket.clone();
    if !valid_bucket_name(&name) {
        return Err(s3_error!(
            InvalidBucketName,
            "The specified bucket is not valid"
        ));
    }
    let asked_location = req
        .input
        .create_bucket_configuration
        .as_ref()
        .and_then(|c| c.location_constraint.as_ref())
        .map(|l| l.as_str().to_owned());
    let mut record = BucketRecord {
        name: name.clone(),
        owner: user.clone(),
        created_ms: now_ms(),
        versioning: Versioning::Unversioned,
        tags: BTreeMap::new(),
        settings: BTreeMap::new(),
    };
    if let Some(loc) = &asked_location {
        set_location(&mut record, loc);
    }
    if req.input.object_lock_enabled_for_bucket == Some(true) {
        crate::object_lock::enable(&mut record);
    }
    crate::ownership::at_creation(&req.input, &mut record)?;
    match gw
        .catalog()
        .commit(Transaction::new(vec![Op::S3(S3Op::CreateBucket(record))]))
        .await
    {
        Ok(_) => Ok(S3Response::new(CreateBucketOutput {
            location: Some(format!("/{name}")),
        })),
        Err(CatalogError::BucketExists(_)) => {
            let existing = gw.catalog().s3().bucket(&name).await.or_s3()?;
            let owner = existing.as_ref().map(|b| b.owner.as_str());
            let us_east_1 =
                |loc: Option<&str>| loc.is_none_or(|l| l.is_empty() || l == "us-east-1");
            if owner == Some(user.as_str()) {
                // AWS answers a repeated create of your own bucket in us-east-1 with 200
                // (the bucket is left as it is), and anywhere else with 409.
                let existing_loc = existing.as_ref().and_then(location_of);
                if us_east_1(asked_location.as_deref()) && us_east_1(existing_loc.as_deref()) {
                    return Ok(S3Response::new(CreateBucketOutput {
                        location: Some(format!("/{name}")),
                    }));
                }
                Err(s3_error!(
                    BucketAlreadyOwnedByYou,
                    "Your previous request to create the named bucket succeeded and you already own it"
                ))
            } else {
                Err(s3_error!(
                    BucketAlreadyExists,
                    "The requested bucket name is not available"
                ))
            }
        }
        Err(e) => Err(catalog_error(e)),
    }
}

/// DeleteBucket: refused while objects or versions remain; in-progress multipart
/// uploads are aborted with it.
pub async fn delete_bucket(
    gw: &Gateway,
    req: S3Request<DeleteBucketInput>,
) -> S3Result<S3Response<DeleteBucketOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let mut ops: Vec<Op> = gw
        .catalog()
        .s3()
        .list_uploads(&b.name, "", None, 100_000)
        .await
        .or_s3()?
        .into_iter()
        .map(|u| {
            Op::S3(S3Op::DeleteUpload {
                bucket: u.bucket,
                key: u.key,
                upload_id: u.upload_id,
                keep: Vec::new(),
            })
        })
        .collect();
    // Its inventory table goes with it, or a bucket made again under the same name
    // would show the old one's (its journal topic stays, as a topic of Kafka's).
    ops.extend(crate::metadata::drop_inventory(gw, &b.name).await?);
    ops.push(Op::S3(S3Op::DeleteBucket {
        name: b.name.clone(),
    }));
    gw.catalog().commit(Transaction::new(ops)).await.or_s3()?;
    // The bucket's policy went with it: forget it now, or a bucket made again under the
    // same name would be open to what the old one granted.
    gw.directory()
        .reload()
        .await
        .map_err(crate::error::iam_error)?;
    Ok(S3Response::new(DeleteBucketOutput {}))
}

/// HeadBucket.
pub async fn head_bucket(
    gw: &Gateway,
    req: S3Request<HeadBucketInput>,
) -> S3Result<S3Response<HeadBucketOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    Ok(S3Response::new(HeadBucketOutput {
        bucket_region: b.location.clone(),
        ..Default::default()
    }))
}

/// GetBucketLocation.
pub async fn get_bucket_location(
    gw: &Gateway,
    req: S3Request<GetBucketLocationInput>,
) -> S3Result<S3Response<GetBucketLocationOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    Ok(S3Response::new(GetBucketLocationOutput {
        location_constraint: b.location.clone().map(BucketLocationConstraint::from),
    }))
}

/// ListBuckets: the user's own buckets (every bucket for the administrator).
pub async fn list_buckets(
    gw: &Gateway,
    req: S3Request<ListBucketsInput>,
) -> S3Result<S3Response<ListBucketsOutput>> {
    let user = gw.user(&req)?;
    let i = &req.input;
    let max = match i.max_buckets {
        None => usize::MAX,
        Some(n) if (1..=MAX_BUCKETS_PER_PAGE).contains(&n) => n as usize,
        Some(_) => {
            return Err(s3_error!(
                InvalidArgument,
                "max-buckets must be between 1 and 10000"
            ));
        }
    };
    let prefix = i.prefix.clone().unwrap_or_default();
    // The token is the last name of the previous page; names sort as S3 lists them.
    let after = i.continuation_token.clone();
    let mut records: Vec<BucketRecord> = gw
        .catalog()
        .s3()
        .buckets()
        .await
        .or_s3()?
        .into_iter()
        .filter(|b| (b.owner == user || gw.is_admin(&user)) && b.name.starts_with(&prefix))
        .filter(|b| i.bucket_region.as_deref().is_none_or(|r| region(b) == r))
        .filter(|b| after.as_deref().is_none_or(|a| b.name.as_str() > a))
        .collect();
    records.sort_by(|a, b| a.name.cmp(&b.name));
    let more = records.len() > max;
    records.truncate(max);
    let continuation_token = more
        .then(|| records.last().map(|b| b.name.clone()))
        .flatten();
    let buckets: Vec<Bucket> = records
        .into_iter()
        .map(|b| Bucket {
            bucket_region: location_of(&b),
            creation_date: Some(timestamp(b.created_ms)),
            name: Some(b.name),
        })
        .collect();
    Ok(S3Response::new(ListBucketsOutput {
        buckets: Some(buckets),
        owner: Some(crate::owner(&user)),
        prefix: req.input.prefix,
        continuation_token,
    }))
}

/// The most buckets one ListBuckets page may ask for (AWS's limit).
const MAX_BUCKETS_PER_PAGE: i32 = 10_000;

/// PutBucketTagging (at most 50 tags).
pub async fn put_bucket_tagging(
    gw: &Gateway,
    req: S3Request<PutBucketTaggingInput>,
) -> S3Result<S3Response<PutBucketTaggingOutput>> {
    let tags = validate_tags(&req.input.tagging.tag_set, 50)?;
    update_bucket(gw, &req, &req.input.bucket, |b| {
        b.tags = tags.clone();
        Ok(())
    })
    .await?;
    Ok(S3Response::new(PutBucketTaggingOutput {}))
}

/// GetBucketTagging: `NoSuchTagSet` when the bucket has no tags.
pub async fn get_bucket_tagging(
    gw: &Gateway,
    req: S3Request<GetBucketTaggingInput>,
) -> S3Result<S3Response<GetBucketTaggingOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let mut tags = b.tags.clone();
    // A bucket Eddy manages says so where S3 lets a bucket say anything: its tags.
    if gw.managed_buckets().contains(&req.input.bucket) {
        tags.insert(
            crate::managed::MANAGED_TAG.0.to_owned(),
            crate::managed::MANAGED_TAG.1.to_owned(),
        );
    }
    if tags.is_empty() {
        return Err(s3_error!(NoSuchTagSet, "The TagSet does not exist"));
    }
    Ok(S3Response::new(GetBucketTaggingOutput {
        tag_set: tag_set(&tags),
    }))
}

/// DeleteBucketTagging.
pub async fn delete_bucket_tagging(
    gw: &Gateway,
    req: S3Request<DeleteBucketTaggingInput>,
) -> S3Result<S3Response<DeleteBucketTaggingOutput>> {
    update_bucket(gw, &req, &req.input.bucket, |b| {
        b.tags.clear();
        Ok(())
    })
    .await?;
    Ok(S3Response::with_status(
        DeleteBucketTaggingOutput {},
        http::StatusCode::NO_CONTENT,
    ))
}

#[cfg(test)]
mod tests {
    use super::valid_bucket_name;

    #[test]
    fn bucket_names() {
        for ok in ["abc", "my-bucket.1", "a".repeat(63).as_str()] {
            assert!(valid_bucket_name(ok), "{ok}");
        }
        for bad in [
            "ab",
            "Abc",
            "a..b",
            "-ab",
            "ab-",
            "192.168.1.1",
            "a_b",
            "xn--ab",
        ] {
            assert!(!valid_bucket_name(bad), "{bad}");
        }
    }
}
