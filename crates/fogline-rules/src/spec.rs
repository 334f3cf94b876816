//! A rule as users write it, in eKuiper's JSON shape:
//! `{"id", "sql", "actions": [{"publish": {...}}, {"log": {}}], "options": {...}}`, plus
//! fogline's `triggers` (IF-THEN rules over its results, see `trigger`).
//!
//! Unknown keys are errors that name the key, so a misspelt option is never silently
//! ignored.

use serde::{Deserialize, Serialize};

use crate::trigger::TriggerSpec;

/// A rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// Its id: 1-58 of `A-Z a-z 0-9 _ - .`, not starting with `.` (it names files and the
    /// rule's durable consumer `rule.<id>`).
    pub id: String,
    /// Its `SELECT` statement.
    pub sql: String,
    /// Where its results go, in order; each is `{"<sink kind>": {properties}}`.
    #[serde(default)]
    pub actions: Vec<serde_json::Map<String, serde_json::Value>>,
    /// Its options.
    #[serde(default)]
    pub options: RuleOptions,
    /// IF-THEN triggers evaluated on each result row.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<TriggerSpec>,
    /// Start it when created (eKuiper's `triggered`); a stopped rule stays stopped across
    /// restarts of the node.
    #[serde(default = "yes")]
    pub triggered: bool,
}

fn yes() -> bool {
    true
}

/// A rule's options (eKuiper's names).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct RuleOptions {
    /// 0: read a live subscription (at most once). 1: read the stream through a durable
    /// consumer and checkpoint window state (at least once). 2 is taken as 1 (results may
    /// repeat after a crash; exactly once would need transactional sinks).
    pub qos: u8,
    /// Milliseconds between checkpoints under qos 1.
    pub checkpoint_interval: u64,
    /// Windows by event time (the stream's `TIMESTAMP` field, else the record's time).
    pub is_event_time: bool,
    /// Milliseconds a record may arrive late under event time.
    pub late_tolerance: u64,
    /// What happens when the rule fails.
    pub restart_strategy: RestartStrategy,
    /// Accepted for eKuiper compatibility: fogline sends every result as it is made.
    pub send_meta_to_sink: bool,
    /// Accepted for eKuiper compatibility (buffers are sized per sink).
    pub buffer_length: Option<u64>,
}

impl Default for RuleOptions {
    fn default() -> Self {
        RuleOptions {
            qos: 0,
            checkpoint_interval: 5_000,
            is_event_time: false,
            late_tolerance: 1_000,
            restart_strategy: RestartStrategy::default(),
            send_meta_to_sink: false,
            buffer_length: None,
        }
    }
}

/// eKuiper's `restartStrategy`: how often and how soon a failed rule is started again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct RestartStrategy {
    /// Restarts allowed (0: none, the rule stays failed).
    pub attempts: u32,
    /// First delay, milliseconds.
    pub delay: u64,
    /// Each next delay is the last times this.
    pub multiplier: f64,
    /// Longest delay, milliseconds.
    pub max_delay: u64,
    /// Up to this fraction of a delay is added at random.
    pub jitter_factor: f64,
}

impl Default for RestartStrategy {
    fn default() -> Self {
        RestartStrategy {
            attempts: 0,
            delay: 1_000,
            multiplier: 2.0,
            max_delay: 30_000,
            jitter_factor: 0.1,
        }
    }
}

impl RestartStrategy {
    /// The delay before restart number `n` (from 1).
    pub fn delay_ms(&self, n: u32) -> u64 {
        let base = self.delay as f64 * self.multiplier.max(1.0).powi(n.saturating_sub(1) as i32);
        let capped = base.min(self.max_delay as f64);
        let jitter = capped * self.jitter_factor.clamp(0.0, 1.0) * pseudo_random();
        (capped + jitter) as u64
    }
}

/// A number in [0, 1) that differs between calls (jitter needs no better).
fn pseudo_random() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(fogline_broker::now_micros());
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Whether `id` may name a rule.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 58
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

impl RuleSpec {
    /// Reads a rule from JSON.
    ///
    /// # Errors
    /// Malformed JSON, an unknown key, a bad id or option.
    pub fn from_json(body: &[u8]) -> Result<RuleSpec, String> {
        let spec: RuleSpec = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        spec.check()?;
        Ok(spec)
    }

    /// Checks what serde cannot.
    ///
    /// # Errors
    /// What is wrong, naming the field.
    pub fn check(&self) -> Result<(), String> {
        if !valid_id(&self.id) {
            return Err(format!(
                "invalid rule id {:?}: use 1-58 of A-Z a-z 0-9 _ - ., not starting with '.'",
                self.id
            ));
        }
        if self.options.qos > 2 {
            return Err(format!(
                "options.qos {} must be 0, 1 or 2",
                self.options.qos
            ));
        }
        if self.options.qos > 0 && self.options.checkpoint_interval == 0 {
            return Err("options.checkpointInterval must be above 0 under qos 1".into());
        }
        for (i, a) in self.actions.iter().enumerate() {
            if a.len() != 1 {
                return Err(format!(
                    "actions[{i}] must have exactly one key, the sink's kind (e.g. {{\"log\": {{}}}})"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ekuiper_rules_read_with_defaults() {
        let r = RuleSpec::from_json(
            br#"{"id":"rule1","sql":"SELECT * FROM demo","actions":[{"log":{}}],
                "options":{"qos":1,"checkpointInterval":1000,"restartStrategy":{"attempts":3}}}"#,
        )
        .unwrap();
        assert_eq!(r.options.qos, 1);
        assert_eq!(r.options.checkpoint_interval, 1000);
        assert_eq!(r.options.restart_strategy.attempts, 3);
        assert_eq!(r.options.restart_strategy.delay, 1000);
        assert!(r.triggered);
    }

    #[test]
    fn misspelt_options_and_bad_ids_are_refused() {
        let e = RuleSpec::from_json(br#"{"id":"r","sql":"x","options":{"qoss":1}}"#).unwrap_err();
        assert!(e.contains("qoss"), "{e}");
        let e = RuleSpec::from_json(br#"{"id":"a/b","sql":"x"}"#).unwrap_err();
        assert!(e.contains("invalid rule id"), "{e}");
        let e = RuleSpec::from_json(br#"{"id":"r","sql":"x","actions":[{}]}"#).unwrap_err();
        assert!(e.contains("exactly one key"), "{e}");
    }

    #[test]
    fn restart_delays_grow_to_the_cap() {
        let s = RestartStrategy {
            jitter_factor: 0.0,
            ..RestartStrategy::default()
        };
        assert_eq!(s.delay_ms(1), 1000);
        assert_eq!(s.delay_ms(2), 2000);
        assert_eq!(s.delay_ms(10), 30_000);
    }
}
