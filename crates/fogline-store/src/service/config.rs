//! The `[store]` section.

use serde::{Deserialize, Serialize};

/// The documented default section.
pub const DEFAULT_SECTION: &str = include_str!("../store.toml");

/// Settings of the store component.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// The streams indexed for queries.
    pub streams: Vec<String>,
    /// Most records one query returns per page.
    pub max_page: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            streams: Vec::new(),
            max_page: 1000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_section_is_the_default() {
        #[derive(Deserialize)]
        struct File {
            store: StoreConfig,
        }
        let f: File = toml::from_str(DEFAULT_SECTION).unwrap();
        assert_eq!(f.store, StoreConfig::default());
    }
}
