//! eKuiper's own window tests (internal/topo/topotest/window_rule_test.go, TestWindow and
//! TestEventWindow, on the `demo`, `demoE`, `sessionDemo` and `sessionDemoE` data of its mock
//! sources in internal/topo/topotest/mock_topo.go), their inputs and expected outputs.
//!
//! Differences, by design: where eKuiper emits an empty result for a window without
//! records, nothing is emitted here; eKuiper's first event-time window starts at its first
//! record (`window_start` 1541152486013 or 1541152485013), here every window is aligned.
mod common;

use common::*;
use fogline_sql::PlanOptions;

const T0: i64 = 1_541_152_480_000;

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
        let ts = T0 + t;
        (format!(r#"{{"color":"{c}","size":{s},"ts":{ts}}}"#), ts)
    })
    .collect()
}

/// Runs the records (processing time: each at its `ts`), then ticks to `until`; every emit's rows with `T0` taken off
/// the numbers, to keep the expectations short.
fn go_until(sql: &str, recs: &[(String, i64)], until: i64) -> Vec<String> {
    let mut p = plan(sql);
    let recs: Vec<(&str, i64)> = recs.iter().map(|(j, t)| (j.as_str(), *t)).collect();
    let mut got = run(&mut p, &recs);
    let mut out = Vec::new();
    p.tick(until, &mut out).unwrap();
    got.extend(text(&out));
    got.iter().map(|s| s.replace("15411524", "")).collect()
}

#[test]
fn rule1_hopping() {
    let got = go_until(
        "SELECT * FROM demo GROUP BY HOPPINGWINDOW(ss, 2, 1)",
        &demo(),
        T0 + 10_000,
    );
    assert_eq!(
        &got[..4],
        [
            r#"[{"color":"red","size":3,"ts":86013},{"color":"blue","size":6,"ts":86822}]"#,
            concat!(
                r#"[{"color":"red","size":3,"ts":86013},{"color":"blue","size":6,"ts":86822},"#,
                r#"{"color":"blue","size":2,"ts":87632}]"#
            ),
            r#"[{"color":"blue","size":2,"ts":87632},{"color":"yellow","size":4,"ts":88442}]"#,
            r#"[{"color":"yellow","size":4,"ts":88442},{"color":"red","size":1,"ts":89252}]"#,
        ]
    );
}

#[test]
fn rule2_tumbling_after_where() {
    let got = go_until(
        "SELECT color, ts FROM demo where size > 2 GROUP BY tumblingwindow(ss, 1)",
        &demo(),
        T0 + 10_000,
    );
    assert_eq!(
        got,
        [
            r#"[{"color":"red","ts":86013},{"color":"blue","ts":86822}]"#,
            r#"[{"color":"yellow","ts":88442}]"#,
        ]
    );
}

#[test]
fn rule4_sliding_when_last_hit_time() {
    let got = go_until(
        "SELECT color, count(*) as c FROM demo \
         GROUP BY SlidingWindow(ss, 2) OVER(WHEN ts - last_hit_time() > 1000), color \
         ORDER BY color",
        &demo(),
        T0 + 10_000,
    );
    assert_eq!(
        got,
        [
            r#"[{"c":1,"color":"red"}]"#,
            r#"[{"c":2,"color":"blue"},{"c":1,"color":"red"}]"#,
            r#"[{"c":1,"color":"blue"},{"c":1,"color":"red"},{"c":1,"color":"yellow"}]"#,
        ]
    );
}

