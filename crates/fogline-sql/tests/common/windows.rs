//! Random window workloads shared by the differential and snapshot tests.

use fogline_sql::{Emit, Plan, PlanOptions, Value};
use proptest::prelude::*;

use super::*;

#[derive(Clone, Debug)]
pub enum Op {
    /// A record: its time (meta time in processing time, event time else) and value.
    Push(i64, i64),
    /// The clock (processing time only).
    Tick(i64),
}

#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Tumbling(i64),
    Hopping(i64, i64),
    Sliding(i64, i64),
    Session(i64, i64),
    Count(i64, i64),
}

impl Kind {
    pub fn sql(self) -> String {
        match self {
            Kind::Tumbling(l) => format!("TUMBLINGWINDOW(ms, {l})"),
            Kind::Hopping(l, h) => format!("HOPPINGWINDOW(ms, {l}, {h})"),
            Kind::Sliding(l, 0) => format!("SLIDINGWINDOW(ms, {l})"),
            Kind::Sliding(l, d) => format!("SLIDINGWINDOW(ms, {l}, {d})"),
            Kind::Session(m, t) => format!("SESSIONWINDOW(ms, {m}, {t})"),
            Kind::Count(n, 0) => format!("COUNTWINDOW({n})"),
            Kind::Count(n, i) => format!("COUNTWINDOW({n}, {i})"),
        }
    }
}

pub type Out = Vec<(i64, i64, Vec<i64>)>;

pub fn engine(kind: Kind, ops: &[Op], event: bool, tol: i64) -> (Out, u64) {
    let mut p = window_plan(kind, event, tol);
    let emits = run_ops(&mut p, ops);
    (outs(&emits), p.late_dropped())
}

/// The rule of the workloads: each window's values, in order, and its bounds.
pub fn window_plan(kind: Kind, event: bool, tol: i64) -> Plan {
    window_plan_sql(
        kind,
        event,
        tol,
        "SELECT collect(v) AS vs, window_start() AS ws, window_end() AS we FROM demo GROUP BY",
    )
}

/// A rule over the workloads: `head` then the window.
pub fn window_plan_sql(kind: Kind, event: bool, tol: i64, head: &str) -> Plan {
    let s = stream(r#"CREATE STREAM demo () WITH (DATASOURCE="demo", TIMESTAMP="ts")"#);
    let sql = format!("{head} {}", kind.sql());
    let opts = PlanOptions {
        is_event_time: event,
        late_tolerance_ms: tol as u64,
        ..Default::default()
    };
    Plan::new(&select(&sql), &s, opts, std::sync::Arc::new(Ext(None))).unwrap()
}

/// Runs the workload's steps.
pub fn run_ops(p: &mut Plan, ops: &[Op]) -> Vec<Emit> {
    let mut emits = Vec::new();
    for op in ops {
        match *op {
            Op::Push(t, v) => {
                let k = v.rem_euclid(3);
                let r = row(&format!(r#"{{"ts":{t},"v":{v},"k":{k}}}"#));
                p.push(r, &meta(t), &mut emits).unwrap();
            }
            Op::Tick(now) => p.tick(now, &mut emits).unwrap(),
        }
    }
    emits
}

/// Each emit's (start, end, values).
pub fn outs(emits: &[Emit]) -> Out {
    emits
        .iter()
        .map(|e| {
            assert_eq!(e.rows.len(), 1);
            let r = &e.rows[0];
            let int = |k: &str| match r[k] {
                Value::Int(i) => i,
                ref v => panic!("{k} is {v:?}"),
            };
            let Value::Array(vs) = &r["vs"] else {
                panic!("vs")
            };
            let vs = vs
                .iter()
                .map(|v| if let Value::Int(i) = v { *i } else { panic!() })
                .collect();
            (int("ws"), int("we"), vs)
        })
        .collect()
}

pub fn kinds() -> impl Strategy<Value = Kind> {
    prop_oneof![
        (1i64..60).prop_map(Kind::Tumbling),
        (1i64..60, 1i64..60).prop_map(|(l, h)| Kind::Hopping(l.max(h), h.min(l))),
        (1i64..60, 0i64..30).prop_map(|(l, d)| Kind::Sliding(l, d)),
        (10i64..120, 1i64..40).prop_map(|(m, t)| Kind::Session(m, t)),
        (1i64..6, 0i64..6).prop_map(|(n, i)| Kind::Count(n, i.min(n))),
    ]
}

pub fn processing_ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec((0u8..4, -10i64..40, -5i64..6), 0..60).prop_map(|steps| {
        let mut t = 1_000;
        steps
            .into_iter()
            .map(|(what, dt, v)| {
                t += dt;
                if what == 0 {
                    t += 20;
                    Op::Tick(t)
                } else {
                    Op::Push(t, v)
                }
            })
            .collect()
    })
}

pub fn event_ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec((0i64..20, -40i64..40, -5i64..6), 0..60).prop_map(|steps| {
        let mut base = 1_000;
        steps
            .into_iter()
            .map(|(dt, jitter, v)| {
                base += dt;
                Op::Push(base + jitter, v)
            })
            .collect()
    })
}
