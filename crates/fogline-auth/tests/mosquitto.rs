//! Password files cross between fogline and Mosquitto both ways: what Debian's
//! `mosquitto_passwd` writes, fogline reads as is; what fogline writes, a real `mosquitto`
//! (with `allow_anonymous false`) accepts, checked by connecting with `mosquitto_pub -u -P`.
//! Without Mosquitto installed the tests are skipped, unless `FOGLINE_TEST_MOSQUITTO=1` (set
//! by `scripts/test.sh`) makes that a failure.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fogline_auth::passwd::{PasswordFile, Scheme, DEFAULT_ITERATIONS};

/// Mosquitto's programs this test runs: the broker, the password tool, a client.
struct Tools {
    broker: PathBuf,
    passwd: PathBuf,
    publish: PathBuf,
}

/// The tools, or `None` (and the reason printed) when the test is skipped.
fn need_mosquitto() -> Option<Tools> {
    let find = |name: &str| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    };
    let found = (
        find("mosquitto"),
        find("mosquitto_passwd"),
        find("mosquitto_pub"),
    );
    if let (Some(broker), Some(passwd), Some(publish)) = found {
        return Some(Tools {
            broker,
            passwd,
            publish,
        });
    }
    let why = "mosquitto, mosquitto_passwd or mosquitto_pub is not installed \
               (apt-get install mosquitto mosquitto-clients)";
    assert!(
        std::env::var("FOGLINE_TEST_MOSQUITTO").as_deref() != Ok("1"),
        "FOGLINE_TEST_MOSQUITTO=1 but {why}"
    );
    eprintln!("skipped: {why}");
    None
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {out:?}");
}

/// A Mosquitto of the test's own that admits only the users of `password_file`.
struct Broker {
    child: Child,
    port: u16,
    publish: PathBuf,
}

impl Broker {
    fn start(tools: &Tools, dir: &Path, password_file: &Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let conf = dir.join("mosquitto.conf");
        // `user root` keeps a root mosquitto from switching to a user that cannot read the
        // (owner-only) password file.
        std::fs::write(
            &conf,
            format!(
                "listener {port} 127.0.0.1\nallow_anonymous false\npassword_file {}\n\
                 user root\nlog_dest file {}\n",
                password_file.display(),
                dir.join("mosquitto.log").display()
            ),
        )
        .unwrap();
        let mut child = Command::new(&tools.broker)
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mosquitto starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = child.try_wait().unwrap() {
                let log = std::fs::read_to_string(dir.join("mosquitto.log")).unwrap_or_default();
                panic!("mosquitto exited ({status}):\n{log}");
            }
            assert!(Instant::now() < deadline, "mosquitto did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Broker {
            child,
            port,
            publish: tools.publish.clone(),
        }
    }

    /// Whether Mosquitto lets `user` with `password` connect and publish.
    fn admits(&self, user: &str, password: &str) -> bool {
        let out = Command::new(&self.publish)
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-u", user, "-P", password, "-t", "t", "-m", "x"])
            .output()
            .unwrap();
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("not authorised"), "{user}: {err}");
        }
        out.status.success()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn fogline_reads_what_mosquitto_passwd_writes() {
    let Some(tools) = need_mosquitto() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("passwd");
    let p = path.to_str().unwrap();
    run(Command::new(&tools.passwd).args(["-c", "-b", p, "alice", "secret"]));
    run(Command::new(&tools.passwd).args(["-H", "sha512", "-b", p, "dave", "dåve pw"]));
    run(Command::new(&tools.passwd).args(["-b", p, "ünï", "pässwörd"]));

    let f = PasswordFile::load(&path).unwrap();
    assert_eq!(f.users().collect::<Vec<_>>(), ["alice", "dave", "ünï"]);
    assert_eq!(
        f.get("alice").unwrap().scheme(),
        Scheme::Pbkdf2Sha512 { iterations: 101 }
    );
    assert_eq!(f.get("dave").unwrap().scheme(), Scheme::Sha512);
    assert!(f.verify("alice", b"secret"));
    assert!(f.verify("dave", "dåve pw".as_bytes()));
    assert!(f.verify("ünï", "pässwörd".as_bytes()));
    assert!(!f.verify("alice", b"secreT"));
    assert!(!f.verify("dave", b"secret"));
    assert!(!f.verify("ünï", b"passwoerd"));
    assert_eq!(
        f.to_bytes(),
        std::fs::read(&path).unwrap(),
        "read unchanged"
    );
}

#[test]
fn mosquitto_accepts_what_fogline_writes() {
    let Some(tools) = need_mosquitto() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("passwd");
    let p = path.to_str().unwrap();
    run(Command::new(&tools.passwd).args(["-c", "-b", p, "alice", "old"]));
    run(Command::new(&tools.passwd).args(["-H", "sha512", "-b", p, "dave", "dave's"]));

    // fogline changes alice, adds two users (one with more iterations) and a comment.
    let mut f = PasswordFile::load(&path).unwrap();
    f.set("alice", b"new", DEFAULT_ITERATIONS).unwrap();
    f.set("bob", "bøb pw".as_bytes(), DEFAULT_ITERATIONS)
        .unwrap();
    f.set("carol", b"c", 5000).unwrap();
    f.save(&path).unwrap();

    // `mosquitto_passwd` can go on changing it (it cannot read comments, so before those).
    run(Command::new(&tools.passwd).args(["-b", p, "erin", "e"]));
    let mut bytes = b"# written by fogline and mosquitto_passwd\n".to_vec();
    bytes.extend(std::fs::read(&path).unwrap());
    std::fs::write(&path, bytes).unwrap();
    let f = PasswordFile::load(&path).unwrap();
    assert!(f.verify("erin", b"e") && f.verify("carol", b"c"));

    let broker = Broker::start(&tools, dir.path(), &path);
    assert!(broker.admits("alice", "new"));
    assert!(!broker.admits("alice", "old"));
    assert!(broker.admits("bob", "bøb pw"));
    assert!(!broker.admits("bob", "bob pw"));
    assert!(broker.admits("carol", "c"));
    assert!(!broker.admits("carol", "C"));
    assert!(broker.admits("dave", "dave's"));
    assert!(broker.admits("erin", "e"));
    assert!(!broker.admits("mallory", "new"));
}
