//! A full disk under the journal of durable MQTT state: what a publisher has had
//! acknowledged reaches a persistent session after restarts, what could not be journaled is
//! refused (PUBACK 0x80; a 3.1.1 publisher's connection closes unanswered), a SUBSCRIBE that
//! cannot be journaled is not answered, the node restarts on the full disk, and the journal
//! takes entries again once there is room.
//!
//! The data directory is a small tmpfs of its own, so the tests need `mount` (root). Where
//! they cannot mount they say so and do nothing, unless `FOGLINE_TEST_MOUNT=1` (set by
//! `scripts/test.sh` where a probe mount works) makes that a failure.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use fogline_mqtt::codec::{Packet, Version};

/// A tmpfs mounted on a fresh directory, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().expect("tempdir");
        // No huge pages: a file's last page is the only room a full disk has left.
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},huge=never"),
                "tmpfs",
            ])
            .arg(dir.path())
            .output();
        let why = match out {
            Ok(o) if o.status.success() => return Some(Tmpfs { dir }),
            Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
            Err(e) => e.to_string(),
        };
        assert!(
            std::env::var_os("FOGLINE_TEST_MOUNT").is_none(),
            "FOGLINE_TEST_MOUNT is set but a tmpfs cannot be mounted: {why}"
        );
        eprintln!("SKIPPED: cannot mount a tmpfs ({why}); run as root to test a full disk");
        None
    }

    /// Takes every byte left, in a file of its own.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.filler()).expect("filler");
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
        while f.write_all(&block[..64]).is_ok() {}
    }

    /// Gives back what `fill` took.
    fn free(&self) {
        std::fs::remove_file(self.filler()).expect("filler removed");
    }

    fn filler(&self) -> PathBuf {
        self.dir.path().join("filler")
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

fn persistent(id: &str, clean: bool) -> fogline_mqtt::codec::Connect {
    let mut c = connect_packet(Version::V5, id, clean);
    c.props.session_expiry = Some(600);
    c
}

fn tune(c: &mut common::Config) {
    // The log's one segment is reserved at start (fallocate) and holds every message of the
    // test, so it is the journal that meets the full disk.
    c.broker.segment_bytes = bytesize::ByteSize::b(256 * page() as u64);
}

/// A tmpfs for one test (room for the log's segment and as much again) and a server on it.
async fn start() -> Option<(Tmpfs, TestServer)> {
    let fs = Tmpfs::mount(&format!("{}k", 512 * page() / 1024))?;
    let data = tempfile::tempdir_in(fs.path()).expect("data dir");
    let s = TestServer::start_in(data, tune).await;
    Some((fs, s))
}

/// A client id longer than a page, whose journal entries do not fit in what a full disk has
/// left; `None` (the test is skipped) where a page is longer than a client id may be.
fn long_id(prefix: &str) -> Option<String> {
    if page() > 32 * 1024 {
        eprintln!(
            "SKIPPED: a client id cannot be longer than a page of {} bytes",
            page()
        );
        return None;
    }
    Some(format!("{prefix}-{}", "i".repeat(page())))
}

/// Bytes in a memory page: the most a full tmpfs may still take into a file's last page.
fn page() -> usize {
    // SAFETY: sysconf reads a constant of the system.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

/// Message `i`: its number, then more than a page, so no journal entry for it fits in
/// what a full disk has left.
fn numbered(i: u32, pkid: u16) -> fogline_mqtt::codec::Publish {
    let mut payload = i.to_be_bytes().to_vec();
    payload.resize(page() + 512, b'x');
    publish("fd/t", &payload, QoS::AtLeastOnce, pkid)
}

/// Filters whose subscription record is larger than a page.
fn long_filters(prefix: &str) -> Vec<fogline_mqtt::codec::Filter> {
    (0..page() / 4096 + 1)
        .map(|i| {
            filter(
                &format!("{prefix}/{i}/{}", "o".repeat(8192)),
                QoS::AtLeastOnce,
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_what_it_cannot_journal_and_loses_nothing_acknowledged() {
    let Some((fs, s)) = start().await else {
        return;
    };
    let (mut sub, _) = Raw::connect(&s.mqtt, persistent("fd-sub", true)).await;
    sub.subscribe(1, vec![filter("fd/t", QoS::AtLeastOnce)])
        .await;
    drop(sub); // offline: every message is journaled for it
    tokio::time::sleep(Duration::from_millis(100)).await;

    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "fd-pub", true)).await;
    let mut acked: Vec<u32> = (0..50).collect();
    for &i in &acked {
        p.publish_qos1(numbered(i, i as u16 + 1)).await;
    }

    fs.fill();
    // 5.0: refused, and the connection goes on.
    for i in 0..3u16 {
        p.send(&Packet::Publish(numbered(500 + u32::from(i), 300 + i)))
            .await;
        match p.recv().await {
            Some(Packet::PubAck(a)) if a.pkid == 300 + i && a.reason == 0x80 => {}
            other => panic!("expected PUBACK 0x80, got {other:?}"),
        }
    }
    // 3.1.1 has no refusing PUBACK: the connection closes without one.
    let (mut old, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "fd-v4", true)).await;
    old.send(&Packet::Publish(numbered(600, 1))).await;
    let closing = old.expect_close().await;
    assert!(closing.is_empty(), "3.1.1 publisher got {closing:?}");
    // A persistent session's SUBSCRIBE that cannot be journaled gets no SUBACK: its
    // connection ends with 0x80, and the client subscribes again next time.
    let (mut other, _) = Raw::connect(&s.mqtt, persistent("fd-other", true)).await;
    other
        .send(&Packet::Subscribe(fogline_mqtt::codec::Subscribe {
            pkid: 7,
            props: Default::default(),
            filters: long_filters("fd/other"),
        }))
        .await;
    let closing = other.expect_close().await;
    assert!(
        matches!(&closing[..], [Packet::Disconnect(d)] if d.reason == 0x80),
        "expected only DISCONNECT 0x80, got {closing:?}"
    );
    drop(p);
    // A client whose session is not durable comes and goes as before: nothing of it is
    // journaled.
    for _ in 0..2 {
        let (plain, ack) =
            Raw::connect(&s.mqtt, connect_packet(Version::V4, "fd-plain", true)).await;
        assert_eq!(ack.code, 0);
        drop(plain);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The node restarts on the full disk: there is no room to compact the journal, so it
    // goes on with it as it is.
    let data = s.stop().await;
    let s = TestServer::start_in(data, tune).await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "fd-pub", true)).await;
    p.send(&Packet::Publish(numbered(700, 1))).await;
    match p.recv().await {
        Some(Packet::PubAck(a)) if a.reason == 0x80 => {}
        other => panic!("expected PUBACK 0x80, got {other:?}"),
    }
    // Room again: the journal takes entries on the same connection (failed appends were cut
    // off, not left torn).
    fs.free();
    for i in 1000..1010 {
        p.publish_qos1(numbered(i, i as u16)).await;
        acked.push(i);
    }
    drop(p);

    // The session holds every acknowledged message, in order; refused ones may follow them
    // (they reached the log), but none was acknowledged.
    let data = s.stop().await;
    let s = TestServer::start_in(data, tune).await;
    let (mut sub, ack) = Raw::connect(&s.mqtt, persistent("fd-sub", false)).await;
    assert!(ack.session_present);
    let mut got = Vec::new();
    while let Ok(Some(packet)) = sub.recv_within(Duration::from_secs(3)).await {
        let Packet::Publish(m) = packet else {
            panic!("expected PUBLISH, got {packet:?}");
        };
        got.push(u32::from_be_bytes(m.payload[..4].try_into().unwrap()));
        sub.send(&Packet::PubAck(Ack::ok(m.pkid))).await;
    }
    let kept: Vec<u32> = got.iter().copied().filter(|i| acked.contains(i)).collect();
    assert_eq!(kept, acked, "acknowledged messages lost or out of order");
    s.stop().await;
}

/// A clean start whose end of the older session the journal does not take is refused:
/// replay would otherwise merge the old session (its queued messages, its QoS 2 ids) into
/// the new one. With room again, the clean start goes through and the old session stays
/// gone across a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_start_the_journal_cannot_record_is_refused() {
    // Longer than a page, so that its end does not fit in what a full disk has left.
    let Some(id) = long_id("fd-cs") else {
        return;
    };
    let Some((fs, s)) = start().await else {
        return;
    };
    let (mut old, _) = Raw::connect(&s.mqtt, persistent(&id, true)).await;
    old.subscribe(1, vec![filter("fd/t", QoS::AtLeastOnce)])
        .await;
    drop(old);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "fd-cs-pub", true)).await;
    for i in 0..3u32 {
        p.publish_qos1(numbered(i, i as u16 + 1)).await;
    }

    fs.fill();
    let mut sock = Raw::open(&s.mqtt, Version::V5).await;
    sock.send(&Packet::Connect(Box::new(persistent(&id, true))))
        .await;
    match sock.recv().await {
        Some(Packet::ConnAck(a)) => assert_eq!(a.code, 0x80, "clean start accepted: {a:?}"),
        other => panic!("expected CONNACK, got {other:?}"),
    }

    fs.free();
    let (fresh, ack) = Raw::connect(&s.mqtt, persistent(&id, true)).await;
    assert_eq!(ack.code, 0);
    drop(fresh);
    let data = s.stop().await;
    let s = TestServer::start_in(data, tune).await;
    let (mut again, ack) = Raw::connect(&s.mqtt, persistent(&id, false)).await;
    assert!(ack.session_present, "the new session was journaled");
    again.expect_silence(500).await; // none of the old session's messages
    s.stop().await;
}

