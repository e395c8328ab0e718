//! The listen address forms of the command line and the config file: Kafka's listener
//! form for the Kafka port (`SSL://127.0.0.1:9093`; a bare `host:port` is plaintext; a
//! listener of a name of its own, `INTERNAL://:29092`, takes its protocol from
//! `--kafka-listener-protocols`), the advertised form (`INTERNAL://eddy:29092`), and
//! a URL scheme for the S3 and HTTP ports (`https://0.0.0.0:9000`; bare or `http://` is
//! plaintext). Every form's address is `ip:port`, or `:port` for every interface
//! (`0.0.0.0:port`), parsed by [`address`] for every listen flag and config-file key.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

use serde::Deserialize;

/// A Kafka listener's security protocol (Kafka's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SecurityProtocol {
    /// No TLS, no authentication.
    Plaintext,
    /// TLS; with `--tls-client-ca`, mutual TLS.
    Ssl,
    /// SASL without TLS.
    SaslPlaintext,
    /// SASL over TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's name of the protocol.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plaintext => "PLAINTEXT",
            Self::Ssl => "SSL",
            Self::SaslPlaintext => "SASL_PLAINTEXT",
            Self::SaslSsl => "SASL_SSL",
        }
    }

    /// Whether connections are TLS.
    pub fn tls(self) -> bool {
        matches!(self, Self::Ssl | Self::SaslSsl)
    }

    /// Whether clients authenticate with SASL.
    pub fn sasl(self) -> bool {
        matches!(self, Self::SaslPlaintext | Self::SaslSsl)
    }
}

/// A Kafka listener.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct KafkaListener {
    /// Its name, Kafka's listener name: its protocol's, unless it names itself
    /// (`INTERNAL://...`, whose protocol `--kafka-listener-protocols` gives).
    pub name: String,
    /// Its security protocol.
    pub protocol: SecurityProtocol,
    /// Its address.
    pub addr: SocketAddr,
}

/// A listen address, `s`, of the listener `whole`: `ip:port` (`[ipv6]:port`), or `:port`
/// for every IPv4 interface, the form README and most servers' documentation use.
fn address(s: &str, whole: &str) -> Result<SocketAddr, String> {
    let every_interface = s.strip_prefix(':').map(|port| format!("0.0.0.0:{port}"));
    every_interface
        .as_deref()
        .unwrap_or(s)
        .parse()
        .map_err(|_| format!("{whole:?}: {s:?} is not an ip:port or :port address"))
}

impl SecurityProtocol {
    /// The protocol of Kafka's name (any case).
    pub fn of_name(name: &str) -> Option<Self> {
        match name.to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Some(Self::Plaintext),
            "SSL" => Some(Self::Ssl),
            "SASL_PLAINTEXT" => Some(Self::SaslPlaintext),
            "SASL_SSL" => Some(Self::SaslSsl),
            _ => None,
        }
    }
}

/// A listener name as Kafka takes it: letters, digits and `_`, upper-cased.
fn listener_name(name: &str, whole: &str) -> Result<String, String> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(format!(
            "{whole:?}: {name:?} is not a listener name (letters, digits and _)"
        ));
    }
    Ok(name.to_ascii_uppercase())
}

impl FromStr for KafkaListener {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let Some((scheme, addr)) = s.split_once("://") else {
            return Ok(Self {
                name: SecurityProtocol::Plaintext.name().to_owned(),
                protocol: SecurityProtocol::Plaintext,
                addr: address(s, s)?,
            });
        };
        let name = listener_name(scheme, s)?;
        // A name of its own is plaintext until `--kafka-listener-protocols` says
        // otherwise, and refused at start if it never does (a typo for SSL must not
        // serve plaintext).
        let protocol = SecurityProtocol::of_name(&name).unwrap_or(SecurityProtocol::Plaintext);
        Ok(Self {
            name,
            protocol,
            addr: address(addr, s)?,
        })
    }
}

impl KafkaListener {
    /// Whether its name is a protocol's (so it needs no protocol map entry).
    pub fn named_by_protocol(&self) -> bool {
        SecurityProtocol::of_name(&self.name).is_some()
    }
}

impl TryFrom<String> for KafkaListener {
    type Error = String;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl fmt::Display for KafkaListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.name, self.addr)
    }
}

/// An advertised Kafka address (Kafka's `advertised.listeners` entry): what clients that
/// reached a listener of `name` are told to connect to, `NAME://host:port`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Advertised {
    /// The listener name.
    pub name: String,
    /// Host name or address.
    pub host: String,
    /// Port.
    pub port: u16,
}

