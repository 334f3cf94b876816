//! Publish throughput of one task: N records of 22 bytes.
//!
//! `cargo run --release -p fogline-client --example publish_rate -- [--acked|--tracked] [COUNT] [ADDR]`
//!
//! Fire-and-forget by default; `--acked` pipelines `send_acked` calls
//! (up to `max_inflight_acks` batches outstanding) and awaits every ack;
//! `--tracked` uses `publish_tracked` and one `flush` for all the acks.
//! `--topics4` spreads fire-and-forget records round-robin over 4 topics.
//! Without ADDR an in-process server that only decodes, counts (and acks)
//! records is started on 127.0.0.1:0, and the rate is measured until it has
//! counted every record. With ADDR (a real server) it is publish + flush.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use fogline_client::{Client, ClientOptions, PublishRecord};
use fogline_wire::{decode, encode, Frame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const PAYLOAD: &[u8; 22] = b"temperature=21.5;rh=40";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match args.iter().find(|a| a.starts_with("--")) {
        Some(flag) if ["--acked", "--tracked", "--topics4"].contains(&flag.as_str()) => {
            flag[2..].to_string()
        }
        Some(flag) => return Err(format!("unknown flag {flag}").into()),
        None => "fire-and-forget".to_string(),
    };
    args.retain(|a| !a.starts_with("--"));
    let mut args = args.into_iter();
    let count: u64 = args
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(10_000_000);
    let external = args.next();
    let counted = Arc::new(AtomicU64::new(0));
    let addr = match &external {
        Some(addr) => addr.clone(),
        None => start_counting_server(counted.clone()).await?,
    };
    let client = Client::connect(&addr, ClientOptions::default()).await?;
    let start = Instant::now();
    if mode == "topics4" {
        let topics = ["bench/s0", "bench/s1", "bench/s2", "bench/s3"];
        for i in 0..count {
            client.publish(topics[(i % 4) as usize], PAYLOAD).await?;
        }
    } else if mode == "tracked" {
        let record = PublishRecord::new("bench/sensor", &PAYLOAD[..]);
        for _ in 0..count {
            client.publish_tracked(&record).await?;
        }
    } else if mode == "acked" {
        let record = PublishRecord::new("bench/sensor", &PAYLOAD[..]);
        let mut pending = VecDeque::new();
        for _ in 0..count {
            pending.push_back(client.send_acked(&record).await?);
            if pending.len() >= 65_536 {
                if let Some(ack) = pending.pop_front() {
                    ack.await?;
                }
            }
        }
        for ack in pending {
            ack.await?;
        }
    } else {
        for _ in 0..count {
            client.publish("bench/sensor", PAYLOAD).await?;
        }
    }
    let queued = start.elapsed();
    client.flush().await?;
    if external.is_none() {
        while counted.load(Ordering::Acquire) < count {
            tokio::task::yield_now().await;
        }
    }
    let total = start.elapsed();
    println!(
        "{count} {} records of {} B: queued in {:.3} s, {} in {:.3} s = {:.0} records/s ({:.1} MB/s payload)",
        mode,
        PAYLOAD.len(),
        queued.as_secs_f64(),
        if external.is_some() { "flushed" } else { "counted by the server" },
        total.as_secs_f64(),
        count as f64 / total.as_secs_f64(),
        (count * PAYLOAD.len() as u64) as f64 / total.as_secs_f64() / 1e6,
    );
    Ok(())
}

/// A server that answers the handshake, then decodes frames, counts
/// published records and acks those that ask; nothing else.
async fn start_counting_server(counted: Arc<AtomicU64>) -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?.to_string();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut buf = BytesMut::with_capacity(1 << 20);
                loop {
                    loop {
                        match decode(&mut buf, 16 << 20) {
                            Ok(Some(Frame::Hello { .. })) => {
                                let mut out = BytesMut::new();
                                let ok = Frame::HelloOk {
                                    version: 1,
                                    server_name: "count".into(),
                                    max_message: 1 << 20,
                                    max_frame: 16 << 20,
                                };
                                if encode(&ok, &mut out).is_err()
                                    || stream.write_all(&out).await.is_err()
                                {
                                    return;
                                }
                            }
                            Ok(Some(Frame::Publish {
                                request_id,
                                records,
                                ..
                            })) => {
                                let count = records.count();
                                if request_id != 0 {
                                    let mut out = BytesMut::new();
                                    let ack = Frame::PubAck { request_id, count };
                                    if encode(&ack, &mut out).is_err()
                                        || stream.write_all(&out).await.is_err()
                                    {
                                        return;
                                    }
                                }
                                counted.fetch_add(u64::from(count), Ordering::Release);
                            }
                            Ok(Some(_)) => {}
                            Ok(None) => break,
                            Err(_) => return,
                        }
                    }
                    buf.reserve(1 << 20);
                    match stream.read_buf(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                }
            });
        }
    });
    Ok(addr)
}
