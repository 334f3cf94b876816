use std::os::unix::fs::PermissionsExt;

use proptest::prelude::*;

use super::*;

/// Written by Debian's `mosquitto_passwd` 2.0.11: `-c -b g alice secret`,
/// `-H sha512 -b g dave 'dåve pw'`, `-b g 'ünï cøde' 'pässwörd'`.
const MOSQUITTO: &str = "\
alice:$7$101$/WVbEpJP3JVpafFX$RK9bd1qYOsYl3R1XkMcfZyzTguIeA6/WuJQ40D/wd4RxvbFWUd6kb5GGP2FI1qUxkyVFGvM22RzE3JyI+eNlQg==
dave:$6$lhpeoSTPIwZjqyCf$oZariHRGjdR5vOUMj+dQk7z9X7n8zVM88bOjOig5sP0R1CAY/35PAuYj+VyqiXHeVAZMKp2S/MFNjEw7F2jY5w==
ünï cøde:$7$101$mKRiKXq1HWQ39xC0$Io9IKfYALy5DPEfgl8Wsk7YCq671nQuBEIAOzcVToSvQv3o9omZA5jW11cgT/xR56XZxZ4Heb6FfaAWHc7FQiA==
";

fn hash_of(line: &str) -> &str {
    line.split_once(':').unwrap().1
}

#[test]
fn mosquitto_hashes_verify_their_passwords_only() {
    let f = PasswordFile::parse(MOSQUITTO.as_bytes()).unwrap();
    assert_eq!(f.users().collect::<Vec<_>>(), ["alice", "dave", "ünï cøde"]);
    assert!(f.verify("alice", b"secret"));
    assert!(f.verify("dave", "dåve pw".as_bytes()));
    assert!(f.verify("ünï cøde", "pässwörd".as_bytes()));
    for (user, wrong) in [
        ("alice", "Secret"),
        ("alice", "secret "),
        ("alice", ""),
        ("dave", "dave pw"),
        ("ünï cøde", "passwörd"),
        ("bob", "secret"),
    ] {
        assert!(!f.verify(user, wrong.as_bytes()), "{user} {wrong}");
    }
    assert_eq!(
        f.get("alice").unwrap().scheme(),
        Scheme::Pbkdf2Sha512 { iterations: 101 }
    );
    assert_eq!(f.get("dave").unwrap().scheme(), Scheme::Sha512);
}

#[test]
fn hashes_print_as_read() {
    for line in MOSQUITTO.lines() {
        let h = hash_of(line);
        assert_eq!(PasswordHash::parse(h).unwrap().to_string(), h);
    }
}

#[test]
fn debug_does_not_show_the_hash() {
    let h = PasswordHash::parse(hash_of(MOSQUITTO.lines().next().unwrap())).unwrap();
    let shown = format!("{h:?}");
    assert!(shown.contains("Pbkdf2Sha512"), "{shown}");
    assert!(!shown.contains("RK9b"), "{shown}");
}

#[test]
fn comments_blanks_and_line_endings_are_read_and_kept() {
    let alice = MOSQUITTO.lines().next().unwrap();
    let (_, hash) = alice.split_once(':').unwrap();
    let text = format!(
        "# users\n\n   \n\t# indented, no colon\r\n  alice\t:  {hash} \r\n# a:b is a comment\nx"
    );
    // `x` alone on the last line has no `:`: an error; without it the file reads.
    let err = PasswordFile::parse(text.as_bytes()).unwrap_err();
    assert!(matches!(
        err,
        Error::Malformed {
            line: 7,
            problem: Problem::NoColon,
            ..
        }
    ));
    let text = &text[..text.len() - 1];
    let f = PasswordFile::parse(text.as_bytes()).unwrap();
    assert_eq!(f.len(), 1);
    assert!(f.verify("alice", b"secret"));
    assert_eq!(f.to_bytes(), text.as_bytes());
}

