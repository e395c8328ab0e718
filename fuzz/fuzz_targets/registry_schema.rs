//! Schemas come from clients (registrations, compatibility checks, lookups) and records
//! from producers (schema validation): parsing any text as each schema type must refuse
//! it or parse it, never panic or hang; a parsed Avro or JSON schema's stored text must
//! be the same JSON; checking compatibility of two parsed schemas must not panic; and
//! a Protobuf schema printed back as text must compile; and
//! decoding any bytes as a record of a fixed set of schemas (Avro with a union, nested
//! record, map and array; a JSON Schema; a Protobuf file with nested messages) must
//! answer, never panic. The typed-table side too: a parsed schema's columns derive or
//! are refused, and a record transcoded by a fixed schema is valid JSON when it
//! transcodes at all. Run:
//! `cargo fuzz run registry_schema fuzz/corpus/registry_schema`.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use registry::formats::{Parsed, SchemaType};

const AVRO: &str = r#"{"type":"record","name":"Order","namespace":"shop","fields":[
  {"name":"id","type":"long"},{"name":"note","type":["null","string"],"default":null},
  {"name":"tags","type":{"type":"array","items":"string"}},
  {"name":"attrs","type":{"type":"map","values":"double"}},
  {"name":"at","type":{"type":"record","name":"When","fields":[{"name":"ms","type":"long"}]}}]}"#;
const JSON: &str = r#"{"type":"object","properties":{"id":{"type":"integer"},
  "tags":{"type":"array","items":{"type":"string","maxLength":8}}},"required":["id"]}"#;
const PROTO: &str = "syntax = \"proto3\"; package shop;\n\
  message Order { int64 id = 1; repeated string tags = 2; message Line { string sku = 1; } repeated Line lines = 3; map<string, int32> counts = 4; }";

fn fixed() -> &'static [Parsed] {
    static FIXED: OnceLock<Vec<Parsed>> = OnceLock::new();
    FIXED.get_or_init(|| {
        vec![
            Parsed::parse(SchemaType::Avro, AVRO, &[]).expect("avro"),
            Parsed::parse(SchemaType::Json, JSON, &[]).expect("json"),
            Parsed::parse(SchemaType::Protobuf, PROTO, &[]).expect("proto"),
        ]
    })
}

fuzz_target!(|data: &[u8]| {
    use tables::expansion::registered::{self as typed, Format};
    for p in fixed() {
        let _ = p.decode(data);
        let _ = p.record_name(data);
        let mut out = Vec::new();
        let transcoded = match p {
            Parsed::Avro(a) => typed::avro::to_json(a.schema(), a.named(), data, &mut out),
            Parsed::Protobuf(pb) => match pb.message(data) {
                Ok((m, rest)) => typed::protobuf::to_json(&m, rest, &mut out),
                Err(e) => Err(e),
            },
            Parsed::Json(_) => Err(String::new()),
        };
        if transcoded.is_ok() {
            serde_json::from_slice::<serde_json::Value>(&out).expect("transcoded to JSON");
        }
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for (ty, other) in [
        (SchemaType::Avro, 0),
        (SchemaType::Json, 1),
        (SchemaType::Protobuf, 2),
    ] {
        let Ok(parsed) = Parsed::parse(ty, text, &[]) else {
            continue;
        };
        if ty != SchemaType::Protobuf {
            let a: serde_json::Value = serde_json::from_str(text).expect("it parsed");
            let b: serde_json::Value =
                serde_json::from_str(parsed.normalized()).expect("stored text is JSON");
            assert_eq!(a, b);
        }
        if let Parsed::Protobuf(p) = &parsed {
            // The printed text (how a descriptor registered in base64 is answered)
            // compiles (options and proto2 defaults are not printed, so the descriptor
            // may differ in those).
            let printed = registry::formats::proto_text::print(p.descriptor());
            if let Err(e) = Parsed::parse(SchemaType::Protobuf, &printed, &[]) {
                panic!("{e}\n{printed}");
            }
        }
        for f in [Format::Avro, Format::Protobuf, Format::JsonSchema] {
            let _ = typed::columns(f, &parsed);
        }
        let _ = parsed.cannot_read(&fixed()[other]);
        let _ = fixed()[other].cannot_read(&parsed);
        let _ = parsed.decode(b"\x02\x04ab");
    }
});
