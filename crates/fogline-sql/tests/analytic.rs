//! eKuiper's analytic functions with the inputs and outputs of their docs
//! (docs/en_US/sqls/functions/analytic_functions.md).
mod common;

use common::*;

/// The docs' eight records of temperature and humidity.
fn records() -> Vec<(String, i64)> {
    let th = [
        (23, 88),
        (23, 88),
        (23, 88),
        (25, 88),
        (25, 90),
        (25, 91),
        (25, 91),
        (25, 91),
    ];
    th.iter()
        .enumerate()
        .map(|(i, (t, h))| {
            (
                format!(r#"{{"ts":{},"temperature":{t},"humidity":{h}}}"#, i + 1),
                i as i64,
            )
        })
        .collect()
}

fn go(sql: &str) -> Vec<String> {
    let recs = records();
    let recs: Vec<(&str, i64)> = recs.iter().map(|(j, t)| (j.as_str(), *t)).collect();
    run(&mut plan(sql), &recs)
}

#[test]
fn had_changed_in_where() {
    let got = go("SELECT ts, temperature, humidity FROM demo \
         WHERE HAD_CHANGED(true, temperature, humidity) = true");
    assert_eq!(
        got,
        [
            r#"[{"humidity":88,"temperature":23,"ts":1}]"#,
            r#"[{"humidity":88,"temperature":25,"ts":4}]"#,
            r#"[{"humidity":90,"temperature":25,"ts":5}]"#,
            r#"[{"humidity":91,"temperature":25,"ts":6}]"#
        ]
    );
    let got = go("SELECT ts FROM demo \
         WHERE HAD_CHANGED(true, temperature) = true AND HAD_CHANGED(true, humidity) = false");
    assert_eq!(got, [r#"[{"ts":4}]"#]);
}

#[test]
fn changed_col_in_select_and_where() {
    let got = go(
        "SELECT CHANGED_COL(true, temperature) AS myTemp, CHANGED_COL(true, humidity) AS myHum \
         FROM demo",
    );
    // The docs leave out the empty results (a sink's omitIfEmpty); here they are `{}`.
    let non_empty: Vec<&String> = got.iter().filter(|r| *r != "[{}]").collect();
    assert_eq!(
        non_empty,
        [
            r#"[{"myHum":88,"myTemp":23}]"#,
            r#"[{"myTemp":25}]"#,
            r#"[{"myHum":90}]"#,
            r#"[{"myHum":91}]"#
        ]
    );
    let got = go("SELECT ts FROM demo WHERE CHANGED_COL(true, temperature) > 24");
    assert_eq!(got, [r#"[{"ts":4}]"#]);
}

#[test]
fn lag_and_latest_see_records_where_drops() {
    // Analytic functions run before WHERE: lag sees the records WHERE drops.
    let got = go("SELECT ts, lag(humidity) AS prev FROM demo WHERE ts > 4");
    assert_eq!(
        got,
        [
            r#"[{"prev":88,"ts":5}]"#,
            r#"[{"prev":90,"ts":6}]"#,
            r#"[{"prev":91,"ts":7}]"#,
            r#"[{"prev":91,"ts":8}]"#
        ]
    );
    let got = go("SELECT lag(ts, 2, -1) AS p FROM demo WHERE ts < 4");
    assert_eq!(got, [r#"[{"p":-1}]"#, r#"[{"p":-1}]"#, r#"[{"p":1}]"#]);
    let got = go("SELECT latest(ts) OVER (WHEN humidity > 88) AS l FROM demo WHERE ts > 3");
    assert_eq!(
        got,
        [
            r#"[{}]"#,
            r#"[{"l":5}]"#,
            r#"[{"l":6}]"#,
            r#"[{"l":7}]"#,
            r#"[{"l":8}]"#
        ]
    );
}

#[test]
fn acc_functions_as_documented() {
    let mut p = plan(
        "SELECT acc_sum(a) AS s, acc_max(a) AS mx, acc_min(a) AS mn, acc_count(a) AS c, \
         acc_avg(a) AS v FROM demo",
    );
    let got = run(
        &mut p,
        &[(r#"{"a":1}"#, 0), (r#"{"a":2}"#, 1), (r#"{"a":3}"#, 2)],
    );
    assert_eq!(
        got,
        [
            r#"[{"c":1,"mn":1,"mx":1,"s":1,"v":1.0}]"#,
            r#"[{"c":2,"mn":1,"mx":2,"s":3,"v":1.5}]"#,
            r#"[{"c":3,"mn":1,"mx":3,"s":6,"v":2.0}]"#
        ]
    );
}

#[test]
fn partitions_keep_their_own_history() {
    let mut p = plan("SELECT lag(v) OVER (PARTITION BY id) AS p FROM demo");
    let got = run(
        &mut p,
        &[
            (r#"{"id":"a","v":1}"#, 0),
            (r#"{"id":"b","v":2}"#, 1),
            (r#"{"id":"a","v":3}"#, 2),
            (r#"{"id":"b","v":4}"#, 3),
        ],
    );
    assert_eq!(got, [r#"[{}]"#, r#"[{}]"#, r#"[{"p":1}]"#, r#"[{"p":2}]"#]);
}

/// eKuiper's TestAnalyzeFuncAlias2 (internal/topo/topotest/rule_test.go): an alias of the
/// SELECT list used in it, on its `demo` data.
#[test]
fn an_alias_in_the_select_list() {
    let s = r#"CREATE STREAM demo (color STRING, size BIGINT, ts BIGINT) WITH (DATASOURCE="demo")"#;
    let mut p = try_plan(
        s,
        "SELECT lag(size,1,0) + 1 as b, lag(b,1,0),size FROM demo",
        Default::default(),
    )
    .unwrap();
    let recs: Vec<String> = [3, 6, 2, 4, 1]
        .iter()
        .map(|s| format!(r#"{{"color":"red","size":{s},"ts":1}}"#))
        .collect();
    let recs: Vec<(&str, i64)> = recs.iter().map(|r| (r.as_str(), 0)).collect();
    assert_eq!(
        run(&mut p, &recs),
        [
            r#"[{"b":1,"lag":0,"size":3}]"#,
            r#"[{"b":4,"lag":1,"size":6}]"#,
            r#"[{"b":7,"lag":4,"size":2}]"#,
            r#"[{"b":3,"lag":7,"size":4}]"#,
            r#"[{"b":5,"lag":3,"size":1}]"#,
        ]
    );
    // Aliases swap; an alias of its own name reads the field.
    let mut p = plan("SELECT a AS b, b AS a, c AS c FROM demo");
    assert_eq!(
        run(&mut p, &[(r#"{"a":1,"b":2,"c":3}"#, 0)]),
        [r#"[{"a":2,"b":1,"c":3}]"#]
    );
}

#[test]
fn changed_cols_as_documented() {
    // The docs' window example: the average of each two records, when it changed.
    let got =
        go("SELECT CHANGED_COLS(\"t\", true, avg(temperature)) FROM demo GROUP BY CountWindow(2)");
    assert_eq!(
        got,
        [
            r#"[{"tavg":23.0}]"#,
            r#"[{"tavg":24.0}]"#,
            r#"[{"tavg":25.0}]"#,
            "[{}]"
        ]
    );
    let got = go("SELECT CHANGED_COLS(\"c_\", false, *) FROM demo");
    assert_eq!(
        &got[..2],
        [
            r#"[{"c_humidity":88,"c_temperature":23,"c_ts":1}]"#,
            r#"[{"c_ts":2}]"#
        ]
    );
    // eKuiper's TestChanged13 (internal/topo/topotest/rule_test.go) on its demo data.
    let mut p = plan("SELECT changed_cols(\"tt_\", true, color, size) FROM demo");
    let recs = [
        ("red", 3),
        ("blue", 6),
        ("blue", 2),
        ("yellow", 4),
        ("red", 1),
    ]
    .map(|(c, s)| format!(r#"{{"color":"{c}","size":{s}}}"#));
    let recs: Vec<(&str, i64)> = recs.iter().map(|r| (r.as_str(), 0)).collect();
    assert_eq!(
        run(&mut p, &recs),
        [
            r#"[{"tt_color":"red","tt_size":3}]"#,
            r#"[{"tt_color":"blue","tt_size":6}]"#,
            r#"[{"tt_size":2}]"#,
            r#"[{"tt_color":"yellow","tt_size":4}]"#,
            r#"[{"tt_color":"red","tt_size":1}]"#,
        ]
    );
}
