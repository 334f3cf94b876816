//! A listener other machines can reach is warned about when it is bound (an MQTT one only
//! when it admits clients without a password). The server runs in
//! its own network namespace (`unshare -n`, which needs root, as CI has) so that binding
//! 0.0.0.0 opens nothing on this machine's network.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn serve_warnings(listen: &str) -> Vec<String> {
    serve_warnings_with(&["--listen", listen, "--mqtt", "127.0.0.1:0"])
}

fn serve_warnings_with(args: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new("unshare")
        .args(["-n", env!("CARGO_BIN_EXE_fogline"), "serve"])
        .args(args)
        .args(["--storage", "mmap", "--data-dir"])
        .arg(dir.path())
        .env("FOGLINE_LOG", "warn")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("unshare runs (the test needs root)");
    let mut warnings = Vec::new();
    // The banner's "serving" line comes after every listener is bound.
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.contains(") serving (storage ") {
            break;
        }
        if line.contains("WARN") {
            warnings.push(line);
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    warnings
}

#[test]
fn binding_a_non_loopback_address_warns_and_loopback_does_not() {
    let w = serve_warnings("0.0.0.0:0");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("accepts connections from other machines"),
        "{w:?}"
    );
    assert!(w[0].contains("0.0.0.0:"), "{w:?}");
    assert_eq!(serve_warnings("127.0.0.1:0"), Vec::<String>::new());
}

#[test]
fn listeners_are_warned_about_only_when_they_admit_anonymous_clients() {
    let dir = tempfile::tempdir().unwrap();
    let passwd = dir.path().join("passwd");
    std::fs::write(&passwd, "").unwrap();
    let with = |extra: &str| {
        let cfg = dir.path().join("fogline.toml");
        let text = format!("[auth]\npassword_file = {passwd:?}\n{extra}");
        std::fs::write(&cfg, text).unwrap();
        let c = cfg.to_str().unwrap().to_string();
        let args = [
            "--listen",
            "127.0.0.1:0",
            "--mqtt",
            "0.0.0.0:0",
            "--config",
            &c,
        ];
        serve_warnings_with(&args)
    };
    let open = serve_warnings_with(&["--listen", "127.0.0.1:0", "--mqtt", "0.0.0.0:0"]);
    assert_eq!(open.len(), 1, "{open:?}");
    assert!(open[0].contains("MQTT on 0.0.0.0:"), "{open:?}");
    assert!(open[0].contains("without a password"), "{open:?}");
    assert_eq!(with(""), Vec::<String>::new());
    let anonymous = with("allow_anonymous = true\n");
    assert_eq!(anonymous.len(), 1, "{anonymous:?}");
    assert!(anonymous[0].contains("MQTT on 0.0.0.0:"), "{anonymous:?}");
}
