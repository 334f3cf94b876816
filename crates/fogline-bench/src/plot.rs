//! SVG and PNG plots in the studies' shape: per cell, one line per system, for throughput
//! and p50 latency (log scale) and loss (percent).
//!
//! Text is drawn with a TrueType font read at run time (`FOGLINE_BENCH_FONT`, else DejaVu
//! Sans from Debian's `fonts-dejavu-core`); without one, no plots are drawn and the notes
//! say which package provides it.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontStyle;

use crate::cell::Reading;
use crate::harness::RunReport;
use crate::report::{summarise, Summary};

const FONT_PATHS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

fn font_ready() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    *READY.get_or_init(|| {
        let mut paths: Vec<String> = std::env::var("FOGLINE_BENCH_FONT").into_iter().collect();
        paths.extend(FONT_PATHS.iter().map(|s| s.to_string()));
        for p in paths {
            if let Ok(bytes) = std::fs::read(&p) {
                // plotters keeps registered fonts for the life of the process.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return true;
                }
            }
        }
        false
    })
}

struct Series {
    name: String,
    values: Vec<Option<f64>>,
}

struct Chart<'a> {
    title: &'a str,
    y_label: &'a str,
    log: bool,
    labels: Vec<String>,
    series: Vec<Series>,
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &Chart<'_>) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let tf = |v: f64| if c.log { v.max(1e-3).log10() } else { v };
    let all: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.values.iter().flatten().map(|&v| tf(v)))
        .collect();
    let (mut lo, mut hi) = all
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    if all.is_empty() {
        (lo, hi) = (0.0, 1.0);
    }
    if c.log {
        lo = lo.floor();
        hi = hi.ceil().max(lo + 1.0);
    } else {
        lo = 0.0;
        hi = (hi * 1.1).max(1.0);
    }
    let n = c.labels.len().max(1);
    let mut chart = ChartBuilder::on(root)
        .caption(c.title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(170)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), lo..hi)
        .map_err(e)?;
    let labels = &c.labels;
    let ylab = |v: &f64| {
        if c.log {
            // Two significant digits.
            let x = 10f64.powf(*v);
            let mag = 10f64.powf(x.log10().floor() - 1.0);
            let x = (x / mag).round() * mag;
            if x >= 1e6 {
                format!("{}M", x / 1e6)
            } else if x >= 1000.0 {
                format!("{}k", x / 1000.0)
            } else {
                format!("{}", (x * 1000.0).round() / 1000.0)
            }
        } else {
            format!("{v:.1}")
        }
    };
    chart
        .configure_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 {
                // Rotated labels are centred on the tick: leading spaces push the text
                // below the axis.
                let l = labels.get(i as usize).cloned().unwrap_or_default();
                format!("{}{l}", " ".repeat(l.len() * 2 + 2))
            } else {
                String::new()
            }
        })
        .x_label_style(
            ("sans-serif", 12)
                .into_font()
                .transform(FontTransform::Rotate90)
                .into_text_style(root)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        )
        .y_desc(c.y_label)
        .y_label_formatter(&ylab)
        .y_labels(if c.log {
            (hi - lo) as usize * 3 + 1
        } else {
            10
        })
        .draw()
        .map_err(e)?;
    for (i, s) in c.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts: Vec<(f64, f64)> = s
            .values
            .iter()
            .enumerate()
            .filter_map(|(x, v)| v.map(|v| (x as f64, tf(v))))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(e)?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled())))
            .map_err(e)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(e)?;
    root.present().map_err(e)
}

fn charts(report: &RunReport) -> Vec<(&'static str, Chart<'static>)> {
    let sums = summarise(&report.results);
    let mut systems: Vec<String> = Vec::new();
    for (_, l) in &sums {
        for s in l {
            if !systems.contains(&s.system) {
                systems.push(s.system.clone());
            }
        }
    }
    let build = |title: &'static str,
                 y: &'static str,
                 log: bool,
                 keep: &dyn Fn(&crate::cell::CellSpec) -> bool,
                 get: &dyn Fn(&Summary) -> f64| {
        let cells: Vec<_> = sums.iter().filter(|(c, _)| keep(c)).collect();
        Chart {
            title,
            y_label: y,
            log,
            labels: cells.iter().map(|(c, _)| c.label.clone()).collect(),
            series: systems
                .iter()
                .map(|sys| Series {
                    name: sys.clone(),
                    values: cells
                        .iter()
                        .map(|(_, l)| l.iter().find(|s| &s.system == sys).map(get))
                        .collect(),
                })
                .collect(),
        }
    };
    let live = |c: &crate::cell::CellSpec| c.subscribers > 0 && c.reading == Reading::Live;
    vec![
        (
            "throughput",
            build(
                "Throughput (delivered msg/s, median)",
                "msg/s",
                true,
                &|_| true,
                &|s| s.throughput_msgs,
            ),
        ),
        (
            "latency_p50",
            build("Latency p50 (us, median)", "us", true, &live, &|s| s.p50_us),
        ),
        (
            "latency_p99",
            build("Latency p99 (us, median)", "us", true, &live, &|s| s.p99_us),
        ),
        (
            "loss",
            build("Loss (% of expected messages)", "%", false, &live, &|s| {
                s.loss_pct
            }),
        ),
    ]
}

