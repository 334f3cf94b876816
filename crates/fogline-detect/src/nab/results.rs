//! Detector outputs in NAB's results layout:
//! `<results>/<detector>/<category>/<detector>_<name>.csv` with header
//! `timestamp,value,anomaly_score,...`, one row per data row. Reading them lets
//! the scorer be checked against NAB's published `final_results.json`.
//! Scores are clamped to `[0, 1]`: some published outputs (`expose`) hold small
//! negative scores, which no optimised threshold above 0 can detect anyway.

use super::corpus::{parse_columns, Corpus};
use super::NabError;
use std::path::Path;

/// Reads the anomaly scores of `detector` under `results_dir` for every file of
/// `corpus`, in corpus order.
///
/// # Errors
/// [`NabError`] if a file is missing, malformed, or has a different row count.
pub fn load_scores(
    results_dir: &Path,
    detector: &str,
    corpus: &Corpus,
) -> Result<Vec<Vec<f64>>, NabError> {
    let mut out = Vec::with_capacity(corpus.files.len());
    for f in &corpus.files {
        let (dir, name) = f.path.rsplit_once('/').unwrap_or(("", &f.path));
        let path = results_dir
            .join(detector)
            .join(dir)
            .join(format!("{detector}_{name}"));
        let text = std::fs::read_to_string(&path).map_err(|source| NabError::Io {
            path: path.clone(),
            source,
        })?;
        let (_, mut scores) = parse_columns(&text, 2).map_err(|(line, reason)| NabError::Row {
            path: path.clone(),
            line,
            reason,
        })?;
        if scores.len() != f.values.len() {
            return Err(NabError::Scores(format!(
                "{}: {} rows, data has {}",
                path.display(),
                scores.len(),
                f.values.len()
            )));
        }
        scores.iter_mut().for_each(|s| *s = s.clamp(0.0, 1.0));
        out.push(scores);
    }
    Ok(out)
}

/// The thresholds NAB recorded for `detector`, one per profile of `corpus`, read
/// from `<detector>/<detector>_<profile>_scores.csv` (column `Threshold` of the
/// first data row). `None` if any file is missing or unreadable.
pub fn recorded_thresholds(
    results_dir: &Path,
    detector: &str,
    corpus: &Corpus,
) -> Option<Vec<f64>> {
    corpus
        .profiles
        .iter()
        .map(|p| {
            let path = results_dir
                .join(detector)
                .join(format!("{detector}_{}_scores.csv", p.name));
            let text = std::fs::read_to_string(path).ok()?;
            let header: Vec<&str> = text.lines().next()?.split(',').collect();
            let col = header.iter().position(|h| h.trim() == "Threshold")?;
            text.lines()
                .nth(1)?
                .split(',')
                .nth(col)?
                .trim()
                .parse()
                .ok()
        })
        .collect()
}

/// Names of the detector folders under `results_dir`, sorted.
///
/// # Errors
/// [`NabError::Io`] if the directory cannot be read.
pub fn detector_names(results_dir: &Path) -> Result<Vec<String>, NabError> {
    let io = |source| NabError::Io {
        path: results_dir.to_path_buf(),
        source,
    };
    let mut names = Vec::new();
    for e in std::fs::read_dir(results_dir).map_err(io)? {
        let e = e.map_err(io)?;
        if e.path().is_dir() {
            names.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}
