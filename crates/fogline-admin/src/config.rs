//! The `[admin]` section: where the HTTP admin API listens. `admin.toml` is its documented
//! default (the node composes it into the whole default file, and its test holds the two equal).

use std::time::Duration;

use fogline_net::tls::TlsConfig;
use serde::{Deserialize, Serialize};

/// The documented default of the `[admin]` section.
pub const DEFAULT_SECTION: &str = include_str!("admin.toml");

/// The HTTP admin API's listeners and limits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdminConfig {
    /// `HOST:PORT` (TCP) or `unix:/PATH` addresses; empty: no admin API.
    pub listen: Vec<String>,
    /// HTTPS listeners, with the settings of `[admin.tls]`.
    pub tls_listen: Vec<String>,
    /// Certificates and client verification of the HTTPS listeners.
    pub tls: TlsConfig,
    /// Most HTTP connections served at once.
    pub max_connections: usize,
    /// How often the live feed sends a snapshot.
    #[serde(with = "humantime_serde")]
    pub events_interval: Duration,
    /// A connection that sends no complete request head within this is closed.
    #[serde(with = "humantime_serde")]
    pub header_read_timeout: Duration,
    /// A bearer token that may do everything (`Authorization: Bearer TOKEN`); empty: none.
    pub token: String,
}

impl Default for AdminConfig {
    fn default() -> Self {
        Self {
            listen: vec!["127.0.0.1:7767".into()],
            tls_listen: Vec::new(),
            tls: TlsConfig::default(),
            max_connections: 64,
            events_interval: Duration::from_secs(1),
            header_read_timeout: Duration::from_secs(10),
            token: String::new(),
        }
    }
}
