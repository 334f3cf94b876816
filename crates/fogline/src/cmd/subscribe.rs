//! `fogline sub`: receive live records, or replay a stream through a consumer.

use std::time::Duration;

use clap::Args;
use fogline_client::{ClientError, ConsumerOptions, ErrorCode, StartPosition, SubscribeOptions};
use fogline_probe::accounting::{Arrival, Delivery, SubscriberLedger};
use fogline_probe::latency::LatencyRecorder;

use crate::cmd::connect::ConnectArgs;

/// Receive records.
#[derive(Args, Debug)]
pub struct SubArgs {
    /// Topic filter (MQTT `+` and `#` wildcards).
    pub filter: String,
    /// Stop after this many records.
    #[arg(long, short = 'n')]
    pub count: Option<u64>,
    /// Read stream NAME through a consumer instead of live delivery.
    #[arg(long)]
    pub stream: Option<String>,
    /// With --stream: earliest, latest, an offset, or a time (RFC 3339 or microseconds since the epoch).
    #[arg(long, default_value = "earliest")]
    pub from: String,
    /// With --stream: a durable consumer name (its position is kept by the server).
    #[arg(long)]
    pub name: Option<String>,
    /// Only records whose data profile satisfies this interest (`sensor=li* alt=100..`,
    /// docs/PROFILES.md): routed by the server for live delivery, checked here for --stream.
    #[arg(long)]
    pub profile: Option<String>,
    /// Stop when nothing arrives for this long (e.g. 2s); default: wait forever.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub idle: Option<Duration>,
    /// Do not print records; with --json print the summary only.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print one JSON summary at the end: {"received","duplicates","gaps",
    /// "out_of_order","latency_us":{"p50","p99","max"},"seconds","records_per_s"}
    /// (seconds from the first to the last record received).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub conn: ConnectArgs,
}

/// Runs `fogline sub`.
pub fn run(args: SubArgs) -> anyhow::Result<()> {
    crate::cmd::runtime(Some(1))?.block_on(subscribe(args))
}

/// Accounting of generated payloads (see `fogline pub`).
#[derive(Default)]
struct Tally {
    received: u64,
    ledger: SubscriberLedger,
    highest: Option<u64>,
    lowest: Option<u64>,
    latency: LatencyRecorder,
    first: Option<std::time::Instant>,
    last: Option<std::time::Instant>,
}

impl Tally {
    fn add(&mut self, payload: &[u8]) {
        self.received += 1;
        let now = std::time::Instant::now();
        self.first.get_or_insert(now);
        self.last = Some(now);
        // Only `fogline pub`'s own messages are counted for gaps and latency.
        let Some(h) = fogline_probe::payload::decode_strict(payload) else {
            return;
        };
        if h.producer == fogline_probe::payload::WARMUP_PRODUCER {
            return;
        }
        if self.ledger.record(0, h.seq) == Arrival::Foreign {
            return;
        }
        self.lowest = Some(self.lowest.map_or(h.seq, |x| x.min(h.seq)));
        self.highest = Some(self.highest.map_or(h.seq, |x| x.max(h.seq)));
        let now = fogline_probe::clock::now_ns();
        if now >= h.sent_ns {
            self.latency.record(now - h.sent_ns);
        }
    }

    fn summary(&self) -> serde_json::Value {
        let mut d = Delivery::default();
        self.ledger
            .settle(&[self.highest.map_or(0, |h| h + 1)], &mut d);
        // Gaps: numbers between the lowest and the highest seen that never came (a
        // subscriber that joined late does not count the ones before it).
        let gaps = match (self.lowest, self.highest) {
            (Some(lo), Some(hi)) => (hi - lo + 1).saturating_sub(self.ledger.unique()),
            _ => 0,
        };
        let lat = self.latency.summary();
        let secs = match (self.first, self.last) {
            (Some(a), Some(b)) => (b - a).as_secs_f64(),
            _ => 0.0,
        };
        serde_json::json!({
            "received": self.received,
            "seconds": secs,
            "records_per_s": if secs > 0.0 { self.received as f64 / secs } else { 0.0 },
            "duplicates": d.duplicates,
            "gaps": gaps,
            "out_of_order": d.reordered,
            "latency_us": { "p50": lat.p50_us, "p99": lat.p99_us, "max": lat.max_us },
        })
    }
}

