//! Protobuf schemas: a `.proto` file's text, or a serialized `FileDescriptorProto` in
//! base64 (what confluent-kafka's Python serializer registers), compiled by `protox`
//! with the files its references name and the well-known `google/protobuf/*` files.
//! Stored as registered; answered in either form (`?format=serialized` gives base64).
//! Compatibility compares the messages of the two files by full name and their fields
//! by number, with the rules of Confluent's Protobuf diff that decide whether a reader
//! can read a writer's bytes (see [`Protobuf::cannot_read`]).

use std::collections::HashMap;

use base64::Engine;
use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};

use super::Imported;
use crate::error::{RegistryError, RegistryResult};

/// The name the registered file is compiled under when it names none itself.
const MAIN: &str = "schema.proto";

/// A compiled Protobuf schema.
#[derive(Debug)]
pub struct Protobuf {
    text: String,
    file: FileDescriptorProto,
    /// The file and everything it imports, for decoding records.
    pool: prost_reflect::DescriptorPool,
    /// Registered as base64 of a descriptor rather than as text.
    registered_as_descriptor: bool,
}

/// A registered file's text as a `protox` file: base64 of a descriptor, or source.
fn open(name: &str, text: &str) -> Result<File, String> {
    let b64 = !text.is_empty()
        && text.len().is_multiple_of(4)
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    if b64 && let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(text) {
        let mut d = FileDescriptorProto::decode(bytes.as_slice()).map_err(|e| e.to_string())?;
        if d.name.as_deref().is_none_or(str::is_empty) {
            d.name = Some(name.to_owned());
        }
        return Ok(File::from_file_descriptor_proto(d));
    }
    File::from_source(name, text).map_err(|e| e.to_string())
}

/// The files of a schema's references, by the name it imports them under.
struct Imports(HashMap<String, String>);

impl FileResolver for Imports {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        let text = self
            .0
            .get(name)
            .ok_or_else(|| protox::Error::file_not_found(name))?;
        open(name, text).map_err(|e| protox::Error::new(std::io::Error::other(e)))
    }
}

/// The main file: the registered text, under its own name.
struct Main {
    name: String,
    file: File,
}

impl FileResolver for Main {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        if name == self.name {
            Ok(self.file.clone())
        } else {
            Err(protox::Error::file_not_found(name))
        }
    }
}

