//! `fogline stream ls|info`: what the server's streams hold.

use clap::Subcommand;
use fogline_client::{Client, ClientOptions, StreamInfo};

/// Inspect streams on a running server.
#[derive(Subcommand, Debug)]
pub enum StreamCommand {
    /// One line per stream.
    Ls {
        /// Server address.
        #[arg(long, short, default_value = "127.0.0.1:7766", env = "FOGLINE_SERVER")]
        server: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Everything about one stream.
    Info {
        /// The stream.
        name: String,
        /// Server address.
        #[arg(long, short, default_value = "127.0.0.1:7766", env = "FOGLINE_SERVER")]
        server: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a stream subcommand.
pub fn run(cmd: StreamCommand) -> anyhow::Result<()> {
    crate::cmd::runtime(Some(1))?.block_on(async move {
        let (server, name, json) = match &cmd {
            StreamCommand::Ls { server, json } => (server, None, *json),
            StreamCommand::Info { name, server, json } => (server, Some(name), *json),
        };
        let client = Client::connect(
            server,
            ClientOptions {
                reconnect: None,
                ..ClientOptions::default()
            },
        )
        .await?;
        let mut streams = client.streams().await?;
        client.close().await?;
        if let Some(n) = name {
            streams.retain(|s| s.name.as_str() == n.as_str());
            if streams.is_empty() {
                anyhow::bail!("no stream named {n:?}");
            }
        }
        if json {
            let v: Vec<_> = streams.iter().map(to_json).collect();
            println!("{}", serde_json::to_string_pretty(&v)?);
        } else if name.is_some() {
            for (k, v) in to_json(&streams[0]).as_object().into_iter().flatten() {
                println!("{k:>13}: {v}");
            }
        } else {
            println!(
                "{:<20} {:<7} {:>12} {:>14} {:>9}  subjects",
                "name", "storage", "records", "bytes", "segments"
            );
            for s in &streams {
                let subjects: Vec<&str> = s.subjects.iter().map(|x| x.as_str()).collect();
                println!(
                    "{:<20} {:<7} {:>12} {:>14} {:>9}  {}",
                    s.name.as_str(),
                    format!("{:?}", s.storage).to_lowercase(),
                    s.records,
                    s.bytes,
                    s.segments,
                    subjects.join(" ")
                );
            }
        }
        Ok(())
    })
}

fn to_json(s: &StreamInfo) -> serde_json::Value {
    serde_json::json!({
        "name": s.name.as_str(),
        "storage": format!("{:?}", s.storage).to_lowercase(),
        "subjects": s.subjects.iter().map(|x| x.as_str()).collect::<Vec<_>>(),
        "first_offset": s.first_offset,
        "next_offset": s.next_offset,
        "records": s.records,
        "bytes": s.bytes,
        "segments": s.segments,
        "consumers": s.consumers,
    })
}
