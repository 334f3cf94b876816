//! Arbitrary bytes -> the shared pattern-file parser: it must return a value or an error, never
//! panic, and what it accepts must print back to an equivalent file. Same property as
//! `load::tests::arbitrary_pattern_files_parse_or_fail_cleanly`.
//!
//! Run: `cd crates/fogline-match-compare/fuzz && cargo +nightly fuzz run patterns`
#![no_main]

use std::path::Path;

use fogline_match_compare::load::{format_patterns, parse_patterns};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(p) = parse_patterns(Path::new("fuzz"), data) {
        let again = parse_patterns(Path::new("fuzz"), format_patterns(&p).as_bytes());
        assert!(again.is_ok_and(|q| q.iter().map(|x| (&x.bytes, x.nocase)).eq(p.iter().map(|x| (&x.bytes, x.nocase)))));
    }
});
