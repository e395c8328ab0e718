//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka uses them: the server's
//! side of the two-message exchange, over the stored credentials of `iam::scram` (salt,
//! iterations, stored key, server key: never the password). What is here is the message
//! grammar and the checks.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use subtle::ConstantTimeEq;

pub use iam::scram::{Credential, MIN_ITERATIONS, ScramHash};

/// Why an exchange failed (the client is told only that authentication failed).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScramError {
    /// A message does not follow the grammar.
    #[error("malformed SCRAM message: {0}")]
    Malformed(&'static str),
    /// Channel binding or an extension Eddy does not support (delegation tokens).
    #[error("unsupported SCRAM feature: {0}")]
    Unsupported(&'static str),
    /// No such user.
    #[error("unknown user")]
    UnknownUser,
    /// The proof does not match, or the nonce was changed.
    #[error("invalid credentials")]
    Invalid,
}

/// The first message's parts.
struct ClientFirst {
    gs2_header: String,
    bare: String,
    user: String,
    nonce: String,
}

fn unescape_name(s: &str) -> Result<String, ScramError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        match rest.get(i..i + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err(ScramError::Malformed("bad escape in the user name")),
        }
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

fn parse_client_first(msg: &str) -> Result<ClientFirst, ScramError> {
    // gs2-header: "n," or "y," (no channel binding), then an optional "a=authzid", ",".
    let (cb, rest) = msg
        .split_once(',')
        .ok_or(ScramError::Malformed("no GS2 header"))?;
    match cb {
        "n" | "y" => {}
        _ if cb.starts_with("p=") => return Err(ScramError::Unsupported("channel binding")),
        _ => return Err(ScramError::Malformed("bad channel binding flag")),
    }
    let (authzid, bare) = rest
        .split_once(',')
        .ok_or(ScramError::Malformed("no GS2 header"))?;
    let gs2_header = format!("{cb},{authzid},");
    let mut user = None;
    let mut nonce = None;
    for attr in bare.split(',') {
        if let Some(v) = attr.strip_prefix("n=") {
            user = Some(unescape_name(v)?);
        } else if let Some(v) = attr.strip_prefix("r=") {
            nonce = Some(v.to_owned());
        } else if attr.starts_with("m=") {
            return Err(ScramError::Unsupported("mandatory extension"));
        } else if attr.starts_with("tokenauth=") {
            return Err(ScramError::Unsupported("delegation tokens"));
        }
        // Other extensions (Kafka passes some) are ignored.
    }
    let user = user.ok_or(ScramError::Malformed("no user name"))?;
    let nonce = nonce
        .filter(|n| !n.is_empty() && n.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b','))
        .ok_or(ScramError::Malformed("no nonce"))?;
    if let Some(a) = authzid.strip_prefix("a=")
        && unescape_name(a)? != user
    {
        return Err(ScramError::Unsupported(
            "an authorization id other than the user",
        ));
    }
    Ok(ClientFirst {
        gs2_header,
        bare: bare.to_owned(),
        user,
        nonce,
    })
}

/// The server's side of one exchange, after the client's first message.
#[derive(Debug)]
pub struct Exchange {
    user: String,
    credential: Credential,
    nonce: String,
    gs2_header: String,
    client_first_bare: String,
    server_first: String,
}

impl Exchange {
    /// Reads the client's first message and answers it: `lookup` gives a user's
    /// credential, `server_nonce` is fresh randomness (printable, no commas).
    pub fn start(
        client_first: &[u8],
        lookup: impl FnOnce(&str) -> Option<Credential>,
        server_nonce: &str,
    ) -> Result<(Self, Vec<u8>), ScramError> {
        let msg =
            std::str::from_utf8(client_first).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        let first = parse_client_first(msg)?;
        let credential = lookup(&first.user).ok_or(ScramError::UnknownUser)?;
        let nonce = format!("{}{server_nonce}", first.nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            B64.encode(&credential.salt),
            credential.iterations
        );
        let reply = server_first.clone().into_bytes();
        Ok((
            Self {
                user: first.user,
                credential,
                nonce,
                gs2_header: first.gs2_header,
                client_first_bare: first.bare,
                server_first,
            },
            reply,
        ))
    }

