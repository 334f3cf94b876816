//! `fogline serve`: run a node.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use fogline_broker::StorageMode;
use fogline_node::{Config, Node};

/// Run the server.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Configuration file (TOML); the embedded default when absent.
    #[arg(long, env = "FOGLINE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Directory for file-backed streams.
    #[arg(long, env = "FOGLINE_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Native-protocol address (`HOST:PORT` or `unix:/PATH`); repeatable; replaces the file's list.
    #[arg(long, env = "FOGLINE_LISTEN", value_delimiter = ',')]
    pub listen: Vec<String>,
    /// MQTT (TCP) address `HOST:PORT`; repeatable; replaces the file's `[mqtt] listen`;
    /// `off` serves no MQTT.
    #[arg(long = "mqtt", env = "FOGLINE_MQTT", value_delimiter = ',')]
    pub mqtt: Vec<String>,
    /// MQTT-over-WebSocket address `HOST:PORT`; repeatable; replaces the file's `[mqtt] ws_listen`.
    #[arg(long = "mqtt-ws", env = "FOGLINE_MQTT_WS", value_delimiter = ',')]
    pub mqtt_ws: Vec<String>,
    /// HTTP admin API, metrics and dashboard address `HOST:PORT`; repeatable; replaces the
    /// file's `[admin] listen`; `off` serves none.
    #[arg(long = "http", env = "FOGLINE_HTTP", value_delimiter = ',')]
    pub http: Vec<String>,
    /// Default storage mode of streams.
    #[arg(long, env = "FOGLINE_STORAGE")]
    pub storage: Option<StorageMode>,
    /// Runtime worker threads (default: one per core).
    #[arg(long, env = "FOGLINE_THREADS")]
    pub threads: Option<usize>,
}

impl ServeArgs {
    /// The configuration after the file and the flags.
    pub fn config(&self) -> anyhow::Result<Config> {
        let mut cfg = match &self.config {
            Some(path) => Config::load(path)?,
            None => Config::default(),
        };
        if let Some(d) = &self.data_dir {
            cfg.broker.data_dir = d.clone();
        }
        if !self.listen.is_empty() {
            cfg.native.listen = without_off(&self.listen);
        }
        if !self.mqtt.is_empty() {
            cfg.mqtt.listen = without_off(&self.mqtt);
        }
        if !self.mqtt_ws.is_empty() {
            cfg.mqtt.ws_listen = without_off(&self.mqtt_ws);
        }
        if !self.http.is_empty() {
            cfg.admin.listen = without_off(&self.http);
        }
        if let Some(s) = self.storage {
            cfg.broker.storage = s;
        }
        Ok(cfg)
    }
}

/// A listener list where `off` means none.
fn without_off(addrs: &[String]) -> Vec<String> {
    addrs
        .iter()
        .filter(|a| a.as_str() != "off")
        .cloned()
        .collect()
}

/// Runs the node until SIGINT or SIGTERM; SIGHUP reloads the TLS certificates, the
/// password file and the ACL file.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let cfg = args.config()?;
    let rt = crate::cmd::runtime(args.threads)?;
    rt.block_on(async move {
        let storage = cfg.broker.storage;
        let data_dir = cfg.broker.data_dir.clone();
        let node = Node::start(cfg).await.context("starting the node")?;
        let dir = match storage {
            StorageMode::Memory => "no files".to_string(),
            _ => format!("data in {}", data_dir.display()),
        };
        eprintln!(
            "fogline {} (node {}) serving (storage {}, {dir}); Ctrl-C stops it",
            env!("CARGO_PKG_VERSION"),
            node.info().id,
            storage.to_log(),
        );
        for (_, e) in node.endpoints() {
            eprintln!("  {}", describe(&e.kind, &e.address));
        }
        #[cfg(unix)]
        let hangup = tokio::spawn(reload_on_hangup(node.tls(), node.guard()));
        let ran = node.run(shutdown_signal()).await;
        #[cfg(unix)]
        hangup.abort();
        ran?;
        Ok(())
    })
}

/// Reloads every TLS listener's certificates, the password file and the ACL file on each
/// SIGHUP, as Mosquitto does; a reload that fails leaves what was in use and is logged.
/// Connections stay: they were admitted already, and their next operations are checked
/// against the new ACL.
#[cfg(unix)]
async fn reload_on_hangup(tls: fogline_net::tls::TlsSet, guard: Arc<fogline_broker::Guard>) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut hup) = signal(SignalKind::hangup()) else {
        tracing::warn!("cannot handle SIGHUP: certificates, users and the ACL are not reloaded");
        return;
    };
    while hup.recv().await.is_some() {
        let failed = tls.reload();
        for e in &failed {
            tracing::error!(error = %e, "SIGHUP: TLS certificates not reloaded, the old ones stay");
        }
        tracing::info!(
            reloaded = tls.len() - failed.len(),
            failed = failed.len(),
            "SIGHUP: TLS certificates read again"
        );
        let g = guard.clone();
        let failed = tokio::task::spawn_blocking(move || g.reload())
            .await
            .unwrap_or_default();
        for e in &failed {
            tracing::error!(error = %e, "SIGHUP: not reloaded, the old contents stay");
        }
        let cfg = guard.config();
        if cfg.password_file.is_some() || cfg.acl_file.is_some() {
            tracing::info!(
                failed = failed.len(),
                "SIGHUP: password and ACL files read again"
            );
        }
    }
}

/// One line per listener for the start banner.
fn describe(kind: &str, address: &str) -> String {
    match kind {
        "native" => format!("native protocol    {address}"),
        "mqtt" => format!("MQTT               {address}"),
        "mqtt-ws" => format!("MQTT (WebSocket)   {address}"),
        "native-tls" => format!("native (TLS)       {address}"),
        "mqtts" => format!("MQTT (TLS)         {address}"),
        "mqtt-wss" => format!("MQTT (WSS)         {address}"),
        "https" => format!("admin API (HTTPS)  https://{address}/"),
        "http" if !address.starts_with("unix:") => format!(
            "dashboard          http://{address}/   (admin API http://{address}/api/v1, metrics http://{address}/metrics)"
        ),
        "http" => format!("admin API          {address}"),
        other => format!("{other:<18} {address}"),
    }
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(mqtt: &[&str]) -> ServeArgs {
        ServeArgs {
            config: None,
            data_dir: Some("d".into()),
            listen: vec!["127.0.0.1:1".into()],
            mqtt: mqtt.iter().map(|s| s.to_string()).collect(),
            mqtt_ws: Vec::new(),
            http: vec!["off".into()],
            storage: Some(StorageMode::Memory),
            threads: None,
        }
    }

    #[test]
    fn flags_override_the_file() {
        let cfg = args(&["127.0.0.1:2"]).config().expect("config");
        assert_eq!(cfg.native.listen, vec!["127.0.0.1:1".to_string()]);
        assert!(cfg.admin.listen.is_empty(), "--http off");
        assert_eq!(cfg.mqtt.listen, vec!["127.0.0.1:2".to_string()]);
        assert_eq!(cfg.broker.storage, StorageMode::Memory);
        assert_eq!(cfg.broker.data_dir, PathBuf::from("d"));
    }

    #[test]
    fn mqtt_off_serves_no_mqtt() {
        assert!(args(&["off"])
            .config()
            .expect("config")
            .mqtt
            .listen
            .is_empty());
        assert!(
            !args(&[]).config().expect("config").mqtt.listen.is_empty(),
            "the default listens"
        );
    }
}
