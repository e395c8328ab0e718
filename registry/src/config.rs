//! Compatibility levels and modes, registry-wide (`/config`, `/mode`) and per subject
//! (`/config/{subject}`, `/mode/{subject}`), kept in the subject's record (the
//! registry's in the record of the empty subject name).

use catalog::{Op, SchemaOp, SubjectRecord};
use serde_json::json;

use crate::auth::{CONFIGURE, Caller, GET};
use crate::error::{RegistryError, RegistryResult};
use crate::store::{RETRIES, Store};

/// A compatibility level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// No check.
    None,
    /// The new schema reads data of the latest version.
    Backward,
    /// ... of every version.
    BackwardTransitive,
    /// The latest version reads data of the new schema.
    Forward,
    /// Every version reads data of the new schema.
    ForwardTransitive,
    /// Backward and forward with the latest version.
    Full,
    /// Backward and forward with every version.
    FullTransitive,
}

/// The level when none is set (Confluent's default).
pub const DEFAULT_LEVEL: Level = Level::Backward;

impl Level {
    /// Parses a level's name (any case).
    pub fn parse(s: &str) -> RegistryResult<Self> {
        Ok(match s.to_ascii_uppercase().as_str() {
            "NONE" => Level::None,
            "BACKWARD" => Level::Backward,
            "BACKWARD_TRANSITIVE" => Level::BackwardTransitive,
            "FORWARD" => Level::Forward,
            "FORWARD_TRANSITIVE" => Level::ForwardTransitive,
            "FULL" => Level::Full,
            "FULL_TRANSITIVE" => Level::FullTransitive,
            _ => return Err(RegistryError::InvalidCompatibility),
        })
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Level::None => "NONE",
            Level::Backward => "BACKWARD",
            Level::BackwardTransitive => "BACKWARD_TRANSITIVE",
            Level::Forward => "FORWARD",
            Level::ForwardTransitive => "FORWARD_TRANSITIVE",
            Level::Full => "FULL",
            Level::FullTransitive => "FULL_TRANSITIVE",
        }
    }
}

/// A mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Registrations and deletes allowed.
    ReadWrite,
    /// Neither.
    ReadOnly,
    /// Neither (kept for clients that set it; the registry has no override of its own).
    ReadOnlyOverride,
    /// Registrations with the id and version they give, unchecked.
    Import,
}

impl Mode {
    /// Parses a mode's name (any case).
    pub fn parse(s: &str) -> RegistryResult<Self> {
        Ok(match s.to_ascii_uppercase().as_str() {
            "READWRITE" => Mode::ReadWrite,
            "READONLY" => Mode::ReadOnly,
            "READONLY_OVERRIDE" => Mode::ReadOnlyOverride,
            "IMPORT" => Mode::Import,
            _ => return Err(RegistryError::InvalidMode),
        })
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::ReadWrite => "READWRITE",
            Mode::ReadOnly => "READONLY",
            Mode::ReadOnlyOverride => "READONLY_OVERRIDE",
            Mode::Import => "IMPORT",
        }
    }
}

/// The level that applies to `subject`: its own, else the registry's, else BACKWARD.
pub async fn level_of(store: &Store, subject: Option<&SubjectRecord>) -> RegistryResult<Level> {
    if let Some(l) = subject.and_then(|s| s.compatibility.as_deref()) {
        return Level::parse(l);
    }
    let global = store.subject("").await?;
    match global.and_then(|g| g.compatibility) {
        Some(l) => Level::parse(&l),
        None => Ok(DEFAULT_LEVEL),
    }
}

/// The mode that applies to `subject`: its own, else the registry's, else READWRITE.
pub async fn mode_of(store: &Store, subject: Option<&SubjectRecord>) -> RegistryResult<Mode> {
    if let Some(m) = subject.and_then(|s| s.mode.as_deref()) {
        return Mode::parse(m);
    }
    let global = store.subject("").await?;
    match global.and_then(|g| g.mode) {
        Some(m) => Mode::parse(&m),
        None => Ok(Mode::ReadWrite),
    }
}

/// Which setting a route is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// `/config`: the compatibility level.
    Compatibility,
    /// `/mode`.
    Mode,
}

