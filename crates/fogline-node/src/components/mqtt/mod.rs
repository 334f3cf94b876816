//! MQTT over TCP and WebSocket (`[mqtt]`): `fogline_mqtt::MqttServer`, and its sessions in
//! the metrics.

use fogline_admin::metrics::{family, single};
use fogline_auth::Authenticator as _;
use fogline_mqtt::{MqttServer, MqttStats};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use crate::component::{endpoints, BoxError, BoxFuture, Component, Context, Started};
use crate::config::Config;

pub(crate) const COMPONENT: Component = Component {
    name: "mqtt",
    start: boxed,
};

fn boxed<'a>(
    cfg: &'a Config,
    ctx: &'a Context,
) -> BoxFuture<'a, Result<Option<Started>, BoxError>> {
    Box::pin(start(cfg, ctx))
}

async fn start(cfg: &Config, ctx: &Context) -> Result<Option<Started>, BoxError> {
    let m = &cfg.mqtt;
    if [&m.listen, &m.ws_listen, &m.tls_listen, &m.wss_listen]
        .iter()
        .all(|l| l.is_empty())
    {
        return Ok(None);
    }
    let server = MqttServer::bind(cfg.mqtt.clone(), ctx.broker.clone())
        .await?
        .with_intake(ctx.read_budget.clone(), cfg.node.frame_timeout);
    let guarded = !ctx.broker.guard().admits_anonymous();
    let mut eps = endpoints("mqtt", server.local_addrs(), guarded);
    eps.extend(endpoints("mqtt-ws", server.ws_addrs(), guarded));
    eps.extend(endpoints("mqtts", server.tls_addrs(), guarded));
    eps.extend(endpoints("mqtt-wss", server.wss_addrs(), guarded));
    if let Some(tls) = server.tls() {
        ctx.tls.add(tls);
    }
    ctx.metrics
        .lock()
        .register_collector(Box::new(Sessions(server.stats())));
    let mut stop = ctx.stop.clone();
    Ok(Some(Started {
        endpoints: eps,
        task: Box::pin(async move {
            server
                .run_until(async move {
                    let _ = stop.wait_for(|s| *s).await;
                })
                .await;
            Ok(())
        }),
    }))
}

/// `fogline_mqtt_sessions{state}` and `fogline_mqtt_retained_messages`.
#[derive(Debug)]
struct Sessions(MqttStats);

impl Collector for Sessions {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let c = self.0.sessions();
        family(
            &mut e,
            "fogline_mqtt_sessions",
            "MQTT sessions: with a connected client, or kept for one that is not",
            MetricType::Gauge,
            [
                ([("state", "connected")], c.connected as f64),
                ([("state", "offline")], c.offline as f64),
            ],
        )?;
        single(
            &mut e,
            "fogline_mqtt_retained_messages",
            "Retained MQTT messages",
            MetricType::Gauge,
            c.retained as f64,
        )
    }
}