/// A session whose record a full disk refused is written whole by its next journal write,
/// with what that write is for: here the retained copy its SUBSCRIBE queues, which is then
/// delivered again after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_record_was_refused_is_written_whole_later() {
    let Some((fs, s)) = start().await else {
        return;
    };
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "fd-rs-pub", true)).await;
    let mut kept = publish("fd/r", b"kept", QoS::AtLeastOnce, 1);
    kept.retain = true;
    p.publish_qos1(kept).await;

    fs.fill();
    // Its record is longer than a page: it does not fit, and the session starts anyway.
    let Some(id) = long_id("fd-rs") else {
        return;
    };
    let (mut sub, ack) = Raw::connect(&s.mqtt, persistent(&id, true)).await;
    assert_eq!(ack.code, 0);
    fs.free();
    // A failed whole-session write is not tried again for 200 ms.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        sub.subscribe(1, vec![filter("fd/r", QoS::AtLeastOnce)])
            .await,
        vec![1]
    );
    let m = sub.expect_publish().await; // not acknowledged
    assert_eq!(&m.payload[..], b"kept");
    drop(sub);

    let data = s.stop().await;
    let s = TestServer::start_in(data, tune).await;
    let (mut sub, ack) = Raw::connect(&s.mqtt, persistent(&id, false)).await;
    assert!(ack.session_present);
    let m = sub.expect_publish().await;
    assert_eq!(&m.payload[..], b"kept");
    assert!(m.dup, "a redelivery");
    s.stop().await;
}