async fn subscribe(args: SubArgs) -> anyhow::Result<()> {
    let opts = args.conn.options("fogline sub")?;
    let interest = match &args.profile {
        Some(p) => Some(
            fogline_profile::Interest::parse(p).map_err(|e| anyhow::anyhow!("--profile: {e}"))?,
        ),
        None => None,
    };
    let client = args.conn.connect(opts).await?;
    let mut tally = Tally::default();
    let limit = args.count.unwrap_or(u64::MAX);
    let idle = args.idle.unwrap_or(Duration::from_secs(u64::MAX / 4));
    let print = |topic: &str, payload: &[u8]| {
        if !args.quiet && !args.json {
            println!("{topic} {}", String::from_utf8_lossy(payload));
        }
    };
    match &args.stream {
        None => {
            let sub_opts = SubscribeOptions {
                interest: args.profile.clone(),
                ..SubscribeOptions::default()
            };
            let mut sub = client.subscribe(&args.filter, sub_opts).await?;
            while tally.received < limit {
                let Ok(Some(m)) = tokio::time::timeout(idle, sub.recv()).await else {
                    break;
                };
                print(m.topic.as_str(), &m.payload);
                tally.add(&m.payload);
            }
        }
        Some(stream) => {
            let copts = ConsumerOptions {
                name: args.name.clone().unwrap_or_default(),
                filter: args.filter.clone(),
                start: start_position(&args.from)?,
                ack_timeout: Some(Duration::from_secs(30)),
                ..ConsumerOptions::default()
            };
            let mut consumer = client.consumer(stream, copts).await?;
            while tally.received < limit {
                let want = (limit - tally.received).min(1024) as u32;
                let got = match consumer
                    .fetch(want, idle.min(Duration::from_secs(3600)))
                    .await
                {
                    // Damaged or lost records: the consumer has moved past them.
                    Err(ClientError::Server {
                        code: ErrorCode::DataLost,
                        message,
                    }) => {
                        eprintln!("warning: {message}");
                        continue;
                    }
                    other => other?,
                };
                if got.is_empty() {
                    break;
                }
                let offsets: Vec<u64> = got.iter().map(|r| r.offset).collect();
                for r in &got {
                    if let Some(i) = &interest {
                        let profile = fogline_profile::DataProfile::from_header_block(&r.headers);
                        if !i.matches(&profile, r.topic.as_str()) {
                            continue;
                        }
                    }
                    print(r.topic.as_str(), &r.payload);
                    tally.add(&r.payload);
                }
                consumer.ack(&offsets)?;
            }
            consumer.close()?;
        }
    }
    if args.json {
        println!("{}", tally.summary());
    } else {
        eprintln!("received {} records", tally.received);
    }
    client.close().await?;
    Ok(())
}

/// Parses `--from`: earliest, latest, an offset, or a time.
fn start_position(s: &str) -> anyhow::Result<StartPosition> {
    Ok(match s {
        "earliest" => StartPosition::Earliest,
        "latest" => StartPosition::Latest,
        "resume" => StartPosition::Resume,
        _ => {
            if let Ok(offset) = s.parse::<u64>() {
                // Plain numbers below year-2001 microseconds are offsets.
                if offset < 978_307_200_000_000 {
                    return Ok(StartPosition::Offset(offset));
                }
                return Ok(StartPosition::Time(offset));
            }
            let t = humantime::parse_rfc3339_weak(s).map_err(|e| {
                anyhow::anyhow!(
                    "--from {s:?}: expected earliest, latest, an offset or a time ({e})"
                )
            })?;
            let us = t.duration_since(std::time::UNIX_EPOCH)?.as_micros() as u64;
            StartPosition::Time(us)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_parses() {
        assert_eq!(start_position("earliest").unwrap(), StartPosition::Earliest);
        assert_eq!(start_position("42").unwrap(), StartPosition::Offset(42));
        assert_eq!(
            start_position("2026-11-22T06:00:00Z").unwrap(),
            StartPosition::Time(1_795_327_200_000_000)
        );
        assert!(start_position("yesterday").is_err());
    }

    #[test]
    fn tally_counts_gaps_duplicates_and_reordering() {
        let mut enc = fogline_probe::payload::Encoder::new(32);
        let mut t = Tally::default();
        for seq in [0u64, 1, 3, 2, 3, 5] {
            let p = enc.encode(fogline_probe::payload::Header {
                producer: 0,
                seq,
                sent_ns: 0,
            });
            t.add(&p);
        }
        let s = t.summary();
        assert_eq!(s["received"], 6);
        assert_eq!(s["duplicates"], 1);
        assert_eq!(s["gaps"], 1); // 4 never came
        assert_eq!(s["out_of_order"], 1); // 2 after 3
    }
}
