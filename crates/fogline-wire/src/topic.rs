//! Topic names and topic filters, with MQTT 3.1.1/5.0 rules.
//!
//! - A topic is non-empty UTF-8 of at most 65535 bytes, without `+`, `#`
//!   or NUL. Levels are separated by `/` and may be empty (`a//b`); there are
//!   at most [`MAX_LEVELS`] of them (MQTT sets no limit and lets a server refuse:
//!   routing walks the levels, and 65535 empty ones would only cost memory and time).
//! - A filter follows the same rules except that `+` may stand for exactly
//!   one whole level and `#`, as the whole last level, for that level's
//!   parent and everything below it (`a/#` matches `a`, `a/b`, `a/b/c`).
//! - Topics starting with `$` are not matched by a filter whose first level
//!   is a wildcard (`#` and `+/x` do not match `$SYS/x`).

/// Why a topic or filter is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TopicError {
    /// Empty topic or filter.
    #[error("empty topic or filter")]
    Empty,
    /// Longer than 65535 bytes.
    #[error("longer than 65535 bytes")]
    TooLong,
    /// Contains a NUL character.
    #[error("contains NUL")]
    Nul,
    /// A topic containing `+` or `#`.
    #[error("wildcards are not allowed in a topic")]
    WildcardInTopic,
    /// A filter with `#` not alone as the last level, or `+` not alone in its level.
    #[error("wildcard must be a whole level ('#' only as the last)")]
    BadWildcard,
    /// More than [`MAX_LEVELS`] levels.
    #[error("more than 256 levels")]
    TooManyLevels,
}

/// Most levels in a topic or filter (255 `/`).
pub const MAX_LEVELS: usize = 256;

/// The checks topics and filters share; returns whether `s` holds a wildcard character.
fn common(s: &str) -> Result<bool, TopicError> {
    if s.is_empty() {
        return Err(TopicError::Empty);
    }
    if s.len() > usize::from(u16::MAX) {
        return Err(TopicError::TooLong);
    }
    // One pass: this runs for every publish.
    let mut separators = 0usize;
    let mut wildcard = false;
    for &b in s.as_bytes() {
        match b {
            b'/' => separators += 1,
            0 => return Err(TopicError::Nul),
            b'+' | b'#' => wildcard = true,
            _ => {}
        }
    }
    if separators >= MAX_LEVELS {
        return Err(TopicError::TooManyLevels);
    }
    Ok(wildcard)
}

/// Checks a topic name (what records are published to).
///
/// # Errors
/// The [`TopicError`] that the topic breaks.
pub fn validate_topic(topic: &str) -> Result<(), TopicError> {
    if common(topic)? {
        return Err(TopicError::WildcardInTopic);
    }
    Ok(())
}

/// Checks a topic filter (what subscriptions and consumers match with).
///
/// # Errors
/// The [`TopicError`] that the filter breaks.
pub fn validate_filter(filter: &str) -> Result<(), TopicError> {
    if !common(filter)? {
        return Ok(());
    }
    let mut levels = filter.split('/').peekable();
    while let Some(level) = levels.next() {
        let last = levels.peek().is_none();
        match level {
            "+" => {}
            "#" if last => {}
            _ if level.contains(['+', '#']) => return Err(TopicError::BadWildcard),
            _ => {}
        }
    }
    Ok(())
}