impl FromStr for Advertised {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (scheme, rest) = s
            .split_once("://")
            .ok_or_else(|| format!("{s:?}: an advertised listener is NAME://host:port"))?;
        let name = listener_name(scheme, s)?;
        let (host, port) = rest
            .trim_end_matches('/')
            .rsplit_once(':')
            .ok_or_else(|| format!("{s:?}: an advertised listener is NAME://host:port"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port: u16 = port
            .parse()
            .map_err(|_| format!("{s:?}: {port:?} is not a port"))?;
        if host.is_empty() || port == 0 {
            return Err(format!(
                "{s:?}: an advertised listener needs a host and a port"
            ));
        }
        Ok(Self {
            name,
            host: host.to_owned(),
            port,
        })
    }
}

impl TryFrom<String> for Advertised {
    type Error = String;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// An S3 or HTTP listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct HttpListen {
    /// Its address.
    pub addr: SocketAddr,
    /// Whether it serves HTTPS.
    pub tls: bool,
}

impl HttpListen {
    /// A plaintext listener.
    pub fn plain(addr: SocketAddr) -> Self {
        Self { addr, tls: false }
    }

    /// `http` or `https`.
    pub fn scheme(&self) -> &'static str {
        if self.tls { "https" } else { "http" }
    }
}

impl FromStr for HttpListen {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (tls, addr) = match s.split_once("://") {
            None => (false, s),
            Some((scheme, addr)) => match scheme.to_ascii_lowercase().as_str() {
                "http" => (false, addr),
                "https" => (true, addr),
                other => return Err(format!("{s:?}: unknown scheme {other:?} (http, https)")),
            },
        };
        Ok(Self {
            addr: address(addr.trim_end_matches('/'), s)?,
            tls,
        })
    }
}

impl TryFrom<String> for HttpListen {
    type Error = String;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl fmt::Display for HttpListen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme(), self.addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_listener_forms() {
        let l: KafkaListener = "127.0.0.1:9092".parse().unwrap();
        assert_eq!(l.protocol, SecurityProtocol::Plaintext);
        let l: KafkaListener = "SSL://127.0.0.1:9093".parse().unwrap();
        assert_eq!((l.protocol, l.addr.port()), (SecurityProtocol::Ssl, 9093));
        let l: KafkaListener = "sasl_ssl://127.0.0.1:9094".parse().unwrap();
        assert_eq!(l.protocol, SecurityProtocol::SaslSsl);
        assert_eq!(l.to_string(), "SASL_SSL://127.0.0.1:9094");
        // A name of its own: plaintext until a protocol map names its protocol.
        let l: KafkaListener = "internal://127.0.0.1:1".parse().unwrap();
        assert_eq!(
            (l.name.as_str(), l.named_by_protocol()),
            ("INTERNAL", false)
        );
        assert!("IN-TERNAL://127.0.0.1:1".parse::<KafkaListener>().is_err());
        let a: Advertised = "EXTERNAL://localhost:9092".parse().unwrap();
        assert_eq!(
            (a.name.as_str(), a.host.as_str(), a.port),
            ("EXTERNAL", "localhost", 9092)
        );
        assert!("localhost:9092".parse::<Advertised>().is_err());
        assert!("EXTERNAL://localhost".parse::<Advertised>().is_err());
        assert!("SSL://localhost".parse::<KafkaListener>().is_err());
        let l: KafkaListener = "SASL_SSL://:9094".parse().unwrap();
        assert_eq!(l.to_string(), "SASL_SSL://0.0.0.0:9094");
        assert_eq!(
            ":9092".parse::<KafkaListener>().unwrap().to_string(),
            "PLAINTEXT://0.0.0.0:9092"
        );
    }

    #[test]
    fn colon_port_is_every_interface() {
        for (given, shown) in [
            (":9000", "http://0.0.0.0:9000"),
            ("http://:9000", "http://0.0.0.0:9000"),
            ("https://:9443/", "https://0.0.0.0:9443"),
            ("[::]:9000", "http://[::]:9000"),
        ] {
            let l: HttpListen = given.parse().unwrap();
            assert_eq!(l.to_string(), shown, "{given}");
        }
        for bad in [":", ":http", "::9000", ":99999", "9000"] {
            let err = bad.parse::<HttpListen>().unwrap_err();
            assert!(
                err.contains("is not an ip:port or :port address"),
                "{bad}: {err}"
            );
            assert!(bad.parse::<KafkaListener>().is_err(), "{bad}");
        }
    }

    #[test]
    fn http_listen_forms() {
        let l: HttpListen = "0.0.0.0:9000".parse().unwrap();
        assert!(!l.tls);
        let l: HttpListen = "https://127.0.0.1:9443/".parse().unwrap();
        assert!(l.tls && l.addr.port() == 9443);
        assert_eq!(l.to_string(), "https://127.0.0.1:9443");
        assert!("ftp://127.0.0.1:1".parse::<HttpListen>().is_err());
    }
}
