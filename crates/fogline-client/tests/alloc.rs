//! What receiving a message costs in memory: the reader must not allocate a fresh read
//! buffer (64 KiB) for every frame. A delivered frame shares the read buffer while the
//! application holds it, so a buffer reserved again after each read could not reuse its
//! memory and took a new one each time (glibc then freed and trimmed it, a `brk` and page
//! faults per message). Its own binary: the counting allocator is global.

#[allow(dead_code)] // this test uses part of it
#[path = "client/fake.rs"]
mod fake;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use fogline_client::{Client, ClientOptions, SubscribeOptions};

struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[tokio::test(flavor = "current_thread")]
async fn receiving_a_message_allocates_no_read_buffer() {
    let fake = fake::Fake::start(fake::Config::default()).await;
    let client = Client::connect(&fake.addr, ClientOptions::default())
        .await
        .unwrap();
    let mut sub = client
        .subscribe("a/#", SubscribeOptions::default())
        .await
        .unwrap();
    // Warm up: buffers reach their working size.
    for _ in 0..100 {
        client.publish("a/x", b"warm").await.unwrap();
        sub.recv().await.unwrap();
    }
    let n = 1000;
    let before = ALLOCATED.load(Ordering::Relaxed);
    for _ in 0..n {
        client.publish("a/x", b"0123456789").await.unwrap();
        let m = sub.recv().await.unwrap();
        assert_eq!(&m.payload[..], b"0123456789");
    }
    let per_message = (ALLOCATED.load(Ordering::Relaxed) - before) / n;
    eprintln!("{per_message} bytes allocated per message (client and fake server)");
    // Client and fake server together; a 64 KiB read buffer per message would show.
    assert!(
        per_message < 8 << 10,
        "{per_message} bytes allocated per message"
    );
}
