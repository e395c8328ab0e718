//! Console sessions: a user signs in with their S3 access key and secret (the same
//! identity as every API; the Iceberg catalog calls the pair an OAuth2 client id and
//! secret), and gets a random session id in an `HttpOnly`, `SameSite=Strict` cookie
//! scoped to `/console`, and a CSRF token that every request that changes something must
//! carry in `x-csrf-token`. Sessions live in this node's memory: a restart signs everyone
//! out, and a user removed or given a new secret is signed out at their next request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::StatusCode;
use serde::Deserialize;

use crate::{ConsoleError, ConsoleResult, Reply, Request, changes, json};

/// The session cookie's name.
pub const COOKIE: &str = "eddy_console";
/// The header a changing request carries its session's CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// How long a session lasts without use.
const IDLE: Duration = Duration::from_secs(8 * 3600);
/// Most live sessions kept; beyond it the least recently used is dropped (its user signs
/// in again), so sign-ins cannot exhaust memory.
const MAX_SESSIONS: usize = 10_000;
/// A session's bearer token for the catalog and admin API is renewed this long before
/// the tokens' hour runs out.
const TOKEN_RENEW: Duration = Duration::from_secs(45 * 60);

/// The live sessions of this node.
pub struct Sessions {
    tokens: Arc<tables::rest::Tokens>,
    secure: bool,
    live: Mutex<HashMap<String, Session>>,
}

struct Session {
    user: String,
    /// The secret signed in with: a session outlives no change of it.
    secret: String,
    csrf: String,
    token: String,
    token_at: Instant,
    used: Instant,
}

/// The signed-in user of a request.
#[derive(Clone)]
pub struct Signed {
    /// The user (access key).
    pub user: String,
    /// Their S3 secret, which the console signs their S3 requests with.
    pub secret: String,
    /// A bearer token of theirs for the Iceberg catalog and the admin API.
    pub token: String,
    /// The session's CSRF token.
    pub csrf: String,
    /// Whether they are the administrator.
    pub admin: bool,
}

#[derive(Deserialize)]
struct Login {
    access_key: String,
    secret_key: String,
}

/// A new random token: 244 bits from two v4 UUIDs.
fn random_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

impl Sessions {
    /// Sessions of the users `tokens` knows; `secure`: the cookie is sent over TLS only.
    pub fn new(tokens: Arc<tables::rest::Tokens>, secure: bool) -> Self {
        Self {
            tokens,
            secure,
            live: Mutex::new(HashMap::new()),
        }
    }

    fn directory(&self) -> &iam::Directory {
        self.tokens.directory()
    }

    /// `POST /console/api/login` with `{"access_key", "secret_key"}` as JSON (a
    /// cross-site form cannot send that type without the browser asking first).
    pub async fn login(&self, req: Request) -> ConsoleResult<Reply> {
        if !is_json(&req.headers) {
            return Err(ConsoleError::BadRequest(
                "sign in with a JSON body (content-type: application/json)".into(),
            ));
        }
        let source = req.peer.ip().to_string();
        let login: Login = req.json().await?;
        let Some(grant) = self.tokens.grant(&login.access_key, &login.secret_key) else {
            self.directory().audit(
                iam::audit::AuditEvent::now(
                    "console",
                    Some(login.access_key.as_str()).filter(|k| !k.is_empty()),
                    "POST /console/api/login",
                    "/console/api/login",
                    iam::audit::Outcome::Refused,
                )
                .from(Some(source))
                .because("unknown access key or wrong secret"),
            );
            return Err(ConsoleError::Unauthenticated(
                "the access key or the secret is wrong".into(),
            ));
        };
        let id = random_token();
        let csrf = random_token();
        let now = Instant::now();
        {
            let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
            live.retain(|_, s| now.duration_since(s.used) < IDLE);
            if live.len() >= MAX_SESSIONS
                && let Some(oldest) = live
                    .iter()
                    .min_by_key(|(_, s)| s.used)
                    .map(|(k, _)| k.clone())
            {
                live.remove(&oldest);
            }
            live.insert(
                id.clone(),
                Session {
                    user: login.access_key.clone(),
                    secret: login.secret_key,
                    csrf: csrf.clone(),
                    token: grant.token,
                    token_at: now,
                    used: now,
                },
            );
        }
        let mut r = json(
            StatusCode::OK,
            &serde_json::json!({
                "user": login.access_key,
                "csrf": csrf,
                "admin": self.directory().is_admin(&login.access_key),
            }),
        );
        self.set_cookie(&mut r, &id, IDLE.as_secs());
        Ok(r)
    }

