//! The behaviours eKuiper's window docs describe (docs/en_US/sqls/windows.md), with the
//! inputs and outputs they show where they show them.
mod common;

use common::*;

fn temps(ts: &[(i64, i64)]) -> Vec<(String, i64)> {
    ts.iter()
        .map(|(t, ms)| (format!(r#"{{"temperature":{t}}}"#), *ms))
        .collect()
}

fn go(sql: &str, recs: &[(String, i64)]) -> Vec<String> {
    let mut p = plan(sql);
    let recs: Vec<(&str, i64)> = recs.iter().map(|(j, t)| (j.as_str(), *t)).collect();
    run(&mut p, &recs)
}

/// "Sample in below is a count window that with 5 length, and triggered with every 2
/// events": nothing at events 2 and 4, the latest 5 at event 6 (the first is left out).
#[test]
fn count_window_with_an_interval() {
    let recs = temps(&[
        (1, 1),
        (2, 2),
        (3, 3),
        (4, 4),
        (5, 5),
        (6, 6),
        (7, 7),
        (8, 8),
    ]);
    let got = go(
        "SELECT collect(temperature) AS t FROM demo GROUP BY COUNTWINDOW(5, 2)",
        &recs,
    );
    assert_eq!(got, [r#"[{"t":[2,3,4,5,6]}]"#, r#"[{"t":[4,5,6,7,8]}]"#]);
}

/// "If filter with where clause for data with count window of length 3, the output length
/// will vary across windows; while filter with filter clause, the output length will be
/// always 3."
#[test]
fn where_runs_after_a_count_window_and_filter_before() {
    let recs = temps(&[(30, 1), (10, 2), (40, 3), (50, 4), (5, 5), (60, 6)]);
    let by_where = go(
        "SELECT temperature FROM demo WHERE temperature > 20 GROUP BY COUNTWINDOW(3)",
        &recs,
    );
    assert_eq!(
        by_where,
        [
            r#"[{"temperature":30},{"temperature":40}]"#,
            r#"[{"temperature":50},{"temperature":60}]"#
        ]
    );
    let by_filter = go(
        "SELECT temperature FROM demo GROUP BY COUNTWINDOW(3) FILTER (WHERE temperature > 20)",
        &recs,
    );
    assert_eq!(
        by_filter,
        [r#"[{"temperature":30},{"temperature":40},{"temperature":50}]"#]
    );
}

/// `SELECT * FROM demo WHERE temperature > 20 GROUP BY COUNTWINDOW(5,1) HAVING COUNT(*) > 2`:
/// "If HAVING condition is COUNT(*) = 5, then it means all of values in the window should
/// satisfy WHERE condition."
#[test]
fn having_over_a_count_window_sees_where() {
    let recs = temps(&[
        (30, 1),
        (31, 2),
        (10, 3),
        (32, 4),
        (33, 5),
        (34, 6),
        (35, 7),
    ]);
    let got = go(
        "SELECT count(*) AS c FROM demo WHERE temperature > 20 \
         GROUP BY COUNTWINDOW(5, 1) HAVING count(*) = 5",
        &recs,
    );
    // Windows end at events 5, 6, 7; only the one of events 3..7 lacks the 10.
    assert_eq!(got, Vec::<String>::new());
    let got = go(
        "SELECT count(*) AS c FROM demo WHERE temperature > 20 \
         GROUP BY COUNTWINDOW(5, 1) HAVING count(*) > 2",
        &recs,
    );
    assert_eq!(got, [r#"[{"c":4}]"#, r#"[{"c":4}]"#, r#"[{"c":4}]"#]);
}

/// "A 10 second time window will always end at each 10s second such as 10, 20 or 30
/// regardless of the rule start time"; a hopping window "can overlap, so events can belong
/// to more than one Hopping window result set".
#[test]
fn hopping_windows_overlap_and_align() {
    let recs = temps(&[(1, 3_000), (2, 7_000), (3, 12_000), (4, 30_000)]);
    let got = go(
        "SELECT collect(temperature) AS t, window_start() AS s, window_end() AS e \
         FROM demo GROUP BY HOPPINGWINDOW(ss, 10, 5)",
        &recs,
    );
    assert_eq!(
        got,
        [
            r#"[{"e":5000,"s":-5000,"t":[1]}]"#,
            r#"[{"e":10000,"s":0,"t":[1,2]}]"#,
            r#"[{"e":15000,"s":5000,"t":[2,3]}]"#,
            r#"[{"e":20000,"s":10000,"t":[3]}]"#,
        ]
    );
}

/// Sliding windows "produce an output ONLY when an event occurs"; with a delay, the window
/// also holds the events of the delay after the trigger. `OVER (WHEN ..)` picks triggers.
#[test]
fn sliding_windows_trigger_on_events() {
    let recs = temps(&[(1, 1_000), (2, 2_000), (3, 7_000)]);
    let got = go(
        "SELECT collect(temperature) AS t FROM demo GROUP BY SLIDINGWINDOW(ss, 5)",
        &recs,
    );
    assert_eq!(
        got,
        [r#"[{"t":[1]}]"#, r#"[{"t":[1,2]}]"#, r#"[{"t":[3]}]"#]
    );

    let mut p = plan(
        "SELECT collect(temperature) AS t FROM demo GROUP BY SLIDINGWINDOW(ss, 5, 5) \
         OVER (WHEN temperature > 1)",
    );
    let recs: Vec<(&str, i64)> = recs.iter().map(|(j, t)| (j.as_str(), *t)).collect();
    // The record at 7 s is the end of the delay of the one at 2 s: that window is due.
    assert_eq!(run(&mut p, &recs), [r#"[{"t":[1,2,3]}]"#]);
    assert_eq!(p.next_tick(), Some(12_000));
    let mut out = Vec::new();
    p.tick(11_999, &mut out).unwrap();
    assert!(out.is_empty());
    p.tick(20_000, &mut out).unwrap();
    assert_eq!(text(&out), [r#"[{"t":[3]}]"#]);
}

/// eKuiper's window tests (internal/topo/topotest/window_rule_test.go, TestWindowRule1, 2,
/// 5, 8 and 9, on the `demo` and `sessionDemo` data of its mock sources), in processing
/// time. Where eKuiper emits an empty result for a window without records, nothing is
/// emitted here.
mod ekuiper_tests {
    use super::*;

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

    /// Runs the records, then ticks to `until`; every emit's rows with `T0` taken off
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
}
