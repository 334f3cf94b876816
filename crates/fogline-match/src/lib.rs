//! A vectorised multi-pattern literal matcher: every occurrence of every pattern, with the
//! output of an overlapping Aho-Corasick automaton, found by cache-resident SIMD filters and a
//! separate verification round (V-PATCH, thesis 001 Paper I section 2.4), plus explicit handling
//! of floods (runs of one byte) and short patterns. See `DESIGN.md` in this crate.
//!
//! The crate knows nothing of networking and depends only on `std`.
//!
//! - [`MatcherBuilder`] collects patterns (any bytes, a per-pattern ASCII case-insensitive flag,
//!   an id each) and builds a [`Matcher`].
//! - [`Matcher::find_all`], [`Matcher::for_each_match`] and [`Matcher::count`] search one buffer.
//! - [`Matcher::stream`] returns a [`Stream`] that finds matches spanning chunk boundaries.
//!
//! Matches are `(pattern id, end offset)`; their order is unspecified (the filters report short
//! and long patterns in separate rounds). Sort them if order matters.
//!
//! ```
//! use fogline_match::MatcherBuilder;
//!
//! let mut b = MatcherBuilder::new();
//! b.add(0, "aa", false).add(1, "AB", true);
//! let m = b.build()?;
//! let mut found: Vec<(u32, usize)> =
//!     m.find_all(b"aaab").iter().map(|m| (m.pattern, m.end)).collect();
//! found.sort_unstable();
//! assert_eq!(found, [(0, 2), (0, 3), (1, 4)]);
//! assert_eq!(m.count(b"aaab"), 3);
//! # Ok::<(), fogline_match::Error>(())
//! ```
#![deny(missing_docs)]

mod builder;
mod error;
mod filter;
mod fold;
mod map;
mod runs;
mod scan;
mod short;
mod sink;
mod stream;
mod tables;
mod verify;

pub use builder::MatcherBuilder;
pub use error::Error;
pub use filter::Simd;
pub use stream::Stream;

use sink::{Callback, Counter};
use tables::Tables;

/// The longest pattern accepted, in bytes.
pub const MAX_PATTERN_LEN: usize = 1 << 16;

/// One occurrence of a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Match {
    /// The id given to the pattern when it was added.
    pub pattern: u32,
    /// Offset just past the match's last byte.
    pub end: usize,
}

/// A compiled pattern set; immutable, `Send + Sync`, cheap to share by reference.
#[derive(Debug, Clone)]
pub struct Matcher {
    tables: Tables,
    simd: Simd,
    imp: filter::Impl,
    patterns: usize,
}

impl Matcher {
    /// Builds a matcher from `(id, bytes, nocase)` triples.
    ///
    /// # Errors
    ///
    /// As [`MatcherBuilder::build`].
    pub fn new<I, P>(patterns: I) -> Result<Matcher, Error>
    where
        I: IntoIterator<Item = (u32, P, bool)>,
        P: AsRef<[u8]>,
    {
        let mut b = MatcherBuilder::new();
        for (id, p, nocase) in patterns {
            b.add(id, p, nocase);
        }
        b.build()
    }

    /// Calls `f` for every match in `hay`.
    pub fn for_each_match<F: FnMut(Match)>(&self, hay: &[u8], f: F) {
        let mut sink = Callback { base: 0, f };
        scan::scan(self.imp, &self.tables, hay, 0, hay.len(), 0, &mut sink);
        if !self.tables.empty_ids.is_empty() {
            for end in 0..=hay.len() {
                for &id in self.tables.empty_ids.iter() {
                    (sink.f)(Match { pattern: id, end });
                }
            }
        }
    }

    /// Every match in `hay`, in unspecified order.
    pub fn find_all(&self, hay: &[u8]) -> Vec<Match> {
        let mut out = Vec::new();
        self.for_each_match(hay, |m| out.push(m));
        out
    }

    /// The number of matches in `hay`; faster than counting callbacks (a flood's matches are
    /// counted in one step).
    pub fn count(&self, hay: &[u8]) -> u64 {
        let mut sink = Counter { count: 0 };
        scan::scan(self.imp, &self.tables, hay, 0, hay.len(), 0, &mut sink);
        sink.count + self.tables.empty_ids.len() as u64 * (hay.len() as u64 + 1)
    }

    /// Starts a streaming search.
    pub fn stream(&self) -> Stream<'_> {
        Stream::new(self)
    }

    /// Number of patterns.
    pub fn patterns(&self) -> usize {
        self.patterns
    }

    /// Length of the longest pattern.
    pub fn max_len(&self) -> usize {
        self.tables.max_len
    }

    /// The filter implementation in use.
    pub fn simd(&self) -> Simd {
        self.simd
    }

    /// Heap bytes held by the compiled tables.
    pub fn heap_bytes(&self) -> usize {
        self.tables.heap_bytes()
    }
}
