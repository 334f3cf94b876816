//! The command-line clients over TLS against a real `fogline serve` with a native TLS
//! listener, certificates made by `openssl`: `fogline pub` and `sub` with `--cafile`, a
//! stream command through the same flags, `--cert/--key` where the server requires a
//! certificate, and a one-line reason for each refusal. And `-u`/`-P` (or the environment)
//! in Hello, against a one-connection fake that refuses them.

#[path = "../../fogline-net/tests/pki/mod.rs"]
mod pki;
mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use pki::{Kind, Pki};

/// `fogline serve` with a `[native]` TLS listener on an ephemeral port, and its address.
fn serve_tls(dir: &Path, p: &Pki, require_certificate: bool) -> (support::Served, String) {
    let text = format!(
        "[native]\ntls_listen = [\"127.0.0.1:0\"]\n[native.tls]\ncafile = {:?}\n\
         certfile = {:?}\nkeyfile = {:?}\nrequire_certificate = {require_certificate}\n",
        p.ca, p.server_cert, p.server_key
    );
    let config = dir.join("fogline.toml");
    std::fs::write(&config, text).unwrap();
    let data = dir.join("data");
    let s = support::serve([
        "--config".as_ref(),
        config.as_os_str(),
        "--data-dir".as_ref(),
        data.as_os_str(),
    ]);
    let deadline = Instant::now() + Duration::from_secs(10);
    let addr = loop {
        let found = s.log.lock().unwrap().iter().find_map(|l| {
            let rest = l.strip_prefix("  native (TLS)")?;
            Some(rest.trim().to_string())
        });
        if let Some(a) = found {
            break a;
        }
        assert!(
            Instant::now() < deadline,
            "no native TLS listener in the banner"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    (s, addr)
}

fn fogline(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fogline"));
    c.args(args)
        .env_remove("FOGLINE_SERVER")
        .env_remove("FOGLINE_USERNAME")
        .env_remove("FOGLINE_PASSWORD")
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE");
    c
}

fn run(args: &[&str]) -> Output {
    fogline(args).output().expect("fogline runs")
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The command failed, its error one line that contains `why` (`pub` prints its summary
/// before it).
fn refused(o: &Output, why: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "it succeeded: {o:?}");
    let error = err.trim().lines().skip_while(|l| !l.starts_with("Error: "));
    assert_eq!(error.clone().count(), 1, "one line: {err}");
    assert!(error.last().unwrap().contains(why), "{why:?} not in: {err}");
}

#[test]
fn pub_and_sub_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(
        &dir.path().join("pki"),
        Kind::Ec,
        "fogline CLI CA",
        "unused",
    );
    let (_s, addr) = serve_tls(dir.path(), &p, false);
    let tls = ["-s", &addr, "--cafile", path(&p.ca)];

    let sub = fogline(&[&["sub"][..], &tls, &["-n", "1", "t/#"]].concat())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Publish until the subscriber, which may not be subscribed yet, has its record.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut sub = Some(sub);
    while let Some(mut child) = sub.take() {
        let o = run(&[&["pub"][..], &tls, &["t/1", "over tls"]].concat());
        assert!(o.status.success(), "{o:?}");
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{out:?}");
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("t/1 over tls"), "{text}");
        } else {
            assert!(Instant::now() < deadline, "sub got nothing");
            std::thread::sleep(Duration::from_millis(200));
            sub = Some(child);
        }
    }

    // The stream commands take the same flags; the name may be given for an IP address.
    let o = run(&["stream", "ls", "-s", &addr, "--cafile", path(&p.ca)]);
    assert!(o.status.success(), "{o:?}");
    let named = ["--tls-server-name", "localhost", "t/2", "named"];
    let o = run(&[&["pub"][..], &tls, &named].concat());
    assert!(o.status.success(), "{o:?}");
}

#[test]
fn refusals_are_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(
        &dir.path().join("pki"),
        Kind::Rsa,
        "fogline CLI CA",
        "unused",
    );
    let other = Pki::new(&dir.path().join("other"), Kind::Ec, "Another CA", "unused");
    let (_s, addr) = serve_tls(dir.path(), &p, false);

    refused(&run(&["pub", "-s", &addr, "--tls", "t", "m"]), "--cafile");
    refused(
        &run(&["pub", "-s", &addr, "--cafile", path(&other.ca), "t", "m"]),
        "not signed by a CA of the CA file",
    );
    let not_pem = dir.path().join("not-a-ca.crt");
    std::fs::write(&not_pem, "hello").unwrap();
    refused(
        &run(&["pub", "-s", &addr, "--cafile", path(&not_pem), "t", "m"]),
        "not-a-ca.crt",
    );
    refused(
        &run(&[
            "sub",
            "-s",
            &addr,
            "--cafile",
            path(&p.ca),
            "--tls-server-name",
            "elsewhere.example",
            "t",
        ]),
        "not valid for the server name",
    );
    // Plain protocol to the TLS port: the server's alert is recognised.
    refused(&run(&["pub", "-s", &addr, "t", "m"]), "TLS listener");
}

