//! TLS for the listeners that are given a certificate (rustls, ring): the certificate
//! chain and key are PEM files read at start and again on [`Tls::reload`] (SIGHUP), which
//! swaps the configuration for new handshakes and leaves open connections alone. With a
//! client CA the listener is mutual TLS: TLS 1.3 only, a client certificate required and
//! verified against the CA (a missing, foreign or expired one fails the handshake).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use prometheus_client::metrics::counter::Counter;

use crate::{ListenerLabels, ListenerMetrics};

/// Why a TLS configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file could not be read or parsed.
    #[error("{path}: {reason}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// rustls refused the certificate, key or CA.
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    /// The client CA could not make a verifier.
    #[error("client CA: {0}")]
    ClientCa(String),
}

/// The PEM files of a TLS listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// Certificate chain, leaf first.
    pub cert: PathBuf,
    /// Private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// CA certificates that client certificates must chain to (mutual TLS); `None` for
    /// server-only TLS.
    pub client_ca: Option<PathBuf>,
}

/// A listener's TLS configuration, reloadable.
pub struct Tls {
    files: TlsFiles,
    alpn: Vec<Vec<u8>>,
    current: RwLock<Arc<ServerConfig>>,
    handshakes: Counter,
    failures: Counter,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("files", &self.files).finish()
    }
}

fn pem_error(path: &Path, e: impl std::fmt::Display) -> TlsError {
    TlsError::Pem {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem_error(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(path, e))?;
    if certs.is_empty() {
        return Err(pem_error(path, "no certificate in the file"));
    }
    Ok(certs)
}

fn build(files: &TlsFiles, alpn: &[Vec<u8>]) -> Result<ServerConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certificates(&files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| pem_error(&files.key, e))?;
    let mut config = match &files.client_ca {
        None => ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)?,
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for c in certificates(ca)? {
                roots.add(c)?;
            }
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| TlsError::ClientCa(e.to_string()))?;
            ServerConfig::builder_with_provider(provider)
                .with_protocol_versions(&[&rustls::version::TLS13])?
                .with_client_cert_verifier(verifier)
                .with_single_cert(chain, key)?
        }
    };
    config.alpn_protocols = alpn.to_vec();
    Ok(config)
}

impl Tls {
    /// Loads `files` for the listener `name`, whose handshakes `metrics` counts; `alpn`
    /// lists the protocols offered (`http/1.1` for HTTP listeners, none for Kafka).
    pub fn load(
        files: TlsFiles,
        alpn: &[&[u8]],
        name: &str,
        metrics: &ListenerMetrics,
    ) -> Result<Arc<Self>, TlsError> {
        let alpn: Vec<Vec<u8>> = alpn.iter().map(|p| p.to_vec()).collect();
        let config = build(&files, &alpn)?;
        let labels = ListenerLabels {
            listener: name.to_owned(),
        };
        Ok(Arc::new(Self {
            files,
            alpn,
            current: RwLock::new(Arc::new(config)),
            handshakes: metrics.tls_handshakes.get_or_create(&labels).clone(),
            failures: metrics.tls_failures.get_or_create(&labels).clone(),
        }))
    }

    /// Whether clients must present certificates.
    pub fn mutual(&self) -> bool {
        self.files.client_ca.is_some()
    }

    /// Reads the files again; on success new handshakes use them, on failure the old
    /// configuration stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let config = Arc::new(build(&self.files, &self.alpn)?);
        match self.current.write() {
            Ok(mut c) => *c = config,
            Err(poisoned) => *poisoned.into_inner() = config,
        }
        Ok(())
    }

    fn config(&self) -> Arc<ServerConfig> {
        match self.current.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Runs the server side of a handshake on `sock`, giving up after `timeout` (a
    /// client that connects and says nothing holds no more than an idle one).
    pub async fn accept(
        &self,
        sock: TcpStream,
        timeout: Duration,
    ) -> io::Result<TlsStream<TcpStream>> {
        let acceptor = TlsAcceptor::from(self.config());
        let r = match tokio::time::timeout(timeout, acceptor.accept(sock)).await {
            Ok(r) => r,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "TLS handshake timed out",
            )),
        };
        match &r {
            Ok(_) => self.handshakes.inc(),
            Err(_) => self.failures.inc(),
        };
        r
    }
}
