//! The CLI's profile commands against a real server: `fogline pub --profile`, `fogline sub
//! --profile`, and `fogline announce ... -- CMD`, which runs CMD only while somebody is
//! interested.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fogline_client::{Client, ClientOptions, SubscribeOptions};

fn fogline() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fogline"))
}

/// `fogline pub --ack --profile PROFILE site/a MSG`, asserted to succeed.
fn publish(native: &str, profile: &str, msg: &str) {
    let st = fogline()
        .args(["pub", "-s", native, "--ack", "--profile", profile])
        .args(["site/a", msg])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
}

/// Waits until `f` holds, up to 20 s.
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_profile_gets_only_what_pub_profile_sends_matching() {
    let dir = tempfile::tempdir().unwrap();
    let server = support::serve(["--data-dir", dir.path().to_str().unwrap()]);
    let sub = fogline()
        .args(["sub", "-s", &server.native, "-n", "2", "--idle", "20s"])
        .args(["--profile", "sensor=li* alt=100..", "site/#"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The subscription is in place once the server counts an interest.
    let http = server.http.clone().unwrap();
    let mut waited = 0;
    loop {
        let subs = support::admin(&http, "GET", "/api/v1/subscriptions", None).await;
        if subs.to_string().contains("sensor=li*") {
            break;
        }
        waited += 1;
        assert!(waited < 400, "the subscription never showed: {subs}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (profile, msg) in [
        ("sensor=radar alt=200", "radar"),
        ("sensor=lidar alt=50", "low"),
        ("sensor=lidar alt=200", "first"),
        ("sensor=Lidar alt=200", "case"),
        ("sensor=lidar2 alt=300 urgent", "second"),
    ] {
        publish(&server.native, profile, msg);
    }
    let out = sub.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "site/a first\nsite/a second\n"
    );
    // Replay from the stream, filtered by profile on the client's side.
    let out = fogline()
        .args([
            "sub",
            "-s",
            &server.native,
            "--stream",
            "default",
            "--idle",
            "1s",
        ])
        .args(["--profile", "urgent", "#"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "site/a second\n");
    let bad = fogline()
        .args([
            "pub",
            "-s",
            &server.native,
            "--profile",
            "x=\"open",
            "t",
            "m",
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--profile"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn announce_runs_its_command_only_while_somebody_is_interested() {
    let dir = tempfile::tempdir().unwrap();
    let server = support::serve(["--data-dir", dir.path().to_str().unwrap()]);
    let marks = dir.path().join("marks");
    let script = format!(
        "echo start >> {m}; trap 'echo stop >> {m}; exit 0' TERM; while true; do sleep 0.05; done",
        m = marks.display()
    );
    let mut announcer = fogline()
        .args(["announce", "-s", &server.native, "-t", "site/nj/lidar"])
        .args(["-p", "type=drone sensor=lidar", "--", "sh", "-c", &script])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let read = || std::fs::read_to_string(&marks).unwrap_or_default();
    let http = server.http.clone().unwrap();
    eventually("the producer is registered", || {
        let rt = tokio::runtime::Handle::current();
        let v = tokio::task::block_in_place(|| {
            rt.block_on(support::admin(&http, "GET", "/api/v1/producers", None))
        });
        v.to_string().contains("site/nj/lidar")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(read(), "", "nobody is interested: the command must not run");

    let client = Client::connect(&server.native, ClientOptions::default())
        .await
        .unwrap();
    let opts = SubscribeOptions {
        interest: Some("sensor=lid*".into()),
        ..SubscribeOptions::default()
    };
    let sub = client.subscribe("site/#", opts.clone()).await.unwrap();
    eventually("started", || read() == "start\n").await;
    drop(sub);
    eventually("stopped", || read() == "start\nstop\n").await;
    let sub = client
        .subscribe("site/+/lidar", SubscribeOptions::default())
        .await
        .unwrap();
    eventually("started again", || read() == "start\nstop\nstart\n").await;
    drop(sub);
    eventually("stopped again", || read() == "start\nstop\nstart\nstop\n").await;
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(announcer.id() as libc::pid_t, libc::SIGINT);
    }
    assert!(announcer.wait().unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_finds_stored_records_and_deletes_them() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("fogline.toml");
    std::fs::write(&config, "[store]\nstreams = [\"default\"]\n").unwrap();
    let server = support::serve([
        "--config",
        config.to_str().unwrap(),
        "--data-dir",
        dir.path().join("data").to_str().unwrap(),
    ]);
    let http = server.http.clone().unwrap();
    for (profile, msg) in [
        ("sensor=lidar alt=120", "a"),
        ("sensor=radar alt=120", "b"),
        ("sensor=lidar2 alt=300", "c"),
    ] {
        publish(&server.native, profile, msg);
    }
    let query = |args: &[&str]| {
        let out = fogline()
            .args(["query", "--admin", &http])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let lines = query(&["-p", "sensor=lid*", "--since", "10m"]);
    let got: Vec<(&str, &str)> = lines
        .lines()
        .map(|l| (l.split(' ').next().unwrap(), l.rsplit(' ').next().unwrap()))
        .collect();
    assert_eq!(got, [("0", "a"), ("2", "c")], "{lines}");
    assert!(lines.contains("[sensor=lidar alt=120]"), "{lines}");
    let json = query(&["-p", "alt=100..200", "--desc", "--json"]);
    let offsets: Vec<u64> = json
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["offset"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(offsets, [1, 0]);
    assert_eq!(
        query(&["-p", "sensor=radar", "--delete"]),
        "deleted 1 records\n"
    );
    assert_eq!(query(&["-p", "alt=120"]).lines().count(), 1);
    let bad = fogline()
        .args(["query", "--admin", &http, "-p", "alt=1..x"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("profile"));
}
