//! Reports: one JSON document with every row, and a Markdown table per pattern set with one
//! column per engine (GB/s), fogline's ratio to Hyperscan and to the faster aho-corasick, and
//! whether all engines found the same number of matches.

use std::fmt::Write;

use crate::Row;

/// The rows as pretty JSON.
pub fn json(rows: &[Row]) -> String {
    serde_json::to_string_pretty(rows).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

fn gbps(rows: &[&Row], engine: &str) -> Option<f64> {
    rows.iter().find(|r| r.engine == engine).map(|r| r.gbps)
}

/// Markdown tables of throughput, agreement, build time and memory.
pub fn markdown(rows: &[Row]) -> String {
    let mut engines: Vec<&'static str> = Vec::new();
    for r in rows {
        if !engines.contains(&r.engine) {
            engines.push(r.engine);
        }
    }
    let mut cells: Vec<(String, String, String)> = Vec::new();
    for r in rows {
        let key = (r.set.clone(), r.input.clone(), format!("{:?}", r.mode));
        if !cells.contains(&key) {
            cells.push(key);
        }
    }
    let mut out = String::new();
    let _ = writeln!(out, "### Throughput (GB/s, single thread, best pass)\n");
    let _ = write!(out, "| set | input | mode | matches | same |");
    for e in &engines {
        let _ = write!(out, " {e} |");
    }
    let _ = writeln!(out, " fogline / hyperscan | fogline / best aho-corasick |");
    let _ = write!(out, "| --- | --- | --- | ---: | --- |");
    for _ in &engines {
        let _ = write!(out, " ---: |");
    }
    let _ = writeln!(out, " ---: | ---: |");
    for (set, input, mode) in &cells {
        let group: Vec<&Row> = rows
            .iter()
            .filter(|r| &r.set == set && &r.input == input && &format!("{:?}", r.mode) == mode)
            .collect();
        let first = group.first().map(|r| r.matches).unwrap_or(0);
        let same = group.iter().all(|r| r.matches == first);
        let mode_name = match group.first().map(|r| r.mode) {
            Some(crate::Mode::Whole) => "whole",
            _ => "per-packet",
        };
        let _ = write!(
            out,
            "| {set} | {input} | {mode_name} | {first} | {} |",
            if same { "yes" } else { "**NO**" }
        );
        for e in &engines {
            match gbps(&group, e) {
                Some(g) => {
                    let _ = write!(out, " {g:.3} |");
                }
                None => {
                    let _ = write!(out, " - |");
                }
            }
        }
        let fog = gbps(&group, "fogline");
        let hs = gbps(&group, "hyperscan");
        let ac = gbps(&group, "aho-corasick-nfa")
            .into_iter()
            .chain(gbps(&group, "aho-corasick-dfa"))
            .fold(None, |m: Option<f64>, g| Some(m.map_or(g, |m| m.max(g))));
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => format!("{:.2}x", a / b),
            _ => "-".to_string(),
        };
        let _ = writeln!(out, " {} | {} |", ratio(fog, hs), ratio(fog, ac));
    }
    let _ = writeln!(
        out,
        "\n### Build time (ms) and memory (MiB) per pattern set\n"
    );
    let _ = writeln!(out, "| set | patterns | engine | build ms | heap MiB |");
    let _ = writeln!(out, "| --- | ---: | --- | ---: | ---: |");
    let mut seen: Vec<(String, &str)> = Vec::new();
    for r in rows {
        if seen.contains(&(r.set.clone(), r.engine)) {
            continue;
        }
        seen.push((r.set.clone(), r.engine));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} | {:.2} |",
            r.set,
            r.patterns,
            r.engine,
            r.build_ms,
            r.heap_bytes as f64 / (1 << 20) as f64
        );
    }
    out
}