impl Setting {
    fn field(self) -> &'static str {
        match self {
            Setting::Compatibility => "compatibilityLevel",
            Setting::Mode => "mode",
        }
    }

    fn get(self, r: &SubjectRecord) -> Option<&String> {
        match self {
            Setting::Compatibility => r.compatibility.as_ref(),
            Setting::Mode => r.mode.as_ref(),
        }
    }

    fn set(self, r: &mut SubjectRecord, value: Option<String>) {
        match self {
            Setting::Compatibility => r.compatibility = value,
            Setting::Mode => r.mode = value,
        }
    }

    /// The name a request gives, checked and in its canonical spelling.
    fn canonical(self, s: &str) -> RegistryResult<String> {
        Ok(match self {
            Setting::Compatibility => Level::parse(s)?.name().to_owned(),
            Setting::Mode => Mode::parse(s)?.name().to_owned(),
        })
    }

    fn default_name(self) -> &'static str {
        match self {
            Setting::Compatibility => DEFAULT_LEVEL.name(),
            Setting::Mode => Mode::ReadWrite.name(),
        }
    }

    fn missing(self, subject: &str) -> RegistryError {
        match self {
            Setting::Compatibility => RegistryError::NoSubjectCompatibility(subject.to_owned()),
            Setting::Mode => RegistryError::NoSubjectMode(subject.to_owned()),
        }
    }
}

/// GET `/config[/{subject}]` or `/mode[/{subject}]`.
pub async fn get(
    store: &Store,
    caller: &Caller<'_>,
    setting: Setting,
    subject: Option<&str>,
    default_to_global: bool,
) -> RegistryResult<serde_json::Value> {
    if let Some(s) = subject {
        caller.must(GET, s)?;
        let own = store.subject(s).await?;
        if let Some(v) = own.as_ref().and_then(|r| setting.get(r)) {
            return Ok(json!({ setting.field(): v }));
        }
        if !default_to_global {
            return Err(setting.missing(s));
        }
    }
    let global = store.subject("").await?;
    let value = global
        .as_ref()
        .and_then(|r| setting.get(r).cloned())
        .unwrap_or_else(|| setting.default_name().to_owned());
    Ok(json!({ setting.field(): value }))
}

/// PUT (`Some`) or DELETE (`None`) of a setting; answers what the request set, or for a
/// delete what was set before.
pub async fn put(
    store: &Store,
    caller: &Caller<'_>,
    setting: Setting,
    subject: Option<&str>,
    value: Option<&str>,
    force: bool,
) -> RegistryResult<serde_json::Value> {
    match subject {
        Some(s) => caller.must(CONFIGURE, s)?,
        None => caller.must_configure_registry()?,
    }
    let value = value.map(|v| setting.canonical(v)).transpose()?;
    let key = subject.unwrap_or("");
    for _ in 0..RETRIES {
        let stored = store.subject(key).await?;
        // IMPORT is for an empty registry (or subject): ids and versions come from the
        // import and must not collide with ones already given out.
        if setting == Setting::Mode && value.as_deref() == Some("IMPORT") && !force {
            let taken = match subject {
                Some(_) => stored.as_ref().is_some_and(|r| !r.versions.is_empty()),
                None => !store
                    .subjects()
                    .await?
                    .iter()
                    .all(|(_, r)| r.versions.is_empty()),
            };
            if taken {
                return Err(RegistryError::NotPermitted(
                    "Cannot import since found existing subjects".into(),
                ));
            }
        }
        let before = stored.as_ref().and_then(|r| setting.get(r).cloned());
        if value.is_none() && before.is_none() {
            return match subject {
                Some(s) => Err(setting.missing(s)),
                None => Ok(json!({ setting.field(): setting.default_name() })),
            };
        }
        let expected = stored.as_ref().map_or(0, |r| r.changes);
        let mut record = stored.unwrap_or_default();
        setting.set(&mut record, value.clone());
        record.changes = expected + 1;
        let empty =
            record.versions.is_empty() && record.compatibility.is_none() && record.mode.is_none();
        let op = Op::Schema(SchemaOp::PutSubject {
            subject: key.to_owned(),
            expected,
            record: (!empty).then_some(record),
        });
        if store.commit(vec![op]).await? {
            // A PUT answers with the request's field name, as Confluent does.
            let field = match setting {
                Setting::Compatibility => "compatibility",
                Setting::Mode => "mode",
            };
            return Ok(match value {
                Some(v) => json!({ field: v }),
                None => json!({ setting.field(): before }),
            });
        }
    }
    Err(RegistryError::Contended(format!(
        "the settings of {key:?} kept changing"
    )))
}
