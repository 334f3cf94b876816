//! The bridge's task: one MQTT session at a time with the remote broker, a fresh client for
//! each (the stream, not the client, keeps what is not acknowledged), and between sessions a
//! backoff up to `retry_max`. See the [module docs](super).
//!
//! Two files in `<data_dir>/.bridge`: `<name>.pos`, the position (every record before it
//! was acknowledged by the remote or is not for it), saved every second and at stop; and
//! `<name>.sent`, a mark written before any record at or past it is sent, so that after
//! kill -9 the records sent again below it are counted as possible duplicates (at most
//! `max_inflight` more than were really sent).

use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fogline_broker::link::{Link, PublishOptions};
use fogline_broker::{Broker, BrokerError, Stream};
use rumqttc::v5::mqttbytes::v5::{
    ConnAck, Filter, PubAckReason, Publish, RetainForwardRule, SubscribeReasonCode,
};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, EventLoop, Incoming, MqttOptions};
use rumqttc::{Outgoing, Transport};
use tokio::sync::{mpsc, watch};

use super::convert::{came_from, headers_in, properties_out};
use super::tls::{Session, TlsRelay};
use super::topic::Topics;
use super::window::{Sent, Window};
use crate::config::MqttConfig;
use crate::position::Position;
use crate::status::{BridgeStatus, Kind, State};
use crate::stream;

/// How often the position is saved while records flow.
const SAVE_EVERY: Duration = Duration::from_secs(1);
/// How often the lag is measured, and the longest sleep of the task.
const TICK: Duration = Duration::from_millis(500);
/// Longest wait for the TCP connection and the CONNACK, seconds.
const CONNECT_TIMEOUT_S: u64 = 10;
/// How long a stopping bridge waits for its DISCONNECT to be written.
const STOP_GRACE: Duration = Duration::from_secs(1);
/// Most payload bytes read from the stream at once.
const READ_BYTES: usize = 1 << 20;
/// MQTT's largest packet.
const MQTT_MAX_PACKET: u64 = 268_435_455;

/// A connection to another MQTT broker. See the [module docs](super).
pub struct MqttBridge {
    cfg: MqttConfig,
    topics: Topics,
    client_id: String,
    link: Link,
    status: Arc<BridgeStatus>,
    position: Position,
    sent_mark: Position,
    /// Every record before it is done (acknowledged by the remote or not for it).
    cursor: u64,
    /// Records before it may be at the remote already: sending one is a possible duplicate.
    resend_below: u64,
    /// The saved sent mark: a record at or past it moves it before it is sent.
    mark: u64,
    /// Past the newest record handed to a client by this process.
    sent_until: u64,
    /// With `bridge_cafile`: TLS to the remote, run by the bridge (see `tls`).
    tls: Option<TlsRelay>,
}

/// Why a session ended.
enum End {
    Stopped,
    Failed(String),
}

/// Ends the client's event loop task with the session.
struct Poller(tokio::task::JoinHandle<()>);

