//! A full disk (issue 31, finding 4). Writes stopped a whole segment (64 MiB) before the disk
//! was full; `fsync` streams acknowledged nothing more after space came back until a
//! restart; and with less room than one segment the server did not start. Now: it starts
//! and serves reads on a full disk, fills it to its last megabyte, reports the condition in
//! metrics and health, and takes records again as soon as there is room, in every mode.
//!
//! The server runs in a mount namespace of its own (`unshare -m`, which needs root, as CI
//! has) on a 40 MiB tmpfs; the test reaches its files through `/proc/PID/root`.

mod support;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fogline_client::{Client, ClientOptions, ConsumerOptions, PublishRecord, StartPosition};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Free bytes of the file system holding `path`.
fn free_bytes(path: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: statvfs fills the struct it is given; the path is a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
    st.f_bavail * st.f_frsize
}

async fn http(addr: &str, path: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

fn full_gauge(metrics: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("fogline_stream_storage_full{stream=\"default\"} "))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no storage_full gauge in\n{metrics}"))
}

/// Publishes acknowledged records until one is refused; returns how many were acked.
async fn publish_until_full(client: &Client, from: u64) -> u64 {
    let payload = vec![9u8; 1000];
    let mut n = 0;
    loop {
        let mut p = payload.clone();
        p[..8].copy_from_slice(&(from + n).to_le_bytes());
        if client
            .publish_acked(&PublishRecord::new("disk/t", p))
            .await
            .is_err()
        {
            return n;
        }
        n += 1;
        assert!(n < 100_000, "the disk never filled");
    }
}

async fn read_all(addr: &str) -> u64 {
    let client = Client::connect(addr, ClientOptions::default())
        .await
        .unwrap();
    let copts = ConsumerOptions {
        start: StartPosition::Earliest,
        ..ConsumerOptions::default()
    };
    let mut c = client.consumer("default", copts).await.unwrap();
    let mut n = 0;
    loop {
        let got = c.fetch(4096, Duration::from_millis(500)).await.unwrap();
        if got.is_empty() {
            return n;
        }
        n += got.len() as u64;
        c.ack(&got.iter().map(|r| r.offset).collect::<Vec<_>>())
            .unwrap();
    }
}

async fn fill_free_and_refill(storage: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let config = dir.path().join("fogline.toml");
    std::fs::write(&config, "[broker]\nsegment_bytes = \"4MiB\"\n").unwrap();
    // 37 MiB of 40 taken before the server starts: less room than one segment.
    let script = format!(
        "mount -t tmpfs -o size=40m tmpfs {m} && fallocate -l 37M {m}/filler && exec \"$0\" \"$@\"",
        m = mnt.display()
    );
    let wrapper = [
        OsStr::new("unshare"),
        OsStr::new("-m"),
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new(&script),
    ];
    let data = mnt.join("data");
    let node = support::serve_via(
        &wrapper,
        [
            OsStr::new("--config"),
            config.as_os_str(),
            OsStr::new("--data-dir"),
            data.as_os_str(),
            OsStr::new("--storage"),
            OsStr::new(storage),
        ],
    );
    // The server's view of the tmpfs.
    let inside: PathBuf = format!("/proc/{}/root{}", node.child.id(), mnt.display()).into();
    let admin = node.http.clone().unwrap();

    let client = Client::connect(&node.native, ClientOptions::default())
        .await
        .unwrap();
    let first = publish_until_full(&client, 0).await;
    let left = free_bytes(&inside);
    assert!(first > 1000, "{storage}: only {first} records before full");
    assert!(
        left < 1 << 20,
        "{storage}: writes stopped with {left} bytes still free"
    );
    // Full, but serving: every acknowledged record reads back, and it says so.
    assert_eq!(read_all(&node.native).await, first, "{storage}");
    assert_eq!(full_gauge(&http(&admin, "/metrics").await), 1.0);
    let health = http(&admin, "/healthz").await;
    assert!(
        health.starts_with("HTTP/1.1 200")
            && health.contains("\"degraded\"")
            && health.contains("disk full"),
        "{health}"
    );

    // Room again: records are acknowledged again, without a restart.
    std::fs::remove_file(inside.join("filler")).unwrap();
    let more = vec![1u8; 1000];
    for i in 0..500 {
        let mut p = more.clone();
        p[..8].copy_from_slice(&(first + i).to_le_bytes());
        client
            .publish_acked(&PublishRecord::new("disk/t", p))
            .await
            .unwrap_or_else(|e| panic!("{storage}: record {i} after space came back: {e}"));
    }
    assert_eq!(full_gauge(&http(&admin, "/metrics").await), 0.0);
    assert!(http(&admin, "/healthz").await.contains("\"ok\""));
    assert_eq!(read_all(&node.native).await, first + 500, "{storage}");
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_with_fsync_storage() {
    fill_free_and_refill("fsync").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_with_mmap_storage() {
    fill_free_and_refill("mmap").await;
}
