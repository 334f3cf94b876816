//! [`MatcherBuilder`]: collects patterns and options, validates them and compiles a [`Matcher`].

use crate::error::{Error, ErrorKind};
use crate::filter::Simd;
use crate::tables::{Source, Tables};
use crate::{Matcher, MAX_PATTERN_LEN};

/// Collects patterns, then builds a [`Matcher`].
///
/// # Example
///
/// ```
/// use fogline_match::MatcherBuilder;
///
/// let mut b = MatcherBuilder::new();
/// b.add(7, "GET ", false).add(9, "host:", true);
/// let m = b.build()?;
/// let found: Vec<(u32, usize)> = m
///     .find_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
///     .iter()
///     .map(|m| (m.pattern, m.end))
///     .collect();
/// assert_eq!(found, [(7, 4), (9, 21)]);
/// # Ok::<(), fogline_match::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct MatcherBuilder {
    patterns: Vec<Source>,
    simd: Simd,
}

impl Default for MatcherBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl MatcherBuilder {
    /// An empty builder using the best filter implementation of this CPU.
    pub fn new() -> Self {
        MatcherBuilder {
            patterns: Vec::new(),
            simd: Simd::Auto,
        }
    }

    /// Adds a pattern: its id (reported with each match; ids need not be unique), its bytes, and
    /// whether ASCII letters match case-insensitively.
    ///
    /// Any bytes are allowed, including NUL and the empty pattern (which matches at every
    /// offset, as in Aho-Corasick).
    pub fn add(&mut self, id: u32, bytes: impl AsRef<[u8]>, nocase: bool) -> &mut Self {
        self.patterns.push(Source {
            id,
            bytes: bytes.as_ref().to_vec(),
            nocase,
        });
        self
    }

    /// Adds patterns numbered by their position among all patterns added so far, all with the
    /// same case flag.
    pub fn extend<I, P>(&mut self, patterns: I, nocase: bool) -> &mut Self
    where
        I: IntoIterator<Item = P>,
        P: AsRef<[u8]>,
    {
        for p in patterns {
            let id = self.patterns.len() as u32;
            self.add(id, p, nocase);
        }
        self
    }

    /// Forces a filter implementation (for tests and benchmarks); the default is
    /// [`Simd::Auto`].
    pub fn simd(&mut self, simd: Simd) -> &mut Self {
        self.simd = simd;
        self
    }

    /// Number of patterns added.
    pub fn len(&self) -> usize {
        self.patterns.len()
    }

    /// Whether no pattern was added.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Compiles the matcher.
    ///
    /// # Errors
    ///
    /// When a pattern is longer than [`MAX_PATTERN_LEN`], when there are more than `u32::MAX - 2`
    /// patterns or 4 GiB of pattern bytes, or when the forced [`Simd`] implementation is not
    /// supported by this CPU.
    pub fn build(&self) -> Result<Matcher, Error> {
        if self.patterns.len() >= (u32::MAX - 2) as usize {
            return Err(Error::new(ErrorKind::TooManyPatterns(self.patterns.len())));
        }
        let mut total = 0usize;
        for (index, p) in self.patterns.iter().enumerate() {
            if p.bytes.len() > MAX_PATTERN_LEN {
                return Err(Error::new(ErrorKind::PatternTooLong {
                    index,
                    len: p.bytes.len(),
                }));
            }
            total += p.bytes.len();
        }
        if total >= u32::MAX as usize {
            return Err(Error::new(ErrorKind::TooManyBytes(total)));
        }
        let (simd, imp) = self
            .simd
            .resolve()
            .ok_or(Error::new(ErrorKind::Unsupported(match self.simd {
                Simd::Avx2 => "AVX2",
                Simd::Avx512 => "AVX-512 (F, BW, VBMI)",
                _ => "NEON",
            })))?;
        Ok(Matcher {
            tables: Tables::build(&self.patterns),
            simd,
            imp,
            patterns: self.patterns.len(),
        })
    }
}
