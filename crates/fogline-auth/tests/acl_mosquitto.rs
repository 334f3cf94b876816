//! Differential test against a real Mosquitto: the same ACL file and users, every user
//! publishing to and receiving each topic of a list and subscribing to each filter of
//! another; fogline's evaluator must decide as Mosquitto did.
//!
//! - Publish: `mosquitto_pub -q 1 -V mqttv5`; Mosquitto answers PUBACK 0x87 (Not authorized)
//!   when the ACL refuses write, below 0x80 otherwise.
//! - Receive: each user subscribes to `#` and `$custom/#`, an admin publishes every topic;
//!   what reaches the user is what Mosquitto's read check let through.
//! - Subscribe: the SUBACK reason codes of `mosquitto_sub -d -V mqttv5`. Mosquitto 2.0's
//!   `acl_file` grants every subscription (and filters messages), where fogline refuses a
//!   filter no read rule takes in; so the check is one-way: what fogline grants, Mosquitto
//!   must grant.
//!
//! Needs `mosquitto` and its clients. Without them the test is skipped, unless
//! `FOGLINE_TEST_MOSQUITTO=1` (set by `scripts/test.sh`) makes that a failure.

use fogline_auth::acl::{Access, Acl};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);
const PASSWORD: &str = "pw";

const ACL: &str = "\
user admin
topic readwrite #
topic readwrite $custom/#

user alice
topic readwrite alice/#
topic read shared/#
topic deny shared/secret
topic write $custom/alice
topic read sensors/+/temp
topic read with space/x
topic read users/#

user bob
topic write shared/#
topic read shared/secret
topic read $custom/#

pattern readwrite users/%u/#
pattern read clients/%c/#
pattern deny users/%u/locked
pattern read dev-%c/status
";

/// (username, client id); carol has no section of her own, `eve+` is a refused username.
const USERS: [(&str, &str); 5] = [
    ("admin", "admin-c"),
    ("alice", "alice-c"),
    ("bob", "bob-c"),
    ("carol", "carol-c"),
    ("eve+", "eve-c"),
];

const TOPICS: [&str; 21] = [
    "alice/a",
    "shared/x",
    "shared/secret",
    "users/alice/x",
    "users/alice/locked",
    "users/bob/x",
    "users/bob/locked",
    "users/carol/x",
    "users/carol/locked",
    "clients/alice-c/x",
    "clients/carol-c/x",
    "clients/bob-c/x",
    "clients/eve-c/x",
    "$custom/alice",
    "$custom/bob",
    "sensors/1/temp",
    "sensors/1/hum",
    "with space/x",
    "dev-carol-c/status",
    "public/x",
    "other",
];

const FILTERS: [&str; 12] = [
    "#",
    "$custom/#",
    "alice/#",
    "shared/#",
    "shared/secret",
    "users/alice/#",
    "users/+/x",
    "sensors/+/temp",
    "sensors/#",
    "clients/carol-c/#",
    "users/carol/x",
    "$SYS/#",
];

fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The four Mosquitto programs, or `None` (and the reason printed) when skipped.
fn need_mosquitto() -> Option<Tools> {
    let tools = (|| {
        Some(Tools {
            broker: find("mosquitto")?,
            publish: find("mosquitto_pub")?,
            subscribe: find("mosquitto_sub")?,
            passwd: find("mosquitto_passwd")?,
            stdbuf: find("stdbuf")?,
        })
    })();
    if tools.is_none() {
        let why =
            "mosquitto, its clients (mosquitto_pub, _sub, _passwd) or stdbuf is not installed";
        assert!(
            std::env::var("FOGLINE_TEST_MOSQUITTO").as_deref() != Ok("1"),
            "FOGLINE_TEST_MOSQUITTO=1 but {why}"
        );
        eprintln!("skipped: {why}");
    }
    tools
}

struct Tools {
    broker: PathBuf,
    publish: PathBuf,
    subscribe: PathBuf,
    passwd: PathBuf,
    /// mosquitto_sub prints the SUBACK line without flushing it: run it line-buffered.
    stdbuf: PathBuf,
}

/// A child process killed when dropped, so a failing test leaves nothing running.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_broker(tools: &Tools, dir: &Path) -> (Running, u16) {
    let pw = dir.join("passwd");
    for (i, (user, _)) in USERS.iter().enumerate() {
        let mut cmd = Command::new(&tools.passwd);
        if i == 0 {
            cmd.arg("-c");
        }
        let status = cmd
            .arg("-b")
            .arg(&pw)
            .arg(user)
            .arg(PASSWORD)
            .status()
            .unwrap();
        assert!(status.success(), "mosquitto_passwd {user}");
    }
    std::fs::write(dir.join("acl"), ACL).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // `user root` keeps a root mosquitto from switching to a user that cannot read here.
    let conf = format!(
        "listener {port} 127.0.0.1\nallow_anonymous false\npassword_file {}\nacl_file {}\n\
         persistence false\nuser root\nlog_dest file {}\n",
        pw.display(),
        dir.join("acl").display(),
        dir.join("log").display()
    );
    std::fs::write(dir.join("mosquitto.conf"), conf).unwrap();
    let child = Command::new(&tools.broker)
        .arg("-c")
        .arg(dir.join("mosquitto.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mosquitto starts");
    let broker = Running(child);
    let deadline = Instant::now() + WAIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "mosquitto did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    (broker, port)
}

fn client_args(cmd: &mut Command, port: u16, user: &str, client: &str) {
    cmd.args(["-h", "127.0.0.1", "-p", &port.to_string(), "-V", "mqttv5"])
        .args(["-u", user, "-P", PASSWORD, "-i", client]);
}

