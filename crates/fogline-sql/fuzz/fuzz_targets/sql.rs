//! Feeds arbitrary text to the SQL parser; a `SELECT` that plans against a schemaless
//! JSON stream is then run over a few records (decode, WHERE, windows, projection, ticks,
//! snapshot and restore). Nothing may panic; errors are fine.
#![no_main]

use std::sync::Arc;

use fogline_sql::ast::{Statement, StreamDef, StreamOptions};
use fogline_sql::plan::{Emit, Extensions, Meta, Plan, PlanOptions};
use libfuzzer_sys::fuzz_target;

struct NoSets;

impl Extensions for NoSets {
    fn pattern_set(&self, _: &str) -> Option<Arc<fogline_match::Matcher>> {
        None
    }
}

const RECORDS: &[&str] = &[
    r#"{"a":1,"b":2.5,"c":"x","d":{"e":[1,2,3]},"ts":1000}"#,
    r#"{"a":-7,"b":null,"c":"yy","ts":2500}"#,
    r#"[{"a":3},{"a":4,"ts":99999}]"#,
    r#"not json"#,
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(Statement::Select(select)) = fogline_sql::parse(text) else {
        let _ = fogline_sql::parse_expr(text);
        return;
    };
    let stream = StreamDef {
        name: select.from.clone(),
        fields: Vec::new(),
        options: StreamOptions {
            timestamp: Some("ts".into()),
            ..StreamOptions::default()
        },
    };
    for event_time in [false, true] {
        let opts = PlanOptions {
            is_event_time: event_time,
            late_tolerance_ms: 10,
            ..Default::default()
        };
        let Ok(mut plan) = Plan::new(&select, &stream, opts, Arc::new(NoSets)) else {
            return;
        };
        let mut out: Vec<Emit> = Vec::new();
        for (i, r) in RECORDS.iter().enumerate() {
            let meta = Meta {
                topic: Arc::from("t/x"),
                timestamp_ms: 1000 * i as i64,
            };
            if let Ok(rows) = plan.decode(r.as_bytes()) {
                for row in rows {
                    let _ = plan.push(row, &meta, &mut out);
                }
            }
            let _ = plan.tick(1000 * i as i64 + 500, &mut out);
        }
        let snap = plan.snapshot();
        let _ = plan.restore(&snap);
        let _ = plan.tick(i64::MAX / 2, &mut out);
    }
});