#[test]
fn malformed_lines_are_named_by_number() {
    let good = MOSQUITTO.lines().next().unwrap();
    let h7 = hash_of(good);
    let salt = h7.split('$').nth(3).unwrap();
    let hash = h7.split('$').nth(4).unwrap();
    let cases: Vec<(String, Problem)> = vec![
        ("bob".into(), Problem::NoColon),
        (
            ":$7$101$x$y".into(),
            Problem::UserName(UserNameError::Empty),
        ),
        ("bob:".into(), Problem::NotHashed),
        ("bob:plaintext".into(), Problem::NotHashed),
        (format!("bob:$5${salt}${hash}"), Problem::Scheme),
        (format!("bob:$7$0${salt}${hash}"), Problem::Iterations),
        (format!("bob:$7$+5${salt}${hash}"), Problem::Iterations),
        (format!("bob:$7$${salt}${hash}"), Problem::Iterations),
        (
            format!("bob:$7$10000001${salt}${hash}"),
            Problem::Iterations,
        ),
        (format!("bob:$7$101$!!${hash}"), Problem::Salt),
        (format!("bob:$7$101$${hash}"), Problem::Salt),
        (format!("bob:$7$101${salt}$AAAA"), Problem::Hash),
        (format!("bob:$7$101${salt}"), Problem::Hash),
        (format!("bob:$7$101${salt}${hash}$"), Problem::TrailingField),
        (
            format!("bob:$7$101${salt}${hash}:x"),
            Problem::TrailingField,
        ),
        (
            format!("b\u{7}b:{h7}"),
            Problem::UserName(UserNameError::Control),
        ),
        (format!("alice:{h7}"), Problem::Duplicate { first: 2 }),
    ];
    for (bad, problem) in cases {
        let text = format!("# first\n{good}\n\n{bad}\n{good}x\n");
        match PasswordFile::parse(text.as_bytes()) {
            Err(Error::Malformed {
                line: 4,
                problem: p,
                path: None,
            }) => assert_eq!(p, problem, "{bad}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
    let err = PasswordFile::parse(b"a:b\xff\n").unwrap_err();
    assert!(matches!(
        err,
        Error::Malformed {
            line: 1,
            problem: Problem::NotUtf8,
            ..
        }
    ));
    assert_eq!(
        err.to_string(),
        "line 1: not UTF-8",
        "a message a user can act on"
    );
}

#[test]
fn user_names_must_read_back_as_written() {
    assert_eq!(check_user_name("alice"), Ok(()));
    assert_eq!(check_user_name("a b#c/+"), Ok(()));
    assert_eq!(check_user_name(""), Err(UserNameError::Empty));
    assert_eq!(check_user_name("a:b"), Err(UserNameError::Colon));
    assert_eq!(check_user_name("a\nb"), Err(UserNameError::Control));
    assert_eq!(check_user_name("a\0"), Err(UserNameError::Control));
    assert_eq!(check_user_name(" a"), Err(UserNameError::Blank));
    assert_eq!(check_user_name("a "), Err(UserNameError::Blank));
    assert_eq!(check_user_name("#a"), Err(UserNameError::Hash));
    assert_eq!(check_user_name(&"a".repeat(65535)), Ok(()));
    assert_eq!(
        check_user_name(&"a".repeat(65536)),
        Err(UserNameError::TooLong)
    );
    let mut f = PasswordFile::new();
    assert!(matches!(
        f.set("a:b", b"pw", 1),
        Err(Error::UserName(UserNameError::Colon))
    ));
    assert!(f.is_empty());
}

#[test]
fn set_replaces_in_place_and_adds_at_the_end() {
    let text = "# head\r\nalice:$7$101$/WVbEpJP3JVpafFX$RK9bd1qYOsYl3R1XkMcfZyzTguIeA6/WuJQ40D/wd4RxvbFWUd6kb5GGP2FI1qUxkyVFGvM22RzE3JyI+eNlQg==\r\n# tail";
    let mut f = PasswordFile::parse(text.as_bytes()).unwrap();
    assert_eq!(f.set("alice", b"new", 7).unwrap(), Change::Replaced);
    assert_eq!(
        f.set("bob", b"bobs", DEFAULT_ITERATIONS).unwrap(),
        Change::Added
    );
    let out = String::from_utf8(f.to_bytes()).unwrap();
    let lines: Vec<&str> = out.split_inclusive('\n').collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(lines[0], "# head\r\n");
    assert!(lines[1].starts_with("alice:$7$7$") && lines[1].ends_with("\r\n"));
    // The last line had no newline: it gets one before the new line.
    assert_eq!(lines[2], "# tail\n");
    assert!(lines[3].starts_with("bob:$7$101$") && lines[3].ends_with("==\n"));
    let back = PasswordFile::parse(out.as_bytes()).unwrap();
    assert!(back.verify("alice", b"new"));
    assert!(!back.verify("alice", b"secret"));
    assert!(back.verify("bob", b"bobs"));
}

#[test]
fn remove_deletes_only_that_line() {
    let mut f = PasswordFile::parse(MOSQUITTO.as_bytes()).unwrap();
    assert!(f.remove("dave"));
    assert!(!f.remove("dave"));
    let expected: String = MOSQUITTO
        .split_inclusive('\n')
        .filter(|l| !l.starts_with("dave:"))
        .collect();
    assert_eq!(f.to_bytes(), expected.as_bytes());
    // The index still finds the users after the removed line.
    assert!(f.verify("ünï cøde", "pässwörd".as_bytes()));
    assert_eq!(f.set("ünï cøde", b"x", 1).unwrap(), Change::Replaced);
    assert_eq!(f.len(), 2);
}

#[test]
fn new_hashes_are_salted_and_bounded() {
    let a = PasswordHash::new(b"pw", 101).unwrap();
    let b = PasswordHash::new(b"pw", 101).unwrap();
    assert_ne!(a, b, "a fresh salt each time");
    assert!(a.verify(b"pw") && b.verify(b"pw"));
    let text = a.to_string();
    let salt = text.split('$').nth(3).unwrap();
    assert_eq!(salt.len(), 16, "12 bytes of salt, as Mosquitto: {text}");
    assert!(matches!(
        PasswordHash::new(b"pw", 0),
        Err(Error::Iterations(0))
    ));
    assert!(matches!(
        PasswordHash::new(b"pw", MAX_ITERATIONS + 1),
        Err(Error::Iterations(_))
    ));
}

#[test]
fn save_replaces_atomically_and_keeps_permissions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("passwd");
    let mut f = PasswordFile::new();
    f.set("alice", b"secret", 3).unwrap();
    f.save(&path).unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600, "a new file is its owner's");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    f.set("bob", b"b", 3).unwrap();
    f.save(&path).unwrap();
    assert_eq!(mode(&path), 0o640, "an existing file keeps its mode");
    let back = PasswordFile::load(&path).unwrap();
    assert!(back.verify("alice", b"secret") && back.verify("bob", b"b"));
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "no temporary file left");

    // Through a link: the file it names is replaced, the link stays.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    f.remove("alice");
    f.save(&link).unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(PasswordFile::load(&path).unwrap().len(), 1);
}

