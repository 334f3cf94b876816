//! Direct reads: a `Subscription::recv` with nothing queued reads the socket itself, so its
//! task is woken by its record, not a scheduling round later by the reader task. It still
//! keeps back-pressure, order and cancel safety (guarded here, as they held before direct
//! reads), and never reads a connection the client has left.

use std::io::{Read, Write};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use fogline_client::{Client, ClientOptions, SubscribeOptions};
use fogline_wire::{decode, encode, encode_deliver, encode_publish_header, Frame};
use parking_lot::Mutex;
use tokio::io::AsyncReadExt;

use crate::fake::Config;
use crate::reconnect::fast_reconnect;
use crate::setup;

/// A server on a thread of its own, with blocking sockets: it accepts one client and
/// confirms its one subscription, then accepts a plain "bystander" connection; on `go` it
/// writes a record to the client and then one byte to the bystander.
struct RawServer {
    addr: String,
    bystander_addr: String,
    go: mpsc::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RawServer {
    fn start() -> RawServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let bystanders = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let bystander_addr = bystanders.local_addr().unwrap().to_string();
        let (go, went) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            let mut client = RawConn::accept(&listener);
            let sub_id = client.confirm_subscribe();
            let (mut bystander, _) = bystanders.accept().unwrap();
            bystander.set_nodelay(true).unwrap();
            went.recv().unwrap();
            client
                .s
                .write_all(&deliver(sub_id, "order/x", b"x"))
                .unwrap();
            bystander.write_all(b"!").unwrap();
            // Hold both open until the test is done.
            let _ = went.recv();
        });
        RawServer {
            addr,
            bystander_addr,
            go,
            thread: Some(thread),
        }
    }
}

/// One client connection to a raw server, after the handshake.
struct RawConn {
    s: std::net::TcpStream,
    buf: BytesMut,
}

impl RawConn {
    fn accept(listener: &std::net::TcpListener) -> RawConn {
        let (s, _) = listener.accept().unwrap();
        s.set_nodelay(true).unwrap();
        let mut conn = RawConn {
            s,
            buf: BytesMut::new(),
        };
        assert!(matches!(conn.next(), Frame::Hello { .. }));
        let ok = Frame::HelloOk {
            version: 1,
            server_name: "raw".into(),
            max_message: 1 << 20,
            max_frame: 4 << 20,
        };
        conn.write(&ok);
        conn
    }

