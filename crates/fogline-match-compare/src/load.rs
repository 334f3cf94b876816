//! Loaders for the shared data formats (`shared/data/patterns/README.md`,
//! `shared/data/traffic/README.md`) and a generator of random input.
//!
//! - Patterns: one line per pattern, `<hex>\t<nocase>` (`0` or `1`), LF-terminated; a pattern's
//!   id is its 1-based line number.
//! - Packets: `PREFIX.bin` holds the payloads back to back; `PREFIX.lens` one decimal length per
//!   line, summing to the size of the `.bin`.

use std::path::{Path, PathBuf};

use crate::Error;

/// One pattern of a pattern file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternLine {
    /// 1-based line number.
    pub id: u32,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// ASCII case-insensitive.
    pub nocase: bool,
}

/// Input to scan: one buffer and where its packets start and end.
#[derive(Debug, Clone)]
pub struct Input {
    /// A short name for reports.
    pub name: String,
    /// All payload bytes.
    pub data: Vec<u8>,
    /// Packet lengths, summing to `data.len()`.
    pub lens: Vec<usize>,
}

impl Input {
    /// The packets as slices of `data`.
    pub fn packets(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.lens.iter().scan(0usize, move |at, &len| {
            let p = &self.data[*at..*at + len];
            *at += len;
            Some(p)
        })
    }

    /// The whole file as one packet.
    pub fn whole(name: impl Into<String>, data: Vec<u8>) -> Input {
        let lens = vec![data.len()];
        Input {
            name: name.into(),
            data,
            lens,
        }
    }
}

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Parses the text of a pattern file.
///
/// # Errors
///
/// [`Error::Format`] on a line without a tab, with odd-length or non-hex bytes, or a flag other
/// than `0`/`1`.
pub fn parse_patterns(path: &Path, text: &[u8]) -> Result<Vec<PatternLine>, Error> {
    let bad = |line: usize, what: &str| Error::Format {
        path: path.to_path_buf(),
        line,
        what: what.to_string(),
    };
    let mut out = Vec::new();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let no = i + 1;
        let tab = line
            .iter()
            .position(|&b| b == b'\t')
            .ok_or_else(|| bad(no, "no tab"))?;
        let (hex, flag) = (&line[..tab], &line[tab + 1..]);
        if hex.len() % 2 != 0 {
            return Err(bad(no, "odd number of hex digits"));
        }
        let bytes = hex
            .chunks(2)
            .map(|d| Some(hex_digit(d[0])? << 4 | hex_digit(d[1])?))
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(|| bad(no, "not hex"))?;
        let nocase = match flag {
            b"0" => false,
            b"1" => true,
            _ => return Err(bad(no, "flag is not 0 or 1")),
        };
        let id = u32::try_from(no).map_err(|_| bad(no, "too many lines"))?;
        out.push(PatternLine { id, bytes, nocase });
    }
    Ok(out)
}

/// Prints patterns in the shared format (the inverse of [`parse_patterns`], ids aside).
pub fn format_patterns(patterns: &[PatternLine]) -> String {
    let mut out = String::new();
    for p in patterns {
        for b in &p.bytes {
            out.push_str(&format!("{b:02x}"));
        }
        out.push('\t');
        out.push(if p.nocase { '1' } else { '0' });
        out.push('\n');
    }
    out
}

/// Loads a pattern file.
///
/// # Errors
///
/// [`Error::Io`] or [`Error::Format`].
pub fn load_patterns(path: &Path) -> Result<Vec<PatternLine>, Error> {
    parse_patterns(path, &read(path)?)
}

/// Loads `PREFIX.bin` and `PREFIX.lens`.
///
/// # Errors
///
/// [`Error::Io`], or [`Error::Format`] when a length is not a number or the lengths do not sum
/// to the size of the `.bin`.
pub fn load_packets(prefix: &Path) -> Result<Input, Error> {
    let with = |ext: &str| {
        let mut p = prefix.as_os_str().to_owned();
        p.push(ext);
        PathBuf::from(p)
    };
    let (bin, lens_path) = (with(".bin"), with(".lens"));
    let data = read(&bin)?;
    let text = read(&lens_path)?;
    let mut lens = Vec::new();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let len = std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .ok_or_else(|| Error::Format {
                path: lens_path.clone(),
                line: i + 1,
                what: "not a length".into(),
            })?;
        lens.push(len);
    }
    let total: usize = lens.iter().sum();
    if total != data.len() {
        return Err(Error::Format {
            path: lens_path,
            line: lens.len(),
            what: format!("lengths sum to {total}, .bin has {} bytes", data.len()),
        });
    }
    let name = prefix
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Input { name, data, lens })
}

/// `len` pseudo-random bytes (xorshift64*, fixed `seed`), uniform over all 256 values.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_shared_pattern_format() {
        let p = parse_patterns(Path::new("x"), b"474554\t0\n00ff\t1\n").unwrap();
        assert_eq!(
            p[0],
            PatternLine {
                id: 1,
                bytes: b"GET".to_vec(),
                nocase: false
            }
        );
        assert_eq!(
            p[1],
            PatternLine {
                id: 2,
                bytes: vec![0, 0xff],
                nocase: true
            }
        );
        for bad in [&b"47\n"[..], b"4\t0\n", b"zz\t0\n", b"47\t2\n"] {
            assert!(parse_patterns(Path::new("x"), bad).is_err());
        }
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_pattern_files_parse_or_fail_cleanly(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            if let Ok(p) = parse_patterns(Path::new("x"), &data) {
                let q = parse_patterns(Path::new("x"), format_patterns(&p).as_bytes()).unwrap();
                proptest::prop_assert!(q.iter().map(|x| (&x.bytes, x.nocase)).eq(p.iter().map(|x| (&x.bytes, x.nocase))));
            }
        }

        #[test]
        fn formatted_patterns_parse_back(set in proptest::collection::vec((proptest::collection::vec(proptest::prelude::any::<u8>(), 0..8), proptest::prelude::any::<bool>()), 0..10)) {
            let p: Vec<PatternLine> = set.into_iter().filter(|(b, _)| !b.is_empty()).enumerate()
                .map(|(i, (bytes, nocase))| PatternLine { id: i as u32 + 1, bytes, nocase }).collect();
            let q = parse_patterns(Path::new("x"), format_patterns(&p).as_bytes()).unwrap();
            proptest::prop_assert_eq!(q, p);
        }
    }

    #[test]
    fn random_bytes_are_deterministic_and_spread() {
        let a = random_bytes(1 << 16, 7);
        assert_eq!(a, random_bytes(1 << 16, 7));
        let mut seen = [0usize; 256];
        a.iter().for_each(|&b| seen[usize::from(b)] += 1);
        assert!(seen.iter().all(|&n| n > 150 && n < 400));
    }
}
