//! `fogline sql "SELECT ..."`: an ad-hoc query on a running node, its results printed live
//! (one JSON row per line) until Ctrl-C, `--count` rows or `--idle`.
//!
//! The query runs on the node as a temporary rule (qos 0) whose results are published on
//! `fogline/sql/<id>`, a topic this command subscribes to first; the rule is deleted when
//! the command ends (by its limits, Ctrl-C, SIGTERM or SIGHUP). After kill -9 the rule
//! stays: `fogline rule ls` lists it as `sql-<pid>-<n>`, `fogline rule rm` deletes it.

use std::time::Duration;

use clap::Args;
use fogline_client::SubscribeOptions;

use crate::cmd::connect::ConnectArgs;
use crate::cmd::rule::{call, Admin};

/// Run an ad-hoc SQL query.
#[derive(Args, Debug)]
pub struct SqlArgs {
    /// The `SELECT` statement.
    pub sql: String,
    /// Stop after this many result rows.
    #[arg(long)]
    pub count: Option<u64>,
    /// Stop when no row came for this long (e.g. `10s`).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub idle: Option<Duration>,
    #[command(flatten)]
    pub admin: Admin,
    #[command(flatten)]
    pub conn: ConnectArgs,
}

/// Runs the query.
pub fn run(args: SqlArgs) -> anyhow::Result<()> {
    crate::cmd::runtime(Some(1))?.block_on(query(args))
}

async fn query(args: SqlArgs) -> anyhow::Result<()> {
    let id = format!(
        "sql-{}-{}",
        std::process::id(),
        fogline_broker::now_micros() % 1_000_000
    );
    let topic = format!("fogline/sql/{id}");
    let opts = args.conn.options("fogline sql")?;
    let client = args.conn.connect(opts).await?;
    let mut sub = client
        .subscribe(&topic, SubscribeOptions::default())
        .await?;
    let rule = serde_json::json!({
        "id": id,
        "sql": args.sql,
        "actions": [{"publish": {"topic": topic, "sendSingle": true}}],
    });
    call(
        &args.admin,
        "POST",
        "/api/v1/rules",
        Some(rule.to_string().into_bytes()),
    )
    .await?;
    let limit = args.count.unwrap_or(u64::MAX);
    let idle = args.idle.unwrap_or(Duration::from_secs(u64::MAX / 4));
    let mut seen = 0u64;
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let result = async {
        while seen < limit {
            tokio::select! {
                m = tokio::time::timeout(idle, sub.recv()) => {
                    let Ok(Some(m)) = m else { break };
                    println!("{}", String::from_utf8_lossy(&m.payload));
                    seen += 1;
                }
                _ = tokio::signal::ctrl_c() => break,
                _ = term.recv() => break,
                _ = hup.recv() => break,
            }
        }
        anyhow::Ok(())
    }
    .await;
    let removed = call(&args.admin, "DELETE", &format!("/api/v1/rules/{id}"), None).await;
    client.close().await?;
    result?;
    removed.map(drop)
}
