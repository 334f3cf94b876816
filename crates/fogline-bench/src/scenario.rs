//! The scenarios: the source studies' experiments as lists of cells.
//!
//! | name | source | what |
//! | --- | --- | --- |
//! | `core` | issue 2 | 1 -> 1 and 1 -> 4, 22 B to 1 MiB, max rate and 1 kHz |
//! | `seed000` | 000 sec. III | 256 B - 1 MiB x 30/60/100 Hz, one idealised minute, 5 reps |
//! | `seed002` | 002 "Quantitative Comparison" | 22 B at max rate, 1 -> 1 and 1 -> 4 |
//! | `seed003` | 003 ch. 4 | (a) 100-1000 producers x 60 msgs at ~1 s; (b) 1 B - 10 kB; (c) 100 MB of 1 kB |
//! | `seed004` | 004 sec. V-A1 | single-producer acknowledged throughput, persistence on |
//! | `mqtt` | issue 4 | MQTT QoS 0 and 1, 256 B and 1 KiB, max rate and 1 kHz: fogline vs Mosquitto |
//!
//! `--quick` shrinks durations, counts and repetitions so a scenario runs in minutes (CI).

use std::time::Duration;

use crate::cell::{Budget, CellSpec, Pace, Rate, Reading};
use crate::driver::Durability;
use crate::system::System;

/// The names of every scenario.
pub const NAMES: [&str; 6] = ["core", "seed000", "seed002", "seed003", "seed004", "mqtt"];

/// A scenario: cells, repetitions, durability and the systems it compares.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Its name (also the results folder).
    pub name: String,
    /// What it reproduces.
    pub source: &'static str,
    /// The cells, in run order.
    pub cells: Vec<CellSpec>,
    /// Repetitions of each cell.
    pub repetitions: u32,
    /// Volatile or persistent: decides how peers are started.
    pub durability: Durability,
    /// The systems compared by default.
    pub systems: Vec<System>,
}

/// Overrides from the command line, applied to every cell.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Only cells of this size (core: exactly this size).
    pub size: Option<usize>,
    /// Only cells at this rate (core: exactly this rate).
    pub rate: Option<Rate>,
    /// Subscribers per cell.
    pub subscribers: Option<u32>,
    /// Producers per cell.
    pub producers: Option<u32>,
    /// Seconds per cell (fixed rates: rate x seconds messages per producer).
    pub duration: Option<Duration>,
    /// Repetitions.
    pub repetitions: Option<u32>,
}

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

fn size_label(size: usize) -> String {
    match size {
        s if s >= MIB && s % MIB == 0 => format!("{} MiB", s / MIB),
        s if s >= KIB && s % KIB == 0 => format!("{} KiB", s / KIB),
        s => format!("{s} B"),
    }
}

fn volatile_systems() -> Vec<System> {
    vec![
        System::Fogline,
        System::FoglineMqtt,
        System::Mosquitto,
        System::Redis,
        System::Nats,
        System::Jetstream,
        System::Rabbitmq,
        System::Kafka,
        System::Zeromq,
    ]
}

fn timed(rate: Rate, secs: f64) -> Budget {
    match rate {
        Rate::Max => Budget::Time(Duration::from_secs_f64(secs)),
        Rate::Hz(h) => Budget::Messages((h * secs).round().max(1.0) as u64),
    }
}

fn core(quick: bool) -> Scenario {
    let secs = if quick { 1.0 } else { 10.0 };
    let mut cells = Vec::new();
    for subs in [1, 4] {
        for size in [22, 256, KIB, 100 * KIB, MIB] {
            for rate in [Rate::Max, Rate::Hz(1000.0)] {
                let label = format!("1->{subs} {} @ {rate}", size_label(size));
                let mut c = CellSpec::new(label, size, rate, timed(rate, secs));
                c.subscribers = subs;
                cells.push(c);
            }
        }
    }
    Scenario {
        name: "core".into(),
        source: "issue 2: one producer to one and to four subscribers",
        cells,
        repetitions: if quick { 1 } else { 3 },
        durability: Durability::Volatile,
        systems: volatile_systems(),
    }
}

