//! `fogline-bench rules`: SQL rules on a live MQTT stream, fogline against eKuiper (issue 32).
//!
//! Each engine runs as its own process pinned to the server core; this process publishes the
//! load from the load core. The load is JSON readings `{"id":"s<k>","temperature":<t>}` over
//! MQTT QoS 0 on `bench/temp`, `t` uniform in [0, 100) so half of them pass `temperature >
//! 50`. fogline reads them on its own MQTT listener; eKuiper (`kuiperd`, when `--ekuiper`
//! names a folder with `kuiperd` and its `etc/`) reads them from a Mosquitto started for it
//! on the load core, subscribing at QoS 0.
//!
//! Three parts, repeated `--rounds` times with the engines alternating inside each round:
//! - `filter`: `SELECT * FROM demo WHERE temperature > 50` at the offered rate (`--rate`,
//!   `max` = as fast as the engine's socket takes them);
//! - `window`: `SELECT id, avg(temperature) FROM demo GROUP BY id, TUMBLINGWINDOW(ss, 1)`
//!   over `--ids` ids;
//! - `memory`: a fresh engine's RSS idle, then with 1, 100 and 1,000 copies of the filter
//!   rule (no traffic), from `/proc/<pid>/status`.
//!
//! What a rule read is taken from its own status counters (`source_demo_0_records_in_total`),
//! so the rate is the engine's, not the publisher's; loss = 1 - read / published once the
//! counter stops moving. Results: `results.json` (every run) and `summary.md` under `--out`.

use fogline_bench::interval::spread;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::Bytes;
use fogline_bench::driver::Durability;
use fogline_bench::drivers::mqtt::MqttDriver;
use fogline_bench::peers::free_ports;
use fogline_bench::pin::{self, Placement};
use fogline_bench::procstat;
use fogline_bench::Driver;
use serde_json::{json, Value};

use crate::child::{pinned, wait_listening, Proc};

const TOPIC: &str = "bench/temp";
const STREAM_SQL: &str = "CREATE STREAM demo (id STRING, temperature FLOAT) WITH (DATASOURCE=\"bench/temp\", FORMAT=\"json\")";
const FILTER_SQL: &str = "SELECT * FROM demo WHERE temperature > 50";
const WINDOW_SQL: &str = "SELECT id, avg(temperature) FROM demo GROUP BY id, TUMBLINGWINDOW(ss, 1)";
/// Distinct payloads published in turn.
const POOL: usize = 10_000;
/// How long a counter must stay still before a run counts as drained.
const DRAINED_AFTER: Duration = Duration::from_secs(1);
/// Longest wait for a rule to drain after the load stops.
const DRAIN_LIMIT: Duration = Duration::from_secs(60);
/// Time given to an engine after a change before its RSS is read.
const SETTLE: Duration = Duration::from_secs(2);

/// Arguments of `fogline-bench rules`.
#[derive(clap::Args, Debug)]
pub struct RulesArgs {
    /// Engines, comma-separated: fogline, ekuiper.
    #[arg(long, value_delimiter = ',', default_value = "fogline")]
    engines: Vec<String>,
    /// Parts, comma-separated: filter, window, memory.
    #[arg(long, value_delimiter = ',', default_value = "filter,window,memory")]
    parts: Vec<String>,
    /// Rounds; each runs every part on every engine, engines alternating.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Length of the load of one throughput run.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Offered rate in records/s, comma-separated for several runs per part (`max` = unpaced).
    #[arg(long, value_delimiter = ',', default_value = "max")]
    rates: Vec<String>,
    /// Distinct ids in the load (the window rule's groups).
    #[arg(long, default_value_t = 1000)]
    ids: u32,
    /// Rule counts of the memory part.
    #[arg(long, value_delimiter = ',', default_value = "1,100,1000")]
    rule_counts: Vec<u32>,
    /// The `fogline` executable (default: the one beside this executable).
    #[arg(long, env = "FOGLINE_BIN")]
    fogline: Option<PathBuf>,
    /// eKuiper's folder: `kuiperd` (or `bin/kuiperd`) and `etc/` as its source tree has them.
    #[arg(long, env = "EKUIPER_HOME")]
    ekuiper: Option<PathBuf>,
    /// Core of eKuiper's Mosquitto: `server` (beside the engine: broker and rules share one
    /// core, as in fogline) or `load` (beside the load generator).
    #[arg(long, default_value = "server")]
    broker_core: String,
    /// The Mosquitto executable eKuiper reads from.
    #[arg(long, default_value = "mosquitto")]
    mosquitto: PathBuf,
    /// Results folder.
    #[arg(long, default_value = "bench/results/rules")]
    out: PathBuf,
    /// Scratch folder for the engines' data and logs (default: a temp folder).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Do not pin the engine and the load to separate cores.
    #[arg(long)]
    no_pin: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Fogline,
    Ekuiper,
}

