//! Differential tests: fogline-match against overlapping Aho-Corasick, table-driven cases and
//! property-based random pattern sets and inputs.

mod common;

use common::{check, decode, Pat};
use proptest::prelude::*;

fn pats(list: &[(&[u8], bool)]) -> Vec<Pat> {
    list.iter()
        .enumerate()
        .map(|(i, (p, nc))| (i as u32, p.to_vec(), *nc))
        .collect()
}

#[test]
fn table_driven_cases() {
    let long_zero = vec![0u8; 300];
    let mut http =
        b"GET /index.php?id=1 HTTP/1.1\r\nHost: a\r\nUser-Agent: Mozilla\r\n\r\n".repeat(4);
    http.extend_from_slice(&[0; 100]);
    let cases: Vec<(Vec<Pat>, Vec<u8>)> = vec![
        (pats(&[]), b"anything".to_vec()),
        (pats(&[(b"a", false)]), Vec::new()),
        (pats(&[(b"", false)]), b"abc".to_vec()),
        (pats(&[(b"aaaa", false)]), b"aaaaaa".to_vec()),
        (pats(&[(b"ab", false), (b"ab", false), (b"AB", true)]), b"xABabAb".to_vec()),
        (
            pats(&[(b"\0\0\0\0\0", false), (b"\0\0\0\0\0\0\0\0", false), (b"\0", false), (b"\0\0\x01", false)]),
            [&long_zero[..], b"\x01", &long_zero[..50]].concat(),
        ),
        (
            pats(&[(b"user-agent: ", true), (b"HOST", true), (b"GET", false), (b".php", false), (b"\r\n\r\n", false), (b"\0\0\0\0", false)]),
            http,
        ),
        (pats(&[(b"aA", true), (b"AAAA", true), (b"aaaaaaaaaaaaaaaaaaaaaaaa", false)]), b"aAaAaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".to_vec()),
    ];
    for (i, (p, hay)) in cases.iter().enumerate() {
        for cut in [0, 1, 3, 7, 33, 64] {
            let cuts: Vec<usize> = (1..hay.len())
                .step_by(cut.max(1))
                .skip(usize::from(cut == 0) * hay.len())
                .collect();
            check(p, hay, &cuts).unwrap_or_else(|e| panic!("case {i} cut {cut}: {e}"));
        }
    }
}

#[test]
fn many_patterns_sharing_a_prefix_split_the_trie() {
    let mut p: Vec<Pat> = (0..300u32)
        .map(|i| (i, format!("User-Agent: bot{i}x").into_bytes(), i % 2 == 0))
        .collect();
    p.push((999, b"user-agent".to_vec(), true));
    p.push((1000, b"User-Agent: bo".to_vec(), false));
    let mut hay = Vec::new();
    for i in (0..300).step_by(7) {
        hay.extend_from_slice(
            format!("xx user-agent: BOT{i}X yy User-Agent: bot{i}x\n").as_bytes(),
        );
    }
    check(&p, &hay, &[5, 100, 101, 2000]).unwrap();
}

/// Bytes from a small alphabet, so that random patterns match often; includes NUL, 0xff and
/// letters of both cases.
fn byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        4 => prop::sample::select(vec![b'a', b'A', b'b', b'B', 0u8, 0xff, b'\n']),
        1 => any::<u8>(),
    ]
}

fn pattern() -> impl Strategy<Value = (Vec<u8>, bool)> {
    (
        prop_oneof![
            3 => prop::collection::vec(byte(), 0..4),
            3 => prop::collection::vec(byte(), 4..12),
            1 => (byte(), 1..40usize).prop_map(|(b, n)| vec![b; n]),
        ],
        any::<bool>(),
    )
}

/// Input made of random segments and runs of one byte (floods).
fn haystack() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            3 => prop::collection::vec(byte(), 0..40),
            1 => (byte(), 0..150usize).prop_map(|(b, n)| vec![b; n]),
        ],
        0..8,
    )
    .prop_map(|segs| segs.concat())
}

/// Inputs of several filter rounds (a round is 1,024 positions), so that rounds, blocks and
/// floods meet at every kind of edge.
fn long_haystack() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::collection::vec(byte(), 0..300),
            1 => (byte(), 20..700usize).prop_map(|(b, n)| vec![b; n]),
        ],
        4..14,
    )
    .prop_map(|segs| segs.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Sets with and without short patterns (the table filter takes different paths), inputs
    /// crossing round edges, stream cuts around them.
    #[test]
    fn inputs_of_many_rounds_agree(
        set in prop::collection::vec(pattern(), 1..24),
        only_long in any::<bool>(),
        hay in long_haystack(),
        shift in 0..70usize,
    ) {
        let p: Vec<Pat> = set
            .into_iter()
            .filter(|(b, _)| !only_long || b.len() >= 4)
            .enumerate()
            .map(|(i, (b, nc))| (i as u32, b, nc))
            .collect();
        let cuts = [1024 - shift, 1024 + shift, 2047, 2048 + shift, 3000];
        check(&p, &hay, &cuts).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_sets_agree_with_aho_corasick(
        set in prop::collection::vec(pattern(), 0..24),
        hay in haystack(),
        cuts in prop::collection::vec(0..400usize, 0..4),
        dup in any::<bool>(),
    ) {
        let mut p: Vec<Pat> = set.into_iter().enumerate().map(|(i, (b, nc))| (i as u32, b, nc)).collect();
        if dup && !p.is_empty() {
            let first = p[0].clone();
            p.push((p.len() as u32, first.1, first.2));
        }
        check(&p, &hay, &cuts).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn patterns_taken_from_the_input_agree(
        hay in haystack(),
        picks in prop::collection::vec((0..400usize, 1..20usize, any::<bool>()), 1..16),
    ) {
        let p: Vec<Pat> = picks
            .iter()
            .enumerate()
            .filter(|(_, (at, _, _))| *at < hay.len())
            .map(|(i, &(at, len, nc))| (i as u32, hay[at..(at + len).min(hay.len())].to_vec(), nc))
            .collect();
        check(&p, &hay, &[hay.len() / 2]).map_err(TestCaseError::fail)?;
    }

    /// The fuzz target's entry point, fed arbitrary bytes.
    #[test]
    fn arbitrary_bytes_agree_with_aho_corasick(data in prop::collection::vec(any::<u8>(), 0..600)) {
        let (pats, hay, cuts) = decode(&data);
        check(&pats, &hay, &cuts).map_err(TestCaseError::fail)?;
    }
}
