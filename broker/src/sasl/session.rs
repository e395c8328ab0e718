//! One connection's authentication on a SASL listener: before it succeeds only
//! ApiVersions, SaslHandshake and SaslAuthenticate are handled (anything else closes the
//! connection, as Kafka does); a failed exchange is answered and the connection closed;
//! with a session lifetime the client must re-authenticate (KIP-368) before it ends, as
//! the same user, or its next request closes the connection. Time is injected.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::scram::Exchange;
use super::{Mechanism, Sasl, nonce, plain};

/// A connection's authentication state.
#[derive(Debug)]
pub struct Session {
    sasl: Arc<Sasl>,
    /// The mechanism of the exchange in progress (after a handshake).
    mechanism: Option<Mechanism>,
    /// A SCRAM exchange between its two messages.
    exchange: Option<Exchange>,
    /// Who the connection is, once authenticated.
    user: Option<Arc<str>>,
    /// When the authenticated session ends (a session lifetime is configured).
    expires: Option<Instant>,
    /// The user the exchange's first message named (the audit trail's "who" when it
    /// fails at the second).
    claimed: Option<String>,
}

/// What the connection does after an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Keeps reading (a handshake, the middle of an exchange).
    Continue,
    /// Keeps reading: the client has just authenticated (or re-authenticated).
    Authenticated,
    /// Writes the answer, then closes.
    Close,
}

fn text(s: impl Into<String>) -> Option<StrBytes> {
    Some(StrBytes::from_string(s.into()))
}

impl Session {
    /// A connection that has not authenticated.
    pub fn new(sasl: Arc<Sasl>) -> Self {
        Self {
            sasl,
            mechanism: None,
            exchange: None,
            user: None,
            expires: None,
            claimed: None,
        }
    }

    /// The user the current (or last) exchange claims to be, proven or not.
    pub fn claimed(&self) -> Option<&str> {
        self.claimed.as_deref()
    }

    /// The authenticated user.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// The authenticated user, shared (each request of the connection carries it).
    pub fn principal(&self) -> Option<Arc<str>> {
        self.user.clone()
    }

    /// Whether a request of `api` may be handled at `now`.
    pub fn admits(&self, api: ApiKey, now: Instant) -> bool {
        match api {
            ApiKey::ApiVersions | ApiKey::SaslHandshake | ApiKey::SaslAuthenticate => true,
            _ => self.user.is_some() && self.expires.is_none_or(|e| now < e),
        }
    }

    /// Answers a SaslHandshake: the enabled mechanisms, and whether the one asked for is
    /// among them.
    pub fn handshake(&mut self, req: &SaslHandshakeRequest) -> (SaslHandshakeResponse, After) {
        let enabled: Vec<StrBytes> = self
            .sasl
            .mechanisms()
            .iter()
            .map(|m| StrBytes::from_static_str(m.name()))
            .collect();
        let response = SaslHandshakeResponse::default().with_mechanisms(enabled);
        if self.exchange.is_some() {
            let e = ResponseError::IllegalSaslState.code();
            return (response.with_error_code(e), After::Close);
        }
        match Mechanism::from_name(&req.mechanism).filter(|m| self.sasl.mechanisms().contains(m)) {
            Some(m) => {
                self.mechanism = Some(m);
                (response, After::Continue)
            }
            None => {
                let e = ResponseError::UnsupportedSaslMechanism.code();
                (response.with_error_code(e), After::Close)
            }
        }
    }

