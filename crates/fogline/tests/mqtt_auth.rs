//! MQTT users on the real `fogline serve` with Mosquitto's clients: a password file written
//! by Debian's `mosquitto_passwd`, `-u/-P`, the CONNACK refusals (mosquitto_pub exits with
//! the CONNACK code), a client id that another user cannot take over, the TLS certificate's
//! CN as the user, and SIGHUP reading the password file again while clients stay connected.

#[path = "../../fogline-net/tests/pki/mod.rs"]
mod pki;
mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `mosquitto_passwd -c -b` for the first user, `-b` for the others.
fn mosquitto_passwd(file: &Path, users: &[(&str, &str)]) {
    for (i, (user, pw)) in users.iter().enumerate() {
        let mut cmd = Command::new("mosquitto_passwd");
        if i == 0 {
            cmd.arg("-c");
        }
        let out = cmd
            .arg("-b")
            .arg(file)
            .args([user, pw])
            .output()
            .expect("mosquitto_passwd is installed (Debian package mosquitto)");
        assert!(out.status.success(), "{out:?}");
    }
}

/// `fogline serve` with `[auth] password_file = file` and `extra` lines of `[auth]`.
fn serve(dir: &Path, file: &Path, extra: &str) -> support::Served {
    let cfg = dir.join("fogline.toml");
    std::fs::write(&cfg, format!("[auth]\npassword_file = {file:?}\n{extra}")).unwrap();
    let data = dir.join("data");
    support::serve([
        "--config".as_ref(),
        cfg.as_os_str(),
        "--data-dir".as_ref(),
        data.as_os_str(),
    ])
}

fn host_port(addr: &str) -> [&str; 4] {
    let (host, port) = addr.rsplit_once(':').unwrap();
    ["-h", host, "-p", port]
}

fn run(cmd: &str, addr: &str, args: &[&str]) -> Output {
    Command::new(cmd)
        .args(host_port(addr))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd} is installed (Debian package mosquitto-clients): {e}"))
}

/// mosquitto_pub's exit status: 0, or the CONNACK code of a refusal.
fn publish(addr: &str, args: &[&str]) -> Option<i32> {
    let mut all = vec!["-q", "1"];
    all.extend(args);
    run("mosquitto_pub", addr, &all).status.code()
}

fn user<'a>(name: &'a str, pw: &'a str) -> [&'a str; 4] {
    ["-u", name, "-P", pw]
}

/// A mosquitto_sub left running (`-d`: its protocol log and the messages on stdout).
struct Sub {
    child: Child,
    out: Arc<Mutex<Vec<String>>>,
}

impl Sub {
    fn start(addr: &str, args: &[&str]) -> Sub {
        // Line-buffered: its log is read as it goes, to know when it is connected.
        let mut child = Command::new("stdbuf")
            .args(["-oL", "mosquitto_sub"])
            .args(host_port(addr))
            .arg("-d")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("mosquitto_sub is installed");
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let out = Arc::new(Mutex::new(Vec::new()));
        let keep = out.clone();
        std::thread::spawn(move || {
            for l in lines.map_while(Result::ok) {
                keep.lock().unwrap().push(l);
            }
        });
        let sub = Sub { child, out };
        sub.wait_for("received CONNACK");
        sub
    }

