//! `fogline gm table3.2|fig3.5|data`: the geometric-monitoring reproductions
//! (docs/GEOMETRIC_MONITORING.md), on the simulator of `fogline-gm`.

mod plot;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use fogline_gm::experiment::{self, FigPoint, Setup, Source, TableRow};
use fogline_gm::proto::Protocol;
use fogline_gm::sim::{Graph, Latency, Net};

/// Which readings, and how many.
#[derive(Args, Debug, Clone)]
pub struct DataArgs {
    /// `upsampled` (the half-hourly Intel Lab extract at 31 s), `parametric`, or the path of
    /// a data.txt file.
    #[arg(long, default_value = "upsampled")]
    pub source: String,
    /// The directory of the Intel Lab extract (intelTemperatureTrain.csv ...; mote_locs.txt).
    #[arg(
        long,
        default_value = "../shared/data/intel-lab",
        env = "FOGLINE_INTEL_LAB"
    )]
    pub intel_lab: PathBuf,
    /// Nodes (the thesis: 26, motes 22-47).
    #[arg(long, default_value_t = 26)]
    pub nodes: usize,
    /// Hours of readings (the thesis: 20).
    #[arg(long, default_value_t = 20.0)]
    pub hours: f64,
    /// Seed of the data noise and of the network.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Upsampling noise: stationary sd of the temperature, C.
    #[arg(long, default_value_t = 0.05)]
    pub noise: f64,
    /// Temperature the readings are centred at before lifting (0: raw readings).
    #[arg(long, default_value_t = 20.0)]
    pub centre: f64,
}

impl DataArgs {
    fn setup(&self) -> Setup {
        let source = match self.source.as_str() {
            "upsampled" => Source::Upsampled(self.intel_lab.clone()),
            "parametric" => Source::Parametric,
            path => Source::DataTxt(PathBuf::from(path)),
        };
        Setup {
            source,
            nodes: self.nodes,
            hours: self.hours,
            seed: self.seed,
            noise: self.noise,
            centre: self.centre,
        }
    }
}

/// Output options.
#[derive(Args, Debug, Clone)]
pub struct OutArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Where to write the plot (SVG).
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

/// Geometric monitoring: the thesis' reproductions.
#[derive(Subcommand, Debug)]
pub enum GmCommand {
    /// Table 3.2: messages for variance (T = 2) and average (T = 20) on a lossless network,
    /// per protocol and safe zone, against the baselines and the thesis' ball.
    #[command(name = "table3.2")]
    Table {
        #[command(flatten)]
        data: DataArgs,
        #[command(flatten)]
        out: OutArgs,
    },
    /// Fig. 3.5: out-of-sync and detection time of the variance monitor against loss
    /// (0.1-5 %).
    #[command(name = "fig3.5")]
    Fig {
        #[command(flatten)]
        data: DataArgs,
        #[command(flatten)]
        out: OutArgs,
        /// `lossy` (independent loss per destination, 50-550 ms) or `flood` (multi-hop
        /// flooding over the motes' positions, 14 m radio range, loss per link, 20-140 ms a
        /// hop).
        #[arg(long, default_value = "lossy")]
        net: String,
        /// Runs per point (seeds seed, seed+1, ...).
        #[arg(long, default_value_t = 3)]
        seeds: usize,
        /// Protocols, e.g. broadcast/ball, coordinator/convex, every-reading, periodic/10
        /// (default: every-reading, broadcast/ball, broadcast/convex, repair/convex,
        /// predict/convex, predict+repair/convex, predict/band, predict+repair/band,
        /// coordinator/convex). Zones: ball, box, convex, band.
        #[arg(long, value_delimiter = ',')]
        protocols: Vec<String>,
    },
    /// Write the readings as an Intel Lab data.txt file.
    Data {
        #[command(flatten)]
        data: DataArgs,
        /// The file to write.
        #[arg(long, short)]
        output: PathBuf,
    },
}

/// Runs a gm subcommand.
pub fn run(cmd: GmCommand) -> anyhow::Result<()> {
    match cmd {
        GmCommand::Table { data, out } => {
            let setup = data.setup();
            let trace = setup.trace().map_err(anyhow::Error::msg)?;
            let rows = experiment::table3_2(&setup, &trace);
            if out.json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                print!("{}", table_text(&setup, &rows));
            }
            if let Some(path) = out.plot {
                write(&path, &table_plot(&rows))?;
            }
        }
        GmCommand::Fig {
            data,
            out,
            net,
            seeds,
            protocols,
        } => {
            let setup = data.setup();
            let trace = setup.trace().map_err(anyhow::Error::msg)?;
            let protocols = if protocols.is_empty() {
                experiment::fig_protocols()
            } else {
                protocols
                    .iter()
                    .map(|p| Protocol::parse(p).with_context(|| format!("unknown protocol {p:?}")))
                    .collect::<anyhow::Result<_>>()?
            };
            let points = match net.as_str() {
                "lossy" => {
                    experiment::fig3_5(&setup, &trace, &protocols, seeds, |loss| Net::Lossy {
                        loss,
                        latency: experiment::LATENCY,
                    })
                }
                "flood" => {
                    let graph = mote_graph(&data.intel_lab, data.nodes);
                    experiment::fig3_5(&setup, &trace, &protocols, seeds, |loss| Net::Flood {
                        graph: graph.clone(),
                        loss,
                        latency: Latency { lo: 20, hi: 140 },
                    })
                }
                other => bail!("unknown network {other:?}: lossy or flood"),
            };
            if out.json {
                println!("{}", serde_json::to_string_pretty(&points)?);
            } else {
                print!("{}", fig_text(&points));
            }
            if let Some(path) = out.plot {
                write(&path, &fig_plot(&points))?;
            }
        }
        GmCommand::Data { data, output } => {
            let trace = data.setup().trace().map_err(anyhow::Error::msg)?;
            let file = std::fs::File::create(&output)
                .with_context(|| format!("creating {}", output.display()))?;
            let mut w = std::io::BufWriter::new(file);
            fogline_gm::data::datatxt::write(&trace, 0, &mut w)?;
            std::io::Write::flush(&mut w)?;
        }
    }
    Ok(())
}

