//! OAuth2 client-credentials tokens for the REST catalog: a client trades an S3 access
//! key and secret (`client_id` / `client_secret`) for a bearer token, as PyIceberg,
//! Trino and Spark do with `credential=id:secret`. The users are the directory's, so a
//! user removed or given a new secret is refused at once, tokens granted before included.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{TableError, TableResult};

/// Most live tokens kept; beyond it the oldest are dropped (a client then gets 401 and
/// fetches a new one), so token requests cannot exhaust memory.
const MAX_TOKENS: usize = 100_000;

/// Issues and checks bearer tokens.
pub struct Tokens {
    users: Arc<iam::Directory>,
    ttl: Duration,
    live: Mutex<HashMap<String, (String, String, Instant)>>,
}

/// A granted token.
pub struct Grant {
    /// The bearer token.
    pub token: String,
    /// Seconds it stays valid.
    pub expires_in: u64,
}

impl Tokens {
    /// Tokens for the directory's users (S3 access key and secret), valid for `ttl`.
    pub fn new(users: Arc<iam::Directory>, ttl: Duration) -> Self {
        Self {
            users,
            ttl,
            live: Mutex::new(HashMap::new()),
        }
    }

    /// The secret of an access key.
    pub fn secret_of(&self, access_key: &str) -> Option<String> {
        self.users.s3_secret(access_key)
    }

    /// The directory the users are in.
    pub fn directory(&self) -> &iam::Directory {
        &self.users
    }

    /// The directory, shared.
    pub fn directory_arc(&self) -> Arc<iam::Directory> {
        self.users.clone()
    }

    /// Grants a token when `client_id` / `client_secret` are a user's S3 credentials.
    pub fn grant(&self, client_id: &str, client_secret: &str) -> Option<Grant> {
        let secret = self.users.s3_secret(client_id)?;
        if !constant_time_eq(secret.as_bytes(), client_secret.as_bytes()) {
            return None;
        }
        let token = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let now = Instant::now();
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.retain(|_, (_, _, exp)| *exp > now);
        if live.len() >= MAX_TOKENS
            && let Some(oldest) = live
                .iter()
                .min_by_key(|(_, (_, _, exp))| *exp)
                .map(|(k, _)| k.clone())
        {
            live.remove(&oldest);
        }
        // The token remembers the secret it was granted for: a user given a new secret
        // (or removed) is refused with the old token.
        live.insert(
            token.clone(),
            (client_id.to_owned(), secret, now + self.ttl),
        );
        Some(Grant {
            token,
            expires_in: self.ttl.as_secs(),
        })
    }

    /// The access key a `Authorization` header's bearer token was granted to.
    pub fn check(&self, authorization: Option<&str>) -> TableResult<String> {
        let token = authorization
            .and_then(|h| {
                h.strip_prefix("Bearer ")
                    .or_else(|| h.strip_prefix("bearer "))
            })
            .map(str::trim)
            .ok_or_else(|| {
                TableError::Unauthorized(
                    "a bearer token is required: POST /iceberg/v1/oauth/tokens (a view's catalog: /iceberg/views/NAME/v1/oauth/tokens) with grant_type=client_credentials and your S3 access key and secret".into(),
                )
            })?;
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        match live.get(token) {
            Some((user, secret, exp))
                if *exp > Instant::now()
                    && self.users.s3_secret(user).as_deref() == Some(secret.as_str()) =>
            {
                Ok(user.clone())
            }
            _ => Err(TableError::Unauthorized(
                "the bearer token is unknown or expired".into(),
            )),
        }
    }
}

pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users(name: &str, secret: &str) -> Arc<iam::Directory> {
        Arc::new(iam::Directory::in_memory(&[iam::ConfigUser {
            name: name.into(),
            s3_secret: secret.into(),
            kafka_password: secret.into(),
        }]))
    }

    #[test]
    fn only_the_right_secret_gets_a_token_and_only_granted_tokens_pass() {
        let t = Tokens::new(users("alice", "alice-secret"), Duration::from_secs(60));
        assert!(t.grant("alice", "wrong").is_none());
        assert!(t.grant("bob", "alice-secret").is_none());
        let g = t.grant("alice", "alice-secret").expect("granted");
        assert_eq!(g.expires_in, 60);
        let header = format!("Bearer {}", g.token);
        assert_eq!(t.check(Some(&header)).expect("valid"), "alice");
        assert!(matches!(t.check(None), Err(TableError::Unauthorized(_))));
        assert!(matches!(
            t.check(Some("Bearer not-a-token")),
            Err(TableError::Unauthorized(_))
        ));
        assert!(matches!(
            t.check(Some(&format!("Basic {}", g.token))),
            Err(TableError::Unauthorized(_))
        ));
    }

    #[test]
    fn expired_tokens_are_refused() {
        let t = Tokens::new(users("alice", "s"), Duration::ZERO);
        let g = t.grant("alice", "s").expect("granted");
        assert!(t.check(Some(&format!("Bearer {}", g.token))).is_err());
    }
}
