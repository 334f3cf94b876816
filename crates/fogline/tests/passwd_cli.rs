//! `fogline passwd` as a user runs it: mosquitto_passwd's flags, the password from `-b`,
//! from a pipe, exit codes, and a file left as it was on every failure.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use fogline_auth::passwd::PasswordFile;

/// Runs `fogline passwd ARGS` with `stdin` piped in.
fn passwd(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fogline"))
        .arg("passwd")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The command failed with `code`, said `message`, and left `file` as `before`.
fn fails(out: &Output, code: i32, message: &str, file: &Path, before: &[u8]) {
    assert_eq!(out.status.code(), Some(code), "{}", stderr(out));
    assert!(stderr(out).contains(message), "{}", stderr(out));
    assert_eq!(std::fs::read(file).unwrap(), before);
}

#[test]
fn adds_changes_and_deletes_users() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("passwd");
    let p = path.to_str().unwrap();

    let out = passwd(&["-c", "-b", p, "alice", "secret"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("alice: added to"), "{}", stderr(&out));
    // mosquitto_passwd's order, and -b written before the password.
    assert!(passwd(&["-b", p, "bob", "b pw"], "").status.success());
    assert!(passwd(&[p, "carol", "-b", "c:pw"], "").status.success());
    // From a pipe: the first line, without its ending.
    let out = passwd(&[p, "alice", "--iterations", "1000"], "new\r\nignored\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("alice: password changed in"));

    let f = PasswordFile::load(&path).unwrap();
    assert_eq!(f.users().collect::<Vec<_>>(), ["alice", "bob", "carol"]);
    assert!(f.verify("alice", b"new") && !f.verify("alice", b"secret"));
    assert!(f.verify("bob", b"b pw") && f.verify("carol", b"c:pw"));
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .starts_with("alice:$7$1000$"));

    let out = passwd(&["-D", p, "bob"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let f = PasswordFile::load(&path).unwrap();
    assert_eq!(f.users().collect::<Vec<_>>(), ["alice", "carol"]);
    assert!(f.verify("alice", b"new"));

    // -c starts afresh, as mosquitto_passwd's does.
    assert!(passwd(&["-c", "-b", p, "dave", "d"], "").status.success());
    let f = PasswordFile::load(&path).unwrap();
    assert_eq!(f.users().collect::<Vec<_>>(), ["dave"]);
}

#[test]
fn failures_leave_the_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("passwd");
    let p = path.to_str().unwrap();

    let missing = dir.path().join("missing");
    let out = passwd(&["-b", missing.to_str().unwrap(), "alice", "x"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no such file (-c creates one)"));
    assert!(!missing.exists());

    assert!(passwd(&["-c", "-b", p, "alice", "secret"], "")
        .status
        .success());
    let before = std::fs::read(&path).unwrap();
    let b = before.as_slice();
    fails(
        &passwd(&["-D", p, "bob"], ""),
        1,
        "user bob is not in",
        &path,
        b,
    );
    fails(&passwd(&[p, "bob"], "\n"), 1, "empty password", &path, b);
    fails(
        &passwd(&["-b", p, "a:b", "x"], ""),
        1,
        "contains `:`",
        &path,
        b,
    );
    fails(&passwd(&["-b", p, " bob", "x"], ""), 1, "blank", &path, b);
    let out = passwd(&["--iterations", "0", "-b", p, "bob", "x"], "");
    fails(&out, 1, "0 iterations", &path, b);
    // Usage errors: clap's code 2.
    fails(
        &passwd(&["-c", "-D", p, "alice"], ""),
        2,
        "cannot be used",
        &path,
        b,
    );
    fails(
        &passwd(&["-D", "-b", p, "alice", "x"], ""),
        2,
        "cannot be used",
        &path,
        b,
    );
    fails(&passwd(&["-b", p, "bob"], ""), 2, "PASSWORD", &path, b);
    fails(&passwd(&[p, "bob", "pw"], ""), 2, "-b", &path, b);

    // A file with a bad line is not rewritten (its other users would be lost).
    let mut bad = before.clone();
    bad.extend_from_slice(b"bob:plaintext\n");
    std::fs::write(&path, &bad).unwrap();
    let out = passwd(&["-b", p, "carol", "c"], "");
    fails(&out, 1, "line 2: no password hash", &path, &bad);
}

const PW: &str = "Password: ";
const AGAIN: &str = "Reenter password: ";

/// On a terminal: asked twice, not echoed; passwords that differ change nothing.
#[test]
fn asks_twice_on_a_terminal_without_echo() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("passwd");
    let p = path.to_str().unwrap();
    let (code, shown) = on_terminal(&["-c", p, "alice"], &[(PW, "s3cret"), (AGAIN, "s3cret")]);
    assert_eq!(code, 0, "{shown}");
    assert!(!shown.contains("s3cret"), "echoed: {shown}");
    assert!(PasswordFile::load(&path)
        .unwrap()
        .verify("alice", b"s3cret"));

    let before = std::fs::read(&path).unwrap();
    let (code, shown) = on_terminal(&[p, "alice"], &[(PW, "one"), (AGAIN, "two")]);
    assert_eq!(code, 1, "{shown}");
    assert!(shown.contains("the passwords do not match"), "{shown}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// Runs `fogline passwd ARGS` on a new pseudo-terminal (its controlling terminal, as a
/// user's shell gives it), answering each prompt of `answers` once it is shown and the
/// terminal has stopped echoing; returns its exit code and everything it showed.
fn on_terminal(args: &[&str], answers: &[(&str, &str)]) -> (i32, String) {
    use std::io::Read;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};

    // SAFETY: openpty fills in two open descriptors that nothing else owns.
    let (mut master, slave) = unsafe {
        let (mut m, mut s) = (0, 0);
        let (name, term, size) = (std::ptr::null_mut(), std::ptr::null(), std::ptr::null());
        let rc = libc::openpty(&mut m, &mut s, name, term, size);
        assert_eq!(rc, 0, "openpty");
        (std::fs::File::from_raw_fd(m), OwnedFd::from_raw_fd(s))
    };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fogline"));
    cmd.arg("passwd")
        .args(args)
        .stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave.try_clone().unwrap());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    // The master reads EIO at the end only once no descriptor of the slave is left here.
    drop(cmd);
    drop(slave);
    let mut shown = Vec::new();
    let mut buf = [0; 4096];
    // Reads what the program shows until `want` is there, or it is gone (EIO).
    let mut read_until = |master: &mut std::fs::File, want: &str| {
        while !String::from_utf8_lossy(&shown).contains(want) {
            // A hung program fails the test instead of hanging it (closing the master then
            // hangs the program up).
            let mut fd = libc::pollfd {
                fd: master.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd, alive for the call.
            let ready = unsafe { libc::poll(&mut fd, 1, 30_000) };
            assert!(
                ready != 0,
                "nothing shown for 30 s: {}",
                String::from_utf8_lossy(&shown)
            );
            match master.read(&mut buf) {
                Ok(n) if n > 0 => shown.extend_from_slice(&buf[..n]),
                _ => return String::from_utf8_lossy(&shown).into_owned(),
            }
        }
        String::from_utf8_lossy(&shown).into_owned()
    };
    for (prompt, answer) in answers {
        let so_far = read_until(&mut master, prompt);
        assert!(so_far.contains(prompt), "no {prompt:?}: {so_far}");
        let deadline = Instant::now() + Duration::from_secs(30);
        // SAFETY: a termios filled in by tcgetattr on an open descriptor.
        while unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            libc::tcgetattr(master.as_raw_fd(), &mut t) == 0 && t.c_lflag & libc::ECHO != 0
        } {
            assert!(Instant::now() < deadline, "echo stayed on after {prompt:?}");
            std::thread::sleep(Duration::from_millis(5));
        }
        master.write_all(format!("{answer}\n").as_bytes()).unwrap();
    }
    let shown = read_until(&mut master, "\u{0}never shown");
    let status = child.wait().unwrap();
    (status.code().unwrap_or(-1), shown)
}
