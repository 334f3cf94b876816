//! Timestamps as RFC 3339 (UTC, milliseconds): what the admin API's JSON shows.

use std::time::{Duration, UNIX_EPOCH};

/// Microseconds since the UNIX epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339(us: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_micros(us)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_123_456), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339(1_795_777_200_000_000), "2026-11-27T11:00:00.000Z");
    }
}
