//! TLS for the transport layer's listeners: the settings a Mosquitto user knows (`cafile`,
//! `certfile`, `keyfile`, `require_certificate`, `use_identity_as_username`), the server
//! configuration loaded from them, and its reload (SIGHUP): an acceptor swaps in the new
//! configuration for connections accepted after it, and live ones keep what they
//! negotiated. [`TlsConnector`] is the client side. The crypto provider is graviola, pure Rust and assembly, so the node builds
//! without a C toolchain (docs/SECURITY.md says why not the others).

mod client;
mod identity;
mod provider;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::{Deserialize, Serialize};

pub use client::{explain, ClientStream, ClientTls, TlsConnector};
pub use identity::common_name;

/// The TLS settings of a protocol's TLS listeners, named as in Mosquitto's `listener` blocks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsConfig {
    /// PEM file of the CAs that client certificates must chain to.
    pub cafile: Option<PathBuf>,
    /// PEM file of the server's certificate, then its intermediates.
    pub certfile: Option<PathBuf>,
    /// PEM file of the server's private key (PKCS#8, PKCS#1 RSA or SEC1 EC).
    pub keyfile: Option<PathBuf>,
    /// Refuse clients without a certificate signed by a CA of `cafile`.
    pub require_certificate: bool,
    /// The client certificate's subject CN is the connection's username.
    pub use_identity_as_username: bool,
}

/// Why TLS settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A setting is missing or contradicts another.
    #[error("TLS: {0}")]
    Setting(String),
    /// A file cannot be read or holds nothing usable.
    #[error("TLS: {path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// rustls refused the certificates or key (a key that does not match the certificate).
    #[error("TLS: {0}")]
    Rustls(#[from] rustls::Error),
    /// This machine's CPU or architecture lacks what the crypto provider needs.
    #[error("TLS: {0}")]
    Unsupported(String),
}

/// A TLS connection's handshake over `Conn`, and who the peer is.
pub type ServerStream<S> = tokio_rustls::server::TlsStream<S>;

/// Performs server handshakes with the configuration loaded last.
pub struct TlsAcceptor {
    settings: TlsConfig,
    handshake_timeout: Duration,
    current: Mutex<Arc<ServerConfig>>,
}

impl std::fmt::Debug for TlsAcceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsAcceptor")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl TlsAcceptor {
    /// Loads `settings`; a handshake must finish within `handshake_timeout`.
    ///
    /// # Errors
    /// [`TlsError`] naming the setting or file at fault.
    pub fn new(settings: TlsConfig, handshake_timeout: Duration) -> Result<TlsAcceptor, TlsError> {
        let config = server_config(&settings)?;
        Ok(TlsAcceptor {
            settings,
            handshake_timeout,
            current: Mutex::new(config),
        })
    }

    /// Reads the files again; on success new connections get the new certificates, on
    /// failure the old ones stay in use.
    ///
    /// # Errors
    /// As [`TlsAcceptor::new`].
    pub fn reload(&self) -> Result<(), TlsError> {
        let config = server_config(&self.settings)?;
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = config;
        Ok(())
    }

    /// Whether the client certificate's CN is the username.
    pub fn identity_is_username(&self) -> bool {
        self.settings.use_identity_as_username
    }

    /// Runs the server handshake on `io`, bounded by the handshake timeout.
    ///
    /// # Errors
    /// The handshake failed (not TLS, an unknown CA, no certificate when one is required)
    /// or took too long (`TimedOut`).
    pub async fn accept<S>(&self, io: S) -> io::Result<ServerStream<S>>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        let config = self
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let handshake = tokio_rustls::TlsAcceptor::from(config).accept(io);
        match tokio::time::timeout(self.handshake_timeout, handshake).await {
            Ok(done) => done,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "TLS handshake not finished in time",
            )),
        }
    }
}

/// The acceptors of a node, so one signal reloads them all.
#[derive(Clone, Debug, Default)]
pub struct TlsSet(Arc<Mutex<Vec<Arc<TlsAcceptor>>>>);

impl TlsSet {
    /// Adds an acceptor.
    pub fn add(&self, acceptor: Arc<TlsAcceptor>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(acceptor);
    }

    /// Reloads every acceptor; the errors of those that kept their old certificates.
    pub fn reload(&self) -> Vec<TlsError> {
        let all = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        all.iter().filter_map(|a| a.reload().err()).collect()
    }

    /// How many acceptors there are.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn server_config(s: &TlsConfig) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = Arc::new(provider::provider()?);
    let (Some(certfile), Some(keyfile)) = (&s.certfile, &s.keyfile) else {
        return Err(TlsError::Setting(
            "a TLS listener needs certfile and keyfile".into(),
        ));
    };
    if s.use_identity_as_username && !s.require_certificate {
        return Err(TlsError::Setting(
            "use_identity_as_username needs require_certificate = true".into(),
        ));
    }
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = if s.require_certificate {
        let Some(cafile) = &s.cafile else {
            return Err(TlsError::Setting(
                "require_certificate needs a cafile to verify clients with".into(),
            ));
        };
        let mut roots = RootCertStore::empty();
        for ca in certs(cafile)? {
            roots.add(ca).map_err(|e| file_error(cafile, e))?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| file_error(cafile, e))?;
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let key = PrivateKeyDer::from_pem_file(keyfile).map_err(|e| file_error(keyfile, e))?;
    Ok(Arc::new(builder.with_single_cert(certs(certfile)?, key)?))
}

fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_error(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(path, e))?;
    if certs.is_empty() {
        return Err(file_error(path, "no PEM certificate in it"));
    }
    Ok(certs)
}

fn file_error(path: &Path, e: impl std::fmt::Display) -> TlsError {
    TlsError::File {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}
