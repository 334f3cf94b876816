//! Feeds arbitrary bytes to the NAB parsers (data rows, results rows and
//! timestamps); anything that parses must have one timestamp per value and
//! only finite values.
#![no_main]

use fogline_detect::nab::{corpus, time};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for col in [1, 2] {
        if let Ok((ts, vs)) = corpus::parse_columns(&text, col) {
            assert_eq!(ts.len(), vs.len());
            assert!(vs.iter().all(|v| v.is_finite()));
        }
    }
    for line in text.lines() {
        let _ = time::parse(line);
    }
});