    fn next(&mut self) -> Frame {
        loop {
            if let Some(f) = decode(&mut self.buf, 1 << 20).unwrap() {
                return f;
            }
            let mut chunk = [0u8; 4096];
            let n = self.s.read(&mut chunk).unwrap();
            assert!(n > 0, "client hung up");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Waits for a Subscribe (pings go unanswered) and confirms it.
    fn confirm_subscribe(&mut self) -> u32 {
        loop {
            match self.next() {
                Frame::Subscribe { sub_id, .. } => {
                    self.write(&Frame::SubOk { sub_id });
                    return sub_id;
                }
                Frame::Ping { .. } => {}
                other => panic!("unexpected frame {:#x}", other.kind()),
            }
        }
    }

    fn write(&mut self, frame: &Frame) {
        let mut out = BytesMut::new();
        encode(frame, &mut out).unwrap();
        self.s.write_all(&out).unwrap();
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        let _ = self.go.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A Deliver frame of one record (its block made by encoding a Publish and decoding it).
fn deliver(sub_id: u32, topic: &str, payload: &[u8]) -> BytesMut {
    let mut publish = BytesMut::new();
    let mut w = encode_publish_header(&mut publish, 0, 0, topic).unwrap();
    w.push(&mut publish, 0, &[], payload).unwrap();
    let Some(Frame::Publish { records, .. }) = decode(&mut publish, 1 << 20).unwrap() else {
        panic!("not a publish");
    };
    let mut out = BytesMut::new();
    encode_deliver(
        &mut out,
        sub_id,
        0,
        1,
        0,
        topic,
        records.count(),
        records.as_bytes(),
    )
    .unwrap();
    out
}

// One thread, as in a load generator or a small edge device's application.
#[tokio::test(flavor = "current_thread")]
async fn a_waiting_subscription_is_woken_by_its_socket_not_after_the_reader() {
    let server = RawServer::start();
    let client = Client::connect(&server.addr, ClientOptions::default())
        .await
        .unwrap();
    let mut sub = client
        .subscribe("order/#", SubscribeOptions::default())
        .await
        .unwrap();
    let mut bystander = tokio::net::TcpStream::connect(&server.bystander_addr)
        .await
        .unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let seen = order.clone();
    let subscriber = tokio::spawn(async move {
        let m = sub.recv().await.unwrap();
        seen.lock().push("record");
        m
    });
    let seen = order.clone();
    let other = tokio::spawn(async move {
        let mut byte = [0u8; 1];
        bystander.read_exact(&mut byte).await.unwrap();
        seen.lock().push("bystander");
    });
    tokio::time::sleep(Duration::from_millis(20)).await; // both tasks wait
    server.go.send(()).unwrap();
    // Keep the runtime's only thread busy while the record and then the byte arrive, so
    // one poll of the I/O driver finds both sockets ready, in that order.
    std::thread::sleep(Duration::from_millis(100));
    let m = subscriber.await.unwrap();
    other.await.unwrap();
    assert_eq!(&m.payload[..], b"x");
    // Woken through the reader task, the subscriber would run after the bystander (the
    // reader wakes it only when it runs, behind every task the same poll woke).
    assert_eq!(*order.lock(), ["record", "bystander"]);
}

#[tokio::test]
async fn a_full_subscription_stops_direct_reads_too() {
    let (fake, client) = setup(Config::default(), ClientOptions::default()).await;
    let small = SubscribeOptions {
        capacity: 2,
        ..SubscribeOptions::default()
    };
    let mut full = client.subscribe("full/#", small).await.unwrap();
    let mut other = client
        .subscribe("other/#", SubscribeOptions::default())
        .await
        .unwrap();
    // One thread: the ten records leave as one frame and come back as one Deliver.
    for i in 0..10u32 {
        client.publish("full/x", i.to_le_bytes()).await.unwrap();
    }
    client.flush().await.unwrap();
    // The reader fills `full` and stops (nothing on this thread runs meanwhile but the
    // fake and the client's tasks, so this is ample).
    tokio::time::sleep(Duration::from_millis(200)).await;
    client.publish("other/y", b"y").await.unwrap();
    client.flush().await.unwrap();
    // y reached the fake, which writes its Deliver right after.
    fake.wait_for("y", |s| s.records == 11).await;
    // Reading for `other` would read past `full`'s capacity: it waits instead.
    let early = tokio::time::timeout(Duration::from_millis(100), other.recv()).await;
    assert!(early.is_err(), "read while a subscription was full");
    for i in 0..10u32 {
        assert_eq!(&full.recv().await.unwrap().payload[..], &i.to_le_bytes());
    }
    let m = tokio::time::timeout(Duration::from_secs(5), other.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&m.payload[..], b"y");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recv_cancelled_again_and_again_loses_nothing() {
    let (_fake, client) = setup(Config::default(), ClientOptions::default()).await;
    let mut sub = client
        .subscribe("tick/#", SubscribeOptions::default())
        .await
        .unwrap();
    let n = 300u32;
    let publisher = tokio::spawn({
        let client = client.clone();
        async move {
            for i in 0..n {
                client.publish("tick/t", i.to_le_bytes()).await.unwrap();
                if i % 10 == 0 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
            client.flush().await.unwrap();
        }
    });
    let mut got = Vec::new();
    let mut cancelled = 0;
    while got.len() < n as usize {
        match tokio::time::timeout(Duration::from_micros(200), sub.recv()).await {
            Ok(m) => got.push(u32::from_le_bytes(
                m.unwrap().payload[..].try_into().unwrap(),
            )),
            Err(_) => cancelled += 1,
        }
    }
    publisher.await.unwrap();
    assert_eq!(got, (0..n).collect::<Vec<_>>());
    assert!(
        cancelled > 0,
        "no recv was cancelled: the test proves nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recv_waiting_when_the_connection_drops_gets_records_of_the_next() {
    let (fake, client) = setup(Config::default(), fast_reconnect()).await;
    let mut sub = client
        .subscribe("r/#", SubscribeOptions::default())
        .await
        .unwrap();
    let waiting = tokio::spawn(async move {
        let m = sub.recv().await;
        (m, sub)
    });
    tokio::time::sleep(Duration::from_millis(20)).await; // it waits on the first socket
    fake.drop_connections();
    fake.wait_for("re-subscribe", |s| s.subscribes.len() == 2)
        .await;
    client.publish("r/1", b"after").await.unwrap();
    let (m, mut sub) = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the waiting recv was left on the lost connection")
        .unwrap();
    assert_eq!(&m.unwrap().payload[..], b"after");
    // And the next recv reads the new connection.
    client.publish("r/2", b"next").await.unwrap();
    let m = tokio::time::timeout(Duration::from_secs(5), sub.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&m.payload[..], b"next");
}

/// A connection given up for silence (keepalive) is still open when its server speaks
/// again: a `recv` that waited on it must not read it once the client moved on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recv_never_reads_a_connection_the_client_gave_up() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (done, finished) = mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        let mut first = RawConn::accept(&listener);
        let sub_id = first.confirm_subscribe();
        // Silent now: the client's pings go unanswered and it reconnects.
        let mut second = RawConn::accept(&listener);
        assert_eq!(second.confirm_subscribe(), sub_id);
        std::thread::sleep(Duration::from_millis(50));
        // The old connection speaks; its client side may be gone already.
        let _ = first.s.write_all(&deliver(sub_id, "k/x", b"stale"));
        std::thread::sleep(Duration::from_millis(50));
        second
            .s
            .write_all(&deliver(sub_id, "k/x", b"fresh"))
            .unwrap();
        let _ = finished.recv();
    });
    let opts = ClientOptions {
        keepalive: Some(Duration::from_millis(100)),
        ..fast_reconnect()
    };
    let client = Client::connect(&addr, opts).await.unwrap();
    let mut sub = client
        .subscribe("k/#", SubscribeOptions::default())
        .await
        .unwrap();
    // Waits on the first connection's socket from the start.
    let m = tokio::time::timeout(Duration::from_secs(5), sub.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&m.payload[..], b"fresh");
    let more = tokio::time::timeout(Duration::from_millis(200), sub.recv()).await;
    assert!(more.is_err(), "a record came from the given-up connection");
    done.send(()).unwrap();
    server.join().unwrap();
}