impl Kind {
    fn parse(s: &str) -> anyhow::Result<Self> {
        match s {
            "fogline" => Ok(Kind::Fogline),
            "ekuiper" => Ok(Kind::Ekuiper),
            _ => bail!("unknown engine {s}: fogline or ekuiper"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Fogline => "fogline",
            Kind::Ekuiper => "ekuiper",
        }
    }

    /// Where the eKuiper-shaped REST routes live.
    fn prefix(self) -> &'static str {
        match self {
            Kind::Fogline => "/api/v1",
            Kind::Ekuiper => "",
        }
    }
}

/// Where the engines come from and run.
struct Env {
    fogline: Option<PathBuf>,
    ekuiper: Option<PathBuf>,
    mosquitto: PathBuf,
    broker_core: Option<usize>,
    work: PathBuf,
    placement: Option<Placement>,
}

/// A running engine: its process, its REST address and the MQTT address its source reads.
struct Engine {
    kind: Kind,
    rest: String,
    mqtt: String,
    // Dropped in order: the engine before its broker.
    proc: Proc,
    _broker: Option<Proc>,
}

impl Engine {
    fn start(kind: Kind, env: &Env) -> anyhow::Result<Self> {
        let port = free_ports(3)?;
        let dir = env.work.join(format!("{}-{port}", kind.name()));
        std::fs::create_dir_all(&dir)?;
        let server_core = env.placement.map(|p| p.server_core);
        match kind {
            Kind::Fogline => {
                let exe = env.fogline.as_ref().context("no fogline executable")?;
                let (native, mqtt, rest) = (
                    format!("127.0.0.1:{port}"),
                    format!("127.0.0.1:{}", port + 1),
                    format!("127.0.0.1:{}", port + 2),
                );
                let log = dir.join("log");
                let f = std::fs::File::create(&log)?;
                let mut cmd = Command::new(exe);
                cmd.args(["serve", "--storage", "memory", "--listen", &native])
                    .args(["--mqtt", &mqtt, "--http", &rest])
                    .arg("--data-dir")
                    .arg(dir.join("data"))
                    .stdin(Stdio::null())
                    .stdout(f.try_clone()?)
                    .stderr(f);
                pinned(&mut cmd, server_core);
                let mut proc = Proc(cmd.spawn().context("starting fogline serve")?);
                wait_listening(&rest, &mut proc, "fogline", &log)?;
                wait_listening(&mqtt, &mut proc, "fogline", &log)?;
                Ok(Engine {
                    kind,
                    rest,
                    mqtt,
                    proc,
                    _broker: None,
                })
            }
            Kind::Ekuiper => {
                let home = env
                    .ekuiper
                    .as_ref()
                    .context("no eKuiper folder (--ekuiper)")?;
                let exe = [home.join("kuiperd"), home.join("bin/kuiperd")]
                    .into_iter()
                    .find(|p| p.is_file())
                    .with_context(|| format!("no kuiperd in {}", home.display()))?;
                // Mosquitto carries the load to eKuiper, as fogline's own listener does.
                let mqtt = format!("127.0.0.1:{port}");
                let conf = dir.join("mosquitto.conf");
                std::fs::write(
                    &conf,
                    format!("listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"),
                )?;
                let blog = dir.join("mosquitto.log");
                let f = std::fs::File::create(&blog)?;
                let mut cmd = Command::new(&env.mosquitto);
                cmd.arg("-c")
                    .arg(&conf)
                    .stdin(Stdio::null())
                    .stdout(f.try_clone()?)
                    .stderr(f);
                pinned(&mut cmd, env.broker_core);
                let mut broker = Proc(cmd.spawn().context("starting mosquitto")?);
                wait_listening(&mqtt, &mut broker, "mosquitto", &blog)?;
                // A fresh base folder per start: its own etc/ copy, data/ and log/.
                copy_dir(&home.join("etc"), &dir.join("etc"))?;
                // The folders its package has (`make build_prepare`); kuiperd stops without.
                for d in ["data", "log", "plugins/sources", "plugins/sinks"] {
                    std::fs::create_dir_all(dir.join(d))?;
                }
                for d in ["plugins/functions", "plugins/portable", "plugins/wasm"] {
                    std::fs::create_dir_all(dir.join(d))?;
                }
                let rest = format!("127.0.0.1:{}", port + 1);
                let log = dir.join("stdout");
                let f = std::fs::File::create(&log)?;
                let mut cmd = Command::new(exe);
                cmd.current_dir(&dir)
                    .env("KuiperBaseKey", &dir)
                    .env("KUIPER__BASIC__RESTIP", "127.0.0.1")
                    .env("KUIPER__BASIC__RESTPORT", (port + 1).to_string())
                    .env("KUIPER__BASIC__IP", "127.0.0.1")
                    .env("KUIPER__BASIC__PORT", (port + 2).to_string())
                    .env("MQTT_SOURCE__DEFAULT__SERVER", format!("tcp://{mqtt}"))
                    .env("MQTT_SOURCE__DEFAULT__QOS", "0")
                    .stdin(Stdio::null())
                    .stdout(f.try_clone()?)
                    .stderr(f);
                pinned(&mut cmd, server_core);
                let mut proc = Proc(cmd.spawn().context("starting kuiperd")?);
                wait_listening(&rest, &mut proc, "kuiperd", &log)?;
                Ok(Engine {
                    kind,
                    rest,
                    mqtt,
                    proc,
                    _broker: Some(broker),
                })
            }
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> anyhow::Result<Value> {
        let path = format!("{}{path}", self.kind.prefix());
        let (code, text) = http(&self.rest, method, &path, body)?;
        if !(200..300).contains(&code) {
            bail!("{} {method} {path}: {code} {text}", self.kind.name());
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    fn create_stream(&self) -> anyhow::Result<()> {
        self.call("POST", "/streams", Some(&json!({ "sql": STREAM_SQL })))
            .map(drop)
    }

    fn create_rule(&self, id: &str, sql: &str) -> anyhow::Result<()> {
        let rule = json!({"id": id, "sql": sql, "actions": [{"nop": {}}], "options": {}});
        self.call("POST", "/rules", Some(&rule)).map(drop)
    }

    fn delete_rule(&self, id: &str) -> anyhow::Result<()> {
        self.call("DELETE", &format!("/rules/{id}"), None).map(drop)
    }

    /// The rule's counters: (records its source read, records its sinks took in).
    fn counters(&self, id: &str) -> anyhow::Result<(u64, u64, Value)> {
        let st = self.call("GET", &format!("/rules/{id}/status"), None)?;
        let sum = |pre: &str| {
            st.as_object().map_or(0, |m| {
                m.iter()
                    .filter(|(k, _)| k.starts_with(pre) && k.ends_with("_records_in_total"))
                    .filter_map(|(_, v)| v.as_u64().or_else(|| v.as_f64().map(|f| f as u64)))
                    .sum()
            })
        };
        Ok((sum("source_"), sum("sink_"), st))
    }

    /// Waits until the rule runs (eKuiper connects its source asynchronously).
    fn wait_running(&self, id: &str) -> anyhow::Result<()> {
        let t = Instant::now();
        loop {
            let (_, _, st) = self.counters(id)?;
            let s = st["status"]
                .as_str()
                .unwrap_or_default()
                .to_ascii_lowercase();
            if s == "running" {
                std::thread::sleep(Duration::from_millis(500));
                return Ok(());
            }
            if t.elapsed() > Duration::from_secs(20) {
                bail!("{} rule {id} not running: {st}", self.kind.name());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn rss_kib(&self) -> anyhow::Result<u64> {
        Ok(self.memory()?.0)
    }

    /// RSS and its anonymous part (heap and stacks, not the executable's pages), KiB.
    fn memory(&self) -> anyhow::Result<(u64, u64)> {
        procstat::read(self.proc.pid())
            .map(|r| (r.rss_kib, r.anon_kib.unwrap_or(0)))
            .context("engine process gone")
    }
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let e = e?;
        let dest = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &dest)?;
        } else {
            std::fs::copy(e.path(), dest)?;
        }
    }
    Ok(())
}

/// One HTTP/1.0 request (no keep-alive, no chunked reply); returns status and body.
fn http(
    addr: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> anyhow::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr).with_context(|| format!("connecting {addr}"))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut reply = String::new();
    s.read_to_string(&mut reply)?;
    let code = reply
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("bad HTTP reply from {addr}: {reply:.200}"))?;
    let text = reply
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Ok((code, text))
}

/// The payloads published in turn: id `s<i % ids>`, temperature uniform in [0, 100).
fn payloads(ids: u32) -> Vec<Bytes> {
    let mut rng = fastrand::Rng::with_seed(32);
    (0..POOL)
        .map(|i| {
            let t = (rng.f64() * 10_000.0).round() / 100.0;
            Bytes::from(format!(
                r#"{{"id":"s{}","temperature":{t:.2}}}"#,
                i as u64 % u64::from(ids.max(1))
            ))
        })
        .collect()
}

/// Publishes `pool` in turn over MQTT QoS 0 for `dur`, paced to `rate` records/s when given;
/// returns how many were published.
async fn publish(
    mqtt: &str,
    pool: &[Bytes],
    rate: Option<u64>,
    dur: Duration,
) -> anyhow::Result<u64> {
    let driver = MqttDriver::new("load", mqtt, Durability::Volatile)?;
    let mut p = driver.publisher(TOPIC).await?;
    let t0 = Instant::now();
    let mut sent = 0u64;
    loop {
        let elapsed = t0.elapsed();
        if elapsed >= dur {
            break;
        }
        let due = rate.map_or(sent + 256, |r| {
            (r as f64 * elapsed.as_secs_f64()) as u64 + 1
        });
        if sent >= due {
            p.flush().await?;
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        }
        while sent < due {
            p.send(pool[(sent % pool.len() as u64) as usize].clone())
                .await?;
            sent += 1;
        }
        if rate.is_some() {
            p.flush().await?;
        }
    }
    p.flush().await?;
    p.close().await?;
    Ok(sent)
}

/// One throughput run of `sql` on `engine` at `rate`.
fn throughput(
    rt: &tokio::runtime::Runtime,
    engine: &Engine,
    part: &str,
    sql: &str,
    pool: &[Bytes],
    rate: Option<u64>,
    dur: Duration,
) -> anyhow::Result<Value> {
    let id = format!("bench_{part}");
    engine.create_rule(&id, sql)?;
    engine.wait_running(&id)?;
    let (in0, sink0, _) = engine.counters(&id)?;
    let sampler = procstat::Sampler::start(engine.proc.pid(), Duration::from_millis(100));
    let t0 = Instant::now();
    let published = rt.block_on(publish(&engine.mqtt, pool, rate, dur))?;
    let window = t0.elapsed().as_secs_f64();
    let (in1, _, _) = engine.counters(&id)?;
    let usage = sampler.finish();
    // Drain: wait for the counter to stand still; the last time it moved ends the run.
    let (mut last, mut still_since, t1) = (in1, Instant::now(), Instant::now());
    let mut busy = window;
    let mut sink = sink0;
    while still_since.elapsed() < DRAINED_AFTER && t1.elapsed() < DRAIN_LIMIT {
        std::thread::sleep(Duration::from_millis(100));
        let (n, s, _) = engine.counters(&id)?;
        sink = s;
        if n != last {
            last = n;
            still_since = Instant::now();
            busy = t0.elapsed().as_secs_f64();
        }
    }
    let read = last - in0;
    let rss = engine.rss_kib()?;
    engine.delete_rule(&id)?;
    let loss = 1.0 - read as f64 / published.max(1) as f64;
    Ok(json!({
        "engine": engine.kind.name(),
        "part": part,
        "sql": sql,
        "rate": rate.map_or(json!("max"), |r| json!(r)),
        "seconds": window,
        "published": published,
        "offered_per_s": published as f64 / window,
        "read_in_window": in1 - in0,
        "read_in_window_per_s": (in1 - in0) as f64 / window,
        "read": read,
        "busy_seconds": busy,
        "read_per_s": read as f64 / busy,
        "loss": loss.max(0.0),
        "sink_records_in": sink - sink0,
        "server_cpu_percent": usage.cpu_percent,
        "rss_max_kib_in_window": usage.rss_max_mib * 1024.0,
        "rss_after_kib": rss,
        "loadavg": loadavg(),
    }))
}

/// The memory part on a fresh engine.
fn memory(kind: Kind, env: &Env, counts: &[u32]) -> anyhow::Result<Value> {
    let engine = Engine::start(kind, env)?;
    std::thread::sleep(SETTLE);
    let (idle, idle_anon) = engine.memory()?;
    engine.create_stream()?;
    std::thread::sleep(SETTLE);
    let with_stream = engine.rss_kib()?;
    let mut made = 0u32;
    let mut steps = Vec::new();
    for &n in counts {
        let t = Instant::now();
        while made < n {
            engine.create_rule(&format!("m{made}"), FILTER_SQL)?;
            made += 1;
        }
        let create_s = t.elapsed().as_secs_f64();
        std::thread::sleep(SETTLE);
        let (rss, anon) = engine.memory()?;
        steps.push(json!({
            "rules": n,
            "rss_kib": rss,
            "per_rule_kib": (rss as f64 - idle as f64) / f64::from(n),
            "anon_kib": anon,
            "per_rule_anon_kib": (anon as f64 - idle_anon as f64) / f64::from(n),
            "create_seconds": create_s,
        }));
    }
    Ok(json!({
        "engine": kind.name(),
        "part": "memory",
        "idle_rss_kib": idle,
        "idle_anon_kib": idle_anon,
        "with_stream_rss_kib": with_stream,
        "steps": steps,
        "loadavg": loadavg(),
    }))
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Runs the subcommand.
pub fn run(args: RulesArgs) -> anyhow::Result<()> {
    let kinds = args
        .engines
        .iter()
        .map(|s| Kind::parse(s))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for p in &args.parts {
        if !["filter", "window", "memory"].contains(&p.as_str()) {
            bail!("unknown part {p}: filter, window or memory");
        }
    }
    let rates = args
        .rates
        .iter()
        .map(|r| match r.as_str() {
            "max" => Ok(None),
            n => n.parse().map(Some).with_context(|| format!("bad rate {n}")),
        })
        .collect::<anyhow::Result<Vec<Option<u64>>>>()?;
    let fogline = match &args.fogline {
        Some(p) => p.clone(),
        None => std::env::current_exe()?.with_file_name("fogline"),
    };
    let placement = if args.no_pin {
        None
    } else {
        Placement::default_for_machine()
    };
    let tmp;
    let work = match &args.work_dir {
        Some(d) => d.clone(),
        None => {
            tmp = TempDir::new()?;
            tmp.0.clone()
        }
    };
    let broker_core = match args.broker_core.as_str() {
        "server" => placement.map(|p| p.server_core),
        "load" => placement.map(|p| p.load_core),
        b => bail!("bad --broker-core {b}: server or load"),
    };
    let env = Env {
        fogline: fogline.is_file().then_some(fogline),
        ekuiper: args.ekuiper.clone(),
        mosquitto: args.mosquitto.clone(),
        broker_core,
        work,
        placement,
    };
    if let Some(p) = placement {
        pin::pin_current_thread(p.load_core).context("pinning the load")?;
    }
    let rt = crate::runtime(1)?;
    let pool = payloads(args.ids);
    std::fs::create_dir_all(&args.out)?;
    let started = chrono_now();
    let mut runs = Vec::new();
    for round in 1..=args.rounds {
        // Alternate which engine goes first.
        let mut order = kinds.clone();
        if round % 2 == 0 {
            order.reverse();
        }
        for &kind in &order {
            let tput: Vec<(&str, &str)> = [("filter", FILTER_SQL), ("window", WINDOW_SQL)]
                .into_iter()
                .filter(|(p, _)| args.parts.iter().any(|x| x == p))
                .collect();
            if !tput.is_empty() {
                let engine = Engine::start(kind, &env)?;
                engine.create_stream()?;
                for (part, sql) in &tput {
                    for &rate in &rates {
                        let mut r =
                            throughput(&rt, &engine, part, sql, &pool, rate, args.duration)?;
                        r["round"] = json!(round);
                        eprintln!("{r}");
                        runs.push(r);
                    }
                }
            }
            if args.parts.iter().any(|p| p == "memory") {
                let mut r = memory(kind, &env, &args.rule_counts)?;
                r["round"] = json!(round);
                eprintln!("{r}");
                runs.push(r);
            }
        }
        write_results(&args, &started, placement, &runs)?;
    }
    let summary = summary(&args, &started, placement, &runs);
    std::fs::write(args.out.join("summary.md"), &summary)?;
    print!("{summary}");
    Ok(())
}

/// A scratch folder removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> anyhow::Result<Self> {
        let d = std::env::temp_dir().join(format!("fogline-bench-rules-{}", std::process::id()));
        std::fs::create_dir_all(&d)?;
        Ok(Self(d))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn chrono_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("unix {secs}")
}

fn write_results(
    args: &RulesArgs,
    started: &str,
    placement: Option<Placement>,
    runs: &[Value],
) -> anyhow::Result<()> {
    let v = json!({
        "scenario": "rules",
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "started": started,
        "placement": placement,
        "broker_core": args.broker_core,
        "duration_s": args.duration.as_secs_f64(),
        "ids": args.ids,
        "runs": runs,
    });
    std::fs::write(
        args.out.join("results.json"),
        serde_json::to_string_pretty(&v)?,
    )?;
    Ok(())
}

fn fmt_spread(s: Option<(f64, f64, f64)>, digits: usize) -> String {
    match s {
        Some((m, lo, hi)) => format!("{m:.digits$} ({lo:.digits$}-{hi:.digits$})"),
        None => "-".into(),
    }
}

/// Values of `key` in the runs of one engine and part (and rate), keyed by round.
fn by_round(runs: &[Value], engine: &str, part: &str, rate: &Value, key: &str) -> Vec<(u64, f64)> {
    runs.iter()
        .filter(|r| r["engine"] == engine && r["part"] == part && &r["rate"] == rate)
        .filter_map(|r| Some((r["round"].as_u64()?, r[key].as_f64()?)))
        .collect()
}

/// fogline / eKuiper per round, for the rounds both have.
fn ratios(a: &[(u64, f64)], b: &[(u64, f64)], invert: bool) -> Vec<f64> {
    a.iter()
        .filter_map(|(round, x)| {
            let y = b.iter().find(|(r, _)| r == round)?.1;
            let (n, d) = if invert { (y, *x) } else { (*x, y) };
            (d > 0.0).then_some(n / d)
        })
        .collect()
}

fn rate_name(rate: &Value) -> String {
    rate.as_str()
        .map_or_else(|| rate.to_string(), str::to_string)
}

fn summary(
    args: &RulesArgs,
    started: &str,
    placement: Option<Placement>,
    runs: &[Value],
) -> String {
    let mut s = String::new();
    let cmd = std::env::args().collect::<Vec<_>>().join(" ");
    s.push_str("# rules: SQL rules on a live MQTT stream\n\n");
    s.push_str(&format!(
        "Command: `{cmd}`\n\nStarted: {started}. Placement: "
    ));
    s.push_str(&match placement {
        Some(p) => format!(
            "engine on core {}, load on core {}, eKuiper's Mosquitto on the {} core.\n\n",
            p.server_core, p.load_core, args.broker_core
        ),
        None => "not pinned.\n\n".into(),
    });
    s.push_str(&format!(
        "{} s of load per run, {} ids; median (min-max) over {} rounds.\n\n",
        args.duration.as_secs_f64(),
        args.ids,
        args.rounds
    ));
    let rates: Vec<Value> = {
        let mut v: Vec<Value> = Vec::new();
        for r in runs {
            if r["part"] != "memory" && !v.contains(&r["rate"]) {
                v.push(r["rate"].clone());
            }
        }
        v
    };
    s.push_str(
        "Read rec/s: records the rule's source counted, over the time from the first record \
         sent to the last one counted (a broker may hold records after the load stops). \
         Loss: 1 - read / published. Engine CPU: the engine's process only, while publishing.\n\n",
    );
    s.push_str(
        "| part | offered | engine | offered rec/s | read rec/s | loss % | engine CPU % |\n",
    );
    s.push_str("| --- | --- | --- | ---: | ---: | ---: | ---: |\n");
    let engines = ["fogline", "ekuiper"];
    for part in ["filter", "window"] {
        for rate in &rates {
            for e in engines {
                let get = |k: &str| {
                    by_round(runs, e, part, rate, k)
                        .into_iter()
                        .map(|x| x.1)
                        .collect::<Vec<_>>()
                };
                let read = get("read_per_s");
                if read.is_empty() {
                    continue;
                }
                let loss: Vec<f64> = get("loss").into_iter().map(|l| l * 100.0).collect();
                s.push_str(&format!(
                    "| {part} | {} | {e} | {} | {} | {} | {} |\n",
                    rate_name(rate),
                    fmt_spread(spread(&get("offered_per_s")), 0),
                    fmt_spread(spread(&read), 0),
                    fmt_spread(spread(&loss), 2),
                    fmt_spread(spread(&get("server_cpu_percent")), 0),
                ));
            }
            let f = by_round(runs, "fogline", part, rate, "read_per_s");
            let k = by_round(runs, "ekuiper", part, rate, "read_per_s");
            let r = ratios(&f, &k, false);
            if !r.is_empty() {
                s.push_str(&format!(
                    "| {part} | {} | **fogline / eKuiper** | | {} | | |\n",
                    rate_name(rate),
                    fmt_spread(spread(&r), 2)
                ));
            }
        }
    }
    s.push_str(
        "\nPer rule: (RSS with N rules - RSS idle) / N; the anonymous part (RssAnon: heap and \
         stacks, not the executable's pages) likewise.\n",
    );
    s.push_str(
        "\n| engine | idle RSS KiB | rules | RSS KiB | per rule KiB | per rule, anon KiB |\n",
    );
    s.push_str("| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for e in engines {
        let mem: Vec<&Value> = runs
            .iter()
            .filter(|r| r["engine"] == e && r["part"] == "memory")
            .collect();
        if mem.is_empty() {
            continue;
        }
        let idle = spread(
            &mem.iter()
                .filter_map(|r| r["idle_rss_kib"].as_f64())
                .collect::<Vec<_>>(),
        );
        for &n in &args.rule_counts {
            let step = |k: &str| {
                mem.iter()
                    .filter_map(|r| {
                        r["steps"].as_array()?.iter().find(|x| x["rules"] == n)?[k].as_f64()
                    })
                    .collect::<Vec<_>>()
            };
            s.push_str(&format!(
                "| {e} | {} | {n} | {} | {} | {} |\n",
                fmt_spread(idle, 0),
                fmt_spread(spread(&step("rss_kib")), 0),
                fmt_spread(spread(&step("per_rule_kib")), 1),
                fmt_spread(spread(&step("per_rule_anon_kib")), 1),
            ));
        }
    }
    for &n in &args.rule_counts {
        let per_rule = |e: &str| -> Vec<(u64, f64)> {
            runs.iter()
                .filter(|r| r["engine"] == e && r["part"] == "memory")
                .filter_map(|r| {
                    let step = r["steps"].as_array()?.iter().find(|x| x["rules"] == n)?;
                    Some((r["round"].as_u64()?, step["per_rule_kib"].as_f64()?))
                })
                .collect()
        };
        let r = ratios(&per_rule("fogline"), &per_rule("ekuiper"), false);
        if !r.is_empty() {
            s.push_str(&format!(
                "| **fogline / eKuiper** | | {n} | | {} | |\n",
                fmt_spread(spread(&r), 3)
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_cycle_the_ids_and_half_pass_the_filter() {
        let pool = payloads(1000);
        assert_eq!(pool.len(), POOL);
        let rows: Vec<Value> = pool
            .iter()
            .map(|p| serde_json::from_slice(p).unwrap())
            .collect();
        assert_eq!(rows[0]["id"], "s0");
        assert_eq!(rows[1001]["id"], "s1");
        let hot = rows
            .iter()
            .filter(|r| r["temperature"].as_f64().unwrap() > 50.0)
            .count();
        assert!((4500..5500).contains(&hot), "{hot}");
    }

    #[test]
    fn spread_and_paired_ratios() {
        assert_eq!(spread(&[3.0, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(spread(&[4.0, 1.0]), Some((2.5, 1.0, 4.0)));
        assert_eq!(spread(&[]), None);
        let f = [(1, 10.0), (2, 20.0), (3, 30.0)];
        let k = [(1, 2.0), (3, 5.0)];
        assert_eq!(ratios(&f, &k, false), vec![5.0, 6.0]);
    }
}
