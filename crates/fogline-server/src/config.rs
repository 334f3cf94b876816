//! The node's configuration file.
//!
//! The documented default (`default.toml`, embedded in the binary) is the
//! reference: every key is optional, unknown keys are errors that name the
//! key, and command-line flags override what the file says.

use std::path::Path;
use std::time::Duration;

use bytesize::ByteSize;
use fogline_broker::BrokerConfig;
use serde::{Deserialize, Serialize};

/// The default configuration file, with comments.
pub const DEFAULT_CONFIG: &str = include_str!("default.toml");

/// Everything a node is configured with.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Listeners and connection limits of the native protocol.
    pub server: ServerConfig,
    /// The broker core: storage, streams, queues.
    pub broker: BrokerConfig,
    /// MQTT 3.1.1/5.0 listeners and session limits.
    pub mqtt: fogline_mqtt::MqttConfig,
}

/// Native-protocol listeners and connection limits.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// `HOST:PORT` (TCP) or `unix:/PATH` addresses to listen on.
    pub listen: Vec<String>,
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

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: vec!["127.0.0.1:7766".into()],
            max_connections: 10_000,
            tcp_keepalive: Duration::from_secs(60),
            max_pending_replies: ByteSize::mib(64),
            write_stall: Duration::from_secs(30),
            hello_timeout: Duration::from_secs(10),
        }
    }
}

/// A configuration file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The TOML is malformed or has an unknown key or a bad value.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// What the parser said (it names the key).
        message: String,
    },
}

impl Config {
    /// Parses TOML text; `origin` names it in errors.
    ///
    /// # Errors
    /// [`ConfigError::Parse`] naming the offending key.
    pub fn from_toml(text: &str, origin: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: origin.to_string(),
            message: e.to_string(),
        })
    }

    /// Reads a configuration file.
    ///
    /// # Errors
    /// The file cannot be read or parsed.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Config::from_toml(&text, &path.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_default_parses_to_the_defaults() {
        let parsed =
            Config::from_toml(DEFAULT_CONFIG, "default.toml").expect("default config parses");
        let built = Config::default();
        assert_eq!(parsed.server.listen, built.server.listen);
        assert_eq!(parsed.broker.data_dir, built.broker.data_dir);
        assert_eq!(parsed.broker.storage, built.broker.storage);
        assert_eq!(parsed.broker.retention_age, built.broker.retention_age);
        assert_eq!(parsed.broker.retention_bytes, built.broker.retention_bytes);
        assert_eq!(
            parsed.broker.memory_retention_bytes,
            built.broker.memory_retention_bytes
        );
        assert_eq!(
            parsed.broker.subscriptions.block_timeout,
            built.broker.subscriptions.block_timeout
        );
        assert_eq!(
            parsed.server.max_pending_replies,
            built.server.max_pending_replies
        );
        assert_eq!(parsed.server.write_stall, built.server.write_stall);
        assert_eq!(parsed.server.hello_timeout, built.server.hello_timeout);
        assert_eq!(parsed.mqtt.listen, built.mqtt.listen);
        assert_eq!(parsed.mqtt.ws_listen, built.mqtt.ws_listen);
        assert_eq!(parsed.mqtt.max_packet_size, built.mqtt.max_packet_size);
        assert_eq!(parsed.mqtt.receive_maximum, built.mqtt.receive_maximum);
        assert_eq!(parsed.mqtt.max_inflight, built.mqtt.max_inflight);
        assert_eq!(parsed.mqtt.max_queued, built.mqtt.max_queued);
        assert_eq!(parsed.mqtt.max_sessions, built.mqtt.max_sessions);
        assert_eq!(parsed.mqtt.max_subscriptions, built.mqtt.max_subscriptions);
        assert_eq!(
            parsed.mqtt.topic_alias_maximum,
            built.mqtt.topic_alias_maximum
        );
        assert_eq!(parsed.mqtt.max_keep_alive, built.mqtt.max_keep_alive);
        assert_eq!(parsed.mqtt.connect_timeout, built.mqtt.connect_timeout);
        assert_eq!(parsed.mqtt.write_stall, built.mqtt.write_stall);
        assert_eq!(
            parsed.mqtt.max_session_expiry,
            built.mqtt.max_session_expiry
        );
        assert_eq!(parsed.mqtt.slow_subscriber, built.mqtt.slow_subscriber);
        assert_eq!(
            parsed.mqtt.state_compact_size,
            built.mqtt.state_compact_size
        );
        let err = Config::from_toml("[mqtt]\nlisen = []\n", "x.toml").unwrap_err();
        assert!(err.to_string().contains("lisen"), "{err}");
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = Config::from_toml("[broker]\nstorag = \"mmap\"\n", "x.toml").unwrap_err();
        assert!(err.to_string().contains("storag"), "{err}");
        let err = Config::from_toml("[server]\nlisten = 5\n", "x.toml").unwrap_err();
        assert!(err.to_string().contains("listen"), "{err}");
    }

    #[test]
    fn streams_parse() {
        let cfg = Config::from_toml(
            "[[broker.streams]]\nname = \"t\"\nsubjects = [\"a/#\"]\nstorage = \"fsync\"\nretention_age = \"1h\"\n",
            "x.toml",
        )
        .expect("parses");
        assert_eq!(
            cfg.broker.streams[0].retention_age,
            Some(Duration::from_secs(3600))
        );
    }
}