/// Whether `topic` matches `filter` under MQTT semantics.
///
/// Both are expected to be valid; invalid input never panics and a `#`
/// anywhere but last simply fails to match past it.
///
/// ```
/// use fogline_wire::filter_matches;
/// assert!(filter_matches("site/+/lidar", "site/robot7/lidar"));
/// assert!(filter_matches("site/#", "site"));
/// assert!(!filter_matches("#", "$SYS/uptime"));
/// ```
pub fn filter_matches(filter: &str, topic: &str) -> bool {
    if topic.starts_with('$') && (filter.starts_with('+') || filter.starts_with('#')) {
        return false;
    }
    // The common cases without splitting: everything, and a filter without wildcards.
    if filter == "#" {
        return true;
    }
    if !filter.contains(['+', '#']) {
        return filter == topic;
    }
    let mut f = filter.split('/');
    let mut t = topic.split('/');
    loop {
        match (f.next(), t.next()) {
            (Some("#"), _) => return f.next().is_none(),
            (Some("+"), Some(_)) => {}
            (Some(fl), Some(tl)) if fl == tl => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics() {
        assert_eq!(validate_topic("a/b/c"), Ok(()));
        assert_eq!(validate_topic("/"), Ok(()));
        assert_eq!(validate_topic("a//b"), Ok(()));
        assert_eq!(validate_topic("$SYS/x"), Ok(()));
        assert_eq!(validate_topic(""), Err(TopicError::Empty));
        assert_eq!(validate_topic("a/+"), Err(TopicError::WildcardInTopic));
        assert_eq!(validate_topic("a#"), Err(TopicError::WildcardInTopic));
        assert_eq!(validate_topic("a\0b"), Err(TopicError::Nul));
        assert_eq!(
            validate_topic(&"x".repeat(65_536)),
            Err(TopicError::TooLong)
        );
        assert_eq!(validate_topic(&"x".repeat(65_535)), Ok(()));
    }

    #[test]
    fn levels_are_limited() {
        let most = "/".repeat(MAX_LEVELS - 1);
        assert_eq!(validate_topic(&most), Ok(()));
        assert_eq!(validate_filter(&format!("{most}#")), Ok(()));
        let over = "/".repeat(MAX_LEVELS);
        assert_eq!(validate_topic(&over), Err(TopicError::TooManyLevels));
        assert_eq!(validate_filter(&over), Err(TopicError::TooManyLevels));
        assert_eq!(
            validate_filter(&format!("{over}+")),
            Err(TopicError::TooManyLevels)
        );
        // The limit holds for the longest topic MQTT allows, which routing would walk.
        let deepest = "/".repeat(65_535);
        assert_eq!(validate_topic(&deepest), Err(TopicError::TooManyLevels));
    }

    #[test]
    fn filters() {
        for ok in ["#", "+", "a/#", "+/+", "a/+/c", "/#", "+/", "a/b", "$SYS/#"] {
            assert_eq!(validate_filter(ok), Ok(()), "{ok}");
        }
        for bad in ["a/#/c", "a#", "a/b#", "a+/b", "#/a", "++", "a/+b"] {
            assert_eq!(validate_filter(bad), Err(TopicError::BadWildcard), "{bad}");
        }
        assert_eq!(validate_filter(""), Err(TopicError::Empty));
        assert_eq!(validate_filter("a\0"), Err(TopicError::Nul));
    }

    #[test]
    fn matching_table() {
        let cases = [
            ("a/b/c", "a/b/c", true),
            ("a/b/c", "a/b", false),
            ("a/b", "a/b/c", false),
            ("a/+/c", "a/b/c", true),
            ("a/+/c", "a//c", true),
            ("a/+", "a/b/c", false),
            ("a/+", "a", false),
            ("+", "a", true),
            ("+", "/a", false),
            ("+/+", "/a", true),
            ("/+", "/a", true),
            ("#", "a/b/c", true),
            ("#", "/", true),
            ("a/#", "a", true),
            ("a/#", "a/", true),
            ("a/#", "a/b/c", true),
            ("a/#", "ab", false),
            ("a/b/#", "a/c", false),
            ("+/#", "a", true),
            ("#", "$SYS/x", false),
            ("+/x", "$SYS/x", false),
            ("$SYS/#", "$SYS/x", true),
            ("$SYS/+", "$SYS/x", true),
            ("a/#/c", "a/b/c", false),
        ];
        for (filter, topic, want) in cases {
            assert_eq!(filter_matches(filter, topic), want, "{filter} vs {topic}");
        }
    }
}
