//! Slow consumers as an operator meets them (issue 31, finding 6): a stuck native subscriber
//! under `disconnect` stayed connected with no log line, and `drop-oldest` dropped records
//! without a word. Now the stuck one is disconnected, and every drop and disconnect is
//! counted and logged (rate-limited).

mod support;

use std::ffi::OsStr;
use std::time::Duration;

use bytes::BytesMut;
use fogline_client::{Client, ClientOptions};
use fogline_wire::{encode, Frame, PROTOCOL_VERSION};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A native client that subscribes to `t` with `flags` (the policy in bits 1-2), reads
/// the SubOk, and then never reads again.
async fn stuck_subscriber(addr: &str, flags: u8) -> TcpStream {
    // A small receive window, so the server's writes to it are stuck soon.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut s = socket.connect(addr.parse().unwrap()).await.unwrap();
    s.set_nodelay(true).unwrap();
    let mut buf = BytesMut::new();
    for f in [
        Frame::Hello {
            version: PROTOCOL_VERSION,
            client_name: "stuck".into(),
            credentials: None,
        },
        Frame::Subscribe {
            sub_id: 1,
            flags,
            filter: "t".into(),
        },
    ] {
        encode(&f, &mut buf).unwrap();
    }
    s.write_all(&buf).await.unwrap();
    // HelloOk and SubOk: small, both in one read or two.
    let mut got = Vec::new();
    while got.len() < 20 {
        let mut b = [0u8; 256];
        let n = s.read(&mut b).await.unwrap();
        assert!(n > 0);
        got.extend_from_slice(&b[..n]);
    }
    s
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

async fn metrics(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

/// Publishes 16 KiB records to `t` until `done` says so (or 20,000 were sent).
async fn flood(addr: &str, done: impl Fn(&str) -> bool, http: &str) {
    let client = Client::connect(addr, ClientOptions::default())
        .await
        .unwrap();
    let payload = vec![7u8; 16 << 10];
    for i in 0..20_000u32 {
        client.publish("t", &payload).await.unwrap();
        if i % 200 == 199 {
            client.flush().await.unwrap();
            if done(&metrics(http).await) {
                break;
            }
        }
    }
    client.close().await.unwrap();
}

fn node(policy: &str) -> (tempfile::TempDir, support::Served) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("fogline.toml");
    std::fs::write(
        &config,
        format!(
            "[broker.subscriptions]\nmax_records = 64\nmax_bytes = \"256KiB\"\npolicy = \"{policy}\"\n"
        ),
    )
    .unwrap();
    let data = dir.path().join("data");
    let node = support::serve([
        OsStr::new("--config"),
        config.as_os_str(),
        OsStr::new("--data-dir"),
        data.as_os_str(),
    ]);
    (dir, node)
}

fn warned(node: &support::Served, what: &str) -> bool {
    node.log
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.contains("WARN") && l.contains(what))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_subscriber_under_disconnect_is_disconnected_and_logged() {
    let (_dir, node) = node("disconnect");
    let http = node.http.clone().unwrap();
    let _stuck = stuck_subscriber(&node.native, 3 << 1).await;
    let cut = |m: &str| metric(m, "fogline_slow_consumer_disconnects_total") >= 1.0;
    flood(&node.native, cut, &http).await;
    // Its connection ends: only the publisher's came and went.
    let mut native = f64::MAX;
    for _ in 0..600 {
        native = metric(
            &metrics(&http).await,
            "fogline_connections{protocol=\"native\"}",
        );
        if native == 0.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(native, 0.0, "the stuck subscriber is still connected");
    assert!(
        warned(&node, "cut off as slow consumers"),
        "{:#?}",
        node.log.lock().unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_dropped_for_a_slow_subscriber_are_counted_and_logged() {
    let (_dir, node) = node("drop-oldest");
    let http = node.http.clone().unwrap();
    let _stuck = stuck_subscriber(&node.native, 2 << 1).await;
    let dropped = |m: &str| metric(m, "fogline_records_dropped_total{reason=\"queue_full\"}") > 0.0;
    flood(&node.native, dropped, &http).await;
    assert!(dropped(&metrics(&http).await));
    for _ in 0..100 {
        if warned(&node, "records dropped since the last report") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        warned(&node, "records dropped since the last report"),
        "{:#?}",
        node.log.lock().unwrap()
    );
}
