//! The exact centralised oracle: at every epoch, which side of `T` is `f(v)` on, computed from
//! every node's true local vector with integer sums ([`Function::side_of_sum`]).

use crate::function::{Function, Side};

/// The sum of the local vectors of one epoch.
pub fn epoch_sum(f: &Function, vectors: &[Vec<i64>]) -> Vec<i128> {
    let mut sum = vec![0i128; f.dim()];
    for v in vectors {
        for (s, x) in sum.iter_mut().zip(v) {
            *s += *x as i128;
        }
    }
    sum
}

/// The side at every epoch; `vectors[epoch][node]`.
pub fn sides(f: &Function, vectors: &[Vec<Vec<i64>>]) -> Vec<Side> {
    vectors
        .iter()
        .map(|ep| f.side_of_sum(&epoch_sum(f, ep), ep.len()))
        .collect()
}

/// `f(v)` in physical units at every epoch (for plots and reports).
pub fn values(f: &Function, vectors: &[Vec<Vec<i64>>]) -> Vec<f64> {
    vectors
        .iter()
        .map(|ep| f.physical(&epoch_sum(f, ep), ep.len()))
        .collect()
}

/// The epochs at which the side changes (a true threshold crossing).
pub fn crossings(sides: &[Side]) -> Vec<usize> {
    (1..sides.len())
        .filter(|&k| sides[k] != sides[k - 1])
        .collect()
}
