//! Every window kind against a brute-force reference on random streams, in processing time
//! (records and ticks) and event time (out of order, with late records).
//!
//! The reference keeps every accepted record and, at each step, finds the windows due by
//! scanning all of them: no buffers, no eviction, no incremental bounds.
mod common;

use common::windows::*;
use fogline_sql::Value;
use proptest::prelude::*;

/// (time, value, arrival) of an accepted record.
type R = (i64, i64, usize);

fn content(recs: &[R], keep: impl Fn(i64) -> bool) -> Vec<i64> {
    let mut c: Vec<R> = recs.iter().copied().filter(|r| keep(r.0)).collect();
    c.sort_by_key(|r| (r.0, r.2));
    c.iter().map(|r| r.1).collect()
}

fn reference(kind: Kind, ops: &[Op], event: bool, tol: i64) -> (Out, u64) {
    reference_where(kind, ops, event, tol, |_| true)
}

/// With `WHERE pred(v)`: on records before processing-time windows, on a window's rows for
/// count windows and in event time; time goes on with every record either way.
fn reference_where(
    kind: Kind,
    ops: &[Op],
    event: bool,
    tol: i64,
    pred: fn(i64) -> bool,
) -> (Out, u64) {
    let mut out = Out::new();
    let emit = |out: &mut Out, s: i64, e: i64, vs: Vec<i64>| {
        let vs: Vec<i64> = vs.into_iter().filter(|v| pred(*v)).collect();
        if !vs.is_empty() {
            out.push((s, e, vs));
        }
    };
    let mut recs: Vec<R> = Vec::new();
    let mut wm = i64::MIN;
    let mut max_seen = i64::MIN;
    let mut late = 0;
    let mut triggers: Vec<(i64, i64)> = Vec::new();
    let mut consumed: Vec<usize> = Vec::new();
    let mut cont: Option<(i64, i64)> = None;
    for (n, op) in ops.iter().enumerate() {
        let new_wm = match *op {
            Op::Push(t, v) => {
                let t = if event { t } else { t.max(wm) };
                if let Kind::Count(size, every) = kind {
                    recs.push((t, v, n));
                    let total = recs.len() as i64;
                    let due = if every == 0 {
                        total % size == 0
                    } else {
                        total >= size && total % every == 0
                    };
                    if due {
                        let last = &recs[recs.len() - size as usize..];
                        emit(
                            &mut out,
                            last[0].0,
                            last[last.len() - 1].0,
                            last.iter().map(|r| r.1).collect(),
                        );
                    }
                    continue;
                }
                let is_late = t < wm;
                if is_late {
                    late += 1;
                    continue;
                }
                max_seen = max_seen.max(t);
                if event || pred(v) {
                    recs.push((t, v, n));
                    if let Kind::Sliding(_, d) = kind {
                        triggers.push((t + d, t));
                    }
                }
                if event {
                    max_seen - tol
                } else {
                    t
                }
            }
            Op::Tick(now) if !event && !matches!(kind, Kind::Count(..)) => now,
            Op::Tick(_) => continue,
        };
        let new_wm = new_wm.max(wm);
        match kind {
            Kind::Tumbling(_) | Kind::Hopping(..) => {
                let (l, h) = match kind {
                    Kind::Tumbling(l) => (l, l),
                    Kind::Hopping(l, h) => (l, h),
                    _ => unreachable!(),
                };
                let mut ends: Vec<i64> = Vec::new();
                for r in &recs {
                    for k in (r.0 - l).div_euclid(h) + 1..=r.0.div_euclid(h) {
                        let e = k * h + l;
                        if (wm == i64::MIN || e > wm) && e <= new_wm {
                            ends.push(e);
                        }
                    }
                }
                ends.sort();
                ends.dedup();
                for e in ends {
                    emit(&mut out, e - l, e, content(&recs, |t| t >= e - l && t < e));
                }
            }
            Kind::Sliding(l, _) => {
                triggers.sort();
                let due: Vec<_> = triggers.iter().copied().filter(|x| x.0 <= new_wm).collect();
                triggers.retain(|x| x.0 > new_wm);
                for (e, t) in due {
                    emit(&mut out, t - l, e, content(&recs, |x| x > t - l && x <= e));
                }
            }
            Kind::Session(m, to) => loop {
                let mut open: Vec<R> = recs
                    .iter()
                    .copied()
                    .filter(|r| !consumed.contains(&r.2))
                    .collect();
                open.sort_by_key(|r| (r.0, r.2));
                let (start, mut last) = match cont {
                    Some((t, l)) => (t, Some(l)),
                    None => match open.first() {
                        Some(f) => (f.0, None),
                        None => break,
                    },
                };
                // Checked at multiples of m: cut at the first where it has run longer.
                let mut cut = start.div_euclid(m) * m;
                while cut - start <= m {
                    cut += m;
                }
                let mut end = last.map_or(cut, |l| (l + to).min(cut));
                let mut k = 0;
                while k < open.len() && (last.is_none() || open[k].0 < end) {
                    last = Some(open[k].0);
                    end = (open[k].0 + to).min(cut);
                    k += 1;
                }
                if end > new_wm {
                    break;
                }
                emit(
                    &mut out,
                    start,
                    end,
                    open[..k].iter().map(|r| r.1).collect(),
                );
                consumed.extend(open[..k].iter().map(|r| r.2));
                let l = last.unwrap();
                cont = (end == cut && l + to > cut).then_some((end, l));
            },
            Kind::Count(..) => unreachable!(),
        }
        wm = new_wm;
    }
    (out, late)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn processing_time_matches_the_reference(kind in kinds(), ops in processing_ops()) {
        let want = reference(kind, &ops, false, 0);
        prop_assert_eq!(engine(kind, &ops, false, 0), want);
    }

    #[test]
    fn grouped_aggregates_match_the_reference(
        kind in kinds(), pops in processing_ops(), eops in event_ops(), tol in 0i64..50,
    ) {
        let want = groups_of(&reference(kind, &pops, false, 0).0);
        prop_assert_eq!(grouped_engine(kind, &pops, false, 0), want);
        let want = groups_of(&reference(kind, &eops, true, tol).0);
        prop_assert_eq!(grouped_engine(kind, &eops, true, tol), want);
    }

    #[test]
    fn where_matches_the_reference(
        kind in kinds(), pops in processing_ops(), eops in event_ops(), tol in 0i64..50,
    ) {
        let pred: fn(i64) -> bool = |v| v > 0;
        let head = "SELECT collect(v) AS vs, window_start() AS ws, window_end() AS we FROM demo \
                    WHERE v > 0 GROUP BY";
        let mut p = window_plan_sql(kind, false, 0, head);
        let got = (outs(&run_ops(&mut p, &pops)), p.late_dropped());
        prop_assert_eq!(got, reference_where(kind, &pops, false, 0, pred));
        let mut p = window_plan_sql(kind, true, tol, head);
        let got = (outs(&run_ops(&mut p, &eops)), p.late_dropped());
        prop_assert_eq!(got, reference_where(kind, &eops, true, tol, pred));
    }

    #[test]
    fn event_time_matches_the_reference(kind in kinds(), ops in event_ops(), tol in 0i64..50) {
        let want = reference(kind, &ops, true, tol);
        prop_assert_eq!(engine(kind, &ops, true, tol), want);
    }
}

