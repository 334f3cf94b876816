//! TLS on the real `fogline serve` with real clients: Mosquitto's command-line clients
//! against the MQTT TLS listener (`--cafile`, `--cert/--key`), curl against the admin API
//! over HTTPS, with certificates made by `openssl` (RSA as Mosquitto users have them, and
//! EC); fogline's own admin commands over HTTPS (`--admin https://… --admin-cafile`);
//! refusals of a wrong CA and of a missing client certificate; SIGHUP reload.

#[path = "../../fogline-net/tests/pki/mod.rs"]
mod pki;
mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use pki::{Kind, Pki};

/// `[mqtt]` and `[admin]` TLS listeners on ephemeral ports with the certificates of `p`.
fn config(dir: &Path, p: &Pki, require: bool) -> std::path::PathBuf {
    let tls = format!(
        "cafile = {:?}\ncertfile = {:?}\nkeyfile = {:?}\nrequire_certificate = {require}\n\
         use_identity_as_username = {require}\n",
        p.ca, p.server_cert, p.server_key
    );
    let text = format!(
        "[mqtt]\ntls_listen = [\"127.0.0.1:0\"]\n[mqtt.tls]\n{tls}\n\
         [admin]\ntls_listen = [\"127.0.0.1:0\"]\n[admin.tls]\n{tls}"
    );
    let path = dir.join("fogline.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn serve(dir: &Path, config: &Path) -> support::Served {
    let data = dir.join("data");
    support::serve([
        "--config".as_ref(),
        config.as_os_str(),
        "--data-dir".as_ref(),
        data.as_os_str(),
    ])
}

/// The address the banner gives for `label` (`MQTT (TLS)`, `admin API (HTTPS)`).
fn banner_address(s: &support::Served, label: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = s.log.lock().unwrap().iter().find_map(|l| {
            let rest = l.strip_prefix("  ")?.strip_prefix(label)?;
            Some(
                rest.trim()
                    .trim_start_matches("https://")
                    .trim_end_matches('/')
                    .to_string(),
            )
        });
        if let Some(a) = found {
            return a;
        }
        assert!(
            Instant::now() < deadline,
            "no {label} listener in the banner"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn mosquitto(cmd: &str, addr: &str, args: &[&str]) -> Output {
    let (host, port) = addr.rsplit_once(':').unwrap();
    Command::new(cmd)
        .args(["-h", host, "-p", port])
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("{cmd} must be installed (Debian package mosquitto-clients): {e}")
        })
}

fn tls_args<'a>(ca: &'a Path, cert: Option<&'a Pki>) -> Vec<&'a str> {
    let mut args = vec!["--cafile", ca.to_str().unwrap()];
    if let Some(p) = cert {
        args.extend([
            "--cert",
            p.client_cert.to_str().unwrap(),
            "--key",
            p.client_key.to_str().unwrap(),
        ]);
    }
    args
}

/// Publishes `message` retained to `topic`; whether mosquitto_pub succeeded.
fn publish(addr: &str, tls: &[&str], topic: &str, message: &str) -> Output {
    let mut args = tls.to_vec();
    args.extend(["-t", topic, "-m", message, "-r", "-q", "1"]);
    mosquitto("mosquitto_pub", addr, &args)
}

/// The retained message of `topic`, read with mosquitto_sub.
fn read_retained(addr: &str, tls: &[&str], topic: &str) -> Output {
    let mut args = tls.to_vec();
    args.extend(["-t", topic, "-C", "1", "-W", "10"]);
    mosquitto("mosquitto_sub", addr, &args)
}

/// `fogline rule ls` against the admin API at `url` with `args`.
fn rule_ls(url: &str, args: &[&Path]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fogline"));
    cmd.args(["rule", "ls", "--admin", url]);
    for (flag, path) in ["--admin-cafile", "--admin-cert", "--admin-key"]
        .iter()
        .zip(args)
    {
        cmd.arg(flag).arg(path);
    }
    cmd.env_remove("FOGLINE_ADMIN").output().unwrap()
}

/// The HTTPS admin address as `https://localhost:PORT` (the test certificate's name).
fn admin_url(s: &support::Served) -> String {
    let https = banner_address(s, "admin API (HTTPS)");
    format!("https://localhost:{}", https.rsplit_once(':').unwrap().1)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).trim().to_string()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn mosquitto_clients_with_rsa_certificates_and_a_wrong_ca() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(
        &dir.path().join("rsa"),
        Kind::Rsa,
        "fogline RSA CA",
        "unused",
    );
    let other = Pki::new(&dir.path().join("other"), Kind::Ec, "Another CA", "unused");
    let cfg = config(dir.path(), &p, false);
    let s = serve(dir.path(), &cfg);
    let addr = banner_address(&s, "MQTT (TLS)");

    let ok = publish(&addr, &tls_args(&p.ca, None), "t/rsa", "over tls");
    assert!(ok.status.success(), "{ok:?}");
    let got = read_retained(&addr, &tls_args(&p.ca, None), "t/rsa");
    assert_eq!(stdout(&got), "over tls", "{got:?}");

    // A client that trusts another CA refuses the server; one that speaks plain MQTT to
    // the TLS port gets nowhere; the server serves the next client all the same.
    let wrong = publish(&addr, &tls_args(&other.ca, None), "t/rsa", "nope");
    assert!(!wrong.status.success(), "{wrong:?}");
    let plain = publish(&addr, &[], "t/rsa", "plain");
    assert!(!plain.status.success(), "{plain:?}");
    let got = read_retained(&addr, &tls_args(&p.ca, None), "t/rsa");
    assert_eq!(stdout(&got), "over tls", "{got:?}");

    // The admin API over HTTPS.
    let https = banner_address(&s, "admin API (HTTPS)");
    let curl = Command::new("curl")
        .args(["-sS", "--fail", "--cacert", p.ca.to_str().unwrap()])
        .arg(format!(
            "https://localhost:{}/metrics",
            https.rsplit_once(':').unwrap().1
        ))
        .args([
            "--resolve",
            &format!("localhost:{}:127.0.0.1", https.rsplit_once(':').unwrap().1),
        ])
        .output()
        .expect("curl is installed");
    assert!(curl.status.success(), "{curl:?}");
    assert!(stdout(&curl).contains("fogline_"), "{}", stdout(&curl));

    // fogline's own admin commands over HTTPS: the right CA; another CA; no CA.
    let url = admin_url(&s);
    let ok = rule_ls(&url, &[&p.ca]);
    assert!(ok.status.success(), "{ok:?}");
    assert!(stdout(&ok).starts_with("id"), "{ok:?}");
    let wrong = rule_ls(&url, &[&other.ca]);
    assert!(!wrong.status.success(), "{wrong:?}");
    assert!(
        stderr(&wrong).contains("not signed by a CA of the CA file"),
        "{wrong:?}"
    );
    let none = rule_ls(&url, &[]);
    assert!(!none.status.success(), "{none:?}");
    assert!(stderr(&none).contains("--admin-cafile"), "{none:?}");
}

