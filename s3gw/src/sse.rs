//! Server-side encryption at rest: SSE-S3 (a random data key per object, stored wrapped by
//! the server's master key) and SSE-C (the client's key, never stored; its MD5 is kept to
//! check the key every read brings).
//!
//! Object bytes are encrypted before they reach the blob store, so every shard file an
//! erasure-coded blob leaves on a drive holds ciphertext only. Each blob is AES-256-CTR
//! under a key of its own, `HMAC-SHA256(data key, "eddy-sse-blob" ‖ blob id as 16 LE
//! bytes)`, counter starting at zero (`docs/format.md`): blob ids are random and never
//! reused, so no two blobs share a keystream even under one SSE-C key, and CTR keeps
//! ciphertext as long as plaintext, so ranges, parts and sizes work unchanged. Integrity
//! stays with the storage layer's checksums and the object's ETag and checksums, which
//! are computed over the plaintext.

use std::path::Path;

use aes::Aes256;
use aes_gcm::Aes256Gcm;
use aes_gcm::aead::{Aead, KeyInit as _, Payload};
use catalog::Encryption;
use ctr::cipher::{KeyIvInit, StreamCipher, StreamCipherSeek};
use hmac::{KeyInit, Mac};
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};
use sha2::{Digest as _, Sha256};
use storage::BlobId;

use crate::Gateway;
use crate::authz::OpAction;
use crate::bucket_settings::{Bucket, BucketDefault, set_encryption, update_bucket};

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new("PutBucketEncryption", "s3:PutEncryptionConfiguration"),
    OpAction::new("GetBucketEncryption", "s3:GetEncryptionConfiguration"),
    OpAction::new("DeleteBucketEncryption", "s3:PutEncryptionConfiguration"),
];

/// The one algorithm S3 names for SSE-S3 and SSE-C.
const AES256: &str = "AES256";

/// Associated data of a wrapped SSE-S3 data key: a sealed key cannot be taken for
/// anything else sealed with the master key.
const WRAP_AAD: &[u8] = b"eddy-sse-s3 data key v1";

/// An object's data key: the SSE-S3 random key or the SSE-C client key.
#[derive(Clone)]
pub struct DataKey([u8; 32]);

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(..)")
    }
}

impl DataKey {
    /// A fresh random key.
    pub fn random() -> Self {
        Self(rand::random())
    }

    /// The keystream of one blob, at offset 0.
    pub fn blob_cipher(&self, id: BlobId) -> BlobCipher {
        let mut mac = <hmac::Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(b"eddy-sse-blob");
        mac.update(&id.0.to_le_bytes());
        let key: [u8; 32] = mac.finalize().into_bytes().into();
        BlobCipher(ctr::Ctr128BE::<Aes256>::new(&key.into(), &[0u8; 16].into()))
    }
}

/// AES-256-CTR over one blob's bytes.
pub struct BlobCipher(ctr::Ctr128BE<Aes256>);

impl BlobCipher {
    /// Moves to byte `pos` of the blob.
    pub fn seek(&mut self, pos: u64) {
        self.0.seek(pos);
    }

    /// Encrypts or decrypts the next bytes in place (CTR is its own inverse).
    pub fn apply(&mut self, buf: &mut [u8]) {
        self.0.apply_keystream(buf);
    }
}

/// The server's SSE-S3 master key.
pub struct MasterKey {
    /// A name for it that reveals nothing of it, stored with each key it wraps.
    id: String,
    key: [u8; 32],
}

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MasterKey({})", self.id)
    }
}

/// Why a master key file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum MasterKeyError {
    /// Reading or creating the file failed.
    #[error("master key file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The failure.
        source: std::io::Error,
    },
    /// The file does not hold 64 hex digits.
    #[error("master key file {0}: expected 64 hex digits (32 bytes)")]
    Malformed(String),
}

impl MasterKey {
    /// A master key from its 32 bytes.
    pub fn new(key: [u8; 32]) -> Self {
        let digest = Sha256::new()
            .chain_update(b"eddy-sse-master-key-id")
            .chain_update(key)
            .finalize();
        Self {
            id: crate::hex(&digest[..8]),
            key,
        }
    }

