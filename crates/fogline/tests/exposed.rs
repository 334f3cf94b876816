//! A listener other machines can reach is warned about when it is bound. The server runs in
//! its own network namespace (`unshare -n`, which needs root, as CI has) so that binding
//! 0.0.0.0 opens nothing on this machine's network.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn serve_warnings(listen: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new("unshare")
        .args([
            "-n",
            env!("CARGO_BIN_EXE_fogline"),
            "serve",
            "--listen",
            listen,
        ])
        .args(["--mqtt", "127.0.0.1:0", "--storage", "mmap", "--data-dir"])
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