#[test]
fn a_required_client_certificate_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(
        &dir.path().join("ec"),
        Kind::Ec,
        "fogline EC CA",
        "sensor-7",
    );
    let other = Pki::new(
        &dir.path().join("other"),
        Kind::Ec,
        "Another CA",
        "intruder",
    );
    let cfg = config(dir.path(), &p, true);
    let s = serve(dir.path(), &cfg);
    let addr = banner_address(&s, "MQTT (TLS)");

    let with_cert = tls_args(&p.ca, Some(&p));
    let ok = publish(&addr, &with_cert, "t/ec", "with a certificate");
    assert!(ok.status.success(), "{ok:?}");

    let none = publish(&addr, &tls_args(&p.ca, None), "t/ec", "without");
    assert!(!none.status.success(), "{none:?}");
    let foreign = publish(&addr, &tls_args(&p.ca, Some(&other)), "t/ec", "foreign");
    assert!(!foreign.status.success(), "{foreign:?}");

    let got = read_retained(&addr, &with_cert, "t/ec");
    assert_eq!(stdout(&got), "with a certificate", "{got:?}");

    // The admin listener requires a certificate too: fogline's commands present one.
    let url = admin_url(&s);
    let ok = rule_ls(&url, &[&p.ca, &p.client_cert, &p.client_key]);
    assert!(ok.status.success(), "{ok:?}");
    let none = rule_ls(&url, &[&p.ca]);
    assert!(!none.status.success(), "{none:?}");
    assert!(
        stderr(&none).contains("requires a client certificate"),
        "{none:?}"
    );
}

#[test]
fn sighup_serves_a_new_certificate_to_new_connections() {
    let dir = tempfile::tempdir().unwrap();
    let old = Pki::new(&dir.path().join("old"), Kind::Ec, "Old CA", "unused");
    let new = Pki::new(&dir.path().join("new"), Kind::Rsa, "New CA", "unused");
    let live = dir.path().join("live");
    std::fs::create_dir_all(&live).unwrap();
    let install = |from: &Pki| {
        std::fs::copy(&from.ca, live.join("ca.crt")).unwrap();
        std::fs::copy(&from.server_cert, live.join("server.crt")).unwrap();
        std::fs::copy(&from.server_key, live.join("server.key")).unwrap();
    };
    install(&old);
    let live_pki = Pki {
        dir: live.clone(),
        ca: live.join("ca.crt"),
        server_cert: live.join("server.crt"),
        server_key: live.join("server.key"),
        client_cert: live.join("unused"),
        client_key: live.join("unused"),
    };
    let cfg = config(dir.path(), &live_pki, false);
    let s = serve(dir.path(), &cfg);
    let addr = banner_address(&s, "MQTT (TLS)");
    let ok = publish(&addr, &tls_args(&old.ca, None), "t/hup", "before");
    assert!(ok.status.success(), "{ok:?}");

    install(&new);
    // SAFETY: kill(2) on our own child's pid, which it keeps until reaped.
    assert_eq!(unsafe { libc::kill(s.child.id() as i32, libc::SIGHUP) }, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let o = publish(&addr, &tls_args(&new.ca, None), "t/hup", "after");
        if o.status.success() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the new certificate is not served: {o:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let stale = publish(&addr, &tls_args(&old.ca, None), "t/hup", "stale");
    assert!(!stale.status.success(), "{stale:?}");
    let got = read_retained(&addr, &tls_args(&new.ca, None), "t/hup");
    assert_eq!(stdout(&got), "after", "{got:?}");
}
