//! Direct writes: a record published while the writer is idle is written by its publisher.
//! A burst after it batches; what a direct write could not send goes out first, in order.

use std::time::Duration;

use bytes::BytesMut;
use fogline_client::{Client, ClientError, ClientOptions, PublishRecord, Reconnect};
use fogline_wire::{decode, encode, Frame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::fake::Config;
use crate::setup;

#[tokio::test]
async fn a_burst_after_a_direct_write_is_batched() {
    // One thread: the writer runs only when the publisher yields (at the flush).
    let (fake, client) = setup(Config::default(), ClientOptions::default()).await;
    // Let the new connection's writer run once: it lends the socket when it finds nothing.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let n = 100;
    for i in 0..n {
        client.publish("burst/t", format!("r{i}")).await.unwrap();
    }
    client.flush().await.unwrap();
    let stats = fake.wait_for("all records", |s| s.records == n).await;
    // The first record went out at once, by itself; the woken writer sent the rest in one.
    assert_eq!(stats.publish_frames, 2);
}

#[tokio::test]
async fn a_sustained_burst_does_not_write_directly_each_round() {
    let (fake, client) = setup(Config::default(), ClientOptions::default()).await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    // A publisher that yields every 100 records, as one does when its coop budget runs out.
    let rounds = 10;
    for r in 0..rounds {
        for i in 0..100 {
            client.publish("burst/t", format!("{r}-{i}")).await.unwrap();
        }
        tokio::task::yield_now().await;
    }
    client.flush().await.unwrap();
    let stats = fake
        .wait_for("all records", |s| s.records == rounds * 100)
        .await;
    // One direct write, then one frame per round. A writer that lent its socket between
    // rounds would add a one-record frame (and a system call) to every round.
    assert!(
        stats.publish_frames <= 1 + rounds,
        "{} frames for {rounds} rounds",
        stats.publish_frames
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acked_and_tracked_records_written_directly_are_acknowledged() {
    let (fake, client) = setup(Config::default(), ClientOptions::default()).await;
    for i in 0..50 {
        // Spaced out, so the writer is idle and lends its socket before each one.
        tokio::time::sleep(Duration::from_millis(2)).await;
        let rec = PublishRecord::new("acked/t", format!("a{i}"));
        client.publish_acked(&rec).await.unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
        client
            .publish_tracked(&PublishRecord::new("acked/t", format!("t{i}")))
            .await
            .unwrap();
        client.flush().await.unwrap();
    }
    let stats = fake.wait_for("all records", |s| s.records == 100).await;
    assert_eq!(stats.publish_frames, 100, "each record was sent by itself");
}

/// Accepts one connection and completes the handshake; then reads nothing until told to.
async fn accept_stalled(listener: &TcpListener, max: u32) -> TcpStream {
    let (mut s, _) = listener.accept().await.unwrap();
    let mut buf = BytesMut::new();
    loop {
        if let Some(Frame::Hello { .. }) = decode(&mut buf, 1 << 20).unwrap() {
            break;
        }
        assert!(s.read_buf(&mut buf).await.unwrap() > 0);
    }
    assert!(buf.is_empty(), "nothing after the Hello yet");
    let mut out = BytesMut::new();
    let ok = Frame::HelloOk {
        version: 1,
        server_name: "stalled".into(),
        max_message: max,
        max_frame: max + 4096,
    };
    encode(&ok, &mut out).unwrap();
    s.write_all(&out).await.unwrap();
    s
}

async fn stalled_server(max: u32) -> (String, tokio::task::JoinHandle<TcpStream>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let task = tokio::spawn(async move { accept_stalled(&listener, max).await });
    (addr, task)
}

#[tokio::test]
async fn a_carry_never_reaches_the_next_connection() {
    let big = 8 << 20;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let opts = ClientOptions {
        reconnect: Some(Reconnect {
            initial: Duration::from_millis(5),
            max: Duration::from_millis(20),
            max_attempts: None,
        }),
        ..ClientOptions::default()
    };
    let (client, first) = tokio::join!(
        Client::connect(&addr, opts),
        accept_stalled(&listener, big + 1024)
    );
    let client = client.unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await; // the writer lends the socket
    let payload = vec![7u8; big as usize];
    // Written directly in part; the rest waits in the carry (the server reads nothing).
    let acked = client
        .send_acked(&PublishRecord::new("t/big", payload))
        .await
        .unwrap();
    drop(first); // the connection is lost with the carry pending
    assert!(
        matches!(acked.await, Err(ClientError::Disconnected)),
        "a record that was partly sent is not known to be stored"
    );
    let mut second = accept_stalled(&listener, big + 1024).await;
    client.publish("t/after", b"x").await.unwrap();
    client.flush().await.unwrap();
    // The new connection starts with whole frames: no rest of the old record.
    let mut buf = BytesMut::new();
    loop {
        match decode(&mut buf, big + 8192).unwrap() {
            Some(Frame::Publish { topic, records, .. }) => {
                assert_eq!(topic.as_str(), "t/after");
                assert_eq!(records.iter().next().unwrap().payload, &b"x"[..]);
                break;
            }
            Some(Frame::Subscribe { .. }) | Some(Frame::Ping { .. }) => {}
            Some(other) => panic!("unexpected frame {:#x}", other.kind()),
            None => assert!(second.read_buf(&mut buf).await.unwrap() > 0),
        }
    }
}

#[tokio::test]
async fn a_partial_direct_write_goes_first_and_whole() {
    let big = 8 << 20;
    let (addr, server) = stalled_server(big as u32 + 1024).await;
    let client = Client::connect(&addr, ClientOptions::default())
        .await
        .unwrap();
    let mut stream = server.await.unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await; // the writer lends the socket
                                                         // Larger than the socket buffers: the direct write sends a part, the writer the rest.
    let payload: Vec<u8> = (0..big).map(|i| (i % 251) as u8).collect();
    client.publish("t/big", &payload).await.unwrap();
    for i in 0..3 {
        client.publish("t/small", format!("s{i}")).await.unwrap();
    }
    let flushed = tokio::spawn({
        let client = client.clone();
        async move { client.flush().await }
    });
    let mut buf = BytesMut::new();
    let mut got: Vec<(String, Vec<u8>)> = Vec::new();
    while got.len() < 4 {
        match decode(&mut buf, big as u32 + 8192).unwrap() {
            Some(Frame::Publish { topic, records, .. }) => {
                for r in records.iter() {
                    got.push((topic.to_string(), r.payload.to_vec()));
                }
            }
            Some(other) => panic!("unexpected frame {:#x}", other.kind()),
            None => assert!(stream.read_buf(&mut buf).await.unwrap() > 0),
        }
    }
    flushed.await.unwrap().unwrap();
    assert_eq!(got[0].0, "t/big");
    assert!(got[0].1 == payload, "the large record arrives intact");
    let small: Vec<_> = got[1..]
        .iter()
        .map(|(t, p)| (t.as_str(), p.as_slice()))
        .collect();
    assert_eq!(
        small,
        [
            ("t/small", &b"s0"[..]),
            ("t/small", &b"s1"[..]),
            ("t/small", &b"s2"[..])
        ]
    );
}
