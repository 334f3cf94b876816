//! Arbitrary bytes -> (patterns, input, stream cuts) -> every fogline-match implementation
//! (block, count, stream) must equal overlapping Aho-Corasick. Same decoder and check as the
//! property test `arbitrary_bytes_agree_with_aho_corasick` in `tests/differential.rs`.
//!
//! Run: `cd crates/fogline-match/fuzz && cargo +nightly fuzz run differential`
#![no_main]

#[path = "../../tests/common/mod.rs"]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let (pats, hay, cuts) = common::decode(data);
    if let Err(e) = common::check(&pats, &hay, &cuts) {
        panic!("{e}");
    }
});
