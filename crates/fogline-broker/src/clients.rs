//! The connections of a node, whatever protocol they speak: who is connected, from where,
//! and how many records and bytes each has moved.
//!
//! A front end registers each connection ([`Broker::register_client`](crate::Broker)) and
//! holds the returned [`ClientHandle`] while it lives; dropping it unregisters the connection
//! and folds its counters into its protocol's totals, so the totals never go back. The hot
//! path touches only the connection's own counters (relaxed atomic adds, one per batch): no
//! shared cache line between connections, no lock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

/// How a client reaches the broker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// fogline's native protocol (TCP or Unix socket).
    Native,
    /// MQTT 3.1.1 or 5.0 over TCP.
    Mqtt,
    /// MQTT over WebSocket.
    MqttWs,
    /// A component inside the node, on the in-process link.
    Link,
}

impl Protocol {
    /// Every protocol, in a fixed order.
    pub const ALL: [Protocol; 4] = [
        Protocol::Native,
        Protocol::Mqtt,
        Protocol::MqttWs,
        Protocol::Link,
    ];

    /// The name used in the admin API and as a metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Native => "native",
            Protocol::Mqtt => "mqtt",
            Protocol::MqttWs => "mqtt-ws",
            Protocol::Link => "link",
        }
    }
}

/// Records and bytes moved, in and out.
#[derive(Debug, Default)]
pub struct Traffic {
    records_in: AtomicU64,
    bytes_in: AtomicU64,
    records_out: AtomicU64,
    bytes_out: AtomicU64,
}

/// A copy of [`Traffic`] at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrafficSnapshot {
    /// Records received from the client (published).
    pub records_in: u64,
    /// Their bytes.
    pub bytes_in: u64,
    /// Records sent to the client (live deliveries and consumer records).
    pub records_out: u64,
    /// Their bytes.
    pub bytes_out: u64,
}

impl Traffic {
    fn snapshot(&self) -> TrafficSnapshot {
        TrafficSnapshot {
            records_in: self.records_in.load(Relaxed),
            bytes_in: self.bytes_in.load(Relaxed),
            records_out: self.records_out.load(Relaxed),
            bytes_out: self.bytes_out.load(Relaxed),
        }
    }

    fn add(&self, t: &TrafficSnapshot) {
        self.records_in.fetch_add(t.records_in, Relaxed);
        self.bytes_in.fetch_add(t.bytes_in, Relaxed);
        self.records_out.fetch_add(t.records_out, Relaxed);
        self.bytes_out.fetch_add(t.bytes_out, Relaxed);
    }
}

impl std::ops::AddAssign for TrafficSnapshot {
    fn add_assign(&mut self, o: TrafficSnapshot) {
        self.records_in += o.records_in;
        self.bytes_in += o.bytes_in;
        self.records_out += o.records_out;
        self.bytes_out += o.bytes_out;
    }
}

/// One registered connection.
#[derive(Debug)]
pub struct Client {
    id: u64,
    protocol: Protocol,
    addr: String,
    connected_at_us: u64,
    /// The client's own name for itself (MQTT client id, native Hello's client name, a
    /// component's name), once known.
    name: OnceLock<String>,
    /// The origin its publishes and subscriptions carry, when not `id` (an MQTT session
    /// outlives its connections and keeps one origin).
    origin: AtomicU64,
    traffic: Traffic,
    /// Bytes the front end holds for this client beyond its subscription queues (encoded
    /// replies or packets not yet written).
    pending_out: AtomicU64,
}

impl Client {
    /// Its broker-wide id (also the default origin of what it publishes).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The peer's address.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Sets the client's name, once (later calls are ignored).
    pub fn set_name(&self, name: &str) {
        let _ = self.name.set(name.to_string());
    }

    /// Sets the origin its publishes and subscriptions carry.
    pub fn set_origin(&self, origin: u64) {
        self.origin.store(origin, Relaxed);
    }

    /// Counts records received from the client.
    #[inline]
    pub fn count_in(&self, records: u64, bytes: u64) {
        self.traffic.records_in.fetch_add(records, Relaxed);
        self.traffic.bytes_in.fetch_add(bytes, Relaxed);
    }

    /// Counts records sent to the client.
    #[inline]
    pub fn count_out(&self, records: u64, bytes: u64) {
        self.traffic.records_out.fetch_add(records, Relaxed);
        self.traffic.bytes_out.fetch_add(bytes, Relaxed);
    }

    /// Reports the bytes the front end holds unsent for this client.
    #[inline]
    pub fn set_pending_out(&self, bytes: usize) {
        self.pending_out.store(bytes as u64, Relaxed);
    }
}

/// What the admin API shows of one connection.
#[derive(Clone, Debug)]
pub struct ClientInfo {
    /// Broker-wide id.
    pub id: u64,
    /// How it is connected.
    pub protocol: Protocol,
    /// The peer's address (`HOST:PORT`, `unix:PATH`, or a component's name for the link).
    pub addr: String,
    /// Its own name (MQTT client id, native client name), if it gave one.
    pub name: Option<String>,
    /// The origin its publishes and subscriptions carry.
    pub origin: u64,
    /// When it connected, microseconds since the UNIX epoch.
    pub connected_at_us: u64,
    /// What it moved.
    pub traffic: TrafficSnapshot,
    /// Bytes the front end holds unsent for it (its subscription queues not included).
    pub pending_out: u64,
}

