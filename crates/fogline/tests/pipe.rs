//! A tool piped into a reader that stops early (`fogline sub 'site/#' | head`) ends quietly,
//! as Unix tools do, without a panic on stderr.

mod support;

use std::io::Read;
use std::process::{Command, Stdio};

#[test]
fn a_closed_pipe_ends_a_tool_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let node = support::serve([std::ffi::OsStr::new("--data-dir"), dir.path().as_os_str()]);
    let mut sub = Command::new(env!("CARGO_BIN_EXE_fogline"))
        .args(["sub", "pipe/#", "--server", &node.native])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fogline sub runs");
    std::thread::sleep(std::time::Duration::from_millis(300));
    // Far more than a pipe holds, so the subscriber writes after the reader has gone.
    let published = Command::new(env!("CARGO_BIN_EXE_fogline"))
        .args([
            "pub", "pipe/t", "--count", "50000", "--size", "64", "--server",
        ])
        .arg(&node.native)
        .output()
        .expect("fogline pub runs");
    assert!(published.status.success());
    let mut out = sub.stdout.take().unwrap();
    let mut first = [0u8; 16];
    out.read_exact(&mut first).unwrap();
    drop(out);
    let status = sub.wait().unwrap();
    let mut err = String::new();
    sub.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}: {err}");
}
