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
                data::upsample::upsample(dir, 22..22 + self.nodes, epochs, self.seed)
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
}

/// The protocols of Table 3.2, baselines first.
pub fn table_protocols() -> Vec<Protocol> {
    let mut out = vec![
        Protocol::EveryReading,
        Protocol::Periodic(4),
        Protocol::Periodic(40),
    ];
    for z in [Zone::Ball, Zone::Box, Zone::Convex] {
        out.push(Protocol::Broadcast(z));
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
pub fn table3_2(trace: &Trace, seed: u64) -> Vec<TableRow> {
    let mut rows = Vec::new();
    for kind in [Kind::Variance, Kind::Average] {
        let f = Function::thesis(kind);
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

/// One point of Fig. 3.5.
#[derive(Debug, Clone, Serialize)]
pub struct FigPoint {
    /// loss probability per destination
    pub loss: f64,
    /// the simulator's measurements, averaged over seeds where numeric
    pub report: Report,
}

/// Fig. 3.5 for the variance: out-of-sync and detection time against loss, per protocol,
/// on `net(loss)`; each point is the run with `seed`.
pub fn fig3_5(
    trace: &Trace,
    protocols: &[Protocol],
    seed: u64,
    net: impl Fn(f64) -> Net,
) -> Vec<FigPoint> {
    let f = Function::thesis(Kind::Variance);
    let vectors = trace.vectors(&f);
    let mut out = Vec::new();
    for &protocol in protocols {
        for loss in LOSSES {
            let cfg = Config {
                protocol,
                net: net(loss),
                period_ms: EPOCH_MS,
                seed,
            };
            out.push(FigPoint {
                loss,
                report: sim::run(&f, &vectors, &cfg),
            });
        }
    }
    out
}

/// The default protocols of Fig. 3.5: the baseline, the thesis' protocol, and the better zone
/// under both protocols.
pub fn fig_protocols() -> Vec<Protocol> {
    vec![
        Protocol::EveryReading,
        Protocol::Broadcast(Zone::Ball),
        Protocol::Broadcast(Zone::Convex),
        Protocol::Coordinator(Zone::Convex),
    ]
}
