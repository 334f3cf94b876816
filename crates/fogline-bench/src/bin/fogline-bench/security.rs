//! `fogline-bench security`: what TLS and an ACL cost on fogline's MQTT path (issue 35).
//!
//! Two parts, in one run, repeated `--rounds` times; in each round every set-up runs once,
//! the order within a part alternating from one round to the next:
//!
//! - **TLS**: fogline (`fogline serve` with `[mqtt] tls_listen` and `[mqtt.tls]`) against
//!   Mosquitto (`listener` with `cafile`, `certfile`, `keyfile`), both with the one CA and
//!   server certificate made here with `openssl` (`pki.rs`). The client offers one cipher
//!   suite (`--cipher-suite`, AES-256-GCM by default): offered graviola's list, rustls
//!   (fogline) follows the client's first choice, AES-128-GCM, and OpenSSL (Mosquitto) its
//!   own, AES-256-GCM, which would compare two ciphers rather than two brokers.
//! - **ACL**: fogline's plain MQTT listener without `[auth]`, and with `[auth]`
//!   `password_file`, `acl_file` (100 rules, `acl.rs`) and `allow_anonymous = false`, the
//!   client logged in as the user whom the file grants the benchmark's topics. The login
//!   (a password hash) happens once per connection, before the clock starts; the ACL is
//!   asked for every PUBLISH.
//!
//! Every set-up gets the same client, the `mqtt` driver (MQTT 3.1.1; over TLS with its TLS
//! option: rustls and graviola, trusting the CA), and the same cells as the `mqtt`
//! scenario, one publisher to one subscriber: QoS 0 and 1 (every PUBLISH acknowledged),
//! 256 B and 1 KiB, at the maximum rate (throughput) and at 1 kHz (latency without
//! queueing: at the maximum rate p50 is the queue's length). Both brokers in their
//! persistent configuration, as in the `mqtt` scenario (fogline `--storage mmap`,
//! Mosquitto `persistence true` with `autosave_interval 1`, as `bench/peers/start.sh`
//! starts it). A fresh server per set-up and round, pinned to core 0; this process, the
//! load, on core 1. Results: `results.json` (every cell, rewritten after each round) and
//! `README.md` under `--out`.

mod acl;
// The CA and certificates fogline's own TLS tests make with `openssl` (RSA for Mosquitto).
#[path = "../../../../fogline-net/tests/pki/mod.rs"]
mod pki;
mod report;
mod server;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use fogline_bench::cell::{Budget, CellResult, CellSpec, Rate};
use fogline_bench::driver::Durability;
use fogline_bench::drivers::mqtt::MqttTls;
use fogline_bench::harness::BuildId;
use fogline_bench::pin::{self, Placement};
use fogline_bench::runner::run_cell;
use fogline_bench::Driver;

pub(crate) use server::Setup;
use server::{Env, Server};

/// Arguments of `fogline-bench security`.
#[derive(clap::Args, Debug)]
pub struct SecurityArgs {
    /// Rounds; each runs every set-up once.
    #[arg(long, default_value_t = 5)]
    rounds: u32,
    /// Length of a maximum-rate cell; a 1 kHz cell sends 1,000 messages a second as long.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Record sizes (payload bytes), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "256,1024")]
    sizes: Vec<usize>,
    /// MQTT QoS levels, comma-separated (0, 1).
    #[arg(long, value_delimiter = ',', default_value = "0,1")]
    qos: Vec<u8>,
    /// The one cipher suite the client offers, so that both brokers run the same cipher
    /// (rustls' name; `any`: every suite of the provider, each broker picks).
    #[arg(long, default_value = "TLS13_AES_256_GCM_SHA384")]
    cipher_suite: String,
    /// Parts, comma-separated: tls, acl.
    #[arg(long, value_delimiter = ',', default_value = "tls,acl")]
    parts: Vec<String>,
    /// The `fogline` executable (default: the one beside this executable).
    #[arg(long, env = "FOGLINE_BIN")]
    fogline: Option<PathBuf>,
    /// The Mosquitto executable.
    #[arg(long, default_value = "mosquitto")]
    mosquitto: PathBuf,
    /// Results folder.
    #[arg(long, default_value = "bench/results/security")]
    out: PathBuf,
    /// fogline's storage: `mmap` (every record kept in its memory-mapped log, as deployed)
    /// or `memory` (kept in memory only, as Mosquitto keeps QoS 0 messages).
    #[arg(long, default_value = "mmap", value_parser = ["mmap", "memory"])]
    fogline_storage: String,
    /// Only rewrite `--out`'s README.md from its results.json (no measuring).
    #[arg(long)]
    report: bool,
    /// Scratch folder: certificates, configurations, the brokers' data (on a disk, not
    /// tmpfs: fogline's log is memory-mapped files). Default: a folder in the temp dir.
    #[arg(long)]
    work_dir: Option<PathBuf>,
}

