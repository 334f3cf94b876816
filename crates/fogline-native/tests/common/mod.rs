//! Integration-test harness: a real broker and native listener on 127.0.0.1:0
//! and a raw protocol client that speaks frames directly (so tests can also send
//! malformed bytes).
#![allow(dead_code)]

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use fogline_native::{NativeConfig, NativeServer};
use fogline_wire::{Frame, RecordBlock, StartPosition};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// What a test server is configured with: the native listener (`server`, as the section
/// was called before `[native]`) and the broker.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub server: NativeConfig,
    pub broker: fogline_broker::BrokerConfig,
}

/// How long a test waits for an expected frame.
pub const WAIT: Duration = Duration::from_secs(10);

pub struct TestServer {
    pub addr: String,
    pub broker: fogline_broker::Broker,
    pub dir: tempfile::TempDir,
    stop: Option<watch::Sender<bool>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TestServer {
    /// Starts a server in memory mode; `tune` adjusts the config first.
    pub async fn start(tune: impl FnOnce(&mut Config)) -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cfg = Config::default();
        cfg.server.listen = vec!["127.0.0.1:0".into()];
        cfg.broker.data_dir = dir.path().to_path_buf();
        cfg.broker.storage = fogline_broker::StorageMode::Memory;
        tune(&mut cfg);
        // A server stopped just before may still be releasing its logs'
        // directory locks (its last tasks end asynchronously): retry briefly.
        let deadline = tokio::time::Instant::now() + WAIT;
        let broker = loop {
            match fogline_broker::Broker::open(cfg.broker.clone()) {
                Ok((b, _)) => break b,
                Err(fogline_broker::BrokerError::Storage {
                    source: fogline_log::LogError::Locked(_),
                    ..
                }) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("broker opens: {e}"),
            }
        };
        let server = NativeServer::bind(cfg.server, broker.clone())
            .await
            .expect("server binds");
        let addr = server.local_addrs()[0].clone();
        let (tx, rx) = watch::channel(false);
        let task = tokio::spawn(server.run(rx));
        TestServer {
            addr,
            broker,
            dir,
            stop: Some(tx),
            task: Some(task),
        }
    }

    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            tx.send_replace(true);
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
        // As the node does when it stops: the consumers' last positions reach the disk.
        let broker = self.broker.clone();
        let _ = tokio::task::spawn_blocking(move || broker.sync_positions()).await;
    }
}

/// A raw protocol connection.
pub struct Raw {
    pub sock: TcpStream,
    buf: BytesMut,
    /// Frames read while waiting for an ack, returned before anything new.
    held: std::collections::VecDeque<Frame>,
}

impl Raw {
    /// Connects without saying Hello.
    pub async fn connect_bare(addr: &str) -> Raw {
        let sock = TcpStream::connect(addr).await.expect("connect");
        Raw::bare(sock)
    }

    fn bare(sock: TcpStream) -> Raw {
        sock.set_nodelay(true).expect("nodelay");
        Raw {
            sock,
            buf: BytesMut::new(),
            held: Default::default(),
        }
    }

    /// Connects and completes the Hello exchange.
    pub async fn connect(addr: &str) -> Raw {
        let sock = TcpStream::connect(addr).await.expect("connect");
        Raw::hello(sock).await
    }

    /// Completes the Hello exchange on a socket connected to the server.
    pub async fn hello(sock: TcpStream) -> Raw {
        let mut raw = Raw::bare(sock);
        raw.send(&Frame::Hello {
            version: fogline_wire::PROTOCOL_VERSION,
            client_name: "test".into(),
            credentials: None,
        })
        .await;
        match raw.recv().await {
            Frame::HelloOk { .. } => raw,
            other => panic!("expected HelloOk, got {other:?}"),
        }
    }

