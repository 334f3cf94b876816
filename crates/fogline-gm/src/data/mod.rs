//! Traces of readings in the Intel Lab `data.txt` schema
//! (`date time epoch moteid temperature humidity light voltage`).
//!
//! - [`upsample`]: the half-hourly extract in `shared/data/intel-lab`, interpolated to 31 s
//!   epochs with a stated noise model.
//! - [`parametric`]: a fully synthetic lab (daily cycle, per-mote offsets, a working-hours
//!   spread that crosses a variance of 2 C^2, gaps).
//! - [`datatxt`]: write a trace as `data.txt`, and load the real file if it is ever supplied.

pub mod datatxt;
pub mod parametric;
pub mod upsample;

use crate::function::Function;

/// The Intel Lab epoch: a reading about every 31 seconds.
pub const EPOCH_MS: u64 = 31_000;

/// Readings of `motes` over `epochs` epochs; a missing reading is `None`.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// mote ids, in node order
    pub motes: Vec<u32>,
    /// `temperature[epoch][node]`, C
    pub temperature: Vec<Vec<Option<f64>>>,
    /// `humidity[epoch][node]`, %RH
    pub humidity: Vec<Vec<Option<f64>>>,
}

impl Trace {
    /// Number of epochs.
    pub fn epochs(&self) -> usize {
        self.temperature.len()
    }

    /// The first `epochs` epochs.
    pub fn truncate(&mut self, epochs: usize) {
        self.temperature.truncate(epochs);
        self.humidity.truncate(epochs);
    }

    /// Local vectors `[epoch][node]` for `f`. A node that misses a reading keeps its last one
    /// (a sensor node has nothing newer); before its first reading it takes the first one it
    /// will have (0 if it never reports).
    pub fn vectors(&self, f: &Function) -> Vec<Vec<Vec<i64>>> {
        let n = self.motes.len();
        let first = |rows: &[Vec<Option<f64>>], ch: usize, i: usize| {
            rows.iter().find_map(|r| r[i]).unwrap_or(f.centre[ch])
        };
        let mut last_t: Vec<f64> = (0..n).map(|i| first(&self.temperature, 0, i)).collect();
        let mut last_h: Vec<f64> = (0..n).map(|i| first(&self.humidity, 1, i)).collect();
        (0..self.epochs())
            .map(|k| {
                (0..n)
                    .map(|i| {
                        if let Some(t) = self.temperature[k][i] {
                            last_t[i] = t;
                        }
                        if let Some(h) = self.humidity[k][i] {
                            last_h[i] = h;
                        }
                        f.lift([f.quantise(0, last_t[i]), f.quantise(1, last_h[i])])
                    })
                    .collect()
            })
            .collect()
    }
}
