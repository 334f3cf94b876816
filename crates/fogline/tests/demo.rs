//! The README's first command: `fogline demo` shows records flowing end to end.

use std::process::Command;

#[test]
fn demo_delivers_and_stores_every_record() {
    let out = Command::new(env!("CARGO_BIN_EXE_fogline"))
        .args(["demo", "--count", "20000"])
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("fogline demo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("received 20000/20000 records, in order per topic"),
        "{stdout}"
    );
    assert!(stdout.contains("replayed 20000 stored records"), "{stdout}");
    assert!(
        stdout.contains("the rule counted 20000/20000 records"),
        "{stdout}"
    );
    assert!(
        stdout.contains("robot0 5000, robot1 5000, robot2 5000, robot3 5000"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ok: every record was delivered live, counted by the rule and stored"),
        "{stdout}"
    );
}
