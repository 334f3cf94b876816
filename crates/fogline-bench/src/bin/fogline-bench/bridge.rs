//! `fogline-bench bridge`: the Kafka bridge against Kafka's own producer (issue 34).
//!
//! One Kafka (KRaft, `bench/peers/start.sh kafka DIR PORT persistent`, from the jars
//! `bench/peers/install.sh kafka` fetches), pinned to core 0; the producers on core 1:
//!
//! - **Forwarding rate**: a stream holding N records of S bytes (stored before the clock
//!   starts) forwarded by fogline's bridge (`acks=all`, batches of up to 10,000 records or
//!   900 KiB, its defaults), from its start until Kafka acknowledged the last record, against
//!   `kafka-producer-perf-test` (`org.apache.kafka.tools.ProducerPerformance`) sending as many
//!   records of the same size with `acks=all`, once with the producer's default batching and
//!   once with `batch.size=1048576 linger.ms=5`. Each into a fresh topic of one partition;
//!   the three alternate within a round.
//! - **Catching up**: records published at a steady rate into a stream the bridge forwards;
//!   Kafka stopped (SIGTERM) for the outage and started again on its data; the time from
//!   Kafka answering metadata again to the bridge's lag being zero.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use fogline_bench::pin;
use fogline_bridge::kafka::out::KafkaOut;
use fogline_bridge::{BridgeStatus, KafkaOutConfig};
use fogline_broker::{Broker, BrokerConfig, StorageMode, StreamConfig};
use fogline_wire::RecordBlock;

/// Arguments of `fogline-bench bridge`.
#[derive(clap::Args, Debug)]
pub struct BridgeArgs {
    /// Record sizes (payload bytes), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "100,1024")]
    sizes: Vec<usize>,
    /// Payload bytes per forwarding run (records = this / size, at most 1,000,000).
    #[arg(long, default_value_t = 200_000_000)]
    bytes_per_run: usize,
    /// Rounds; each runs every size and producer.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Catching-up runs.
    #[arg(long, default_value_t = 2)]
    outages: usize,
    /// Kafka's downtime in a catching-up run.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    outage: Duration,
    /// Records per second published during a catching-up run (100 B each).
    #[arg(long, default_value_t = 10_000)]
    rate: u64,
    /// Kafka's port (and the next one, its controller's).
    #[arg(long, default_value_t = 19392)]
    port: u16,
    /// Scratch folder: Kafka's data and fogline's streams (on the disk, not tmpfs).
    #[arg(long, default_value = "/work/bridge-scratch")]
    work_dir: PathBuf,
    /// Where summary.md goes (printed only when absent).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn repo() -> PathBuf {
    std::env::current_dir().expect("a working directory")
}

/// The Kafka under test.
struct Kafka {
    dir: PathBuf,
    port: u16,
    bootstrap: String,
}