    /// `POST /console/api/logout`: ends the session (if any) and clears the cookie.
    pub fn logout(&self, req: &Request) -> Reply {
        if let Some(id) = cookie(&req.headers) {
            let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
            // Only with its CSRF token: a cross-site page must not sign users out.
            if live
                .get(id)
                .is_some_and(|s| csrf_of(&req.headers) == Some(s.csrf.as_str()))
            {
                live.remove(id);
            }
        }
        let mut r = json(StatusCode::OK, &serde_json::json!({}));
        self.set_cookie(&mut r, "", 0);
        r
    }

    /// The signed-in user of a request, or 401; a changing request without the session's
    /// CSRF token is refused (403).
    pub fn signed(&self, req: &Request) -> ConsoleResult<Signed> {
        let id = cookie(&req.headers)
            .ok_or_else(|| ConsoleError::Unauthenticated("sign in first".into()))?;
        let now = Instant::now();
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        let Some(s) = live.get_mut(id) else {
            return Err(ConsoleError::Unauthenticated(
                "the session has ended: sign in again".into(),
            ));
        };
        let current = self.directory().s3_secret(&s.user);
        if now.duration_since(s.used) >= IDLE || current.as_deref() != Some(s.secret.as_str()) {
            live.remove(id);
            return Err(ConsoleError::Unauthenticated(
                "the session has ended: sign in again".into(),
            ));
        }
        if changes(&req.method) && csrf_of(&req.headers) != Some(s.csrf.as_str()) {
            return Err(ConsoleError::Csrf);
        }
        s.used = now;
        if now.duration_since(s.token_at) >= TOKEN_RENEW
            && let Some(g) = self.tokens.grant(&s.user, &s.secret)
        {
            s.token = g.token;
            s.token_at = now;
        }
        Ok(Signed {
            user: s.user.clone(),
            secret: s.secret.clone(),
            token: s.token.clone(),
            csrf: s.csrf.clone(),
            admin: self.directory().is_admin(&s.user),
        })
    }

    fn set_cookie(&self, r: &mut Reply, value: &str, max_age: u64) {
        let secure = if self.secure { "; Secure" } else { "" };
        let cookie = format!(
            "{COOKIE}={value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
        );
        if let Ok(v) = http::HeaderValue::from_str(&cookie) {
            r.headers_mut().insert(http::header::SET_COOKIE, v);
        }
    }
}

/// The session id in a request's cookies.
fn cookie(headers: &http::HeaderMap) -> Option<&str> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
}

fn csrf_of(headers: &http::HeaderMap) -> Option<&str> {
    headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok())
}

fn is_json(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

/// `GET /console/api/session`: who is signed in, their CSRF token (a page reloaded
/// reads it here), and what the pages may offer them.
pub fn describe(
    who: &Signed,
    kafka: &crate::kafka::Kafka,
    peer: std::net::SocketAddr,
) -> serde_json::Value {
    let ctx = kafka.ctx(&who.user, peer);
    serde_json::json!({
        "user": who.user,
        "csrf": who.csrf,
        "admin": who.admin,
        "can": {
            "create_topics": ctx.would_allow_topic(broker::authz::CREATE, "*"),
            "manage_security": who.admin,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let mut h = http::HeaderMap::new();
        h.insert(
            http::header::COOKIE,
            http::HeaderValue::from_static("a=1; eddy_console=abc; b=2"),
        );
        assert_eq!(cookie(&h), Some("abc"));
        h.insert(
            http::header::COOKIE,
            http::HeaderValue::from_static("eddy_console="),
        );
        assert_eq!(cookie(&h), None);
    }
}
