//! The per-byte hashing every S3 PUT pays, whichever server receives it: MD5 for the
//! ETag and SHA-256 for a signed payload (s5cmd and boto3 over plain HTTP sign it), in
//! the builds Eddy uses (md-5 0.10 with its assembly core) and s3s-fs uses (md-5 0.11,
//! sha2 0.11), plus the xxh3 block checksum only Eddy adds. It gives the floor under a
//! PUT's CPU per MB that docs/benchmarks.md compares servers against.
//! `cargo bench --bench put_hashing`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn body(len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| (i.wrapping_mul(0x9e37_79b9) >> 11) as u8)
        .collect()
}

fn hashing(c: &mut Criterion) {
    let data = body(1 << 20);
    let mut g = c.benchmark_group("put_hashing_1MiB");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("md5_asm_0.10", |b| {
        use md5_asm::Digest as _;
        b.iter(|| md5_asm::Md5::digest(black_box(&data)))
    });
    g.bench_function("md5_0.11", |b| {
        use md5::Digest as _;
        b.iter(|| md5::Md5::digest(black_box(&data)))
    });
    g.bench_function("sha256_0.11", |b| {
        use sha2::Digest as _;
        b.iter(|| sha2::Sha256::digest(black_box(&data)))
    });
    g.bench_function("xxh3_64", |b| {
        b.iter(|| xxhash_rust::xxh3::xxh3_64(black_box(&data)))
    });
    g.finish();
}

criterion_group!(benches, hashing);
criterion_main!(benches);