fn write(path: &Path, svg: &str) -> anyhow::Result<()> {
    std::fs::write(path, svg).with_context(|| format!("writing {}", path.display()))
}

/// The radio graph of motes 22.. from mote_locs.txt (14 m range, widened until connected:
/// 4 hops across motes 22-47, as the thesis' 26-node topology), or a 6-wide grid when the
/// file is absent.
fn mote_graph(dir: &Path, n: usize) -> Graph {
    let text = std::fs::read_to_string(dir.join("mote_locs.txt")).unwrap_or_default();
    let pos: Vec<(f64, f64)> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<f64> = l
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            (f.len() == 3 && (22.0..22.0 + n as f64).contains(&f[0])).then(|| (f[1], f[2]))
        })
        .collect();
    if pos.len() == n {
        Graph::from_positions(&pos, 14.0)
    } else {
        Graph::grid(n, 6)
    }
}

fn table_text(setup: &Setup, rows: &[TableRow]) -> String {
    let mut s = format!(
        "Table 3.2 on {} nodes, {} epochs of 31 s, lossless; readings centred at {} C\n",
        setup.nodes,
        setup.epochs(),
        setup.centre
    );
    s.push_str(&format!(
        "{:<9} {:<20} {:>8} {:>10} {:>10} {:>9} {:>7} {:>8} {:>8}\n",
        "function",
        "protocol",
        "messages",
        "reduction",
        "vs-ball",
        "crossings",
        "missed",
        "wrong-ep",
        "f-alarms"
    ));
    for r in rows {
        let p = &r.report;
        s.push_str(&format!(
            "{:<9} {:<20} {:>8} {:>9.2}x {:>9.2}x {:>9} {:>7} {:>8} {:>8}\n",
            r.function,
            p.protocol,
            p.sent,
            p.reduction,
            r.vs_thesis,
            p.crossings,
            p.missed,
            p.wrong_epochs,
            p.false_alarms
        ));
    }
    s.push_str("reduction: readings / messages (the every-reading baseline sends one message a reading);\nvs-ball: messages of broadcast/ball (the thesis) / messages; wrong-ep: (epoch, decider) pairs\nwhose decision at the end of the epoch differs from the exact oracle.\n");
    s
}

fn table_plot(rows: &[TableRow]) -> String {
    let mut groups: Vec<(String, Vec<(String, f64)>)> = Vec::new();
    for r in rows {
        if groups.last().map(|g| g.0.as_str()) != Some(r.function) {
            groups.push((r.function.to_string(), Vec::new()));
        }
        if let Some(g) = groups.last_mut() {
            g.1.push((r.report.protocol.clone(), r.report.reduction));
        }
    }
    plot::bars(
        "Table 3.2: communication reduction against sending every reading (lossless)",
        "readings / messages (log)",
        &groups,
    )
}

fn fig_text(points: &[FigPoint]) -> String {
    let mut s = format!(
        "{:<22} {:>6} {:>9} {:>9} {:>12} {:>12} {:>9} {:>8} {:>9}\n",
        "protocol",
        "loss%",
        "measured%",
        "messages",
        "out-of-sync",
        "detection",
        "crossings",
        "missed",
        "wrong-ep"
    );
    for p in points {
        s.push_str(&format!(
            "{:<22} {:>6.2} {:>9.2} {:>9.0} {:>10.0}ms {:>10.0}ms {:>9.1} {:>8.1} {:>9.1}\n",
            p.protocol,
            100.0 * p.loss,
            100.0 * p.measured_loss,
            p.sent,
            p.out_of_sync_ms,
            p.detection_ms,
            p.crossings,
            p.missed,
            p.wrong_epochs
        ));
    }
    s.push_str("out-of-sync: mean spell during which a node lacks an origin's latest update (or the\ncoordinator's latest estimate); detection: mean time from a true crossing to a decider's\nbelief; missed and wrong-ep per run, over all deciders.\n");
    s
}

fn fig_plot(points: &[FigPoint]) -> String {
    let series = |metric: fn(&FigPoint) -> f64| {
        let mut out: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for p in points {
            if out.last().map(|s| s.0.as_str()) != Some(p.protocol.as_str()) {
                out.push((p.protocol.clone(), Vec::new()));
            }
            if let Some(s) = out.last_mut() {
                s.1.push((100.0 * p.loss, metric(p)));
            }
        }
        out
    };
    plot::lines(&[
        plot::Panel {
            title: "(a) out of sync".into(),
            x_label: "loss (%)".into(),
            y_label: "mean out-of-sync spell (ms)".into(),
            series: series(|p| p.out_of_sync_ms),
        },
        plot::Panel {
            title: "(b) detection".into(),
            x_label: "loss (%)".into(),
            y_label: "mean detection time (ms)".into(),
            series: series(|p| p.detection_ms),
        },
    ])
}
