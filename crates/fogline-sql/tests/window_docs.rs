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
