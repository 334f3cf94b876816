//! How a Kafka bridge reaches a secured Kafka: TLS and SASL, set in a bridge's `security`
//! table with librdkafka's names (`security.protocol` is `protocol`, the dots of the others
//! are underscores).
//!
//! rskafka's own TLS would compile `ring` (C) into the edge binary, so TLS is fogline's
//! (fogline-net's connector, graviola): rskafka's connections go through a SOCKS5 relay of
//! the bridge's (`socks`), which runs the handshake with each broker it is asked for.
//! SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) is rskafka's on its connections, and
//! [`Secure::connect`]'s on the consumer-group connections, which are the bridge's own.

use std::path::PathBuf;
use std::sync::Arc;

use fogline_net::tls::{ClientTls, TlsConnector};
use rskafka::client::{Credentials, SaslConfig};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::dial::{dial, dial_tls, split_host_port};

use super::group::codec;
use super::socks::TlsProxy;

/// librdkafka's `security.protocol`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum SecurityProtocol {
    /// Neither TLS nor SASL (the default).
    #[default]
    Plaintext,
    /// TLS.
    Ssl,
    /// SASL over plain TCP.
    SaslPlaintext,
    /// SASL over TLS.
    SaslSsl,
}

impl TryFrom<String> for SecurityProtocol {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "plaintext" => Ok(SecurityProtocol::Plaintext),
            "ssl" => Ok(SecurityProtocol::Ssl),
            "sasl_plaintext" => Ok(SecurityProtocol::SaslPlaintext),
            "sasl_ssl" => Ok(SecurityProtocol::SaslSsl),
            _ => Err(format!(
                "protocol {s:?}: one of plaintext, ssl, sasl_plaintext, sasl_ssl"
            )),
        }
    }
}

impl From<SecurityProtocol> for String {
    fn from(p: SecurityProtocol) -> String {
        match p {
            SecurityProtocol::Plaintext => "plaintext",
            SecurityProtocol::Ssl => "ssl",
            SecurityProtocol::SaslPlaintext => "sasl_plaintext",
            SecurityProtocol::SaslSsl => "sasl_ssl",
        }
        .into()
    }
}

/// librdkafka's `sasl.mechanism`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum SaslMechanism {
    /// RFC 4616: the password in the clear (use it over TLS).
    Plain,
    /// RFC 7677.
    ScramSha256,
    /// SCRAM with SHA-512.
    ScramSha512,
}

impl SaslMechanism {
    /// Kafka's name for it.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }
}

impl TryFrom<String> for SaslMechanism {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        match s.to_ascii_uppercase().as_str() {
            "PLAIN" => Ok(SaslMechanism::Plain),
            "SCRAM-SHA-256" => Ok(SaslMechanism::ScramSha256),
            "SCRAM-SHA-512" => Ok(SaslMechanism::ScramSha512),
            _ => Err(format!(
                "sasl_mechanism {s:?}: one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"
            )),
        }
    }
}

impl From<SaslMechanism> for String {
    fn from(m: SaslMechanism) -> String {
        m.name().into()
    }
}

/// A Kafka bridge's `security` table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KafkaSecurity {
    /// `plaintext` (the default), `ssl`, `sasl_plaintext` or `sasl_ssl`.
    pub protocol: SecurityProtocol,
    /// `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512` (needed by the `sasl_*` protocols).
    pub sasl_mechanism: Option<SaslMechanism>,
    /// The SASL user.
    pub sasl_username: Option<String>,
    /// Its password.
    pub sasl_password: Option<String>,
    /// PEM file of the CAs the brokers' certificates must chain to (needed by `ssl` and
    /// `sasl_ssl`); each broker's certificate must be valid for the host it is reached at.
    pub ssl_ca_location: Option<PathBuf>,
    /// PEM file of the bridge's client certificate, for brokers that require one.
    pub ssl_certificate_location: Option<PathBuf>,
    /// PEM file of its private key.
    pub ssl_key_location: Option<PathBuf>,
}

impl KafkaSecurity {
    /// Whether the protocol is TLS.
    pub fn tls(&self) -> bool {
        matches!(
            self.protocol,
            SecurityProtocol::Ssl | SecurityProtocol::SaslSsl
        )
    }

