//! `fogline consumer ls|info|rm`: a running node's durable consumers, over the native
//! protocol.

use clap::Subcommand;
use fogline_client::ConsumerDetail;

use crate::cmd::stream::{connect, Target};

/// Inspect and delete the consumers of a running node.
#[derive(Subcommand, Debug)]
pub enum ConsumerCommand {
    /// One line per consumer (durable ones, open or not; open ephemeral ones).
    Ls {
        /// Only this stream's.
        #[arg(long)]
        stream: Option<String>,
        #[command(flatten)]
        target: Target,
    },
    /// Everything about one durable consumer.
    Info {
        /// Its stream.
        stream: String,
        /// Its name.
        name: String,
        #[command(flatten)]
        target: Target,
    },
    /// Delete a durable consumer (its stored position); one that is open is refused.
    Rm {
        /// Its stream.
        stream: String,
        /// Its name.
        name: String,
        #[command(flatten)]
        target: Target,
    },
}

/// Runs a consumer subcommand.
pub fn run(cmd: ConsumerCommand) -> anyhow::Result<()> {
    crate::cmd::runtime(Some(1))?.block_on(async move {
        match cmd {
            ConsumerCommand::Ls { stream, target } => {
                let client = connect(&target).await?;
                let list = client.consumers(stream.as_deref()).await?;
                client.close().await?;
                if target.json {
                    let v: Vec<_> = list.iter().map(to_json).collect();
                    println!("{}", serde_json::to_string_pretty(&v)?);
                } else {
                    println!(
                        "{:<16} {:<20} {:<5} {:>12} {:>10} {:>10} {:>11}",
                        "stream", "name", "open", "ack floor", "lag", "pending", "redelivered"
                    );
                    for c in &list {
                        println!(
                            "{:<16} {:<20} {:<5} {:>12} {:>10} {:>10} {:>11}",
                            c.stream.as_str(),
                            name(c),
                            if c.open { "yes" } else { "no" },
                            c.ack_floor,
                            c.lag,
                            c.pending_acks,
                            c.redelivered
                        );
                    }
                }
            }
            ConsumerCommand::Info {
                stream,
                name: n,
                target,
            } => {
                let client = connect(&target).await?;
                let c = client.consumer_info(&stream, &n).await?;
                client.close().await?;
                let v = to_json(&c);
                if target.json {
                    println!("{}", serde_json::to_string_pretty(&v)?);
                } else {
                    for (k, v) in v.as_object().into_iter().flatten() {
                        println!("{k:>13}: {v}");
                    }
                }
            }
            ConsumerCommand::Rm {
                stream,
                name: n,
                target,
            } => {
                let client = connect(&target).await?;
                client.consumer_delete(&stream, &n).await?;
                client.close().await?;
                if !target.json {
                    println!("consumer {n:?} of stream {stream:?} deleted");
                }
            }
        }
        Ok(())
    })
}

fn name(c: &ConsumerDetail) -> String {
    if c.name.is_empty() {
        "(ephemeral)".into()
    } else {
        c.name.to_string()
    }
}

fn to_json(c: &ConsumerDetail) -> serde_json::Value {
    serde_json::json!({
        "stream": c.stream.as_str(),
        "name": (!c.name.is_empty()).then(|| c.name.as_str()),
        "open": c.open,
        "filter": (!c.filter.is_empty()).then(|| c.filter.as_str()),
        "ack_floor": c.ack_floor,
        "cursor": c.cursor,
        "pending_acks": c.pending_acks,
        "lag": c.lag,
        "delivered": c.delivered,
        "redelivered": c.redelivered,
    })
}
