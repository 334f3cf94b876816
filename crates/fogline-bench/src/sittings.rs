//! The sittings of a run carried across sessions and machines.
//!
//! `bench/long-run.sh` appends one row to `sittings.tsv` in the results folder each time it
//! starts or resumes a run: the time, how many runs were already measured, the commit, and
//! the machine (kernel, CPU, cores). A run of many hours meets several machines and kernel
//! builds; this file says which runs each one measured, so that a summary does not pass the
//! first sitting's machine off as everyone's.

use std::fmt::Write as _;

/// The file `bench/long-run.sh` writes beside `results.json`.
pub const FILE: &str = "sittings.tsv";

/// One start or resume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sitting {
    /// When it began (UTC, as written).
    pub started: String,
    /// Runs already in `results.json` when it began.
    pub runs_before: usize,
    /// The commit that measured.
    pub commit: String,
    /// `uname -r`.
    pub kernel: String,
    /// The CPU's model name.
    pub cpu: String,
    /// Online cores.
    pub cores: String,
}

/// Parses `sittings.tsv`: a header row, then one tab-separated row per sitting. Rows that do
/// not have six fields or whose run count is not a number are skipped.
pub fn parse(text: &str) -> Vec<Sitting> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let [started, runs, commit, kernel, cpu, cores] = f[..] else {
                return None;
            };
            Some(Sitting {
                started: started.into(),
                runs_before: runs.trim().parse().ok()?,
                commit: commit.into(),
                kernel: kernel.into(),
                cpu: cpu.into(),
                cores: cores.into(),
            })
        })
        .collect()
}

/// A Markdown section listing `sittings`, each with the runs it measured (up to the next
/// sitting's start, the last one up to `total` runs). Empty when there are none.
pub fn markdown(sittings: &[Sitting], total: usize) -> String {
    if sittings.is_empty() {
        return String::new();
    }
    let mut s = String::new();
    let _ = writeln!(s, "\n## Sittings\n");
    let _ = writeln!(s, "Each start or resume by `bench/long-run.sh`, with the machine it ran on (from `{FILE}`). Starts before that file was kept are listed only under \"interrupted and resumed\" above.\n");
    let _ = writeln!(
        s,
        "| started (UTC) | runs before | runs measured | commit | kernel | CPU | cores |"
    );
    let _ = writeln!(s, "|{}", " --- |".repeat(7));
    for (i, x) in sittings.iter().enumerate() {
        let end = sittings.get(i + 1).map_or(total, |n| n.runs_before);
        let _ = writeln!(
            s,
            "| {} | {} | {} | `{}` | {} | {} | {} |",
            x.started,
            x.runs_before,
            end.saturating_sub(x.runs_before),
            x.commit,
            x.kernel,
            x.cpu,
            x.cores
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const TSV: &str = "started_utc\truns_before\tcommit\tkernel\tcpu\tcores\n\
        2026-11-25T18:40:00Z\t283\ta33c14c69753\t6.18.44-fc-v669\tAMD EPYC\t2\n\
        garbage row\n\
        2026-11-26T09:00:00Z\tx\ta33c14c69753\t6.18.44-fc-v670\tAMD EPYC\t2\n\
        2026-11-26T10:00:00Z\t400\ta33c14c69753\t6.18.44-fc-v671\tAMD EPYC\t2\n";

    #[test]
    fn parses_rows_and_skips_broken_ones() {
        let v = parse(TSV);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].runs_before, 283);
        assert_eq!(v[0].kernel, "6.18.44-fc-v669");
        assert_eq!(v[1].started, "2026-11-26T10:00:00Z");
        assert!(parse("").is_empty());
    }

    #[test]
    fn each_sitting_measured_the_runs_up_to_the_next() {
        let md = markdown(&parse(TSV), 450);
        assert!(md.contains("| 2026-11-25T18:40:00Z | 283 | 117 | `a33c14c69753` | 6.18.44-fc-v669 | AMD EPYC | 2 |"), "{md}");
        assert!(md.contains("| 2026-11-26T10:00:00Z | 400 | 50 |"), "{md}");
        assert_eq!(markdown(&[], 10), "");
    }
}
