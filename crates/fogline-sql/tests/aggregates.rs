//! Aggregates against results computed directly, on random groups with NULLs, and the
//! examples of eKuiper's aggregate docs (docs/en_US/sqls/functions/aggregate_functions.md).
mod common;

use common::*;
use fogline_sql::Value;
use proptest::prelude::*;

const SQL: &str = "SELECT count(*) AS n, count(v) AS c, sum(v) AS s, avg(v) AS a, min(v) AS mn, \
    max(v) AS mx, stddev(v) AS sd, stddevs(v) AS sds, var(v) AS va, vars(v) AS vas, \
    median(v) AS md, percentile_cont(v, 0.25) AS p, percentile_disc(v, 0.25) AS pd, \
    last_value(v, true) AS lv, last_value(v, false) AS lvn, \
    sum(v) FILTER (WHERE v > 0) AS sp, count(*) FILTER (WHERE v IS NULL) AS nn \
    FROM demo GROUP BY COUNTWINDOW(";

fn close(a: &Value, b: f64) -> bool {
    let a = a.as_f64().expect("a number");
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn check(vals: &[Option<Value>]) -> Result<(), TestCaseError> {
    let mut p = plan(&format!("{SQL}{})", vals.len()));
    let mut out = Vec::new();
    for (i, v) in vals.iter().enumerate() {
        let mut r = fogline_sql::Row::new();
        if let Some(v) = v {
            r.insert("v".into(), v.clone());
        }
        p.push(r, &meta(i as i64), &mut out).unwrap();
    }
    prop_assert_eq!(out.len(), 1);
    // NULL results are left out of rows, as eKuiper does.
    let mut r = out[0].rows[0].clone();
    for k in [
        "n", "c", "s", "a", "mn", "mx", "sd", "sds", "va", "vas", "md", "p", "pd", "lv", "lvn",
        "sp", "nn",
    ] {
        r.entry(k.to_owned()).or_insert(Value::Null);
    }
    let r = &r;
    let nn: Vec<&Value> = vals.iter().flatten().filter(|v| !v.is_null()).collect();
    let xs: Vec<f64> = nn.iter().map(|v| v.as_f64().unwrap()).collect();
    let n = xs.len();
    prop_assert_eq!(&r["n"], &Value::Int(vals.len() as i64));
    prop_assert_eq!(&r["c"], &Value::Int(n as i64));
    let nulls = vals.len() - n;
    prop_assert_eq!(&r["nn"], &Value::Int(nulls as i64));
    let all_int = nn.iter().all(|v| matches!(v, Value::Int(_)));
    if n == 0 {
        for k in ["s", "a", "mn", "mx", "sd", "va", "md", "p", "pd", "lv"] {
            prop_assert_eq!(&r[k], &Value::Null, "{}", k);
        }
        return Ok(());
    }
    if all_int {
        let s: i64 = nn
            .iter()
            .map(|v| if let Value::Int(i) = v { *i } else { 0 })
            .sum();
        prop_assert_eq!(&r["s"], &Value::Int(s));
    } else {
        prop_assert!(matches!(r["s"], Value::Float(_)));
        prop_assert!(close(&r["s"], xs.iter().sum()));
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    prop_assert!(matches!(r["a"], Value::Float(_)));
    prop_assert!(close(&r["a"], mean));
    let mut sorted = xs.clone();
    sorted.sort_by(f64::total_cmp);
    prop_assert!(close(&r["mn"], sorted[0]));
    prop_assert!(close(&r["mx"], sorted[n - 1]));
    let ss: f64 = xs.iter().map(|x| (x - mean).powi(2)).sum();
    prop_assert!(close(&r["va"], ss / n as f64));
    prop_assert!(close(&r["sd"], (ss / n as f64).sqrt()));
    if n > 1 {
        prop_assert!(close(&r["vas"], ss / (n - 1) as f64));
        prop_assert!(close(&r["sds"], (ss / (n - 1) as f64).sqrt()));
    } else {
        prop_assert_eq!(&r["vas"], &Value::Null);
    }
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    prop_assert!(close(&r["md"], median));
    // Continuous: interpolated at 0.25 (n - 1); discrete: the first reaching 25%.
    let pos = 0.25 * (n - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    prop_assert!(close(
        &r["p"],
        sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
    ));
    let k = (0.25 * n as f64).ceil().max(1.0) as usize;
    prop_assert!(close(&r["pd"], sorted[k - 1]));
    prop_assert_eq!(&r["lv"], *nn.last().unwrap());
    let last = vals.last().unwrap().clone().unwrap_or_default();
    prop_assert_eq!(&r["lvn"], &last);
    let pos_sum: Vec<&&Value> = nn.iter().filter(|v| v.as_f64().unwrap() > 0.0).collect();
    if pos_sum.is_empty() {
        prop_assert_eq!(&r["sp"], &Value::Null);
    } else {
        prop_assert!(close(
            &r["sp"],
            pos_sum.iter().map(|v| v.as_f64().unwrap()).sum()
        ));
    }
    Ok(())
}

fn value() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        4 => (-1000i64..1000).prop_map(|i| Some(Value::Int(i))),
        2 => (-1000.0f64..1000.0).prop_map(|f| Some(Value::Float(f))),
        1 => Just(Some(Value::Null)),
        1 => Just(None),
    ]
}

proptest! {
    #[test]
    fn aggregates_match_direct_computation(vals in prop::collection::vec(value(), 1..40)) {
        check(&vals)?;
    }

    #[test]
    fn integer_sums_stay_exact(vals in prop::collection::vec(
        (i64::MIN / 64..i64::MAX / 64).prop_map(|i| Some(Value::Int(i))), 1..30)) {
        check(&vals)?;
    }
}

/// The collect, merge_agg and deduplicate examples of eKuiper's aggregate docs.
#[test]
fn ekuiper_doc_examples() {
    let win = "FROM demo GROUP BY COUNTWINDOW(2)";
    let two = [
        (r#"{"a":32,"b":"hello"}"#, 0),
        (r#"{"a":45,"b":"world"}"#, 1),
    ];
    let mut p = plan(&format!("SELECT collect(a) AS r1 {win}"));
    assert_eq!(run(&mut p, &two), [r#"[{"r1":[32,45]}]"#]);
    let mut p = plan(&format!("SELECT collect(*) AS r1 {win}"));
    assert_eq!(
        run(&mut p, &two),
        [r#"[{"r1":[{"a":32,"b":"hello"},{"a":45,"b":"world"}]}]"#]
    );
    let mut p = plan(&format!("SELECT collect(*)[1]->a AS r1 {win}"));
    assert_eq!(run(&mut p, &two), [r#"[{"r1":45}]"#]);

    let three = [
        (r#"{"a":{"a":2},"b":2,"c":3}"#, 0),
        (r#"{"a":{"b":2},"b":5,"d":6}"#, 1),
        (r#"{"a":{"a":3},"b":8}"#, 2),
    ];
    let win = "FROM demo GROUP BY COUNTWINDOW(3)";
    let mut p = plan(&format!("SELECT merge_agg(*) AS r1 {win}"));
    assert_eq!(
        run(&mut p, &three),
        [r#"[{"r1":{"a":{"a":3},"b":8,"c":3,"d":6}}]"#]
    );
    let mut p = plan(&format!("SELECT merge_agg(a) AS r1 {win}"));
    assert_eq!(run(&mut p, &three), [r#"[{"r1":{"a":3,"b":2}}]"#]);
    let mut p = plan(&format!("SELECT merge_agg(b) AS r1 {win}"));
    assert_eq!(run(&mut p, &three), [r#"[{"r1":{}}]"#]);

    let dup = [(r#"{"a":32}"#, 0), (r#"{"a":45}"#, 1), (r#"{"a":32}"#, 2)];
    let mut p = plan(&format!("SELECT deduplicate(a, true) AS r1 {win}"));
    assert_eq!(run(&mut p, &dup), [r#"[{"r1":[{"a":32},{"a":45}]}]"#]);
    // The latest row when it is new, else nothing: the docs' `[{}]`.
    let mut p =
        plan("SELECT deduplicate(a, false)->a AS r1 FROM demo GROUP BY SLIDINGWINDOW(hh, 1)");
    assert_eq!(
        run(&mut p, &dup),
        [r#"[{"r1":32}]"#, r#"[{"r1":45}]"#, r#"[{}]"#]
    );
}
