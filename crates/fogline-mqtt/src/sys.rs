//! Mosquitto's `$SYS/broker/...` topics, so MQTT tools that read them (dashboards,
//! `mosquitto_sub -t '$SYS/#' -v`) work unchanged. Every `sys_interval` the publisher, a
//! client of the in-process link, publishes each value as a retained QoS 0 message (kept in
//! memory only: they are regenerated, never journaled):
//!
//! | topic | value |
//! | --- | --- |
//! | `$SYS/broker/version` | `fogline 0.1.0` |
//! | `$SYS/broker/uptime` | `N seconds` |
//! | `$SYS/broker/clients/connected` | connections now, every protocol |
//! | `$SYS/broker/clients/disconnected` | MQTT sessions kept for clients not connected |
//! | `$SYS/broker/clients/total` | the two above together |
//! | `$SYS/broker/clients/maximum` | most connections at once since the start |
//! | `$SYS/broker/messages/received`, `.../sent` | records published to / delivered by the node |
//! | `$SYS/broker/bytes/received`, `.../sent` | their bytes |
//! | `$SYS/broker/subscriptions/count` | live subscriptions |
//! | `$SYS/broker/retained messages/count` | retained messages |
//! | `$SYS/broker/load/messages/received/1min` (`5min`, `15min`), `.../sent/...` | per-minute rates, exponentially weighted over 1, 5 and 15 minutes, as Mosquitto computes them |
//! | `$SYS/broker/load/bytes/received/1min` (`5min`, `15min`), `.../sent/...` | the same for bytes |
//!
//! Unlike Mosquitto's, the message counts are records of every protocol (a native
//! publisher's records are messages received too), not MQTT packets of every type.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use fogline_broker::link::{Link, PublishOptions};
use fogline_broker::{Protocol, TrafficSnapshot};
use fogline_wire::Str;
use tokio::sync::watch;

use crate::codec::QoS;
use crate::message::Message;
use crate::shared::Shared;

/// The load periods, in seconds, and their topic suffixes.
const PERIODS: [(f64, &str); 3] = [(60.0, "1min"), (300.0, "5min"), (900.0, "15min")];

/// The `$SYS` publisher of one MQTT front end.
pub(crate) struct SysPublisher {
    shared: Weak<Shared>,
    link: Link,
    interval: Duration,
    started: Instant,
    /// Totals at the last pass, and when it was.
    last: Option<(Instant, TrafficSnapshot)>,
    /// Loads (per minute) of messages and bytes received and sent, per period.
    load: [[f64; 3]; 4],
    max_connected: usize,
}

/// The publisher, unless `sys_interval` is 0.
pub(crate) fn publisher(shared: &Arc<Shared>) -> Option<SysPublisher> {
    let interval = shared.config.sys_interval;
    (!interval.is_zero()).then(|| SysPublisher {
        shared: Arc::downgrade(shared),
        link: shared.broker.link("$SYS"),
        interval,
        started: Instant::now(),
        last: None,
        load: [[0.0; 3]; 4],
        max_connected: 0,
    })
}

impl SysPublisher {
    /// Publishes every interval until `stop` turns true.
    pub(crate) async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut tick = tokio::time::interval(self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.wait_for(|s| *s) => return,
                _ = tick.tick() => {}
            }
            let Some(shared) = self.shared.upgrade() else {
                return;
            };
            for (topic, value) in self.values(&shared) {
                self.publish(&shared, &topic, value).await;
            }
        }
    }

    /// Every topic and its value now; updates the loads.
    fn values(&mut self, shared: &Shared) -> Vec<(String, String)> {
        let broker = &shared.broker;
        let clients = broker.clients();
        let mut total = TrafficSnapshot::default();
        for p in Protocol::ALL {
            if p != Protocol::Link {
                total += clients.traffic(p);
            }
        }
        let connected: usize = Protocol::ALL
            .iter()
            .filter(|&&p| p != Protocol::Link)
            .map(|&p| clients.count(p))
            .sum();
        self.max_connected = self.max_connected.max(connected);
        let counts = shared.counts();
        let now = Instant::now();
        if let Some((at, before)) = self.last {
            let dt = now.duration_since(at).as_secs_f64().max(1e-3);
            let deltas = [
                total.records_in.saturating_sub(before.records_in),
                total.records_out.saturating_sub(before.records_out),
                total.bytes_in.saturating_sub(before.bytes_in),
                total.bytes_out.saturating_sub(before.bytes_out),
            ];
            for (load, delta) in self.load.iter_mut().zip(deltas) {
                let per_minute = delta as f64 / dt * 60.0;
                for (l, (period, _)) in load.iter_mut().zip(PERIODS) {
                    let keep = (-dt / period).exp();
                    *l = *l * keep + per_minute * (1.0 - keep);
                }
            }
        }
        self.last = Some((now, total));
        let mut out = vec![
            (
                "$SYS/broker/version".into(),
                format!("fogline {}", env!("CARGO_PKG_VERSION")),
            ),
            (
                "$SYS/broker/uptime".into(),
                format!("{} seconds", self.started.elapsed().as_secs()),
            ),
            (
                "$SYS/broker/clients/connected".into(),
                connected.to_string(),
            ),
            (
                "$SYS/broker/clients/disconnected".into(),
                counts.offline.to_string(),
            ),
            (
                "$SYS/broker/clients/total".into(),
                (connected + counts.offline).to_string(),
            ),
            (
                "$SYS/broker/clients/maximum".into(),
                self.max_connected.to_string(),
            ),
            (
                "$SYS/broker/messages/received".into(),
                total.records_in.to_string(),
            ),
            (
                "$SYS/broker/messages/sent".into(),
                total.records_out.to_string(),
            ),
            (
                "$SYS/broker/bytes/received".into(),
                total.bytes_in.to_string(),
            ),
            ("$SYS/broker/bytes/sent".into(), total.bytes_out.to_string()),
            (
                "$SYS/broker/subscriptions/count".into(),
                broker.subscription_count().to_string(),
            ),
            (
                "$SYS/broker/retained messages/count".into(),
                counts.retained.to_string(),
            ),
        ];
        let kinds = [
            "messages/received",
            "messages/sent",
            "bytes/received",
            "bytes/sent",
        ];
        for (kind, load) in kinds.iter().zip(&self.load) {
            for (l, (_, suffix)) in load.iter().zip(PERIODS) {
                out.push((
                    format!("$SYS/broker/load/{kind}/{suffix}"),
                    format!("{l:.2}"),
                ));
            }
        }
        out
    }

    async fn publish(&self, shared: &Shared, topic: &str, value: String) {
        let msg = Message {
            topic: Str::from(topic),
            payload: value.into(),
            qos: QoS::AtMostOnce,
            retain: true,
            props: Default::default(),
            received: fogline_broker::now_micros(),
        };
        // Retained in memory only: the next pass writes it again.
        shared.retained.apply(&msg);
        let Ok(block) = msg.to_block() else {
            return;
        };
        if let Err(e) = self
            .link
            .publish_block(topic, block, PublishOptions::default())
            .await
        {
            tracing::debug!(topic, error = %e, "cannot publish a $SYS value");
        }
    }
}
