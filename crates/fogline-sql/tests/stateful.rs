//! Detector state per partition key: `OVER (PARTITION BY ..)`, else the GROUP BY keys.
mod common;

use common::*;
use fogline_sql::Value;

fn scores(sql: &str, recs: &[(String, i64)]) -> Vec<Value> {
    let mut p = plan(sql);
    let mut out = Vec::new();
    for (j, t) in recs {
        p.push(row(j), &meta(*t), &mut out).unwrap();
    }
    out.iter()
        .flat_map(|e| {
            e.rows
                .iter()
                .map(|r| r.get("s").cloned().unwrap_or_default())
        })
        .collect()
}

fn series(id: &str, n: usize, t0: i64) -> Vec<(String, i64)> {
    (0..n)
        .map(|i| {
            let v = ((i * 7919) % 13) as f64 + if i == n - 1 { 100.0 } else { 0.0 };
            (format!(r#"{{"id":"{id}","v":{v}}}"#), t0 + i as i64 * 1000)
        })
        .collect()
}

#[test]
fn each_partition_has_its_own_detector() {
    let sql = "SELECT anomaly_score(v, 'cusum') OVER (PARTITION BY id) AS s FROM demo";
    let (a, b) = (series("a", 60, 0), series("b", 60, 500));
    let mut mixed = Vec::new();
    for (x, y) in a.iter().zip(&b) {
        mixed.push(x.clone());
        mixed.push(y.clone());
    }
    let both = scores(sql, &mixed);
    let alone_a = scores(sql, &a);
    let alone_b = scores(sql, &b);
    let (even, odd): (Vec<_>, Vec<_>) =
        both.chunks(2).map(|c| (c[0].clone(), c[1].clone())).unzip();
    assert_eq!(even, alone_a);
    assert_eq!(odd, alone_b);
    // Without a partition, one detector sees both series.
    let one = scores("SELECT anomaly_score(v, 'cusum') AS s FROM demo", &mixed);
    assert_ne!(one, both);
}

#[test]
fn group_by_keys_partition_a_windowed_detector() {
    let sql = "SELECT id, anomaly_score(avg(v), 'ewma') AS s FROM demo \
               GROUP BY id, TUMBLINGWINDOW(ss, 1)";
    let mut recs = series("a", 5, 0);
    recs.extend(series("b", 5, 100));
    recs.sort_by_key(|r| r.1);
    let s = scores(sql, &recs);
    assert!(s.iter().all(|v| matches!(v, Value::Float(_))), "{s:?}");
}

#[test]
fn over_when_gates_the_update() {
    let sql = "SELECT is_anomaly(v, 'ewma') OVER (WHEN v > 0) AS s FROM demo";
    let recs = [
        (r#"{"v":0}"#.to_owned(), 0),
        (r#"{"v":1}"#.to_owned(), 1000),
    ];
    assert_eq!(scores(sql, &recs), [Value::Null, Value::Bool(false)]);
}
