//! IF-THEN triggers: R-Pulsar's data-driven decisions (paper 004, section IV-D2). A rule's
//! `triggers` are a rule set evaluated on each result row the rule makes (one per record
//! for a plain rule, one per group for a windowed one). Every trigger whose condition (IF)
//! holds joins the conflict set; of it, the one with the highest priority fires (the first
//! declared among equals) and its consequence (THEN) is carried out. One fires per row, as
//! in the paper's loop, which ends when a rule has fired.
//!
//! `{"name": "hot", "priority": 10, "if": "temperature > 80", "fire": "once" | "always",
//!   "then": {"publish": {"topic": "alarms/{id}"}}}`. The consequence is an action (a sink
//! of the rule's kinds), or `{"function": {"start": "<name>", "source": "<filter>",
//! "output": "<topic>"}}` / `{"function": {"stop": "<name>"}}`. A `once` trigger fires the
//! first time and never again while the rule runs (its state is part of a qos 1 rule's
//! checkpoint, so a restart does not fire it again).

use std::sync::Arc;

use fogline_sql::ast::{Select, SelectField, StreamDef, StreamOptions};
use fogline_sql::plan::{Emit, Extensions, Meta, Plan, PlanOptions};
use fogline_sql::{Row, SqlError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use crate::sink::SinkConfig;

/// One trigger as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerSpec {
    /// Its name, in status and logs.
    pub name: String,
    /// Higher fires first.
    #[serde(default)]
    pub priority: i64,
    /// The condition: an SQL expression over the result row.
    #[serde(rename = "if")]
    pub condition: String,
    /// `once` or `always` (default).
    #[serde(default)]
    pub fire: Fire,
    /// The consequence.
    pub then: Map<String, Json>,
}

/// How often a trigger may fire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fire {
    /// Once while the rule runs.
    Once,
    /// Every time it wins the conflict set.
    #[default]
    Always,
}

/// What a fired trigger does.
#[derive(Clone, Debug)]
pub enum Consequence {
    /// Send the row to a sink.
    Action(SinkConfig),
    /// Start a stored function on a source, publishing to an output topic.
    Start {
        /// The function.
        function: String,
        /// Its source: a topic filter.
        source: String,
        /// Where its results go.
        output: String,
    },
    /// Stop a function's running instances.
    Stop {
        /// The function.
        function: String,
    },
}

/// A compiled trigger.
pub struct Trigger {
    /// As written.
    pub spec: TriggerSpec,
    /// Its consequence.
    pub consequence: Consequence,
    condition: Plan,
    /// It fired (matters for `once`).
    pub fired: bool,
    /// Times it fired.
    pub fired_count: u64,
}

impl Trigger {
    /// Compiles a trigger.
    ///
    /// # Errors
    /// A condition that does not parse or plan, or a bad consequence.
    pub fn compile(spec: &TriggerSpec, ext: Arc<dyn Extensions>) -> Result<Trigger, String> {
        let name = &spec.name;
        let expr = fogline_sql::parse_expr(&spec.condition)
            .map_err(|e| format!("trigger {name}: if: {e}"))?;
        let select = Select {
            fields: vec![SelectField {
                expr: fogline_sql::ast::Expr::Wildcard { stream: None },
                alias: None,
            }],
            from: "result".into(),
            from_alias: None,
            filter: Some(expr),
            group_by: Vec::new(),
            window: None,
            having: None,
            order_by: Vec::new(),
            limit: None,
        };
        let stream = StreamDef {
            name: "result".into(),
            fields: Vec::new(),
            options: StreamOptions::default(),
        };
        let condition = Plan::new(&select, &stream, PlanOptions::default(), ext)
            .map_err(|e| format!("trigger {name}: if: {e}"))?;
        Ok(Trigger {
            consequence: consequence(name, &spec.then)?,
            spec: spec.clone(),
            condition,
            fired: false,
            fired_count: 0,
        })
    }

    fn holds(&mut self, row: &Row, meta: &Meta) -> Result<bool, SqlError> {
        if self.fired && self.spec.fire == Fire::Once {
            return Ok(false);
        }
        let mut out: Vec<Emit> = Vec::new();
        self.condition.push(row.clone(), meta, &mut out)?;
        Ok(out.iter().any(|e| !e.rows.is_empty()))
    }
}

fn consequence(name: &str, then: &Map<String, Json>) -> Result<Consequence, String> {
    if let Some(f) = then.get("function") {
        let get = |k: &str| f.get(k).and_then(Json::as_str).map(str::to_string);
        return match (get("start"), get("stop")) {
            (Some(function), None) => Ok(Consequence::Start {
                function,
                source: get("source")
                    .ok_or_else(|| format!("trigger {name}: function start needs a source"))?,
                output: get("output")
                    .ok_or_else(|| format!("trigger {name}: function start needs an output"))?,
            }),
            (None, Some(function)) => Ok(Consequence::Stop { function }),
            _ => Err(format!(
                "trigger {name}: then.function needs one of start or stop"
            )),
        };
    }
    SinkConfig::parse(then)
        .map(Consequence::Action)
        .map_err(|e| format!("trigger {name}: then: {e}"))
}

/// A rule's triggers, in declared order.
pub struct RuleSet {
    /// The triggers.
    pub triggers: Vec<Trigger>,
    /// Conditions that failed to evaluate.
    pub exceptions: u64,
}

impl RuleSet {
    /// Compiles every trigger.
    ///
    /// # Errors
    /// The first trigger that does not compile.
    pub fn compile(specs: &[TriggerSpec], ext: Arc<dyn Extensions>) -> Result<RuleSet, String> {
        Ok(RuleSet {
            triggers: specs
                .iter()
                .map(|s| Trigger::compile(s, ext.clone()))
                .collect::<Result<_, _>>()?,
            exceptions: 0,
        })
    }

    /// Evaluates the set on one row: the index of the trigger that fires, if any. A
    /// condition that cannot be evaluated on the row counts as false and as an exception.
    pub fn fire(&mut self, row: &Row, meta: &Meta) -> Option<usize> {
        let mut best: Option<usize> = None;
        for i in 0..self.triggers.len() {
            match self.triggers[i].holds(row, meta) {
                Ok(true) => {
                    if best.is_none_or(|b| {
                        self.triggers[i].spec.priority > self.triggers[b].spec.priority
                    }) {
                        best = Some(i);
                    }
                }
                Ok(false) => {}
                Err(_) => self.exceptions += 1,
            }
        }
        let i = best?;
        let t = &mut self.triggers[i];
        t.fired = true;
        t.fired_count += 1;
        Some(i)
    }

    /// The names of the `once` triggers that fired (for a checkpoint).
    pub fn fired_once(&self) -> Vec<String> {
        self.triggers
            .iter()
            .filter(|t| t.fired && t.spec.fire == Fire::Once)
            .map(|t| t.spec.name.clone())
            .collect()
    }

    /// Marks `once` triggers as fired (from a checkpoint).
    pub fn restore_fired(&mut self, names: &[String]) {
        for t in &mut self.triggers {
            if names.contains(&t.spec.name) {
                t.fired = true;
            }
        }
    }
}