    /// Answers a SaslAuthenticate at `now`.
    pub fn authenticate(
        &mut self,
        req: &SaslAuthenticateRequest,
        now: Instant,
    ) -> (SaslAuthenticateResponse, After) {
        if let Some(user) = super::claimed_user(&req.auth_bytes) {
            self.claimed = Some(user);
        }
        let Some(mechanism) = self.mechanism else {
            let r = SaslAuthenticateResponse::default()
                .with_error_code(ResponseError::IllegalSaslState.code())
                .with_error_message(text("SaslAuthenticate before SaslHandshake"));
            return (r, After::Close);
        };
        let failed = |why: &str| {
            tracing::info!(
                mechanism = mechanism.name(),
                reason = why,
                "SASL authentication failed"
            );
            let r = SaslAuthenticateResponse::default()
                .with_error_code(ResponseError::SaslAuthenticationFailed.code())
                .with_error_message(text(format!(
                    "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
                    mechanism.name()
                )));
            (r, After::Close)
        };
        let (user, reply) = match (mechanism, self.exchange.take()) {
            (Mechanism::Plain, _) => match plain(&req.auth_bytes) {
                Some((user, password)) if self.sasl.check_password(&user, &password) => {
                    (user, Bytes::new())
                }
                Some(_) => return failed("wrong user or password"),
                None => return failed("malformed PLAIN message"),
            },
            (m, None) => {
                let hash = m.hash().unwrap_or(super::scram::ScramHash::Sha512);
                let sasl = self.sasl.clone();
                match Exchange::start(&req.auth_bytes, |u| sasl.credential(u, hash), &nonce()) {
                    Ok((exchange, server_first)) => {
                        self.exchange = Some(exchange);
                        let r = SaslAuthenticateResponse::default()
                            .with_error_message(None)
                            .with_auth_bytes(Bytes::from(server_first));
                        return (r, After::Continue);
                    }
                    Err(e) => return failed(&e.to_string()),
                }
            }
            (_, Some(exchange)) => match exchange.finish(&req.auth_bytes) {
                Ok((user, server_final)) => (user, Bytes::from(server_final)),
                Err(e) => return failed(&e.to_string()),
            },
        };
        self.mechanism = None;
        if let Some(previous) = &self.user
            && **previous != *user
        {
            return failed("re-authentication as another user");
        }
        if !self.sasl.allowed(&user) {
            return failed("the user is not allowed on this broker view");
        }
        self.user = Some(user.into());
        self.expires = self.sasl.session_lifetime().map(|l| now + l);
        let lifetime_ms = self
            .sasl
            .session_lifetime()
            .map_or(0, |l| l.as_millis() as i64);
        let r = SaslAuthenticateResponse::default()
            .with_error_message(None)
            .with_auth_bytes(reply)
            .with_session_lifetime_ms(lifetime_ms);
        (r, After::Authenticated)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn sasl(lifetime: Option<Duration>) -> Arc<Sasl> {
        Arc::new(Sasl::new(
            Mechanism::ALL.to_vec(),
            lifetime,
            crate::sasl::directory(&[("alice", "pw"), ("bob", "pw2")]),
        ))
    }

    fn handshake(s: &mut Session, m: &str) -> (i16, After) {
        let (r, after) = s.handshake(
            &SaslHandshakeRequest::default().with_mechanism(StrBytes::from_string(m.into())),
        );
        (r.error_code, after)
    }

    fn plain(s: &mut Session, msg: &str, now: Instant) -> (SaslAuthenticateResponse, After) {
        s.authenticate(
            &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(msg.to_owned())),
            now,
        )
    }

    #[test]
    fn nothing_but_the_handshake_before_authentication() {
        let now = Instant::now();
        let mut s = Session::new(sasl(None));
        assert!(s.admits(ApiKey::ApiVersions, now));
        assert!(!s.admits(ApiKey::Metadata, now));
        assert_eq!(handshake(&mut s, "GSSAPI"), (33, After::Close));
        assert_eq!(handshake(&mut s, "PLAIN"), (0, After::Continue));
        let (r, after) = plain(&mut s, "\0alice\0nope", now);
        assert_eq!((r.error_code, after), (58, After::Close));
        assert!(r.error_message.unwrap().contains("PLAIN"));
        assert!(!s.admits(ApiKey::Produce, now));
        let mut s = Session::new(sasl(None));
        let (r, _) = plain(&mut s, "\0alice\0pw", now);
        assert_eq!(r.error_code, 34, "no handshake first");
        handshake(&mut s, "PLAIN");
        let (r, after) = plain(&mut s, "\0alice\0pw", now);
        assert_eq!((r.error_code, after), (0, After::Authenticated));
        assert!(s.admits(ApiKey::Produce, now) && s.user() == Some("alice"));
    }

    #[test]
    fn a_session_expires_unless_renewed_by_the_same_user() {
        let t0 = Instant::now();
        let life = Duration::from_secs(10);
        let mut s = Session::new(sasl(Some(life)));
        handshake(&mut s, "PLAIN");
        let (r, _) = plain(&mut s, "\0alice\0pw", t0);
        assert_eq!(r.session_lifetime_ms, 10_000);
        assert!(s.admits(ApiKey::Fetch, t0 + Duration::from_secs(9)));
        assert!(!s.admits(ApiKey::Fetch, t0 + life));
        // Re-authentication renews it.
        handshake(&mut s, "PLAIN");
        let (r, _) = plain(&mut s, "\0alice\0pw", t0 + Duration::from_secs(9));
        assert_eq!(r.error_code, 0);
        assert!(s.admits(ApiKey::Fetch, t0 + Duration::from_secs(18)));
        // As somebody else: refused, and the connection closes.
        handshake(&mut s, "PLAIN");
        let (r, after) = plain(&mut s, "\0bob\0pw2", t0 + Duration::from_secs(10));
        assert_eq!((r.error_code, after), (58, After::Close));
    }

    #[test]
    fn a_disabled_mechanism_is_unsupported() {
        let s = Arc::new(Sasl::new(
            vec![Mechanism::ScramSha512],
            None,
            crate::sasl::directory(&[]),
        ));
        let mut session = Session::new(s);
        let (r, after) = session.handshake(
            &SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN")),
        );
        assert_eq!((r.error_code, after), (33, After::Close));
        assert_eq!(
            r.mechanisms.iter().map(|m| m.as_str()).collect::<Vec<_>>(),
            vec!["SCRAM-SHA-512"]
        );
    }
}
