//! The users and the ACL of the ACL part: a file of [`RULES`] rules, as a site with a fleet
//! of devices might have, in which the benchmark's user is one user among 31.
//!
//! The user's grant is not the first thing a lookup finds: its section comes after 15
//! others, its topics share their first two levels with a `deny` that the check must rule
//! out, and the grant itself is in a second `user` section at the end of the file (a name
//! given twice collects both sections, as in Mosquitto). Anonymous lines and patterns (which
//! the broker asks when the user's own list does not decide) come first.

use std::path::Path;

use fogline_auth::passwd::{PasswordFile, DEFAULT_ITERATIONS};

/// The user the benchmark logs in as.
pub(crate) const USER: &str = "bench";
/// Its password (a benchmark's throwaway secret).
pub(crate) const PASSWORD: &str = "bench-secret";
/// Every topic the benchmark uses is under this prefix, which the ACL grants [`USER`].
pub(crate) const TOPIC_ROOT: &str = "bench/sec";
/// Rules in the file (`topic` and `pattern` lines).
pub(crate) const RULES: usize = 100;
/// Users besides [`USER`].
const FLEET: usize = 30;

fn fleet_section(s: &mut String, i: usize) {
    s.push_str(&format!(
        "\nuser fleet{i:02}\ntopic readwrite site/fleet{i:02}/#\ntopic read site/config/+\ntopic deny site/fleet{i:02}/keys/#\n"
    ));
}

/// The ACL file's text.
pub(crate) fn acl_text() -> String {
    let mut s = String::from(
        "# fogline-bench security: 100 rules, user bench among 31\n\
         topic read public/#\n\
         topic read $SYS/broker/load/#\n\
         pattern readwrite users/%u/#\n\
         pattern read devices/%c/config/#\n\
         pattern write devices/%c/status\n\
         pattern deny users/%u/secret/#\n",
    );
    for i in 0..FLEET / 2 {
        fleet_section(&mut s, i);
    }
    s.push_str(&format!(
        "\nuser {USER}\ntopic read site/config/+\ntopic write site/{USER}/status\ntopic deny {TOPIC_ROOT}/private/#\n"
    ));
    for i in FLEET / 2..FLEET {
        fleet_section(&mut s, i);
    }
    s.push_str(&format!("\nuser {USER}\ntopic readwrite {TOPIC_ROOT}/#\n"));
    s
}

/// Writes the ACL file to `acl` and a password file with [`USER`] and the fleet's users to
/// `passwd`.
pub(crate) fn write(acl: &Path, passwd: &Path) -> anyhow::Result<()> {
    std::fs::write(acl, acl_text())?;
    let mut file = PasswordFile::new();
    for i in 0..FLEET {
        let user = format!("fleet{i:02}");
        file.set(&user, format!("{user}-pw").as_bytes(), DEFAULT_ITERATIONS)?;
    }
    file.set(USER, PASSWORD.as_bytes(), DEFAULT_ITERATIONS)?;
    file.save(passwd)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fogline_auth::acl::{Access, Acl, Scope};
    use std::sync::Arc;

    #[test]
    fn the_acl_has_100_rules_and_grants_the_bench_user_its_topics_only() {
        let acl = Arc::new(Acl::parse(&acl_text()).expect("Mosquitto's syntax"));
        assert_eq!(acl.rules().len(), RULES);
        assert!(acl.warnings().is_empty(), "{:?}", acl.warnings());
        let users = acl
            .rules()
            .iter()
            .filter_map(|r| match &r.scope {
                Scope::User(u) => Some(u.as_str()),
                _ => None,
            })
            .collect::<std::collections::BTreeSet<_>>();
        assert_eq!(users.len(), FLEET + 1);
        // Not the first rule: 15 users' sections come before the bench user's first line.
        let first = acl
            .rules()
            .iter()
            .position(|r| r.scope == Scope::User(USER.into()))
            .unwrap();
        assert!(first > RULES / 2 - 10, "{first}");

        let bench = acl.client(Some(USER), "fb-pub-1-0");
        let topic = format!("{TOPIC_ROOT}/fogline-acl-q1-1024-max-r3");
        assert!(bench.check(&topic, Access::Write));
        assert!(bench.check(&topic, Access::Read));
        assert!(bench.check(&topic, Access::Subscribe));
        assert!(!bench.check(&format!("{TOPIC_ROOT}/private/x"), Access::Write));
        assert!(!bench.check("site/fleet03/x", Access::Write));
        // Nobody else gets the benchmark's topics.
        assert!(!acl.check(Some("fleet03"), "c", &topic, Access::Write));
        assert!(!acl.check(None, "c", &topic, Access::Read));
    }

    #[test]
    fn the_password_file_logs_the_bench_user_in() {
        let dir = tempfile::tempdir().unwrap();
        let (acl, passwd) = (dir.path().join("acl"), dir.path().join("passwd"));
        write(&acl, &passwd).unwrap();
        let file = PasswordFile::load(&passwd).unwrap();
        assert_eq!(file.len(), FLEET + 1);
        assert!(file.verify(USER, PASSWORD.as_bytes()));
        assert!(!file.verify(USER, b"wrong"));
        assert!(Acl::load(&acl).is_ok());
    }
}