/// Per group of `k = v mod 3`, ordered by `k`: (k, count, sum, min, max, avg).
type Groups = Vec<Vec<(i64, i64, i64, i64, i64, f64)>>;

fn groups_of(out: &Out) -> Groups {
    out.iter()
        .map(|(_, _, vs)| {
            let mut ks: Vec<i64> = vs.iter().map(|v| v.rem_euclid(3)).collect();
            ks.sort();
            ks.dedup();
            ks.into_iter()
                .map(|k| {
                    let g: Vec<i64> = vs
                        .iter()
                        .copied()
                        .filter(|v| v.rem_euclid(3) == k)
                        .collect();
                    let (n, s) = (g.len() as i64, g.iter().sum::<i64>());
                    let (mn, mx) = (*g.iter().min().unwrap(), *g.iter().max().unwrap());
                    (k, n, s, mn, mx, s as f64 / n as f64)
                })
                .collect()
        })
        .collect()
}

fn grouped_engine(kind: Kind, ops: &[Op], event: bool, tol: i64) -> Groups {
    let head = "SELECT k, count(*) AS n, sum(v) AS s, min(v) AS mn, max(v) AS mx, avg(v) AS a \
                FROM demo GROUP BY k,";
    let mut p = window_plan_sql(kind, event, tol, head);
    let mut sql_sorted = Vec::new();
    for e in run_ops(&mut p, ops) {
        let mut rows: Vec<_> = e
            .rows
            .iter()
            .map(|r| {
                let i = |k: &str| match r[k] {
                    Value::Int(i) => i,
                    ref v => panic!("{k}: {v:?}"),
                };
                let Value::Float(a) = r["a"] else {
                    panic!("avg")
                };
                (i("k"), i("n"), i("s"), i("mn"), i("mx"), a)
            })
            .collect();
        rows.sort_by_key(|r| r.0);
        sql_sorted.push(rows);
    }
    sql_sorted
}

#[test]
fn late_records_are_dropped_and_counted() {
    let kind = Kind::Tumbling(10);
    let ops = [
        Op::Push(5, 1),
        Op::Push(25, 2),
        Op::Push(7, 3),
        Op::Push(21, 4),
    ];
    let (out, late) = engine(kind, &ops, true, 0);
    assert_eq!(out, [(0, 10, vec![1])]);
    assert_eq!(late, 2, "7 and 21 are behind the watermark (25)");
    let (out, late) = engine(kind, &ops, true, 20);
    assert_eq!(out, Vec::new());
    assert_eq!(late, 0);
}