    /// Its name.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Reads the key from `path` (64 hex digits), creating the file with a random key,
    /// readable by its owner only, when it does not exist.
    pub fn load_or_create(path: &Path) -> Result<Self, MasterKeyError> {
        let io = |source| MasterKeyError::Io {
            path: path.display().to_string(),
            source,
        };
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let hex = text.trim();
                let mut key = [0u8; 32];
                if hex.len() != 64 {
                    return Err(MasterKeyError::Malformed(path.display().to_string()));
                }
                for (i, b) in key.iter_mut().enumerate() {
                    *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
                        .map_err(|_| MasterKeyError::Malformed(path.display().to_string()))?;
                }
                Ok(Self::new(key))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key: [u8; 32] = rand::random();
                match publish_private(path, format!("{}\n", crate::hex(&key)).as_bytes()) {
                    Ok(()) => {
                        tracing::info!(path = %path.display(), "created the SSE-S3 master key file");
                        Ok(Self::new(key))
                    }
                    // Another node (sharing the data dir) made it first: use theirs.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        Self::load_or_create(path)
                    }
                    Err(e) => Err(io(e)),
                }
            }
            Err(e) => Err(io(e)),
        }
    }

    /// Seals a data key: 12-byte nonce, ciphertext, 16-byte tag.
    fn wrap(&self, dk: &DataKey) -> Vec<u8> {
        let cipher = Aes256Gcm::new(&self.key.into());
        let nonce: [u8; 12] = rand::random();
        let sealed = cipher
            .encrypt(
                &nonce.into(),
                Payload {
                    msg: &dk.0,
                    aad: WRAP_AAD,
                },
            )
            .unwrap_or_else(|_| unreachable!("AES-GCM seals 32 bytes"));
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        out
    }

    /// Opens a sealed data key (`None`: not sealed by this key, or altered).
    fn unwrap(&self, wrapped: &[u8]) -> Option<DataKey> {
        let (nonce, sealed) = wrapped.split_at_checked(12)?;
        let nonce: [u8; 12] = nonce.try_into().ok()?;
        let cipher = Aes256Gcm::new(&self.key.into());
        let key = cipher
            .decrypt(
                &nonce.into(),
                Payload {
                    msg: sealed,
                    aad: WRAP_AAD,
                },
            )
            .ok()?;
        Some(DataKey(key.try_into().ok()?))
    }
}

/// Creates `path` with `bytes`, mode 0600, failing if it exists.
/// Makes `path` hold `bytes` (mode 0600) in one step, or fails with `AlreadyExists`:
/// the bytes go into a file of this process's own, fsync'd, which is then hard-linked to
/// `path` (a link never replaces a file). Nodes starting at once on a shared data dir
/// then all use the one key that won; none sees a half-written file.
fn publish_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("key");
    let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4()));
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    opts.mode(0o600);
    let written = opts.open(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    let linked = written.and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    linked?;
    // The new name is durable once the directory is.
    std::fs::File::open(dir).and_then(|d| d.sync_all())
}

/// The SSE-C headers of a request (the three share their names in every input).
#[derive(Debug, Default, Clone, Copy)]
pub struct CustomerKey<'a> {
    /// `...-customer-algorithm`.
    pub algorithm: Option<&'a str>,
    /// `...-customer-key`, base64.
    pub key: Option<&'a str>,
    /// `...-customer-key-MD5`, base64.
    pub key_md5: Option<&'a str>,
}

/// A request's SSE-C headers, named by their three fields (the object's, or a copy
/// source's).
macro_rules! customer_key {
    ($i:expr, $alg:ident, $key:ident, $md5:ident) => {
        $crate::sse::CustomerKey {
            algorithm: $i.$alg.as_deref(),
            key: $i.$key.as_deref(),
            key_md5: $i.$md5.as_deref(),
        }
    };
}
pub(crate) use customer_key;

impl CustomerKey<'_> {
    /// Whether any SSE-C header came.
    pub fn any(&self) -> bool {
        self.algorithm.is_some() || self.key.is_some() || self.key_md5.is_some()
    }

    /// The key and its MD5 (base64), checked as AWS checks them: all three headers,
    /// `AES256`, a 256-bit key, the MD5 matching.
    fn parse(&self) -> S3Result<Option<(DataKey, String)>> {
        if !self.any() {
            return Ok(None);
        }
        let (Some(alg), Some(key), Some(md5)) = (self.algorithm, self.key, self.key_md5) else {
            return Err(s3_error!(
                InvalidArgument,
                "Requests specifying Server Side Encryption with Customer provided keys must provide the encryption algorithm, key and key MD5"
            ));
        };
        if alg != AES256 {
            return Err(s3_error!(
                InvalidEncryptionAlgorithmError,
                "The Encryption request you specified is not valid. Supported value: AES256."
            ));
        }
        let bytes = base64_simd::STANDARD
            .decode_to_vec(key)
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .ok_or_else(|| {
                s3_error!(
                    InvalidArgument,
                    "The secret key was invalid for the specified algorithm."
                )
            })?;
        let actual = base64_simd::STANDARD.encode_to_string(md5_many::md5(&bytes));
        if actual != md5 {
            return Err(s3_error!(
                InvalidArgument,
                "The calculated MD5 hash of the key did not match the hash that was provided."
            ));
        }
        Ok(Some((DataKey(bytes), actual)))
    }
}