fn seed000(quick: bool) -> Scenario {
    // One idealised minute per run: rate x 60 messages, waiting for stragglers.
    let secs = if quick { 3.0 } else { 60.0 };
    let mut cells = Vec::new();
    for size in [256, KIB, 100 * KIB, MIB] {
        for hz in [30.0, 60.0, 100.0] {
            let rate = Rate::Hz(hz);
            let mut c = CellSpec::new(
                format!("{} @ {hz} Hz", size_label(size)),
                size,
                rate,
                timed(rate, secs),
            );
            c.straggler_timeout = Duration::from_secs(10);
            cells.push(c);
        }
    }
    Scenario {
        name: "seed000".into(),
        source: "000 section III: latency, throughput and loss at 30/60/100 Hz",
        cells,
        repetitions: if quick { 1 } else { 5 },
        durability: Durability::Volatile,
        systems: volatile_systems(),
    }
}

fn seed002(quick: bool) -> Scenario {
    let secs = if quick { 2.0 } else { 10.0 };
    let cells = [1, 4]
        .into_iter()
        .map(|subs| {
            let mut c = CellSpec::new(
                format!("22 B max 1->{subs}"),
                22,
                Rate::Max,
                timed(Rate::Max, secs),
            );
            c.subscribers = subs;
            c
        })
        .collect();
    Scenario {
        name: "seed002".into(),
        source: "002 Quantitative Comparison: 22-byte messages at maximum rate",
        cells,
        repetitions: if quick { 1 } else { 5 },
        durability: Durability::Volatile,
        systems: volatile_systems(),
    }
}

/// Systems that store what they acknowledge. Not Redis (pub/sub messages are never stored,
/// AOF or not), NATS core or ZeroMQ.
fn persistent_systems() -> Vec<System> {
    vec![
        System::Fogline,
        System::FoglineMqtt,
        System::Mosquitto,
        System::Jetstream,
        System::Rabbitmq,
        System::Kafka,
    ]
}

fn seed003(quick: bool) -> Scenario {
    // 60 messages per producer at normally distributed gaps, mean 1 s (sd 0.1 s: the thesis
    // gives no deviation).
    let per_producer = if quick { 5 } else { 60 };
    let users = |n: u32, size: usize, label: String| {
        let mut c = CellSpec::new(label, size, Rate::Hz(1.0), Budget::Messages(per_producer));
        c.producers = n;
        c.pace = Pace::Normal(0.1);
        c.durability = Durability::Persistent;
        c.straggler_timeout = Duration::from_secs(10);
        c
    };
    let mut cells = Vec::new();
    let counts: Vec<u32> = if quick {
        vec![100, 1000]
    } else {
        (1..=10).map(|k| k * 100).collect()
    };
    for n in counts {
        cells.push(users(n, 100, format!("(a) {n} producers x 100 B")));
    }
    for size in [1, 10, 100, 1000, 10_000] {
        cells.push(users(100, size, format!("(b) 100 producers x {size} B")));
    }
    let records = if quick { 10_000 } else { 100_000 };
    let mb = records / 1000;
    for (label, subs, reading) in [
        ("producer alone", 0, Reading::Live),
        ("consumer alone", 1, Reading::Replay),
        ("both", 1, Reading::Live),
    ] {
        let mut c = CellSpec::new(
            format!("(c) {mb} MB of 1 kB: {label}"),
            1000,
            Rate::Max,
            Budget::Messages(records),
        );
        c.subscribers = subs;
        c.reading = reading;
        c.durability = Durability::Persistent;
        c.straggler_timeout = Duration::from_secs(15);
        cells.push(c);
    }
    Scenario {
        name: "seed003".into(),
        source: "003 chapter 4: user scaling, payload sweep, 100 MB throughput (persistence on)",
        cells,
        repetitions: if quick { 1 } else { 10 },
        durability: Durability::Persistent,
        systems: persistent_systems(),
    }
}

