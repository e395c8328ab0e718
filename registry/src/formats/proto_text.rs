//! A compiled `.proto` file (`FileDescriptorProto`) printed back as `.proto` text: how
//! the registry answers a Protobuf schema that was registered as a serialized descriptor
//! (confluent-kafka's Python serializer sends base64), as Confluent's registry does, so
//! clients that read `.proto` text (the Java and Go deserializers) can use it. Printed:
//! syntax, package, imports, messages (nested, map fields, oneofs, proto3 `optional`,
//! reserved numbers and names), enums and services; options and proto2 default values
//! are left out.

use std::fmt::Write;

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorProto,
};

/// The file as `.proto` text.
pub fn print(f: &FileDescriptorProto) -> String {
    let mut o = String::new();
    let syntax = match f.syntax() {
        "" => "proto2",
        s => s,
    };
    let _ = writeln!(o, "syntax = \"{syntax}\";");
    if !f.package().is_empty() {
        let _ = writeln!(o, "package {};", f.package());
    }
    for (i, d) in f.dependency.iter().enumerate() {
        let public = f.public_dependency.contains(&(i as i32));
        let _ = writeln!(o, "import {}\"{d}\";", if public { "public " } else { "" });
    }
    for e in &f.enum_type {
        o.push('\n');
        print_enum(&mut o, e, 0);
    }
    for m in &f.message_type {
        o.push('\n');
        print_message(&mut o, m, 0, syntax == "proto3");
    }
    for s in &f.service {
        let _ = writeln!(o, "\nservice {} {{", s.name());
        for m in &s.method {
            let stream = |on: bool| if on { "stream " } else { "" };
            let _ = writeln!(
                o,
                "  rpc {}({}{}) returns ({}{});",
                m.name(),
                stream(m.client_streaming()),
                m.input_type(),
                stream(m.server_streaming()),
                m.output_type()
            );
        }
        o.push_str("}\n");
    }
    o
}

fn pad(depth: usize) -> String {
    "  ".repeat(depth)
}

fn print_enum(o: &mut String, e: &EnumDescriptorProto, depth: usize) {
    let p = pad(depth);
    let _ = writeln!(o, "{p}enum {} {{", e.name());
    // The one option a file does not compile without: values sharing a number.
    if e.options.as_ref().is_some_and(|x| x.allow_alias()) {
        let _ = writeln!(o, "{p}  option allow_alias = true;");
    }
    for v in &e.value {
        let _ = writeln!(o, "{p}  {} = {};", v.name(), v.number());
    }
    print_reserved(
        o,
        &p,
        e.reserved_range.iter().map(|r| (r.start(), r.end() + 1)),
        &e.reserved_name,
    );
    let _ = writeln!(o, "{p}}}");
}

/// `reserved` lines; ranges as (start, end exclusive).
fn print_reserved(
    o: &mut String,
    p: &str,
    ranges: impl Iterator<Item = (i32, i32)>,
    names: &[String],
) {
    let ranges: Vec<String> = ranges
        .map(|(start, end)| match end - 1 {
            last if last == start => start.to_string(),
            last if last >= 536_870_911 => format!("{start} to max"),
            last => format!("{start} to {last}"),
        })
        .collect();
    if !ranges.is_empty() {
        let _ = writeln!(o, "{p}  reserved {};", ranges.join(", "));
    }
    if !names.is_empty() {
        let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
        let _ = writeln!(o, "{p}  reserved {};", quoted.join(", "));
    }
}

fn scalar(t: Type) -> &'static str {
    match t {
        Type::Double => "double",
        Type::Float => "float",
        Type::Int64 => "int64",
        Type::Uint64 => "uint64",
        Type::Int32 => "int32",
        Type::Fixed64 => "fixed64",
        Type::Fixed32 => "fixed32",
        Type::Bool => "bool",
        Type::String => "string",
        Type::Bytes => "bytes",
        Type::Uint32 => "uint32",
        Type::Sfixed32 => "sfixed32",
        Type::Sfixed64 => "sfixed64",
        Type::Sint32 => "sint32",
        Type::Sint64 => "sint64",
        Type::Message | Type::Enum | Type::Group => "",
    }
}

/// A field's type as written: a scalar's name, or a message or enum by its full name.
fn type_of(f: &FieldDescriptorProto) -> String {
    let t = Type::try_from(f.r#type.unwrap_or_default()).unwrap_or(Type::Bytes);
    match scalar(t) {
        "" => f.type_name().to_owned(),
        s => s.to_owned(),
    }
}

/// The map entry a field's type names, when it is a map field.
fn map_entry<'m>(m: &'m DescriptorProto, f: &FieldDescriptorProto) -> Option<&'m DescriptorProto> {
    if f.label() != Label::Repeated {
        return None;
    }
    let short = f.type_name().rsplit('.').next()?;
    m.nested_type
        .iter()
        .find(|n| n.name() == short && n.options.as_ref().is_some_and(|o| o.map_entry()))
}

