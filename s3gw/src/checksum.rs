//! S3 checksums (CRC32, CRC32C, CRC64NVME, SHA1, SHA256): which ones a request asks for,
//! computing them (and the ETag's MD5) while the body streams, and checking them against
//! the values the client sent in headers or in aws-chunked trailers.

use std::collections::BTreeMap;

use bytes::Bytes;
use s3s::checksum::ChecksumHasher;
use s3s::crypto::{Checksum as _, Crc32, Crc32c, Crc64Nvme, Sha1, Sha256};
use s3s::dto::Checksum;
use s3s::{S3Error, S3ErrorCode, S3Result, TrailingHeaders, s3_error};

use md5_lanes::Md5Stream;

/// The algorithms, as S3 names them.
pub const ALGORITHMS: [&str; 5] = ["CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"];

/// Header (and trailer) name of an algorithm's checksum.
pub fn header_name(alg: &str) -> String {
    format!("x-amz-checksum-{}", alg.to_ascii_lowercase())
}

/// The checksum S3 adds to objects written without one.
pub const DEFAULT_ALGORITHM: &str = "CRC64NVME";

/// What a request says about checksums: values it claims and algorithms to compute.
#[derive(Debug, Default, Clone)]
pub struct Wanted {
    /// Values sent in headers, by algorithm.
    pub claimed: BTreeMap<String, String>,
    /// Algorithms whose values arrive in the trailer.
    pub trailer: Vec<String>,
    /// Algorithms to compute (claimed, trailed, or announced).
    pub compute: Vec<String>,
    /// Content-MD5, base64.
    pub content_md5: Option<String>,
}

impl Wanted {
    /// From the request's checksum header values, announced algorithm and headers.
    pub fn new(
        values: [Option<&String>; 5],
        algorithm: Option<&str>,
        content_md5: Option<&String>,
        headers: &http::HeaderMap,
    ) -> S3Result<Self> {
        let mut w = Wanted {
            content_md5: content_md5.cloned(),
            ..Default::default()
        };
        for (alg, v) in ALGORITHMS.iter().zip(values) {
            if let Some(v) = v {
                w.claimed.insert((*alg).to_owned(), v.clone());
                w.add(alg);
            }
        }
        if let Some(a) = algorithm {
            let a = a.to_ascii_uppercase();
            if !ALGORITHMS.contains(&a.as_str()) {
                return Err(s3_error!(
                    InvalidRequest,
                    "Checksum algorithm {a} is not supported"
                ));
            }
            w.add(&a);
        }
        if let Some(t) = headers.get("x-amz-trailer").and_then(|v| v.to_str().ok()) {
            for name in t.split(',').map(str::trim) {
                if let Some(alg) = ALGORITHMS
                    .iter()
                    .find(|a| header_name(a).eq_ignore_ascii_case(name))
                {
                    w.trailer.push((*alg).to_owned());
                    w.add(alg);
                }
            }
        }
        Ok(w)
    }

    /// Computes CRC64NVME when nothing else is asked for: S3 gives every object written
    /// without a checksum a full-object CRC64NVME.
    pub fn or_default(mut self) -> Self {
        if self.compute.is_empty() {
            self.add(DEFAULT_ALGORITHM);
        }
        self
    }

    /// Also compute `alg`.
    pub fn add(&mut self, alg: &str) {
        if ALGORITHMS.contains(&alg) && !self.compute.iter().any(|a| a == alg) {
            self.compute.push(alg.to_owned());
        }
    }

    /// A hasher for the algorithms to compute.
    pub fn hasher(&self) -> Hasher {
        let mut h = ChecksumHasher::default();
        for a in &self.compute {
            match a.as_str() {
                "CRC32" => h.crc32 = Some(Crc32::new()),
                "CRC32C" => h.crc32c = Some(Crc32c::new()),
                "CRC64NVME" => h.crc64nvme = Some(Crc64Nvme::new()),
                "SHA1" => h.sha1 = Some(Sha1::new()),
                "SHA256" => h.sha256 = Some(Sha256::new()),
                _ => {}
            }
        }
        Hasher {
            sums: h,
            md5: Md5Stream::new(),
        }
    }

