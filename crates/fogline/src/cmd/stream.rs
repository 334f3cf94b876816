//! `fogline stream ls|info|add|edit|purge|rm`: a running node's streams, over the native
//! protocol.

use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use fogline_client::{Client, ClientOptions, Storage, StreamDetail, StreamSpec, StreamUpdate};

use crate::cmd::connect::ConnectArgs;

/// Where the node is, and how to print.
#[derive(Args, Debug, Clone)]
pub struct Target {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub conn: ConnectArgs,
}

/// Manage the streams of a running node.
#[derive(Subcommand, Debug)]
pub enum StreamCommand {
    /// One line per stream.
    Ls {
        #[command(flatten)]
        target: Target,
    },
    /// Everything about one stream.
    Info {
        /// The stream.
        name: String,
        #[command(flatten)]
        target: Target,
    },
    /// Create a stream.
    Add {
        /// The stream's name (1-64 of A-Z a-z 0-9 . _ -).
        name: String,
        /// Topic filters it captures (MQTT wildcards); repeatable or comma-separated.
        #[arg(long = "subjects", required = true, value_delimiter = ',')]
        subjects: Vec<String>,
        /// memory, mmap or fsync (default: the node's).
        #[arg(long)]
        storage: Option<String>,
        /// Retention by size, e.g. 512MiB ("0": no limit; default: the node's).
        #[arg(long)]
        retention_bytes: Option<bytesize::ByteSize>,
        /// Retention by age, e.g. 24h ("0s": no limit; default: the node's).
        #[arg(long, value_parser = humantime::parse_duration)]
        retention_age: Option<Duration>,
        /// Segment size, e.g. 16MiB (default: the node's).
        #[arg(long)]
        segment_bytes: Option<bytesize::ByteSize>,
        #[command(flatten)]
        target: Target,
    },
    /// Change a stream's subjects or retention.
    Edit {
        /// The stream.
        name: String,
        /// New topic filters (replace the old ones); repeatable or comma-separated.
        #[arg(long = "subjects", value_delimiter = ',')]
        subjects: Vec<String>,
        /// New retention by size ("0": no limit, "default": the node's).
        #[arg(long)]
        retention_bytes: Option<String>,
        /// New retention by age ("0s": no limit, "default": the node's).
        #[arg(long)]
        retention_age: Option<String>,
        #[command(flatten)]
        target: Target,
    },
    /// Drop every record of a stream (its offsets go on where they were).
    Purge {
        /// The stream.
        name: String,
        #[command(flatten)]
        target: Target,
    },
    /// Delete a stream with its records and consumers.
    Rm {
        /// The stream.
        name: String,
        #[command(flatten)]
        target: Target,
    },
}

/// Runs a stream subcommand.
pub fn run(cmd: StreamCommand) -> anyhow::Result<()> {
    crate::cmd::runtime(Some(1))?.block_on(async move {
        match cmd {
            StreamCommand::Ls { target } => {
                let client = connect(&target).await?;
                let streams = client.streams().await?;
                let mut details = Vec::new();
                for s in &streams {
                    details.push(client.stream_info(s.name.as_str()).await?);
                }
                client.close().await?;
                if target.json {
                    let v: Vec<_> = details.iter().map(to_json).collect();
                    println!("{}", serde_json::to_string_pretty(&v)?);
                } else {
                    print_table(&details);
                }
            }
            StreamCommand::Info { name, target } => {
                let client = connect(&target).await?;
                let d = client.stream_info(&name).await?;
                client.close().await?;
                show(&d, target.json)?;
            }
            StreamCommand::Add {
                name,
                subjects,
                storage,
                retention_bytes,
                retention_age,
                segment_bytes,
                target,
            } => {
                let spec = StreamSpec {
                    name: name.as_str().into(),
                    storage: storage.as_deref().map(parse_storage).transpose()?,
                    subjects: subjects.iter().map(|s| s.as_str().into()).collect(),
                    retention_bytes: retention_bytes
                        .map_or(fogline_client::NODE_DEFAULT, |b| b.as_u64()),
                    retention_age_ms: retention_age
                        .map_or(fogline_client::NODE_DEFAULT, |a| a.as_millis() as u64),
                    segment_bytes: segment_bytes
                        .map_or(fogline_client::NODE_DEFAULT, |b| b.as_u64()),
                };
                let client = connect(&target).await?;
                let d = client.stream_create(spec).await?;
                client.close().await?;
                show(&d, target.json)?;
            }
            StreamCommand::Edit {
                name,
                subjects,
                retention_bytes,
                retention_age,
                target,
            } => {
                let change = StreamUpdate {
                    subjects: (!subjects.is_empty()).then_some(subjects),
                    retention_bytes: retention_bytes.as_deref().map(parse_bytes).transpose()?,
                    retention_age_ms: retention_age.as_deref().map(parse_age).transpose()?,
                };
                if change == StreamUpdate::default() {
                    anyhow::bail!(
                        "nothing to change: give --subjects, --retention-bytes or --retention-age"
                    );
                }
                let client = connect(&target).await?;
                let d = client.stream_update(&name, change).await?;
                client.close().await?;
                show(&d, target.json)?;
            }
            StreamCommand::Purge { name, target } => {
                let client = connect(&target).await?;
                let d = client.stream_purge(&name).await?;
                client.close().await?;
                show(&d, target.json)?;
            }
            StreamCommand::Rm { name, target } => {
                let client = connect(&target).await?;
                client.stream_delete(&name).await?;
                client.close().await?;
                if !target.json {
                    println!("stream {name:?} deleted");
                }
            }
        }
        Ok(())
    })
}

