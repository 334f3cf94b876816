//! Runs one engine over one input, single-threaded, and measures it.
//!
//! Timing: the engine is built once (`build_ms`), then the whole input is scanned `reps` times
//! and the fastest pass is kept (`seconds`), the usual way to damp noise from a shared machine.
//! `gbps` is input bytes / seconds / 1e9. [`run_cell`] times several engines on one input with
//! their passes interleaved (engine A, B, C, A, B, C, ...), so that load from other processes
//! on a shared machine falls on all of them alike and the ratios stay meaningful.

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

/// Builds every engine of `kinds` and scans `input` with each, `reps` rounds of one pass per
/// engine; each engine keeps its fastest pass.
///
/// # Errors
///
/// As [`run_engine`].
pub fn run_cell(
    kinds: &[EngineKind],
    set: &str,
    patterns: &[PatternLine],
    input: &Input,
    mode: Mode,
    reps: usize,
) -> Result<Vec<Row>, Error> {
    let largest = match mode {
        Mode::Whole => input.data.len(),
        Mode::PerPacket => input.lens.iter().copied().max().unwrap_or(0),
    };
    if largest >= u32::MAX as usize {
        return Err(Error::Build {
            engine: "all",
            message: format!("a buffer of {largest} bytes is too large to scan in one call"),
        });
    }
    let mut engines = Vec::with_capacity(kinds.len());
    for &kind in kinds {
        let t0 = Instant::now();
        let engine = build_engine(kind, patterns)?;
        engines.push((
            engine,
            t0.elapsed().as_secs_f64() * 1e3,
            f64::INFINITY,
            0u64,
        ));
    }
    for _ in 0..reps.max(1) {
        for (engine, _, best, matches) in engines.iter_mut() {
            let t = Instant::now();
            *matches = match mode {
                Mode::Whole => engine.count(&input.data),
                Mode::PerPacket => input.packets().map(|p| engine.count(p)).sum(),
            };
            *best = best.min(t.elapsed().as_secs_f64());
        }
    }
    let packets = match mode {
        Mode::Whole => 1,
        Mode::PerPacket => input.lens.len(),
    };
    Ok(engines
        .into_iter()
        .map(|(engine, build_ms, best, matches)| Row {
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
        .collect())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_counts_the_same_matches_per_packet_and_whole() {
        let patterns = vec![
            PatternLine {
                id: 1,
                bytes: b"GET".to_vec(),
                nocase: false,
            },
            PatternLine {
                id: 2,
                bytes: b"host".to_vec(),
                nocase: true,
            },
            PatternLine {
                id: 3,
                bytes: b"\0\0".to_vec(),
                nocase: false,
            },
        ];
        let data = b"GET / HTTP/1.1\r\nHost: x\r\n\0\0\0GET".to_vec();
        let input = Input {
            name: "t".into(),
            lens: vec![20, data.len() - 20],
            data,
        };
        // Per packet the last GET is in the second packet; the split at 20 cuts nothing.
        for (mode, want) in [(Mode::PerPacket, 5), (Mode::Whole, 5)] {
            let rows = run_cell(&EngineKind::all(), "t", &patterns, &input, mode, 2).unwrap();
            assert_eq!(rows.len(), EngineKind::all().len());
            for r in &rows {
                assert_eq!(r.matches, want, "{} {mode:?}", r.engine);
            }
            let one = run_engine(EngineKind::Fogline, "t", &patterns, &input, mode, 1).unwrap();
            assert_eq!(one.matches, want);
        }
        let counts = per_pattern(EngineKind::Fogline, &patterns, &input).unwrap();
        assert_eq!(counts, vec![(1, 2), (2, 1), (3, 2)]);
    }
}