/// What a write asks for: `x-amz-server-side-encryption`, whether a KMS key id or
/// context came, and the SSE-C headers.
#[derive(Debug, Default, Clone, Copy)]
pub struct Asked<'a> {
    /// `x-amz-server-side-encryption`.
    pub sse: Option<&'a str>,
    /// Whether `x-amz-server-side-encryption-aws-kms-key-id` or its context came.
    pub kms: bool,
    /// The SSE-C headers.
    pub customer: CustomerKey<'a>,
}

/// What a write request (PutObject, CopyObject, CreateMultipartUpload: their inputs share
/// these field names) asks for.
macro_rules! asked {
    ($i:expr) => {
        $crate::sse::Asked {
            sse: $i.server_side_encryption.as_ref().map(|s| s.as_str()),
            kms: $i.ssekms_key_id.is_some() || $i.ssekms_encryption_context.is_some(),
            customer: $crate::sse::customer_key!(
                $i,
                sse_customer_algorithm,
                sse_customer_key,
                sse_customer_key_md5
            ),
        }
    };
}
pub(crate) use asked;

/// How a new object (or upload) is to be encrypted, and the key to encrypt it with: SSE-C
/// when its headers came, SSE-S3 when asked or when the bucket's default says so, none
/// otherwise. SSE-KMS is refused (`501`): there is no KMS.
pub fn for_write(
    gw: &Gateway,
    b: &Bucket,
    asked: Asked<'_>,
) -> S3Result<Option<(Encryption, DataKey)>> {
    if asked.kms || asked.sse.is_some_and(|s| s.starts_with("aws:kms")) {
        return Err(s3_error!(
            NotImplemented,
            "Server-side encryption with KMS keys is not implemented"
        ));
    }
    if let Some(s) = asked.sse
        && s != AES256
    {
        return Err(s3_error!(
            InvalidArgument,
            "The encryption method specified is not supported"
        ));
    }
    if let Some((key, key_md5)) = asked.customer.parse()? {
        if asked.sse.is_some() {
            return Err(s3_error!(
                InvalidArgument,
                "Server Side Encryption with Customer provided key is incompatible with the encryption method specified"
            ));
        }
        return Ok(Some((Encryption::Customer { key_md5 }, key)));
    }
    if asked.sse.is_none() && b.encryption.is_none() {
        return Ok(None);
    }
    let master = gw.master_key().ok_or_else(|| {
        s3_error!(
            NotImplemented,
            "SSE-S3 needs a master key (sse_master_key_file); this server has none"
        )
    })?;
    let key = DataKey::random();
    Ok(Some((
        Encryption::S3 {
            key_id: master.id().to_owned(),
            wrapped_key: master.wrap(&key),
        },
        key,
    )))
}

/// The key to read an object (or a copy source, or an upload's parts) stored with
/// `encryption`, given the request's SSE-C headers: none for a plaintext object (SSE-C
/// headers on one are refused, as AWS refuses them), the unwrapped data key for SSE-S3,
/// the client's key, checked against the stored MD5, for SSE-C.
pub fn for_read(
    gw: &Gateway,
    encryption: Option<&Encryption>,
    customer: CustomerKey<'_>,
) -> S3Result<Option<DataKey>> {
    match encryption {
        None if customer.any() => Err(s3_error!(
            InvalidRequest,
            "The encryption parameters are not applicable to this object."
        )),
        None => Ok(None),
        Some(Encryption::S3 {
            key_id,
            wrapped_key,
        }) => {
            if customer.any() {
                return Err(s3_error!(
                    InvalidRequest,
                    "The encryption parameters are not applicable to this object."
                ));
            }
            let key = gw
                .master_key()
                .filter(|m| m.id() == key_id)
                .and_then(|m| m.unwrap(wrapped_key));
            match key {
                Some(k) => Ok(Some(k)),
                None => {
                    tracing::error!(key_id, "an SSE-S3 object's master key is not this server's");
                    Err(s3_error!(
                        InternalError,
                        "The object's master key ({key_id}) is not configured on this server"
                    ))
                }
            }
        }
        Some(Encryption::Customer { key_md5 }) => match customer.parse()? {
            None => Err(s3_error!(
                InvalidRequest,
                "The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object."
            )),
            Some((key, md5)) if md5 == *key_md5 => Ok(Some(key)),
            Some(_) => Err(s3_error!(
                AccessDenied,
                "The provided customer key does not match the one the object was stored with"
            )),
        },
    }
}

