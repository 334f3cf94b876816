//! `fogline announce`: R-Pulsar's notify_interest for any program. The command announces a
//! data profile on a topic and runs CMD only while somebody is interested: started at the
//! server's first `start`, sent SIGTERM (then SIGKILL after a grace period) at its `stop`,
//! started again at the next `start`.

use std::process::ExitStatus;
use std::time::Duration;

use clap::Args;

use crate::cmd::connect::ConnectArgs;
use tokio::process::{Child, Command};

/// Run a command only while somebody is interested in what it would publish.
#[derive(Args, Debug)]
pub struct AnnounceArgs {
    /// The topic the command publishes on.
    #[arg(long, short)]
    pub topic: String,
    /// The data profile of what it publishes (`type=drone sensor=lidar`, docs/PROFILES.md).
    #[arg(long, short)]
    pub profile: String,
    /// How long a stopped command may take to exit after SIGTERM before it gets SIGKILL.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub grace: Duration,
    /// The command and its arguments (after `--`). It gets FOGLINE_SERVER (and the TLS and
    /// login settings given, as FOGLINE_CAFILE, FOGLINE_USERNAME, ...), FOGLINE_TOPIC and
    /// FOGLINE_PROFILE in its environment; one that exits by itself is started again at the
    /// next `start` only.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
    #[command(flatten)]
    pub conn: ConnectArgs,
}

/// Runs `fogline announce`.
pub fn run(args: AnnounceArgs) -> anyhow::Result<()> {
    crate::cmd::runtime(Some(1))?.block_on(announce(args))
}

async fn announce(args: AnnounceArgs) -> anyhow::Result<()> {
    let opts = args.conn.options("fogline announce")?;
    let client = args.conn.connect(opts).await?;
    let mut ann = client.announce(&args.topic, &args.profile).await?;
    let mut child: Option<Child> = None;
    let mut interested = ann.interested();
    if !interested {
        eprintln!("waiting for interest in {} ({})", args.topic, args.profile);
    }
    loop {
        if interested && child.is_none() {
            let c = spawn(&args)?;
            eprintln!(
                "interest: started {:?} (pid {})",
                args.command.join(" "),
                c.id().unwrap_or(0)
            );
            child = Some(c);
        } else if !interested {
            if let Some(c) = child.take() {
                eprintln!("no interest: stopping {:?}", args.command.join(" "));
                stop(c, args.grace).await?;
            }
        }
        tokio::select! {
            now = ann.changed() => interested = now?,
            status = wait(&mut child) => {
                child = None;
                eprintln!("{:?} exited ({status}); it starts again at the next start", args.command.join(" "));
                interested = false; // until told again
            }
            _ = tokio::signal::ctrl_c() => {
                if let Some(c) = child.take() {
                    stop(c, args.grace).await?;
                }
                return Ok(());
            }
        }
    }
}

fn spawn(args: &AnnounceArgs) -> anyhow::Result<Child> {
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("no command given after --"))?;
    Command::new(program)
        .args(rest)
        .envs(args.conn.env())
        .env("FOGLINE_TOPIC", &args.topic)
        .env("FOGLINE_PROFILE", &args.profile)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot run {program:?}: {e}"))
}

/// Waits for the running command to exit; never returns while there is none.
async fn wait(child: &mut Option<Child>) -> ExitStatus {
    match child {
        Some(c) => match c.wait().await {
            Ok(s) => s,
            Err(_) => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}

/// SIGTERM, then SIGKILL after `grace`.
async fn stop(mut child: Child, grace: Duration) -> anyhow::Result<()> {
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGTERM);
        }
    }
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        child.kill().await?;
    }
    Ok(())
}
