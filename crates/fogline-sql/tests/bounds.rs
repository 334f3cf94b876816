//! A window holds at most `max_window_rows` records: the rest are dropped and counted, and
//! a count window longer than that is refused.
mod common;

use common::*;
use fogline_sql::PlanOptions;

fn bounded(max: usize) -> PlanOptions {
    PlanOptions {
        max_window_rows: max,
        ..PlanOptions::default()
    }
}

#[test]
fn a_full_window_drops_and_counts_what_comes_beyond() {
    let sql = "SELECT count(*) AS n, sum(v) AS s FROM demo GROUP BY TUMBLINGWINDOW(ss, 1)";
    let mut p = try_plan(DEMO, sql, bounded(3)).unwrap();
    let mut out = Vec::new();
    for (v, ts) in [(1, 10), (2, 20), (3, 30), (4, 40), (5, 50)] {
        p.push(row(&format!(r#"{{"v":{v}}}"#)), &meta(ts), &mut out)
            .unwrap();
    }
    // The next second's record closes the window.
    p.push(row(r#"{"v":100}"#), &meta(1500), &mut out).unwrap();
    assert_eq!(text(&out), [r#"[{"n":3,"s":6}]"#]);
    assert_eq!(p.window_full_dropped(), 2);
    let window = &p.stats()[2];
    assert_eq!(window.name, "window");
    assert_eq!(window.exceptions, 2);
    assert!(window
        .last_exception
        .as_deref()
        .unwrap()
        .contains("max_window_rows"));
    // Room again once the window emitted.
    p.push(row(r#"{"v":7}"#), &meta(1600), &mut out).unwrap();
    assert_eq!(p.window_full_dropped(), 2);
}

#[test]
fn a_count_window_longer_than_the_bound_is_refused() {
    let sql = "SELECT count(*) AS n FROM demo GROUP BY COUNTWINDOW(10)";
    let e = try_plan(DEMO, sql, bounded(5)).unwrap_err().to_string();
    assert!(e.contains("max_window_rows"), "{e}");
    assert!(try_plan(DEMO, sql, bounded(10)).is_ok());
}
