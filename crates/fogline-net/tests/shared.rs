//! One socket, two writers taking turns: the writer task through `SharedWrite`, a direct
//! writer through `try_write`; the peer reads both in order, then end of stream.

use std::sync::Arc;

use fogline_net::{SharedWrite, WriteHalf};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn turns(w: Arc<WriteHalf>, mut peer: impl AsyncReadExt + Unpin + Send + 'static) {
    let mut task = SharedWrite(w.clone());
    let big: Vec<u8> = (0..1 << 20).map(|i| (i % 253) as u8).collect();
    // Larger than any socket buffer: the writer task must wait for the peer.
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        peer.read_to_end(&mut got).await.unwrap();
        got
    });
    task.write_all(&big).await.unwrap();
    // The socket may still be full of `big`: retry until the peer has made room, and let
    // the writer task finish what a direct write could not.
    let sent = loop {
        match w.try_write(b"direct") {
            Ok(k) => break k,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => tokio::task::yield_now().await,
            Err(e) => panic!("{e}"),
        }
    };
    task.write_all(&b"direct"[sent..]).await.unwrap();
    let io = [
        std::io::IoSlice::new(b"gath"),
        std::io::IoSlice::new(b"ered"),
    ];
    let sent = loop {
        match w.try_write_vectored(&io) {
            Ok(k) => break k,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => tokio::task::yield_now().await,
            Err(e) => panic!("{e}"),
        }
    };
    task.write_all(&b"gathered"[sent..]).await.unwrap();
    task.write_all(b"tail").await.unwrap();
    task.shutdown().await.unwrap();
    // Shutting down twice is harmless.
    w.shutdown().unwrap();
    let got = reader.await.unwrap();
    let mut expect = big;
    expect.extend_from_slice(b"directgatheredtail");
    assert_eq!(got.len(), expect.len());
    assert!(got == expect, "bytes arrive in write order");
}

#[tokio::test]
async fn tcp_turns() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (client, accepted) = tokio::join!(tokio::net::TcpStream::connect(addr), listener.accept());
    let (_rd, wr) = client.unwrap().into_split();
    turns(Arc::new(WriteHalf::from(wr)), accepted.unwrap().0).await;
}

#[cfg(unix)]
#[tokio::test]
async fn unix_turns() {
    let (a, b) = tokio::net::UnixStream::pair().unwrap();
    let (_rd, wr) = a.into_split();
    turns(Arc::new(WriteHalf::from(wr)), b).await;
}