    /// Whether the protocol is SASL.
    pub fn sasl(&self) -> bool {
        matches!(
            self.protocol,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }

    /// Checks the settings belong together (their files are read by [`Secure::load`]).
    ///
    /// # Errors
    /// What is missing or out of place.
    pub fn check(&self) -> Result<(), String> {
        let p = String::from(self.protocol);
        let sasl_set = self.sasl_mechanism.is_some()
            || self.sasl_username.is_some()
            || self.sasl_password.is_some();
        let tls_set = self.ssl_ca_location.is_some()
            || self.ssl_certificate_location.is_some()
            || self.ssl_key_location.is_some();
        if self.sasl() {
            if self.sasl_mechanism.is_none() {
                return Err(format!("security protocol {p} needs sasl_mechanism"));
            }
            if self.sasl_username.is_none() || self.sasl_password.is_none() {
                return Err(format!(
                    "security protocol {p} needs sasl_username and sasl_password"
                ));
            }
        } else if sasl_set {
            return Err(format!(
                "sasl_* settings need protocol sasl_plaintext or sasl_ssl (it is {p})"
            ));
        }
        if self.tls() {
            if self.ssl_ca_location.is_none() {
                return Err(format!("security protocol {p} needs ssl_ca_location"));
            }
        } else if tls_set {
            return Err(format!(
                "ssl_* settings need protocol ssl or sasl_ssl (it is {p})"
            ));
        }
        if self.ssl_certificate_location.is_some() != self.ssl_key_location.is_some() {
            return Err("ssl_certificate_location and ssl_key_location go together".into());
        }
        Ok(())
    }
}

/// A connection to a broker: plain TCP or TLS.
pub trait KafkaIo: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> KafkaIo for T {}

/// A bridge's security, loaded: the TLS files read once, the relay started on first use.
/// The default: no TLS, no SASL.
#[derive(Default)]
pub struct Secure {
    tls: Option<TlsConnector>,
    sasl: Option<(SaslMechanism, String, String)>,
    proxy: tokio::sync::OnceCell<TlsProxy>,
}

impl Secure {
    /// Loads `sec` (checked) for a cluster reached through `bootstrap`.
    ///
    /// # Errors
    /// A TLS file cannot be read or holds no usable certificate or key.
    pub fn load(sec: &KafkaSecurity, bootstrap: &[String]) -> Result<Arc<Secure>, String> {
        let tls = match (&sec.ssl_ca_location, sec.tls()) {
            (Some(cafile), true) => {
                let settings = ClientTls {
                    cafile: cafile.clone(),
                    certfile: sec.ssl_certificate_location.clone(),
                    keyfile: sec.ssl_key_location.clone(),
                    server_name: None,
                };
                // Each broker's own name is set per connection; this one only loads.
                let host = bootstrap.first().map_or("localhost", |b| host_of(b));
                Some(TlsConnector::new(&settings, host).map_err(|e| format!("TLS: {e}"))?)
            }
            _ => None,
        };
        let sasl = match (sec.sasl(), sec.sasl_mechanism) {
            (true, Some(m)) => Some((
                m,
                sec.sasl_username.clone().unwrap_or_default(),
                sec.sasl_password.clone().unwrap_or_default(),
            )),
            _ => None,
        };
        Ok(Arc::new(Secure {
            tls,
            sasl,
            ..Secure::default()
        }))
    }

    /// No TLS, no SASL.
    pub fn plain() -> Arc<Secure> {
        Arc::new(Secure::default())
    }

    /// rskafka's SASL settings, if any.
    pub fn sasl_config(&self) -> Option<SaslConfig> {
        let (m, user, password) = self.sasl.clone()?;
        let c = Credentials::new(user, password);
        Some(match m {
            SaslMechanism::Plain => SaslConfig::Plain(c),
            SaslMechanism::ScramSha256 => SaslConfig::ScramSha256(c),
            SaslMechanism::ScramSha512 => SaslConfig::ScramSha512(c),
        })
    }

    /// With TLS, the address of the relay rskafka connects through (started now if it
    /// is not running).
    ///
    /// # Errors
    /// The relay cannot listen.
    pub async fn proxy(&self) -> Result<Option<String>, String> {
        let Some(tls) = &self.tls else {
            return Ok(None);
        };
        let proxy = self
            .proxy
            .get_or_try_init(|| TlsProxy::start(tls.clone()))
            .await
            .map_err(|e| format!("starting the TLS relay: {e}"))?;
        Ok(Some(proxy.addr().to_string()))
    }

    /// Why the relay last failed to reach a broker (taken: told once).
    pub fn take_failure(&self) -> Option<String> {
        self.proxy.get().and_then(TlsProxy::take_failure)
    }

