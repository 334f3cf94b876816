//! Losses, latency and flooding: runs are reproducible from their seed, losses show up in the
//! metrics, and a lossless multi-hop flood still decides exactly.

use fogline_gm::data::parametric::parametric;
use fogline_gm::proto::Protocol;
use fogline_gm::sim::{self, Config, Graph, Latency, Net};
use fogline_gm::{Function, Kind, Zone};

fn vectors(f: &Function) -> Vec<Vec<Vec<i64>>> {
    // 14 h from midnight: the variance crosses 2 C^2 on the way up
    parametric(12, 22, 1600, 4).vectors(f)
}

#[test]
fn same_seed_same_report() {
    let f = Function::thesis(Kind::Variance);
    let v = vectors(&f);
    let cfg = Config {
        protocol: Protocol::Broadcast(Zone::Ball),
        net: Net::Lossy {
            loss: 0.02,
            latency: Latency { lo: 50, hi: 550 },
        },
        period_ms: 31_000,
        seed: 11,
    };
    let a = format!("{:?}", sim::run(&f, &v, &cfg));
    let b = format!("{:?}", sim::run(&f, &v, &cfg));
    assert_eq!(a, b);
}

#[test]
fn losses_cost_sync_time() {
    let f = Function::thesis(Kind::Variance);
    let v = vectors(&f);
    let run = |loss: f64| {
        let cfg = Config {
            protocol: Protocol::Broadcast(Zone::Ball),
            net: Net::Lossy {
                loss,
                latency: Latency { lo: 50, hi: 550 },
            },
            period_ms: 31_000,
            seed: 3,
        };
        sim::run(&f, &v, &cfg)
    };
    let clean = run(0.0);
    let lossy = run(0.05);
    assert_eq!(clean.lost, 0);
    assert!(clean.crossings > 0);
    assert_eq!(clean.missed, 0);
    assert!(lossy.lost > 0);
    // without loss a node is out of sync only while an update is in flight (< 550 ms)
    assert!(clean.out_of_sync_mean_ms <= 550.0, "{clean:?}");
    assert!(
        lossy.out_of_sync_mean_ms > clean.out_of_sync_mean_ms,
        "{lossy:?}"
    );
}

#[test]
fn lossless_flooding_decides_exactly() {
    let f = Function::thesis(Kind::Variance);
    let v = vectors(&f);
    for protocol in [
        Protocol::EveryReading,
        Protocol::Broadcast(Zone::Ball),
        Protocol::Broadcast(Zone::Convex),
        Protocol::Predict(Zone::Band),
        Protocol::Coordinator(Zone::Convex),
    ] {
        let cfg = Config {
            protocol,
            net: Net::Flood {
                graph: Graph::grid(12, 4),
                loss: 0.0,
                latency: Latency { lo: 20, hi: 80 },
            },
            period_ms: 31_000,
            seed: 1,
        };
        let r = sim::run(&f, &v, &cfg);
        assert_eq!(
            (r.missed, r.wrong_epochs, r.mismatch_epochs),
            (0, 0, 0),
            "{r:?}"
        );
        if protocol == Protocol::EveryReading {
            // every reading is relayed by every node: n transmissions per reading
            assert_eq!(r.sent, r.readings * 12);
        }
    }
}

#[test]
fn repair_shortens_out_of_sync_spells() {
    let f = Function::thesis(Kind::Variance);
    let v = vectors(&f);
    let run = |protocol| {
        let cfg = Config {
            protocol,
            net: Net::Lossy {
                loss: 0.03,
                latency: Latency { lo: 50, hi: 550 },
            },
            period_ms: 31_000,
            seed: 8,
        };
        sim::run(&f, &v, &cfg)
    };
    for (plain, with_repair) in [
        (
            Protocol::Broadcast(Zone::Convex),
            Protocol::Repair(Zone::Convex),
        ),
        (
            Protocol::Predict(Zone::Convex),
            Protocol::PredictRepair(Zone::Convex),
        ),
        (
            Protocol::Predict(Zone::Band),
            Protocol::PredictRepair(Zone::Band),
        ),
    ] {
        let thesis = run(plain);
        let repaired = run(with_repair);
        assert!(
            repaired.out_of_sync_mean_ms < thesis.out_of_sync_mean_ms,
            "{repaired:?} {thesis:?}"
        );
        assert!(
            repaired.wrong_epochs <= thesis.wrong_epochs,
            "{repaired:?} {thesis:?}"
        );
    }
}