/// A QoS 2 message whose entry for a durable subscriber the full disk refused is not sent to
/// it until the whole session is journaled again: sent unjournaled, its packet id would be
/// free after a restart while the client still holds it, and the next message given that id
/// would be taken for this one and dropped. Once there is room it goes out by itself, with
/// no packet or message to wake its connection (keep-alive 0), and survives the restart
/// under the same packet id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_qos2_message_waits_for_its_session_to_be_journaled() {
    let Some((fs, s)) = start().await else {
        return;
    };
    let mut quiet = persistent("fd-q2", true);
    quiet.keep_alive = 0;
    let (mut sub, _) = Raw::connect(&s.mqtt, quiet).await;
    sub.subscribe(1, vec![filter("fd/q", QoS::ExactlyOnce)])
        .await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "fd-q2-pub", true)).await;

    fs.fill();
    let mut m = numbered(1, 5);
    m.topic = "fd/q".into();
    m.qos = QoS::ExactlyOnce;
    p.send(&Packet::Publish(m)).await;
    match p.recv().await {
        Some(Packet::PubRec(a)) if a.reason == 0x80 => {}
        other => panic!("expected PUBREC 0x80, got {other:?}"),
    }
    sub.expect_silence(300).await;

    fs.free();
    // Nothing wakes the subscriber's connection: its retry (every 200 ms) sends it.
    let first = match sub.recv_within(Duration::from_secs(3)).await {
        Ok(Some(Packet::Publish(m))) => m,
        other => panic!("expected the held-back PUBLISH once there is room, got {other:?}"),
    };
    assert_eq!(first.qos, QoS::ExactlyOnce);
    drop(sub); // its PUBREC never sent

    let data = s.stop().await;
    let s = TestServer::start_in(data, tune).await;
    let (mut sub, ack) = Raw::connect(&s.mqtt, persistent("fd-q2", false)).await;
    assert!(ack.session_present);
    let again = sub.expect_publish().await;
    assert_eq!(again.pkid, first.pkid, "redelivered under its packet id");
    assert_eq!(again.payload, first.payload);
    assert!(again.dup);
    s.stop().await;
}
