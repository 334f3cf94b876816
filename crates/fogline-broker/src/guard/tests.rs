use super::*;
use std::io::Write as _;

fn file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    path
}

#[test]
fn without_files_everyone_may_do_everything() {
    let guard = Arc::new(Guard::default());
    assert!(!guard.authenticates());
    assert!(!guard.has_acl());
    let login = Login {
        client_id: "c".into(),
        username: Some("u".into()),
        ..Login::default()
    };
    assert_eq!(guard.authenticate(&login), Ok(Some("u".into())));
    let c = guard.client(None, "c");
    assert!(c.may_publish("a/b") && c.may_subscribe("#") && c.may_read("a"));
    assert!(c.check_admin("streams/x", true).is_ok());
}

#[test]
fn the_acl_decides_and_counts_what_it_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let acl = file(
        dir.path(),
        "acl",
        "user alice\ntopic readwrite alice/#\ntopic read $fogline/admin/#\n\
         user root\ntopic readwrite $fogline/admin/#\n",
    );
    let guard = Arc::new(Guard::default());
    guard
        .configure(&AuthConfig {
            acl_file: Some(acl.clone()),
            ..AuthConfig::default()
        })
        .unwrap();
    assert!(guard.has_acl());
    let alice = guard.client(Some("alice"), "c1");
    assert!(alice.may_publish("alice/x"));
    assert!(!alice.may_publish("bob/x"));
    assert!(alice.may_subscribe("alice/+"));
    assert!(!alice.may_subscribe("#"));
    assert!(!alice.may_read("bob/x"));
    assert!(alice.check_admin("streams/s", false).is_ok());
    let refused = alice.check_admin("streams/s", true).unwrap_err();
    assert!(
        matches!(refused, BrokerError::NotAuthorized(_)),
        "{refused}"
    );
    assert!(guard
        .client(Some("root"), "c2")
        .check_admin("streams/s", true)
        .is_ok());
    let s = guard.stats();
    assert_eq!(s.denied(Denied::Publish), 1);
    assert_eq!(s.denied(Denied::Subscribe), 1);
    assert_eq!(s.denied(Denied::Read), 1);
    assert_eq!(s.denied(Denied::Admin), 1);

    // A reload puts the new file in force for the connections already there; a bad file
    // keeps the old one.
    file(dir.path(), "acl", "user alice\ntopic readwrite bob/#\n");
    assert!(guard.reload().is_empty());
    assert!(alice.may_publish("bob/x") && !alice.may_publish("alice/x"));
    file(dir.path(), "acl", "nonsense line\n");
    assert_eq!(guard.reload().len(), 1);
    assert!(alice.may_publish("bob/x"));
}

#[test]
fn a_remembered_publish_decision_is_counted_and_follows_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let acl = file(dir.path(), "acl", "user alice\ntopic write alice/#\n");
    let guard = Arc::new(Guard::default());
    guard
        .configure(&AuthConfig {
            acl_file: Some(acl),
            ..AuthConfig::default()
        })
        .unwrap();
    let alice = guard.client(Some("alice"), "c1");
    for _ in 0..3 {
        assert!(!alice.may_publish("bob/x"));
    }
    assert_eq!(
        guard.stats().denied(Denied::Publish),
        3,
        "every refusal counts"
    );
    assert!(alice.may_publish("alice/x") && alice.may_publish("alice/x"));
    assert!(
        !alice.may_publish("carol/x"),
        "a different topic is checked anew"
    );

    file(dir.path(), "acl", "user alice\ntopic write bob/#\n");
    assert!(guard.reload().is_empty());
    assert!(!alice.may_publish("alice/x"), "the reloaded rules decide");
    assert!(alice.may_publish("bob/x"));
    let copy = alice.clone();
    assert!(copy.may_publish("bob/x") && !copy.may_publish("alice/x"));
}

#[test]
fn a_password_file_refuses_anonymous_clients_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = fogline_auth::passwd::PasswordFile::new();
    f.set("alice", b"pw", 10).unwrap();
    let path = dir.path().join("passwd");
    f.save(&path).unwrap();
    let guard = Guard::default();
    let cfg = AuthConfig {
        password_file: Some(path),
        ..AuthConfig::default()
    };
    assert!(cfg.authenticates() && !cfg.anonymous_allowed());
    guard.configure(&cfg).unwrap();
    assert!(guard.authenticates() && !guard.admits_anonymous());
    let login = |u: Option<&str>, p: &str| Login {
        client_id: "c".into(),
        username: u.map(Into::into),
        password: Some(p.as_bytes().to_vec()),
        identity: None,
    };
    assert_eq!(
        guard.authenticate(&login(Some("alice"), "pw")),
        Ok(Some("alice".into()))
    );
    assert_eq!(
        guard.authenticate(&login(Some("alice"), "no")),
        Err(Refused::BadCredentials)
    );
    assert!(guard.authenticate(&login(None, "")).is_err());
    guard
        .configure(&AuthConfig {
            allow_anonymous: Some(true),
            ..cfg
        })
        .unwrap();
    assert_eq!(guard.authenticate(&login(None, "")), Ok(None));
}

#[test]
fn log_lines_are_limited_and_count_what_they_left_out() {
    let mut l = LogLimit::default();
    assert_eq!(l.allow(1), Some(0));
    assert_eq!(l.allow(1), None);
    assert_eq!(l.allow(1), None);
    assert_eq!(l.allow(2), Some(0), "kinds are limited apart");
    l.last[1] = Some(Instant::now() - Duration::from_secs(2));
    assert_eq!(l.allow(1), Some(2));
}
