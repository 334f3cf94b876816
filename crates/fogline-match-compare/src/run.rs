//! Runs one engine over one input, single-threaded, and measures it.
//!
//! Timing: the engine is built once (`build_ms`), then the whole input is scanned `reps` times
//! and the fastest pass is kept (`seconds`), the usual way to damp noise from a shared machine.
//! `gbps` is input bytes / seconds / 1e9.

use std::time::Instant;

use serde::Serialize;

use crate::{build_engine, EngineKind, Error, Input, PatternLine};

/// How an input is scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// One scan per packet; matches never span packets.
    PerPacket,
    /// One scan of all the bytes as a single buffer.
    Whole,
}

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Engine name.
    pub engine: &'static str,
    /// Pattern set name.
    pub set: String,
    /// Number of patterns.
    pub patterns: usize,
    /// Input name.
    pub input: String,
    /// Scan mode.
    pub mode: Mode,
    /// Number of scans per pass.
    pub packets: usize,
    /// Bytes per pass.
    pub bytes: usize,
    /// Matches per pass.
    pub matches: u64,
    /// Build time, milliseconds.
    pub build_ms: f64,
    /// Fastest pass, seconds.
    pub seconds: f64,
    /// Throughput of the fastest pass, GB/s (1e9 bytes).
    pub gbps: f64,
    /// Heap bytes of the compiled set, as the engine reports them.
    pub heap_bytes: usize,
}

/// Builds `kind` for `patterns` and scans `input` `reps` times (at least once).
///
/// # Errors
///
/// When the engine cannot be built, or a buffer is 4 GiB or more (Hyperscan's block-mode
/// limit, applied to all engines alike).
pub fn run_engine(
    kind: EngineKind,
    set: &str,
    patterns: &[PatternLine],
    input: &Input,
    mode: Mode,
    reps: usize,
) -> Result<Row, Error> {
    let largest = match mode {
        Mode::Whole => input.data.len(),
        Mode::PerPacket => input.lens.iter().copied().max().unwrap_or(0),
    };
    if largest >= u32::MAX as usize {
        return Err(Error::Build {
            engine: kind.name(),
            message: format!("a buffer of {largest} bytes is too large to scan in one call"),
        });
    }
    let t0 = Instant::now();
    let mut engine = build_engine(kind, patterns)?;
    let build_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut best = f64::INFINITY;
    let mut matches = 0u64;
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        matches = match mode {
            Mode::Whole => engine.count(&input.data),
            Mode::PerPacket => input.packets().map(|p| engine.count(p)).sum(),
        };
        best = best.min(t.elapsed().as_secs_f64());
    }
    let packets = match mode {
        Mode::Whole => 1,
        Mode::PerPacket => input.lens.len(),
    };
    Ok(Row {
        engine: engine.name(),
        set: set.to_string(),
        patterns: patterns.len(),
        input: input.name.clone(),
        mode,
        packets,
        bytes: input.data.len(),
        matches,
        build_ms,
        seconds: best,
        gbps: input.data.len() as f64 / best / 1e9,
        heap_bytes: engine.heap_bytes(),
    })
}

/// Per-pattern match counts of `kind` over `input` scanned packet by packet, sorted by id.
///
/// # Errors
///
/// When the engine cannot be built.
pub fn per_pattern(
    kind: EngineKind,
    patterns: &[PatternLine],
    input: &Input,
) -> Result<Vec<(u32, u64)>, Error> {
    let mut engine = build_engine(kind, patterns)?;
    let mut counts = std::collections::BTreeMap::new();
    for p in input.packets() {
        engine.for_each(p, &mut |id, _| *counts.entry(id).or_insert(0u64) += 1);
    }
    Ok(counts.into_iter().collect())
}