fn seed004(quick: bool) -> Scenario {
    let secs = if quick { 2.0 } else { 10.0 };
    let cells = [100, 1000, 10_000, 100_000]
        .into_iter()
        .map(|size| {
            let mut c = CellSpec::new(
                format!("{size} B acked"),
                size,
                Rate::Max,
                timed(Rate::Max, secs),
            );
            c.subscribers = 0;
            c.durability = Durability::Persistent;
            c
        })
        .collect();
    Scenario {
        name: "seed004".into(),
        source: "004 section V-A1 Fig. 4: single-producer throughput, persistence on",
        cells,
        repetitions: if quick { 1 } else { 5 },
        durability: Durability::Persistent,
        systems: vec![
            System::Fogline,
            System::FoglineMqtt,
            System::Kafka,
            System::Mosquitto,
        ],
    }
}

/// Issue 4's MQTT benchmark: the same MQTT client (rumqttc) against fogline's MQTT listener
/// and Mosquitto, QoS 0 (volatile cells) and QoS 1 (persistent cells: every PUBLISH is
/// acknowledged). Both brokers run in their persistent configuration (fogline `mmap`,
/// Mosquitto `persistence true`), as a device fleet would deploy them; fogline's native
/// protocol runs alongside for reference.
fn mqtt(quick: bool) -> Scenario {
    let secs = if quick { 2.0 } else { 10.0 };
    let mut cells = Vec::new();
    for (qos, durability) in [(0, Durability::Volatile), (1, Durability::Persistent)] {
        for size in [256, KIB] {
            for rate in [Rate::Max, Rate::Hz(1000.0)] {
                let label = format!("QoS {qos} {} @ {rate}", size_label(size));
                let mut c = CellSpec::new(label, size, rate, timed(rate, secs));
                c.durability = durability;
                cells.push(c);
            }
        }
    }
    Scenario {
        name: "mqtt".into(),
        source: "issue 4: MQTT QoS 0 and QoS 1 throughput and latency, fogline vs Mosquitto",
        cells,
        repetitions: if quick { 1 } else { 5 },
        durability: Durability::Persistent,
        systems: vec![System::FoglineMqtt, System::Mosquitto, System::Fogline],
    }
}

