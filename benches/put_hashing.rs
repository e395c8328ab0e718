//! The per-byte hashing every S3 PUT pays, whichever server receives it: MD5 for the
//! ETag and SHA-256 for a signed payload (s5cmd and boto3 over plain HTTP sign it), in
//! the builds Eddy uses (md5-many: one stream, and eight streams in one SIMD pass as
//! concurrent uploads share it) and others use (md-5 0.10's assembly core, md-5 0.11 as
//! s3s-fs has it, sha2 0.11), plus the xxh3 block checksum only Eddy adds. It gives the
//! floor under a PUT's CPU per MB that docs/benchmarks.md compares servers against.
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
    g.bench_function("md5_many_1_stream", |b| {
        b.iter(|| {
            let mut s = md5_many::Md5State::new();
            s.update(black_box(&data));
            s.finalize()
        })
    });
    g.bench_function("sha256_0.11", |b| {
        use sha2::Digest as _;
        b.iter(|| sha2::Sha256::digest(black_box(&data)))
    });
    g.bench_function("xxh3_64", |b| {
        b.iter(|| xxhash_rust::xxh3::xxh3_64(black_box(&data)))
    });
    g.finish();
    // Eight uploads' chunks in one pass: throughput counts all eight.
    let mut g = c.benchmark_group("put_hashing_8x1MiB");
    g.throughput(Throughput::Bytes(8 * data.len() as u64));
    let engine = md5_many::Md5Many::new();
    let inputs = [data.as_slice(); 8];
    g.bench_function("md5_many_8_lanes", |b| {
        b.iter(|| {
            let mut states = [md5_many::Md5State::new(); 8];
            engine.update_many(&mut states, black_box(&inputs));
            states[7].finalize()
        })
    });
    g.finish();
}

criterion_group!(benches, hashing);
criterion_main!(benches);