    /// Checks the client's final message; the authenticated user and the server's final
    /// message (its signature, which the client checks).
    pub fn finish(self, client_final: &[u8]) -> Result<(String, Vec<u8>), ScramError> {
        let msg =
            std::str::from_utf8(client_final).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        let (without_proof, proof) = msg
            .rsplit_once(",p=")
            .ok_or(ScramError::Malformed("no proof"))?;
        let mut binding = None;
        let mut nonce = None;
        for attr in without_proof.split(',') {
            if let Some(v) = attr.strip_prefix("c=") {
                binding = Some(v);
            } else if let Some(v) = attr.strip_prefix("r=") {
                nonce = Some(v);
            }
        }
        let binding = binding.ok_or(ScramError::Malformed("no channel binding"))?;
        if B64.decode(binding).ok().as_deref() != Some(self.gs2_header.as_bytes()) {
            return Err(ScramError::Invalid);
        }
        if nonce != Some(self.nonce.as_str()) {
            return Err(ScramError::Invalid);
        }
        let proof = B64
            .decode(proof)
            .map_err(|_| ScramError::Malformed("proof not base64"))?;
        let hash = self.credential.hash;
        let auth_message = format!(
            "{},{},{}",
            self.client_first_bare, self.server_first, without_proof
        );
        let signature = hash.hmac(&self.credential.stored_key, auth_message.as_bytes());
        if proof.len() != signature.len() {
            return Err(ScramError::Invalid);
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
        if !bool::from(hash.digest(&client_key).ct_eq(&self.credential.stored_key)) {
            return Err(ScramError::Invalid);
        }
        let server_signature = hash.hmac(&self.credential.server_key, auth_message.as_bytes());
        Ok((
            self.user,
            format!("v={}", B64.encode(server_signature)).into_bytes(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client's side, written from RFC 5802 for the test.
    fn client_final(
        hash: ScramHash,
        password: &str,
        client_first_bare: &str,
        server_first: &str,
    ) -> (String, Vec<u8>) {
        let attrs: std::collections::HashMap<&str, &str> = server_first
            .split(',')
            .filter_map(|a| a.split_once('='))
            .collect();
        let salt = B64.decode(attrs["s"]).unwrap();
        let iterations: u32 = attrs["i"].parse().unwrap();
        let salted = hash.salted_password(password.as_bytes(), &salt, iterations);
        let client_key = hash.hmac(&salted, b"Client Key");
        let stored = hash.digest(&client_key);
        let without_proof = format!("c=biws,r={}", attrs["r"]);
        let auth = format!("{client_first_bare},{server_first},{without_proof}");
        let sig = hash.hmac(&stored, auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
        let server_key = hash.hmac(&salted, b"Server Key");
        let expected_server = hash.hmac(&server_key, auth.as_bytes());
        (
            format!("{without_proof},p={}", B64.encode(proof)),
            format!("v={}", B64.encode(expected_server)).into_bytes(),
        )
    }

    #[test]
    fn rfc_7677_example_credential() {
        // RFC 7677 section 3: user "user", password "pencil", salt and 4096 iterations.
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let c = Credential::new(ScramHash::Sha256, "pencil", salt, 4096);
        let lookup = |u: &str| (u == "user").then(|| c.clone());
        let first = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
        let (ex, server_first) =
            Exchange::start(first, lookup, "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0").unwrap();
        assert_eq!(
            String::from_utf8(server_first).unwrap(),
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        );
        let (user, server_final) = ex
            .finish(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
            .unwrap();
        assert_eq!(user, "user");
        assert_eq!(
            String::from_utf8(server_final).unwrap(),
            "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
    }

    #[test]
    fn both_hashes_round_trip_and_a_wrong_password_fails() {
        for hash in [ScramHash::Sha256, ScramHash::Sha512] {
            let c = Credential::new(hash, "s3cret", b"salty".to_vec(), MIN_ITERATIONS);
            assert!(c.verifies("s3cret") && !c.verifies("s3cre"));
            for (password, ok) in [("s3cret", true), ("wrong", false)] {
                let bare = "n=al=2Cice,r=abc";
                let (ex, sf) = Exchange::start(
                    format!("n,,{bare}").as_bytes(),
                    |u| (u == "al,ice").then(|| c.clone()),
                    "xyz",
                )
                .unwrap();
                let sf = String::from_utf8(sf).unwrap();
                let (cf, want) = client_final(hash, password, bare, &sf);
                match ex.finish(cf.as_bytes()) {
                    Ok((user, server_final)) => {
                        assert!(ok);
                        assert_eq!((user.as_str(), server_final), ("al,ice", want));
                    }
                    Err(e) => assert!(!ok && e == ScramError::Invalid, "{e}"),
                }
            }
        }
    }

    #[test]
    fn bad_first_messages_are_refused() {
        let none = |_: &str| None;
        let some = |_: &str| {
            Some(Credential::new(
                ScramHash::Sha256,
                "p",
                b"s".to_vec(),
                MIN_ITERATIONS,
            ))
        };
        assert_eq!(
            Exchange::start(b"n,,n=u,r=x", none, "y").unwrap_err(),
            ScramError::UnknownUser
        );
        for (msg, err) in [
            (&b"p=tls-unique,,n=u,r=x"[..], "channel binding"),
            (b"n,,n=u,r=x,tokenauth=true", "delegation tokens"),
            (b"n,,n=u", "no nonce"),
            (b"n,,r=x", "no user name"),
            (b"garbage", "no GS2 header"),
            (b"n,,n=u=ZZ,r=x", "bad escape"),
            (b"n,a=other,n=u,r=x", "authorization id"),
        ] {
            let e = Exchange::start(msg, some, "y").unwrap_err();
            assert!(e.to_string().contains(err), "{e} for {msg:?}");
        }
    }

    #[test]
    fn the_fuzz_corpus_and_its_mutations_never_panic() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/sasl_scram");
        let c = Credential::new(
            ScramHash::Sha256,
            "pencil",
            b"salt".to_vec(),
            MIN_ITERATIONS,
        );
        let run = |data: &[u8]| {
            let (first, last) = match data.iter().position(|b| *b == 0) {
                Some(i) => (&data[..i], &data[i + 1..]),
                None => (data, &[][..]),
            };
            if let Ok((ex, _)) = Exchange::start(first, |_| Some(c.clone()), "srv") {
                let _ = ex.finish(last);
            }
        };
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let data = std::fs::read(entry.unwrap().path()).unwrap();
            run(&data);
            for i in 0..data.len() {
                for b in [0u8, b',', b'=', 0xff, b'p'] {
                    let mut m = data.clone();
                    m[i] = b;
                    run(&m);
                    run(&m[..i]);
                }
            }
            seen += 1;
        }
        assert!(seen >= 4, "the corpus has {seen} files");
    }

    #[test]
    fn a_changed_nonce_or_binding_fails() {
        let c = Credential::new(ScramHash::Sha512, "p", b"s".to_vec(), MIN_ITERATIONS);
        let start = || Exchange::start(b"n,,n=u,r=abc", |_| Some(c.clone()), "xyz").unwrap();
        let (ex, sf) = start();
        let sf = String::from_utf8(sf).unwrap();
        let (cf, _) = client_final(ScramHash::Sha512, "p", "n=u,r=abc", &sf);
        assert!(
            ex.finish(cf.replace("r=abcxyz", "r=abcxy").as_bytes())
                .is_err()
        );
        let (ex, _) = start();
        assert!(
            ex.finish(cf.replace("c=biws", "c=eSws").as_bytes())
                .is_err()
        );
    }
}
