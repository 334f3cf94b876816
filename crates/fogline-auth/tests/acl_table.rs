//! Mosquitto's documented examples (mosquitto.conf(5) `acl_file`, `aclfile.example`) and
//! the edge cases of its behaviour, one row per check. Every row is also run through the
//! per-connection view and the rule-by-rule reference evaluator.

mod reference;

use fogline_auth::acl::{Access, Acl, ParseErrorKind};
use std::sync::Arc;
use Access::{Read as R, Subscribe as S, Write as W};

/// (username, client id, topic or filter, access, allowed)
type Row = (
    Option<&'static str>,
    &'static str,
    &'static str,
    Access,
    bool,
);

fn run(file: &str, rows: &[Row]) {
    let acl = Arc::new(Acl::parse(file).unwrap_or_else(|e| panic!("{e}\n{file}")));
    for &(user, client, topic, access, want) in rows {
        let what = format!("{user:?} {client:?} {access:?} {topic:?} in\n{file}");
        assert_eq!(acl.check(user, client, topic, access), want, "{what}");
        assert_eq!(
            acl.client(user, client).check(topic, access),
            want,
            "view: {what}"
        );
        assert_eq!(
            reference::check(&acl, user, client, topic, access),
            want,
            "reference: {what}"
        );
    }
}

#[test]
fn mosquittos_example_file() {
    let file = "# This affects access control for clients with no username.\n\
                topic read $SYS/#\n\n\
                # This only affects clients with username \"roger\".\n\
                user roger\n\
                topic foo/bar\n\n\
                # This affects all clients.\n\
                pattern write $SYS/broker/connection/%c/state\n";
    run(
        file,
        &[
            (None, "c", "$SYS/broker/uptime", R, true),
            (None, "c", "$SYS/broker/uptime", W, false),
            (None, "c", "$SYS/#", S, true),
            (None, "c", "foo/bar", R, false),
            (Some("roger"), "c", "foo/bar", R, true),
            (Some("roger"), "c", "foo/bar", W, true),
            (Some("roger"), "c", "foo/bar", S, true),
            (Some("roger"), "c", "$SYS/broker/uptime", R, false),
            (Some("roger"), "c", "foo/baz", W, false),
            (Some("other"), "c", "foo/bar", R, false),
            (
                Some("roger"),
                "br1",
                "$SYS/broker/connection/br1/state",
                W,
                true,
            ),
            (None, "br1", "$SYS/broker/connection/br1/state", W, true),
            (
                Some("roger"),
                "br1",
                "$SYS/broker/connection/br2/state",
                W,
                false,
            ),
            (
                Some("roger"),
                "br1",
                "$SYS/broker/connection/br1/state",
                R,
                false,
            ),
        ],
    );
}

#[test]
fn documented_pattern_example() {
    run(
        "pattern write sensor/%u/data\n",
        &[
            (Some("s1"), "c", "sensor/s1/data", W, true),
            (Some("s1"), "c", "sensor/s2/data", W, false),
            (Some("s1"), "c", "sensor/s1/data", R, false),
            (None, "c", "sensor/%u/data", W, false),
        ],
    );
}

#[test]
fn access_words_and_default() {
    let file = "topic a\ntopic read r\ntopic write w\ntopic readwrite rw\ntopic read\n";
    run(
        file,
        &[
            (None, "c", "a", R, true),
            (None, "c", "a", W, true),
            (None, "c", "r", R, true),
            (None, "c", "r", W, false),
            (None, "c", "w", W, true),
            (None, "c", "w", R, false),
            (None, "c", "w", S, false),
            (None, "c", "rw", W, true),
            // `topic read`: the topic `read`, read and write.
            (None, "c", "read", W, true),
        ],
    );
}

#[test]
fn deny_wins_whatever_its_place() {
    for file in [
        "topic readwrite a/#\ntopic deny a/secret\n",
        "topic deny a/secret\ntopic readwrite a/#\n",
    ] {
        run(
            file,
            &[
                (None, "c", "a/b", W, true),
                (None, "c", "a/secret", R, false),
                (None, "c", "a/secret", W, false),
                (None, "c", "a/secret/x", R, true),
                // The subscription is granted; the message on a/secret is withheld.
                (None, "c", "a/#", S, true),
                (None, "c", "a/secret", S, false),
                (None, "c", "a/+", S, true),
            ],
        );
    }
}

