//! Loading a NAB directory.
//!
//! Layout (NAB v1.1): `data/<category>/<name>.csv` with header `timestamp,value`
//! (LF or CRLF line ends, last newline optional); `labels/combined_windows.json`
//! mapping each data path (relative to `data/`, `/`-separated) to a list of
//! `[start, end]` timestamps; `config/profiles.json` mapping each profile name to
//! `{"CostMatrix": {"tpWeight", "fnWeight", "fpWeight", ...}}`.
//!
//! Invariants after loading: files are sorted by path; every file has at least
//! one row; every window's start and end are timestamps of rows of its file.

use super::{time, NabError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One data file with its anomaly windows.
#[derive(Debug, Clone)]
pub struct DataFile {
    /// Path relative to `data/`, `/`-separated, as the labels name it.
    pub path: String,
    /// Row timestamps, seconds since the epoch, in file order (not always increasing).
    pub timestamps: Vec<i64>,
    /// Row values.
    pub values: Vec<f64>,
    /// Anomaly windows as `(start, end)` timestamps, in label order.
    pub windows: Vec<(i64, i64)>,
}

/// One scoring profile (cost matrix).
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Profile name as in `profiles.json`, e.g. `standard`.
    pub name: String,
    /// Weight of a true positive.
    pub tp: f64,
    /// Weight of a missed window.
    pub fn_: f64,
    /// Weight of a false positive.
    pub fp: f64,
}

/// A loaded NAB corpus.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// Data files sorted by path.
    pub files: Vec<DataFile>,
    /// Profiles in the order standard, reward_low_FP_rate, reward_low_FN_rate
    /// (others after, by name).
    pub profiles: Vec<Profile>,
}

impl Corpus {
    /// Loads `data/`, `labels/combined_windows.json` and `config/profiles.json`
    /// under `dir`.
    ///
    /// # Errors
    /// [`NabError`] if a file is missing or malformed, or the labels name a file
    /// or timestamp the data lacks.
    pub fn load(dir: &Path) -> Result<Corpus, NabError> {
        let mut paths = Vec::new();
        collect_csv(&dir.join("data"), &mut paths)?;
        paths.sort();
        let windows_path = dir.join("labels/combined_windows.json");
        let labels: BTreeMap<String, Vec<[String; 2]>> = read_json(&windows_path)?;
        let mut files = Vec::with_capacity(paths.len());
        for p in &paths {
            let rel = p
                .strip_prefix(dir.join("data"))
                .map_err(|_| NabError::Labels(format!("{} outside data/", p.display())))?;
            let rel: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let rel = rel.join("/");
            let text = std::fs::read_to_string(p).map_err(|source| NabError::Io {
                path: p.clone(),
                source,
            })?;
            let (timestamps, values) =
                parse_csv(&text).map_err(|(line, reason)| NabError::Row {
                    path: p.clone(),
                    line,
                    reason,
                })?;
            let mut windows = Vec::new();
            for [a, b] in labels
                .get(&rel)
                .ok_or_else(|| NabError::Labels(format!("no entry for {rel}")))?
            {
                let pa = time::parse(a)
                    .ok_or_else(|| NabError::Labels(format!("{rel}: bad timestamp {a}")))?;
                let pb = time::parse(b)
                    .ok_or_else(|| NabError::Labels(format!("{rel}: bad timestamp {b}")))?;
                if !timestamps.contains(&pa) || !timestamps.contains(&pb) {
                    return Err(NabError::Labels(format!(
                        "{rel}: window {a}..{b} not on a row"
                    )));
                }
                windows.push((pa, pb));
            }
            files.push(DataFile {
                path: rel,
                timestamps,
                values,
                windows,
            });
        }
        let profiles_path = dir.join("config/profiles.json");
        let raw: BTreeMap<String, RawProfile> = read_json(&profiles_path)?;
        let mut profiles: Vec<Profile> = raw
            .into_iter()
            .map(|(name, p)| Profile {
                name,
                tp: p.cost.tp,
                fn_: p.cost.fn_,
                fp: p.cost.fp,
            })
            .collect();
        let rank = |n: &str| {
            ["standard", "reward_low_FP_rate", "reward_low_FN_rate"]
                .iter()
                .position(|k| *k == n)
                .unwrap_or(3)
        };
        profiles.sort_by(|a, b| rank(&a.name).cmp(&rank(&b.name)).then(a.name.cmp(&b.name)));
        Ok(Corpus { files, profiles })
    }

