//! A rule snapshotted mid-stream and restored into a fresh plan emits what an
//! uninterrupted run emits.
mod common;

use common::windows::*;
use proptest::prelude::*;

fn split_run(kind: Kind, ops: &[Op], event: bool, tol: i64, at: usize) -> (Out, u64) {
    let mut a = window_plan(kind, event, tol);
    let mut emits = run_ops(&mut a, &ops[..at]);
    // Through text, as a checkpoint would be stored.
    let saved = a.snapshot().to_string();
    drop(a);
    let mut b = window_plan(kind, event, tol);
    b.restore(&serde_json::from_str(&saved).unwrap()).unwrap();
    emits.extend(run_ops(&mut b, &ops[at..]));
    (outs(&emits), b.late_dropped())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn processing_time_resumes_exactly(kind in kinds(), ops in processing_ops(), at in 0usize..60) {
        let at = at.min(ops.len());
        prop_assert_eq!(split_run(kind, &ops, false, 0, at), engine(kind, &ops, false, 0));
    }

    #[test]
    fn event_time_resumes_exactly(
        kind in kinds(), ops in event_ops(), tol in 0i64..50, at in 0usize..60,
    ) {
        let at = at.min(ops.len());
        prop_assert_eq!(split_run(kind, &ops, true, tol, at), engine(kind, &ops, true, tol));
    }
}

#[test]
fn a_snapshot_keeps_bytes_floats_and_ints_apart() {
    use fogline_sql::{Row, Value};
    let mut p = common::plan("SELECT collect(*) AS all FROM demo GROUP BY COUNTWINDOW(3)");
    let mut out = Vec::new();
    let r = Row::from([
        (
            "b".to_owned(),
            Value::Bytes(bytes::Bytes::from_static(b"\x00\xffab")),
        ),
        ("f".to_owned(), Value::Float(2.0)),
        ("i".to_owned(), Value::Int(2)),
        ("n".to_owned(), Value::Float(f64::INFINITY)),
    ]);
    p.push(r.clone(), &common::meta(1), &mut out).unwrap();
    let saved = p.snapshot();
    let mut q = common::plan("SELECT collect(*) AS all FROM demo GROUP BY COUNTWINDOW(3)");
    q.restore(&saved).unwrap();
    q.push(r.clone(), &common::meta(2), &mut out).unwrap();
    q.push(r.clone(), &common::meta(3), &mut out).unwrap();
    let Value::Array(all) = &out[0].rows[0]["all"] else {
        panic!()
    };
    assert_eq!(all, &vec![Value::Object(r); 3]);
}

#[test]
fn held_records_of_a_rule_without_a_window_survive_a_snapshot() {
    let s = r#"CREATE STREAM demo () WITH (DATASOURCE="demo", TIMESTAMP="ts")"#;
    let opts = fogline_sql::PlanOptions {
        is_event_time: true,
        late_tolerance_ms: 100,
        ..Default::default()
    };
    let sql = "SELECT v FROM demo WHERE v > 1";
    let recs: Vec<(String, i64)> = [(1, 5), (2, 50), (3, 20), (4, 300), (5, 120), (6, 600)]
        .iter()
        .map(|(v, t)| (format!(r#"{{"ts":{t},"v":{v}}}"#), *t))
        .collect();
    let all = |p: &mut fogline_sql::Plan, r: &[(String, i64)]| {
        let r: Vec<(&str, i64)> = r.iter().map(|(j, t)| (j.as_str(), *t)).collect();
        common::run(p, &r)
    };
    let mut whole = common::try_plan(s, sql, opts.clone()).unwrap();
    let want = all(&mut whole, &recs);
    // In time order once the watermark passes; 5 (at 120) comes behind it (200).
    assert_eq!(want, [r#"[{"v":3}]"#, r#"[{"v":2}]"#, r#"[{"v":4}]"#]);
    assert_eq!(whole.late_dropped(), 1);
    let mut a = common::try_plan(s, sql, opts.clone()).unwrap();
    let mut got = all(&mut a, &recs[..3]);
    let saved = a.snapshot();
    let mut b = common::try_plan(s, sql, opts).unwrap();
    b.restore(&saved).unwrap();
    got.extend(all(&mut b, &recs[3..]));
    assert_eq!(got, want);
}

#[test]
fn analytic_state_and_hits_survive_a_snapshot() {
    let sql = "SELECT lag(v) OVER (PARTITION BY k) AS p, acc_sum(v) AS s, \
               changed_col(true, k) AS c, last_hit_count() AS n FROM demo WHERE v > 0";
    let recs: Vec<String> = (0..12)
        .map(|i| format!(r#"{{"k":{},"v":{}}}"#, i % 3, i - 2))
        .collect();
    let recs: Vec<(&str, i64)> = recs.iter().map(|r| (r.as_str(), 0)).collect();
    let want = common::run(&mut common::plan(sql), &recs);
    for at in 0..recs.len() {
        let mut a = common::plan(sql);
        let mut got = common::run(&mut a, &recs[..at]);
        let saved = serde_json::to_string(&a.snapshot()).unwrap();
        let mut b = common::plan(sql);
        b.restore(&serde_json::from_str(&saved).unwrap()).unwrap();
        got.extend(common::run(&mut b, &recs[at..]));
        assert_eq!(got, want, "split at {at}");
    }
}
