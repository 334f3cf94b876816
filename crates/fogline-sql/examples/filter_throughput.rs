//! Times a filter rule through decode and push on ~60-byte JSON records.
//!
//! `cargo run --release -p fogline-sql --example filter_throughput [records]`

use std::sync::Arc;
use std::time::Instant;

use fogline_sql::ast::Statement;
use fogline_sql::{parse, Extensions, Meta, Plan, PlanOptions};

struct NoExt;

impl Extensions for NoExt {
    fn pattern_set(&self, _: &str) -> Option<Arc<fogline_match::Matcher>> {
        None
    }
}

/// This thread's CPU time in ns (Linux), so that a busy machine does not skew the rate.
fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let Ok(Statement::CreateStream(stream)) =
        parse(r#"CREATE STREAM demo () WITH (DATASOURCE="demo", FORMAT="json")"#)
    else {
        panic!("stream")
    };
    let rules = [
        "SELECT * FROM demo WHERE temperature > 20",
        "SELECT deviceId, temperature * 1.8 + 32 AS f FROM demo WHERE humidity < 50",
        "SELECT avg(temperature) AS t FROM demo GROUP BY deviceId, TUMBLINGWINDOW(ss, 1)",
    ];
    let payloads: Vec<Vec<u8>> = (0..64)
        .map(|i| {
            format!(
                r#"{{"deviceId":"dev-{:02}","temperature":{}.5,"humidity":{},"ok":true}}"#,
                i % 16,
                10 + i % 20,
                30 + i % 40
            )
            .into_bytes()
        })
        .collect();
    let avg_len = payloads.iter().map(Vec::len).sum::<usize>() / payloads.len();
    for sql in rules {
        let Ok(Statement::Select(select)) = parse(sql) else {
            panic!("select")
        };
        let mut plan =
            Plan::new(&select, &stream, PlanOptions::default(), Arc::new(NoExt)).unwrap();
        let mut meta = Meta {
            topic: Arc::from("demo"),
            timestamp_ms: 0,
        };
        let mut out = Vec::new();
        let (mut rows_out, t0, c0) = (0usize, Instant::now(), cpu_ns());
        for i in 0..n {
            meta.timestamp_ms = (i / 100) as i64;
            for row in plan.decode(&payloads[i % payloads.len()]).unwrap() {
                plan.push(row, &meta, &mut out).unwrap();
            }
            rows_out += out.len();
            out.clear();
        }
        let secs = t0.elapsed().as_secs_f64();
        let cpu = cpu_ns().zip(c0).map(|(b, a)| (b - a) as f64 / 1e9);
        println!(
            "{:>10.0} records/s per CPU second ({:.0} per wall second; {n} records of ~{avg_len} \
             bytes, {rows_out} emits)  {sql}",
            n as f64 / cpu.unwrap_or(secs),
            n as f64 / secs
        );
    }
}
