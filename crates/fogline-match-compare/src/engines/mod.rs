//! The [`Engine`] trait and its implementations: fogline-match (counting and callback), the
//! `aho-corasick` crate (contiguous NFA and DFA), `daachorse`, and Hyperscan (feature
//! `hyperscan`).
//!
//! Every engine reports the same semantics: every occurrence of every pattern (overlapping),
//! ASCII case-insensitive for `nocase` patterns, patterns identified by their id.

mod aho;
mod daac;
mod fogline;
#[cfg(feature = "hyperscan")]
mod hyperscan;

use fogline_match::Simd;

use crate::{Error, PatternLine};

/// A multi-pattern matcher under test.
pub trait Engine {
    /// Its name in reports.
    fn name(&self) -> &'static str;
    /// Number of matches in `hay`.
    fn count(&mut self, hay: &[u8]) -> u64;
    /// Calls `f(pattern id, end)` for every match in `hay`.
    fn for_each(&mut self, hay: &[u8], f: &mut dyn FnMut(u32, usize));
    /// Heap bytes of the compiled pattern set (and scratch space), as the engine reports it.
    fn heap_bytes(&self) -> usize;
}

/// The engines known to the harness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// fogline-match, `Matcher::count`.
    Fogline,
    /// fogline-match, `Matcher::for_each_match` with a counting closure.
    FoglineCallback,
    /// Hyperscan 5 `hs_compile_lit_multi`, block mode.
    Hyperscan,
    /// `aho-corasick`, contiguous NFA, overlapping iterator.
    AhoCorasickNfa,
    /// `aho-corasick`, DFA, overlapping iterator.
    AhoCorasickDfa,
    /// `daachorse` double-array Aho-Corasick, overlapping iterator.
    Daachorse,
    /// fogline-match counting, forced to one filter implementation (not in the default list).
    FoglineForced(Simd),
}

impl EngineKind {
    /// All engines compiled into this build, in report order.
    pub fn all() -> Vec<EngineKind> {
        let mut v = vec![EngineKind::Fogline, EngineKind::FoglineCallback];
        if cfg!(feature = "hyperscan") {
            v.push(EngineKind::Hyperscan);
        }
        v.extend([
            EngineKind::AhoCorasickNfa,
            EngineKind::AhoCorasickDfa,
            EngineKind::Daachorse,
        ]);
        v
    }

    /// The name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Fogline => "fogline",
            EngineKind::FoglineCallback => "fogline-callback",
            EngineKind::Hyperscan => "hyperscan",
            EngineKind::AhoCorasickNfa => "aho-corasick-nfa",
            EngineKind::AhoCorasickDfa => "aho-corasick-dfa",
            EngineKind::Daachorse => "daachorse",
            EngineKind::FoglineForced(Simd::Scalar) => "fogline-scalar",
            EngineKind::FoglineForced(Simd::Table) => "fogline-table",
            EngineKind::FoglineForced(Simd::Avx2) => "fogline-avx2",
            EngineKind::FoglineForced(Simd::Avx512) => "fogline-avx512",
            EngineKind::FoglineForced(Simd::Neon) => "fogline-neon",
            EngineKind::FoglineForced(_) => "fogline",
        }
    }

    /// Parses a name; `aho-corasick` means the NFA; `fogline-scalar`, `fogline-avx2`,
    /// `fogline-avx512` and `fogline-neon` force one filter implementation.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownEngine`] for other names and for `hyperscan` when not compiled in.
    pub fn parse(s: &str) -> Result<EngineKind, Error> {
        let mut all = EngineKind::all();
        all.extend(
            [
                Simd::Scalar,
                Simd::Table,
                Simd::Avx2,
                Simd::Avx512,
                Simd::Neon,
            ]
            .map(EngineKind::FoglineForced),
        );
        let want = if s == "aho-corasick" {
            "aho-corasick-nfa"
        } else {
            s
        };
        all.iter()
            .copied()
            .find(|k| k.name() == want)
            .ok_or_else(|| {
                let names: Vec<&str> = all.iter().map(|k| k.name()).collect();
                Error::UnknownEngine(s.to_string(), names.join(", "))
            })
    }
}

/// Compiles `patterns` for `kind`.
///
/// # Errors
///
/// [`Error::Build`] when the engine rejects the set (for example an empty pattern for daachorse
/// or Hyperscan).
pub fn build_engine(kind: EngineKind, patterns: &[PatternLine]) -> Result<Box<dyn Engine>, Error> {
    Ok(match kind {
        EngineKind::Fogline => Box::new(fogline::Fogline::new(patterns, false, Simd::Auto)?),
        EngineKind::FoglineCallback => Box::new(fogline::Fogline::new(patterns, true, Simd::Auto)?),
        EngineKind::FoglineForced(simd) => Box::new(fogline::Fogline::new(patterns, false, simd)?),
        EngineKind::AhoCorasickNfa => Box::new(aho::Aho::new(patterns, false)?),
        EngineKind::AhoCorasickDfa => Box::new(aho::Aho::new(patterns, true)?),
        EngineKind::Daachorse => Box::new(daac::Daac::new(patterns)?),
        #[cfg(feature = "hyperscan")]
        EngineKind::Hyperscan => Box::new(hyperscan::Hyperscan::new(patterns)?),
        #[cfg(not(feature = "hyperscan"))]
        EngineKind::Hyperscan => {
            return Err(Error::UnknownEngine(
                "hyperscan".into(),
                "not compiled in".into(),
            ))
        }
    })
}