impl Drop for Poller {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs the client's event loop (not cancel-safe, so it has a task of its own) until its
/// first error, which ends the session.
async fn poll(
    mut el: EventLoop,
    tx: mpsc::UnboundedSender<Result<Event, String>>,
    queued: Arc<std::sync::atomic::AtomicUsize>,
    status: Arc<BridgeStatus>,
) {
    let mut dropped_since_log = 0u64;
    loop {
        let ev = el.poll().await.map_err(|e| e.to_string());
        // QoS 0 messages in are the one flow no receive maximum bounds: past QUEUED_QOS0
        // waiting for the bridge, more are dropped (at most once is their contract).
        if let Ok(Event::Incoming(Incoming::Publish(p))) = &ev {
            if p.qos == QoS::AtMostOnce && queued.load(Relaxed) >= QUEUED_QOS0 {
                status.dropped.fetch_add(1, Relaxed);
                if dropped_since_log == 0 {
                    tracing::warn!(bridge = %status.name, queued = QUEUED_QOS0, "MQTT bridge: the remote sends QoS 0 faster than they are stored: dropping them (counted in dropped)");
                }
                dropped_since_log += 1;
                continue;
            }
        }
        dropped_since_log = 0;
        let last = ev.is_err();
        queued.fetch_add(1, Relaxed);
        if tx.send(ev).is_err() || last {
            return;
        }
    }
}

/// Events waiting for the bridge past which a QoS 0 message in is dropped.
const QUEUED_QOS0: usize = 10_000;

fn qos(level: u8) -> QoS {
    // QoS 2 is carried as QoS 1 (module docs).
    if level == 0 {
        QoS::AtMostOnce
    } else {
        QoS::AtLeastOnce
    }
}

impl MqttBridge {
    /// The bridge `name` of `cfg` (checked by `BridgeConfig::check`) for `node`, resuming
    /// from its files in `dir` (none: a node that keeps no files starts as configured).
    ///
    /// # Errors
    /// Its stream does not exist, its files cannot be read, or its TLS files cannot be
    /// loaded.
    pub fn new(
        name: &str,
        cfg: MqttConfig,
        node: &str,
        broker: &Broker,
        dir: Option<PathBuf>,
    ) -> Result<Self, String> {
        let topics = Topics::parse(&cfg.topics).map_err(|e| format!("bridge {name:?}: {e}"))?;
        let scheme = if cfg.tls() { "mqtts" } else { "mqtt" };
        let status = BridgeStatus::new(name, Kind::Mqtt, format!("{scheme} {}", cfg.address));
        let file = |ext: &str| dir.as_ref().map(|d| d.join(format!("{name}.{ext}")));
        let mut position = Position::new(file("pos"));
        let sent_mark = Position::new(file("sent"));
        let (mut cursor, mut mark) = (0, 0);
        if let Some(stream_name) = cfg.stream.as_deref().filter(|_| topics.any_out()) {
            let stream = broker.stream(stream_name).ok_or_else(|| {
                format!(
                    "bridge {name:?}: stream {stream_name:?} does not exist (create it in [broker] streams)"
                )
            })?;
            let ctx = |e: String| format!("bridge {name:?}: {e}");
            cursor = position
                .resume(stream_name, cfg.start, stream.bounds())
                .map_err(ctx)?;
            mark = sent_mark.load(stream_name).map_err(ctx)?.unwrap_or(cursor);
        }
        let tls = cfg
            .bridge_cafile
            .as_deref()
            .map(|cafile| TlsRelay::new(&cfg, cafile))
            .transpose()
            .map_err(|e| format!("bridge {name:?}: TLS: {e}"))?;
        let client_id = cfg
            .remote_clientid
            .clone()
            .unwrap_or_else(|| format!("fogline-{node}-{name}"));
        Ok(MqttBridge {
            topics,
            client_id,
            link: broker.link(&format!("bridge {name}")),
            status,
            position,
            sent_mark,
            cursor,
            resend_below: mark.max(cursor),
            mark: mark.max(cursor),
            sent_until: 0,
            tls,
            cfg,
        })
    }

    /// Its status, for the API and metrics.
    pub fn status(&self) -> Arc<BridgeStatus> {
        self.status.clone()
    }

    /// Carries records both ways until `stop` turns true, connecting again after every
    /// failure.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut wait = Duration::from_millis(100);
        loop {
            let started = Instant::now();
            match self.session(&mut stop).await {
                End::Stopped => break,
                End::Failed(e) => {
                    tracing::warn!(bridge = %self.status.name, error = %e, "MQTT bridge: records wait in the stream; trying again");
                    self.status.fail(&e);
                }
            }
            // A session that lasted starts the backoff over.
            if started.elapsed() > self.cfg.retry_max * 2 {
                wait = Duration::from_millis(100);
            }
            let until = Instant::now() + wait;
            while Instant::now() < until && !*stop.borrow() {
                self.refresh_lag();
                tokio::select! {
                    _ = tokio::time::sleep(TICK.min(until - Instant::now())) => {}
                    _ = stop.changed() => {}
                }
            }
            if *stop.borrow() {
                break;
            }
            wait = (wait * 2).min(self.cfg.retry_max);
        }
        self.save();
        self.status.set_state(State::Stopped);
    }

