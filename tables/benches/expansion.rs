//! Expansion parsing throughput: JSON record bytes into an Arrow batch of the target
//! table, 1000 records a batch (push and finish). A Debezium-like change envelope
//! (~500 B, before/after structs flattened, `source` in excess) and a flat 10-field
//! event. `cargo bench -p eddy-tables --bench expansion`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use iceberg::spec::{NestedField, PrimitiveType, Schema, StructType, Type};
use tables::expansion::fuzzing::{opt, p};
use tables::expansion::{Expander, Layout, Options, Source};

const RECORDS: usize = 1000;

fn debezium() -> (StructType, Vec<Vec<u8>>) {
    let row = Type::Struct(StructType::new(vec![
        opt("id", p(PrimitiveType::Long)),
        opt("first_name", p(PrimitiveType::String)),
        opt("last_name", p(PrimitiveType::String)),
        opt("email", p(PrimitiveType::String)),
        opt(
            "balance",
            p(PrimitiveType::Decimal {
                precision: 12,
                scale: 2,
            }),
        ),
        opt("created_at", p(PrimitiveType::Timestamptz)),
        opt("active", p(PrimitiveType::Boolean)),
    ]));
    let schema = StructType::new(vec![
        opt("op", p(PrimitiveType::String)),
        opt("ts_ms", p(PrimitiveType::Long)),
        opt("before", row.clone()),
        opt("after", row),
    ]);
    let records = (0..RECORDS)
        .map(|i| {
            format!(
                r#"{{"before":{{"id":{id},"first_name":"Sally","last_name":"Thomas","email":"s.thomas{i}@acme.com","balance":"{i}.50","created_at":"2024-01-02T03:04:05.123456Z","active":true}},"after":{{"id":{id},"first_name":"Sally","last_name":"Thomas-Smith","email":"s.smith{i}@acme.com","balance":"{i}.75","created_at":"2024-01-02T03:04:05.123456Z","active":false}},"source":{{"connector":"postgresql","ts_ms":1700000000000,"db":"inventory","schema":"public","table":"customers","txId":{i}}},"op":"u","ts_ms":1700000000123,"ts_us":1700000000123456,"ts_ns":1700000000123456789}}"#,
                id = 1000 + i
            )
            .into_bytes()
        })
        .collect();
    (schema, records)
}

fn flat_event() -> (StructType, Vec<Vec<u8>>) {
    let schema = StructType::new(vec![
        opt("event_id", p(PrimitiveType::Uuid)),
        opt("user_id", p(PrimitiveType::Long)),
        opt("session", p(PrimitiveType::String)),
        opt("type", p(PrimitiveType::String)),
        opt("at", p(PrimitiveType::Timestamptz)),
        opt("x", p(PrimitiveType::Double)),
        opt("y", p(PrimitiveType::Double)),
        opt("page", p(PrimitiveType::String)),
        opt("count", p(PrimitiveType::Int)),
        opt("ok", p(PrimitiveType::Boolean)),
    ]);
    let records = (0..RECORDS)
        .map(|i| {
            format!(
                r#"{{"event_id":"67e55044-10b1-426f-9247-bb680e5f{i:04x}","user_id":{u},"session":"s-{i}-9f8e7d","type":"click","at":"2024-05-06T07:08:09.{ms:03}Z","x":{x}.25,"y":0.5,"page":"/products/{i}","count":{i},"ok":true}}"#,
                u = 100_000 + i * 7,
                ms = i % 1000,
                x = i % 1920,
            )
            .into_bytes()
        })
        .collect();
    (schema, records)
}

fn expander(schema: &StructType, options: &Options) -> Expander {
    let layout = Layout::new(schema, Source::Value, options).unwrap();
    let fields = layout
        .columns()
        .iter()
        .enumerate()
        .map(|(i, c)| NestedField::optional(i as i32 + 1, &c.name, c.ty.clone()).into())
        .collect::<Vec<_>>();
    let schema = Schema::builder().with_fields(fields).build().unwrap();
    let target = Arc::new(iceberg::arrow::schema_to_arrow_schema(&schema).unwrap());
    Expander::new(&layout, target).unwrap()
}

fn expansion(c: &mut Criterion) {
    let options = Options {
        flatten_path: true,
        missing_values_output: true,
        excess_values_output: true,
        ..Options::default()
    };
    for (name, (schema, records)) in [("debezium", debezium()), ("flat_10", flat_event())] {
        let bytes: usize = records.iter().map(Vec::len).sum();
        let mut e = expander(&schema, &options);
        // Check the records parse cleanly, so the benchmark measures the good path.
        for r in &records {
            e.push(Some(r), 0, 0, 0);
        }
        let (_, counters) = e.finish().unwrap();
        assert_eq!(counters.parse_errors, 0, "{name}");

        let mut g = c.benchmark_group(format!("expansion_{name}"));
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_function(format!("{RECORDS}x{}B", bytes / records.len()), |b| {
            b.iter(|| {
                for (i, r) in records.iter().enumerate() {
                    e.push(Some(black_box(r)), 0, i as i64, 1_700_000_000_000);
                }
                e.finish().unwrap()
            })
        });
        g.finish();
    }
}

criterion_group!(benches, expansion);
criterion_main!(benches);
