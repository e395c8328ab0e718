//! Provides compression utilities for encoding records.
//!
//! This module has implementations of gzip, Snappy, as well as a noop compression format that
//! allows encoding and decoding records into a [`Record`](crate::records::Record).

use crate::protocol::buf::{ByteBuf, ByteBufMut};
use anyhow::Result;

#[cfg(feature = "gzip")]
mod gzip;
#[cfg(feature = "lz4")]
mod lz4;
mod none;
#[cfg(feature = "snappy")]
mod snappy;
#[cfg(feature = "zstd")]
mod zstd;

#[cfg(feature = "gzip")]
pub use gzip::Gzip;
#[cfg(feature = "lz4")]
pub use lz4::Lz4;
pub use none::None;
#[cfg(feature = "snappy")]
pub use snappy::Snappy;
#[cfg(feature = "zstd")]
pub use zstd::Zstd;

/// Eddy patch: the most bytes one compressed record set may decompress to. Without a
/// bound, a few compressed bytes could make the process allocate gigabytes (a snappy
/// header claims any length; gzip, lz4 and zstd expand thousands of times).
pub const MAX_DECOMPRESSED: usize = 256 << 20;

/// Eddy patch: reads `r` to its end into a buffer, failing past [`MAX_DECOMPRESSED`].
#[cfg(any(feature = "gzip", feature = "lz4", feature = "zstd"))]
pub(crate) fn read_bounded(r: impl std::io::Read, what: &str) -> Result<bytes::BytesMut> {
    use std::io::Read as _;
    let mut out = Vec::new();
    r.take(MAX_DECOMPRESSED as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| anyhow::anyhow!("Failed to decompress {what}: {e}"))?;
    if out.len() > MAX_DECOMPRESSED {
        anyhow::bail!("{what} record set decompresses to more than {MAX_DECOMPRESSED} bytes");
    }
    Ok(bytes::BytesMut::from(&out[..]))
}

/// A trait for record compression algorithms.
pub trait Compressor<B: ByteBufMut> {
    /// Target buffer type for compression.
    type BufMut: ByteBufMut;
    /// Compresses into provided [`ByteBufMut`], with records encoded by `F` into `R`.
    fn compress<R, F>(buf: &mut B, f: F) -> Result<R>
    where
        F: FnOnce(&mut Self::BufMut) -> Result<R>;
}

/// A trait for record decompression algorithms.
pub trait Decompressor<B: ByteBuf> {
    /// Target buffer type for decompression.
    type Buf: ByteBuf;
    /// Decompress records from `B` mapped using `F` into `R`.
    fn decompress<R, F>(buf: &mut B, f: F) -> Result<R>
    where
        F: FnOnce(&mut Self::Buf) -> Result<R>;
}