#[test]
fn own_rules_are_asked_before_patterns() {
    let file = "pattern deny a/%u\nuser alice\ntopic readwrite a/#\ntopic read b/#\n\
                pattern readwrite b/%u\n";
    run(
        file,
        &[
            // alice's own grant decides; the pattern deny is not asked.
            (Some("alice"), "c", "a/alice", W, true),
            // alice's own rules do not grant write on b/alice: the patterns do.
            (Some("alice"), "c", "b/alice", W, true),
            (Some("alice"), "c", "b/bob", W, false),
            // bob has no section: patterns only, deny first.
            (Some("bob"), "c", "a/bob", W, false),
            (Some("bob"), "c", "b/bob", R, true),
        ],
    );
}

#[test]
fn sections_by_username() {
    let file = "topic read anon/#\nuser a\ntopic read x\nuser b\ntopic read y\nuser a\n\
                topic read z\ntopic deny x\nuser with space\ntopic read s\n";
    run(
        file,
        &[
            (None, "c", "anon/1", R, true),
            (Some("a"), "c", "anon/1", R, false),
            (Some("a"), "c", "z", R, true),
            // Both of a's sections are one list: its later deny refuses x.
            (Some("a"), "c", "x", R, false),
            (Some("b"), "c", "y", R, true),
            (Some("b"), "c", "z", R, false),
            (Some("with space"), "c", "s", R, true),
            // A username, not a client id.
            (None, "a", "z", R, false),
            (Some("A"), "c", "z", R, false),
        ],
    );
}

#[test]
fn substitution() {
    let file = "pattern readwrite users/%u/#\npattern read clients/%c/#\n\
                pattern read dev-%c/status\npattern read both/%u/%c\npattern read p/%%u\n\
                user t\ntopic read lit/%u\n";
    run(
        file,
        &[
            (Some("u1"), "c1", "users/u1/x", W, true),
            (Some("u1"), "c1", "users/u1", W, true),
            (Some("u1"), "c1", "users/u2/x", W, false),
            (Some("u1"), "c1", "users/%u/x", W, false),
            (Some("u1"), "c1", "clients/c1/x", R, true),
            (Some("u1"), "c1", "clients/c1/x", W, false),
            (None, "c1", "clients/c1/x", R, true),
            (None, "c1", "users//x", R, false),
            // Inside a level, as Mosquitto 2.0 does.
            (Some("u1"), "c1", "dev-c1/status", R, true),
            (Some("u1"), "c1", "dev-c2/status", R, false),
            (Some("u1"), "c1", "both/u1/c1", R, true),
            (Some("u1"), "c1", "both/c1/u1", R, false),
            (Some("u1"), "c1", "p/%u1", R, true),
            // In a `topic` line `%u` is text.
            (Some("t"), "c1", "lit/t", R, false),
            (Some("t"), "c1", "lit/%u", R, true),
            (Some("u1"), "c1", "users/u1/#", S, true),
            (Some("u1"), "c1", "users/+/#", S, false),
            (Some("u1"), "c1", "users/#", S, false),
        ],
    );
}

#[test]
fn refused_substitutions() {
    let file = "pattern readwrite users/%u/#\npattern read public/#\nuser a/b\ntopic read own/#\n";
    run(
        file,
        &[
            (Some("a+"), "c", "users/a+/x", W, false),
            (Some("a#"), "c", "public/x", R, false),
            (Some("a"), "c/d", "public/x", R, false),
            (Some("a"), "c+", "users/a/x", R, false),
            (Some("a"), "c", "users/a/b/x", W, true),
            // The point of refusing `/`: user a/b must not reach users/a/b/...
            (Some("a/b"), "c", "users/a/b/x", W, false),
            // A refused user keeps its own rules.
            (Some("a/b"), "c", "own/x", R, true),
        ],
    );
}

#[test]
fn dollar_topics() {
    let file = "topic read #\ntopic read +/x\ntopic read $custom/#\n";
    run(
        file,
        &[
            (None, "c", "a/b", R, true),
            (None, "c", "$SYS/broker/uptime", R, false),
            (None, "c", "$SYS/x", R, false),
            (None, "c", "$custom/x", R, true),
            (None, "c", "$custom", R, true),
            (None, "c", "#", S, true),
            (None, "c", "$SYS/#", S, false),
            (None, "c", "$custom/+", S, true),
            (None, "c", "+/x", S, true),
        ],
    );
    run(
        "topic deny #\ntopic read $SYS/#\n",
        &[(None, "c", "$SYS/x", R, true), (None, "c", "a", R, false)],
    );
}

