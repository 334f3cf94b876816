//! What the harness tests share: a one-system scenario, and options that start no real peer.

use std::path::Path;

use fogline_bench::cell::CellSpec;
use fogline_bench::driver::Durability;
use fogline_bench::harness::HarnessOptions;
use fogline_bench::peers::PeerEnv;
use fogline_bench::scenario::Scenario;
use fogline_bench::System;

/// A volatile scenario of `cells` for `system` alone.
pub fn scenario(name: &str, cells: Vec<CellSpec>, repetitions: u32, system: System) -> Scenario {
    Scenario {
        name: name.into(),
        source: "test",
        cells,
        repetitions,
        durability: Durability::Volatile,
        systems: vec![system],
    }
}

/// Runs `system` alone, unpinned, without a progress bar, checkpoint or noise limit; peers
/// would start from `dir/no-scripts`, which does not exist.
pub fn options(dir: &Path, system: System) -> HarnessOptions {
    HarnessOptions {
        systems: vec![system],
        peers: PeerEnv {
            scripts: dir.join("no-scripts"),
            work_dir: dir.join("work"),
            server_core: None,
            fogline_exe: None,
        },
        command: "test".into(),
        placement: None,
        progress: false,
        resume: None,
        checkpoint: None,
        build: Default::default(),
        quiet: None,
    }
}