    fn count(&self, text: &str) -> usize {
        self.out
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(text))
            .count()
    }

    fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while self.count(text) == 0 {
            assert!(
                Instant::now() < deadline,
                "mosquitto_sub never printed {text:?}: {:?}",
                self.out.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Sub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn passwd_with(dir: &Path, users: &[(&str, &str)]) -> PathBuf {
    let file = dir.join("passwd");
    mosquitto_passwd(&file, users);
    file
}

#[test]
fn mosquitto_passwd_users_and_mosquittos_refusal_codes() {
    let dir = tempfile::tempdir().unwrap();
    let file = passwd_with(dir.path(), &[("alice", "secret"), ("bob", "b pw")]);
    let s = serve(dir.path(), &file, "");
    let a = &s.mqtt;
    // 3.1.1: 0x04 bad user name or password, 0x05 not authorized; 5.0: 0x86, 0x87.
    for (v, bad, anonymous) in [("mqttv311", 4, 5), ("mqttv5", 0x86, 0x87)] {
        let t = format!("t/{v}");
        let ok = |u: [&str; 4], m: &str| {
            let args = [&u[..], &["-V", v, "-t", &t, "-m", m, "-r"]].concat();
            publish(a, &args)
        };
        assert_eq!(ok(user("alice", "secret"), "from alice"), Some(0));
        assert_eq!(ok(user("alice", "Secret"), "wrong password"), Some(bad));
        assert_eq!(ok(user("eve", "secret"), "unknown user"), Some(bad));
        assert_eq!(ok(user("bob", ""), "no password"), Some(bad));
        let anon = publish(a, &["-V", v, "-t", &t, "-m", "anonymous", "-r"]);
        assert_eq!(anon, Some(anonymous));
        // Only alice's message got in; bob reads it.
        let args = [
            &user("bob", "b pw")[..],
            &["-V", v, "-t", &t, "-C", "1", "-W", "10"],
        ];
        let got = run("mosquitto_sub", a, &args.concat());
        assert_eq!(String::from_utf8_lossy(&got.stdout).trim(), "from alice");
    }
    drop(s);

    // allow_anonymous = true next to a password file: no user name is let in, a wrong
    // password still is not.
    let s = serve(dir.path(), &file, "allow_anonymous = true\n");
    assert_eq!(publish(&s.mqtt, &["-t", "t", "-m", "anonymous"]), Some(0));
    let wrong = [&user("alice", "nope")[..], &["-t", "t", "-m", "x"]].concat();
    assert_eq!(publish(&s.mqtt, &wrong), Some(4));
}

#[test]
fn another_user_cannot_take_over_a_client_id() {
    let dir = tempfile::tempdir().unwrap();
    let file = passwd_with(dir.path(), &[("alice", "secret"), ("bob", "b pw")]);
    let s = serve(dir.path(), &file, "");
    let a = &s.mqtt;
    let alice = user("alice", "secret");
    let bob = user("bob", "b pw");
    let persistent = ["-i", "dev1", "-c", "-q", "1", "-t", "t/own"];

    let live = Sub::start(a, &[&alice[..], &persistent, &["-C", "2"]].concat());
    live.wait_for("received SUBACK");
    // Bob resuming dev1, or starting it clean (which would discard alice's session), in
    // either version: not authorized, and alice stays connected.
    for v in ["mqttv311", "mqttv5"] {
        let resume = [
            &bob[..],
            &["-V", v, "-i", "dev1", "-c", "-t", "x", "-m", "m"],
        ];
        let clean = [&bob[..], &["-V", v, "-i", "dev1", "-t", "x", "-m", "m"]];
        let code = if v == "mqttv5" { 0x87 } else { 5 };
        assert_eq!(publish(a, &resume.concat()), Some(code), "{v}");
        assert_eq!(publish(a, &clean.concat()), Some(code), "{v}");
    }
    let to_alice = [&bob[..], &["-t", "t/own", "-m", "for alice"]].concat();
    assert_eq!(publish(a, &to_alice), Some(0));
    live.wait_for("for alice");
    assert_eq!(
        live.count("received CONNACK"),
        1,
        "alice was not disconnected"
    );
    drop(live);

    // Offline: bob cannot discard the session, which keeps what is published meanwhile.
    let clean = [&bob[..], &["-i", "dev1", "-t", "x", "-m", "m"]].concat();
    assert_eq!(publish(a, &clean), Some(5));
    let away = [&bob[..], &["-t", "t/own", "-m", "while away"]].concat();
    assert_eq!(publish(a, &away), Some(0));
    let back = [&alice[..], &persistent, &["-C", "1", "-W", "10"]].concat();
    let got = run("mosquitto_sub", a, &back);
    assert_eq!(String::from_utf8_lossy(&got.stdout).trim(), "while away");

    // The journal keeps whose the session is across a restart.
    let mut s = s;
    assert!(s.terminate(Duration::from_secs(10)).is_some());
    let s = serve(dir.path(), &file, "");
    assert_eq!(publish(&s.mqtt, &clean), Some(5));
    let away = [&bob[..], &["-t", "t/own", "-m", "after restart"]].concat();
    assert_eq!(publish(&s.mqtt, &away), Some(0));
    let got = run("mosquitto_sub", &s.mqtt, &back);
    assert_eq!(String::from_utf8_lossy(&got.stdout).trim(), "after restart");
}

#[test]
fn sighup_reads_the_password_file_again_and_keeps_connections() {
    let dir = tempfile::tempdir().unwrap();
    let file = passwd_with(dir.path(), &[("alice", "secret")]);
    let s = serve(dir.path(), &file, "");
    let a = &s.mqtt;
    let live = Sub::start(
        a,
        &[&user("alice", "secret")[..], &["-t", "t/hup"]].concat(),
    );
    live.wait_for("received SUBACK");
    let carol = [
        &user("carol", "c pw")[..],
        &["-t", "t/hup", "-m", "from carol"],
    ]
    .concat();
    assert_eq!(publish(a, &carol), Some(4), "carol is not a user yet");

    mosquitto_passwd(&file, &[("carol", "c pw")]); // -c: alice is gone
    let hup = || {
        // SAFETY: kill(2) on our own child's pid, which it keeps until reaped.
        assert_eq!(unsafe { libc::kill(s.child.id() as i32, libc::SIGHUP) }, 0);
    };
    hup();
    let deadline = Instant::now() + Duration::from_secs(10);
    while publish(a, &carol) != Some(0) {
        assert!(Instant::now() < deadline, "carol is never let in");
        std::thread::sleep(Duration::from_millis(100));
    }
    let alice = [&user("alice", "secret")[..], &["-t", "t/hup", "-m", "x"]].concat();
    assert_eq!(publish(a, &alice), Some(4), "alice was removed");
    // Alice's connection, admitted before, stays and gets carol's messages.
    live.wait_for("from carol");
    assert_eq!(live.count("received CONNACK"), 1);

    // A file that cannot be read leaves the users as they were.
    std::fs::write(&file, "carol\n").unwrap();
    hup();
    let deadline = Instant::now() + Duration::from_secs(10);
    let said = |t: &str| s.log.lock().unwrap().iter().any(|l| l.contains(t));
    while !said("not reloaded") {
        assert!(Instant::now() < deadline, "no error logged");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(publish(a, &carol), Some(0));
}

#[test]
fn a_certificate_cn_is_the_user_and_owns_its_client_id() {
    let dir = tempfile::tempdir().unwrap();
    let p = pki::Pki::new(
        &dir.path().join("ec"),
        pki::Kind::Ec,
        "fogline EC CA",
        "sensor-7",
    );
    let file = passwd_with(dir.path(), &[("alice", "secret")]);
    let tls = format!(
        "[mqtt]\ntls_listen = [\"127.0.0.1:0\"]\n[mqtt.tls]\ncafile = {:?}\ncertfile = {:?}\n\
         keyfile = {:?}\nrequire_certificate = true\nuse_identity_as_username = true\n",
        p.ca, p.server_cert, p.server_key
    );
    let s = serve(dir.path(), &file, &tls);
    let deadline = Instant::now() + Duration::from_secs(10);
    let tls_addr = loop {
        let found = s.log.lock().unwrap().iter().find_map(|l| {
            let rest = l.strip_prefix("  MQTT (TLS)")?;
            Some(rest.trim().to_string())
        });
        if let Some(a) = found {
            break a;
        }
        assert!(Instant::now() < deadline, "no TLS listener in the banner");
        std::thread::sleep(Duration::from_millis(20));
    };
    let cert = [
        "--cafile",
        p.ca.to_str().unwrap(),
        "--cert",
        p.client_cert.to_str().unwrap(),
        "--key",
        p.client_key.to_str().unwrap(),
    ];
    // No user name and no password, though anonymous clients are not allowed: the
    // certificate says who it is. It starts a persistent session as sensor-7.
    let session = [
        &cert[..],
        &["-i", "dev7", "-c", "-q", "1", "-t", "t/7", "-E"],
    ]
    .concat();
    let made = run("mosquitto_sub", &tls_addr, &session);
    assert!(made.status.success(), "{made:?}");
    // Alice, with the right password on the plain listener, may not have it.
    let take = [
        &user("alice", "secret")[..],
        &["-i", "dev7", "-c", "-t", "x", "-m", "m"],
    ];
    assert_eq!(publish(&s.mqtt, &take.concat()), Some(5));
    let own = [
        &user("alice", "secret")[..],
        &["-i", "alice1", "-t", "x", "-m", "m"],
    ];
    assert_eq!(publish(&s.mqtt, &own.concat()), Some(0));
    let again = [&cert[..], &["-i", "dev7", "-c", "-t", "x", "-m", "m"]].concat();
    assert_eq!(
        publish(&tls_addr, &again),
        Some(0),
        "sensor-7 resumes its own"
    );
}