/// The ETag an object or part gets from its MD5: the MD5 itself (as S3 gives for
/// plaintext and SSE-S3 objects), or for SSE-C a value keyed by the client's key, so that
/// listings and conditional requests never confirm a guess of the plaintext to anyone
/// without the key (AWS's SSE-C ETags are not the MD5 either).
pub fn etag_of(encryption: Option<&Encryption>, key: Option<&DataKey>, md5: &[u8; 16]) -> String {
    match (encryption, key) {
        (Some(Encryption::Customer { .. }), Some(k)) => {
            let mut mac = <hmac::Hmac<Sha256> as KeyInit>::new_from_slice(&k.0)
                .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
            mac.update(b"eddy-sse-c-etag");
            mac.update(md5);
            crate::hex(&mac.finalize().into_bytes()[..16])
        }
        _ => crate::hex(md5),
    }
}

/// The encryption headers of a response about an object stored with `encryption`.
#[derive(Debug, Default)]
pub struct Reported {
    /// `x-amz-server-side-encryption`.
    pub sse: Option<ServerSideEncryption>,
    /// `x-amz-server-side-encryption-customer-algorithm`.
    pub customer_algorithm: Option<SSECustomerAlgorithm>,
    /// `x-amz-server-side-encryption-customer-key-MD5`.
    pub customer_key_md5: Option<SSECustomerKeyMD5>,
}

/// The response headers for `encryption`.
pub fn reported(encryption: Option<&Encryption>) -> Reported {
    match encryption {
        None => Reported::default(),
        Some(Encryption::S3 { .. }) => Reported {
            sse: Some(ServerSideEncryption::from_static(
                ServerSideEncryption::AES256,
            )),
            ..Reported::default()
        },
        Some(Encryption::Customer { key_md5 }) => Reported {
            sse: None,
            customer_algorithm: Some(AES256.to_owned()),
            customer_key_md5: Some(key_md5.clone()),
        },
    }
}

/// PutBucketEncryption: one rule, `AES256` (SSE-S3); `aws:kms` is refused (`501`).
pub async fn put_bucket_encryption(
    gw: &Gateway,
    req: S3Request<PutBucketEncryptionInput>,
) -> S3Result<S3Response<PutBucketEncryptionOutput>> {
    let rules = &req.input.server_side_encryption_configuration.rules;
    let [rule] = rules.as_slice() else {
        return Err(s3_error!(
            MalformedXML,
            "The configuration needs exactly one rule"
        ));
    };
    let Some(by_default) = &rule.apply_server_side_encryption_by_default else {
        return Err(s3_error!(
            MalformedXML,
            "The rule needs ApplyServerSideEncryptionByDefault"
        ));
    };
    match by_default.sse_algorithm.as_str() {
        AES256 => {}
        a if a.starts_with("aws:kms") => {
            return Err(s3_error!(
                NotImplemented,
                "Server-side encryption with KMS keys is not implemented"
            ));
        }
        _ => {
            return Err(s3_error!(MalformedXML, "The SSEAlgorithm must be AES256"));
        }
    }
    if gw.master_key().is_none() {
        return Err(s3_error!(
            NotImplemented,
            "SSE-S3 needs a master key (sse_master_key_file); this server has none"
        ));
    }
    let default = BucketDefault {
        bucket_key_enabled: rule.bucket_key_enabled.unwrap_or(false),
    };
    update_bucket(gw, &req, &req.input.bucket, |b| {
        set_encryption(b, Some(default));
        Ok(())
    })
    .await?;
    Ok(S3Response::new(PutBucketEncryptionOutput {}))
}

/// GetBucketEncryption: `ServerSideEncryptionConfigurationNotFoundError` without one.
pub async fn get_bucket_encryption(
    gw: &Gateway,
    req: S3Request<GetBucketEncryptionInput>,
) -> S3Result<S3Response<GetBucketEncryptionOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let Some(d) = b.encryption else {
        let mut e = s3_error!(
            ServerSideEncryptionConfigurationNotFoundError,
            "The server side encryption configuration was not found"
        );
        // s3s gives this code 400; AWS answers it with 404.
        e.set_status_code(http::StatusCode::NOT_FOUND);
        return Err(e);
    };
    Ok(S3Response::new(GetBucketEncryptionOutput {
        server_side_encryption_configuration: Some(ServerSideEncryptionConfiguration {
            rules: vec![ServerSideEncryptionRule {
                apply_server_side_encryption_by_default: Some(ServerSideEncryptionByDefault {
                    sse_algorithm: ServerSideEncryption::from_static(ServerSideEncryption::AES256),
                    kms_master_key_id: None,
                }),
                bucket_key_enabled: Some(d.bucket_key_enabled),
            }],
        }),
    }))
}

