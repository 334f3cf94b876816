//! MQTT 3.1.1 on rumqttc, against Mosquitto (and later fogline's MQTT listener).
//!
//! Volatile: QoS 0 both ways. Persistent: QoS 1 (the broker stores and acknowledges each
//! message; `flush` waits for every PUBACK). Each publisher and subscriber is its own client
//! with its own event-loop task; a subscriber's queue holds 1,024 messages, beyond which the
//! event loop stops reading the socket (TCP back-pressure to the broker, as a slow reader).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use rumqttc::{AsyncClient, Event, EventLoop, MqttOptions, NetworkOptions, Outgoing, Packet, QoS};
use tokio::sync::{mpsc, oneshot, Notify};

use crate::driver::{Driver, DriverError, DriverResult, Durability, Publisher, Subscriber};

const MAX_PACKET: usize = 16 * 1024 * 1024;

static CLIENT_SEQ: AtomicU64 = AtomicU64::new(0);

/// MQTT against a broker.
pub struct MqttDriver {
    name: &'static str,
    host: String,
    port: u16,
    qos: QoS,
}

impl MqttDriver {
    /// A driver for the broker at `addr` (`host:port`), reported as `name`.
    ///
    /// # Errors
    /// When `addr` has no valid port.
    pub fn new(name: &'static str, addr: &str, durability: Durability) -> DriverResult<Self> {
        let (host, port) = addr
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.to_string(), p.parse().ok()?)))
            .ok_or_else(|| DriverError::connect(name, format!("bad address {addr}")))?;
        let qos = match durability {
            Durability::Volatile => QoS::AtMostOnce,
            Durability::Persistent => QoS::AtLeastOnce,
        };
        Ok(Self {
            name,
            host,
            port,
            qos,
        })
    }

    fn client(&self, role: &str) -> (AsyncClient, EventLoop) {
        let id = format!(
            "fb-{role}-{}-{}",
            std::process::id(),
            CLIENT_SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let mut o = MqttOptions::new(id, self.host.clone(), self.port);
        o.set_max_packet_size(MAX_PACKET, MAX_PACKET);
        o.set_keep_alive(Duration::from_secs(30));
        let (client, mut el) = AsyncClient::new(o, 256);
        // Nagle's algorithm would hold small packets (and QoS 1 acks) for up to a delayed-ACK
        // period; every other client here writes immediately.
        let mut net = NetworkOptions::new();
        net.set_tcp_nodelay(true);
        el.set_network_options(net);
        (client, el)
    }
}

#[derive(Default)]
struct PubState {
    /// PUBLISH packets the event loop wrote to the connection.
    written: AtomicU64,
    /// PUBACKs received (QoS 1).
    acked: AtomicU64,
    /// A flush waits on `acks`: the event loop notifies only then (a notification per
    /// message cost the load generator a lock per message).
    waiting: AtomicBool,
    acks: Notify,
    error: Mutex<Option<String>>,
}

impl PubState {
    fn wake_flush(&self) {
        if self.waiting.load(Ordering::SeqCst) {
            self.acks.notify_waiters();
        }
    }
}

/// Marks a flush in progress for as long as it lives.
struct Waiting<'a>(&'a AtomicBool);

