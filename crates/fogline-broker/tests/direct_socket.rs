//! `DirectSocket`: who writes a shared socket. Direct writes happen only while idle; a
//! partial write leaves the rest for the writer, ahead of what the writer holds; a stopped
//! or broken socket takes nothing more.

use std::sync::Arc;

use bytes::BytesMut;
use fogline_broker::{DirectSocket, WriteHalf, Written};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

async fn pair() -> (DirectSocket, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
    let (_rd, wr) = client.unwrap().into_split();
    // The read half may go: the write half keeps the socket open.
    (
        DirectSocket::new(Arc::new(WriteHalf::from(wr))),
        accepted.unwrap().0,
    )
}

fn bytes(b: &[u8]) -> impl FnOnce(&mut BytesMut) -> Result<(), ()> + '_ {
    move |buf| {
        buf.extend_from_slice(b);
        Ok(())
    }
}

async fn read_exact(peer: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut got = vec![0; n];
    peer.read_exact(&mut got).await.unwrap();
    got
}

#[tokio::test]
async fn writes_only_while_idle() {
    let (mut sock, mut peer) = pair().await;
    assert!(!sock.is_idle(), "the writer holds a new socket");
    assert_eq!(sock.write(bytes(b"no")), Written::Declined);
    sock.set_idle();
    assert!(sock.is_idle());
    assert_eq!(sock.write(bytes(b"one")), Written::All);
    assert_eq!(sock.write(bytes(b"two")), Written::All);
    let mut out = BytesMut::new();
    sock.take_back(&mut out);
    assert!(out.is_empty(), "nothing was left over");
    assert_eq!(sock.write(bytes(b"no")), Written::Declined);
    assert_eq!(read_exact(&mut peer, 6).await, b"onetwo");
}

#[tokio::test]
async fn a_failed_encoding_writes_nothing() {
    let (mut sock, mut peer) = pair().await;
    sock.set_idle();
    let failed = sock.write(|buf: &mut BytesMut| {
        buf.extend_from_slice(b"half");
        Err("too large")
    });
    assert_eq!(failed, Written::Declined);
    assert!(sock.is_idle(), "a declined write leaves the socket idle");
    assert_eq!(sock.write(bytes(b"next")), Written::All);
    assert_eq!(read_exact(&mut peer, 4).await, b"next");
}

#[tokio::test]
async fn a_partial_write_goes_before_what_the_writer_holds() {
    let (mut sock, mut peer) = pair().await;
    sock.set_idle();
    // Fill the socket until a write is partial or refused (the peer reads nothing yet).
    let chunk: Vec<u8> = (0..64 << 10).map(|i| (i % 251) as u8).collect();
    let mut sent = Vec::new();
    let last = loop {
        match sock.write(bytes(&chunk)) {
            Written::All => sent.extend_from_slice(&chunk),
            other => break other,
        }
    };
    let mut expect = sent;
    match last {
        Written::Part => {
            assert!(
                !sock.is_idle(),
                "after a partial write the writer must take over"
            );
            assert_eq!(sock.write(bytes(b"no")), Written::Declined);
            // Its head is on the wire, its rest in the spill.
            expect.extend_from_slice(&chunk);
        }
        Written::Declined => assert!(sock.is_idle(), "a full socket declines, stays idle"),
        other => panic!("unexpected {other:?}"),
    }
    expect.extend_from_slice(b"writer's own");
    let mut out = BytesMut::from(&b"writer's own"[..]);
    sock.take_back(&mut out);
    assert!(!sock.is_idle());
    // The peer sees the direct writes, then `out` as the writer will send it.
    let wire_len = expect.len() - out.len();
    let got = read_exact(&mut peer, wire_len).await;
    assert_eq!(got, expect[..wire_len]);
    assert_eq!(out[..], expect[wire_len..]);
}

#[tokio::test]
async fn stop_and_broken_socket_take_nothing() {
    let (mut sock, peer) = pair().await;
    sock.set_idle();
    sock.stop();
    assert!(!sock.is_idle());
    assert_eq!(sock.write(bytes(b"no")), Written::Declined);
    drop(peer);

    let (mut sock, peer) = pair().await;
    sock.set_idle();
    // A reset peer: the first write after it may still succeed, a later one fails.
    peer.set_zero_linger().unwrap();
    drop(peer);
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let mut last = Written::All;
    for _ in 0..100 {
        last = sock.write(bytes(b"x"));
        if last != Written::All {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    assert_eq!(last, Written::Broken);
    assert!(!sock.is_idle(), "a broken socket goes back to its writer");
    assert!(last.wake_writer() && !last.delivered());
}