/// The scenario `name`, quick or full, with `o` applied; `None` for an unknown name.
pub fn build(name: &str, quick: bool, o: &Overrides) -> Option<Scenario> {
    let mut s = match name {
        "core" => core(quick),
        "seed000" => seed000(quick),
        "seed002" => seed002(quick),
        "seed003" => seed003(quick),
        "seed004" => seed004(quick),
        "mqtt" => mqtt(quick),
        _ => return None,
    };
    if quick {
        s.name.push_str("-quick");
    }
    if let Some(r) = o.repetitions {
        s.repetitions = r.max(1);
    }
    let core = name == "core";
    s.cells.retain(|c| {
        o.size.is_none_or(|z| core || c.size == z) && o.rate.is_none_or(|r| core || c.rate == r)
    });
    if core && (o.size.is_some() || o.rate.is_some()) {
        // One cell per subscriber count, as asked.
        s.cells.retain(|c| c.size == 256 && c.rate == Rate::Max);
        for c in &mut s.cells {
            c.size = o.size.unwrap_or(c.size);
            c.rate = o.rate.unwrap_or(c.rate);
            c.budget = timed(c.rate, if quick { 1.0 } else { 10.0 });
            c.label = format!("1->{} {} @ {}", c.subscribers, size_label(c.size), c.rate);
        }
    }
    for c in &mut s.cells {
        let (subs, prods) = (c.subscribers, c.producers);
        if let Some(n) = o.subscribers {
            c.subscribers = n;
        }
        if let Some(n) = o.producers {
            c.producers = n.max(1);
        }
        if let Some(d) = o.duration {
            c.budget = timed(c.rate, d.as_secs_f64());
        }
        // A label names what ran: one that carries the subscriber count (core's, seed002's)
        // gets the new count, others say what the override changed.
        if c.subscribers != subs {
            let old = format!("1->{subs}");
            c.label = if c.label.contains(&old) {
                c.label.replacen(&old, &format!("1->{}", c.subscribers), 1)
            } else {
                format!("{}, {} subscribers", c.label, c.subscribers)
            };
        }
        if c.producers != prods {
            c.label = format!("{}, {} producers", c.label, c.producers);
        }
    }
    // Overrides can make cells alike (core's 1->1 and 1->4 with --subscribers): run each once.
    let mut seen = std::collections::HashSet::new();
    s.cells.retain(|c| seen.insert(c.label.clone()));
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_builds_full_and_quick() {
        for n in NAMES {
            for quick in [false, true] {
                let s = build(n, quick, &Overrides::default()).unwrap();
                assert!(!s.cells.is_empty(), "{n}");
                assert!(s.systems.contains(&System::Fogline));
            }
        }
        assert!(build("seed999", false, &Overrides::default()).is_none());
    }

    #[test]
    fn seed000_is_the_48_cell_matrix_per_four_systems() {
        let s = build("seed000", false, &Overrides::default()).unwrap();
        assert_eq!(s.cells.len(), 12);
        assert_eq!(s.repetitions, 5);
        let c = s
            .cells
            .iter()
            .find(|c| c.size == MIB && c.rate == Rate::Hz(100.0))
            .unwrap();
        assert_eq!(c.budget, Budget::Messages(6000));
    }

    #[test]
    fn one_core_cell_from_the_command_line() {
        let o = Overrides {
            size: Some(1000),
            rate: Some(Rate::Hz(50.0)),
            subscribers: Some(4),
            duration: Some(Duration::from_secs(2)),
            ..Overrides::default()
        };
        let s = build("core", false, &o).unwrap();
        assert_eq!(s.cells.len(), 1, "{:?}", s.cells);
        let c = &s.cells[0];
        assert_eq!((c.size, c.rate, c.subscribers), (1000, Rate::Hz(50.0), 4));
        assert_eq!(c.budget, Budget::Messages(100));
    }

    /// Labels say what ran once --subscribers or --producers change a cell, and cells made
    /// alike by them run once.
    #[test]
    fn overrides_relabel_cells() {
        let subs = |n| Overrides {
            subscribers: Some(n),
            ..Overrides::default()
        };
        let core = build("core", false, &subs(4)).unwrap();
        assert_eq!(core.cells.len(), 10, "core's 1->1 and 1->4 cells collapse");
        assert!(core
            .cells
            .iter()
            .all(|c| c.label.starts_with("1->4 ") && c.subscribers == 4));
        let one = build(
            "core",
            false,
            &Overrides {
                size: Some(KIB),
                rate: Some(Rate::Max),
                subscribers: Some(4),
                ..Overrides::default()
            },
        )
        .unwrap();
        assert_eq!(one.cells.len(), 1);
        assert_eq!(one.cells[0].label, "1->4 1 KiB @ max");
        let s2 = build("seed002", false, &subs(2)).unwrap();
        assert_eq!(s2.cells.len(), 1);
        assert_eq!(s2.cells[0].label, "22 B max 1->2");
        let s3 = build("seed003", false, &subs(3)).unwrap();
        assert_eq!(s3.cells.len(), 18, "seed003's cells stay apart");
        assert!(
            s3.cells[0].label.ends_with(", 3 subscribers"),
            "{}",
            s3.cells[0].label
        );
        let p = build(
            "seed003",
            false,
            &Overrides {
                producers: Some(7),
                ..Overrides::default()
            },
        )
        .unwrap();
        assert!(
            p.cells[0].label.ends_with(", 7 producers"),
            "{}",
            p.cells[0].label
        );
        let plain = build("seed000", false, &Overrides::default()).unwrap();
        assert_eq!(plain.cells[0].label, "256 B @ 30 Hz");
    }

    #[test]
    fn mqtt_mixes_qos_0_and_1_cells_on_persistent_brokers() {
        let s = build("mqtt", false, &Overrides::default()).unwrap();
        assert_eq!(s.cells.len(), 8);
        assert_eq!(s.durability, Durability::Persistent);
        let qos1 = s
            .cells
            .iter()
            .filter(|c| c.durability == Durability::Persistent);
        assert_eq!(qos1.count(), 4);
        assert!(s.cells[0].label.starts_with("QoS 0 256 B @ max"));
    }

    #[test]
    fn filters_select_cells() {
        let o = Overrides {
            size: Some(KIB),
            ..Overrides::default()
        };
        let s = build("seed000", true, &o).unwrap();
        assert_eq!(s.cells.len(), 3);
        assert_eq!(s.name, "seed000-quick");
    }
}