/// Draws every plot as `<name>.svg` and `<name>.png` into `dir`; returns notes for the user.
///
/// # Errors
/// Never for drawing problems (they become notes); only I/O errors propagate.
pub fn write_plots(report: &RunReport, dir: &Path) -> std::io::Result<Vec<String>> {
    if !font_ready() {
        return Ok(vec![
            "no plots: no TrueType font found (apt-get install fonts-dejavu-core, or set FOGLINE_BENCH_FONT)".into(),
        ]);
    }
    let mut notes = Vec::new();
    for (name, chart) in charts(report) {
        if chart.labels.is_empty() {
            continue;
        }
        let (w, h) = (1280u32, 760u32);
        let svg = dir.join(format!("{name}.svg"));
        let png = dir.join(format!("{name}.png"));
        let drawn = draw(&SVGBackend::new(&svg, (w, h)).into_drawing_area(), &chart);
        if let Err(e) = drawn {
            notes.push(format!("{name}.svg: {e}"));
        }
        let area = BitMapBackend::new(&png, (w, h)).into_drawing_area();
        let drawn = draw(&area, &chart);
        drop(area);
        if let Err(e) = drawn {
            notes.push(format!("{name}.png: {e}"));
        }
    }
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::Delivery;
    use crate::cell::{Budget, CellResult, CellSpec, Rate};
    use crate::harness::Meta;
    use crate::latency::LatencySummary;

    #[test]
    fn plots_are_written_when_a_font_exists() {
        let mut results = Vec::new();
        for (i, label) in ["256 B @ 30 Hz", "1 KiB @ 60 Hz", "1 MiB @ 100 Hz"]
            .iter()
            .enumerate()
        {
            let spec = CellSpec::new(*label, 256, Rate::Hz(30.0), Budget::Messages(10));
            for (sys, f) in [("fogline", 1.0), ("nats", 2.0)] {
                results.push(CellResult {
                    system: sys.into(),
                    spec: spec.clone(),
                    repetition: 1,
                    wire_size: 256,
                    sent: 10,
                    delivery: Delivery {
                        expected: 10,
                        received: 10,
                        ..Delivery::default()
                    },
                    latency: LatencySummary {
                        p50_us: f * 100.0 * (i + 1) as f64,
                        p99_us: 900.0,
                        ..LatencySummary::default()
                    },
                    send_seconds: 1.0,
                    elapsed_seconds: 1.0,
                    publish_rate: 10.0,
                    throughput_msgs: 10.0 * f,
                    throughput_mbps: 0.0,
                    server: None,
                    noise: None,
                    errors: vec![],
                });
            }
        }
        let report = RunReport {
            meta: Meta {
                scenario: "t".into(),
                source: "test".into(),
                command: "x".into(),
                date: "d".into(),
                machine: "m".into(),
                placement: None,
                repetitions: 1,
                fogline_version: "0".into(),
                resumed: vec![],
                build: Default::default(),
            },
            results,
            skipped: vec![],
        };
        let dir = tempfile::tempdir().unwrap();
        let notes = write_plots(&report, dir.path()).unwrap();
        if !font_ready() {
            eprintln!("SKIPPED: {notes:?}");
            return;
        }
        assert!(notes.is_empty(), "{notes:?}");
        for f in ["throughput", "latency_p50", "latency_p99", "loss"] {
            for ext in ["svg", "png"] {
                let p = dir.path().join(format!("{f}.{ext}"));
                assert!(
                    std::fs::metadata(&p)
                        .map(|m| m.len() > 1000)
                        .unwrap_or(false),
                    "{p:?}"
                );
            }
        }
        if let Ok(keep) = std::env::var("FOGLINE_BENCH_KEEP_PLOT") {
            let _ = std::fs::copy(dir.path().join("latency_p50.png"), keep);
        }
    }
}
