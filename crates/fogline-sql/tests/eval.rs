//! Expressions with eKuiper's semantics, one per row through `SELECT <expr> AS x`.
mod common;

use common::*;
use fogline_sql::{SqlError, Value};

const ROW: &str = r#"{"i":7,"f":2.5,"s":"abc","n":null,"b":true,
    "arr":[1,2,3,4],"obj":{"x":{"y":[10,20]}},"z":0}"#;

fn eval(expr: &str) -> Result<Value, SqlError> {
    let mut p = plan(&format!("SELECT {expr} AS x FROM demo"));
    let mut out = Vec::new();
    p.push(row(ROW), &meta(1_234), &mut out)?;
    // NULL results are left out of rows, as eKuiper does.
    Ok(out[0].rows[0].get("x").cloned().unwrap_or_default())
}

fn json(expr: &str) -> String {
    eval(expr)
        .unwrap_or_else(|e| panic!("{expr}: {e}"))
        .to_json()
        .to_string()
}

#[test]
fn arithmetic_and_null_propagation() {
    let cases = [
        ("i + 1", "8"),
        ("i / 2", "3"),
        ("-i / 2", "-3"),
        ("i % 4", "3"),
        ("i * f", "17.5"),
        ("f / 2", "1.25"),
        ("i + n", "null"),
        ("-n", "null"),
        ("missing * 2", "null"),
        ("i & 3", "3"),
        ("i | 8", "15"),
        ("i ^ 1", "6"),
    ];
    for (e, want) in cases {
        assert_eq!(json(e), want, "{e}");
    }
    for e in ["i / z", "f / 0", "i % z", "s + 'd'", "s * 2", "b + 1"] {
        assert!(matches!(eval(e), Err(SqlError::Eval(_))), "{e}");
    }
}

#[test]
fn comparisons_and_three_valued_logic() {
    let cases = [
        ("i > f", "true"),
        ("i = 7.0", "true"),
        ("s < 'abd'", "true"),
        ("i != 7", "false"),
        ("i <> 8", "true"),
        ("n = 1", "null"),
        ("n > 1", "null"),
        ("n AND false", "false"),
        ("n AND true", "null"),
        ("n OR true", "true"),
        ("n OR false", "null"),
        ("NOT b", "false"),
        ("NOT n", "null"),
        ("n IS NULL", "true"),
        ("missing IS NULL", "true"),
        ("i IS NOT NULL", "true"),
    ];
    for (e, want) in cases {
        assert_eq!(json(e), want, "{e}");
    }
    assert!(eval("s > 1").is_err());
    assert!(
        eval("s = 1").is_err(),
        "eKuiper: invalid operation string = int64"
    );
    assert_eq!(json("s IN (1, 'abc')"), "true");
}

#[test]
fn structs_arrays_and_slices() {
    let cases = [
        ("obj->x->y", "[10,20]"),
        ("obj->x->y[1]", "20"),
        ("obj->nope", "null"),
        ("n->x", "null"),
        ("arr[0]", "1"),
        ("arr[-1]", "4"),
        ("arr[-4]", "1"),
        ("arr[1:3]", "[2,3]"),
        ("arr[:2]", "[1,2]"),
        ("arr[2:]", "[3,4]"),
        ("arr[-2:]", "[3,4]"),
        ("arr[3:1]", "[]"),
        ("n[0]", "null"),
    ];
    for (e, want) in cases {
        assert_eq!(json(e), want, "{e}");
    }
    assert!(eval("arr[4]").is_err());
    assert!(eval("arr[-5]").is_err());
    assert!(eval("i->x").is_err());
}

#[test]
fn like_in_between_case() {
    let cases = [
        ("s LIKE 'a%'", "true"),
        ("s LIKE '_b_'", "true"),
        ("s NOT LIKE '%c'", "false"),
        ("n LIKE 'a%'", "null"),
        ("i IN (1, 7)", "true"),
        ("i IN (7.0)", "true"),
        ("i NOT IN (1, 2)", "true"),
        ("n IN (1)", "null"),
        ("i BETWEEN 7 AND 8", "true"),
        ("f BETWEEN 3 AND 4", "false"),
        ("f NOT BETWEEN 3 AND 4", "true"),
        ("n BETWEEN 1 AND 2", "null"),
        (
            "CASE WHEN i > 5 THEN 'big' WHEN i > 1 THEN 'mid' END",
            r#""big""#,
        ),
        ("CASE WHEN i > 50 THEN 'big' END", "null"),
        (
            "CASE i WHEN 1 THEN 'one' WHEN 7 THEN 'seven' ELSE 'other' END",
            r#""seven""#,
        ),
        ("CASE s WHEN 'x' THEN 1 ELSE 0 END", "0"),
    ];
    for (e, want) in cases {
        assert_eq!(json(e), want, "{e}");
    }
}

#[test]
fn meta_and_qualified_names() {
    assert_eq!(json("meta(topic)"), r#""demo""#);
    assert_eq!(json("meta(timestamp)"), "1234");
    assert_eq!(json("meta(*)"), r#"{"timestamp":1234,"topic":"demo"}"#);
    assert_eq!(json("demo.i"), "7");
    assert_eq!(json("window_start()"), "0", "eKuiper: 0 without a window");
}

#[test]
fn event_time_and_mqtt_topic() {
    assert_eq!(json("event_time()"), "1234");
    assert_eq!(json("mqtt(topic)"), r#""demo""#);
    let s = r#"CREATE STREAM demo () WITH (DATASOURCE="demo", TIMESTAMP="i")"#;
    let opts = fogline_sql::PlanOptions {
        is_event_time: true,
        late_tolerance_ms: 0,
        ..Default::default()
    };
    let mut p = try_plan(s, "SELECT event_time() AS x FROM demo", opts).unwrap();
    let mut out = Vec::new();
    p.push(row(ROW), &meta(1_234), &mut out).unwrap();
    // Held until the watermark passes it (as eKuiper's watermark holds records).
    assert!(out.is_empty());
    p.push(row(r#"{"i":9}"#), &meta(1_235), &mut out).unwrap();
    assert_eq!(out[0].rows[0]["x"], Value::Int(7));
}

#[test]
fn last_hit_reads_the_hits_before_this_one() {
    let mut p = plan("SELECT last_hit_count() AS c, last_hit_time() AS t FROM demo WHERE v > 0");
    let got = run(
        &mut p,
        &[(r#"{"v":1}"#, 10), (r#"{"v":-1}"#, 20), (r#"{"v":2}"#, 30)],
    );
    assert_eq!(got, [r#"[{"c":0,"t":0}]"#, r#"[{"c":1,"t":10}]"#]);
    let e = try_plan(
        DEMO,
        "SELECT last_agg_hit_count() FROM demo",
        Default::default(),
    );
    assert!(matches!(e, Err(SqlError::Plan(_))));
}
