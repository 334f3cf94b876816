//! The reproductions of the thesis' Table 3.2 (communication reduction for variance and
//! average, per safe zone and protocol) and Fig. 3.5 (out-of-sync and detection time against
//! loss), as plain functions that return rows; `fogline gm` prints and plots them.

use serde::Serialize;

use crate::data::{self, Trace, EPOCH_MS};
use crate::function::{Function, Kind};
use crate::proto::Protocol;
use crate::sim::{self, Config, Latency, Net, Report};
use crate::zone::Zone;

/// Where the readings come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// The half-hourly extract (directory), upsampled; rows stand in for motes.
    Upsampled(std::path::PathBuf),
    /// The parametric generator.
    Parametric,
    /// A data.txt file (the real one, or one written by `fogline gm data`).
    DataTxt(std::path::PathBuf),
}

/// What to run on.
#[derive(Debug, Clone)]
pub struct Setup {
    /// where the readings come from
    pub source: Source,
    /// nodes (26 in the thesis: motes 22-47)
    pub nodes: usize,
    /// hours of readings (20 in the thesis)
    pub hours: f64,
    /// seeds the data noise and the network
    pub seed: u64,
    /// the upsampler's temperature noise (stationary sd, C; humidity gets 4 times as much)
    pub noise: f64,
    /// the temperature the readings are centred at before lifting (the thesis zone depends
    /// on it; 20 C by default, 0 for raw readings)
    pub centre: f64,
}

impl Setup {
    /// Epochs in `hours`.
    pub fn epochs(&self) -> usize {
        (self.hours * 3_600_000.0 / EPOCH_MS as f64).round() as usize
    }

    /// The trace: motes 22.. (rows 22.. of the extract).
    ///
    /// # Errors
    /// When a file cannot be read or holds too few epochs or motes.
    pub fn trace(&self) -> Result<Trace, String> {
        let epochs = self.epochs();
        match &self.source {
            Source::Upsampled(dir) => {
                data::upsample::upsample(dir, 22..22 + self.nodes, epochs, self.noise, self.seed)
            }
            Source::Parametric => Ok(data::parametric::parametric(
                self.nodes, 22, epochs, self.seed,
            )),
            Source::DataTxt(path) => {
                let file =
                    std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
                let motes: Vec<u32> = (22..22 + self.nodes as u32).collect();
                let (trace, _) = data::datatxt::load(std::io::BufReader::new(file), &motes, epochs)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                if trace.epochs() == 0 {
                    return Err(format!(
                        "{}: no readings for motes {motes:?}",
                        path.display()
                    ));
                }
                Ok(trace)
            }
        }
    }

    /// The thesis' function `kind` and threshold, with this setup's centre.
    ///
    /// # Panics
    /// When the centre is not a whole number of centidegrees (the average's threshold must
    /// be a whole number of quanta from it).
    pub fn function(&self, kind: Kind) -> Function {
        Function::new(kind, kind.thesis_threshold(), [self.centre, 35.0], 0.01)
            .expect("a centre in whole centidegrees")
    }
}

/// The protocols of Table 3.2, baselines first.
pub fn table_protocols() -> Vec<Protocol> {
    let mut out = vec![
        Protocol::EveryReading,
        Protocol::Periodic(4),
        Protocol::Periodic(40),
    ];
    for z in Zone::ALL {
        out.push(Protocol::Broadcast(z));
    }
    out.push(Protocol::Repair(Zone::Convex));
    for z in [Zone::Ball, Zone::Convex, Zone::Band] {
        out.push(Protocol::Predict(z));
    }
    for z in [Zone::Ball, Zone::Box, Zone::Convex] {
        out.push(Protocol::Coordinator(z));
    }
    out
}

/// One row of Table 3.2.
#[derive(Debug, Clone, Serialize)]
pub struct TableRow {
    /// the monitored function
    pub function: &'static str,
    /// the simulator's measurements (lossless network)
    pub report: Report,
    /// messages of the thesis' protocol and zone (broadcast/ball) / this protocol's messages
    pub vs_thesis: f64,
}

