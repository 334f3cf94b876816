//! A slow, obviously-faithful evaluator of an ACL, written the way Mosquitto 2.0's check
//! reads (a walk over each list, `deny` first, `%u`/`%c` substituted into the text of each
//! pattern), against which the compiled trees of `fogline_auth::acl` are compared. It reads
//! the rules through `Acl::rules`, so it shares only the parser with what it checks.

use fogline_auth::acl::{Access, Acl, Grant, Scope};

/// `Acl::check`, computed rule by rule.
pub fn check(acl: &Acl, user: Option<&str>, client: &str, topic: &str, access: Access) -> bool {
    let valid = match access {
        Access::Subscribe => valid_filter(topic),
        _ => !topic.is_empty() && !topic.contains(['+', '#']),
    };
    if !valid {
        return false;
    }
    let scope = match user {
        None => Scope::Anonymous,
        Some(u) => Scope::User(u.to_owned()),
    };
    let own: Vec<(Grant, String)> = acl
        .rules()
        .iter()
        .filter(|r| r.scope == scope)
        .map(|r| (r.grant, r.topic.clone()))
        .collect();
    if let Some(allowed) = walk(&own, topic, access) {
        return allowed;
    }
    let patterns: Vec<_> = acl
        .rules()
        .iter()
        .filter(|r| r.scope == Scope::Pattern)
        .collect();
    if patterns.is_empty() {
        return false;
    }
    let bad = |s: &str| s.contains(['+', '#', '/']);
    if user.is_some_and(bad) || bad(client) {
        return false;
    }
    let substituted: Vec<(Grant, String)> = patterns
        .iter()
        .filter_map(|r| Some((r.grant, substitute(&r.topic, user, client)?)))
        .collect();
    walk(&substituted, topic, access) == Some(true)
}

/// `Some(false)`: a deny matched; `Some(true)`: a grant of the access matched.
fn walk(rules: &[(Grant, String)], topic: &str, access: Access) -> Option<bool> {
    let hit = |filter: &str| match access {
        Access::Subscribe => covers(filter, topic),
        _ => matches(filter, topic),
    };
    if rules.iter().any(|(g, f)| *g == Grant::Deny && hit(f)) {
        return Some(false);
    }
    let gives = |g: Grant| match access {
        Access::Read | Access::Subscribe => matches!(g, Grant::Read | Grant::ReadWrite),
        Access::Write => matches!(g, Grant::Write | Grant::ReadWrite),
    };
    rules
        .iter()
        .any(|(g, f)| gives(*g) && hit(f))
        .then_some(true)
}

/// `None` when the pattern has `%u` and the client no username (Mosquitto skips it).
fn substitute(pattern: &str, user: Option<&str>, client: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = pattern;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('c') {
            out.push_str(client);
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('u') {
            out.push_str(user?);
            rest = tail;
        } else {
            out.push('%');
            rest = after;
        }
    }
    out.push_str(rest);
    Some(out)
}

fn valid_filter(f: &str) -> bool {
    let levels: Vec<&str> = f.split('/').collect();
    !f.is_empty()
        && levels.len() <= 201
        && levels.iter().enumerate().all(|(i, l)| {
            (!l.contains(['+', '#']) || *l == "+" || *l == "#")
                && (*l != "#" || i == levels.len() - 1)
        })
}

/// MQTT topic matching, level by level, with the `$` rule.
pub fn matches(filter: &str, topic: &str) -> bool {
    let f: Vec<&str> = filter.split('/').collect();
    let t: Vec<&str> = topic.split('/').collect();
    if topic.starts_with('$') && (f[0] == "+" || f[0] == "#") {
        return false;
    }
    fn go(f: &[&str], t: &[&str]) -> bool {
        match (f.first(), t.first()) {
            (Some(&"#"), _) => true,
            (None, None) => true,
            (Some(&"+"), Some(_)) => go(&f[1..], &t[1..]),
            (Some(a), Some(b)) => a == b && go(&f[1..], &t[1..]),
            _ => false,
        }
    }
    go(&f, &t)
}

/// Whether ACL filter `acl` takes in every topic subscription filter `sub` matches.
fn covers(acl: &str, sub: &str) -> bool {
    let a: Vec<&str> = acl.split('/').collect();
    let s: Vec<&str> = sub.split('/').collect();
    if sub.starts_with('$') && (a[0] == "+" || a[0] == "#") {
        return false;
    }
    fn go(a: &[&str], s: &[&str]) -> bool {
        match (a.first(), s.first()) {
            (Some(&"#"), _) => true,
            (None, None) => true,
            (Some(&"+"), Some(&"#")) => false,
            (Some(&"+"), Some(_)) => go(&a[1..], &s[1..]),
            (Some(_), Some(&"+" | &"#")) => false,
            (Some(x), Some(y)) => x == y && go(&a[1..], &s[1..]),
            _ => false,
        }
    }
    go(&a, &s)
}
