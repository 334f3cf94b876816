//! Geometric monitoring (`[gm]`): this node runs one monitor of `fogline_gm` over the
//! broker's own topics. Its readings arrive on `gm/<name>/reading` here; its updates go out
//! on `gm/<name>/update` here; the other nodes' updates are read from their brokers (the
//! native protocol, one client per peer); alarms (`gm/<name>/alarm`) and status records are
//! published here, so rules and bridges can use them like any record. With the coordinator
//! protocol every participant's messages go out on `gm/<name>/msg`. With `repair`, a node
//! that missed updates asks for them on `gm/<name>/pull` here, and the node asked answers on
//! its update topic.
//!
//! Until every peer subscription stands the monitor says so on `gm/<name>/ready` every
//! 500 ms, so a driver (a lock-step replay) knows when no update can be missed any more.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fogline_broker::SubscribeOptions;
use fogline_client::{Client, ClientError, ClientOptions, ClientTls};
use fogline_gm::service::{GmConfig, Service};
use tokio::sync::{mpsc, watch};

use crate::component::{BoxError, BoxFuture, Component, Context, Started};
use crate::config::Config;

pub(crate) const COMPONENT: Component = Component {
    name: "gm",
    start: boxed,
};

fn boxed<'a>(
    cfg: &'a Config,
    ctx: &'a Context,
) -> BoxFuture<'a, Result<Option<Started>, BoxError>> {
    Box::pin(start(cfg, ctx))
}

async fn start(cfg: &Config, ctx: &Context) -> Result<Option<Started>, BoxError> {
    let gm = cfg.gm.clone();
    if gm.name.is_empty() {
        return Ok(None);
    }
    let monitor = Service::new(&gm).map_err(|e| format!("[gm]: {e}"))?;
    // the coordinator protocol has one more participant, the coordinator
    let participants = gm.nodes + usize::from(matches!(monitor, Service::Coordinated(_)));
    if gm.peers.len() != participants {
        return Err(format!(
            "[gm]: {} peers for {participants} participants",
            gm.peers.len()
        )
        .into());
    }
    let opts = peer_options(&gm).map_err(|e| format!("[gm]: {e}"))?;
    let link = ctx.broker.link("gm");
    let topic = |kind: &str| format!("gm/{}/{kind}", gm.name);
    let readings = link.subscribe(&topic("reading"), SubscribeOptions::default())?;
    let ticks = link.subscribe(&topic("tick"), SubscribeOptions::default())?;
    let (tx, rx) = mpsc::channel(4096);
    let subscribed = Arc::new(AtomicUsize::new(0));
    for (j, addr) in gm.peers.iter().enumerate() {
        if j != gm.id {
            tokio::spawn(follow(
                addr.clone(),
                opts.clone(),
                gm.name.clone(),
                tx.clone(),
                subscribed.clone(),
                ctx.stop.clone(),
            ));
        }
    }
    // A monitor without peers keeps the channel open itself.
    let idle = tx;
    tracing::info!(name = %gm.name, id = gm.id, nodes = gm.nodes, "geometric monitor started");
    let task = run(
        gm,
        monitor,
        link,
        readings,
        ticks,
        rx,
        (subscribed, participants - 1),
        ctx.stop.clone(),
    );
    Ok(Some(Started {
        endpoints: Vec::new(),
        task: Box::pin(async move {
            let ran = task.await;
            drop(idle);
            ran
        }),
    }))
}

/// How this node connects to its peers: its login and TLS settings, checked (the files
/// loaded) now, so that a wrong setting stops the node instead of a retry loop.
fn peer_options(gm: &GmConfig) -> Result<ClientOptions, String> {
    if gm.password.is_some() && gm.username.is_none() {
        return Err("password needs username".into());
    }
    let tls = match (&gm.cafile, &gm.certfile, &gm.keyfile) {
        (None, None, None) => None,
        (None, _, _) => return Err("certfile and keyfile need cafile".into()),
        (Some(cafile), certfile, keyfile) => Some(ClientTls {
            cafile: cafile.clone(),
            certfile: certfile.clone(),
            keyfile: keyfile.clone(),
            server_name: None,
        }),
    };
    if let Some(settings) = &tls {
        fogline_net::tls::TlsConnector::new(settings, "localhost").map_err(|e| e.to_string())?;
    }
    Ok(ClientOptions {
        client_name: "gm-peer".into(),
        tls,
        username: gm.username.clone(),
        password: gm.password.clone(),
        ..ClientOptions::default()
    })
}

/// A record from a peer: an update, a pull (repair) or a coordinator-protocol message.
struct FromPeer {
    kind: &'static str,
    payload: bytes::Bytes,
}

/// The peer topics a monitor reads.
const PEER_KINDS: [&str; 3] = ["update", "pull", "msg"];