    /// The stream records go out from, when a line carries records out.
    fn stream(&self) -> Result<Option<Arc<Stream>>, String> {
        match self.cfg.stream.as_deref().filter(|_| self.topics.any_out()) {
            None => Ok(None),
            Some(name) => self
                .link
                .broker()
                .stream(name)
                .map(Some)
                .ok_or_else(|| format!("stream {name:?} was deleted")),
        }
    }

    /// The client's options; with TLS, to reach the remote through `relay`.
    fn options(&self, relay: Option<&Session>) -> Result<MqttOptions, String> {
        let (host, port) = self.cfg.host_port()?;
        let mut o = match relay {
            None => MqttOptions::new(self.client_id.clone(), host, port),
            Some(r) => {
                let mut o = MqttOptions::new(
                    self.client_id.clone(),
                    r.path().to_string_lossy().into_owned(),
                    0,
                );
                o.set_transport(Transport::Unix);
                o
            }
        };
        o.set_keep_alive(self.cfg.keepalive)
            .set_clean_start(self.cfg.cleansession)
            .set_manual_acks(true)
            .set_outgoing_inflight_upper_limit(self.cfg.max_inflight)
            .set_receive_maximum(Some(self.cfg.max_inflight))
            .set_connection_timeout(CONNECT_TIMEOUT_S);
        if !self.cfg.cleansession {
            // A session that never expires, as MQTT 3.1.1's clean session 0 has.
            o.set_session_expiry_interval(Some(u32::MAX));
        }
        if let Some(user) = &self.cfg.remote_username {
            o.set_credentials(
                user.clone(),
                self.cfg.remote_password.clone().unwrap_or_default(),
            );
        }
        // Whatever the local broker would take (the client's default is 10 KiB).
        let max = (self.link.broker().max_message() as u64 + 65_536).min(MQTT_MAX_PACKET);
        o.set_max_packet_size(Some(max as u32));
        Ok(o)
    }

    /// One connection's worth of carrying.
    async fn session(&mut self, stop: &mut watch::Receiver<bool>) -> End {
        self.status.set_state(State::Connecting);
        // Lives as long as the session: its relay ends with it.
        let relay = match self.tls.as_ref().map(TlsRelay::session).transpose() {
            Ok(r) => r,
            Err(e) => return End::Failed(e),
        };
        let options = match self.options(relay.as_ref()) {
            Ok(o) => o,
            Err(e) => return End::Failed(e),
        };
        let window_max = usize::from(self.cfg.max_inflight);
        // Room for every publish of the window and the PUBACK of every message the remote
        // may have in flight to us (receive maximum), so handing either over never waits.
        let (client, el) = AsyncClient::new(options, 2 * window_max + 16);
        // Unbounded, so the event loop always reads on: a PUBACK it did not read could be
        // what frees the client to take the requests this task waits to hand over. What the
        // remote sends unacknowledged is bounded by the receive maximum, QoS 0 by `poll`.
        let (tx, mut events) = mpsc::unbounded_channel();
        let queued = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let _poller = Poller(tokio::spawn(poll(
            el,
            tx,
            queued.clone(),
            self.status.clone(),
        )));
        let mut window = Window::new(self.cursor);
        // What the last session handed over and was not acknowledged is sent again.
        self.resend_below = self.resend_below.max(self.sent_until);
        let mut connected = false;
        let (mut saved_at, mut lag_at) = (Instant::now(), Instant::now());
        loop {
            if *stop.borrow() {
                return self.disconnect(&client, &mut events).await;
            }
            let stream = match self.stream() {
                Ok(s) => s,
                Err(e) => return End::Failed(e),
            };
            if connected {
                if let Some(stream) = &stream {
                    if let Err(e) = self.fill(stream, &client, &mut window).await {
                        return End::Failed(e);
                    }
                }
            }
            self.cursor = window.done_until();
            if saved_at.elapsed() >= SAVE_EVERY {
                self.save();
                saved_at = Instant::now();
            }
            if lag_at.elapsed() >= TICK {
                self.refresh_lag();
                lag_at = Instant::now();
            }
            // Wait for new records only with room to send them.
            let tail = stream
                .as_ref()
                .filter(|_| connected && window.len() < window_max);
            let next = window.next();
            tokio::select! {
                ev = events.recv() => match ev.inspect(|_| { queued.fetch_sub(1, Relaxed); }) {
                    None => return End::Failed("the MQTT client stopped".into()),
                    Some(Err(e)) => {
                        // The client saw its socket close: the relay knows why (and
                        // names the address it dialled).
                        let why = relay.as_ref().and_then(Session::failure);
                        return End::Failed(
                            why.unwrap_or_else(|| format!("{}: {e}", self.cfg.address)),
                        );
                    }
                    Some(Ok(ev)) => {
                        if let Err(e) = self.on_event(ev, &client, &mut window, &mut connected).await {
                            return End::Failed(e);
                        }
                    }
                },
                _ = async {
                    match tail {
                        Some(s) => s.wait_past(next).await,
                        None => std::future::pending().await,
                    }
                } => {}
                _ = stop.changed() => {}
                _ = tokio::time::sleep(TICK) => {}
            }
        }
    }

