//! Rules without a window: WHERE and projection, names, plan-time checks.
mod common;

use common::*;
use fogline_sql::{PlanOptions, SqlError};

#[test]
fn filters_and_projects_with_ekuiper_names() {
    let mut p = plan(
        "SELECT temp, temp * 2 AS double, humidity + 1, abs(temp), meta(topic) AS t \
         FROM demo WHERE temp > 20",
    );
    let got = run(
        &mut p,
        &[(r#"{"temp":25,"humidity":1.5}"#, 1), (r#"{"temp":10}"#, 2)],
    );
    assert_eq!(
        got,
        [r#"[{"abs":25,"double":50,"kuiper_field_0":2.5,"t":"demo","temp":25}]"#]
    );
    let s = p.stats();
    assert_eq!((s[1].records_in, s[1].records_out), (2, 1));
}

#[test]
fn star_passes_the_row_and_wins_over_later_duplicates() {
    let mut p = plan("SELECT *, 1 AS a FROM demo");
    assert_eq!(
        run(&mut p, &[(r#"{"a":5,"b":"x"}"#, 0)]),
        [r#"[{"a":5,"b":"x"}]"#]
    );
}

#[test]
fn expressions_follow_ekuiper() {
    let mut p = plan(
        "SELECT 7 / 2 AS q, 7.0 / 2 AS f, a->b AS ab, arr[-1] AS last, arr[1:] AS tail, \
         name LIKE 'ab%' AS l, n IN (1, 2) AS i, n BETWEEN 1 AND 3 AS bt, \
         CASE WHEN n > 1 THEN 'big' ELSE 'small' END AS c, missing + 1 AS nul, \
         n = 2.0 AS eq FROM demo",
    );
    assert_eq!(
        run(
            &mut p,
            &[(r#"{"a":{"b":3},"arr":[1,2,3],"name":"abc","n":2}"#, 0)]
        ),
        [concat!(
            r#"[{"ab":3,"bt":true,"c":"big","eq":true,"f":3.5,"i":true,"l":true,"#,
            r#""last":3,"q":3,"tail":[2,3]}]"#
        )]
    );
}

#[test]
fn eval_errors_are_counted_and_the_rule_goes_on() {
    let mut p = plan("SELECT a / b AS r FROM demo");
    let mut out = Vec::new();
    let e = p.push(row(r#"{"a":1,"b":0}"#), &meta(0), &mut out);
    assert!(matches!(e, Err(SqlError::Eval(_))), "{e:?}");
    let e = p.push(row(r#"{"a":"x","b":1}"#), &meta(0), &mut out);
    assert!(e.is_err());
    p.push(row(r#"{"a":6,"b":4}"#), &meta(0), &mut out).unwrap();
    assert_eq!(text(&out), [r#"[{"r":1}]"#]);
    let s = &p.stats()[3];
    assert_eq!((s.exceptions, s.records_out), (2, 1));
    assert!(s.last_exception.is_some());
}

#[test]
fn plan_checks_names_functions_and_aggregates() {
    let o = PlanOptions::default;
    let typed = r#"CREATE STREAM demo (temp FLOAT, id BIGINT) WITH (DATASOURCE="d")"#;
    let bad = [
        (DEMO, "SELECT a FROM other"),
        (DEMO, "SELECT nosuch(a) FROM demo"),
        (DEMO, "SELECT abs(a, b) FROM demo"),
        (DEMO, "SELECT avg(a) FROM demo"),
        (
            DEMO,
            "SELECT a FROM demo WHERE count(*) > 1 GROUP BY TUMBLINGWINDOW(ss, 1)",
        ),
        (DEMO, "SELECT x.a FROM demo"),
        (typed, "SELECT humidity FROM demo"),
        (DEMO, "SELECT anomaly_score(a, 'nosuch') FROM demo"),
        (DEMO, "SELECT a FROM demo GROUP BY a"),
    ];
    for (s, q) in bad {
        assert!(matches!(try_plan(s, q, o()), Err(SqlError::Plan(_))), "{q}");
    }
    let good = [
        (typed, "SELECT temp, demo.id FROM demo WHERE temp > 1"),
        (DEMO, "SELECT d.a FROM demo AS d"),
        (
            DEMO,
            "SELECT avg(a) AS m FROM demo GROUP BY TUMBLINGWINDOW(ss, 1) HAVING m > 1",
        ),
    ];
    for (s, q) in good {
        try_plan(s, q, o()).unwrap_or_else(|e| panic!("{q}: {e}"));
    }
}

#[test]
fn matchers_and_detectors_run_per_row() {
    use std::sync::Arc;
    let m = fogline_match::Matcher::new([(0u32, "err", false), (1, "fail", true)]).unwrap();
    let sel = select(
        "SELECT match_count(msg, 'words') AS n, matches(msg, 'words') AS hit, \
         anomaly_score(v, 'ewma') AS s, is_anomaly(v, 'ewma', 0.9) AS a FROM demo",
    );
    let mut p = fogline_sql::Plan::new(
        &sel,
        &stream(DEMO),
        PlanOptions::default(),
        Arc::new(Ext(Some(Arc::new(m)))),
    )
    .unwrap();
    let mut out = Vec::new();
    for i in 0..150 {
        let v = if i == 149 { 1000.0 } else { (i % 3) as f64 };
        let r = format!(r#"{{"msg":"an err and a FAIL","v":{v}}}"#);
        p.push(row(&r), &meta(i * 1000), &mut out).unwrap();
    }
    let last = &out[149].rows[0];
    assert_eq!(last["n"], fogline_sql::Value::Int(2));
    assert_eq!(last["hit"], fogline_sql::Value::Bool(true));
    assert_eq!(last["a"], fogline_sql::Value::Bool(true));
    let first = &out[5].rows[0];
    assert_eq!(first["s"], fogline_sql::Value::Float(0.0), "warming up");

    let mut p = try_plan(
        DEMO,
        "SELECT matches(msg, 'nope') FROM demo",
        PlanOptions::default(),
    )
    .unwrap();
    let e = p.push(row(r#"{"msg":"x"}"#), &meta(0), &mut Vec::new());
    assert!(matches!(e, Err(SqlError::Eval(m)) if m.contains("nope")));
}

#[test]
fn decode_counts_in_the_stats() {
    let p = plan("SELECT * FROM demo");
    p.decode(br#"[{"a":1},{"a":2}]"#).unwrap();
    assert!(p.decode(b"nope").is_err());
    let s = &p.stats()[0];
    assert_eq!(s.name, "decode");
    assert_eq!((s.records_in, s.records_out, s.exceptions), (2, 2, 1));
}

#[test]
fn a_plan_moves_between_threads() {
    fn send<T: Send>() {}
    send::<fogline_sql::Plan>();
}

#[test]
fn windows_of_no_size_are_plan_errors() {
    use fogline_sql::ast::WindowKind;
    let kinds = [
        WindowKind::Tumbling { length_ms: 0 },
        WindowKind::Hopping {
            length_ms: 5,
            hop_ms: 6,
        },
        WindowKind::Session {
            max_length_ms: 5,
            timeout_ms: 0,
        },
        WindowKind::Count {
            count: 2,
            interval: 3,
        },
    ];
    for k in kinds {
        let mut sel = select("SELECT count(*) FROM demo GROUP BY TUMBLINGWINDOW(ss, 1)");
        sel.window.as_mut().unwrap().kind = k.clone();
        let p = fogline_sql::Plan::new(
            &sel,
            &stream(DEMO),
            PlanOptions::default(),
            std::sync::Arc::new(Ext(None)),
        );
        assert!(matches!(p, Err(SqlError::Plan(_))), "{k:?}");
    }
}
