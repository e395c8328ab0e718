//! SASL authentication on `SASL_PLAINTEXT://` and `SASL_SSL://` listeners: SaslHandshake
//! v1 and SaslAuthenticate v0-2 with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, and
//! re-authentication with a session lifetime (KIP-368). The users are Eddy's users; only
//! their SCRAM credentials are kept (PLAIN passwords are checked against the SHA-512
//! one). [`session::Session`] is one connection's state machine, with injected time.

pub mod scram;
pub mod session;

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;

use scram::{Credential, ScramHash};

/// A SASL mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mechanism {
    /// PLAIN (RFC 4616): the password in the clear, for TLS listeners.
    Plain,
    /// SCRAM-SHA-256.
    ScramSha256,
    /// SCRAM-SHA-512.
    ScramSha512,
}

impl Mechanism {
    /// Every mechanism, in the order they are listed to clients.
    pub const ALL: [Mechanism; 3] = [Self::Plain, Self::ScramSha256, Self::ScramSha512];

    /// The mechanism's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "PLAIN",
            Self::ScramSha256 => "SCRAM-SHA-256",
            Self::ScramSha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism of a name (case as sent: SASL names are upper case).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    fn hash(self) -> Option<ScramHash> {
        match self {
            Self::Plain => None,
            Self::ScramSha256 => Some(ScramHash::Sha256),
            Self::ScramSha512 => Some(ScramHash::Sha512),
        }
    }
}

/// The broker's SASL settings, over Eddy's users.
#[derive(Debug)]
pub struct Sasl {
    mechanisms: Vec<Mechanism>,
    session_lifetime: Option<Duration>,
    directory: Arc<iam::Directory>,
    /// The users allowed on the broker view (empty: every user).
    allowed: Vec<String>,
}

/// A fresh server nonce: printable ASCII without commas, as SCRAM wants.
pub fn nonce() -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut rng = rand::rng();
    (0..32)
        .map(|_| CHARS[rng.random_range(0..CHARS.len())] as char)
        .collect()
}

impl Sasl {
    /// SASL with these enabled mechanisms and session lifetime (Kafka's
    /// `connections.max.reauth.ms`; `None`: sessions do not expire), checking the
    /// credentials `directory` keeps.
    pub fn new(
        mechanisms: Vec<Mechanism>,
        session_lifetime: Option<Duration>,
        directory: Arc<iam::Directory>,
    ) -> Self {
        Self {
            mechanisms,
            session_lifetime,
            directory,
            allowed: Vec::new(),
        }
    }

    /// Only these users may authenticate (a broker view's users; empty: every user).
    pub fn with_allowed(mut self, users: Vec<String>) -> Self {
        self.allowed = users;
        self
    }

    /// Whether `user` may authenticate here.
    pub fn allowed(&self, user: &str) -> bool {
        self.allowed.is_empty() || self.allowed.iter().any(|u| u == user)
    }

    /// The enabled mechanisms.
    pub fn mechanisms(&self) -> &[Mechanism] {
        &self.mechanisms
    }

    /// How long an authenticated session lasts before the client must re-authenticate.
    pub fn session_lifetime(&self) -> Option<Duration> {
        self.session_lifetime
    }

    fn credential(&self, user: &str, hash: ScramHash) -> Option<Credential> {
        self.directory.scram(user, hash)
    }

    /// Whether `password` is `user`'s (SASL/PLAIN).
    fn check_password(&self, user: &str, password: &str) -> bool {
        self.credential(user, ScramHash::Sha512)
            .or_else(|| self.credential(user, ScramHash::Sha256))
            .is_some_and(|c| c.verifies(password))
    }
}

/// Reads a PLAIN message, `[authzid] NUL authcid NUL passwd`: the user and password, if
/// well formed and the authorization id is empty or the user.
fn plain(message: &[u8]) -> Option<(String, String)> {
    let text = std::str::from_utf8(message).ok()?;
    let mut parts = text.split('\0');
    let (authzid, user, password) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || user.is_empty() || (!authzid.is_empty() && authzid != user) {
        return None;
    }
    Some((user.to_owned(), password.to_owned()))
}

/// A directory in memory with these users and passwords (tests).
#[cfg(test)]
pub(crate) fn directory(users: &[(&str, &str)]) -> Arc<iam::Directory> {
    let users: Vec<iam::ConfigUser> = users
        .iter()
        .map(|(name, password)| iam::ConfigUser {
            name: (*name).into(),
            s3_secret: (*password).into(),
            kafka_password: (*password).into(),
        })
        .collect();
    Arc::new(iam::Directory::in_memory(&users))
}

/// The user a SASL message names, whether or not its proof holds: PLAIN's
/// `authzid NUL user NUL password`, or a SCRAM client-first message's `n=user` (`=2C` and
/// `=3D` unescaped). The audit trail's "who" of a failed authentication.
pub fn claimed_user(auth_bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(auth_bytes).ok()?;
    if let Some(bare) = text.strip_prefix("n,").or_else(|| text.strip_prefix("y,")) {
        let name = bare.split(',').find_map(|part| part.strip_prefix("n="))?;
        return Some(name.replace("=2C", ",").replace("=3D", "="));
    }
    plain(auth_bytes).map(|(user, _)| user)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_messages() {
        assert_eq!(plain(b"\0alice\0pw"), Some(("alice".into(), "pw".into())));
        assert_eq!(
            plain(b"alice\0alice\0pw"),
            Some(("alice".into(), "pw".into()))
        );
        assert_eq!(plain(b"bob\0alice\0pw"), None);
        assert_eq!(plain(b"\0alice"), None);
        assert_eq!(plain(b"\0\0pw"), None);
        assert_eq!(plain(b"\0a\0b\0c"), None);
    }

    #[test]
    fn passwords_are_checked_against_the_scram_credentials() {
        let s = Sasl::new(
            Mechanism::ALL.to_vec(),
            None,
            directory(&[("alice", "secret")]),
        );
        assert!(s.check_password("alice", "secret"));
        assert!(!s.check_password("alice", "Secret"));
        assert!(!s.check_password("bob", "secret"));
        assert_eq!(
            Mechanism::from_name("SCRAM-SHA-512"),
            Some(Mechanism::ScramSha512)
        );
        assert_eq!(Mechanism::from_name("GSSAPI"), None);
    }

    #[test]
    fn a_failed_exchange_names_the_user_it_claims() {
        assert_eq!(claimed_user(b"\0bob\0pw").as_deref(), Some("bob"));
        assert_eq!(claimed_user(b"n,,n=bob,r=abc").as_deref(), Some("bob"));
        assert_eq!(claimed_user(b"n,,n=a=2Cb,r=abc").as_deref(), Some("a,b"));
        // A client-final message names nobody.
        assert_eq!(claimed_user(b"c=biws,r=abc,p=xyz"), None);
    }
}
