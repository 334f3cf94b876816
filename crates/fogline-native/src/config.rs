//! The `[native]` section of the node's configuration: the native protocol's listeners and
//! connection limits. `native.toml` is its documented default (the node composes it into
//! the whole default file, and its test holds the two equal).

use std::time::Duration;

use bytesize::ByteSize;
use fogline_net::tls::TlsConfig;
use serde::{Deserialize, Serialize};

/// The documented default of the `[native]` section.
pub const DEFAULT_SECTION: &str = include_str!("native.toml");

/// Native-protocol listeners and connection limits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NativeConfig {
    /// `HOST:PORT` (TCP) or `unix:/PATH` addresses to listen on.
    pub listen: Vec<String>,
    /// TLS listeners (`HOST:PORT` or `unix:/PATH`), with the settings of `[native.tls]`.
    pub tls_listen: Vec<String>,
    /// Certificates and client verification of the TLS listeners.
    pub tls: TlsConfig,
    /// Most concurrent connections.
    pub max_connections: usize,
    /// TCP keep-alive probe interval.
    #[serde(with = "humantime_serde")]
    pub tcp_keepalive: Duration,
    /// Most reply bytes queued for a client that does not read them.
    pub max_pending_replies: ByteSize,
    /// A connection whose peer takes no bytes of a pending write for this long is closed.
    #[serde(with = "humantime_serde")]
    pub write_stall: Duration,
    /// A connection that has not sent Hello within this is closed.
    #[serde(with = "humantime_serde")]
    pub hello_timeout: Duration,
}

impl Default for NativeConfig {
    fn default() -> Self {
        Self {
            listen: vec!["127.0.0.1:7766".into()],
            tls_listen: Vec::new(),
            tls: TlsConfig::default(),
            max_connections: 10_000,
            tcp_keepalive: Duration::from_secs(60),
            max_pending_replies: ByteSize::mib(64),
            write_stall: Duration::from_secs(30),
            hello_timeout: Duration::from_secs(10),
        }
    }
}
