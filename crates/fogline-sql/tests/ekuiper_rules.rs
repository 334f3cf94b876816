//! eKuiper's own rule tests without windows (internal/topo/topotest/rule_test.go,
//! TestSingleSQL and TestAccAggSQL, on the `demo` data of its mock sources), their inputs
//! and expected outputs. eKuiper's `meta(topic)` is "mock" there; here it is "demo".
mod common;

use common::*;

fn demo() -> Vec<(String, i64)> {
    [
        ("red", 3, 6013),
        ("blue", 6, 6822),
        ("blue", 2, 7632),
        ("yellow", 4, 8442),
        ("red", 1, 9252),
    ]
    .iter()
    .map(|(c, s, t)| {
        let ts = 1_541_152_480_000 + t;
        (format!(r#"{{"color":"{c}","size":{s},"ts":{ts}}}"#), ts)
    })
    .collect()
}

const DEMO_SCHEMA: &str =
    r#"CREATE STREAM demo (color STRING, size BIGINT, ts BIGINT) WITH (DATASOURCE="demo")"#;

fn go(sql: &str) -> Vec<String> {
    let mut p = try_plan(DEMO_SCHEMA, sql, Default::default()).unwrap();
    let recs = demo();
    let recs: Vec<(&str, i64)> = recs.iter().map(|(j, t)| (j.as_str(), *t)).collect();
    run(&mut p, &recs)
        .iter()
        .map(|s| s.replace("15411524", ""))
        .collect()
}

#[test]
fn single_sql_rules() {
    assert_eq!(
        go("SELECT color, ts, last_hit_count() + 1 as lc FROM demo where size > 3"),
        [
            r#"[{"color":"blue","lc":1,"ts":86822}]"#,
            r#"[{"color":"yellow","lc":2,"ts":88442}]"#
        ]
    );
    assert_eq!(
        go("SELECT meta(topic) as m, ts FROM demo WHERE last_hit_count() < 4").len(),
        4
    );
    assert_eq!(
        go("SELECT color, ts FROM demo where size > 3 and meta(topic)=\"demo\""),
        [
            r#"[{"color":"blue","ts":86822}]"#,
            r#"[{"color":"yellow","ts":88442}]"#
        ]
    );
    let got = go(
        "SELECT color, CASE WHEN size < 2 THEN \"S\" WHEN size < 4 THEN \"M\" ELSE \"L\" END as s, \
         ts FROM demo",
    );
    let sizes: Vec<&str> = got
        .iter()
        .map(|r| &r[r.find("\"s\":").unwrap() + 5..][..1])
        .collect();
    assert_eq!(sizes, ["M", "L", "M", "L", "S"]);
}

#[test]
fn lag_with_aliases_and_partitions() {
    assert_eq!(
        go(
            "SELECT lag(size) as lastSize, lag(had_changed(true,size)), size, \
            lastSize/size as changeRate FROM demo WHERE size > 2"
        ),
        [
            r#"[{"size":3}]"#,
            r#"[{"changeRate":0,"lag":true,"lastSize":3,"size":6}]"#,
            r#"[{"changeRate":0,"lag":true,"lastSize":2,"size":4}]"#,
        ]
    );
    assert_eq!(
        go(
            "SELECT color, lag(size) over (partition by color) as lastSize, size, \
            lastSize/size as changeRate FROM demo"
        ),
        [
            r#"[{"color":"red","size":3}]"#,
            r#"[{"color":"blue","size":6}]"#,
            r#"[{"changeRate":3,"color":"blue","lastSize":6,"size":2}]"#,
            r#"[{"color":"yellow","size":4}]"#,
            r#"[{"changeRate":3,"color":"red","lastSize":3,"size":1}]"#,
        ]
    );
}

#[test]
fn acc_functions_over_partitions_and_when() {
    let sums: Vec<String> = go("select acc_sum(size) over (partition by color), color from demo");
    assert_eq!(
        sums,
        [
            r#"[{"acc_sum":3,"color":"red"}]"#,
            r#"[{"acc_sum":6,"color":"blue"}]"#,
            r#"[{"acc_sum":8,"color":"blue"}]"#,
            r#"[{"acc_sum":4,"color":"yellow"}]"#,
            r#"[{"acc_sum":4,"color":"red"}]"#,
        ]
    );
    let pick = |sql: &str, f: &str| -> Vec<String> {
        go(sql)
            .iter()
            .map(|r| {
                let v: serde_json::Value = serde_json::from_str(r).unwrap();
                v[0][f].to_string()
            })
            .collect()
    };
    let when = "over (when color = \"red\"), color from demo";
    assert_eq!(
        pick(&format!("select acc_sum(size) {when}"), "acc_sum"),
        ["3", "3", "3", "3", "4"]
    );
    assert_eq!(
        pick(&format!("select acc_min(size) {when}"), "acc_min"),
        ["3", "3", "3", "3", "1"]
    );
    assert_eq!(
        pick(&format!("select acc_max(size) {when}"), "acc_max"),
        ["3", "3", "3", "3", "3"]
    );
    assert_eq!(
        pick(&format!("select acc_count(size) {when}"), "acc_count"),
        ["1", "1", "1", "1", "2"]
    );
    assert_eq!(
        pick(&format!("select acc_avg(size) {when}"), "acc_avg"),
        ["3.0", "3.0", "3.0", "3.0", "2.0"]
    );
}

#[test]
fn order_by_an_alias_over_a_count_window() {
    assert_eq!(
        go(
            "SELECT color, count(*) as c FROM demo where color != \"red\" \
            GROUP BY COUNTWINDOW(5), color Order by c DESC"
        ),
        [r#"[{"c":2,"color":"blue"},{"c":1,"color":"yellow"}]"#]
    );
}
