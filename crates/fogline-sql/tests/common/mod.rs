//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::Arc;

pub mod windows;

use fogline_sql::ast::{Select, Statement, StreamDef};
use fogline_sql::{parse, Emit, Extensions, Meta, Plan, PlanOptions, Row, Value};

/// No pattern sets, or one named `words`.
pub struct Ext(pub Option<Arc<fogline_match::Matcher>>);

impl Extensions for Ext {
    fn pattern_set(&self, name: &str) -> Option<Arc<fogline_match::Matcher>> {
        (name == "words").then(|| self.0.clone()).flatten()
    }
}

pub fn stream(sql: &str) -> StreamDef {
    match parse(sql).expect("stream parses") {
        Statement::CreateStream(s) => s,
        s => panic!("not a stream: {s:?}"),
    }
}

pub fn select(sql: &str) -> Select {
    match parse(sql).expect("select parses") {
        Statement::Select(s) => s,
        s => panic!("not a select: {s:?}"),
    }
}

pub const DEMO: &str = r#"CREATE STREAM demo () WITH (DATASOURCE="demo", FORMAT="json")"#;

pub fn try_plan(
    stream_sql: &str,
    sql: &str,
    opts: PlanOptions,
) -> Result<Plan, fogline_sql::SqlError> {
    Plan::new(&select(sql), &stream(stream_sql), opts, Arc::new(Ext(None)))
}

pub fn plan(sql: &str) -> Plan {
    try_plan(DEMO, sql, PlanOptions::default()).expect("plans")
}

pub fn meta(ts: i64) -> Meta {
    Meta {
        topic: Arc::from("demo"),
        timestamp_ms: ts,
    }
}

pub fn row(json: &str) -> Row {
    match Value::from_json(json.as_bytes()).expect("json") {
        Value::Object(o) => o,
        v => panic!("not an object: {v:?}"),
    }
}

/// Rows of the emits as JSON text, one emit a line.
pub fn text(out: &[Emit]) -> Vec<String> {
    out.iter()
        .map(|e| {
            let rows: Vec<serde_json::Value> = e
                .rows
                .iter()
                .map(|r| Value::Object(r.clone()).to_json())
                .collect();
            serde_json::Value::Array(rows).to_string()
        })
        .collect()
}

/// Pushes `(json, ts)` records, returning what was emitted.
pub fn run(plan: &mut Plan, records: &[(&str, i64)]) -> Vec<String> {
    let mut out = Vec::new();
    for (j, ts) in records {
        plan.push(row(j), &meta(*ts), &mut out).expect("push");
    }
    text(&out)
}
