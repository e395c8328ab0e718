//! A bucket sub-resource configuration (lifecycle, CORS) kept in the catalog as the S3 XML
//! document s3s serializes: stored after validation, parsed again when used, so what is on
//! disk means what S3's schema says (docs/format.md, format 7).

use catalog::S3Op;
use catalog::{BucketConfigKind, Op, Transaction};
use s3s::xml::{Deserialize, Deserializer, Serialize, Serializer};
use s3s::{S3Error, S3ErrorCode, S3Result};

use crate::Gateway;
use crate::error::{OrS3, catalog_error};

/// The XML document of a configuration.
pub fn to_xml<T: Serialize>(config: &T) -> S3Result<String> {
    let mut buf = Vec::new();
    config
        .serialize(&mut Serializer::new(&mut buf))
        .map_err(|e| S3Error::with_message(S3ErrorCode::InternalError, e.to_string()))?;
    String::from_utf8(buf)
        .map_err(|e| S3Error::with_message(S3ErrorCode::InternalError, e.to_string()))
}

/// A stored document parsed back (an error means the stored bytes are not what this
/// build wrote: reported, never guessed at).
pub fn from_xml<T: for<'x> Deserialize<'x>>(document: &str) -> Result<T, String> {
    let mut d = Deserializer::new(document.as_bytes());
    let v = T::deserialize(&mut d).map_err(|e| format!("{e:?}"))?;
    d.expect_eof().map_err(|e| format!("{e:?}"))?;
    Ok(v)
}

/// Sets (`Some`) or removes (`None`) one of a bucket's configurations, in a transaction
/// of its own.
pub async fn put(
    gw: &Gateway,
    bucket: &str,
    kind: BucketConfigKind,
    document: Option<String>,
) -> S3Result<()> {
    gw.catalog()
        .commit(Transaction::new(vec![Op::S3(S3Op::PutBucketConfig {
            bucket: bucket.to_owned(),
            kind,
            document,
        })]))
        .await
        .map_err(catalog_error)?;
    Ok(())
}

/// One of a bucket's configurations, parsed; `None` when it has none.
pub async fn get<T: for<'x> Deserialize<'x>>(
    gw: &Gateway,
    bucket: &str,
    kind: BucketConfigKind,
) -> S3Result<Option<T>> {
    let Some(c) = gw
        .catalog()
        .s3()
        .bucket_config(bucket, kind)
        .await
        .or_s3()?
    else {
        return Ok(None);
    };
    from_xml(&c.document).map(Some).map_err(|e| {
        tracing::error!(bucket, ?kind, error = %e, "stored bucket configuration does not parse");
        S3Error::with_message(S3ErrorCode::InternalError, e)
    })
}
