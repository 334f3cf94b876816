//! `fogline pub`: publish a message, or generated numbered payloads.

use std::time::Duration;

use bytes::Bytes;
use clap::Args;
use fogline_client::{Client, ClientOptions, PublishRecord};
use fogline_probe::payload::Encoder;

/// Publish records.
#[derive(Args, Debug)]
pub struct PubArgs {
    /// Server address (`HOST:PORT` or `unix:/PATH`).
    #[arg(long, short, default_value = "127.0.0.1:7766", env = "FOGLINE_SERVER")]
    pub server: String,
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
    /// Print one JSON summary at the end: {"sent","acked"}.
    #[arg(long)]
    pub json: bool,
}

/// Runs `fogline pub`.
pub fn run(args: PubArgs) -> anyhow::Result<()> {
    crate::cmd::runtime(Some(1))?.block_on(publish(args))
}

async fn publish(args: PubArgs) -> anyhow::Result<()> {
    let opts = ClientOptions {
        client_name: "fogline pub".into(),
        ..ClientOptions::default()
    };
    let client = Client::connect(&args.server, opts).await?;
    let mut enc = Encoder::new(args.size);
    let interval = (args.rate > 0.0).then(|| Duration::from_secs_f64(1.0 / args.rate));
    let start = tokio::time::Instant::now();
    let mut acks = Vec::new();
    let mut acked = 0u64;
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
            ..PublishRecord::new(args.topic.clone(), payload)
        };
        if args.ack {
            acks.push(client.send_acked(&record).await?);
            // Collect finished acks as we go, so memory stays bounded.
            if acks.len() >= 4096 {
                for a in acks.drain(..) {
                    a.await?;
                    acked += 1;
                }
            }
        } else {
            client.publish_with(&record).await?;
        }
    }
    for a in acks.drain(..) {
        a.await?;
        acked += 1;
    }
    client.flush().await?;
    let secs = start.elapsed().as_secs_f64();
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "sent": args.count, "acked": acked })
        );
    } else {
        eprintln!(
            "sent {} records to {} in {:.3} s ({:.0}/s){}",
            args.count,
            args.topic,
            secs,
            args.count as f64 / secs.max(1e-9),
            if args.ack {
                format!(", {acked} acknowledged")
            } else {
                String::new()
            }
        );
    }
    client.close().await?;
    Ok(())
}
