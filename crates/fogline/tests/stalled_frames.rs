//! Half-sent frames (issue 31, finding 1): connections that announce a huge frame (native)
//! or packet (MQTT), send most of it and stall held the server's memory without limit (100
//! of them took it from 7 MB to 911 MB) and the native ones stayed open. Now their buffers
//! come out of the node's read budget, and a frame that does not arrive whole in time closes
//! its connection.

mod support;

use std::ffi::OsStr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const ATTACKERS: usize = 8;
const ANNOUNCED: usize = 15 << 20;
const SENT: usize = 14 << 20;

fn rss_anon_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

async fn native(addr: String) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    // Hello: length, kind 0x01, version 1, client name "atk".
    let body = [1u8, 0, 3, 0, b'a', b't', b'k'];
    let mut hello = ((1 + body.len()) as u32).to_le_bytes().to_vec();
    hello.push(0x01);
    hello.extend_from_slice(&body);
    s.write_all(&hello).await.unwrap();
    let mut ok = [0u8; 256];
    assert!(s.read(&mut ok).await.unwrap() > 0, "HelloOk");
    // A Publish frame announced at 15 MiB.
    let mut head = (ANNOUNCED as u32).to_le_bytes().to_vec();
    head.push(0x10);
    s.write_all(&head).await.unwrap();
    s
}

async fn mqtt(addr: String, n: usize) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let id = format!("atk{n}");
    let mut connect = vec![0x10, (10 + 2 + id.len()) as u8];
    connect.extend_from_slice(b"\x00\x04MQTT\x04\x02\x00\x3c");
    connect.extend_from_slice(&(id.len() as u16).to_be_bytes());
    connect.extend_from_slice(id.as_bytes());
    s.write_all(&connect).await.unwrap();
    let mut ack = [0u8; 4];
    s.read_exact(&mut ack).await.unwrap();
    assert_eq!(ack, [0x20, 2, 0, 0], "CONNACK");
    // A PUBLISH whose remaining length says 15 MiB.
    let mut head = vec![0x30];
    let mut x = ANNOUNCED;
    loop {
        let b = (x % 128) as u8;
        x /= 128;
        head.push(if x > 0 { b | 0x80 } else { b });
        if x == 0 {
            break;
        }
    }
    s.write_all(&head).await.unwrap();
    s
}

/// Sends most of the frame, then stalls; returns once the server has closed the
/// connection (reads end, or writes fail).
async fn stall(s: TcpStream) {
    let (mut rd, mut wr) = s.into_split();
    let send = async move {
        let chunk = vec![0u8; 1 << 20];
        for _ in 0..SENT >> 20 {
            if wr.write_all(&chunk).await.is_err() {
                return;
            }
        }
        std::future::pending::<()>().await;
    };
    let closed = async move {
        let mut b = [0u8; 1024];
        while let Ok(n) = rd.read(&mut b).await {
            if n == 0 {
                return;
            }
        }
    };
    tokio::select! {
        () = send => {}
        () = closed => {}
    }
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name} in\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_frames_cost_only_the_budget_and_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("fogline.toml");
    std::fs::write(
        &config,
        "[node]\nread_buffer_budget = \"8MiB\"\nframe_timeout = \"2s\"\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let node = support::serve([
        OsStr::new("--config"),
        config.as_os_str(),
        OsStr::new("--data-dir"),
        data.as_os_str(),
    ]);
    let pid = node.child.id();
    let start = rss_anon_kib(pid);
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..ATTACKERS {
        let s = native(node.native.clone()).await;
        tasks.spawn(stall(s));
        let s = mqtt(node.mqtt.clone(), n).await;
        tasks.spawn(stall(s));
    }
    // Every connection is closed by the server; its memory peaks meanwhile.
    let mut peak = start;
    let all_closed = async { while tasks.join_next().await.is_some() {} };
    tokio::pin!(all_closed);
    let finished = tokio::time::timeout(Duration::from_secs(120), async {
        loop {
            tokio::select! {
                () = &mut all_closed => return,
                () = tokio::time::sleep(Duration::from_millis(20)) => {
                    peak = peak.max(rss_anon_kib(pid));
                }
            }
        }
    })
    .await;
    assert!(
        finished.is_ok(),
        "stalled connections were still open after 120 s"
    );
    // 16 connections x 14 MiB would be 224 MiB; the budget is 8 MiB, plus 64 KiB base
    // buffers and the server's own working memory.
    let grew = peak.saturating_sub(start);
    assert!(
        grew < 48 << 10,
        "server memory grew by {grew} KiB (from {start} KiB) under the stalled frames"
    );
    // Closed connections give their room back (the server may still be closing the last).
    let http = node.http.clone().unwrap();
    let mut text = http_get(&http, "/metrics").await;
    for _ in 0..600 {
        if metric(&text, "fogline_read_buffer_bytes") == 0.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        text = http_get(&http, "/metrics").await;
    }
    assert_eq!(metric(&text, "fogline_read_buffer_bytes"), 0.0, "{text}");
    assert_eq!(
        metric(&text, "fogline_frame_timeouts_total"),
        (2 * ATTACKERS) as f64
    );
    // And the memory goes back to the system (the node trims after connections end).
    let mut now = rss_anon_kib(pid);
    for _ in 0..300 {
        if now < start + (16 << 10) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        now = rss_anon_kib(pid);
    }
    assert!(
        now < start + (16 << 10),
        "RssAnon {now} KiB after the connections closed (started at {start} KiB, peaked at {peak} KiB)"
    );
}

/// A plain HTTP GET over TCP (the test needs no HTTP client crate).
async fn http_get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}