impl Protobuf {
    /// Compiles `text` with `imports`.
    pub fn parse(text: &str, imports: &[Imported]) -> RegistryResult<Self> {
        let invalid = |e: String| RegistryError::InvalidSchema(e);
        let text = text.trim().to_owned();
        let main = open(MAIN, &text).map_err(invalid)?;
        let registered_as_descriptor = main.source().is_none();
        let name = match main.file_descriptor_proto().name() {
            "" => MAIN.to_owned(),
            n => n.to_owned(),
        };
        let mut chain = ChainFileResolver::new();
        chain.add(Main {
            name: name.clone(),
            file: main,
        });
        chain.add(Imports(
            imports
                .iter()
                .map(|i| (i.name.clone(), i.text.clone()))
                .collect(),
        ));
        chain.add(GoogleFileResolver::new());
        let mut compiler = protox::Compiler::with_file_resolver(chain);
        compiler.include_imports(false).include_source_info(false);
        compiler
            .open_file(&name)
            .map_err(|e| invalid(e.to_string()))?;
        let file = compiler
            .file_descriptor_set()
            .file
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| invalid("the file did not compile".into()))?;
        Ok(Self {
            text,
            file,
            pool: compiler.descriptor_pool(),
            registered_as_descriptor,
        })
    }

    /// The stored text.
    pub fn normalized(&self) -> &str {
        &self.text
    }

    /// The file's first message (what the serializers write unless told otherwise, and
    /// the message index list `[0]` names).
    pub fn first_message(&self) -> Option<prost_reflect::MessageDescriptor> {
        let m = self.file.message_type.first()?;
        let name = match self.file.package() {
            "" => m.name().to_owned(),
            p => format!("{p}.{}", m.name()),
        };
        self.pool.get_message_by_name(&name)
    }

    /// The compiled file.
    pub fn descriptor(&self) -> &FileDescriptorProto {
        &self.file
    }

    /// The schema as `.proto` text: as registered, or printed from the descriptor a
    /// client registered in base64.
    pub fn proto_text(&self) -> String {
        if self.registered_as_descriptor {
            super::proto_text::print(&self.file)
        } else {
            self.text.clone()
        }
    }

    /// The compiled file as base64 of its `FileDescriptorProto` (`format=serialized`).
    pub fn serialized(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.file.encode_to_vec())
    }

    /// The message a record names by its message indexes (the wire format's list of
    /// positions, top-level message then nested ones; none: the first message), and the
    /// bytes after them.
    pub fn message<'p>(
        &self,
        payload: &'p [u8],
    ) -> Result<(prost_reflect::MessageDescriptor, &'p [u8]), String> {
        let mut rest = payload;
        let count = zigzag(&mut rest)?;
        let indexes: Vec<i64> = if count == 0 {
            vec![0]
        } else {
            if !(1..=64).contains(&count) {
                return Err(format!("{count} message indexes"));
            }
            (0..count)
                .map(|_| zigzag(&mut rest))
                .collect::<Result<_, _>>()?
        };
        let missing = || format!("no message at indexes {indexes:?}");
        let mut name = self.file.package().to_owned();
        let mut level: &[DescriptorProto] = &self.file.message_type;
        for i in &indexes {
            let m = usize::try_from(*i)
                .ok()
                .and_then(|i| level.get(i))
                .ok_or_else(missing)?;
            name = if name.is_empty() {
                m.name().to_owned()
            } else {
                format!("{name}.{}", m.name())
            };
            level = &m.nested_type;
        }
        let d = self.pool.get_message_by_name(&name).ok_or_else(missing)?;
        Ok((d, rest))
    }

    /// Why `payload` (message indexes, then the message) does not decode as the message
    /// it names.
    pub fn decode(&self, payload: &[u8]) -> Result<(), String> {
        let (d, bytes) = self.message(payload)?;
        prost_reflect::DynamicMessage::decode(d, bytes)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// The full name of the message a record names (RecordNameStrategy's subject).
    pub fn record_name(&self, payload: &[u8]) -> Option<String> {
        self.message(payload)
            .ok()
            .map(|(d, _)| d.full_name().to_owned())
    }

    /// Why a reader compiled from this schema may not read bytes written with `writer`'s
    /// messages: the package or a message gone, a field (by number) changed to a type
    /// of another wire encoding or another message or enum, a field made repeated or
    /// singular, a required field added or removed.
    pub fn cannot_read(&self, writer: &Protobuf) -> Vec<String> {
        let mut out = Vec::new();
        if self.file.package() != writer.file.package() {
            out.push(format!(
                "PACKAGE_CHANGED: {} to {}",
                writer.file.package(),
                self.file.package()
            ));
        }
        let readers = messages(&self.file);
        for (name, w) in messages(&writer.file) {
            let Some(r) = readers.get(&name) else {
                out.push(format!("MESSAGE_REMOVED: {name}"));
                continue;
            };
            fields(&name, r, w, &mut out);
        }
        out
    }
}

/// Every message of a file, nested ones included, by full name.
fn messages(f: &FileDescriptorProto) -> HashMap<String, &DescriptorProto> {
    fn walk<'a>(
        prefix: &str,
        ms: &'a [DescriptorProto],
        out: &mut HashMap<String, &'a DescriptorProto>,
    ) {
        for m in ms {
            let name = if prefix.is_empty() {
                m.name().to_owned()
            } else {
                format!("{prefix}.{}", m.name())
            };
            walk(&name, &m.nested_type, out);
            out.insert(name, m);
        }
    }
    let mut out = HashMap::new();
    walk(f.package(), &f.message_type, &mut out);
    out
}

/// The wire encoding a scalar type shares with others: a change within one reads.
fn wire_group(t: Type) -> Option<u8> {
    Some(match t {
        Type::Int32 | Type::Int64 | Type::Uint32 | Type::Uint64 | Type::Bool => 0,
        Type::Sint32 | Type::Sint64 => 1,
        Type::Fixed32 | Type::Sfixed32 => 2,
        Type::Fixed64 | Type::Sfixed64 => 3,
        Type::String | Type::Bytes => 4,
        Type::Float => 5,
        Type::Double => 6,
        Type::Message | Type::Enum | Type::Group => return None,
    })
}

