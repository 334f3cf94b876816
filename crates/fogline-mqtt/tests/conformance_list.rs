//! Keeps CONFORMANCE.md honest: every normative statement number of
//! `spec/statements-311.txt` and `spec/statements-50.txt` has exactly one
//! row in its version's section, with one of the four statuses; `covered`
//! rows name tests that exist; the summary counts match the rows.
//!
//! Spec files: `#` comment lines, then `NUMBER<TAB>text` per statement.
//! Rows: `| MQTT-a.b.c-n[, MQTT-...] | status | evidence | text |`, where a
//! test is written `file::function` (`tests/file.rs`, or
//! `mqtt_restart::...` for `crates/fogline/tests/mqtt_restart.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const STATUSES: [&str; 4] = ["covered", "by design", "not yet", "n/a"];

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `MQTT-` then dot-separated numbers, `-`, a number.
fn well_formed(n: &str) -> bool {
    let Some(rest) = n.strip_prefix("MQTT-") else {
        return false;
    };
    let Some((section, index)) = rest.rsplit_once('-') else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(index) && section.split('.').all(digits)
}

/// The statement numbers of a spec file, in order.
fn statements(file: &str) -> Vec<String> {
    let text = read(&crate_dir().join("spec").join(file));
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (n, said) = line
            .split_once('\t')
            .unwrap_or_else(|| panic!("{file}: no tab in {line:?}"));
        assert!(well_formed(n), "{file}: bad number {n:?}");
        assert!(!said.trim().is_empty(), "{file}: {n} has no text");
        assert!(!out.iter().any(|o| o == n), "{file}: {n} twice");
        out.push(n.to_string());
    }
    out
}

/// The text under the `## heading` line, up to the next `## ` heading.
fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let start = doc
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("CONFORMANCE.md has no {heading:?}"))
        + heading.len()
        + 2;
    let rest = &doc[start..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

struct Row {
    numbers: Vec<String>,
    status: String,
    evidence: String,
}

fn rows(section: &str) -> Vec<Row> {
    section
        .lines()
        .filter(|l| l.starts_with("| MQTT-"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            Row {
                numbers: cells[1].split(',').map(|n| n.trim().to_string()).collect(),
                status: cells.get(2).copied().unwrap_or("").to_string(),
                evidence: cells.get(3).copied().unwrap_or("").to_string(),
            }
        })
        .collect()
}

/// `file::function` tokens of an evidence cell.
fn test_refs(evidence: &str) -> Vec<(String, String)> {
    evidence
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter_map(|tok| {
            let (file, func) = tok.split_once("::")?;
            let ident = |s: &str| !s.is_empty() && !s.contains(':');
            (ident(file) && ident(func)).then(|| (file.to_string(), func.to_string()))
        })
        .collect()
}

fn test_file(file: &str) -> PathBuf {
    match file {
        "mqtt_restart" => crate_dir().join("../fogline/tests/mqtt_restart.rs"),
        _ => crate_dir().join("tests").join(format!("{file}.rs")),
    }
}

/// Checks one version's section; returns its counts per status.
fn check(
    doc: &str,
    heading: &str,
    list: &[String],
    errors: &mut Vec<String>,
) -> BTreeMap<&'static str, usize> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut counts: BTreeMap<&'static str, usize> = STATUSES.iter().map(|s| (*s, 0)).collect();
    for row in rows(section(doc, heading)) {
        let Some(status) = STATUSES.iter().find(|s| **s == row.status) else {
            errors.push(format!(
                "{heading}: {:?} has status {:?}",
                row.numbers, row.status
            ));
            continue;
        };
        let refs = test_refs(&row.evidence);
        if *status == "covered" && refs.is_empty() {
            errors.push(format!(
                "{heading}: {:?} is covered but names no test",
                row.numbers
            ));
        }
        for (file, func) in refs {
            let path = test_file(&file);
            let found = path.exists() && read(&path).contains(&format!("fn {func}("));
            if !found {
                errors.push(format!(
                    "{heading}: {:?} names {file}::{func}, which does not exist",
                    row.numbers
                ));
            }
        }
        for n in row.numbers {
            if !list.contains(&n) {
                errors.push(format!("{heading}: {n} is not a statement of this version"));
            }
            *counts.get_mut(status).expect("a status") += 1;
            *seen.entry(n).or_default() += 1;
        }
    }
    for n in list {
        match seen.get(n) {
            None => errors.push(format!("{heading}: {n} is missing")),
            Some(1) => {}
            Some(k) => errors.push(format!("{heading}: {n} has {k} rows")),
        }
    }
    counts
}

/// The summary row `| version | total | covered | by design | not yet | n/a |`.
fn summary(doc: &str, version: &str) -> Vec<usize> {
    let prefix = format!("| {version} |");
    let line = doc
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no summary row for {version}"));
    line.split('|')
        .skip(2)
        .filter(|c| !c.trim().is_empty())
        .map(|c| c.trim().parse().expect("a count"))
        .collect()
}

#[test]
fn the_statement_lists_are_complete() {
    // Appendix B of each specification: 3.1.1 has 141 numbered statements, 5.0 has 251.
    assert_eq!(statements("statements-311.txt").len(), 141);
    assert_eq!(statements("statements-50.txt").len(), 251);
}

#[test]
fn every_normative_statement_is_in_conformance_md_once_with_a_status() {
    let doc = read(&crate_dir().join("CONFORMANCE.md"));
    let mut errors = Vec::new();
    for (version, heading, file) in [
        ("3.1.1", "## MQTT 3.1.1 statements", "statements-311.txt"),
        ("5.0", "## MQTT 5.0 statements", "statements-50.txt"),
    ] {
        let list = statements(file);
        let counts = check(&doc, heading, &list, &mut errors);
        let mut want = vec![list.len()];
        want.extend(STATUSES.iter().map(|s| counts[s]));
        let got = summary(&doc, version);
        if got != want {
            errors.push(format!(
                "summary row for {version} says {got:?}; the rows give {want:?} (total, {STATUSES:?})"
            ));
        }
    }
    assert!(errors.is_empty(), "CONFORMANCE.md:\n{}", errors.join("\n"));
}

#[test]
fn the_checker_sees_test_references_and_numbers() {
    assert!(well_formed("MQTT-3.1.2-24") && well_formed("MQTT-4.2-1"));
    assert!(!well_formed("MQTT-3.1.2.7") && !well_formed("MQTT-3-8.3-4x"));
    assert_eq!(
        test_refs("`flow::a_b`, see src/x.rs; `mqtt_restart::c`"),
        vec![
            ("flow".to_string(), "a_b".to_string()),
            ("mqtt_restart".to_string(), "c".to_string())
        ]
    );
}
