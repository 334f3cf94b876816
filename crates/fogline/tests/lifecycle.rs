//! The real `fogline serve`: SIGTERM stops every component in order and loses no
//! acknowledged record; a component that cannot start stops the node with an error naming
//! it.

mod support;

use std::ffi::OsStr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fogline_client::{Client, ClientOptions, ConsumerOptions, PublishRecord, StartPosition};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_node_and_loses_no_acknowledged_record() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut node = support::serve([OsStr::new("--data-dir"), data.as_os_str()]);
    let client = Client::connect(
        &node.native,
        ClientOptions {
            reconnect: None,
            ..ClientOptions::default()
        },
    )
    .await
    .unwrap();
    // Acknowledged records are counted as their acks arrive, until the node goes away.
    let acked = Arc::new(AtomicU64::new(0));
    let count = acked.clone();
    let publisher = tokio::spawn(async move {
        for i in 0u64.. {
            let rec = PublishRecord::new("t", i.to_le_bytes().to_vec());
            if client.publish_acked(&rec).await.is_err() {
                return;
            }
            count.store(i + 1, Ordering::SeqCst);
        }
    });
    while acked.load(Ordering::SeqCst) < 2000 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // SAFETY: kill(2) on our child's pid.
    let rc = unsafe { libc::kill(node.child.id() as i32, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let (status, _node) = tokio::task::spawn_blocking(move || {
        let status = node.child.wait().expect("waited");
        (status, node)
    })
    .await
    .unwrap();
    assert!(status.success(), "a clean stop exits 0: {status:?}");
    tokio::time::timeout(Duration::from_secs(30), publisher)
        .await
        .expect("the publisher sees the end")
        .unwrap();
    let acked = acked.load(Ordering::SeqCst);

    let node = support::serve([OsStr::new("--data-dir"), data.as_os_str()]);
    let client = Client::connect(&node.native, ClientOptions::default())
        .await
        .unwrap();
    let mut c = client
        .consumer(
            "default",
            ConsumerOptions {
                start: StartPosition::Earliest,
                ack_timeout: None,
                ..ConsumerOptions::default()
            },
        )
        .await
        .unwrap();
    let mut seen = 0u64;
    loop {
        let got = c.fetch(1024, Duration::from_millis(300)).await.unwrap();
        if got.is_empty() {
            break;
        }
        for r in got {
            let v = u64::from_le_bytes(r.payload[..8].try_into().unwrap());
            assert_eq!(v, seen, "in order, none missing");
            seen += 1;
        }
    }
    assert!(seen >= acked, "{acked} acknowledged, {seen} stored");
}

#[test]
fn a_component_that_cannot_start_is_named_and_the_node_exits() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fogline"))
        .args(["serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        .args(["--mqtt", &addr, "--storage", "memory"])
        .arg("--data-dir")
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("fogline runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("component mqtt failed to start"), "{err}");
    assert!(err.contains(&addr) && err.contains("in use"), "{err}");
}