/// One measured cell of one set-up in one round.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Run {
    pub(crate) round: u32,
    pub(crate) setup: String,
    pub(crate) qos: u8,
    pub(crate) result: CellResult,
}

/// The cells of a set-up: every QoS and size at the maximum rate and at 1 kHz.
fn cells(a: &SecurityArgs) -> Vec<(u8, CellSpec)> {
    let mut cells = Vec::new();
    for &qos in &a.qos {
        for &size in &a.sizes {
            for rate in [Rate::Max, Rate::Hz(1000.0)] {
                let budget = match rate {
                    Rate::Max => Budget::Time(a.duration),
                    Rate::Hz(hz) => Budget::Messages((hz * a.duration.as_secs_f64()) as u64),
                };
                let label = format!("QoS {qos} {size} B @ {rate}");
                let mut c = CellSpec::new(label, size, rate, budget);
                if qos == 1 {
                    c.durability = Durability::Persistent;
                }
                cells.push((qos, c));
            }
        }
    }
    cells
}

/// The topic of a cell: under the prefix the ACL grants, and new for every cell.
fn topic(setup: Setup, qos: u8, c: &CellSpec, round: u32) -> String {
    let rate = match c.rate {
        Rate::Max => "max".to_string(),
        Rate::Hz(h) => format!("{h}hz"),
    };
    format!(
        "{}/{}-q{qos}-{}-{rate}-r{round}",
        acl::TOPIC_ROOT,
        setup.key(),
        c.size
    )
}

/// Runs every cell on a fresh server of `setup`.
fn measure(
    rt: &tokio::runtime::Runtime,
    env: &Env,
    a: &SecurityArgs,
    setup: Setup,
    round: u32,
    runs: &mut Vec<Run>,
) -> anyhow::Result<()> {
    let server = Server::start(setup, env)?;
    for (qos, spec) in cells(a) {
        let driver: Arc<dyn Driver> = Arc::new(server.driver(env, spec.durability)?);
        let t = topic(setup, qos, &spec, round);
        let result = rt
            .block_on(run_cell(driver, &spec, &t, Some(server.proc.pid()), round))
            .with_context(|| format!("{} {}", setup.key(), spec.label))?;
        eprintln!(
            "round {round} {:>13} {:<22} {:>9.0} msg/s  p50 {:>8.1} us  lost {}  {}",
            setup.key(),
            spec.label,
            result.throughput_msgs,
            result.latency.p50_us,
            result.delivery.lost,
            result.errors.join("; ")
        );
        runs.push(Run {
            round,
            setup: setup.key().into(),
            qos,
            result,
        });
    }
    server.stop();
    Ok(())
}

/// The TLS version and cipher suite each broker negotiates with the driver.
fn tls_sessions(rt: &tokio::runtime::Runtime, env: &Env) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for setup in [Setup::FoglineTls, Setup::MosquittoTls] {
        let server = Server::start(setup, env)?;
        let d = server.driver(env, Durability::Volatile)?;
        let session = rt.block_on(d.tls_session())?.unwrap_or_default();
        out.push(format!("{}: {session}", setup.key()));
        server.stop();
    }
    Ok(out)
}

fn version(exe: &Path, arg: &str) -> String {
    Command::new(exe)
        .arg(arg)
        .output()
        .map(|o| {
            let text = [o.stdout, o.stderr].concat();
            String::from_utf8_lossy(&text)
                .lines()
                .next()
                .unwrap_or_default()
                .trim()
                .to_string()
        })
        .unwrap_or_default()
}