    /// Checks the computed values against the claimed ones (headers, then the trailer
    /// once the body has been read): `BadDigest` on a mismatch. Returns the values to
    /// store.
    pub fn verify(
        &self,
        md5: &[u8; 16],
        computed: &BTreeMap<String, String>,
        trailers: Option<&TrailingHeaders>,
    ) -> S3Result<BTreeMap<String, String>> {
        if let Some(m) = &self.content_md5 {
            let given = base64_simd::STANDARD.decode_to_vec(m.trim()).map_err(|_| {
                s3_error!(InvalidDigest, "The Content-MD5 you specified is not valid")
            })?;
            if given.as_slice() != md5 {
                return Err(s3_error!(
                    BadDigest,
                    "The Content-MD5 you specified did not match what we received"
                ));
            }
        }
        let mut claimed = self.claimed.clone();
        if !self.trailer.is_empty()
            && let Some(t) = trailers
        {
            t.read(|h| {
                for alg in &self.trailer {
                    if let Some(v) = h.get(header_name(alg)).and_then(|v| v.to_str().ok()) {
                        claimed.insert(alg.clone(), v.trim().to_owned());
                    }
                }
            });
        }
        for (alg, value) in &claimed {
            if computed.get(alg) != Some(value) {
                return Err(S3Error::with_message(
                    S3ErrorCode::BadDigest,
                    format!("The {alg} you specified did not match the calculated checksum."),
                ));
            }
        }
        Ok(computed.clone())
    }
}

/// Running MD5 and S3 checksums over a body.
pub struct Hasher {
    sums: ChecksumHasher,
    md5: Md5Stream,
}

impl Hasher {
    /// Adds bytes to the checksums and the MD5, here: for callers off the async threads.
    pub fn update(&mut self, data: &[u8]) {
        self.sums.update(data);
        self.md5.update_blocking(data);
    }

    /// Adds bytes to the checksums only. The same bytes go to the MD5, in order, with
    /// [`Hasher::update_md5`]: larger chunks hash there on lanes shared by uploads.
    pub fn update_checksums(&mut self, data: &[u8]) {
        self.sums.update(data);
    }

    /// Adds a chunk to the MD5; see [`Md5Stream::push`].
    pub async fn update_md5(&mut self, chunk: Bytes) {
        self.md5.push(chunk).await;
    }

    /// The MD5 and the checksums by algorithm (base64).
    pub async fn finish(self) -> ([u8; 16], BTreeMap<String, String>) {
        let md5 = self.md5.finish().await;
        (md5, to_map(self.sums.finalize()))
    }

    /// [`Hasher::finish`] for callers that only used [`Hasher::update`].
    pub fn finish_blocking(self) -> ([u8; 16], BTreeMap<String, String>) {
        let md5 = self.md5.finish_blocking();
        (md5, to_map(self.sums.finalize()))
    }
}

/// Checksums as the catalog stores them.
pub fn to_map(c: Checksum) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for (alg, v) in [
        ("CRC32", c.checksum_crc32),
        ("CRC32C", c.checksum_crc32c),
        ("CRC64NVME", c.checksum_crc64nvme),
        ("SHA1", c.checksum_sha1),
        ("SHA256", c.checksum_sha256),
    ] {
        if let Some(v) = v {
            m.insert(alg.to_owned(), v);
        }
    }
    m
}

/// Stored checksums in the response's fields.
#[derive(Default)]
pub struct Fields {
    /// CRC32.
    pub crc32: Option<String>,
    /// CRC32C.
    pub crc32c: Option<String>,
    /// CRC64NVME.
    pub crc64nvme: Option<String>,
    /// SHA1.
    pub sha1: Option<String>,
    /// SHA256.
    pub sha256: Option<String>,
    /// FULL_OBJECT or COMPOSITE.
    pub kind: Option<s3s::dto::ChecksumType>,
}

