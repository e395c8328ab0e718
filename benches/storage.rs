//! Erasure-coding throughput: encode and reconstruct of 1 MiB stripes (4+2, the default
//! layout) and of 8+4. `cargo bench --bench storage`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use storage::erasure::{ErasureCode, ReedSolomon, split};

fn stripe(len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| (i.wrapping_mul(0x9e37_79b9) >> 13) as u8)
        .collect()
}

fn erasure(c: &mut Criterion) {
    for (k, m) in [(4usize, 2usize), (8, 4)] {
        let data = stripe(1 << 20);
        let code = ReedSolomon::new(k, m).unwrap();
        let shards = split(&data, k);
        let refs: Vec<&[u8]> = shards.iter().map(Vec::as_slice).collect();
        let parity = code.encode(&refs).unwrap();
        let mut g = c.benchmark_group(format!("erasure_{k}+{m}"));
        g.throughput(Throughput::Bytes(data.len() as u64));
        g.bench_function("encode_1MiB", |b| {
            b.iter(|| code.encode(black_box(&refs)).unwrap())
        });
        g.bench_function(format!("reconstruct_{m}_lost_data_shards_1MiB"), |b| {
            b.iter(|| {
                let mut all: Vec<Option<Vec<u8>>> = shards
                    .iter()
                    .cloned()
                    .chain(parity.iter().cloned())
                    .map(Some)
                    .collect();
                for slot in all.iter_mut().take(m) {
                    *slot = None;
                }
                code.reconstruct(black_box(&mut all)).unwrap();
                all
            })
        });
        g.finish();
    }
}

criterion_group!(benches, erasure);
criterion_main!(benches);
