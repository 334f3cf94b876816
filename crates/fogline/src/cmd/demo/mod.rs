//! `fogline demo`: the whole data path on embedded defaults, in one command.
//!
//! Starts a server (embedded default configuration, a temporary data
//! directory, ephemeral ports), a live subscriber on `site/+/telemetry`, and
//! a publisher sending numbered readings with acknowledgements, and a SQL rule
//! counting each robot's records in 1-second windows inside the node; then
//! replays the stored stream through a durable consumer, reads the node's
//! metrics from its admin API, and prints what each saw.

mod rule;

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use fogline_client::{
    Client, ClientOptions, ConsumerOptions, PublishRecord, StartPosition, SubscribeOptions,
};
use fogline_node::{Config, Node};

/// Run a server, a publisher and subscribers in one process and show records flowing.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Records to publish.
    #[arg(long, short = 'n', default_value_t = 100_000)]
    pub count: u64,
    /// Payload bytes per record.
    #[arg(long, default_value_t = 64)]
    pub size: usize,
}

/// Runs the demo.
pub fn run(args: DemoArgs) -> anyhow::Result<()> {
    crate::cmd::runtime(None)?.block_on(demo(args))
}

async fn demo(args: DemoArgs) -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("creating a temporary data directory")?;
    let mut cfg = Config::default();
    // Ephemeral ports, so the demo runs beside a node already on the default ones.
    cfg.native.listen = vec!["127.0.0.1:0".into()];
    cfg.mqtt.listen = vec!["127.0.0.1:0".into()];
    cfg.admin.listen = vec!["127.0.0.1:0".into()];
    cfg.broker.data_dir = dir.path().to_path_buf();
    let node = Node::start(cfg).await.context("starting the node")?;
    let addr = node.address("native").context("no native listener")?;
    let http = node.address("http").context("no admin listener")?;
    println!(
        "1. node up: native protocol on {addr} (embedded defaults: storage mmap, data in {})",
        dir.path().display()
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(node.run(async {
        let _ = stopped.await;
    }));

    let opts = || ClientOptions {
        client_name: "demo".into(),
        ..ClientOptions::default()
    };
    let sub_client = Client::connect(&addr, opts()).await?;
    let mut sub = sub_client
        .subscribe("site/+/telemetry", SubscribeOptions::default())
        .await?;
    println!("2. live subscriber on site/+/telemetry");
    let mut counts = rule::start(&http, &sub_client).await?;
    println!("   SQL rule in the node: {}", rule::SQL);

    let n = args.count;
    let receiver = tokio::spawn(async move {
        // Order is kept per topic (records of different topics may interleave
        // differently than they were published).
        let mut got = 0u64;
        let mut in_order = true;
        let mut last: std::collections::HashMap<String, u64> = Default::default();
        while got < n {
            match tokio::time::timeout(Duration::from_secs(10), sub.recv()).await {
                Ok(Some(m)) => {
                    let seq = m
                        .payload
                        .get(..8)
                        .and_then(|b| b.try_into().ok())
                        .map(u64::from_le_bytes);
                    match (seq, last.get(m.topic.as_str())) {
                        (Some(s), Some(&prev)) if s <= prev => {
                            if in_order {
                                eprintln!(
                                    "first out-of-order record on {}: {s} after {prev}",
                                    m.topic.as_str()
                                );
                            }
                            in_order = false;
                        }
                        (None, _) => in_order = false,
                        _ => {}
                    }
                    if let Some(s) = seq {
                        last.insert(m.topic.as_str().to_string(), s);
                    }
                    got += 1;
                }
                _ => break,
            }
        }
        (got, in_order)
    });

    let publisher = Client::connect(&addr, opts()).await?;
    let t0 = Instant::now();
    let mut acks = Vec::new();
    for seq in 0..n {
        let mut payload = vec![b'.'; args.size.max(8)];
        payload[..8].copy_from_slice(&seq.to_le_bytes());
        let rec = PublishRecord::new(format!("site/robot{}/telemetry", seq % 4), payload);
        acks.push(publisher.send_acked(&rec).await?);
    }
    for a in acks {
        a.await?;
    }
    publisher.flush().await?;
    let pub_secs = t0.elapsed().as_secs_f64();
    println!("3. published {n} records of {} B over 4 topics in {pub_secs:.3} s ({:.0} records/s, acknowledged)", args.size, n as f64 / pub_secs);

    let (got, in_order) = receiver.await?;
    println!(
        "4. live subscriber received {got}/{n} records{}",
        if in_order {
            ", in order per topic"
        } else {
            ", OUT OF ORDER"
        }
    );

    let (per_robot, windows) = rule::totals(&mut counts, n).await;
    let counted: u64 = per_robot.values().sum();
    let list: Vec<String> = per_robot.iter().map(|(r, c)| format!("{r} {c}")).collect();
    println!(
        "   the rule counted {counted}/{n} records in {windows} window result(s): {}",
        list.join(", ")
    );

    let mut consumer = sub_client
        .consumer(
            "default",
            ConsumerOptions {
                start: StartPosition::Earliest,
                // The stream also holds the rule's results.
                filter: "site/+/telemetry".into(),
                ..ConsumerOptions::default()
            },
        )
        .await?;
    let mut replayed = 0u64;
    loop {
        let batch = consumer.fetch(1024, Duration::from_millis(200)).await?;
        if batch.is_empty() {
            break;
        }
        replayed += batch.len() as u64;
        let offsets: Vec<u64> = batch.iter().map(|r| r.offset).collect();
        consumer.ack(&offsets)?;
    }
    consumer.close()?;
    println!("5. durable consumer replayed {replayed} stored records from the start of stream \"default\"");
    for s in sub_client.streams().await? {
        println!(
            "   stream {}: {} records, {} bytes in {} segment(s)",
            s.name.as_str(),
            s.records,
            s.bytes,
            s.segments
        );
    }
    sub_client.close().await?;
    publisher.close().await?;
    let metrics = rule::get(&http, "/metrics").await?;
    let line = metrics
        .lines()
        .find(|l| l.starts_with("fogline_records_in_total{protocol=\"native\"}"))
        .unwrap_or("fogline_records_in_total: not found");
    println!("6. admin API on http://{http}/ (dashboard, /api/v1, /metrics): {line}");
    let _ = stop.send(());
    running.await??;
    let ok = got == n && in_order && replayed == n && counted == n;
    println!(
        "{}",
        if ok {
            "ok: every record was delivered live, counted by the rule and stored"
        } else {
            "FAILED: records went missing"
        }
    );
    if !ok {
        anyhow::bail!("demo lost records");
    }
    println!("next: `fogline serve` (dashboard on http://127.0.0.1:7767/), then `fogline sub 'site/#'` and `fogline pub site/r1/temp 21.5` in other terminals");
    Ok(())
}