    /// A clean DISCONNECT (the remote keeps a persistent session), waited for briefly.
    async fn disconnect(
        &mut self,
        client: &AsyncClient,
        events: &mut mpsc::UnboundedReceiver<Result<Event, String>>,
    ) -> End {
        if client.try_disconnect().is_ok() {
            let _ = tokio::time::timeout(STOP_GRACE, async {
                while let Some(Ok(ev)) = events.recv().await {
                    if ev == Event::Outgoing(Outgoing::Disconnect) {
                        break;
                    }
                }
            })
            .await;
        }
        End::Stopped
    }

    async fn on_event(
        &mut self,
        ev: Event,
        client: &AsyncClient,
        window: &mut Window,
        connected: &mut bool,
    ) -> Result<(), String> {
        match ev {
            Event::Incoming(Incoming::ConnAck(ack)) => {
                *connected = true;
                self.connected(&ack, client).await?;
            }
            Event::Outgoing(Outgoing::Publish(pkid)) => {
                if let Some(s) = window.written(pkid)? {
                    self.status.carried(1, s.bytes);
                }
            }
            Event::Incoming(Incoming::PubAck(ack)) => match ack.reason {
                PubAckReason::Success | PubAckReason::NoMatchingSubscribers => {
                    let s = window.acked(ack.pkid)?;
                    self.status.carried(1, s.bytes);
                }
                reason => return Err(format!("the remote refused a publish: {reason:?}")),
            },
            Event::Incoming(Incoming::Publish(p)) => self.inbound(p, client).await?,
            Event::Incoming(Incoming::SubAck(s)) => {
                if let Some(code) = s
                    .return_codes
                    .iter()
                    .find(|c| !matches!(c, SubscribeReasonCode::Success(_)))
                {
                    return Err(format!("the remote refused a subscription: {code:?}"));
                }
                self.status.set_state(State::Running);
            }
            _ => {}
        }
        Ok(())
    }

    /// A new connection: the subscriptions are made (again: cheap, and the lines may have
    /// changed). The bridge runs once they are acknowledged, so nothing published on the
    /// remote after that is missed.
    async fn connected(&mut self, ack: &ConnAck, client: &AsyncClient) -> Result<(), String> {
        if !self.cfg.cleansession && !ack.session_present {
            tracing::info!(bridge = %self.status.name, "the remote broker had no session for the bridge: a new one starts");
        }
        let filters: Vec<Filter> = self
            .topics
            .subscriptions()
            .into_iter()
            .map(|(path, level)| Filter {
                path,
                qos: qos(level),
                // What the bridge publishes there must not come back.
                nolocal: true,
                preserve_retain: false,
                retain_forward_rule: RetainForwardRule::OnNewSubscribe,
            })
            .collect();
        if filters.is_empty() {
            self.status.set_state(State::Running);
        } else {
            client
                .subscribe_many(filters)
                .await
                .map_err(|e| format!("subscribing: {e}"))?;
        }
        Ok(())
    }

