//! Feeds arbitrary text to the profile and interest parsers. Whatever parses must print
//! back to text that parses to the same value, and an interest that parses is matched
//! (reference and index) against the data profile that parses from the same text: the
//! two must agree. Nothing may panic.
#![no_main]

use fogline_profile::{DataProfile, Interest, InterestIndex};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (left, right) = text.split_once('|').unwrap_or((text, text));
    let profile = DataProfile::parse(right).ok();
    if let Some(p) = &profile {
        assert_eq!(DataProfile::parse(&p.to_string()).as_ref(), Ok(p));
    }
    let Ok(interest) = Interest::parse(left) else {
        return;
    };
    assert_eq!(Interest::parse(&interest.to_string()), Ok(interest.clone()));
    if let Some(p) = profile {
        let mut index = InterestIndex::new();
        index.insert(7, &interest);
        let mut got = Vec::new();
        index.matches(&p, "a/b", &mut got);
        assert_eq!(!got.is_empty(), interest.matches(&p, "a/b"));
        assert_eq!(index.any_match(&p, "a/b"), interest.matches(&p, "a/b"));
    }
});
