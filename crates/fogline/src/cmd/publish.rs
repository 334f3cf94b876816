//! `fogline pub`: publish a message, or generated numbered payloads.

use std::time::Duration;

use bytes::Bytes;
use clap::Args;
use fogline_client::PublishRecord;
use fogline_probe::payload::Encoder;

use crate::cmd::connect::ConnectArgs;

/// Publish records.
#[derive(Args, Debug)]
pub struct PubArgs {
    /// Topic to publish on.
    pub topic: String,
    /// The message; without it, payloads are generated (sequence number + send time + padding).
    pub message: Option<String>,
    /// How many records.
    #[arg(long, short = 'n', default_value_t = 1)]
    pub count: u64,
    /// Size of generated payloads in bytes (at least 20).
    #[arg(long, default_value_t = 256)]
    pub size: usize,
    /// Records per second (0 = as fast as possible).
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Wait for the server to acknowledge every record (stored as its stream promises).
    #[arg(long)]
    pub ack: bool,
    /// Publish with high priority.
    #[arg(long)]
    pub priority: bool,
    /// The records' data profile (`type=drone sensor=lidar alt=120`, docs/PROFILES.md),
    /// carried as one header per attribute.
    #[arg(long)]
    pub profile: Option<String>,
    /// Print one JSON summary at the end, however the run ends: {"sent","acked","error"}
    /// (`acked`: acknowledged records, each stored as its stream promises).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub conn: ConnectArgs,
}

/// Runs `fogline pub`.
pub fn run(args: PubArgs) -> anyhow::Result<()> {
    crate::cmd::runtime(Some(1))?.block_on(publish(args))
}

/// What was sent and acknowledged so far.
#[derive(Default)]
struct Tally {
    sent: u64,
    acked: u64,
}

/// Publishes, then reports; the summary is printed however the run ends (done, the server
/// gone, Ctrl-C), so the acknowledged count is never lost.
async fn publish(args: PubArgs) -> anyhow::Result<()> {
    let start = tokio::time::Instant::now();
    let mut tally = Tally::default();
    let outcome = tokio::select! {
        r = send_all(&args, &mut tally) => r,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
    };
    report(
        &args,
        &tally,
        start.elapsed().as_secs_f64(),
        outcome.as_ref().err(),
    );
    outcome
}

async fn send_all(args: &PubArgs, tally: &mut Tally) -> anyhow::Result<()> {
    let opts = args.conn.options("fogline pub")?;
    let headers = match &args.profile {
        Some(p) => fogline_profile::DataProfile::parse(p)
            .map_err(|e| anyhow::anyhow!("--profile: {e}"))?
            .to_headers()?,
        None => Bytes::new(),
    };
    let client = args.conn.connect(opts).await?;
    let mut enc = Encoder::new(args.size);
    let interval = (args.rate > 0.0).then(|| Duration::from_secs_f64(1.0 / args.rate));
    let start = tokio::time::Instant::now();
    let mut acks = Vec::new();
    for seq in 0..args.count {
        if let Some(iv) = interval {
            tokio::time::sleep_until(start + iv.mul_f64(seq as f64)).await;
        }
        let payload = match &args.message {
            Some(m) => Bytes::from(m.clone().into_bytes()),
            None => enc.encode_stamped(0, seq, fogline_probe::clock::now_ns),
        };
        let record = PublishRecord {
            priority: args.priority,
            headers: headers.clone(),
            ..PublishRecord::new(args.topic.clone(), payload)
        };
        if args.ack {
            acks.push(client.send_acked(&record).await?);
            tally.sent += 1;
            // Collect finished acks as we go, so memory stays bounded.
            if acks.len() >= 4096 {
                for a in acks.drain(..) {
                    a.await?;
                    tally.acked += 1;
                }
            }
        } else {
            client.publish_with(&record).await?;
            tally.sent += 1;
        }
    }
    for a in acks.drain(..) {
        a.await?;
        tally.acked += 1;
    }
    client.flush().await?;
    client.close().await?;
    Ok(())
}

fn report(args: &PubArgs, tally: &Tally, secs: f64, error: Option<&anyhow::Error>) {
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "sent": tally.sent,
                "acked": tally.acked,
                "error": error.map(|e| format!("{e:#}")),
            })
        );
        return;
    }
    eprintln!(
        "sent {} records to {} in {:.3} s ({:.0}/s){}{}",
        tally.sent,
        args.topic,
        secs,
        tally.sent as f64 / secs.max(1e-9),
        if args.ack {
            format!(", {} acknowledged", tally.acked)
        } else {
            String::new()
        },
        if error.is_some() {
            "; stopped early"
        } else {
            ""
        }
    );
}
