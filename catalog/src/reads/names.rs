//! The names a view's clients use and the names the catalog stores, mapped in one place.
//! A view's topics, groups, transactional ids and expansion target namespaces are
//! stored under names prefixed with `\0VIEW\0`, which no client can spell (Kafka topic
//! names cannot hold a NUL, and names with one are refused); the default view has no
//! prefix and hides every prefixed name, so a data dir without views reads as before.
//! The whole catalog (no view) sees every name as stored.

use std::borrow::Cow;

use crate::error::{CatalogError, CatalogResult};
use crate::model::{Expansion, GroupRecord, TopicRecord, TxnRecord};

/// How one catalog's clients name things: as stored (`None`: the whole catalog), or
/// under a view's prefix (`""` for the default view, else `\0NAME\0`).
#[derive(Debug, Clone, Copy)]
pub struct Names<'a>(pub(crate) Option<&'a str>);

impl<'a> Names<'a> {
    /// The stored name of a client's name; `None` when a view's client names a NUL (no
    /// client name may reach another view's).
    pub fn stored<'n>(&self, name: &'n str) -> Option<Cow<'n, str>> {
        match self.0 {
            None => Some(Cow::Borrowed(name)),
            Some(_) if name.contains('\0') => None,
            Some("") => Some(Cow::Borrowed(name)),
            Some(prefix) => Some(Cow::Owned(format!("{prefix}{name}"))),
        }
    }

    /// [`Names::stored`], a NUL refused as invalid (for names a client writes).
    pub fn stored_or_err(&self, name: &str) -> CatalogResult<String> {
        self.stored(name)
            .map(Cow::into_owned)
            .ok_or_else(|| CatalogError::Invalid("a name may not hold a NUL character".into()))
    }

    /// The client's name of a stored name, if this catalog's clients may see it.
    pub fn client(&self, stored: &str) -> Option<String> {
        match self.0 {
            None => Some(stored.to_owned()),
            Some("") => (!stored.starts_with('\0')).then(|| stored.to_owned()),
            Some(prefix) => stored.strip_prefix(prefix).map(str::to_owned),
        }
    }

    /// A stored name that must be this view's, as its client knows it (a record of this
    /// view naming another's is corrupt).
    fn client_or_corrupt(&self, stored: &str, what: &str) -> CatalogResult<String> {
        self.client(stored)
            .ok_or_else(|| CatalogError::Corrupt(format!("{what} names {stored:?}")))
    }

    /// A stored topic, if this catalog's clients see it, with its client name.
    pub fn topic_out(&self, mut t: TopicRecord) -> Option<TopicRecord> {
        t.name = self.client(&t.name)?;
        Some(t)
    }

    /// A stored group, if this catalog's clients see it, with its client name.
    pub fn group_out(&self, mut g: GroupRecord) -> Option<GroupRecord> {
        g.name = self.client(&g.name)?;
        Some(g)
    }

    /// A transaction record with the names inside it mapped in (`inward`: to be stored)
    /// or out.
    pub fn txn_record(&self, mut r: TxnRecord, inward: bool) -> CatalogResult<TxnRecord> {
        for (topic, _) in &mut r.partitions {
            *topic = self.map(topic, inward, "transaction")?;
        }
        for g in &mut r.groups {
            *g = self.map(g, inward, "transaction")?;
        }
        Ok(r)
    }

    /// An expansion with its target namespaces mapped in (`inward`) or out.
    pub fn expansion(&self, mut e: Expansion, inward: bool) -> CatalogResult<Expansion> {
        for v in &mut e.versions {
            if let Some(spec) = &mut v.spec {
                spec.namespace = self.map(&spec.namespace, inward, "expansion")?;
            }
        }
        Ok(e)
    }

    fn map(&self, name: &str, inward: bool, what: &str) -> CatalogResult<String> {
        if inward {
            self.stored_or_err(name)
        } else {
            self.client_or_corrupt(name, what)
        }
    }

    /// A catalog error with the names as this catalog's clients know them.
    pub fn error_out(&self, e: CatalogError) -> CatalogError {
        let strip = |n: String| self.client(&n).unwrap_or(n);
        match e {
            CatalogError::UnknownTopic(n) => CatalogError::UnknownTopic(strip(n)),
            CatalogError::TopicExists(n) => CatalogError::TopicExists(strip(n)),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Names;

    #[test]
    fn views_see_only_their_names() {
        let (whole, default, team) = (Names(None), Names(Some("")), Names(Some("\0team\0")));
        assert_eq!(whole.stored("t").as_deref(), Some("t"));
        assert_eq!(default.stored("t").as_deref(), Some("t"));
        assert_eq!(team.stored("t").as_deref(), Some("\0team\0t"));
        assert_eq!(team.stored("\0other\0t"), None);
        assert_eq!(default.stored("\0team\0t"), None);
        assert_eq!(whole.client("\0team\0t").as_deref(), Some("\0team\0t"));
        assert_eq!(default.client("\0team\0t"), None);
        assert_eq!(team.client("\0team\0t").as_deref(), Some("t"));
        assert_eq!(team.client("t"), None);
        assert!(team.stored_or_err("a\0b").is_err());
    }
}