/// DeleteBucketEncryption.
pub async fn delete_bucket_encryption(
    gw: &Gateway,
    req: S3Request<DeleteBucketEncryptionInput>,
) -> S3Result<S3Response<DeleteBucketEncryptionOutput>> {
    update_bucket(gw, &req, &req.input.bucket, |b| {
        set_encryption(b, None);
        Ok(())
    })
    .await?;
    Ok(S3Response::new(DeleteBucketEncryptionOutput {}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_starting_at_once_make_one_master_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared").join("sse-master.key");
        let keys: Vec<[u8; 32]> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| MasterKey::load_or_create(&path).unwrap().key))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(keys.iter().all(|k| *k == keys[0]), "two keys were made");
        assert_eq!(MasterKey::load_or_create(&path).unwrap().key, keys[0]);
        // Nothing but the key is left in the directory.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("sse-master.key")]);
    }

    #[test]
    fn each_blob_has_its_own_keystream_and_ranges_decrypt_alone() {
        let key = DataKey([7; 32]);
        let plain: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut sealed = plain.clone();
        key.blob_cipher(BlobId(1)).apply(&mut sealed);
        assert_ne!(sealed, plain);
        let mut other = plain.clone();
        key.blob_cipher(BlobId(2)).apply(&mut other);
        assert_ne!(sealed, other, "two blobs under one key share a keystream");
        // Any range decrypts on its own, from any offset (not only block boundaries).
        for (start, end) in [(0, 10), (17, 33), (65_535, 70_001), (99_999, 100_000)] {
            let mut c = key.blob_cipher(BlobId(1));
            c.seek(start as u64);
            let mut part = sealed[start..end].to_vec();
            c.apply(&mut part);
            assert_eq!(part, plain[start..end]);
        }
    }

    #[test]
    fn wrapped_keys_open_only_with_their_master_key() {
        let master = MasterKey::new([1; 32]);
        let dk = DataKey::random();
        let wrapped = master.wrap(&dk);
        assert_eq!(wrapped.len(), 12 + 32 + 16);
        assert_eq!(master.unwrap(&wrapped).map(|k| k.0), Some(dk.0));
        assert!(MasterKey::new([2; 32]).unwrap(&wrapped).is_none());
        let mut altered = wrapped.clone();
        altered[20] ^= 1;
        assert!(master.unwrap(&altered).is_none());
        assert_ne!(master.id(), MasterKey::new([2; 32]).id());
    }

    #[test]
    fn customer_keys_are_checked_as_aws_checks_them() {
        let key = [9u8; 32];
        let b64 = base64_simd::STANDARD.encode_to_string(key);
        let md5 = base64_simd::STANDARD.encode_to_string(md5_many::md5(&key));
        let ck = |alg, k, m| CustomerKey {
            algorithm: alg,
            key: k,
            key_md5: m,
        };
        let code = |r: S3Result<Option<(DataKey, String)>>| r.err().map(|e| e.code().clone());
        assert!(ck(None, None, None).parse().unwrap().is_none());
        let ok = ck(Some("AES256"), Some(&b64), Some(&md5)).parse().unwrap();
        assert_eq!(ok.map(|(k, m)| (k.0, m)), Some((key, md5.clone())));
        assert_eq!(
            code(ck(Some("AES256"), Some(&b64), None).parse()),
            Some(s3s::S3ErrorCode::InvalidArgument)
        );
        assert_eq!(
            code(ck(Some("AES128"), Some(&b64), Some(&md5)).parse()),
            Some(s3s::S3ErrorCode::InvalidEncryptionAlgorithmError)
        );
        let short = base64_simd::STANDARD.encode_to_string([9u8; 16]);
        assert_eq!(
            code(ck(Some("AES256"), Some(&short), Some(&md5)).parse()),
            Some(s3s::S3ErrorCode::InvalidArgument)
        );
        assert_eq!(
            code(ck(Some("AES256"), Some(&b64), Some("AAAAAAAAAAAAAAAAAAAAAA==")).parse()),
            Some(s3s::S3ErrorCode::InvalidArgument)
        );
    }
}
