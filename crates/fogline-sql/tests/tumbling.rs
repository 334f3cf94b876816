//! Tumbling windows with aggregates, in processing time (driven by `tick`).
mod common;

use common::*;

#[test]
fn tumbling_windows_align_to_the_epoch_and_emit_on_tick() {
    let mut p = plan(
        "SELECT id, count(*) AS c, sum(v) AS s, avg(v) AS a, window_start() AS ws, \
         window_end() AS we FROM demo GROUP BY id, TUMBLINGWINDOW(ss, 10) ORDER BY id",
    );
    assert!(p.is_windowed());
    assert_eq!(p.next_tick(), None);
    let got = run(
        &mut p,
        &[
            (r#"{"id":"b","v":1}"#, 10_500),
            (r#"{"id":"a","v":2}"#, 12_000),
            (r#"{"id":"b","v":4}"#, 19_999),
        ],
    );
    assert!(got.is_empty());
    assert_eq!(p.next_tick(), Some(20_000));
    let mut out = Vec::new();
    p.tick(19_999, &mut out).unwrap();
    assert!(out.is_empty());
    p.tick(20_000, &mut out).unwrap();
    assert_eq!(
        text(&out),
        [concat!(
            r#"[{"a":2.0,"c":1,"id":"a","s":2,"we":20000,"ws":10000},"#,
            r#"{"a":2.5,"c":2,"id":"b","s":5,"we":20000,"ws":10000}]"#
        )]
    );
    assert_eq!(p.next_tick(), None);
}

#[test]
fn a_record_past_the_window_end_closes_it_without_a_tick() {
    let mut p = plan("SELECT collect(v) AS vs FROM demo GROUP BY TUMBLINGWINDOW(ms, 100)");
    let got = run(
        &mut p,
        &[
            (r#"{"v":1}"#, 0),
            (r#"{"v":2}"#, 99),
            (r#"{"v":3}"#, 100),
            (r#"{"v":4}"#, 350),
        ],
    );
    assert_eq!(got, [r#"[{"vs":[1,2]}]"#, r#"[{"vs":[3]}]"#]);
}

#[test]
fn windows_without_aggregates_emit_their_rows_and_having_filters_groups() {
    let mut p = plan("SELECT * FROM demo GROUP BY TUMBLINGWINDOW(ss, 1)");
    let got = run(
        &mut p,
        &[(r#"{"v":1}"#, 0), (r#"{"v":2}"#, 5), (r#"{"v":3}"#, 1000)],
    );
    assert_eq!(got, [r#"[{"v":1},{"v":2}]"#]);

    let mut p = plan(
        "SELECT k, max(v) AS m FROM demo GROUP BY k, TUMBLINGWINDOW(ss, 1) \
         HAVING count(*) > 1 ORDER BY m DESC LIMIT 1",
    );
    let got = run(
        &mut p,
        &[
            (r#"{"k":1,"v":1}"#, 0),
            (r#"{"k":1,"v":7}"#, 1),
            (r#"{"k":2,"v":9}"#, 2),
            (r#"{"k":3,"v":3}"#, 3),
            (r#"{"k":3,"v":8}"#, 4),
            (r#"{"k":0,"v":0}"#, 1000),
        ],
    );
    assert_eq!(got, [r#"[{"k":3,"m":8}]"#]);
}

#[test]
fn a_window_that_fails_is_counted_and_the_next_ones_come() {
    let mut p = plan("SELECT sum(a) / sum(b) AS r FROM demo GROUP BY TUMBLINGWINDOW(ms, 10)");
    let mut out = Vec::new();
    p.push(row(r#"{"a":1,"b":0}"#), &meta(0), &mut out).unwrap();
    let e = p.push(row(r#"{"a":4,"b":2}"#), &meta(10), &mut out);
    assert!(e.is_err(), "division by zero in the first window");
    p.push(row(r#"{"a":1,"b":1}"#), &meta(25), &mut out)
        .unwrap();
    assert_eq!(text(&out), [r#"[{"r":2}]"#]);
    assert_eq!(p.stats()[3].exceptions, 1);
}