    pub async fn send(&mut self, frame: &Frame) {
        let mut b = BytesMut::new();
        fogline_wire::encode(frame, &mut b).expect("encodes");
        self.sock.write_all(&b).await.expect("write");
    }

    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        self.sock.write_all(bytes).await.expect("write");
    }

    /// The next frame, or None when the server closed the connection or
    /// nothing came within `wait`.
    pub async fn recv_within(&mut self, wait: Duration) -> Option<Frame> {
        if let Some(f) = self.held.pop_front() {
            return Some(f);
        }
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(f) =
                fogline_wire::decode(&mut self.buf, u32::MAX).expect("server sends valid frames")
            {
                return Some(f);
            }
            let read = tokio::time::timeout_at(deadline, self.sock.read_buf(&mut self.buf)).await;
            match read {
                Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return None,
                Ok(Ok(_)) => {}
            }
        }
    }

    pub async fn recv(&mut self) -> Frame {
        self.recv_within(WAIT)
            .await
            .expect("a frame before the timeout")
    }

    /// Skips frames until one matches.
    pub async fn recv_until(&mut self, mut pred: impl FnMut(&Frame) -> bool) -> Frame {
        loop {
            let f = self.recv().await;
            if pred(&f) {
                return f;
            }
        }
    }

    /// True when the server closes the connection within `WAIT`
    /// (frames before the close are returned for inspection).
    pub async fn closed(&mut self) -> Vec<Frame> {
        let mut seen = Vec::new();
        while let Some(f) = self.recv_within(WAIT).await {
            seen.push(f);
            if seen.len() > 100_000 {
                panic!("connection not closed");
            }
        }
        seen
    }

    pub async fn publish(&mut self, topic: &str, payloads: &[&[u8]], request_id: u64, flags: u8) {
        let records = RecordBlock::from_records(payloads.iter().map(|p| (0u64, &b""[..], *p)))
            .expect("block");
        self.send(&Frame::Publish {
            request_id,
            flags,
            topic: topic.into(),
            records,
        })
        .await;
    }

    /// Publishes with an ack and waits for it.
    /// Deliveries may come before the ack (the server may write them on the publisher's
    /// task); they are kept for the next `recv`.
    pub async fn publish_acked(&mut self, topic: &str, payloads: &[&[u8]], request_id: u64) {
        self.publish(topic, payloads, request_id, 0).await;
        let mut other = Vec::new();
        let ack = loop {
            let f = self.recv().await;
            if matches!(f, Frame::PubAck { .. } | Frame::Error { .. }) {
                break f;
            }
            other.push(f);
        };
        for f in other.into_iter().rev() {
            self.held.push_front(f);
        }
        match ack {
            Frame::PubAck {
                request_id: r,
                count,
            } => {
                assert_eq!(r, request_id);
                assert_eq!(count as usize, payloads.len());
            }
            other => panic!("expected PubAck, got {other:?}"),
        }
    }

    pub async fn subscribe(&mut self, sub_id: u32, filter: &str, flags: u8) {
        self.send(&Frame::Subscribe {
            sub_id,
            flags,
            filter: filter.into(),
        })
        .await;
        match self
            .recv_until(|f| matches!(f, Frame::SubOk { .. } | Frame::Error { .. }))
            .await
        {
            Frame::SubOk { sub_id: s } => assert_eq!(s, sub_id),
            other => panic!("expected SubOk, got {other:?}"),
        }
    }

    /// Opens a consumer; returns its id and next offset.
    pub async fn consumer(
        &mut self,
        stream: &str,
        name: &str,
        start: StartPosition,
        ack_timeout_ms: u32,
        push_credit: u32,
    ) -> (u32, u64) {
        self.send(&Frame::ConsumerOpen {
            request_id: 77,
            stream: stream.into(),
            name: name.into(),
            filter: "".into(),
            start,
            ack_timeout_ms,
            max_inflight: 1000,
            push_credit,
        })
        .await;
        match self
            .recv_until(|f| matches!(f, Frame::ConsumerOk { .. } | Frame::Error { .. }))
            .await
        {
            Frame::ConsumerOk {
                consumer_id,
                next_offset,
                ..
            } => (consumer_id, next_offset),
            other => panic!("expected ConsumerOk, got {other:?}"),
        }
    }

    /// Fetches; returns (offset, delivery_count, payload) triples.
    pub async fn fetch(
        &mut self,
        consumer_id: u32,
        max: u32,
        wait_ms: u32,
    ) -> Vec<(u64, u16, Bytes)> {
        self.send(&Frame::Fetch {
            consumer_id,
            max_records: max,
            max_wait_ms: wait_ms,
        })
        .await;
        match self
            .recv_until(|f| matches!(f, Frame::Records { .. } | Frame::Error { .. }))
            .await
        {
            Frame::Records { records, .. } => records
                .iter()
                .map(|r| (r.offset, r.delivery_count, r.payload.clone()))
                .collect(),
            other => panic!("expected Records, got {other:?}"),
        }
    }
}

/// Payloads of the records of every Deliver frame in `frames` for `sub_id`.
pub fn delivered(frames: &[Frame], sub_id: u32) -> Vec<Bytes> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Deliver {
                sub_id: s, records, ..
            } if *s == sub_id => Some(records.iter().map(|r| r.payload).collect::<Vec<_>>()),
            _ => None,
        })
        .flatten()
        .collect()
}

/// Reads Deliver frames until `n` records arrived for `sub_id`.
pub async fn collect(raw: &mut Raw, sub_id: u32, n: usize) -> Vec<Bytes> {
    let mut got = Vec::new();
    while got.len() < n {
        let f = raw.recv().await;
        got.extend(delivered(std::slice::from_ref(&f), sub_id));
    }
    got
}