    /// A connection of the bridge's own to the broker at `addr` (`host:port`), past TLS
    /// and SASL when they are set.
    ///
    /// # Errors
    /// It cannot be reached, the handshake fails, or SASL refuses.
    pub async fn connect(&self, addr: &str, client_id: &str) -> Result<Box<dyn KafkaIo>, String> {
        let (host, port) = split_host_port(addr)?;
        let mut conn: Box<dyn KafkaIo> = match &self.tls {
            None => Box::new(dial(host, port).await?),
            Some(tls) => Box::new(dial_tls(tls, host, port).await?),
        };
        if let Some((m, user, password)) = &self.sasl {
            authenticate(&mut conn, *m, user, password, client_id)
                .await
                .map_err(|e| format!("{addr}: {e}"))?;
        }
        Ok(conn)
    }
}

/// The host of `host:port` (a bracketed IPv6 address without its brackets).
pub fn host_of(addr: &str) -> &str {
    split_host_port(addr).map_or(addr, |(host, _)| host)
}

/// SASL on a new connection: SaslHandshake, then SaslAuthenticate until the mechanism
/// is done (Kafka's KIP-152 exchange).
async fn authenticate(
    conn: &mut Box<dyn KafkaIo>,
    mechanism: SaslMechanism,
    user: &str,
    password: &str,
    client_id: &str,
) -> Result<(), String> {
    use rsasl::prelude::{Mechname, SASLClient, SASLConfig};
    let name = mechanism.name();
    let frame = codec::sasl_handshake(1, client_id, name);
    let body = super::group::exchange(conn, &frame, 1).await?;
    let offered = codec::decode_sasl_handshake(&body).map_err(|e| e.to_string())?;
    if offered.error != 0 {
        return Err(format!(
            "Kafka does not take SASL mechanism {name} here (it takes {})",
            offered.mechanisms.join(", ")
        ));
    }
    let config = SASLConfig::with_credentials(None, user.to_string(), password.to_string())
        .map_err(|e| format!("SASL: {e}"))?;
    let mech = Mechname::parse(name.as_bytes()).map_err(|e| format!("SASL: {e}"))?;
    let mut session = SASLClient::new(config)
        .start_suggested(&[mech])
        .map_err(|e| format!("SASL {name}: {e}"))?;
    let mut received: Option<Vec<u8>> = None;
    for correlation in 2.. {
        let mut out = Vec::new();
        let state = session
            .step(received.as_deref(), &mut out)
            .map_err(|e| format!("SASL {name}: {e}"))?;
        if state.has_sent_message() {
            let frame = codec::sasl_authenticate(correlation, client_id, &out);
            let body = super::group::exchange(conn, &frame, correlation).await?;
            let answer = codec::decode_sasl_authenticate(&body).map_err(|e| e.to_string())?;
            if answer.error != 0 {
                return Err(format!(
                    "SASL {name} authentication as {user:?} failed: {}",
                    answer
                        .message
                        .unwrap_or_else(|| format!("error {}", answer.error))
                ));
            }
            received = Some(answer.auth_bytes);
        }
        if state.is_finished() {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_do_not_belong_together_are_refused() {
        let ok = |s: &KafkaSecurity| s.check().unwrap();
        let bad = |s: KafkaSecurity, what: &str| {
            let e = s.check().unwrap_err();
            assert!(e.contains(what), "{e}");
        };
        ok(&KafkaSecurity::default());
        let sasl = KafkaSecurity {
            protocol: SecurityProtocol::SaslPlaintext,
            sasl_mechanism: Some(SaslMechanism::ScramSha512),
            sasl_username: Some("edge".into()),
            sasl_password: Some("pw".into()),
            ..KafkaSecurity::default()
        };
        ok(&sasl);
        bad(
            KafkaSecurity {
                sasl_mechanism: None,
                ..sasl.clone()
            },
            "needs sasl_mechanism",
        );
        bad(
            KafkaSecurity {
                sasl_password: None,
                ..sasl.clone()
            },
            "sasl_password",
        );
        bad(
            KafkaSecurity {
                protocol: SecurityProtocol::Plaintext,
                ..sasl.clone()
            },
            "need protocol sasl_plaintext or sasl_ssl",
        );
        bad(
            KafkaSecurity {
                protocol: SecurityProtocol::SaslSsl,
                ..sasl.clone()
            },
            "needs ssl_ca_location",
        );
        bad(
            KafkaSecurity {
                ssl_ca_location: Some("ca.crt".into()),
                ..sasl.clone()
            },
            "need protocol ssl or sasl_ssl",
        );
        bad(
            KafkaSecurity {
                protocol: SecurityProtocol::Ssl,
                ssl_ca_location: Some("ca.crt".into()),
                ssl_key_location: Some("k.pem".into()),
                ..KafkaSecurity::default()
            },
            "go together",
        );
    }

    #[test]
    fn names_are_librdkafkas_in_any_case() {
        let s: KafkaSecurity = toml::from_str(
            "protocol = \"SASL_SSL\"\nsasl_mechanism = \"scram-sha-256\"\n\
             sasl_username = \"u\"\nsasl_password = \"p\"\nssl_ca_location = \"ca.crt\"\n",
        )
        .unwrap();
        assert_eq!(s.protocol, SecurityProtocol::SaslSsl);
        assert_eq!(s.sasl_mechanism, Some(SaslMechanism::ScramSha256));
        s.check().unwrap();
        let e = toml::from_str::<KafkaSecurity>("protocol = \"tls\"").unwrap_err();
        assert!(e.to_string().contains("one of plaintext"), "{e}");
        let e = toml::from_str::<KafkaSecurity>("sasl_mechanism = \"GSSAPI\"").unwrap_err();
        assert!(e.to_string().contains("SCRAM-SHA-512"), "{e}");
        assert_eq!(host_of("broker.example:9093"), "broker.example");
        assert_eq!(host_of("[::1]:9093"), "::1");
        assert_eq!(host_of("broker"), "broker");
    }
}
