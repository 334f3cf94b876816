//! The accept loop lets go of a connection's task when the connection ends (issue 31,
//! item 2). A finished task keeps its allocation, the connection's whole future, until it
//! is joined; joined only at the next accept, the tasks of a burst of connections that
//! closed with none after them stayed in memory (about 6 KiB per MQTT connection in a
//! release build: 30 MB after 5,000 clients left).
//!
//! Measured by a counting global allocator: the heap's live bytes go back to where they
//! were once the connections have ended, with no new connection to trigger anything.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use fogline_net::transport::{accept_loop, AcceptOptions, Conn, Listener};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

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

/// Connections being served now.
static SERVING: AtomicUsize = AtomicUsize::new(0);

/// Bytes of state each connection's future holds across its wait: with what the loop wraps
/// it in, below the size past which tokio boxes a future (2 KiB in debug builds), so the
/// state lives in the task's own allocation, as an MQTT connection's does in a release build.
const STATE: usize = 512;

/// Serves a connection until the peer closes it, holding `STATE` bytes meanwhile.
async fn serve(mut conn: Conn, _peer: String) {
    SERVING.fetch_add(1, Relaxed);
    let mut state = [0u8; STATE];
    while matches!(conn.read(&mut state).await, Ok(n) if n > 0) {}
    std::hint::black_box(&state);
    SERVING.fetch_sub(1, Relaxed);
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_finished_connection_leaves_nothing_behind() {
    const N: usize = 200;
    let listener = Listener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr();
    let (stop_tx, stop) = watch::channel(false);
    let lp = tokio::spawn(accept_loop(listener, AcceptOptions::default(), stop, serve));

    // One connection first, so whatever the runtime and the loop allocate once is there.
    drop(tokio::net::TcpStream::connect(&addr).await.unwrap());
    until("the first connection ends", || SERVING.load(Relaxed) == 0).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let before = LIVE.load(Relaxed);

    let mut clients = Vec::new();
    for _ in 0..N {
        clients.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
    }
    until("every connection is served", || SERVING.load(Relaxed) == N).await;
    drop(clients);
    until("every connection ends", || SERVING.load(Relaxed) == 0).await;

    // The tasks of N connections would hold at least N * STATE bytes.
    let bound = (N * STATE / 8) as isize;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let kept = LIVE.load(Relaxed) - before;
        if kept < bound {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{N} connections ended and {kept} bytes are still held (fewer than {bound} expected)"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop_tx.send_replace(true);
    lp.await.unwrap();
}