/// The response fields of stored checksums.
pub fn fields(m: &BTreeMap<String, String>) -> Fields {
    let composite = m.values().any(|v| v.contains('-'));
    let any = ALGORITHMS.iter().any(|a| m.contains_key(*a));
    Fields {
        crc32: m.get("CRC32").cloned(),
        crc32c: m.get("CRC32C").cloned(),
        crc64nvme: m.get("CRC64NVME").cloned(),
        sha1: m.get("SHA1").cloned(),
        sha256: m.get("SHA256").cloned(),
        kind: any.then(|| {
            s3s::dto::ChecksumType::from_static(if composite {
                s3s::dto::ChecksumType::COMPOSITE
            } else {
                s3s::dto::ChecksumType::FULL_OBJECT
            })
        }),
    }
}

/// The composite checksum of a multipart object: the algorithm over the concatenated
/// raw part checksums, then `-N`. `None` when a part lacks the algorithm.
pub fn composite(alg: &str, parts: &[&BTreeMap<String, String>]) -> Option<String> {
    let mut raw = Vec::new();
    for p in parts {
        let v = p.get(alg)?;
        raw.extend(base64_simd::STANDARD.decode_to_vec(v).ok()?);
    }
    let digest: Vec<u8> = match alg {
        "CRC32" => Crc32::checksum(&raw).to_vec(),
        "CRC32C" => Crc32c::checksum(&raw).to_vec(),
        "CRC64NVME" => Crc64Nvme::checksum(&raw).to_vec(),
        "SHA1" => Sha1::checksum(&raw).as_ref().to_vec(),
        "SHA256" => Sha256::checksum(&raw).as_ref().to_vec(),
        _ => return None,
    };
    Some(format!(
        "{}-{}",
        base64_simd::STANDARD.encode_to_string(&digest),
        parts.len()
    ))
}

/// The full-object CRC of a multipart object from its parts' CRCs and sizes (CRC32,
/// CRC32C, CRC64NVME only). `None` when a part lacks it or the algorithm has no
/// combination.
pub fn full_object(alg: &str, parts: &[(&BTreeMap<String, String>, u64)]) -> Option<String> {
    let (algorithm, width) = match alg {
        "CRC32" => (crc_fast::CrcAlgorithm::Crc32IsoHdlc, 4),
        "CRC32C" => (crc_fast::CrcAlgorithm::Crc32Iscsi, 4),
        "CRC64NVME" => (crc_fast::CrcAlgorithm::Crc64Nvme, 8),
        _ => return None,
    };
    let mut acc: Option<u64> = None;
    for (sums, len) in parts {
        let raw = base64_simd::STANDARD.decode_to_vec(sums.get(alg)?).ok()?;
        if raw.len() != width {
            return None;
        }
        let mut v = 0u64;
        for b in raw {
            v = (v << 8) | u64::from(b);
        }
        acc = Some(match acc {
            None => v,
            Some(a) => crc_fast::checksum_combine(algorithm, a, v, *len),
        });
    }
    let v = acc?;
    let bytes = v.to_be_bytes();
    Some(base64_simd::STANDARD.encode_to_string(&bytes[8 - width..]))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use s3s::crypto::{Checksum as _, Crc32, Crc64Nvme};

    use super::full_object;

    fn b64(b: &[u8]) -> String {
        base64_simd::STANDARD.encode_to_string(b)
    }

    #[test]
    fn full_object_crcs_combine_part_crcs() {
        let (a, b): (&[u8], &[u8]) = (b"hello, ", b"multipart world");
        let whole = [a, b].concat();
        for (alg, part_sum, whole_sum) in [
            (
                "CRC32",
                b64(&Crc32::checksum(a)),
                b64(&Crc32::checksum(&whole)),
            ),
            (
                "CRC64NVME",
                b64(&Crc64Nvme::checksum(a)),
                b64(&Crc64Nvme::checksum(&whole)),
            ),
        ] {
            let pb = match alg {
                "CRC32" => b64(&Crc32::checksum(b)),
                _ => b64(&Crc64Nvme::checksum(b)),
            };
            let p1 = BTreeMap::from([(alg.to_owned(), part_sum)]);
            let p2 = BTreeMap::from([(alg.to_owned(), pb)]);
            let got = full_object(alg, &[(&p1, a.len() as u64), (&p2, b.len() as u64)]);
            assert_eq!(got.as_deref(), Some(whole_sum.as_str()), "{alg}");
        }
        assert_eq!(full_object("SHA256", &[]), None);
    }
}