#[test]
fn rules10_12_13_and_count1() {
    let got = go_until(
        "SELECT deduplicate(color, false)->color as c FROM demo GROUP BY SlidingWindow(hh, 1)",
        &demo(),
        T0 + 10_000,
    );
    let want = [
        r#"[{"c":"red"}]"#,
        r#"[{"c":"blue"}]"#,
        "[{}]",
        r#"[{"c":"yellow"}]"#,
        "[{}]",
    ];
    assert_eq!(got, want);

    let got = go_until(
        "SELECT collect(size) as allSize FROM demo GROUP BY HOPPINGWINDOW(ss, 2, 1), color \
         ORDER BY color",
        &demo(),
        T0 + 10_000,
    );
    assert_eq!(
        &got[..4],
        [
            r#"[{"allSize":[6]},{"allSize":[3]}]"#,
            r#"[{"allSize":[6,2]},{"allSize":[3]}]"#,
            r#"[{"allSize":[2]},{"allSize":[4]}]"#,
            r#"[{"allSize":[1]},{"allSize":[4]}]"#,
        ]
    );

    let got = go_until(
        "SELECT color as c FROM demo GROUP BY SlidingWindow(ss, 3600,1) filter (where size = 3)",
        &demo(),
        T0 + 10_000,
    );
    assert_eq!(got, [r#"[{"c":"red"}]"#]);

    let got = go_until(
        "SELECT collect(*)[0]->color as c, window_end() as we FROM demo GROUP BY COUNTWINDOW(3)",
        &demo(),
        T0 + 10_000,
    );
    assert_eq!(got, [r#"[{"c":"red","we":87632}]"#]);
}

#[test]
fn rule5_session() {
    let ts = [
        6013, 6823, 7932, 8442, 9252, 10062, 10872, 11682, 12492, 13202, 14112,
    ];
    let recs: Vec<(String, i64)> = ts
        .iter()
        .map(|t| (format!(r#"{{"temp":25.5,"ts":{}}}"#, T0 + t), T0 + t))
        .collect();
    let got = go_until(
        "SELECT count(temp), window_start() as ws, window_end() FROM demo \
         GROUP BY SessionWindow(ss, 2, 1)",
        &recs,
        T0 + 20_000,
    );
    assert_eq!(
        got,
        [
            r#"[{"count":2,"window_end":87823,"ws":86013}]"#,
            r#"[{"count":3,"window_end":90000,"ws":87932}]"#,
            r#"[{"count":5,"window_end":94000,"ws":90000}]"#,
            r#"[{"count":1,"window_end":95112,"ws":94000}]"#,
        ]
    );
}

#[test]
fn rule8_tumbling_having_an_alias() {
    let got = go_until(
        "SELECT color, window_end(), event_time() as et, ts, count(*) as c, window_start() \
         FROM demo where size > 2 GROUP BY tumblingwindow(ss, 1) having c > 1",
        &demo(),
        T0 + 10_000,
    );
    assert_eq!(
        got,
        [concat!(
            r#"[{"c":2,"color":"red","et":87000,"ts":86013,"window_end":87000,"#,
            r#""window_start":86000}]"#
        )]
    );
}

#[test]
fn rule9_hopping_filter() {
    let got = go_until(
        "SELECT color, window_start(), window_end() FROM demo \
         GROUP BY HOPPINGWINDOW(ss, 2, 1) FILTER( WHERE size > 2)",
        &demo(),
        T0 + 10_000,
    );
    let w = |s: i64, e: i64, c: &[&str]| {
        let rows: Vec<String> = c
            .iter()
            .map(|c| format!(r#"{{"color":"{c}","window_end":{e},"window_start":{s}}}"#))
            .collect();
        format!("[{}]", rows.join(","))
    };
    assert_eq!(
        got,
        [
            w(85000, 87000, &["red", "blue"]),
            w(86000, 88000, &["red", "blue"]),
            w(87000, 89000, &["yellow"]),
            w(88000, 90000, &["yellow"]),
        ]
    );
}

/// `demoE`: (color, size, event time, arrival); the 4th is late, the 6th lifts the
/// watermark. The rules run in event time with a late tolerance of 1000 ms.
fn demo_e() -> Vec<(String, i64)> {
    [
        ("red", 3, 6013, 6023),
        ("blue", 2, 7632, 7822),
        ("red", 1, 9252, 9632),
        ("blue", 6, 6822, 9842),
        ("yellow", 4, 8442, 10052),
        ("yellow", 4, 12342, 18888),
    ]
    .iter()
    .map(|(c, s, t, at)| {
        let ts = T0 + t;
        (
            format!(r#"{{"color":"{c}","size":{s},"ts":{ts}}}"#),
            T0 + at,
        )
    })
    .collect()
}

/// `sessionDemoE`: (temp, event time, arrival).
fn session_demo_e() -> Vec<(String, i64)> {
    [
        (25.5, 6013, 6250),
        (28.1, 7932, 7951),
        (27.5, 6823, 8552),
        (25.5, 9252, 9353),
        (27.4, 8442, 9854),
        (26.2, 10062, 10155),
        (28.9, 11682, 11686),
        (26.8, 10872, 11972),
        (29.1, 12492, 12592),
        (30.9, 14112, 14212),
        (32.2, 13202, 15202),
        (32.2, 19202, 19402),
    ]
    .iter()
    .map(|(temp, t, at)| (format!(r#"{{"temp":{temp},"ts":{}}}"#, T0 + t), T0 + at))
    .collect()
}

fn go_event(sql: &str, recs: &[(String, i64)]) -> (Vec<String>, u64) {
    let opts = PlanOptions {
        is_event_time: true,
        late_tolerance_ms: 1000,
        ..Default::default()
    };
    let s = r#"CREATE STREAM demo () WITH (DATASOURCE="demo", TIMESTAMP="ts")"#;
    let mut p = try_plan(s, sql, opts).unwrap();
    let recs: Vec<(&str, i64)> = recs.iter().map(|(j, t)| (j.as_str(), *t)).collect();
    let got = run(&mut p, &recs);
    let got = got.iter().map(|s| s.replace("15411524", "")).collect();
    (got, p.late_dropped())
}

#[test]
fn event_rule1_hopping_count() {
    let (got, late) = go_event(
        "SELECT count(*), last_agg_hit_time() as lt, last_agg_hit_count() as lc, \
         event_time() as et FROM demo GROUP BY HOPPINGWINDOW(ss, 2, 1) HAVING lc < 4",
        &demo_e(),
    );
    assert_eq!(
        got,
        [
            r#"[{"count":1,"et":87000,"lc":0,"lt":0}]"#,
            r#"[{"count":2,"et":88000,"lc":1,"lt":87000}]"#,
            r#"[{"count":2,"et":89000,"lc":2,"lt":88000}]"#,
            r#"[{"count":2,"et":90000,"lc":3,"lt":89000}]"#,
        ]
    );
    assert_eq!(late, 1);
}

#[test]
fn event_rule4_sliding_when_last_hit_time() {
    let (got, _) = go_event(
        "SELECT window_start() as ws, color, window_end() as we FROM demo \
         GROUP BY SlidingWindow(ss, 2) OVER (WHEN ts - last_hit_time() > 1000), color \
         ORDER BY color",
        &demo_e(),
    );
    let w = |s: i64, e: i64, c: &[&str]| {
        let rows: Vec<String> = c
            .iter()
            .map(|c| format!(r#"{{"color":"{c}","we":{e},"ws":{s}}}"#))
            .collect();
        format!("[{}]", rows.join(","))
    };
    assert_eq!(
        got,
        [
            w(84013, 86013, &["red"]),
            w(85632, 87632, &["blue", "red"]),
            w(87252, 89252, &["blue", "red", "yellow"]),
        ]
    );
}

#[test]
fn event_rule2_tumbling_where() {
    let (got, _) = go_event(
        "SELECT window_start(), window_end(), color, ts FROM demo where size > 2 \
         GROUP BY tumblingwindow(ss, 1)",
        &demo_e(),
    );
    assert_eq!(
        got,
        [
            // eKuiper: window_start 86013 (its first window starts at the first record).
            r#"[{"color":"red","ts":86013,"window_end":87000,"window_start":86000}]"#,
            r#"[{"color":"yellow","ts":88442,"window_end":89000,"window_start":88000}]"#,
        ]
    );
}

#[test]
fn event_rule8_session() {
    let (got, late) = go_event(
        "SELECT temp, window_start(), window_end() FROM demo GROUP BY SessionWindow(ss, 2, 1)",
        &session_demo_e(),
    );
    let w = |s: i64, e: i64, temps: &[f64]| {
        let rows: Vec<String> = temps
            .iter()
            .map(|t| format!(r#"{{"temp":{t:?},"window_end":{e},"window_start":{s}}}"#))
            .collect();
        format!("[{}]", rows.join(","))
    };
    assert_eq!(
        got,
        [
            w(86013, 87013, &[25.5]),
            w(87932, 90000, &[28.1, 27.4, 25.5]),
            w(90000, 94000, &[26.2, 26.8, 28.9, 29.1, 32.2]),
            w(94000, 95112, &[30.9]),
        ]
    );
    assert_eq!(late, 1, "27.5 at 86823 comes behind the watermark");
}

#[test]
fn event_rule9_hopping() {
    let (got, _) = go_event(
        "SELECT window_end(), color, window_start() FROM demo GROUP BY HOPPINGWINDOW(ss, 2, 1)",
        &demo_e(),
    );
    let w = |s: i64, e: i64, c: &[&str]| {
        let rows: Vec<String> = c
            .iter()
            .map(|c| format!(r#"{{"color":"{c}","window_end":{e},"window_start":{s}}}"#))
            .collect();
        format!("[{}]", rows.join(","))
    };
    assert_eq!(
        got,
        [
            // eKuiper: window_start 85013 for the first.
            w(85000, 87000, &["red"]),
            w(86000, 88000, &["red", "blue"]),
            w(87000, 89000, &["blue", "yellow"]),
            w(88000, 90000, &["yellow", "red"]),
            w(89000, 91000, &["red"]),
        ]
    );
}

/// TestSingleSQLWithEventTime (internal/topo/topotest/rule_test.go): without a window, in
/// event time, records come out in time order once the watermark passes them; late ones
/// are dropped.
#[test]
fn event_time_without_a_window() {
    let (got, late) = go_event("SELECT *, upper(color) FROM demo", &demo_e());
    assert_eq!(
        got,
        [
            r#"[{"color":"red","size":3,"ts":86013,"upper":"RED"}]"#,
            r#"[{"color":"blue","size":2,"ts":87632,"upper":"BLUE"}]"#,
            r#"[{"color":"yellow","size":4,"ts":88442,"upper":"YELLOW"}]"#,
            r#"[{"color":"red","size":1,"ts":89252,"upper":"RED"}]"#,
        ]
    );
    assert_eq!(late, 1);
    let (got, _) = go_event(
        "SELECT *, last_hit_time() as lt, last_hit_count() as lc, event_time() as et \
         FROM demo WHERE size < 3 AND lc < 2",
        &demo_e(),
    );
    assert_eq!(
        got,
        [
            r#"[{"color":"blue","et":87632,"lc":0,"lt":0,"size":2,"ts":87632}]"#,
            r#"[{"color":"red","et":89252,"lc":1,"lt":87632,"size":1,"ts":89252}]"#,
        ]
    );
}