impl Kafka {
    fn start(dir: &Path, port: u16) -> anyhow::Result<Kafka> {
        let out = Command::new(repo().join("bench/peers/start.sh"))
            .args([
                "kafka",
                dir.to_str().unwrap(),
                &port.to_string(),
                "persistent",
            ])
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "Kafka did not start (run from the repository root; install it with bench/peers/install.sh kafka): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let k = Kafka {
            dir: dir.to_path_buf(),
            port,
            bootstrap: format!("127.0.0.1:{port}"),
        };
        k.pin()?;
        Ok(k)
    }

    fn pid(&self) -> anyhow::Result<u32> {
        Ok(std::fs::read_to_string(self.dir.join("pid"))?
            .trim()
            .parse()?)
    }

    fn pin(&self) -> anyhow::Result<()> {
        Ok(pin::pin_process(self.pid()?, 0)?)
    }

    /// SIGTERM, and waits until it is gone.
    fn stop(&self) -> anyhow::Result<()> {
        let pid = self.pid()?;
        Command::new("kill").arg(pid.to_string()).status()?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while Path::new(&format!("/proc/{pid}/exe")).exists() {
            anyhow::ensure!(Instant::now() < deadline, "Kafka did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Starts it again on its data (as start.sh does, without formatting).
    fn restart(&self) -> anyhow::Result<()> {
        let libs = repo().join("bench/peers/.install/kafka/libs");
        let log = std::fs::File::create(self.dir.join("log.again"))?;
        let child = Command::new("java")
            .args(["-Xms1g", "-Xmx1g"])
            .arg(format!(
                "-Dlog4j.configuration=file:{}",
                self.dir.join("log4j.properties").display()
            ))
            .arg("-cp")
            .arg(format!("{}/*", libs.display()))
            .arg("kafka.Kafka")
            .arg(self.dir.join("server.properties"))
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        std::fs::write(self.dir.join("pid"), child.id().to_string())?;
        std::mem::forget(child);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.pin()
    }

    /// `kafka-producer-perf-test`: records/s of `n` records of `size` bytes into `topic`.
    fn perf_test(&self, topic: &str, n: usize, size: usize, tuned: bool) -> anyhow::Result<f64> {
        let libs = repo().join("bench/peers/.install/kafka/libs");
        let mut props = vec![
            format!("bootstrap.servers={}", self.bootstrap),
            "acks=all".into(),
        ];
        if tuned {
            props.push("batch.size=1048576".into());
            props.push("linger.ms=5".into());
        }
        let out = Command::new("taskset")
            .args(["-c", "1", "java", "-Xms512m", "-Xmx512m", "-cp"])
            .arg(format!("{}/*", libs.display()))
            .arg(format!(
                "-Dlog4j.configuration=file:{}",
                self.dir.join("log4j.properties").display()
            ))
            .arg("org.apache.kafka.tools.ProducerPerformance")
            .args(["--topic", topic, "--num-records", &n.to_string()])
            .args(["--record-size", &size.to_string(), "--throughput", "-1"])
            .arg("--producer-props")
            .args(&props)
            .stderr(Stdio::null())
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        // The last line: "N records sent, X records/sec (Y MB/sec), ..."
        let last = text
            .lines()
            .rev()
            .find(|l| l.contains("records sent"))
            .ok_or_else(|| anyhow::anyhow!("no summary from the perf test: {text}"))?;
        let rate = last
            .split(", ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("cannot read {last:?}"))?;
        Ok(rate)
    }
}

impl Drop for Kafka {
    fn drop(&mut self) {
        let _ = Command::new(repo().join("bench/peers/stop.sh"))
            .arg(&self.dir)
            .status();
    }
}

/// A broker with one file-backed stream `bench` capturing every topic, in `dir`.
fn broker(dir: &Path) -> anyhow::Result<Broker> {
    let config = BrokerConfig {
        storage: StorageMode::Mmap,
        data_dir: dir.to_path_buf(),
        streams: vec![StreamConfig::new("bench", vec!["#".into()])],
        ..BrokerConfig::default()
    };
    Ok(Broker::open(config)?.0)
}

/// Appends `n` records of `size` bytes (1,000 a batch).
fn fill(b: &Broker, n: usize, size: usize) -> anyhow::Result<()> {
    let payload = vec![b'x'; size];
    let stream = b.stream("bench").expect("the stream");
    let mut left = n;
    while left > 0 {
        let k = left.min(1000);
        let records = (0..k).map(|_| (0u64, &b""[..], &payload[..]));
        let batch = fogline_broker::Batch {
            topic: "site/a/temp".into(),
            records: RecordBlock::from_records(records)?,
            timestamp: fogline_broker::now_micros(),
            priority: false,
            origin: b.next_origin(),
        };
        stream.append(&batch)?;
        left -= k;
    }
    Ok(())
}

fn bridge_cfg(kafka: &Kafka, topic: &str) -> KafkaOutConfig {
    KafkaOutConfig {
        topic: topic.to_string(),
        key: fogline_bridge::config::KeyFrom::None,
        ..KafkaOutConfig::new("bench", vec![kafka.bootstrap.clone()])
    }
}

/// Records/s of the bridge forwarding `n` stored records of `size` bytes.
fn forward(
    rt: &tokio::runtime::Runtime,
    kafka: &Kafka,
    dir: &Path,
    topic: &str,
    n: usize,
    size: usize,
) -> anyhow::Result<f64> {
    let b = broker(dir)?;
    fill(&b, n, size)?;
    let out = KafkaOut::new("bench", bridge_cfg(kafka, topic), "bench", b.clone(), None)
        .map_err(anyhow::Error::msg)?;
    let status = out.status();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let start = Instant::now();
    let task = rt.spawn(out.run(stopped));
    let deadline = start + Duration::from_secs(600);
    while status.records.load(Relaxed) < n as u64 {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the bridge did not finish: {:?}",
            status.snapshot()
        );
        std::thread::sleep(Duration::from_micros(200));
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    stop.send(true)?;
    rt.block_on(task)?;
    anyhow::ensure!(
        status.errors.load(Relaxed) == 0,
        "errors: {:?}",
        status.snapshot()
    );
    drop(b);
    std::fs::remove_dir_all(dir)?;
    Ok(rate)
}

/// Seconds from Kafka answering again to the bridge's lag being zero, and the backlog then.
fn catch_up(
    rt: &tokio::runtime::Runtime,
    kafka: &Kafka,
    dir: &Path,
    topic: &str,
    a: &BridgeArgs,
) -> anyhow::Result<(f64, u64)> {
    let b = broker(dir)?;
    let out = KafkaOut::new("bench", bridge_cfg(kafka, topic), "bench", b.clone(), None)
        .map_err(anyhow::Error::msg)?;
    let status = out.status();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let task = rt.spawn(out.run(stopped));
    // The publisher: `rate` records/s in batches every 10 ms.
    let (halt, halted) = tokio::sync::watch::channel(false);
    let per_tick = (a.rate / 100).max(1) as usize;
    let pb = b.clone();
    let publisher = rt.spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(10));
        while !*halted.borrow() {
            tick.tick().await;
            if fill(&pb, per_tick, 100).is_err() {
                break;
            }
        }
    });
    let lag_zero = |status: &BridgeStatus, within: Duration| -> anyhow::Result<Instant> {
        let deadline = Instant::now() + within;
        loop {
            if status.lag_records.load(Relaxed) == 0
                && status.state() == fogline_bridge::State::Running
            {
                return Ok(Instant::now());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "lag not zero: {:?}",
                status.snapshot()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    std::thread::sleep(Duration::from_secs(5));
    lag_zero(&status, Duration::from_secs(30))?;
    kafka.stop()?;
    std::thread::sleep(a.outage);
    kafka.restart()?;
    // Kafka answers metadata again: the outage is over.
    let plain = fogline_bridge::kafka::security::Secure::plain();
    let up = rt.block_on(async {
        loop {
            let bootstrap = std::slice::from_ref(&kafka.bootstrap);
            if let Ok(c) = fogline_bridge::kafka::connect(bootstrap, "probe", &plain).await {
                if c.list_topics().await.is_ok() {
                    return Instant::now();
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let backlog = status.lag_records.load(Relaxed);
    let zero = lag_zero(&status, Duration::from_secs(120))?;
    halt.send(true)?;
    rt.block_on(publisher)?;
    stop.send(true)?;
    rt.block_on(task)?;
    drop(b);
    std::fs::remove_dir_all(dir)?;
    Ok((zero.duration_since(up).as_secs_f64(), backlog))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn span(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if hi >= 100.0 {
        format!("{lo:.0}-{hi:.0}")
    } else {
        format!("{lo:.2}-{hi:.2}")
    }
}

/// Runs the benchmark.
pub fn run(a: BridgeArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        pin::cores() >= 2,
        "needs two cores: Kafka on one, the producers on the other"
    );
    std::fs::create_dir_all(&a.work_dir)?;
    let kafka = Kafka::start(&a.work_dir.join("kafka"), a.port)?;
    pin::pin_current_thread(1)?;
    let rt = crate::runtime(2)?;
    let started = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
    let load_before = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    // Kafka's JIT compiles its request path in the first seconds: warm it up untimed.
    kafka.perf_test("warm-up", 500_000, 100, true)?;
    let mut rows = Vec::new();
    for &size in &a.sizes {
        let n = (a.bytes_per_run / size).clamp(1, 1_000_000);
        let (mut fog, mut def, mut tuned) = (Vec::new(), Vec::new(), Vec::new());
        let (mut r_def, mut r_tuned) = (Vec::new(), Vec::new());
        for round in 0..a.rounds {
            let dir = a.work_dir.join(format!("fogline-{size}-{round}"));
            let f = forward(&rt, &kafka, &dir, &format!("fog-{size}-{round}"), n, size)?;
            let d = kafka.perf_test(&format!("def-{size}-{round}"), n, size, false)?;
            let t = kafka.perf_test(&format!("tun-{size}-{round}"), n, size, true)?;
            eprintln!("size {size} round {round}: fogline {f:.0}/s, producer default {d:.0}/s, tuned {t:.0}/s");
            r_def.push(f / d);
            r_tuned.push(f / t);
            fog.push(f);
            def.push(d);
            tuned.push(t);
        }
        rows.push((size, n, fog, def, tuned, r_def, r_tuned));
    }
    let mut outages = Vec::new();
    for i in 0..a.outages {
        let dir = a.work_dir.join(format!("outage-{i}"));
        let (secs, backlog) = catch_up(&rt, &kafka, &dir, &format!("outage-{i}"), &a)?;
        eprintln!("outage {i}: lag zero {secs:.2} s after Kafka answered, backlog {backlog}");
        outages.push((secs, backlog));
    }
    drop(kafka);

    let mut md =
        String::from("# bridge: forwarding a stream to Kafka against Kafka's own producer\n\n");
    md.push_str(&format!(
        "- Command: `fogline-bench bridge {}`\n- Started: {started}, finished: {}\n- Machine: {} cores; load average before / after: {} / {}\n- Kafka 3.9.1 (KRaft, one node, logs on disk, `bench/peers/start.sh kafka DIR PORT persistent`) pinned to core 0; fogline's bridge (in this process) and `kafka-producer-perf-test` (`taskset -c 1`) on core 1\n- Each run into a fresh topic of one partition, `acks=all`, no compression; the bridge with its default settings; fogline's stream is filled before its clock starts (its bridge then reads the log, as after an outage); its clock runs from the bridge's start (connection and topic creation included) to Kafka's acknowledgement of the last record, as the perf test's does\n- Producer `default`: the Java producer's own batching; `tuned`: `batch.size=1048576 linger.ms=5`\n- Kafka warmed up first with one untimed perf-test run of 500,000 records\n\n",
        std::env::args().skip(2).collect::<Vec<_>>().join(" "),
        humantime::format_rfc3339_seconds(std::time::SystemTime::now()),
        pin::cores(),
        load_before.trim(),
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    ));
    md.push_str("## Forwarding rate (records/s, median of the rounds, range in brackets)\n\n| payload | records per run | fogline bridge | Kafka producer, default | Kafka producer, tuned | fogline / default | fogline / tuned |\n|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size, n, mut fog, mut def, mut tuned, mut r_def, mut r_tuned) in rows {
        let (sf, sd, st, srd, srt) = (
            span(&fog),
            span(&def),
            span(&tuned),
            span(&r_def),
            span(&r_tuned),
        );
        md.push_str(&format!(
            "| {size} B | {n} | {:.0} [{sf}] | {:.0} [{sd}] | {:.0} [{st}] | {:.2}x [{srd}] | {:.2}x [{srt}] |\n",
            median(&mut fog),
            median(&mut def),
            median(&mut tuned),
            median(&mut r_def),
            median(&mut r_tuned),
        ));
    }
    md.push_str(&format!(
        "\nRatios are taken within a round. Goal (issue 34): at least 0.9x Kafka's own producer.\n\n## Catching up after an outage\n\n{} records/s of 100 B published throughout; Kafka stopped (SIGTERM) for {:?}, started again on its data; seconds from Kafka answering metadata again to the bridge's lag being zero. Goal: within 2 s.\n\n| run | backlog when Kafka answered (records) | seconds to lag zero |\n|---:|---:|---:|\n",
        a.rate, a.outage
    ));
    for (i, (secs, backlog)) in outages.iter().enumerate() {
        md.push_str(&format!("| {i} | {backlog} | {secs:.2} |\n"));
    }
    match &a.out {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            std::fs::write(dir.join("summary.md"), &md)?;
            eprintln!("wrote {}", dir.join("summary.md").display());
        }
        None => print!("{md}"),
    }
    Ok(())
}
