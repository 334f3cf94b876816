//! One line of an ACL file, read the way Mosquitto 2.0 reads it (`aclfile__parse` in
//! `src/security_default.c`), so a file means the same to both and is refused by both:
//!
//! - trailing white space (C's `isspace`: space, `\t`, `\n`, `\v`, `\f`, `\r`) is dropped;
//!   an empty line is skipped;
//! - a line whose first character is `#` is a comment; `#` after leading blanks is not
//!   (Mosquitto refuses such a line, so do we);
//! - words are separated by spaces only (a tab is part of a word); leading spaces are
//!   skipped;
//! - `topic`/`pattern` with one word: that word is the topic, access `readwrite` (so
//!   `topic read` grants read and write on the topic `read`); with more: the first is the
//!   access, the rest of the line (blanks trimmed) the topic, which may hold spaces;
//! - `user` takes the rest of the line, blanks trimmed, as the username (spaces allowed);
//! - keywords and access words are lower case.

use super::error::{quote, ParseErrorKind};
use super::Grant;

/// Levels a filter may have: Mosquitto's `TOPIC_HIERARCHY_LIMIT` (200 `/`). It also bounds
/// the depth of the rule trees, which are walked recursively.
pub(crate) const MAX_LEVELS: usize = 201;

/// Longest topic: an MQTT string holds at most 65,535 bytes.
pub(crate) const MAX_TOPIC_BYTES: usize = 65_535;

/// What a line says.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// Comment or blank.
    Nothing,
    /// `user NAME`: the rules that follow are NAME's.
    User(&'a str),
    /// `topic ACCESS TOPIC`.
    Topic(Grant, &'a str),
    /// `pattern ACCESS TOPIC`.
    Pattern(Grant, &'a str),
}

/// C's `isspace` in the "C" locale (Rust's ASCII white space lacks `\v`).
fn c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{b}' | '\u{c}' | '\r')
}

/// `strtok(s, " ")`: the next word and what follows the space that ended it.
fn word(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start_matches(' ');
    if s.is_empty() {
        return None;
    }
    Some(match s.split_once(' ') {
        Some((w, rest)) => (w, rest),
        None => (s, ""),
    })
}

pub(crate) fn parse_line(line: &str) -> Result<Line<'_>, ParseErrorKind> {
    if line.contains('\0') {
        return Err(ParseErrorKind::Nul);
    }
    let line = line.trim_end_matches(c_space);
    if line.starts_with('#') {
        return Ok(Line::Nothing);
    }
    let Some((keyword, rest)) = word(line) else {
        return Ok(Line::Nothing);
    };
    match keyword {
        "topic" | "pattern" => {
            let kw = if keyword == "topic" {
                "topic"
            } else {
                "pattern"
            };
            let (grant, topic) = access_and_topic(kw, rest)?;
            check_filter(topic).map_err(|why| ParseErrorKind::InvalidTopic {
                topic: quote(topic),
                why,
            })?;
            Ok(if kw == "topic" {
                Line::Topic(grant, topic)
            } else {
                Line::Pattern(grant, topic)
            })
        }
        "user" => match rest.trim_matches(c_space) {
            "" => Err(ParseErrorKind::MissingUsername),
            name => Ok(Line::User(name)),
        },
        other => Err(ParseErrorKind::UnknownKeyword(quote(other))),
    }
}

fn access_and_topic<'a>(
    kw: &'static str,
    rest: &'a str,
) -> Result<(Grant, &'a str), ParseErrorKind> {
    let Some((first, after)) = word(rest) else {
        return Err(ParseErrorKind::MissingTopic(kw));
    };
    let topic = after.trim_matches(c_space);
    if topic.is_empty() {
        return Ok((Grant::ReadWrite, first));
    }
    let grant = match first {
        "read" => Grant::Read,
        "write" => Grant::Write,
        "readwrite" => Grant::ReadWrite,
        "deny" => Grant::Deny,
        other => return Err(ParseErrorKind::InvalidAccess(quote(other))),
    };
    Ok((grant, topic))
}

/// Whether `filter` is a valid MQTT topic filter (Mosquitto's `mosquitto_sub_topic_check`
/// with the broker's level limit): `+` and `#` fill a whole level, `#` only the last.
pub(crate) fn check_filter(filter: &str) -> Result<(), &'static str> {
    if filter.is_empty() {
        return Err("is empty");
    }
    if filter.len() > MAX_TOPIC_BYTES {
        return Err("is longer than 65535 bytes");
    }
    let mut levels = filter.split('/').peekable();
    let mut count = 0;
    while let Some(level) = levels.next() {
        count += 1;
        if level.len() > 1 && level.contains(['+', '#']) {
            return Err("has `+` or `#` inside a level");
        }
        if level == "#" && levels.peek().is_some() {
            return Err("has `#` before its last level");
        }
    }
    if count > MAX_LEVELS {
        return Err("has more than 200 `/`");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_access_as_mosquitto_reads_them() {
        let cases: &[(&str, Line)] = &[
            ("", Line::Nothing),
            ("   \t\r", Line::Nothing),
            ("# topic a", Line::Nothing),
            ("#", Line::Nothing),
            ("topic a/b", Line::Topic(Grant::ReadWrite, "a/b")),
            ("topic read", Line::Topic(Grant::ReadWrite, "read")),
            ("  topic   read   a b  \r", Line::Topic(Grant::Read, "a b")),
            ("topic deny\ta", Line::Topic(Grant::ReadWrite, "deny\ta")),
            ("topic write a\t b", Line::Topic(Grant::Write, "a\t b")),
            ("pattern deny c/%c", Line::Pattern(Grant::Deny, "c/%c")),
            ("user  bob smith \u{b}", Line::User("bob smith")),
        ];
        for (line, want) in cases {
            assert_eq!(parse_line(line).as_ref(), Ok(want), "{line:?}");
        }
    }

    #[test]
    fn refused_lines() {
        let cases: &[(&str, ParseErrorKind)] = &[
            (
                " # indented comment",
                ParseErrorKind::UnknownKeyword("#".into()),
            ),
            ("Topic a", ParseErrorKind::UnknownKeyword("Topic".into())),
            (
                "\ttopic a",
                ParseErrorKind::UnknownKeyword("\ttopic".into()),
            ),
            ("topic", ParseErrorKind::MissingTopic("topic")),
            ("pattern   ", ParseErrorKind::MissingTopic("pattern")),
            ("topic a b", ParseErrorKind::InvalidAccess("a".into())),
            ("user", ParseErrorKind::MissingUsername),
            ("user \t", ParseErrorKind::MissingUsername),
            ("topic a\0b", ParseErrorKind::Nul),
        ];
        for (line, want) in cases {
            assert_eq!(parse_line(line).as_ref(), Err(want), "{line:?}");
        }
    }

    #[test]
    fn filters() {
        for ok in [
            "#", "+", "a/+/b", "a/#", "+/+", "/", "$SYS/#", "a b/c", "%u/%c",
        ] {
            assert_eq!(check_filter(ok), Ok(()), "{ok}");
        }
        for bad in ["", "a#", "a/#/b", "a+/b", "#/a", "+a"] {
            assert!(check_filter(bad).is_err(), "{bad}");
        }
        assert!(check_filter(&"a/".repeat(200)).is_ok());
        assert!(check_filter(&"a/".repeat(201)).is_err());
        assert!(check_filter(&"a".repeat(65_536)).is_err());
    }
}
