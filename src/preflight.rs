//! Start-up checks of `eddy serve` that need more than the configuration's own parsing
//! (`crate::config`): every file a flag names is there and readable, the SSE-S3 master
//! key (when it exists) is one, the catalog URL parses, the S3 domains are host names and
//! the Kafka listeners make a cluster (the ports are taken next, also before the catalog:
//! `crate::serve`). They run before the catalog opens, because opening it formats fresh drives
//! and creates a PostgreSQL catalog's tables: a start that fails on a flag must leave the
//! data dir as it found it. The TLS files are parsed next, by loading the listeners' TLS
//! (`crate::serve`), also before the catalog.

use std::path::{Path, PathBuf};

use crate::config::ServeConfig;

/// Why `eddy serve` refuses to start. The messages name the flag; the cause follows in
/// the error's source chain (printed by `main`).
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    /// A file the configuration names cannot be read.
    #[error("{what} {}", path.display())]
    Unreadable {
        /// Which file: its flag (its config-file key is the same name in snake case),
        /// or what it is when it may come from a default.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why it cannot be read.
        #[source]
        source: std::io::Error,
    },
    /// The SSE-S3 master key file exists but does not hold a key.
    #[error("the SSE-S3 master key (--sse-master-key-file)")]
    MasterKey(#[source] s3gw::sse::MasterKeyError),
    /// The catalog URL does not parse.
    #[error("--catalog is not a PostgreSQL URL")]
    CatalogUrl(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The Kafka listeners do not make a cluster the broker can number.
    #[error("--kafka-listen: {0}")]
    KafkaListeners(String),
    /// An `--s3-domain` that is not a host name.
    #[error("--s3-domain: {0}")]
    S3Domain(String),
    /// Broker views and a PostgreSQL catalog together.
    #[error("broker views ([[views]]) are not supported with --catalog postgres:// yet")]
    ViewsWithPostgres,
}

/// Runs every check; the first failure is the error.
pub fn check(config: &ServeConfig) -> Result<(), PreflightError> {
    if let Some(url) = &config.catalog_url {
        if !config.views.is_empty() {
            return Err(PreflightError::ViewsWithPostgres);
        }
        catalog::pg::check_url(url).map_err(|e| PreflightError::CatalogUrl(e.into()))?;
    }
    s3gw::check_domains(&config.s3_domains).map_err(PreflightError::S3Domain)?;
    crate::serve::listener_classes(&config.kafka_listen)
        .map_err(|e| PreflightError::KafkaListeners(format!("{e:#}")))?;
    for view in &config.views {
        crate::serve::listener_classes(&view.kafka_listen)
            .map_err(|e| PreflightError::KafkaListeners(format!("view {}: {e:#}", view.name)))?;
    }
    if let Some(tls) = &config.tls {
        readable("--tls-cert", &tls.cert)?;
        readable("--tls-key", &tls.key)?;
        if let Some(ca) = &tls.client_ca {
            readable("--tls-client-ca", ca)?;
        }
    }
    master_key(&config.sse_master_key_file)
}

/// Reads `path` whole (certificates and keys are small): it exists, is a file and this
/// process may read it.
fn readable(what: &'static str, path: &Path) -> Result<(), PreflightError> {
    std::fs::read(path)
        .map(drop)
        .map_err(|source| PreflightError::Unreadable {
            what,
            path: path.to_owned(),
            source,
        })
}

/// Loads the master key file when it exists. A missing one is made on the first start,
/// after the catalog opened (as before these checks), so nodes of a cluster started
/// together do not all make it at the same moment.
fn master_key(path: &Path) -> Result<(), PreflightError> {
    let exists = path
        .try_exists()
        .map_err(|source| PreflightError::Unreadable {
            // By default it is in the data dir: the flag may not have been given.
            what: "the SSE-S3 master key file",
            path: path.to_owned(),
            source,
        })?;
    if exists {
        s3gw::sse::MasterKey::load_or_create(path).map_err(PreflightError::MasterKey)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ServeArgs, StorageArgs};

    fn config(dir: &Path, extra: impl FnOnce(&mut ServeArgs)) -> ServeConfig {
        let mut args = ServeArgs {
            storage: StorageArgs {
                data_dir: Some(dir.join("data")),
                ..StorageArgs::default()
            },
            ..ServeArgs::default()
        };
        extra(&mut args);
        args.resolve().unwrap()
    }

    #[test]
    fn a_missing_tls_file_is_named_with_its_flag() {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("cert.pem");
        std::fs::write(&cert, "a certificate").unwrap();
        let key = dir.path().join("missing.key");
        let c = config(dir.path(), |a| {
            a.s3_listen = Some("https://127.0.0.1:9000".parse().unwrap());
            a.tls_cert = Some(cert.clone());
            a.tls_key = Some(key.clone());
        });
        let err = check(&c).unwrap_err();
        assert_eq!(err.to_string(), format!("--tls-key {}", key.display()));
        let cause = std::error::Error::source(&err).unwrap().to_string();
        assert!(cause.contains("No such file or directory"), "{cause}");
    }

    #[test]
    fn a_master_key_file_that_holds_no_key_is_refused_and_a_missing_one_is_not_made() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("sse.key");
        let c = config(dir.path(), |a| a.sse_master_key_file = Some(key.clone()));
        check(&c).unwrap();
        assert!(!key.exists(), "the check made the key file");
        std::fs::write(&key, "not hex").unwrap();
        assert!(matches!(check(&c), Err(PreflightError::MasterKey(_))));
    }

    #[test]
    fn a_catalog_url_that_does_not_parse_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path(), |a| {
            a.catalog = Some("postgres://u@h:notaport/db".into())
        });
        assert!(matches!(check(&c), Err(PreflightError::CatalogUrl(_))));
        let c = config(dir.path(), |a| {
            a.catalog = Some("postgres://u@127.0.0.1:5432/db".into())
        });
        check(&c).unwrap();
    }
}