/// Table 3.2 on a lossless network: every protocol for variance (T = 2) and average (T = 20).
pub fn table3_2(setup: &Setup, trace: &Trace) -> Vec<TableRow> {
    let seed = setup.seed;
    let mut rows = Vec::new();
    for kind in [Kind::Variance, Kind::Average] {
        let f = setup.function(kind);
        let vectors = trace.vectors(&f);
        let reports: Vec<Report> = table_protocols()
            .into_iter()
            .map(|protocol| {
                let cfg = Config {
                    protocol,
                    net: Net::Lossless { latency_ms: 0 },
                    period_ms: EPOCH_MS,
                    seed,
                };
                sim::run(&f, &vectors, &cfg)
            })
            .collect();
        let thesis = reports
            .iter()
            .find(|r| r.protocol == Protocol::Broadcast(Zone::Ball).label())
            .map_or(1, |r| r.sent);
        for report in reports {
            rows.push(TableRow {
                function: kind.name(),
                vs_thesis: thesis as f64 / report.sent.max(1) as f64,
                report,
            });
        }
    }
    rows
}

/// The loss rates of Fig. 3.5 (0.1 % to 5 %).
pub const LOSSES: [f64; 7] = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05];

/// The per-destination latency of the Fig. 3.5 runs: uniform 50-550 ms (mean 300 ms, about
/// the thesis' latency at a 16 Hz channel check rate, Table 3.2).
pub const LATENCY: Latency = Latency { lo: 50, hi: 550 };

/// One point of Fig. 3.5: one protocol at one loss rate, over several seeds.
#[derive(Debug, Clone, Serialize)]
pub struct FigPoint {
    /// protocol and zone
    pub protocol: String,
    /// loss probability per destination (or per link, when flooding)
    pub loss: f64,
    /// runs (one per seed)
    pub runs: usize,
    /// transmissions per run
    pub sent: f64,
    /// lost / (lost + delivered)
    pub measured_loss: f64,
    /// mean out-of-sync spell (ms), over all runs' spells
    pub out_of_sync_ms: f64,
    /// mean detection time (ms), over the runs
    pub detection_ms: f64,
    /// true crossings per run
    pub crossings: f64,
    /// (crossing, decider) pairs missed, per run
    pub missed: f64,
    /// (epoch, decider) pairs wrong at the end of the epoch, per run
    pub wrong_epochs: f64,
}

/// Fig. 3.5 for the variance: out-of-sync and detection time against loss, per protocol, on
/// `net(loss)`, averaged over `seeds` runs (seed `setup.seed + i`).
pub fn fig3_5(
    setup: &Setup,
    trace: &Trace,
    protocols: &[Protocol],
    seeds: usize,
    net: impl Fn(f64) -> Net,
) -> Vec<FigPoint> {
    let f = setup.function(Kind::Variance);
    let vectors = trace.vectors(&f);
    let mut out = Vec::new();
    for &protocol in protocols {
        for loss in LOSSES {
            let reports: Vec<Report> = (0..seeds.max(1) as u64)
                .map(|i| {
                    let cfg = Config {
                        protocol,
                        net: net(loss),
                        period_ms: EPOCH_MS,
                        seed: setup.seed + i,
                    };
                    sim::run(&f, &vectors, &cfg)
                })
                .collect();
            let runs = reports.len() as f64;
            let mean = |g: &dyn Fn(&Report) -> f64| reports.iter().map(g).sum::<f64>() / runs;
            let spells: u64 = reports.iter().map(|r| r.out_of_sync_spells).sum();
            let lost: u64 = reports.iter().map(|r| r.lost).sum();
            let delivered: u64 = reports.iter().map(|r| r.delivered).sum();
            out.push(FigPoint {
                protocol: protocol.label(),
                loss,
                runs: reports.len(),
                sent: mean(&|r| r.sent as f64),
                measured_loss: lost as f64 / (lost + delivered).max(1) as f64,
                out_of_sync_ms: reports
                    .iter()
                    .map(|r| r.out_of_sync_mean_ms * r.out_of_sync_spells as f64)
                    .sum::<f64>()
                    / spells.max(1) as f64,
                detection_ms: mean(&|r| r.detection_mean_ms),
                crossings: mean(&|r| r.crossings as f64),
                missed: mean(&|r| r.missed as f64),
                wrong_epochs: mean(&|r| r.wrong_epochs as f64),
            });
        }
    }
    out
}

/// The default protocols of Fig. 3.5: the baseline, the thesis' protocol, and the better zone
/// under every protocol.
pub fn fig_protocols() -> Vec<Protocol> {
    vec![
        Protocol::EveryReading,
        Protocol::Broadcast(Zone::Ball),
        Protocol::Broadcast(Zone::Convex),
        Protocol::Repair(Zone::Convex),
        Protocol::Predict(Zone::Convex),
        Protocol::PredictRepair(Zone::Convex),
        Protocol::Predict(Zone::Band),
        Protocol::PredictRepair(Zone::Band),
        Protocol::Coordinator(Zone::Convex),
    ]
}
