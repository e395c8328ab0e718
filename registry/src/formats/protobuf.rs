//! Protobuf schemas: held as registered (`.proto` text, or a serialized
//! `FileDescriptorProto` in base64, as confluent-kafka's Python serializer sends).
//! Compatibility between Protobuf versions is not checked yet, so a new version under a
//! level other than NONE is refused (`crate::compatibility`) rather than let through
//! unchecked.

use crate::error::{RegistryError, RegistryResult};

/// A Protobuf schema.
#[derive(Debug)]
pub struct Protobuf {
    text: String,
}

impl Protobuf {
    /// Takes `text` (not empty).
    pub fn parse(text: &str) -> RegistryResult<Self> {
        let text = text.trim();
        if text.is_empty() {
            return Err(RegistryError::InvalidSchema(
                "an empty Protobuf schema".into(),
            ));
        }
        Ok(Self {
            text: text.to_owned(),
        })
    }

    /// The stored text.
    pub fn normalized(&self) -> &str {
        &self.text
    }

    /// Unchecked: every difference counts.
    pub fn cannot_read(&self, writer: &Protobuf) -> Vec<String> {
        if self.text == writer.text {
            Vec::new()
        } else {
            vec!["compatibility of Protobuf schemas is not checked yet: set the subject's compatibility to NONE to register a new version".into()]
        }
    }
}