/// Removes its connection from the registry when dropped; derefs to the [`Client`].
#[derive(Debug)]
pub struct ClientHandle {
    client: Arc<Client>,
    clients: Arc<Clients>,
}

impl std::ops::Deref for ClientHandle {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

impl Drop for ClientHandle {
    fn drop(&mut self) {
        self.clients.remove(&self.client);
    }
}

/// The registry.
#[derive(Debug, Default)]
pub struct Clients {
    live: Mutex<HashMap<u64, Arc<Client>>>,
    /// Traffic of connections that have closed, per protocol (index of [`Protocol::ALL`]).
    closed: [Traffic; Protocol::ALL.len()],
    /// Connections accepted so far, per protocol.
    accepted: [AtomicU64; Protocol::ALL.len()],
    /// Connections ended so far, all protocols.
    ended: AtomicU64,
}

fn slot(p: Protocol) -> usize {
    Protocol::ALL.iter().position(|&q| q == p).unwrap_or(0)
}

impl Clients {
    pub(crate) fn register(
        self: &Arc<Self>,
        id: u64,
        protocol: Protocol,
        addr: String,
    ) -> ClientHandle {
        let client = Arc::new(Client {
            id,
            protocol,
            addr,
            connected_at_us: crate::batch::now_micros(),
            name: OnceLock::new(),
            origin: AtomicU64::new(id),
            traffic: Traffic::default(),
            pending_out: AtomicU64::new(0),
        });
        self.live.lock().insert(id, client.clone());
        self.accepted[slot(protocol)].fetch_add(1, Relaxed);
        ClientHandle {
            client,
            clients: self.clone(),
        }
    }

    fn remove(&self, client: &Client) {
        // Folded in under the lock, so a reader of live + closed never counts it twice.
        let mut live = self.live.lock();
        live.remove(&client.id);
        self.closed[slot(client.protocol)].add(&client.traffic.snapshot());
        self.ended.fetch_add(1, Relaxed);
    }

    /// Every live connection.
    pub fn list(&self) -> Vec<ClientInfo> {
        let live = self.live.lock();
        let mut out: Vec<ClientInfo> = live
            .values()
            .map(|c| ClientInfo {
                id: c.id,
                protocol: c.protocol,
                addr: c.addr.clone(),
                name: c.name.get().cloned(),
                origin: c.origin.load(Relaxed),
                connected_at_us: c.connected_at_us,
                traffic: c.traffic.snapshot(),
                pending_out: c.pending_out.load(Relaxed),
            })
            .collect();
        drop(live);
        out.sort_by_key(|c| c.id);
        out
    }

    /// Live connections of `protocol`.
    pub fn count(&self, protocol: Protocol) -> usize {
        self.live
            .lock()
            .values()
            .filter(|c| c.protocol == protocol)
            .count()
    }

    /// Connections of `protocol` accepted since the node started.
    pub fn accepted(&self, protocol: Protocol) -> u64 {
        self.accepted[slot(protocol)].load(Relaxed)
    }

    /// Connections of any protocol that have ended since the node started (what the node's
    /// memory task watches: freed memory is worth handing back after many of them).
    pub fn ended(&self) -> u64 {
        self.ended.load(Relaxed)
    }

    /// Everything `protocol`'s connections moved since the node started, closed ones too.
    pub fn traffic(&self, protocol: Protocol) -> TrafficSnapshot {
        let live = self.live.lock();
        let mut t = self.closed[slot(protocol)].snapshot();
        for c in live.values().filter(|c| c.protocol == protocol) {
            t += c.traffic.snapshot();
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_keep_what_closed_connections_moved() {
        let clients = Arc::new(Clients::default());
        let a = clients.register(1, Protocol::Native, "127.0.0.1:1".into());
        let b = clients.register(2, Protocol::Mqtt, "127.0.0.1:2".into());
        a.count_in(10, 100);
        a.count_out(3, 30);
        b.count_in(1, 5);
        b.set_name("sensor-1");
        assert_eq!(clients.count(Protocol::Native), 1);
        assert_eq!(clients.list()[1].name.as_deref(), Some("sensor-1"));
        assert_eq!(clients.ended(), 0);
        drop(a);
        assert_eq!(clients.ended(), 1);
        assert_eq!(clients.count(Protocol::Native), 0);
        let t = clients.traffic(Protocol::Native);
        assert_eq!((t.records_in, t.bytes_in, t.records_out), (10, 100, 3));
        assert_eq!(clients.traffic(Protocol::Mqtt).records_in, 1);
        assert_eq!(clients.accepted(Protocol::Native), 1);
        assert_eq!(clients.list().len(), 1);
    }
}