/// Reads the updates, pulls and messages of monitor `name` on the peer at `addr` into `tx`,
/// connecting until it can, and again when the client ends (it reconnects by itself after
/// a lost connection, but gives up when the peer refuses its login then).
async fn follow(
    addr: String,
    opts: ClientOptions,
    name: String,
    tx: mpsc::Sender<FromPeer>,
    subscribed: Arc<AtomicUsize>,
    mut stop: watch::Receiver<bool>,
) {
    const FIRST: Duration = Duration::from_millis(100);
    let mut said = String::new();
    let mut pause = FIRST;
    loop {
        let attempt = async {
            let c = Client::connect(&addr, opts.clone()).await?;
            let [u, p, m] = PEER_KINDS.map(|k| format!("gm/{name}/{k}"));
            let u = c.subscribe(&u, Default::default()).await?;
            let p = c.subscribe(&p, Default::default()).await?;
            let m = c.subscribe(&m, Default::default()).await?;
            Ok::<_, ClientError>((c, u, p, m))
        };
        let (client, mut updates, mut pulls, mut msgs) = match attempt.await {
            Ok(x) => x,
            Err(e) => {
                if matches!(e, ClientError::Tls(_) | ClientError::Server { .. }) {
                    // A refusal (login, TLS) is said once, and asked again ever less often:
                    // each try costs the peer a handshake and a password hash.
                    let text = e.to_string();
                    if text != said {
                        tracing::warn!(peer = %addr, error = %text, "gm peer refuses this node");
                        said = text;
                    }
                    pause = (pause * 2).min(Duration::from_secs(5));
                } else {
                    // A peer still starting is expected.
                    tracing::debug!(peer = %addr, error = %e, "gm peer not reachable yet");
                    pause = FIRST;
                }
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = stop.changed() => return,
                }
                continue;
            }
        };
        said.clear();
        pause = FIRST;
        subscribed.fetch_add(1, Ordering::SeqCst);
        let lost = loop {
            let (m, kind) = tokio::select! {
                m = updates.recv() => (m, PEER_KINDS[0]),
                m = pulls.recv() => (m, PEER_KINDS[1]),
                m = msgs.recv() => (m, PEER_KINDS[2]),
                _ = stop.changed() => break false,
            };
            let Some(m) = m else { break true };
            let payload = m.payload;
            if tx.send(FromPeer { kind, payload }).await.is_err() {
                break false;
            }
        };
        subscribed.fetch_sub(1, Ordering::SeqCst);
        drop((updates, pulls, msgs));
        let _ = client.close().await;
        if !lost {
            return;
        }
        tracing::warn!(peer = %addr, "lost the gm peer's updates; connecting again");
    }
}

#[allow(clippy::too_many_arguments)]
async fn run(
    gm: GmConfig,
    mut monitor: Service,
    link: fogline_broker::link::Link,
    mut readings: fogline_broker::link::LinkSubscription,
    mut ticks: fogline_broker::link::LinkSubscription,
    mut peers_in: mpsc::Receiver<FromPeer>,
    (subscribed, peers): (Arc<AtomicUsize>, usize),
    mut stop: watch::Receiver<bool>,
) -> Result<(), BoxError> {
    let mut ready = tokio::time::interval(Duration::from_millis(500));
    let mut started = false;
    loop {
        let out = tokio::select! {
            _ = stop.changed() => return Ok(()),
            m = readings.recv() => {
                started = true;
                m.map(|m| monitor.on_reading(&m.payload))
            }
            m = ticks.recv() => {
                started = true;
                m.map(|m| monitor.on_tick(&m.payload))
            }
            p = peers_in.recv() => p.map(|p| monitor.on_peer(p.kind, &p.payload)),
            _ = ready.tick(), if !started => {
                if subscribed.load(Ordering::SeqCst) == peers {
                    let body = format!("{{\"node\":{}}}", gm.id);
                    let _ = link.publish(&format!("gm/{}/ready", gm.name), body).await;
                }
                continue;
            }
        };
        match out {
            // followers end when told to stop, maybe before this loop sees the signal
            None if *stop.borrow() => return Ok(()),
            None => return Err("a gm subscription ended".into()),
            Some(Err(e)) => tracing::warn!(error = %e, "gm: a record was not understood"),
            Some(Ok(publish)) => {
                for (kind, body) in publish {
                    let topic = format!("gm/{}/{kind}", gm.name);
                    if let Err(e) = link.publish(&topic, body).await {
                        tracing::warn!(topic, error = %e, "gm: publish failed");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_settings_that_cannot_work_stop_the_node() {
        let gm = |f: &dyn Fn(&mut GmConfig)| {
            let mut g = GmConfig::default();
            f(&mut g);
            peer_options(&g)
        };
        let plain = gm(&|_| {}).unwrap();
        assert!(plain.tls.is_none() && plain.username.is_none());
        let e = gm(&|g| g.password = Some("p".into())).unwrap_err();
        assert!(e.contains("password needs username"), "{e}");
        let e = gm(&|g| g.certfile = Some("c.crt".into())).unwrap_err();
        assert!(e.contains("need cafile"), "{e}");
        let e = gm(&|g| g.cafile = Some("/nonexistent/ca.crt".into())).unwrap_err();
        assert!(e.contains("/nonexistent/ca.crt"), "{e}");
        let login = gm(&|g| {
            g.username = Some("gm".into());
            g.password = Some("p".into());
        })
        .unwrap();
        assert_eq!(
            (login.username.as_deref(), login.password.as_deref()),
            (Some("gm"), Some("p"))
        );
    }
}
