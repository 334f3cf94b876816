//! The rules in `/metrics`, read at scrape time.

use std::sync::atomic::{AtomicU64, Ordering};

use fogline_admin::metrics::family;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType::{Counter, Gauge};

use crate::engine::{Rules, State};

/// Reads every rule's counters.
#[derive(Clone)]
pub struct RulesCollector(pub Rules);

impl std::fmt::Debug for RulesCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RulesCollector")
    }
}

type Sample = ([(&'static str, String); 1], f64);

impl Collector for RulesCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let rules = &self.0;
        let list = rules.list();
        let states = [
            State::Running,
            State::Stopped,
            State::Restarting,
            State::Failed,
        ];
        let by_state: Vec<([(&str, &str); 1], f64)> = states
            .iter()
            .map(|s| {
                let n = list.iter().filter(|r| &r.state == s).count();
                let name = match s {
                    State::Running => "running",
                    State::Stopped => "stopped",
                    State::Restarting => "restarting",
                    State::Failed => "failed",
                };
                ([("state", name)], n as f64)
            })
            .collect();
        family(&mut e, "fogline_rules", "Rules by state", Gauge, by_state)?;
        let stats: Vec<_> = list
            .iter()
            .filter_map(|s| rules.status(&s.id).map(|(_, st)| (s.id.clone(), st)))
            .collect();
        let per = |f: &dyn Fn(&crate::run::RuleStats) -> &AtomicU64| -> Vec<Sample> {
            stats
                .iter()
                .map(|(id, st)| ([("rule", id.clone())], f(st).load(Ordering::Relaxed) as f64))
                .collect()
        };
        family(
            &mut e,
            "fogline_rule_records_in",
            "Records a rule read from its stream",
            Counter,
            per(&|s| &s.records_in),
        )?;
        family(
            &mut e,
            "fogline_rule_results",
            "Results a rule made (a record's row or a window's rows)",
            Counter,
            per(&|s| &s.results),
        )?;
        family(
            &mut e,
            "fogline_rule_exceptions",
            "Records a rule could not decode or evaluate",
            Counter,
            per(&|s| &s.exceptions),
        )?;
        family(
            &mut e,
            "fogline_rule_triggers_fired",
            "IF-THEN triggers a rule fired",
            Counter,
            per(&|s| &s.triggers_fired),
        )
    }
}
