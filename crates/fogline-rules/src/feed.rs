//! The rules in the admin API's live feed: `rules` (a row per rule, the first
//! [`MAX_LISTED`] by id) and `rules_count` in every snapshot, for the dashboard's rules panel.
//! Each row's `topics` are the filters its results are published on (`publish`/`mqtt`
//! actions and trigger actions, a template's field levels as `+`, a started function's
//! output): the dashboard's alerts feed subscribes to them (`/api/v1/subscribe`).

use std::sync::atomic::Ordering;

use fogline_admin::FeedFields;
use serde_json::{json, Map, Value};

use crate::engine::Rules;
use crate::spec::RuleSpec;

/// Most rules one snapshot lists: it is sent every tick to every dashboard.
pub const MAX_LISTED: usize = 100;

/// The rules' fields of the live feed.
#[derive(Clone)]
pub struct RulesFeed(pub Rules);

impl FeedFields for RulesFeed {
    fn add(&self, into: &mut Map<String, Value>) {
        let list = self.0.list();
        into.insert("rules_count".into(), json!(list.len()));
        let rows: Vec<Value> = list
            .iter()
            .take(MAX_LISTED)
            .filter_map(|st| {
                let (_, stats) = self.0.status(&st.id)?;
                let spec = self.0.get(&st.id)?;
                let n = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
                // Records that failed and results a sink could not deliver, together.
                let sink_exceptions: u64 = stats
                    .sinks
                    .lock()
                    .iter()
                    .map(|(_, s)| n(&s.exceptions))
                    .sum();
                let last_ms = n(&stats.last_result_us) / 1000;
                let last_exception = stats.last_exception.lock().clone();
                Some(json!({
                    "id": st.id,
                    "status": st.state,
                    "reason": st.reason,
                    "restarts": st.restarts,
                    "records_in": n(&stats.records_in),
                    "results": n(&stats.results),
                    "exceptions": n(&stats.exceptions) + sink_exceptions,
                    "last_exception": last_exception,
                    "triggers_fired": n(&stats.triggers_fired),
                    "last_output_ms": (last_ms > 0).then_some(last_ms),
                    "topics": topics(&spec),
                }))
            })
            .collect();
        into.insert("rules".into(), Value::Array(rows));
    }
}

/// The topic filters a rule's results are published on.
pub fn topics(spec: &RuleSpec) -> Vec<String> {
    let actions = spec
        .actions
        .iter()
        .chain(spec.triggers.iter().map(|t| &t.then));
    let mut out: Vec<String> = Vec::new();
    for a in actions {
        for (kind, props) in a {
            let topic = match kind.as_str() {
                "publish" | "mqtt" => props.get("topic"),
                "function" => props.get("output"),
                _ => None,
            };
            if let Some(f) = topic.and_then(Value::as_str).map(filter_of) {
                if !out.contains(&f) {
                    out.push(f);
                }
            }
        }
    }
    out
}

/// A topic template as a filter: each level with a `{field}` matches any (`+`).
fn filter_of(template: &str) -> String {
    template
        .split('/')
        .map(|l| if l.contains('{') { "+" } else { l })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_come_from_actions_and_triggers() {
        let spec = RuleSpec::from_json(
            br#"{"id":"r","sql":"SELECT * FROM s",
              "actions":[{"publish":{"topic":"alerts/{id}/t"}},{"log":{}},{"mqtt":{"topic":"a/b"}}],
              "triggers":[{"name":"t","if":"x > 1","then":{"publish":{"topic":"hot/{{.id}}"}}},
                {"name":"f","if":"x > 2","then":{"function":{"start":"f","source":"a","output":"out/f"}}}]}"#,
        )
        .unwrap();
        assert_eq!(topics(&spec), ["alerts/+/t", "a/b", "hot/+", "out/f"]);
    }
}
