//! The `[rules]` section.

use serde::{Deserialize, Serialize};

/// The documented default section.
pub const DEFAULT_SECTION: &str = include_str!("rules.toml");

/// Settings of the rules component.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RulesConfig {
    /// Run rules on this node.
    pub enabled: bool,
    /// Most rules the node accepts.
    pub max_rules: usize,
    /// Most records one window of a rule holds; records beyond are dropped and counted.
    pub max_window_rows: usize,
}

impl Default for RulesConfig {
    fn default() -> Self {
        RulesConfig {
            enabled: true,
            max_rules: 10_000,
            max_window_rows: fogline_sql::plan::DEFAULT_MAX_WINDOW_ROWS,
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
            rules: RulesConfig,
        }
        let f: File = toml::from_str(DEFAULT_SECTION).unwrap();
        assert_eq!(f.rules, RulesConfig::default());
    }
}