/// Runs the subcommand.
pub fn run(a: SecurityArgs) -> anyhow::Result<()> {
    if a.report {
        let text = std::fs::read_to_string(a.out.join("results.json"))
            .with_context(|| format!("reading {}/results.json", a.out.display()))?;
        let v: serde_json::Value = serde_json::from_str(&text)?;
        let meta: report::Meta = serde_json::from_value(v["meta"].clone())?;
        let runs: Vec<Run> = serde_json::from_value(v["runs"].clone())?;
        std::fs::write(a.out.join("README.md"), report::readme(&meta, &runs))?;
        return Ok(());
    }
    for p in &a.parts {
        if p != "tls" && p != "acl" {
            bail!("unknown part {p}: tls or acl");
        }
    }
    if let Some(q) = a.qos.iter().find(|q| **q > 1) {
        bail!("QoS {q}: the driver measures QoS 0 and 1");
    }
    let fogline = match &a.fogline {
        Some(p) => p.clone(),
        None => std::env::current_exe()?.with_file_name("fogline"),
    };
    anyhow::ensure!(fogline.is_file(), "no fogline at {}", fogline.display());
    let placement = Placement::default_for_machine();
    let work = a.work_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("fogline-bench-security-{}", std::process::id()))
    });
    std::fs::create_dir_all(&work)?;
    let certs = pki::Pki::new(
        &work.join("pki"),
        pki::Kind::Rsa,
        "fogline-bench CA",
        "bench",
    );
    let suite = (a.cipher_suite != "any").then_some(a.cipher_suite.as_str());
    let tls = MqttTls::new(&certs.ca, "localhost", suite)?;
    let (acl_file, passwd_file) = (work.join("acl"), work.join("passwd"));
    acl::write(&acl_file, &passwd_file)?;
    let env = Env {
        fogline,
        mosquitto: a.mosquitto.clone(),
        work: work.clone(),
        certs,
        tls,
        acl_file,
        passwd_file,
        server_core: placement.map(|p| p.server_core),
        storage: a.fogline_storage.clone(),
    };
    if let Some(p) = placement {
        pin::pin_current_thread(p.load_core).context("pinning the load")?;
    }
    let rt = crate::runtime(1)?;
    std::fs::create_dir_all(&a.out)?;
    let mut meta = report::Meta {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        started: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        finished: String::new(),
        machine: fogline_bench::harness::machine_description(),
        placement,
        build: BuildId::current(Some(&env.fogline)),
        fogline: version(&env.fogline, "--version"),
        mosquitto: version(&env.mosquitto, "-h"),
        tls: Vec::new(),
        loadavg: vec![report::loadavg()],
        duration_s: a.duration.as_secs_f64(),
        rounds: a.rounds,
        acl_rules: acl::RULES,
        fogline_storage: a.fogline_storage.clone(),
    };
    if a.parts.iter().any(|p| p == "tls") {
        meta.tls = tls_sessions(&rt, &env)?;
    }
    let mut runs = Vec::new();
    for round in 1..=a.rounds {
        for part in &a.parts {
            let mut order: Vec<Setup> = Setup::ALL
                .into_iter()
                .filter(|s| s.part() == part)
                .collect();
            if round % 2 == 0 {
                order.reverse();
            }
            for setup in order {
                measure(&rt, &env, &a, setup, round, &mut runs)?;
            }
        }
        meta.loadavg.push(report::loadavg());
        report::write_json(&a.out, &meta, &runs)?;
    }
    meta.finished = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    report::write_json(&a.out, &meta, &runs)?;
    let readme = report::readme(&meta, &runs);
    std::fs::write(a.out.join("README.md"), &readme)?;
    print!("{readme}");
    if a.work_dir.is_none() {
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_topic_is_granted_and_new() {
        let a = SecurityArgs {
            rounds: 2,
            duration: Duration::from_secs(2),
            sizes: vec![256, 1024],
            qos: vec![0, 1],
            cipher_suite: "any".into(),
            parts: vec!["tls".into(), "acl".into()],
            fogline: None,
            mosquitto: "mosquitto".into(),
            out: PathBuf::new(),
            fogline_storage: "mmap".into(),
            report: false,
            work_dir: None,
        };
        let cells = cells(&a);
        assert_eq!(cells.len(), 8);
        assert_eq!(cells[1].1.budget, Budget::Messages(2000));
        let acl = Arc::new(fogline_auth::acl::Acl::parse(&acl::acl_text()).unwrap());
        let bench = acl.client(Some(acl::USER), "c");
        let mut seen = std::collections::HashSet::new();
        for round in 1..=a.rounds {
            for setup in Setup::ALL {
                for (qos, c) in &cells {
                    let t = topic(setup, *qos, c, round);
                    assert!(bench.check(&t, fogline_auth::acl::Access::Write), "{t}");
                    assert!(bench.check(&t, fogline_auth::acl::Access::Subscribe), "{t}");
                    assert!(seen.insert(t));
                }
            }
        }
    }
}
