//! Erasure coding behind one small trait, so the codec can be swapped without touching
//! the blob or log formats.

use crate::error::{StorageError, StorageResult};

/// A systematic `k+m` erasure code: the first `k` shards are the data itself, the last
/// `m` are parity. Systematic matters: a healthy read never decodes anything.
pub trait ErasureCode: Send + Sync {
    /// Number of data shards.
    fn data_shards(&self) -> usize;
    /// Number of parity shards.
    fn parity_shards(&self) -> usize;
    /// Computes the `m` parity shards of `data` (exactly `k` shards of one even length).
    fn encode(&self, data: &[&[u8]]) -> StorageResult<Vec<Vec<u8>>>;
    /// Fills in every missing shard of `shards` (length `k+m`) from at least `k` present
    /// ones of the same length; fails when fewer than `k` are present.
    fn reconstruct(&self, shards: &mut [Option<Vec<u8>>]) -> StorageResult<()>;
}

/// Reed-Solomon over GF(2^16) with SIMD (the `reed-solomon-simd` crate).
#[derive(Debug, Clone, Copy)]
pub struct ReedSolomon {
    k: usize,
    m: usize,
}

impl ReedSolomon {
    /// A `k+m` code; `k >= 1`, and `k + m` within what the codec supports.
    pub fn new(k: usize, m: usize) -> StorageResult<Self> {
        if k == 0 || (m > 0 && !reed_solomon_simd::ReedSolomonEncoder::supports(k, m)) {
            return Err(StorageError::Config(format!(
                "unsupported erasure code {k}+{m}"
            )));
        }
        Ok(Self { k, m })
    }
}

/// The length of each shard when `len` bytes are split over `k` data shards: even
/// (the codec works on 16-bit symbols) and never zero.
pub fn shard_len(len: usize, k: usize) -> usize {
    let per = len.div_ceil(k).max(2);
    per + (per & 1)
}

impl ErasureCode for ReedSolomon {
    fn data_shards(&self) -> usize {
        self.k
    }

    fn parity_shards(&self) -> usize {
        self.m
    }

    fn encode(&self, data: &[&[u8]]) -> StorageResult<Vec<Vec<u8>>> {
        if data.len() != self.k {
            return Err(StorageError::Codec(format!(
                "encode needs {} data shards, got {}",
                self.k,
                data.len()
            )));
        }
        if self.m == 0 {
            return Ok(Vec::new());
        }
        reed_solomon_simd::encode(self.k, self.m, data.iter().copied())
            .map_err(|e| StorageError::Codec(e.to_string()))
    }

    fn reconstruct(&self, shards: &mut [Option<Vec<u8>>]) -> StorageResult<()> {
        let (k, m) = (self.k, self.m);
        if shards.len() != k + m {
            return Err(StorageError::Codec(format!(
                "reconstruct needs {} shard slots, got {}",
                k + m,
                shards.len()
            )));
        }
        let present = shards.iter().filter(|s| s.is_some()).count();
        if present < k {
            return Err(StorageError::TooFewShards { present, needed: k });
        }
        let data_missing = shards[..k].iter().any(Option::is_none);
        if data_missing {
            let restored = {
                let originals = shards[..k]
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| s.as_deref().map(|s| (i, s)));
                let recovery = shards[k..]
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| s.as_deref().map(|s| (i, s)));
                reed_solomon_simd::decode(k, m, originals, recovery)
                    .map_err(|e| StorageError::Codec(e.to_string()))?
            };
            for (i, shard) in restored {
                shards[i] = Some(shard);
            }
        }
        if shards[k..].iter().any(Option::is_none) {
            let parity = {
                let data: Vec<&[u8]> = shards[..k].iter().flatten().map(Vec::as_slice).collect();
                self.encode(&data)?
            };
            for (slot, shard) in shards[k..].iter_mut().zip(parity) {
                if slot.is_none() {
                    *slot = Some(shard);
                }
            }
        }
        Ok(())
    }
}

/// Splits `payload` into `k` zero-padded data shards of [`shard_len`] bytes each.
pub fn split(payload: &[u8], k: usize) -> Vec<Vec<u8>> {
    let len = shard_len(payload.len(), k);
    (0..k)
        .map(|i| {
            let mut shard = vec![0u8; len];
            let start = (i * len).min(payload.len());
            let end = ((i + 1) * len).min(payload.len());
            shard[..end - start].copy_from_slice(&payload[start..end]);
            shard
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Any loss of up to `m` shards is repaired exactly; more is a clear error.
        #[test]
        fn reconstructs_any_m_losses(
            payload in proptest::collection::vec(any::<u8>(), 0..5000),
            k in 1usize..7,
            m in 0usize..4,
            lose in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let code = ReedSolomon::new(k, m).unwrap();
            let data = split(&payload, k);
            let refs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
            let parity = code.encode(&refs).unwrap();
            let full: Vec<Vec<u8>> = data.iter().cloned().chain(parity).collect();
            let mut shards: Vec<Option<Vec<u8>>> = full.iter().cloned().map(Some).collect();
            let mut lost = std::collections::BTreeSet::new();
            for idx in &lose {
                let i = idx.index(k + m);
                shards[i] = None;
                lost.insert(i);
            }
            let result = code.reconstruct(&mut shards);
            if lost.len() <= m {
                prop_assert!(result.is_ok());
                let got: Vec<Vec<u8>> = shards.into_iter().map(Option::unwrap).collect();
                prop_assert_eq!(got, full);
            } else {
                let is_too_few = matches!(result, Err(StorageError::TooFewShards { .. }));
                prop_assert!(is_too_few);
            }
        }
    }
}