/// Publishes one QoS 1 message; whether Mosquitto's PUBACK accepted it.
fn publish(tools: &Tools, port: u16, user: &str, client: &str, topic: &str, body: &str) -> bool {
    let mut cmd = Command::new(&tools.publish);
    client_args(&mut cmd, port, user, client);
    let out = cmd
        .args(["-q", "1", "-d", "-t", topic, "-m", body])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let code = text
        .lines()
        .find_map(|l| l.split("received PUBACK (Mid: 1, RC:").nth(1))
        .and_then(|rest| rest.trim_end_matches(')').parse::<u8>().ok())
        .unwrap_or_else(|| panic!("no PUBACK for {user} on {topic}: {text}"));
    code < 0x80
}

/// A subscriber whose output lines are collected as they come.
struct Subscriber {
    _child: Running,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Subscriber {
    fn start(tools: &Tools, port: u16, user: &str, client: &str, filters: &[&str]) -> Self {
        let mut cmd = Command::new(&tools.stdbuf);
        cmd.arg("-oL").arg(&tools.subscribe);
        client_args(&mut cmd, port, user, client);
        cmd.args(["-d", "-v", "-q", "1"]);
        for f in filters {
            cmd.args(["-t", f]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Subscriber {
            _child: Running(child),
            lines,
        }
    }

    /// Waits for a line that `pick` accepts and returns what it made of it.
    fn wait_for<T>(&self, what: &str, pick: impl Fn(&str) -> Option<T>) -> T {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(v) = self.lines.lock().unwrap().iter().find_map(|l| pick(l)) {
                return v;
            }
            assert!(Instant::now() < deadline, "no {what} in {:?}", self.lines);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The SUBACK reason codes, one per filter (`Subscribed (mid: 1): 0, 135`).
    fn suback(&self) -> Vec<u8> {
        self.wait_for("SUBACK", |l| {
            let codes = l.strip_prefix("Subscribed (mid: 1): ")?;
            codes.split(", ").map(|c| c.trim().parse().ok()).collect()
        })
    }

    /// Indexes into `TOPICS` of the messages received (their bodies are `r<index>`).
    fn received(&self) -> Vec<usize> {
        let mut got: Vec<usize> = (self.lines.lock().unwrap().iter())
            .filter_map(|l| l.rsplit_once(' ')?.1.strip_prefix('r')?.parse().ok())
            .collect();
        got.sort_unstable();
        got.dedup();
        got
    }
}

#[test]
fn fogline_decides_as_mosquitto_does() {
    let Some(tools) = need_mosquitto() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_broker, port) = start_broker(&tools, dir.path());
    let acl = Acl::parse(ACL).unwrap();
    let mut disagree = Vec::new();
    let mut seen = [[0usize; 2]; 3];
    let mut note = |access: Access, allowed: bool, mosquitto: bool, user: &str, topic: &str| {
        seen[access as usize][allowed as usize] += 1;
        if allowed != mosquitto {
            disagree.push(format!(
                "{user} {access:?} {topic}: fogline {allowed}, mosquitto {mosquitto}"
            ));
        }
    };

    // Receiving and subscribing: one subscriber per user, then the admin publishes all.
    let subs: Vec<Subscriber> = USERS
        .iter()
        .map(|(u, c)| Subscriber::start(&tools, port, u, c, &FILTERS))
        .collect();
    for (sub, (user, client)) in subs.iter().zip(USERS) {
        let codes = sub.suback();
        assert_eq!(codes.len(), FILTERS.len(), "{user}: {codes:?}");
        for (filter, code) in FILTERS.iter().zip(codes) {
            let granted = acl.check(Some(user), client, filter, Access::Subscribe);
            // One-way: Mosquitto 2.0 grants what fogline refuses (see the module doc).
            note(
                Access::Subscribe,
                granted,
                granted && code < 0x80,
                user,
                filter,
            );
        }
    }
    for (i, topic) in TOPICS.iter().enumerate() {
        assert!(publish(
            &tools,
            port,
            "admin",
            "admin-pub",
            topic,
            &format!("r{i}")
        ));
    }
    // The last message each user can read marks the end of its stream.
    let end = TOPICS.len();
    for (sub, (user, client)) in subs.iter().zip(USERS) {
        let marker = format!("users/{user}/end");
        if acl.check(Some(user), client, &marker, Access::Read) {
            assert!(publish(
                &tools,
                port,
                "admin",
                "admin-pub",
                &marker,
                &format!("r{end}")
            ));
            sub.wait_for("end marker", |l| {
                l.ends_with(&format!(" r{end}")).then_some(())
            });
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    for (sub, (user, client)) in subs.iter().zip(USERS) {
        let got = sub.received();
        for (i, topic) in TOPICS.iter().enumerate() {
            let allowed = acl.check(Some(user), client, topic, Access::Read);
            note(Access::Read, allowed, got.contains(&i), user, topic);
        }
    }
    drop(subs);

    // Publishing: every user to every topic.
    for (user, client) in USERS {
        for topic in TOPICS {
            let accepted = publish(&tools, port, user, client, topic, "w");
            let allowed = acl.check(Some(user), client, topic, Access::Write);
            note(Access::Write, allowed, accepted, user, topic);
        }
    }

    assert!(
        disagree.is_empty(),
        "fogline and mosquitto disagree:\n{}",
        disagree.join("\n")
    );
    // Each kind of check saw both answers, or the matrix proves little.
    for (access, [denied, allowed]) in [Access::Read, Access::Write, Access::Subscribe]
        .iter()
        .zip(seen)
    {
        assert!(
            denied > 5 && allowed > 5,
            "{access:?}: {allowed} allowed, {denied} denied"
        );
    }
}
