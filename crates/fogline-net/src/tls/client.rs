//! The client side of TLS: a connector that verifies the server against the CAs of a file
//! and may present a client certificate (for listeners with `require_certificate`), as
//! `mosquitto_pub --cafile --cert --key` does. There are no system roots: an edge node's
//! certificate is signed by its operator's CA, and the machines it runs on often ship none.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::{AlertDescription, CertificateError, ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{PrivateKeyDer, ServerName};

use super::{certs, file_error, provider, TlsError};

/// What a client needs to reach a TLS listener.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientTls {
    /// PEM file of the CAs the server's certificate must chain to.
    pub cafile: PathBuf,
    /// PEM file of the client's certificate (then its intermediates), for a server that
    /// requires one.
    pub certfile: Option<PathBuf>,
    /// PEM file of the client certificate's private key.
    pub keyfile: Option<PathBuf>,
    /// The name the server's certificate must be valid for (a DNS name, or an IP address
    /// matched against its IP SANs); `None`: the host of the address connected to.
    pub server_name: Option<String>,
}

/// A TLS client stream over `S`.
pub type ClientStream<S> = tokio_rustls::client::TlsStream<S>;

/// Runs client handshakes with one server's settings; loaded once, used for every
/// (re)connection.
#[derive(Clone)]
pub struct TlsConnector {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl std::fmt::Debug for TlsConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConnector")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl TlsConnector {
    /// Loads the files of `settings`; `host` is the server name when it names none.
    ///
    /// # Errors
    /// [`TlsError`] naming the file or setting at fault.
    pub fn new(settings: &ClientTls, host: &str) -> Result<TlsConnector, TlsError> {
        let name = settings.server_name.as_deref().unwrap_or(host);
        let name = ServerName::try_from(name.to_string()).map_err(|_| {
            TlsError::Setting(format!("{name:?} is not a valid server name for TLS"))
        })?;
        let provider = Arc::new(provider::provider()?);
        let mut roots = RootCertStore::empty();
        for ca in certs(&settings.cafile)? {
            roots.add(ca).map_err(|e| file_error(&settings.cafile, e))?;
        }
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots);
        let config = match (&settings.certfile, &settings.keyfile) {
            (Some(certfile), Some(keyfile)) => {
                let key =
                    PrivateKeyDer::from_pem_file(keyfile).map_err(|e| file_error(keyfile, e))?;
                builder.with_client_auth_cert(certs(certfile)?, key)?
            }
            (None, None) => builder.with_no_client_auth(),
            _ => {
                return Err(TlsError::Setting(
                    "a client certificate needs its key, and a key its certificate".into(),
                ))
            }
        };
        Ok(TlsConnector {
            config: Arc::new(config),
            name,
        })
    }

    /// The same settings for the server `host` (a client that reaches several servers
    /// through one set of files, such as a Kafka cluster's brokers).
    ///
    /// # Errors
    /// `host` is not a valid server name.
    pub fn for_host(&self, host: &str) -> Result<TlsConnector, TlsError> {
        let name = ServerName::try_from(host.to_string()).map_err(|_| {
            TlsError::Setting(format!("{host:?} is not a valid server name for TLS"))
        })?;
        Ok(TlsConnector {
            config: self.config.clone(),
            name,
        })
    }

    /// Runs the client handshake on `io`.
    ///
    /// # Errors
    /// The handshake failed: [`explain`] words the TLS reasons.
    pub async fn connect<S>(&self, io: S) -> io::Result<ClientStream<S>>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        tokio_rustls::TlsConnector::from(self.config.clone())
            .connect(self.name.clone(), io)
            .await
    }
}

/// A TLS failure of a client connection (in the handshake, or the server's alert after
/// it) in words a user can act on; `None` when `e` is not a TLS error.
pub fn explain(e: &io::Error) -> Option<String> {
    let tls = e.get_ref()?.downcast_ref::<rustls::Error>()?;
    Some(match tls {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "the server's certificate is not signed by a CA of the CA file".into()
        }
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => "the server's certificate is not valid for the server name".into(),
        rustls::Error::InvalidCertificate(
            CertificateError::Expired | CertificateError::ExpiredContext { .. },
        ) => "the server's certificate has expired".into(),
        rustls::Error::InvalidCertificate(other) => {
            format!("the server's certificate does not verify: {other:?}")
        }
        rustls::Error::AlertReceived(AlertDescription::CertificateRequired) => {
            "the server requires a client certificate".into()
        }
        rustls::Error::AlertReceived(
            alert @ (AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateUnknown
            | AlertDescription::AccessDenied),
        ) => format!("the server refused the client certificate ({alert:?})"),
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            "the server did not answer in TLS (is this a TLS listener?)".into()
        }
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tls_error(e: rustls::Error) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }

    #[test]
    fn only_tls_errors_are_explained() {
        let refused = io::Error::new(io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(explain(&refused), None);
        let unknown = tls_error(rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer,
        ));
        assert!(explain(&unknown).unwrap().contains("not signed by a CA"));
        let required = tls_error(rustls::Error::AlertReceived(
            AlertDescription::CertificateRequired,
        ));
        assert!(explain(&required)
            .unwrap()
            .contains("requires a client certificate"));
        let bad = tls_error(rustls::Error::AlertReceived(AlertDescription::UnknownCA));
        assert!(explain(&bad)
            .unwrap()
            .contains("refused the client certificate"));
    }

    #[test]
    fn the_server_name_is_checked_before_any_file() {
        let settings = ClientTls {
            cafile: "/nonexistent/ca.crt".into(),
            ..ClientTls::default()
        };
        let e = TlsConnector::new(&settings, "not a name!").unwrap_err();
        assert!(e.to_string().contains("not a valid server name"), "{e}");
        let e = TlsConnector::new(&settings, "10.0.0.5").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/ca.crt"), "{e}");
    }
}
