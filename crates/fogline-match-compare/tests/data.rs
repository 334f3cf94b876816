//! Exact equality on the shared data sets (`shared/data`, beside the repository).
//!
//! The fast test runs in every `cargo test`: `et2017_fast4` on `corpus_http`, per packet,
//! against the per-pattern reference file, plus streaming over the same bytes. The full check is
//! `#[ignore]`d in debug builds because it scans ~50 MB with four pattern sets through two
//! engines; `scripts/test.sh` (CI) runs it in release:
//!
//! ```text
//! cargo test --release -p fogline-match-compare --all-features --test data -- --ignored
//! ```

use std::path::{Path, PathBuf};

use fogline_match::MatcherBuilder;
use fogline_match_compare::run::per_pattern;
use fogline_match_compare::{build_engine, load_packets, load_patterns, EngineKind, Input};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

/// The per-pattern reference: `line  hex  nocase  matches`, tab-separated.
fn expected(file: &str) -> Vec<(u32, u64)> {
    let path = data().join("traffic/expected").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].parse().unwrap(), f[3].parse().unwrap())
        })
        .collect()
}

#[test]
fn fast4_on_http_equals_the_per_pattern_reference() {
    let pats = load_patterns(&data().join("patterns/et2017_fast4.tsv")).unwrap();
    let input = load_packets(&data().join("traffic/corpus_http")).unwrap();
    let want = expected("et2017_fast4.corpus_http.per_pattern.tsv");
    let got = per_pattern(EngineKind::Fogline, &pats, &input).unwrap();
    assert_eq!(got, want);
    let mut e = build_engine(EngineKind::Fogline, &pats).unwrap();
    let total: u64 = input.packets().map(|p| e.count(p)).sum();
    assert_eq!(total, 667_804);
}

#[test]
fn streaming_the_http_corpus_equals_one_block_scan() {
    let pats = load_patterns(&data().join("patterns/et2017_fast4.tsv")).unwrap();
    let input = load_packets(&data().join("traffic/corpus_http")).unwrap();
    let mut b = MatcherBuilder::new();
    for p in &pats {
        b.add(p.id, &p.bytes, p.nocase);
    }
    let m = b.build().unwrap();
    let mut block = m.find_all(&input.data);
    let mut s = m.stream();
    let mut streamed = Vec::new();
    for p in input.packets() {
        s.feed(p, |x| streamed.push(x));
    }
    block.sort_unstable();
    streamed.sort_unstable();
    assert_eq!(block.len(), streamed.len());
    assert!(block == streamed);
}

/// Per packet: match count and an order-independent fingerprint of the `(id, end)` pairs.
fn fingerprints(
    kind: EngineKind,
    pats: &[fogline_match_compare::PatternLine],
    input: &Input,
) -> Vec<(u64, u64)> {
    let mut e = build_engine(kind, pats).unwrap();
    input
        .packets()
        .map(|p| {
            let (mut n, mut h) = (0u64, 0u64);
            e.for_each(p, &mut |id, end| {
                n += 1;
                let x = (u64::from(id) << 32 | end as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                h = h.wrapping_add(x ^ (x >> 29));
            });
            (n, h)
        })
        .collect()
}

#[test]
#[ignore = "full data sets; run in release (see the module docs)"]
fn every_set_on_every_corpus_equals_aho_corasick_and_the_readme_totals() {
    let totals = [
        ("et2017_fast4", "corpus_http", 667_804u64),
        ("et2017_fast4", "corpus_all", 13_051_044),
        ("et2017_fast4_http", "corpus_http", 206_157),
        ("et2017_fast4_http", "corpus_all", 4_567_635),
        ("et2017_fast", "corpus_http", 2_682_815),
        ("et2017_fast", "corpus_all", 31_369_266),
        ("et2017_all", "corpus_http", 8_312_376),
        ("et2017_all", "corpus_all", 84_528_480),
    ];
    for (set, corpus, total) in totals {
        let pats = load_patterns(&data().join(format!("patterns/{set}.tsv"))).unwrap();
        let input = load_packets(&data().join(format!("traffic/{corpus}"))).unwrap();
        let fog = fingerprints(EngineKind::Fogline, &pats, &input);
        let ac = fingerprints(EngineKind::AhoCorasickNfa, &pats, &input);
        assert!(fog == ac, "{set} on {corpus}: match sets differ");
        assert_eq!(
            fog.iter().map(|x| x.0).sum::<u64>(),
            total,
            "{set} on {corpus}"
        );
        let mut e = build_engine(EngineKind::Fogline, &pats).unwrap();
        let counted: u64 = input.packets().map(|p| e.count(p)).sum();
        assert_eq!(counted, total, "{set} on {corpus}: count()");
        eprintln!("{set} on {corpus}: {total} matches, identical to aho-corasick per packet");
    }
    let pats = load_patterns(&data().join("patterns/et2017_fast4.tsv")).unwrap();
    let input = load_packets(&data().join("traffic/corpus_all")).unwrap();
    let got = per_pattern(EngineKind::Fogline, &pats, &input).unwrap();
    assert_eq!(got, expected("et2017_fast4.corpus_all.per_pattern.tsv"));
}
