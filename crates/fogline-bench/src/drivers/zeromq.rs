//! ZeroMQ PUB/SUB on the `zmq` crate (libzmq), brokerless.
//!
//! There is no server: each subscriber binds a SUB socket on 127.0.0.1 (an ephemeral port)
//! and each publisher's PUB socket connects to every subscriber bound so far (subscribers are
//! created first). A message is two frames, topic then payload. libzmq's defaults stay:
//! send high-water mark 1,000 messages per subscriber, beyond which PUB drops silently (that
//! is ZeroMQ's loss mode, counted as loss). libzmq sockets block, so each subscriber reads
//! in its own thread and hands messages to the async side through a bounded channel; the
//! receive time is read in that thread, before the hand-off.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::mpsc;

use crate::clock::now_ns;
use crate::driver::{Driver, DriverError, DriverResult, Publisher, Received, Subscriber};

/// ZeroMQ PUB/SUB.
#[derive(Default)]
pub struct ZmqDriver {
    ctx: zmq::Context,
    endpoints: Arc<Mutex<Vec<String>>>,
}

impl ZmqDriver {
    /// A driver with its own libzmq context.
    pub fn new() -> Self {
        Self::default()
    }
}

fn err(e: impl std::fmt::Display) -> DriverError {
    DriverError::connect("zeromq", e)
}

struct ZmqPub {
    sock: zmq::Socket,
    topic: Vec<u8>,
}

#[async_trait]
impl Publisher for ZmqPub {
    async fn send(&mut self, payload: Bytes) -> DriverResult<()> {
        self.sock
            .send(&self.topic[..], zmq::SNDMORE)
            .and_then(|()| self.sock.send(&payload[..], 0))
            .map_err(|e| DriverError::io("zeromq", e))
    }

    async fn flush(&mut self) -> DriverResult<()> {
        // PUB sends from libzmq's I/O thread as soon as possible; nothing is held here.
        Ok(())
    }
}

struct ZmqSub(mpsc::Receiver<DriverResult<Received>>);

#[async_trait]
impl Subscriber for ZmqSub {
    async fn recv(&mut self) -> DriverResult<Option<Received>> {
        self.0.recv().await.transpose()
    }
}

fn read_loop(sock: &zmq::Socket, tx: &mpsc::Sender<DriverResult<Received>>) {
    while !tx.is_closed() {
        match sock.recv_multipart(0) {
            Ok(mut parts) => {
                // Timed here, before the hand-off to the async side.
                let at_ns = now_ns();
                let Some(payload) = parts.pop() else { continue };
                let got = Received {
                    payload: Bytes::from(payload),
                    at_ns,
                };
                if tx.blocking_send(Ok(got)).is_err() {
                    return;
                }
            }
            // The receive timeout lets the thread notice that the subscriber was dropped.
            Err(zmq::Error::EAGAIN) => {}
            Err(e) => {
                let _ = tx.blocking_send(Err(DriverError::io("zeromq", e)));
                return;
            }
        }
    }
}

#[async_trait]
impl Driver for ZmqDriver {
    fn name(&self) -> &'static str {
        "zeromq"
    }

    async fn publisher(&self, topic: &str) -> DriverResult<Box<dyn Publisher>> {
        let sock = self.ctx.socket(zmq::PUB).map_err(err)?;
        sock.set_linger(1000).map_err(err)?;
        let endpoints = self.endpoints.lock().map(|e| e.clone()).unwrap_or_default();
        for ep in endpoints {
            sock.connect(&ep).map_err(err)?;
        }
        Ok(Box::new(ZmqPub {
            sock,
            topic: topic.as_bytes().to_vec(),
        }))
    }

    async fn subscriber(&self, topic: &str) -> DriverResult<Box<dyn Subscriber>> {
        let sock = self.ctx.socket(zmq::SUB).map_err(err)?;
        sock.set_subscribe(topic.as_bytes()).map_err(err)?;
        sock.set_rcvtimeo(100).map_err(err)?;
        sock.bind("tcp://127.0.0.1:*").map_err(err)?;
        let ep = sock
            .get_last_endpoint()
            .map_err(err)?
            .map_err(|_| err("endpoint is not UTF-8"))?;
        if let Ok(mut e) = self.endpoints.lock() {
            e.push(ep);
        }
        let (tx, rx) = mpsc::channel(1024);
        std::thread::Builder::new()
            .name("zmq-sub".into())
            .spawn(move || read_loop(&sock, &tx))
            .map_err(err)?;
        Ok(Box::new(ZmqSub(rx)))
    }
}