fn field_type(f: &FieldDescriptorProto) -> Type {
    Type::try_from(f.r#type.unwrap_or_default()).unwrap_or(Type::Bytes)
}

fn fields(message: &str, r: &DescriptorProto, w: &DescriptorProto, out: &mut Vec<String>) {
    let by_number = |m: &DescriptorProto| -> HashMap<i32, FieldDescriptorProto> {
        m.field.iter().map(|f| (f.number(), f.clone())).collect()
    };
    let (rf, wf) = (by_number(r), by_number(w));
    for (n, wfield) in &wf {
        let Some(rfield) = rf.get(n) else {
            if wfield.label() == Label::Required {
                out.push(format!(
                    "REQUIRED_FIELD_REMOVED: {message}.{}",
                    wfield.name()
                ));
            }
            continue;
        };
        let (rt, wt) = (field_type(rfield), field_type(wfield));
        let named = |t: Type| matches!(t, Type::Message | Type::Enum | Type::Group);
        if named(rt) || named(wt) {
            if rt != wt || rfield.type_name() != wfield.type_name() {
                out.push(format!(
                    "FIELD_NAMED_TYPE_CHANGED: {message}.{} ({} to {})",
                    rfield.name(),
                    type_label(wfield),
                    type_label(rfield)
                ));
            }
        } else if wire_group(rt) != wire_group(wt) {
            out.push(format!(
                "FIELD_SCALAR_KIND_CHANGED: {message}.{} ({} to {})",
                rfield.name(),
                type_label(wfield),
                type_label(rfield)
            ));
        }
        if (rfield.label() == Label::Repeated) != (wfield.label() == Label::Repeated) {
            out.push(format!(
                "FIELD_KIND_CHANGED: {message}.{} (repeated or not)",
                rfield.name()
            ));
        }
    }
    for (n, rfield) in &rf {
        if !wf.contains_key(n) && rfield.label() == Label::Required {
            out.push(format!("REQUIRED_FIELD_ADDED: {message}.{}", rfield.name()));
        }
    }
}

/// One zigzag varint, as the wire format's message indexes are written.
fn zigzag(b: &mut &[u8]) -> Result<i64, String> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = b.split_first().ok_or("the message indexes are cut short")?;
        *b = rest;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(((v >> 1) as i64) ^ -((v & 1) as i64));
        }
    }
    Err("a message index is not a varint".into())
}

fn type_label(f: &FieldDescriptorProto) -> String {
    match field_type(f) {
        Type::Message | Type::Enum | Type::Group => {
            f.type_name().trim_start_matches('.').to_owned()
        }
        t => t
            .as_str_name()
            .trim_start_matches("TYPE_")
            .to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proto(body: &str) -> Protobuf {
        Protobuf::parse(&format!("syntax = \"proto3\";\npackage shop;\n{body}"), &[]).unwrap()
    }

    #[test]
    fn wire_compatible_changes_read_and_others_do_not() {
        let v1 = proto("message Order { int64 id = 1; string item = 2; }");
        let widened = proto("message Order { uint64 id = 1; bytes item = 2; int32 qty = 3; }");
        assert!(widened.cannot_read(&v1).is_empty());
        let removed = proto("message Order { int64 id = 1; }");
        assert!(removed.cannot_read(&v1).is_empty());
        let retyped = proto("message Order { double id = 1; string item = 2; }");
        assert!(retyped.cannot_read(&v1)[0].starts_with("FIELD_SCALAR_KIND_CHANGED"));
        let repeated = proto("message Order { repeated int64 id = 1; string item = 2; }");
        assert!(repeated.cannot_read(&v1)[0].starts_with("FIELD_KIND_CHANGED"));
        let gone = proto("message Other { int64 id = 1; }");
        assert!(gone.cannot_read(&v1)[0].starts_with("MESSAGE_REMOVED"));
    }

    #[test]
    fn a_serialized_descriptor_compiles_like_its_source() {
        let text = proto("message Order { int64 id = 1; }");
        let b64 = Protobuf::parse(&text.serialized(), &[]).unwrap();
        assert!(b64.cannot_read(&text).is_empty());
        assert_eq!(b64.serialized(), text.serialized());
    }

    #[test]
    fn imports_resolve_from_references_and_well_known_files() {
        let money = Imported {
            name: "shop/money.proto".into(),
            text: "syntax = \"proto3\"; package shop; message Money { int64 cents = 1; }".into(),
        };
        let text = "syntax = \"proto3\"; package shop; import \"shop/money.proto\";\n\
                    import \"google/protobuf/timestamp.proto\";\n\
                    message Priced { Money price = 1; google.protobuf.Timestamp at = 2; }";
        assert!(Protobuf::parse(text, std::slice::from_ref(&money)).is_ok());
        assert!(matches!(
            Protobuf::parse(text, &[]),
            Err(RegistryError::InvalidSchema(_))
        ));
        assert!(Protobuf::parse("message {", &[]).is_err());
    }
}
