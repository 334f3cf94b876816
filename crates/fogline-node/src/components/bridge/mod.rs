//! The bridges (`[bridge]`): `fogline_bridge` carries streams to Kafka, Kafka topics into
//! the broker, and records to and from other MQTT brokers. Each bridge runs as its own
//! task; their statuses go to the admin API (`/api/v1/bridges`), `/metrics` and the
//! dashboard's live feed.
//! Positions are kept in `<data_dir>/.bridge` (nowhere on a node that keeps no files).

use fogline_bridge::api;
use fogline_bridge::feed::BridgesFeed;
use fogline_bridge::kafka::inbound::KafkaIn;
use fogline_bridge::kafka::out::KafkaOut;
use fogline_bridge::metrics::BridgeCollector;
use fogline_bridge::mqtt::bridge::MqttBridge;
use fogline_bridge::Bridges;
use fogline_broker::StorageMode;

use crate::component::{BoxError, BoxFuture, Component, Context, Started};
use crate::config::Config;

pub(crate) const COMPONENT: Component = Component {
    name: "bridge",
    start: boxed,
};

fn boxed<'a>(
    cfg: &'a Config,
    ctx: &'a Context,
) -> BoxFuture<'a, Result<Option<Started>, BoxError>> {
    Box::pin(start(cfg, ctx))
}

async fn start(cfg: &Config, ctx: &Context) -> Result<Option<Started>, BoxError> {
    if cfg.bridge.kafka.is_empty() && cfg.bridge.kafka_in.is_empty() && cfg.bridge.mqtt.is_empty() {
        return Ok(None);
    }
    let names = cfg.bridge.check()?;
    let dir =
        (cfg.broker.storage != StorageMode::Memory).then(|| cfg.broker.data_dir.join(".bridge"));
    let bridges = Bridges::default();
    let mut outs = Vec::new();
    for (name, k) in names.iter().zip(&cfg.bridge.kafka) {
        let out = KafkaOut::new(
            name,
            k.clone(),
            &ctx.node.id,
            ctx.broker.clone(),
            dir.clone(),
        )?;
        bridges.add(out.status());
        outs.push(out);
    }
    // `check` names the Kafka bridges out, then in, then the MQTT ones.
    let mut ins = Vec::new();
    for (name, k) in names[cfg.bridge.kafka.len()..]
        .iter()
        .zip(&cfg.bridge.kafka_in)
    {
        let kin = KafkaIn::new(name, k.clone(), &ctx.node.id, &ctx.broker)?;
        bridges.add(kin.status());
        ins.push(kin);
    }
    let mut mqtts = Vec::new();
    let skip = cfg.bridge.kafka.len() + cfg.bridge.kafka_in.len();
    for (name, m) in names[skip..].iter().zip(&cfg.bridge.mqtt) {
        let bridge = MqttBridge::new(name, m.clone(), &ctx.node.id, &ctx.broker, dir.clone())?;
        bridges.add(bridge.status());
        mqtts.push(bridge);
    }
    ctx.routes.lock().push(fogline_admin::ExtraRoutes {
        router: api::routes(bridges.clone()),
        openapi: api::OPENAPI,
    });
    ctx.metrics
        .lock()
        .register_collector(Box::new(BridgeCollector(bridges.clone())));
    ctx.feed
        .lock()
        .push(std::sync::Arc::new(BridgesFeed(bridges.clone())));
    tracing::info!(bridges = ?names, "bridges started");
    let mut tasks: Vec<_> = outs
        .into_iter()
        .map(|o| tokio::spawn(o.run(ctx.stop.clone())))
        .collect();
    tasks.extend(
        ins.into_iter()
            .map(|i| tokio::spawn(i.run(ctx.stop.clone())))
            .chain(
                mqtts
                    .into_iter()
                    .map(|m| tokio::spawn(m.run(ctx.stop.clone()))),
            ),
    );
    Ok(Some(Started {
        endpoints: Vec::new(),
        task: Box::pin(async move {
            for t in tasks {
                t.await?;
            }
            Ok(())
        }),
    }))
}