impl<'a> Waiting<'a> {
    fn new(flag: &'a AtomicBool) -> Self {
        flag.store(true, Ordering::SeqCst);
        Waiting(flag)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

struct MqttPub {
    name: &'static str,
    client: AsyncClient,
    topic: String,
    qos: QoS,
    sent: u64,
    state: Arc<PubState>,
    task: tokio::task::JoinHandle<()>,
}

impl MqttPub {
    fn failed(&self) -> Option<DriverError> {
        let e = self.state.error.lock().ok()?.clone()?;
        Some(DriverError::io(self.name, e))
    }
}

impl Drop for MqttPub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[async_trait]
impl Publisher for MqttPub {
    async fn send(&mut self, payload: Bytes) -> DriverResult<()> {
        if let Some(e) = self.failed() {
            return Err(e);
        }
        self.client
            .publish_bytes(self.topic.clone(), self.qos, false, payload)
            .await
            .map_err(|e| DriverError::io(self.name, e))?;
        self.sent += 1;
        Ok(())
    }

    async fn flush(&mut self) -> DriverResult<()> {
        // QoS 0: until the event loop wrote every PUBLISH; QoS 1: until every PUBACK came.
        let done = match self.qos {
            QoS::AtMostOnce => &self.state.written,
            _ => &self.state.acked,
        };
        let _waiting = Waiting::new(&self.state.waiting);
        loop {
            let acked = self.state.acks.notified();
            tokio::pin!(acked);
            // Registered (and `waiting` set, SeqCst) before the check; the event loop bumps
            // the count before it reads `waiting`: a notification in between is not lost.
            acked.as_mut().enable();
            if done.load(Ordering::SeqCst) >= self.sent {
                return Ok(());
            }
            if let Some(e) = self.failed() {
                return Err(e);
            }
            // Woken by each write or PUBACK; the timeout re-checks for a dead event loop.
            let _ = tokio::time::timeout(Duration::from_millis(100), acked).await;
        }
    }

    async fn close(&mut self) -> DriverResult<()> {
        self.flush().await?;
        // A clean DISCONNECT makes the event loop write out what it holds before it ends.
        self.client
            .disconnect()
            .await
            .map_err(|e| DriverError::io(self.name, e))?;
        let _ = tokio::time::timeout(Duration::from_secs(2), &mut self.task).await;
        Ok(())
    }
}

struct MqttSub(
    mpsc::Receiver<DriverResult<Bytes>>,
    tokio::task::JoinHandle<()>,
);

impl Drop for MqttSub {
    fn drop(&mut self) {
        self.1.abort();
    }
}

#[async_trait]
impl Subscriber for MqttSub {
    async fn recv(&mut self) -> DriverResult<Option<Bytes>> {
        self.0.recv().await.transpose()
    }
}

#[async_trait]
impl Driver for MqttDriver {
    fn name(&self) -> &'static str {
        self.name
    }

    async fn publisher(&self, topic: &str) -> DriverResult<Box<dyn Publisher>> {
        let (client, mut el) = self.client("pub");
        let state = Arc::new(PubState::default());
        let st = state.clone();
        let (ready_tx, ready_rx) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut ready = Some(ready_tx);
            loop {
                match el.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => {
                        if let Some(r) = ready.take() {
                            let _ = r.send(Ok(()));
                        }
                    }
                    Ok(Event::Incoming(Packet::PubAck(_))) => {
                        st.acked.fetch_add(1, Ordering::SeqCst);
                        st.wake_flush();
                    }
                    Ok(Event::Outgoing(Outgoing::Publish(_))) => {
                        st.written.fetch_add(1, Ordering::SeqCst);
                        st.wake_flush();
                    }
                    Ok(Event::Outgoing(Outgoing::Disconnect)) => return,
                    Ok(_) => {}
                    Err(e) => {
                        if let Some(r) = ready.take() {
                            let _ = r.send(Err(e.to_string()));
                        } else if let Ok(mut g) = st.error.lock() {
                            *g = Some(e.to_string());
                        }
                        st.acks.notify_waiters();
                        return;
                    }
                }
            }
        });
        match ready_rx.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(DriverError::connect(self.name, e)),
            Err(_) => return Err(DriverError::connect(self.name, "event loop ended")),
        }
        Ok(Box::new(MqttPub {
            name: self.name,
            client,
            topic: topic.into(),
            qos: self.qos,
            sent: 0,
            state,
            task,
        }))
    }

    async fn subscriber(&self, topic: &str) -> DriverResult<Box<dyn Subscriber>> {
        let (client, mut el) = self.client("sub");
        let (tx, rx) = mpsc::channel(1024);
        let (ready_tx, ready_rx) = oneshot::channel();
        client
            .subscribe(topic, self.qos)
            .await
            .map_err(|e| DriverError::connect(self.name, e))?;
        let name = self.name;
        let task = tokio::spawn(async move {
            // The client must live as long as its event loop, or the loop sees its requests
            // channel close.
            let _client = client;
            let mut ready = Some(ready_tx);
            loop {
                match el.poll().await {
                    Ok(Event::Incoming(Packet::SubAck(_))) => {
                        if let Some(r) = ready.take() {
                            let _ = r.send(Ok(()));
                        }
                    }
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        if tx.send(Ok(p.payload)).await.is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        match ready.take() {
                            Some(r) => {
                                let _ = r.send(Err(e.to_string()));
                            }
                            None => {
                                let _ = tx.send(Err(DriverError::io(name, e))).await;
                            }
                        }
                        return;
                    }
                }
            }
        });
        match ready_rx.await {
            Ok(Ok(())) => Ok(Box::new(MqttSub(rx, task))),
            Ok(Err(e)) => Err(DriverError::connect(self.name, e)),
            Err(_) => Err(DriverError::connect(self.name, "event loop ended")),
        }
    }
}
