//! Each driver against its real peer: the test starts the peer on free ports with
//! bench/peers/start.sh, runs a short cell, and stops it by pid. A peer that is not installed
//! skips its test with a message naming the install command.
#![cfg(feature = "peers")]

use std::time::Duration;

use fogline_bench::cell::{Budget, CellResult, CellSpec, Rate, Reading};
use fogline_bench::peers::{default_scripts_dir, PeerEnv, PeerError, RunningPeer};
use fogline_bench::runner::run_cell;
use fogline_bench::{drivers, Durability, System};

/// A running peer and its work directory, removed after the peer is stopped (fields drop
/// in order).
struct Peer {
    running: RunningPeer,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for Peer {
    type Target = RunningPeer;
    fn deref(&self) -> &RunningPeer {
        &self.running
    }
}

fn start(system: System, durability: Durability) -> Option<Peer> {
    let scripts = default_scripts_dir().expect("bench/peers is part of the source tree");
    let dir = tempfile::Builder::new()
        .prefix("fogline-bench-test-")
        .tempdir()
        .unwrap();
    let env = PeerEnv {
        scripts,
        work_dir: dir.path().to_path_buf(),
        server_core: None,
        fogline_exe: None,
    };
    match RunningPeer::start(system, &env, durability) {
        Ok(running) => Some(Peer { running, _dir: dir }),
        Err(PeerError::Missing(msg)) => {
            eprintln!("SKIPPED {system}: {msg}");
            None
        }
        Err(e) => panic!("{system}: {e}"),
    }
}

async fn cell(
    system: System,
    peer: &RunningPeer,
    durability: Durability,
    spec: &CellSpec,
) -> CellResult {
    let d = drivers::connect(system, &peer.addr, durability).unwrap();
    let topic = format!("fbtest-{}", fastrand::u32(..));
    tokio::time::timeout(
        Duration::from_secs(60),
        run_cell(d, spec, &topic, peer.pid, 1),
    )
    .await
    .expect("cell finished in time")
    .unwrap()
}

fn small(subs: u32, n: u64) -> CellSpec {
    let mut s = CellSpec::new("test", 256, Rate::Max, Budget::Messages(n));
    s.subscribers = subs;
    s
}

/// A max-rate run is accounted exactly (some systems drop at maximum rate: Mosquitto's
/// queue limit, ZeroMQ's high-water mark; that is counted, not an error); at a fixed rate
/// within every system's means, and for 100 KiB messages, everything arrives exactly once.
async fn exercise(system: System) {
    let Some(peer) = start(system, Durability::Volatile) else {
        return;
    };
    let r = cell(system, &peer, Durability::Volatile, &small(2, 2000)).await;
    let d = r.delivery;
    assert_eq!(d.expected, 4000, "{system}: {r:?}");
    assert!(d.received > 0, "{system}: {d:?} {:?}", r.errors);
    assert_eq!(d.received + d.lost, d.expected, "{system}: {d:?}");
    assert_eq!((d.duplicates, d.unexpected), (0, 0), "{system}: {d:?}");
    assert_eq!(r.latency.count, d.received);
    if peer.pid.is_some() {
        assert!(
            r.server.is_some_and(|s| s.rss_max_mib > 0.0),
            "{system}: {:?}",
            r.server
        );
    }
    let mut paced = CellSpec::new("paced", 256, Rate::Hz(500.0), Budget::Messages(300));
    paced.subscribers = 2;
    let r = cell(system, &peer, Durability::Volatile, &paced).await;
    assert_eq!(
        r.delivery.received, 600,
        "{system}: {:?} {:?}",
        r.delivery, r.errors
    );
    assert_eq!(r.delivery.reordered, 0, "{system}: {:?}", r.delivery);
    let big = CellSpec::new("big", 100 * 1024, Rate::Hz(200.0), Budget::Messages(40));
    let r = cell(system, &peer, Durability::Volatile, &big).await;
    assert_eq!(
        r.delivery.received, 40,
        "{system}: {:?} {:?}",
        r.delivery, r.errors
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mosquitto() {
    exercise(System::Mosquitto).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mosquitto_persistent_qos1() {
    let Some(peer) = start(System::Mosquitto, Durability::Persistent) else {
        return;
    };
    let r = cell(
        System::Mosquitto,
        &peer,
        Durability::Persistent,
        &small(1, 500),
    )
    .await;
    assert_eq!(r.delivery.received, 500, "{:?} {:?}", r.delivery, r.errors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis() {
    exercise(System::Redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats() {
    exercise(System::Nats).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_live_and_replay() {
    exercise(System::Jetstream).await;
    let Some(peer) = start(System::Jetstream, Durability::Persistent) else {
        return;
    };
    let mut s = small(1, 300);
    s.reading = Reading::Replay;
    let r = cell(System::Jetstream, &peer, Durability::Persistent, &s).await;
    assert_eq!(r.delivery.received, 300, "{:?} {:?}", r.delivery, r.errors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zeromq() {
    exercise(System::Zeromq).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq() {
    exercise(System::Rabbitmq).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_live_replay_and_persistent() {
    let Some(peer) = start(System::Kafka, Durability::Volatile) else {
        return;
    };
    let r = cell(System::Kafka, &peer, Durability::Volatile, &small(2, 2000)).await;
    assert_eq!(r.delivery.received, 4000, "{:?} {:?}", r.delivery, r.errors);
    let mut s = small(1, 500);
    s.reading = Reading::Replay;
    s.straggler_timeout = Duration::from_secs(10);
    let r = cell(System::Kafka, &peer, Durability::Volatile, &s).await;
    assert_eq!(r.delivery.received, 500, "{:?} {:?}", r.delivery, r.errors);
    let mut s = small(0, 500);
    s.durability = Durability::Persistent;
    let d = drivers::connect(System::Kafka, &peer.addr, Durability::Persistent).unwrap();
    let r = run_cell(d, &s, "fbtest-acked", peer.pid, 1).await.unwrap();
    assert_eq!(r.sent, 500);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
}
