//! The node's configuration: one section per component, each the component's own type with
//! its documented default (`node.toml` here, `native.toml`, `broker.toml`, `mqtt.toml` and
//! `admin.toml` in their crates). [`default_file`] composes the whole documented file.
//!
//! Every key is optional; unknown keys are errors that name the key (`deny_unknown_fields`
//! at every level); command-line flags override what the file says.

use std::path::Path;
use std::time::Duration;

use bytesize::ByteSize;

use fogline_admin::AdminConfig;
use fogline_bridge::BridgeConfig;
use fogline_broker::{AuthConfig, BrokerConfig};
use fogline_mqtt::MqttConfig;
use fogline_native::NativeConfig;
use fogline_rules::RulesConfig;
use fogline_store::service::config::StoreConfig;
use serde::{Deserialize, Serialize};

const NODE_SECTION: &str = include_str!("node.toml");

/// The documented default configuration file: every section with its comments.
pub fn default_file() -> String {
    [
        NODE_SECTION,
        fogline_native::DEFAULT_SECTION,
        fogline_broker::config::DEFAULT_SECTION,
        fogline_broker::guard::DEFAULT_SECTION,
        fogline_mqtt::DEFAULT_SECTION,
        fogline_rules::DEFAULT_SECTION,
        fogline_store::service::config::DEFAULT_SECTION,
        fogline_bridge::config::DEFAULT_SECTION,
        fogline_gm::service::DEFAULT_SECTION,
        fogline_admin::DEFAULT_SECTION,
    ]
    .map(str::trim_end)
    .join("\n\n")
        + "\n"
}

/// Everything a node is configured with.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The node itself.
    pub node: NodeSection,
    /// The native protocol's listeners and limits (`[server]` in files from before the node
    /// layer).
    #[serde(alias = "server")]
    pub native: NativeConfig,
    /// The broker core: storage, streams, queues.
    pub broker: BrokerConfig,
    /// Users and access control, for every listener.
    pub auth: AuthConfig,
    /// MQTT 3.1.1/5.0 listeners and session limits.
    pub mqtt: MqttConfig,
    /// SQL rules, triggers and pattern sets.
    pub rules: RulesConfig,
    /// The queryable store: streams indexed by data profile.
    pub store: StoreConfig,
    /// Bridges to Kafka and other brokers.
    pub bridge: BridgeConfig,
    /// Geometric monitoring: this node's monitor, if any.
    pub gm: fogline_gm::service::GmConfig,
    /// The HTTP admin API, metrics and dashboard.
    pub admin: AdminConfig,
}

/// The `[node]` section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NodeSection {
    /// The node's id; empty: generated once and kept in the data directory.
    pub id: String,
    /// Most bytes all connections (native and MQTT) together may hold of frames they are
    /// still receiving, beyond each one's 64 KiB read buffer.
    pub read_buffer_budget: ByteSize,
    /// A frame (an MQTT packet) must arrive whole within this once its first byte has.
    #[serde(with = "humantime_serde")]
    pub frame_timeout: Duration,
}

impl Default for NodeSection {
    fn default() -> Self {
        NodeSection {
            id: String::new(),
            read_buffer_budget: ByteSize::mib(64),
            frame_timeout: Duration::from_secs(30),
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
        let parse = |message: String| ConfigError::Parse {
            path: origin.to_string(),
            message,
        };
        let cfg: Config = toml::from_str(text).map_err(|e| parse(e.to_string()))?;
        cfg.bridge.check().map_err(parse)?;
        Ok(cfg)
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
    fn the_documented_file_is_the_default() {
        let parsed = Config::from_toml(&default_file(), "default").expect("parses");
        assert_eq!(format!("{parsed:?}"), format!("{:?}", Config::default()));
        let again = toml::to_string_pretty(&parsed).expect("prints");
        assert!(Config::from_toml(&again, "printed").is_ok(), "{again}");
    }

    #[test]
    fn unknown_keys_are_named() {
        for (text, key) in [
            ("[broker]\nstorag = \"mmap\"\n", "storag"),
            ("[native]\nlisten = 5\n", "listen"),
            ("[mqtt]\nlisen = []\n", "lisen"),
            ("[admin]\nport = 80\n", "port"),
            ("[nodes]\n", "nodes"),
        ] {
            let err = Config::from_toml(text, "x.toml").unwrap_err().to_string();
            assert!(err.contains(key), "{text}: {err}");
        }
    }

    #[test]
    fn the_old_server_section_still_reads() {
        let cfg = Config::from_toml("[server]\nlisten = [\"127.0.0.1:1\"]\n", "old.toml")
            .expect("parses");
        assert_eq!(cfg.native.listen, ["127.0.0.1:1"]);
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
            Some(std::time::Duration::from_secs(3600))
        );
    }
}
