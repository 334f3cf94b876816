//! Odd rules over odd records do not panic: errors are fine (as the fuzz target demands).
mod common;

use std::sync::Arc;

use common::*;
use fogline_sql::{Plan, PlanOptions};
use proptest::prelude::*;

const RULES: &[&str] = &[
    "SELECT * FROM demo WHERE a > {n}",
    "SELECT a / {n} AS x, a % {n} AS y, -a AS z, a * {n} AS w FROM demo",
    "SELECT arr[{n}] AS i, arr[{n}:{n}] AS s, s[{n}:] AS t FROM demo",
    "SELECT lag(a, {n}) AS l, latest(a) AS la, acc_sum(a) AS s FROM demo",
    "SELECT percentile_cont(a, {f}) AS p, percentile_disc(a, {f}) AS q FROM demo \
     GROUP BY COUNTWINDOW(3)",
    "SELECT count(*), sum(a), avg(a), stddevs(a), median(a) FROM demo \
     GROUP BY TUMBLINGWINDOW(ms, {n})",
    "SELECT collect(a) FROM demo GROUP BY HOPPINGWINDOW(ms, {n}, {n})",
    "SELECT collect(a) FROM demo GROUP BY SLIDINGWINDOW(ms, {n}, {n})",
    "SELECT collect(a) FROM demo GROUP BY SESSIONWINDOW(ms, {n}, {n})",
    "SELECT collect(a) FROM demo GROUP BY COUNTWINDOW({n}, {n})",
    "SELECT a FROM demo GROUP BY a, TUMBLINGWINDOW(ms, 10) HAVING sum(a) > {n} \
     ORDER BY a DESC LIMIT {n}",
    "SELECT anomaly_score(a, 'ewma') AS s, is_anomaly(a, 'cusum', {f}) AS b FROM demo",
    "SELECT changed_cols('c_', true, *) FROM demo",
];

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        any::<f64>().prop_map(|f| if f.is_finite() {
            format!("{f:?}")
        } else {
            "null".into()
        }),
        Just("null".to_owned()),
        Just(r#""text""#.to_owned()),
        Just("[1,2,3]".to_owned()),
        Just(r#"{"b":1}"#.to_owned()),
    ]
}

proptest! {
    #[test]
    fn nothing_panics(
        rule in 0..RULES.len(),
        n in prop_oneof![any::<i64>(), -3i64..30],
        f in any::<f64>(),
        event in any::<bool>(),
        tol in 0u64..100,
        recs in prop::collection::vec((value(), value(), any::<i64>()), 0..12),
        ticks in prop::collection::vec(any::<i64>(), 0..3),
    ) {
        let f = if f.is_finite() { format!("{f:?}") } else { "0.5".into() };
        let sql = RULES[rule].replace("{n}", &n.to_string()).replace("{f}", &f);
        let Ok(fogline_sql::ast::Statement::Select(sel)) = fogline_sql::parse(&sql) else {
            return Ok(());
        };
        let s = stream(r#"CREATE STREAM demo () WITH (DATASOURCE="demo", TIMESTAMP="ts")"#);
        let opts = PlanOptions {
            is_event_time: event,
            late_tolerance_ms: tol,
            ..PlanOptions::default()
        };
        let Ok(mut p) = Plan::new(&sel, &s, opts, Arc::new(Ext(None))) else {
            return Ok(());
        };
        let mut out = Vec::new();
        for (a, arr, ts) in &recs {
            let j = format!(r#"{{"a":{a},"arr":{arr},"s":"héllo","ts":{ts}}}"#);
            if let Ok(rows) = p.decode(j.as_bytes()) {
                for r in rows {
                    let _ = p.push(r, &meta(*ts), &mut out);
                }
            }
        }
        let snap = p.snapshot();
        let _ = p.restore(&snap);
        for t in ticks {
            let _ = p.tick(t, &mut out);
            let _ = p.next_tick();
        }
        let _ = p.tick(i64::MAX, &mut out);
    }
}