fn print_field(
    o: &mut String,
    p: &str,
    m: &DescriptorProto,
    f: &FieldDescriptorProto,
    proto3: bool,
    in_oneof: bool,
) {
    let decl = match map_entry(m, f) {
        Some(entry) => {
            let k = entry
                .field
                .iter()
                .find(|x| x.number() == 1)
                .map(type_of)
                .unwrap_or_default();
            let v = entry
                .field
                .iter()
                .find(|x| x.number() == 2)
                .map(type_of)
                .unwrap_or_default();
            format!("map<{k}, {v}>")
        }
        None => {
            let label = match (f.label(), in_oneof) {
                (_, true) => "",
                (Label::Repeated, _) => "repeated ",
                (Label::Required, _) => "required ",
                (Label::Optional, _) if !proto3 || f.proto3_optional() => "optional ",
                (Label::Optional, _) => "",
            };
            format!("{label}{}", type_of(f))
        }
    };
    let _ = writeln!(o, "{p}  {decl} {} = {};", f.name(), f.number());
}

fn print_message(o: &mut String, m: &DescriptorProto, depth: usize, proto3: bool) {
    let p = pad(depth);
    let _ = writeln!(o, "{p}message {} {{", m.name());
    for e in &m.enum_type {
        print_enum(o, e, depth + 1);
    }
    for n in &m.nested_type {
        if !n.options.as_ref().is_some_and(|x| x.map_entry()) {
            print_message(o, n, depth + 1, proto3);
        }
    }
    // A real oneof is printed as a block where its first field is; a proto3 `optional`
    // field's synthetic oneof is not.
    let real_oneof = |f: &FieldDescriptorProto| f.oneof_index.filter(|_| !f.proto3_optional());
    let mut printed_oneofs = Vec::new();
    for f in &m.field {
        match real_oneof(f) {
            None => print_field(o, &p, m, f, proto3, false),
            Some(i) if printed_oneofs.contains(&i) => {}
            Some(i) => {
                printed_oneofs.push(i);
                let name = m
                    .oneof_decl
                    .get(i as usize)
                    .map(|d| d.name())
                    .unwrap_or("choice");
                let _ = writeln!(o, "{p}  oneof {name} {{");
                for g in m.field.iter().filter(|g| real_oneof(g) == Some(i)) {
                    print_field(o, &format!("{p}  "), m, g, proto3, true);
                }
                let _ = writeln!(o, "{p}  }}");
            }
        }
    }
    print_reserved(
        o,
        &p,
        m.reserved_range.iter().map(|r| (r.start(), r.end())),
        &m.reserved_name,
    );
    let _ = writeln!(o, "{p}}}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::protobuf::Protobuf;

    #[test]
    fn a_printed_file_compiles_to_the_same_descriptor() {
        let text = r#"syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
enum Kind { KIND_UNKNOWN = 0; KIND_FOOD = 1; reserved 5 to 7; }
enum Alias { option allow_alias = true; A = 0; B = 0; }
message Order {
  message Line { string sku = 1; int32 qty = 2; }
  enum State { NEW = 0; PAID = 1; }
  int64 id = 1;
  repeated Line lines = 2;
  map<string, int64> counts = 3;
  optional string note = 4;
  oneof pay { string card = 5; bytes token = 6; }
  google.protobuf.Timestamp at = 7;
  State state = 8;
  Kind kind = 9;
  reserved 10, 12 to 14;
  reserved "old";
}
service Shop { rpc Place(Order) returns (Order); rpc Watch(Order) returns (stream Order); }
"#;
        let compiled = Protobuf::parse(text, &[]).unwrap();
        let printed = print(compiled.descriptor());
        let again = Protobuf::parse(&printed, &[]).unwrap_or_else(|e| panic!("{e}\n{printed}"));
        assert_eq!(again.descriptor(), compiled.descriptor(), "{printed}");
        // And a proto2 file with required and optional fields.
        let text2 = "syntax = \"proto2\"; package p; message M { required int32 a = 1; optional string b = 2 ; repeated sint64 c = 3; }";
        let compiled = Protobuf::parse(text2, &[]).unwrap();
        let printed = print(compiled.descriptor());
        let again = Protobuf::parse(&printed, &[]).unwrap();
        assert_eq!(again.descriptor(), compiled.descriptor(), "{printed}");
    }
}
