//! The kinds of object change that raise notifications, their names in each family of
//! clients (AWS S3, MinIO, CloudEvents element types), and the event-name patterns a
//! notification configuration selects them with.

use crate::error::ConfigError;

/// One kind of object change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A PUT made a new object version.
    Put,
    /// A browser-form POST made a new object version.
    Post,
    /// A copy made a new object version.
    Copy,
    /// A completed multipart upload made a new object version.
    CompleteMultipartUpload,
    /// A version was removed permanently.
    Delete,
    /// A delete made a delete marker (versioned or suspended bucket).
    DeleteMarkerCreated,
    /// A version's tags were replaced.
    TaggingPut,
    /// A version's tags were removed.
    TaggingDelete,
    /// A lifecycle rule removed a version permanently.
    LifecycleDelete,
    /// A lifecycle rule expired a current version with a delete marker (versioned or
    /// suspended bucket).
    LifecycleDeleteMarkerCreated,
}

/// The element event family of a kind (the suffix of `ce_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Element {
    /// `Element.ElementCreated`.
    Created,
    /// `Element.ElementDeleted`.
    Deleted,
    /// `Element.ElementTagCreated`.
    TagCreated,
    /// `Element.ElementTagDeleted`.
    TagDeleted,
}

impl Element {
    /// The CloudEvents type without the configurable prefix.
    pub fn type_suffix(self) -> &'static str {
        match self {
            Element::Created => "Element.ElementCreated",
            Element::Deleted => "Element.ElementDeleted",
            Element::TagCreated => "Element.ElementTagCreated",
            Element::TagDeleted => "Element.ElementTagDeleted",
        }
    }
}

impl EventKind {
    /// Every kind, in bit order.
    pub const ALL: [EventKind; 10] = [
        EventKind::Put,
        EventKind::Post,
        EventKind::Copy,
        EventKind::CompleteMultipartUpload,
        EventKind::Delete,
        EventKind::DeleteMarkerCreated,
        EventKind::TaggingPut,
        EventKind::TaggingDelete,
        EventKind::LifecycleDelete,
        EventKind::LifecycleDeleteMarkerCreated,
    ];

    fn bit(self) -> u16 {
        1 << (self as u8)
    }

    /// The record's `eventName`, as AWS writes it (no `s3:` prefix).
    pub fn aws_name(self) -> &'static str {
        match self {
            EventKind::Put => "ObjectCreated:Put",
            EventKind::Post => "ObjectCreated:Post",
            EventKind::Copy => "ObjectCreated:Copy",
            EventKind::CompleteMultipartUpload => "ObjectCreated:CompleteMultipartUpload",
            EventKind::Delete => "ObjectRemoved:Delete",
            EventKind::DeleteMarkerCreated => "ObjectRemoved:DeleteMarkerCreated",
            EventKind::TaggingPut => "ObjectTagging:Put",
            EventKind::TaggingDelete => "ObjectTagging:Delete",
            EventKind::LifecycleDelete => "LifecycleExpiration:Delete",
            EventKind::LifecycleDeleteMarkerCreated => "LifecycleExpiration:DeleteMarkerCreated",
        }
    }

    /// The name MinIO gives the same change (it files tagging under ObjectCreated).
    pub fn minio_name(self) -> &'static str {
        match self {
            EventKind::TaggingPut => "s3:ObjectCreated:PutTagging",
            EventKind::TaggingDelete => "s3:ObjectCreated:DeleteTagging",
            EventKind::Put => "s3:ObjectCreated:Put",
            EventKind::Post => "s3:ObjectCreated:Post",
            EventKind::Copy => "s3:ObjectCreated:Copy",
            EventKind::CompleteMultipartUpload => "s3:ObjectCreated:CompleteMultipartUpload",
            EventKind::Delete => "s3:ObjectRemoved:Delete",
            EventKind::DeleteMarkerCreated => "s3:ObjectRemoved:DeleteMarkerCreated",
            EventKind::LifecycleDelete => "s3:LifecycleExpiration:Delete",
            EventKind::LifecycleDeleteMarkerCreated => "s3:LifecycleExpiration:DeleteMarkerCreated",
        }
    }

    /// The element event family.
    pub fn element(self) -> Element {
        match self {
            EventKind::Put
            | EventKind::Post
            | EventKind::Copy
            | EventKind::CompleteMultipartUpload => Element::Created,
            EventKind::Delete
            | EventKind::DeleteMarkerCreated
            | EventKind::LifecycleDelete
            | EventKind::LifecycleDeleteMarkerCreated => Element::Deleted,
            EventKind::TaggingPut => Element::TagCreated,
            EventKind::TaggingDelete => Element::TagDeleted,
        }
    }
}

/// A set of event kinds, as selected by a configuration's `Event` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventSet(u16);

impl EventSet {
    /// Whether `kind` is in the set.
    pub fn contains(self, kind: EventKind) -> bool {
        self.0 & kind.bit() != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    fn of(kinds: &[EventKind]) -> Self {
        Self(kinds.iter().fold(0, |a, k| a | k.bit()))
    }

    /// Adds the kinds an S3 event name selects: `s3:ObjectCreated:*` and its members,
    /// `s3:ObjectRemoved:*` and its members, `s3:ObjectTagging:*` and its members,
    /// `s3:LifecycleExpiration:*` and its members, and
    /// MinIO's `s3:ObjectCreated:PutTagging` / `DeleteTagging` for the tagging kinds.
    pub fn add_name(&mut self, name: &str) -> Result<(), ConfigError> {
        use EventKind::*;
        let set = match name {
            "s3:ObjectCreated:*" => Self::of(&[Put, Post, Copy, CompleteMultipartUpload]),
            "s3:ObjectRemoved:*" => Self::of(&[Delete, DeleteMarkerCreated]),
            "s3:ObjectTagging:*" => Self::of(&[TaggingPut, TaggingDelete]),
            "s3:LifecycleExpiration:*" => {
                Self::of(&[LifecycleDelete, LifecycleDeleteMarkerCreated])
            }
            "s3:ObjectCreated:PutTagging" => Self::of(&[TaggingPut]),
            "s3:ObjectCreated:DeleteTagging" => Self::of(&[TaggingDelete]),
            other => match EventKind::ALL
                .iter()
                .find(|k| other.strip_prefix("s3:") == Some(k.aws_name()))
            {
                Some(k) => Self::of(&[*k]),
                None => return Err(ConfigError::UnsupportedEvent(name.to_owned())),
            },
        };
        self.0 |= set.0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_select_kinds() {
        let mut s = EventSet::default();
        s.add_name("s3:ObjectCreated:*").unwrap();
        assert!(s.contains(EventKind::Put) && s.contains(EventKind::CompleteMultipartUpload));
        assert!(!s.contains(EventKind::TaggingPut) && !s.contains(EventKind::Delete));
        s.add_name("s3:ObjectRemoved:DeleteMarkerCreated").unwrap();
        assert!(s.contains(EventKind::DeleteMarkerCreated) && !s.contains(EventKind::Delete));
        let mut t = EventSet::default();
        t.add_name("s3:ObjectCreated:PutTagging").unwrap();
        assert!(t.contains(EventKind::TaggingPut) && !t.contains(EventKind::TaggingDelete));
        for bad in [
            "s3:ObjectCreated",
            "ObjectCreated:Put",
            "s3:*",
            "s3:ObjectRestore:*",
            "",
        ] {
            assert!(EventSet::default().add_name(bad).is_err(), "{bad}");
        }
    }
}