    /// Total number of labelled windows (NAB's perfect detector scores this many
    /// true positives).
    pub fn window_count(&self) -> usize {
        self.files.iter().map(|f| f.windows.len()).sum()
    }

    /// Total number of rows.
    pub fn row_count(&self) -> usize {
        self.files.iter().map(|f| f.values.len()).sum()
    }
}

#[derive(serde::Deserialize)]
struct RawProfile {
    #[serde(rename = "CostMatrix")]
    cost: RawCost,
}

#[derive(serde::Deserialize)]
struct RawCost {
    #[serde(rename = "tpWeight")]
    tp: f64,
    #[serde(rename = "fnWeight")]
    fn_: f64,
    #[serde(rename = "fpWeight")]
    fp: f64,
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, NabError> {
    let text = std::fs::read_to_string(path).map_err(|source| NabError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| NabError::Json {
        path: path.to_path_buf(),
        source,
    })
}

fn collect_csv(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), NabError> {
    let entries = std::fs::read_dir(dir).map_err(|source| NabError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for e in entries {
        let e = e.map_err(|source| NabError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let p = e.path();
        if p.is_dir() {
            collect_csv(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "csv") {
            out.push(p);
        }
    }
    Ok(())
}

/// Parses a NAB data file: a header line, then `timestamp,value` rows.
/// Extra columns after the value are ignored. Empty lines are skipped.
///
/// # Errors
/// `(line, reason)` for the first bad row (1-based line), or an empty file.
pub fn parse_csv(text: &str) -> Result<(Vec<i64>, Vec<f64>), (usize, String)> {
    parse_columns(text, 1)
}

/// Parses rows of `timestamp,...` taking the number in column `col` (0-based,
/// `col >= 1`); used for data files (`col = 1`) and NAB results files
/// (`anomaly_score`, column 2).
///
/// # Errors
/// `(line, reason)` for the first bad row, or an empty file.
pub fn parse_columns(text: &str, col: usize) -> Result<(Vec<i64>, Vec<f64>), (usize, String)> {
    let mut ts = Vec::new();
    let mut vs = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let mut fields = line.split(',');
        let t = fields
            .next()
            .and_then(time::parse)
            .ok_or((i + 1, "bad timestamp".to_string()))?;
        let v = fields
            .nth(col - 1)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite())
            .ok_or((i + 1, format!("bad number in column {col}")))?;
        ts.push(t);
        vs.push(v);
    }
    if ts.is_empty() {
        return Err((1, "no rows".to_string()));
    }
    Ok((ts, vs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_crlf_and_exponents() {
        let (t, v) = parse_csv(
            "timestamp,value\r\n2014-01-01 00:00:00,1.5\r\n2014-01-01 00:05:00,-1.03e-05",
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[1] - t[0], 300);
        assert_eq!(v, vec![1.5, -1.03e-05]);
    }

    #[test]
    fn reports_bad_line() {
        assert_eq!(
            parse_csv("h\n2014-01-01 00:00:00,1\n2014-01-01 00:05:00,x\n")
                .unwrap_err()
                .0,
            3
        );
        assert!(parse_csv("timestamp,value\n").is_err());
        assert!(parse_csv("h\n2014-01-01 00:00:00,NaN\n").is_err());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = parse_csv(&text);
            let _ = parse_columns(&text, 2);
        }
    }
}
