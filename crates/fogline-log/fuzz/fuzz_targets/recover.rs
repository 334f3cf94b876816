//! Arbitrary bytes as a segment file (and index file): open, read, append and verify must
//! never panic and must leave a directory that verifies clean. See the harness for the input
//! layout; `fuzz/seeds` holds valid active and sealed segments to start from.
//!
//! Run (from crates/fogline-log): `cargo +nightly fuzz run recover fuzz/corpus fuzz/seeds`
#![no_main]

#[path = "../../tests/common/recover_input.rs"]
mod recover_input;

libfuzzer_sys::fuzz_target!(|data: &[u8]| recover_input::run(data));
