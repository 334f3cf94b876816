//! Shared helpers: the reference matcher (the `aho-corasick` crate in overlapping mode) and a
//! check that runs every implementation of fogline-match against it.

use aho_corasick::{AhoCorasick, MatchKind};
use fogline_match::{MatcherBuilder, Simd};

/// One pattern: id, bytes, nocase.
pub type Pat = (u32, Vec<u8>, bool);

/// Every `(id, end)` match, sorted, by two overlapping Aho-Corasick automata (one exact, one
/// ASCII case-insensitive).
///
/// Empty patterns match once at every offset `0..=hay.len()`; they are counted here directly
/// because aho-corasick 1.x's overlapping iterator reported the empty match at the end of the
/// haystack twice when the set also held a non-empty pattern (found by the property test below).
pub fn reference(pats: &[Pat], hay: &[u8]) -> Vec<(u32, usize)> {
    let mut out = Vec::new();
    for p in pats.iter().filter(|p| p.1.is_empty()) {
        out.extend((0..=hay.len()).map(|end| (p.0, end)));
    }
    for nocase in [false, true] {
        let group: Vec<&Pat> = pats
            .iter()
            .filter(|p| p.2 == nocase && !p.1.is_empty())
            .collect();
        if group.is_empty() {
            continue;
        }
        let ac = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .ascii_case_insensitive(nocase)
            .build(group.iter().map(|p| &p.1))
            .unwrap();
        for m in ac.find_overlapping_iter(hay) {
            out.push((group[m.pattern().as_usize()].0, m.end()));
        }
    }
    out.sort_unstable();
    out
}

/// The implementations available on this machine.
pub fn variants() -> Vec<Simd> {
    [
        Simd::Scalar,
        Simd::Table,
        Simd::Avx2,
        Simd::Avx512,
        Simd::Neon,
    ]
    .into_iter()
    .filter(|&s| {
        let mut b = MatcherBuilder::new();
        b.simd(s).build().is_ok()
    })
    .collect()
}

/// Checks block search, count and streaming (with `cuts` as chunk boundaries) of every
/// implementation against the reference; returns a description of the first difference.
pub fn check(pats: &[Pat], hay: &[u8], cuts: &[usize]) -> Result<(), String> {
    let want = reference(pats, hay);
    for simd in variants() {
        let mut b = MatcherBuilder::new();
        for (id, p, nocase) in pats {
            b.add(*id, p, *nocase);
        }
        let m = b.simd(simd).build().map_err(|e| e.to_string())?;
        let mut got: Vec<(u32, usize)> =
            m.find_all(hay).iter().map(|m| (m.pattern, m.end)).collect();
        got.sort_unstable();
        if got != want {
            return Err(format!("{simd:?} find_all: got {got:?}, want {want:?}"));
        }
        if m.count(hay) != want.len() as u64 {
            return Err(format!(
                "{simd:?} count: got {}, want {}",
                m.count(hay),
                want.len()
            ));
        }
        let mut bounds: Vec<usize> = cuts.iter().map(|&c| c.min(hay.len())).collect();
        bounds.push(0);
        bounds.push(hay.len());
        bounds.sort_unstable();
        let mut s = m.stream();
        let mut streamed = Vec::new();
        for w in bounds.windows(2) {
            s.feed(&hay[w[0]..w[1]], |m| streamed.push((m.pattern, m.end)));
        }
        streamed.sort_unstable();
        if streamed != want {
            return Err(format!(
                "{simd:?} stream {bounds:?}: got {streamed:?}, want {want:?}"
            ));
        }
    }
    Ok(())
}

/// Decodes arbitrary bytes into a pattern set, an input and stream cut points, so that fuzzers
/// and property tests share one entry point.
///
/// Layout: byte 0 is the pattern count (mod 16); each pattern is a length byte (mod 24; its top
/// bit is the nocase flag) followed by that many bytes; byte after the patterns gives up to three
/// cut points (each the next byte times 3); the rest is the input.
pub fn decode(data: &[u8]) -> (Vec<Pat>, Vec<u8>, Vec<usize>) {
    let mut it = data.iter().copied();
    let count = it.next().unwrap_or(0) % 16;
    let mut pats = Vec::new();
    for id in 0..u32::from(count) {
        let Some(head) = it.next() else { break };
        let len = usize::from(head & 0x7f) % 24;
        let bytes: Vec<u8> = it.by_ref().take(len).collect();
        pats.push((id, bytes, head & 0x80 != 0));
    }
    let ncuts = usize::from(it.next().unwrap_or(0) % 4);
    let cuts = it
        .by_ref()
        .take(ncuts)
        .map(|b| usize::from(b) * 3)
        .collect();
    (pats, it.collect(), cuts)
}
