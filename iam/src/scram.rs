//! SCRAM credentials (RFC 5802, RFC 7677) as Kafka stores them: salt, iterations, stored
//! key and server key, never the password. The broker's SASL exchange checks proofs
//! against them; the directory makes them from passwords (config, CLI) and from salted
//! passwords (Kafka's AlterUserScramCredentials). The digests, HMAC and PBKDF2 come from
//! the RustCrypto crates.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

/// The fewest PBKDF2 iterations a credential may have (Kafka's minimum).
pub const MIN_ITERATIONS: u32 = 4096;

/// The hash of a SCRAM mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScramHash {
    /// SCRAM-SHA-256.
    Sha256,
    /// SCRAM-SHA-512.
    Sha512,
}

impl ScramHash {
    /// HMAC of `data` with `key`.
    pub fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        // HMAC takes keys of any length: new_from_slice cannot fail for it.
        match self {
            Self::Sha256 => Hmac::<Sha256>::new_from_slice(key)
                .map(|m| m.chain_update(data).finalize().into_bytes().to_vec())
                .unwrap_or_default(),
            Self::Sha512 => Hmac::<Sha512>::new_from_slice(key)
                .map(|m| m.chain_update(data).finalize().into_bytes().to_vec())
                .unwrap_or_default(),
        }
    }

    /// The hash of `data`.
    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            Self::Sha256 => Sha256::digest(data).to_vec(),
            Self::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// PBKDF2 of `password` with `salt` and `iterations` (Hi() of RFC 5802).
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            Self::Sha256 => {
                let mut out = vec![0u8; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out);
                out
            }
            Self::Sha512 => {
                let mut out = vec![0u8; 64];
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out);
                out
            }
        }
    }
}

/// A user's stored SCRAM credential for one hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    /// The hash.
    pub hash: ScramHash,
    /// The salt.
    pub salt: Vec<u8>,
    /// PBKDF2 iterations.
    pub iterations: u32,
    /// H(HMAC(SaltedPassword, "Client Key")).
    pub stored_key: Vec<u8>,
    /// HMAC(SaltedPassword, "Server Key").
    pub server_key: Vec<u8>,
}

impl Credential {
    /// The credential of `password` with `salt` and `iterations`.
    pub fn new(hash: ScramHash, password: &str, salt: Vec<u8>, iterations: u32) -> Self {
        let salted = hash.salted_password(password.as_bytes(), &salt, iterations);
        let client_key = hash.hmac(&salted, b"Client Key");
        Self {
            hash,
            stored_key: hash.digest(&client_key),
            server_key: hash.hmac(&salted, b"Server Key"),
            salt,
            iterations,
        }
    }

    /// Whether `password` is this credential's (SASL/PLAIN checks passwords this way, so
    /// no password is kept), in constant time.
    pub fn verifies(&self, password: &str) -> bool {
        let again = Self::new(self.hash, password, self.salt.clone(), self.iterations);
        bool::from(again.stored_key.ct_eq(&self.stored_key))
    }
}

impl Credential {
    /// The credential whose salted password (`Hi(password, salt, iterations)`) a client
    /// computed itself, as AlterUserScramCredentials sends it.
    pub fn from_salted(hash: ScramHash, salted: &[u8], salt: Vec<u8>, iterations: u32) -> Self {
        let client_key = hash.hmac(salted, b"Client Key");
        Self {
            hash,
            stored_key: hash.digest(&client_key),
            server_key: hash.hmac(salted, b"Server Key"),
            salt,
            iterations,
        }
    }

    /// A fresh 32-byte salt.
    pub fn fresh_salt() -> Vec<u8> {
        use rand::Rng;
        let mut s = vec![0u8; 32];
        rand::rng().fill(&mut s[..]);
        s
    }
}

impl From<Credential> for catalog::ScramCredential {
    fn from(c: Credential) -> Self {
        Self {
            mechanism: c.hash.mechanism(),
            salt: c.salt,
            iterations: c.iterations,
            stored_key: c.stored_key,
            server_key: c.server_key,
        }
    }
}

impl From<catalog::ScramCredential> for Credential {
    fn from(c: catalog::ScramCredential) -> Self {
        Self {
            hash: ScramHash::of(c.mechanism),
            salt: c.salt,
            iterations: c.iterations,
            stored_key: c.stored_key,
            server_key: c.server_key,
        }
    }
}

impl ScramHash {
    /// The hash of a stored mechanism.
    pub fn of(m: catalog::ScramMechanism) -> Self {
        match m {
            catalog::ScramMechanism::Sha256 => Self::Sha256,
            catalog::ScramMechanism::Sha512 => Self::Sha512,
        }
    }

    /// The stored mechanism of a hash.
    pub fn mechanism(self) -> catalog::ScramMechanism {
        match self {
            Self::Sha256 => catalog::ScramMechanism::Sha256,
            Self::Sha512 => catalog::ScramMechanism::Sha512,
        }
    }

    /// Both hashes.
    pub const ALL: [ScramHash; 2] = [Self::Sha256, Self::Sha512];
}