    /// Hands the client the next records of the stream, as many as the window has room for.
    async fn fill(
        &mut self,
        stream: &Stream,
        client: &AsyncClient,
        window: &mut Window,
    ) -> Result<(), String> {
        if let Some(first) = stream::lost_to_retention(stream, window.next(), &self.status) {
            window.read_to(first);
        }
        let (_, end) = stream.bounds();
        let room = usize::from(self.cfg.max_inflight).saturating_sub(window.len());
        if room == 0 || window.next() >= end {
            return Ok(());
        }
        let batch = stream
            .read(window.next(), room, READ_BYTES)
            .map_err(|e| format!("reading the stream: {e}"))?;
        for r in batch {
            let out = std::str::from_utf8(&r.topic)
                .ok()
                .filter(|_| !came_from(&r.headers, &self.status.name))
                .and_then(|t| self.topics.outgoing(t));
            if let Some((topic, level)) = out {
                if r.offset >= self.mark {
                    self.move_mark(r.offset + 1 + u64::from(self.cfg.max_inflight));
                }
                if r.offset < self.resend_below {
                    self.status.duplicates.fetch_add(1, Relaxed);
                }
                self.sent_until = self.sent_until.max(r.offset + 1);
                window.send(Sent {
                    offset: r.offset,
                    bytes: r.payload.len() as u64,
                });
                let sent = match properties_out(&r.headers) {
                    Some(p) => {
                        client
                            .publish_with_properties(topic, qos(level), false, r.payload, p)
                            .await
                    }
                    None => client.publish(topic, qos(level), false, r.payload).await,
                };
                sent.map_err(|e| format!("handing a record to the MQTT client: {e}"))?;
            }
            window.read_to(r.offset + 1);
        }
        Ok(())
    }

    /// A message from the remote: stored here, then acknowledged there.
    async fn inbound(&mut self, p: Publish, client: &AsyncClient) -> Result<(), String> {
        let local = std::str::from_utf8(&p.topic)
            .ok()
            .and_then(|t| self.topics.incoming(t));
        let Some(local) = local else {
            // A subscription of an earlier configuration, kept by the persistent session.
            tracing::debug!(bridge = %self.status.name, topic = ?p.topic, "no topic line brings this in: dropped");
            return client.ack(&p).await.map_err(|e| e.to_string());
        };
        let headers = headers_in(&p, &self.status.name);
        let pairs: Vec<(&str, &[u8])> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_slice()))
            .collect();
        let opts = PublishOptions {
            acked: true,
            priority: false,
        };
        match self
            .link
            .publish_with(&local, &pairs, &p.payload, opts)
            .await
        {
            Ok(()) => self.status.carried(1, p.payload.len() as u64),
            // Refused for what it is: it never will be stored, and holding it would hold
            // every message after it.
            Err(
                e @ (BrokerError::InvalidTopic(_)
                | BrokerError::Invalid(_)
                | BrokerError::MessageTooLarge { .. }),
            ) => {
                self.status.errors.fetch_add(1, Relaxed);
                tracing::error!(bridge = %self.status.name, topic = %local, error = %e, "a message from the remote broker cannot be stored here: dropped");
            }
            // Not acknowledged: the remote sends it again on the next connection.
            Err(e) => return Err(format!("storing a message on {local}: {e}")),
        }
        client.ack(&p).await.map_err(|e| e.to_string())
    }

    fn move_mark(&mut self, to: u64) {
        self.mark = to;
        let Some(stream) = self.cfg.stream.as_deref() else {
            return;
        };
        if let Err(e) = self.sent_mark.save(stream, to) {
            tracing::warn!(bridge = %self.status.name, error = %e, "cannot save the sent mark (duplicates after a crash may go uncounted)");
        }
    }

    fn refresh_lag(&self) {
        if let Ok(Some(stream)) = self.stream() {
            stream::refresh_lag(&stream, self.cursor, &self.status);
        }
    }

    fn save(&mut self) {
        let Some(stream) = self.cfg.stream.as_deref().filter(|_| self.topics.any_out()) else {
            return;
        };
        if let Err(e) = self.position.save(stream, self.cursor) {
            tracing::warn!(bridge = %self.status.name, error = %e, "cannot save the bridge's position (a restart sends more again)");
        }
    }
}