#[test]
fn load_names_the_file_and_bounds_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("passwd");
    assert!(matches!(PasswordFile::load(&path), Err(Error::Io { .. })));
    std::fs::write(&path, "# ok\nbob:plain\n").unwrap();
    let err = PasswordFile::load(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}, line 2: no password hash (a plain-text password? hash it with `fogline passwd`)",
            path.display()
        )
    );
    std::fs::write(&path, "#".repeat(100)).unwrap();
    assert!(PasswordFile::load_with_limit(&path, 100).is_ok());
    assert!(matches!(
        PasswordFile::load_with_limit(&path, 99),
        Err(Error::TooLarge { limit: 99, .. })
    ));
}

fn user_name() -> impl Strategy<Value = String> {
    "[^\\p{Cc}: #][^\\p{Cc}:]{0,20}".prop_filter("no trailing blank", |u| !u.ends_with(' '))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever fogline writes reads back, and verifies with its password and no other.
    #[test]
    fn written_passwords_verify(
        users in proptest::collection::btree_map(user_name(), ".{0,24}", 1..5),
        other in ".{0,24}",
        iterations in 1u32..4,
    ) {
        let mut f = PasswordFile::new();
        for (u, p) in &users {
            f.set(u, p.as_bytes(), iterations).unwrap();
        }
        let back = PasswordFile::parse(&f.to_bytes()).unwrap();
        prop_assert_eq!(back.len(), users.len());
        for (u, p) in &users {
            prop_assert!(back.verify(u, p.as_bytes()));
            if other != *p {
                prop_assert!(!back.verify(u, other.as_bytes()));
            }
        }
    }

    /// Any bytes: an error or a file, never a panic; a file writes back as read.
    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(f) = PasswordFile::parse(&bytes) {
            prop_assert_eq!(f.to_bytes(), bytes);
        }
    }

    /// Text close to real lines, to reach the hash parser's branches.
    #[test]
    fn parse_never_panics_on_near_lines(
        text in "([a#: \t\r\n$67]|101|AAAA|/WVbEpJP3JVpafFX|==|\\$7\\$101\\$){0,40}",
    ) {
        if let Ok(f) = PasswordFile::parse(text.as_bytes()) {
            prop_assert_eq!(f.to_bytes(), text.as_bytes());
        }
    }
}
