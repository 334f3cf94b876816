//! A fully synthetic lab, for tests and for runs that must not depend on any file.
//!
//! `temperature_i(h) = base(h) + o_i + w(h) d_i + AR(1) noise`, with `h` the hour of day:
//! - `base`: 18.5 C at night, warming by 4 C over working hours (HVAC and people);
//! - `o_i ~ N(0, 0.5^2)`: per-mote offsets (sample variance 0.25 exactly);
//! - `d_i`: per-mote working-hours deviations (sample variance 2.6 exactly), switched on by a
//!   smooth bump `w(h)` (0 before 08:00, 1 from 10:00 to 16:00, 0 after 18:00), so that the
//!   variance across motes rises from about 0.3 to about 2.9 C^2 and crosses 2 twice a day;
//! - noise: AR(1), coefficient 0.95, stationary deviation 0.05 C, rounded to 0.01 C;
//! - gaps: each reading is missing with probability 2 %, and each mote has one 20-epoch outage
//!   a day.
//!
//! Humidity: `40 - 1.5 (t - 20)` %RH plus a per-mote offset (sd 2) and AR(1) noise (sd 0.2).

use super::{Trace, EPOCH_MS};
use crate::rng::Rng;

fn bump(h: f64) -> f64 {
    let smooth = |x: f64| {
        let x = x.clamp(0.0, 1.0);
        x * x * (3.0 - 2.0 * x)
    };
    smooth((h - 8.0) / 2.0) * (1.0 - smooth((h - 16.0) / 2.0))
}

fn normalised(rng: &mut Rng, n: usize, var: f64) -> Vec<f64> {
    let xs: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
    let m = xs.iter().sum::<f64>() / n as f64;
    let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n as f64;
    let k = if v > 0.0 { (var / v).sqrt() } else { 0.0 };
    xs.iter().map(|x| (x - m) * k).collect()
}

/// `n` motes (ids `first_id..`) over `epochs` 31-second epochs from midnight.
pub fn parametric(n: usize, first_id: u32, epochs: usize, seed: u64) -> Trace {
    let mut rng = Rng::new(seed);
    let offsets = normalised(&mut rng, n, 0.25);
    let deviations = normalised(&mut rng, n, 2.6);
    let hum_offsets = normalised(&mut rng, n, 4.0);
    let per_day = (86_400_000 / EPOCH_MS) as usize;
    let outages: Vec<usize> = (0..n).map(|_| rng.next_u64() as usize % per_day).collect();
    let mut temperature = vec![Vec::with_capacity(n); epochs];
    let mut humidity = vec![Vec::with_capacity(n); epochs];
    for i in 0..n {
        let mut node = rng.fork(i as u64);
        let (mut nt, mut nh) = (0.0, 0.0);
        let a = (1.0f64 - 0.95 * 0.95).sqrt();
        for k in 0..epochs {
            let h = (k as u64 * EPOCH_MS) as f64 / 3_600_000.0 % 24.0;
            nt = 0.95 * nt + 0.05 * a * node.normal();
            nh = 0.95 * nh + 0.2 * a * node.normal();
            let t = 18.5 + 4.0 * bump(h) + offsets[i] + bump(h) * deviations[i] + nt;
            let hu = 40.0 - 1.5 * (t - 20.0) + hum_offsets[i] + nh;
            let in_outage = (k % per_day).wrapping_sub(outages[i]) < 20;
            let missing = in_outage || node.chance(0.02);
            let round = |x: f64| (x * 100.0).round() / 100.0;
            temperature[k].push((!missing).then(|| round(t)));
            humidity[k].push((!missing).then(|| round(hu)));
        }
    }
    Trace {
        motes: (0..n as u32).map(|i| first_id + i).collect(),
        temperature,
        humidity,
    }
}