#[test]
fn a_required_client_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(
        &dir.path().join("pki"),
        Kind::Ec,
        "fogline CLI CA",
        "sensor-7",
    );
    let other = Pki::new(
        &dir.path().join("other"),
        Kind::Ec,
        "Another CA",
        "intruder",
    );
    let (_s, addr) = serve_tls(dir.path(), &p, true);
    let ca = path(&p.ca);

    let ok = run(&[
        "pub",
        "-s",
        &addr,
        "--cafile",
        ca,
        "--cert",
        path(&p.client_cert),
        "--key",
        path(&p.client_key),
        "t/c",
        "with a certificate",
    ]);
    assert!(ok.status.success(), "{ok:?}");

    let none = run(&["pub", "-s", &addr, "--cafile", ca, "t/c", "without"]);
    refused(&none, "client certificate");
    let foreign = run(&[
        "pub",
        "-s",
        &addr,
        "--cafile",
        ca,
        "--cert",
        path(&other.client_cert),
        "--key",
        path(&other.client_key),
        "t/c",
        "foreign",
    ]);
    refused(&foreign, "client certificate");
    let half = run(&[
        "pub",
        "-s",
        &addr,
        "--cafile",
        ca,
        "--cert",
        path(&p.client_cert),
        "t",
    ]);
    assert!(!half.status.success(), "{half:?}");
    assert!(
        String::from_utf8_lossy(&half.stderr).contains("--key"),
        "{half:?}"
    );
}

/// Accepts one connection, reads its Hello and answers `BadCredentials`; the Hello's user
/// name and password.
fn refusing_fake() -> (String, std::thread::JoinHandle<Option<(String, String)>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let fake = std::thread::spawn(move || {
        let (mut sock, _) = listener.accept().unwrap();
        let mut buf = bytes::BytesMut::new();
        let hello = loop {
            if let Some(frame) = fogline_wire::decode(&mut buf, 1 << 20).unwrap() {
                break frame;
            }
            let mut chunk = [0u8; 1024];
            let n = sock.read(&mut chunk).unwrap();
            assert!(n > 0, "no Hello");
            buf.extend_from_slice(&chunk[..n]);
        };
        let fogline_wire::Frame::Hello { credentials, .. } = hello else {
            panic!("not a Hello: {hello:?}");
        };
        let mut out = bytes::BytesMut::new();
        let refusal = fogline_wire::Frame::Error {
            request_id: 0,
            code: fogline_wire::ErrorCode::BadCredentials,
            message: "bad user name or password".into(),
        };
        fogline_wire::encode(&refusal, &mut out).unwrap();
        sock.write_all(&out).unwrap();
        credentials.map(|c| (c.username.to_string(), c.password.to_string()))
    });
    (addr, fake)
}

#[test]
fn credentials_go_in_hello_and_a_refused_login_is_one_line() {
    let (addr, fake) = refusing_fake();
    let o = run(&["pub", "-s", &addr, "-u", "ana", "-P", "s3cret", "t", "m"]);
    refused(&o, "BadCredentials");
    assert_eq!(fake.join().unwrap(), Some(("ana".into(), "s3cret".into())));

    let (addr, fake) = refusing_fake();
    let o = fogline(&["stream", "ls", "-s", &addr])
        .env("FOGLINE_USERNAME", "bo")
        .env("FOGLINE_PASSWORD", "from-env")
        .output()
        .unwrap();
    refused(&o, "bad user name or password");
    assert_eq!(fake.join().unwrap(), Some(("bo".into(), "from-env".into())));
}

/// The CLI logs in to a real node with `[auth]`: a user of the password file publishes
/// over TLS with `-u`/`-P`; a wrong password, or none, is one `BadCredentials` line; the
/// ACL's refusal is one `NotAuthorized` line.
#[test]
fn the_cli_logs_in_to_a_node_with_users_and_an_acl() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(
        &dir.path().join("pki"),
        Kind::Ec,
        "fogline CLI CA",
        "unused",
    );
    let mut users = fogline_auth::passwd::PasswordFile::new();
    users.set("ops", b"ops-pw", 1000).unwrap();
    let passwd = dir.path().join("passwd");
    users.save(&passwd).unwrap();
    let acl = dir.path().join("acl");
    std::fs::write(&acl, "user ops\ntopic readwrite t/#\n").unwrap();
    let text = format!(
        "[auth]\npassword_file = {passwd:?}\nacl_file = {acl:?}\n\
         [native]\ntls_listen = [\"127.0.0.1:0\"]\n[native.tls]\ncafile = {:?}\n\
         certfile = {:?}\nkeyfile = {:?}\n",
        p.ca, p.server_cert, p.server_key
    );
    let config = dir.path().join("fogline.toml");
    std::fs::write(&config, text).unwrap();
    let data = dir.path().join("data");
    let s = support::serve([
        "--config".as_ref(),
        config.as_os_str(),
        "--data-dir".as_ref(),
        data.as_os_str(),
    ]);
    let deadline = Instant::now() + Duration::from_secs(10);
    let addr = loop {
        let found = s
            .log
            .lock()
            .unwrap()
            .iter()
            .find_map(|l| Some(l.strip_prefix("  native (TLS)")?.trim().to_string()));
        if let Some(a) = found {
            break a;
        }
        assert!(Instant::now() < deadline, "no native TLS listener");
        std::thread::sleep(Duration::from_millis(20));
    };
    let tls = ["-s", &addr, "--cafile", path(&p.ca)];
    let as_ops = [&tls[..], &["-u", "ops", "-P", "ops-pw"]].concat();
    let o = run(&[&["pub"][..], &as_ops, &["t/1", "hello", "--ack"]].concat());
    assert!(o.status.success(), "{o:?}");
    let wrong = [&tls[..], &["-u", "ops", "-P", "nope"]].concat();
    refused(
        &run(&[&["pub"][..], &wrong, &["t/1", "x"]].concat()),
        "BadCredentials",
    );
    refused(
        &run(&[&["pub"][..], &tls, &["t/1", "x"]].concat()),
        "BadCredentials",
    );
    refused(
        &run(&[&["pub"][..], &as_ops, &["other/1", "x", "--ack"]].concat()),
        "NotAuthorized",
    );
}
