//! Connection churn returns what it took (issue 31, item 2): cycles of clients that connect
//! with a clean session, subscribe to a topic of their own, receive a few messages and
//! leave. After each cycle the broker's structures are back to empty (sessions,
//! subscriptions, connections, cached routes) and the heap's live bytes, counted by a
//! counting global allocator, are back near where they were before the first client: a
//! route cached for a client's topic kept its ended subscription (and its session's
//! allocation) until that topic was published again, and the accept loop kept each ended
//! connection's task until the next accept. What the process's resident memory does with
//! the allocator is `crates/fogline/tests/churn.rs`.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use std::time::Duration;

use common::*;
use fogline_broker::Protocol;
use fogline_mqtt::codec::{Packet, Version};

/// The system allocator, counting the bytes it has handed out and not got back.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counter is only arithmetic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size() as isize, Relaxed);
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        // SAFETY: as above.
        let q = unsafe { System.realloc(p, layout, size) };
        if !q.is_null() {
            LIVE.fetch_add(size as isize - layout.size() as isize, Relaxed);
        }
        q
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Clients per cycle.
const CLIENTS: usize = 300;
/// Cycles.
const CYCLES: usize = 4;
/// Messages each client receives.
const MESSAGES: usize = 3;
/// Heap bytes per client of a cycle that may stay once it has left: the registries' hash
/// tables keep the capacity their peak needed (about 200 bytes a client), nothing else.
/// What each client left behind before the fix: about 1.5 KiB.
const KEPT_PER_CLIENT: usize = 512;

/// `CLIENTS` clients connect (clean sessions, MQTT 3.1.1), each subscribes to its own topic,
/// receives `MESSAGES` messages from one publisher, and disconnects.
async fn cycle(addr: &str, n: usize) {
    let mut joining = tokio::task::JoinSet::new();
    for i in 0..CLIENTS {
        let addr = addr.to_string();
        joining.spawn(async move {
            let id = format!("churn-{i}");
            let (mut c, ack) = Raw::connect(&addr, connect_packet(Version::V4, &id, true)).await;
            assert_eq!(ack.code, 0);
            let topic = format!("churn/{i}");
            let codes = c.subscribe(1, vec![filter(&topic, QoS::AtMostOnce)]).await;
            assert_eq!(codes, [0]);
            c
        });
    }
    let mut clients = Vec::new();
    while let Some(c) = joining.join_next().await {
        clients.push(c.expect("client joins"));
    }
    let id = format!("publisher-{n}");
    let (mut publisher, _) = Raw::connect(addr, connect_packet(Version::V4, &id, true)).await;
    for m in 0..MESSAGES {
        for i in 0..CLIENTS {
            let p = publish(&format!("churn/{i}"), &[m as u8; 100], QoS::AtMostOnce, 0);
            publisher.send(&Packet::Publish(p)).await;
        }
    }
    let mut leaving = tokio::task::JoinSet::new();
    for mut c in clients {
        leaving.spawn(async move {
            for _ in 0..MESSAGES {
                c.expect_publish().await;
            }
            c.send(&Packet::Disconnect(Default::default())).await;
            assert!(c.expect_close().await.is_empty());
        });
    }
    while let Some(r) = leaving.join_next().await {
        r.expect("client leaves");
    }
    publisher
        .send(&Packet::Disconnect(Default::default()))
        .await;
    publisher.expect_close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_churn_gives_back_what_it_took() {
    let server = TestServer::start(|c| {
        // No stream captures the clients' topics: stored records are not churn.
        c.broker.streams = vec![fogline_broker::StreamConfig::new(
            "other",
            vec!["x/#".into()],
        )];
    })
    .await;
    let sessions = server.sessions.clone();
    let start = LIVE.load(Relaxed);
    let bound = (CLIENTS * KEPT_PER_CLIENT) as isize;
    let mut after = Vec::new();
    let mut routes = Vec::new();
    for n in 0..CYCLES {
        cycle(&server.mqtt, n).await;
        // Every client has left once its session is gone.
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let s = sessions.sessions();
            let mqtt = server.broker.clients().count(Protocol::Mqtt);
            if s.connected + s.offline + mqtt == 0 {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "the clients leave");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(server.broker.subscription_count(), 0);
        routes.push(server.broker.cached_routes());
        // The connections' tasks end right after their sessions: give them a moment, no more.
        let deadline = tokio::time::Instant::now() + WAIT;
        let kept = loop {
            let kept = LIVE.load(Relaxed) - start;
            if kept < bound || tokio::time::Instant::now() >= deadline {
                break kept;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        after.push(kept);
    }
    assert!(
        routes.iter().all(|&r| r == 0),
        "routes cached after each cycle, naming ended subscriptions: {routes:?}"
    );
    assert!(
        after.iter().all(|&k| k < bound),
        "heap bytes kept after each cycle of {CLIENTS} clients: {after:?}, want below {bound}"
    );
    server.stop().await;
}