/// A client for one command: no reconnects (a command fails at once when the node is down).
pub async fn connect(target: &Target) -> anyhow::Result<Client> {
    let opts = ClientOptions {
        reconnect: None,
        ..target.conn.options("fogline-cli")?
    };
    target.conn.connect(opts).await
}

fn parse_storage(s: &str) -> anyhow::Result<Storage> {
    match s {
        "memory" => Ok(Storage::Memory),
        "mmap" => Ok(Storage::Mmap),
        "fsync" => Ok(Storage::Fsync),
        other => anyhow::bail!("unknown storage {other:?} (expected memory, mmap or fsync)"),
    }
}

fn parse_bytes(s: &str) -> anyhow::Result<u64> {
    if s == "default" {
        return Ok(fogline_client::NODE_DEFAULT);
    }
    let b: bytesize::ByteSize = s
        .parse()
        .map_err(|e| anyhow::anyhow!("bad size {s:?}: {e}"))?;
    Ok(b.as_u64())
}

fn parse_age(s: &str) -> anyhow::Result<u64> {
    if s == "default" {
        return Ok(fogline_client::NODE_DEFAULT);
    }
    let d = humantime::parse_duration(s).with_context(|| format!("bad duration {s:?}"))?;
    Ok(d.as_millis() as u64)
}

fn storage_name(s: Storage) -> &'static str {
    match s {
        Storage::Memory => "memory",
        Storage::Mmap => "mmap",
        Storage::Fsync => "fsync",
    }
}

fn limit(v: u64, default: bool, show: impl Fn(u64) -> String) -> String {
    let v = if v == 0 { "none".to_string() } else { show(v) };
    if default {
        format!("{v} (node default)")
    } else {
        v
    }
}

fn time(us: u64) -> serde_json::Value {
    if us == 0 {
        serde_json::Value::Null
    } else {
        let t = std::time::UNIX_EPOCH + Duration::from_micros(us);
        humantime::format_rfc3339_millis(t).to_string().into()
    }
}

fn to_json(s: &StreamDetail) -> serde_json::Value {
    serde_json::json!({
        "name": s.name.as_str(),
        "storage": storage_name(s.storage),
        "subjects": s.subjects.iter().map(|x| x.as_str()).collect::<Vec<_>>(),
        "retention_bytes": (s.retention_bytes > 0).then_some(s.retention_bytes),
        "retention_age_seconds": (s.retention_age_ms > 0).then(|| s.retention_age_ms as f64 / 1000.0),
        "retention_bytes_default": s.retention_bytes_default,
        "retention_age_default": s.retention_age_default,
        "segment_bytes": s.segment_bytes,
        "records": s.records,
        "bytes": s.bytes,
        "segments": s.segments,
        "first_offset": s.first_offset,
        "next_offset": s.next_offset,
        "first_time": time(s.first_timestamp),
        "last_time": time(s.last_timestamp),
        "consumers_open": s.consumers,
    })
}

fn show(d: &StreamDetail, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(&to_json(d))?);
        return Ok(());
    }
    let subjects: Vec<&str> = d.subjects.iter().map(|s| s.as_str()).collect();
    let rows = [
        ("name", d.name.to_string()),
        ("storage", storage_name(d.storage).to_string()),
        ("subjects", subjects.join(" ")),
        (
            "retention",
            format!(
                "{}, {}",
                limit(d.retention_bytes, d.retention_bytes_default, |b| {
                    bytesize::ByteSize::b(b).to_string()
                }),
                limit(d.retention_age_ms, d.retention_age_default, |ms| {
                    humantime::format_duration(Duration::from_millis(ms)).to_string()
                })
            ),
        ),
        (
            "segment size",
            bytesize::ByteSize::b(d.segment_bytes).to_string(),
        ),
        ("records", d.records.to_string()),
        ("bytes", d.bytes.to_string()),
        ("segments", d.segments.to_string()),
        (
            "offsets",
            format!("{} .. {} (next)", d.first_offset, d.next_offset),
        ),
        ("first record", time(d.first_timestamp).to_string()),
        ("last record", time(d.last_timestamp).to_string()),
        ("consumers open", d.consumers.to_string()),
    ];
    for (k, v) in rows {
        println!("{k:>14}: {v}");
    }
    Ok(())
}

fn print_table(streams: &[StreamDetail]) {
    println!(
        "{:<20} {:<7} {:>12} {:>14} {:>9}  {:<24} subjects",
        "name", "storage", "records", "bytes", "segments", "retention"
    );
    for s in streams {
        let subjects: Vec<&str> = s.subjects.iter().map(|x| x.as_str()).collect();
        let retention = format!(
            "{}/{}",
            limit(s.retention_bytes, false, |b| bytesize::ByteSize::b(b)
                .to_string()),
            limit(s.retention_age_ms, false, |ms| {
                humantime::format_duration(Duration::from_millis(ms)).to_string()
            })
        );
        println!(
            "{:<20} {:<7} {:>12} {:>14} {:>9}  {:<24} {}",
            s.name.as_str(),
            storage_name(s.storage),
            s.records,
            s.bytes,
            s.segments,
            retention,
            subjects.join(" ")
        );
    }
}