#[test]
fn levels_and_wildcards() {
    let file = "topic read a/#\ntopic read b/+\ntopic read c/+/#\ntopic read with space/x\n\
                topic read /lead\n";
    run(
        file,
        &[
            (None, "c", "a", R, true),
            (None, "c", "a/b/c", R, true),
            (None, "c", "ab", R, false),
            (None, "c", "b/", R, true),
            (None, "c", "b", R, false),
            (None, "c", "b/x/y", R, false),
            (None, "c", "c/x", R, true),
            (None, "c", "with space/x", R, true),
            (None, "c", "/lead", R, true),
            (None, "c", "lead", R, false),
            (None, "c", "A/b", R, false),
            // Subscriptions taken in by a rule, or not.
            (None, "c", "a", S, true),
            (None, "c", "a/+/b", S, true),
            (None, "c", "a/#", S, true),
            (None, "c", "b/+", S, true),
            (None, "c", "b/#", S, false),
            (None, "c", "c/+", S, true),
            (None, "c", "c/#", S, false),
            (None, "c", "#", S, false),
            (None, "c", "+/x", S, false),
            // Malformed topics and filters are refused.
            (None, "c", "a/+", R, false),
            (None, "c", "a/#", W, false),
            (None, "c", "", R, false),
            (None, "c", "a#", S, false),
            (None, "c", "a/#/b", S, false),
        ],
    );
}

#[test]
fn nothing_is_allowed_without_a_rule() {
    for file in ["", "# only a comment\n\n", "user a\n"] {
        run(
            file,
            &[
                (None, "c", "a", R, false),
                (Some("a"), "c", "a", W, false),
                (Some("a"), "c", "#", S, false),
            ],
        );
    }
    let plus = "topic read +\n";
    run(
        plus,
        &[(None, "c", "+", S, true), (None, "c", "#", S, false)],
    );
}

#[test]
fn errors_name_the_line() {
    let cases: &[(&str, usize, ParseErrorKind)] = &[
        (
            "topic a\nbogus b\n",
            2,
            ParseErrorKind::UnknownKeyword("bogus".into()),
        ),
        (
            "\n\n  # not a comment\n",
            3,
            ParseErrorKind::UnknownKeyword("#".into()),
        ),
        (
            "topic a\r\ntopic\r\n",
            2,
            ParseErrorKind::MissingTopic("topic"),
        ),
        (
            "user u\ntopic reed a b\n",
            2,
            ParseErrorKind::InvalidAccess("reed".into()),
        ),
        ("user\n", 1, ParseErrorKind::MissingUsername),
    ];
    for (file, line, kind) in cases {
        let e = Acl::parse(file).unwrap_err();
        assert_eq!((e.line(), e.kind()), (*line, kind), "{file:?}");
        assert!(e.to_string().starts_with(&format!("line {line}: ")), "{e}");
    }
    let e = Acl::parse("topic a\npattern read a/#/b\n").unwrap_err();
    assert_eq!(e.line(), 2);
    assert!(
        matches!(e.kind(), ParseErrorKind::InvalidTopic { .. }),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "line 2: topic `a/#/b` has `#` before its last level"
    );
}

#[test]
fn bytes_files_and_limits() {
    let e = Acl::parse_bytes(b"topic a\n\ntopic \xff\n").unwrap_err();
    assert_eq!((e.line(), e.kind()), (3, &ParseErrorKind::NotUtf8));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("acl");
    std::fs::write(&path, "user u\ntopic read a/#\n").unwrap();
    let acl = Acl::load(&path).unwrap();
    assert!(acl.check(Some("u"), "c", "a/b", R));
    assert_eq!(acl.rules().len(), 1);
    assert_eq!(acl.rules()[0].line, 2);

    std::fs::write(&path, "topic a\ntopic a b c\n").unwrap();
    let e = Acl::load(&path).unwrap_err().to_string();
    assert!(e.contains("line 2: access `a`"), "{e}");

    let big = "# padding\n".repeat(fogline_auth::acl::MAX_FILE_BYTES / 10 + 1);
    std::fs::write(&path, &big).unwrap();
    let e = Acl::load(&path).unwrap_err().to_string();
    assert!(e.contains("larger than"), "{e}");
    assert_eq!(
        Acl::parse_bytes(big.as_bytes()).unwrap_err().kind(),
        &ParseErrorKind::TooLarge
    );
    assert!(Acl::load(dir.path().join("missing")).is_err());
}

#[test]
fn warnings_name_doubtful_patterns() {
    let acl = Acl::parse("pattern read all/#\npattern read d-%c/x\npattern read u/%u\n").unwrap();
    let lines: Vec<usize> = acl.warnings().iter().map(|w| w.line).collect();
    assert_eq!(lines, [1, 2]);
}
