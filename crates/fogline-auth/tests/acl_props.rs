//! Properties over generated ACL files: the compiled trees agree with the rule-by-rule
//! reference evaluator, a `deny` line always denies what it matches, and no text makes the
//! parser or the checks panic.

mod reference;

use fogline_auth::acl::{Access, Acl};
use proptest::prelude::*;
use std::sync::Arc;

const ACCESSES: [Access; 3] = [Access::Read, Access::Write, Access::Subscribe];

fn level(wild: bool) -> BoxedStrategy<String> {
    let mut names = vec!["a", "b", "$s", "u1", "c1", "", "x c1", "%u"];
    if wild {
        names.extend(["+", "#", "%u", "%c", "x%c", "%u%c"]);
    }
    proptest::sample::select(names)
        .prop_map(String::from)
        .boxed()
}

/// A filter (`wild`) or topic name of one to four levels; `#` only last.
fn path(wild: bool) -> impl Strategy<Value = String> {
    prop::collection::vec(level(wild), 1..5)
        .prop_map(|levels| {
            let last = levels.len() - 1;
            levels
                .into_iter()
                .enumerate()
                .map(|(i, l)| if l == "#" && i != last { "+".into() } else { l })
                .collect::<Vec<_>>()
                .join("/")
        })
        .prop_filter("an empty topic is not one", |p| !p.is_empty())
}

fn line() -> impl Strategy<Value = String> {
    let access = proptest::sample::select(vec!["", "read ", "write ", "readwrite ", "deny "]);
    let kind = proptest::sample::select(vec!["topic", "pattern"]);
    prop_oneof![
        3 => (kind, access, path(true)).prop_map(|(k, a, t)| {
            // A topic with a space needs the access word.
            let a = if a.is_empty() && t.contains(' ') { "read " } else { a };
            format!("{k} {a}{t}")
        }),
        1 => proptest::sample::select(vec!["user u1", "user u2", "user u/1", "# c", ""])
            .prop_map(String::from),
    ]
}

fn file() -> impl Strategy<Value = String> {
    prop::collection::vec(line(), 0..12).prop_map(|lines| lines.join("\n"))
}

fn who() -> impl Strategy<Value = (Option<&'static str>, &'static str)> {
    (
        proptest::sample::select(vec![None, Some("u1"), Some("u2"), Some("u+"), Some("u/1")]),
        proptest::sample::select(vec!["c1", "c2", "c/1", "c#"]),
    )
}

/// A topic that `filter` matches: its `+` filled from `fills`, its `#` by `extra` levels.
fn instance(filter: &str, fills: &[String], extra: &[String]) -> String {
    let mut levels = Vec::new();
    for (i, l) in filter.split('/').enumerate() {
        match l {
            "+" => levels.push(fills[i % fills.len()].clone()),
            "#" => levels.extend(extra.iter().cloned()),
            _ => levels.push(l.to_owned()),
        }
    }
    if levels.is_empty() {
        levels.push("a".into());
    }
    levels.join("/")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn trees_agree_with_the_reference(
        text in file(),
        (user, client) in who(),
        topic in path(false),
        filter in path(true),
    ) {
        let acl = Arc::new(Acl::parse(&text).unwrap());
        let view = acl.client(user, client);
        for access in ACCESSES {
            let t = if access == Access::Subscribe { &filter } else { &topic };
            let want = reference::check(&acl, user, client, t, access);
            prop_assert_eq!(acl.check(user, client, t, access), want, "{:?} {}", access, t);
            prop_assert_eq!(view.check(t, access), want, "view {:?} {}", access, t);
        }
    }

    #[test]
    fn a_deny_line_denies_what_it_matches(
        text in file(),
        deny in path(true).prop_filter("no substitution", |f| !f.contains('%')),
        fills in prop::collection::vec(level(false), 4),
        extra in prop::collection::vec(level(false), 0..3),
        client in proptest::sample::select(vec!["c1", "c2", "c/1"]),
    ) {
        let topic = instance(&deny, &fills, &extra);
        // Only a `$` level where a wildcard stands fails to match.
        prop_assume!(reference::matches(&deny, &topic));
        // The anonymous clients' list comes first in a file; a user's goes anywhere after.
        let anon = Acl::parse(&format!("topic deny {deny}\n{text}")).unwrap();
        let own = Acl::parse(&format!("{text}\nuser u1\ntopic deny {deny}\n")).unwrap();
        let pattern = Acl::parse(&format!("{text}\npattern deny {deny}\n")).unwrap();
        for access in [Access::Read, Access::Write, Access::Subscribe] {
            prop_assert!(!anon.check(None, client, &topic, access));
            prop_assert!(!own.check(Some("u1"), client, &topic, access));
            // A client without a section of its own has only the patterns.
            prop_assert!(!pattern.check(Some("nobody"), client, &topic, access));
        }
    }

    #[test]
    fn any_text_parses_or_fails_without_panic(text in "(?s).{0,300}", topic in "\\PC{0,20}") {
        if let Ok(acl) = Acl::parse(&text) {
            for access in ACCESSES {
                let _ = acl.check(Some("u"), "c", &topic, access);
                let _ = acl.check(None, "c", &topic, access);
            }
        }
    }

    #[test]
    fn any_line_soup_parses_or_fails_without_panic(
        words in prop::collection::vec(
            prop_oneof![
                proptest::sample::select(vec![
                    "topic", "pattern", "user", "read", "write", "readwrite", "deny", "#",
                    "+", "%u", "%c", "/", " ", "\t", "\n", "\r\n", "\u{b}", "$SYS",
                ]).prop_map(String::from),
                "\\PC{0,4}",
            ],
            0..40,
        ),
        bytes in prop::collection::vec(any::<u8>(), 0..64),
        topic in path(true),
    ) {
        let text = words.concat();
        for acl in [Acl::parse(&text), Acl::parse_bytes(&bytes)].into_iter().flatten() {
            for access in ACCESSES {
                let want = reference::check(&acl, Some("u"), "c", &topic, access);
                prop_assert_eq!(acl.check(Some("u"), "c", &topic, access), want);
            }
        }
    }
}
