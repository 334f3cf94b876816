//! Monitored functions: quadratics of the global vector `v = (1/N) sum v_i` (thesis eq. 3.1,
//! equal weights), where each node's local vector `v_i` is lifted from its quantised readings.
//!
//! Readings are integers (quanta of `resolution`, offset by `centre`), so local vectors are
//! integer vectors and the sum of any set of them is exact. `f(x) = x'Ax + b'x`, and `2A`, `2b`
//! and `2T` are integers, which lets [`Function::side_of_sum`] decide `f(S/N) > T` exactly in
//! `i128`: the centralised oracle and every node's decision use it, so no crossing can hinge on
//! floating-point rounding. Geometry (safe zones) is done in `f64` with a safety margin.

use serde::{Deserialize, Serialize};

use crate::linalg::{self, Mat};

/// Which side of the threshold a value is on: `Above` is `f > T`, `Below` is `f <= T`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Side {
    /// `f <= T`
    Below,
    /// `f > T`
    Above,
}

/// The functions fogline monitors. Channel 0 is temperature, channel 1 humidity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Kind {
    /// Mean temperature; `v_i = (t)`; linear (thesis: T = 20 C).
    Average,
    /// Variance of temperature across nodes; `v_i = (t, t^2)`, `f = y - x^2` (thesis: T = 2).
    Variance,
    /// Covariance of temperature and humidity across nodes; `v_i = (t, h, t h)`,
    /// `f = z - x y`: an indefinite quadratic form (the inner product `x y` of two averages).
    Covariance,
}

impl Kind {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Average => "average",
            Kind::Variance => "variance",
            Kind::Covariance => "covariance",
        }
    }

    /// The thesis' threshold (section 3.4): 20 C for the average, 2 C^2 for the variance;
    /// 2 C %RH for the covariance, which the thesis does not monitor.
    pub fn thesis_threshold(self) -> f64 {
        match self {
            Kind::Average => 20.0,
            Kind::Variance | Kind::Covariance => 2.0,
        }
    }

    /// Parses [`Kind::name`].
    pub fn parse(s: &str) -> Option<Kind> {
        [Kind::Average, Kind::Variance, Kind::Covariance]
            .into_iter()
            .find(|k| k.name() == s)
    }
}

/// A monitored function with its threshold, in quantised units.
#[derive(Debug, Clone)]
pub struct Function {
    /// Which function.
    pub kind: Kind,
    /// Reading = `centre + resolution * q` per channel (temperature, humidity).
    pub centre: [f64; 2],
    /// The quantum of a reading (0.01: data.txt has two significant decimals of accuracy).
    pub resolution: f64,
    /// `2 T` in quantised units (an integer so that the side is decided exactly).
    pub t2: i128,
    a2: Vec<Vec<i64>>,
    b2: Vec<i64>,
    /// `A` and `b` in `f64`, and `A`'s eigen-decomposition, for the geometry.
    pub a: Mat,
    /// linear part
    pub b: Vec<f64>,
    /// eigenvalues of `A`
    pub lambda: Vec<f64>,
    /// eigenvectors of `A` (columns)
    pub vecs: Mat,
    /// The physical unit of each coordinate of a local vector (C, C^2, ...): safe zones are
    /// built in physical units, since the ball is not invariant under rescaling an axis.
    pub units: Vec<f64>,
    /// The physical unit of `f` (`f` is homogeneous in these units).
    pub f_unit: f64,
}

impl Function {
    /// A function with threshold `threshold` in physical units (C, C^2, C %RH).
    ///
    /// The readings are centred at `centre` before lifting: the ball check is not translation
    /// invariant (geometric-monitoring.md), and the thesis does not say what it did; average
    /// and variance keep their meaning under centring (average is shifted by the centre).
    ///
    /// # Errors
    /// When the threshold is not a whole number of quanta in the function's units.
    pub fn new(
        kind: Kind,
        threshold: f64,
        centre: [f64; 2],
        resolution: f64,
    ) -> Result<Function, String> {
        let (a2, b2, t_q): (Vec<Vec<i64>>, Vec<i64>, f64) = match kind {
            Kind::Average => (vec![vec![0]], vec![2], (threshold - centre[0]) / resolution),
            Kind::Variance => (
                vec![vec![-2, 0], vec![0, 0]],
                vec![0, 2],
                threshold / (resolution * resolution),
            ),
            Kind::Covariance => (
                vec![vec![0, -1, 0], vec![-1, 0, 0], vec![0, 0, 0]],
                vec![0, 0, 2],
                threshold / (resolution * resolution),
            ),
        };
        let t2f = 2.0 * t_q;
        if (t2f - t2f.round()).abs() > 1e-6 {
            return Err(format!(
                "threshold {threshold} is not a whole number of half-quanta for {}",
                kind.name()
            ));
        }
        let a: Mat = a2
            .iter()
            .map(|r| r.iter().map(|&x| x as f64 / 2.0).collect())
            .collect();
        let (lambda, vecs) = linalg::sym_eigen(&a);
        let r = resolution;
        let (units, f_unit) = match kind {
            Kind::Average => (vec![r], r),
            Kind::Variance => (vec![r, r * r], r * r),
            Kind::Covariance => (vec![r, r, r * r], r * r),
        };
        Ok(Function {
            units,
            f_unit,
            kind,
            centre,
            resolution,
            t2: t2f.round() as i128,
            b: b2.iter().map(|&x| x as f64 / 2.0).collect(),
            a2,
            b2,
            a,
            lambda,
            vecs,
        })
    }

    /// The thesis' settings: average above 20 C, variance above 2 C^2, centred at 20 C, and a
    /// covariance threshold of 2 C %RH centred at (20 C, 35 %RH).
    pub fn thesis(kind: Kind) -> Function {
        Function::new(kind, kind.thesis_threshold(), [20.0, 35.0], 0.01)
            .expect("the thesis thresholds are exact")
    }

    /// The dimension of the local vectors.
    pub fn dim(&self) -> usize {
        self.b2.len()
    }

    /// `T` in quantised units.
    pub fn threshold(&self) -> f64 {
        self.t2 as f64 / 2.0
    }

    /// A point in quantised units, in physical units.
    pub fn to_physical(&self, x: &[f64]) -> Vec<f64> {
        x.iter().zip(&self.units).map(|(a, u)| a * u).collect()
    }

    /// Quantises one physical reading of `channel`.
    pub fn quantise(&self, channel: usize, x: f64) -> i64 {
        ((x - self.centre[channel]) / self.resolution).round() as i64
    }

    /// The local vector of one node from its quantised (temperature, humidity).
    pub fn lift(&self, q: [i64; 2]) -> Vec<i64> {
        match self.kind {
            Kind::Average => vec![q[0]],
            Kind::Variance => vec![q[0], q[0] * q[0]],
            Kind::Covariance => vec![q[0], q[1], q[0] * q[1]],
        }
    }

    /// The quantised (temperature, humidity) a local vector was lifted from (humidity 0 when
    /// the function does not use it).
    pub fn reading(&self, v: &[i64]) -> [i64; 2] {
        match self.kind {
            Kind::Covariance => [v[0], v[1]],
            Kind::Average | Kind::Variance => [v[0], 0],
        }
    }

    /// Exactly which side `f(S / n)` is on, for an integer sum `S` of `n` local vectors:
    /// `2 f(S/n) n^2 = S'(2A)S + n (2b)'S`, compared with `2 T n^2`.
    pub fn side_of_sum(&self, sum: &[i128], n: usize) -> Side {
        let n = n as i128;
        let d = self.dim();
        let mut quad = 0i128;
        for i in 0..d {
            for j in 0..d {
                quad += sum[i] * self.a2[i][j] as i128 * sum[j];
            }
        }
        let lin: i128 = (0..d).map(|i| self.b2[i] as i128 * sum[i]).sum();
        if quad + n * lin > self.t2 * n * n {
            Side::Above
        } else {
            Side::Below
        }
    }

    /// `f(x)` in quantised units.
    pub fn eval(&self, x: &[f64]) -> f64 {
        linalg::dot(x, &linalg::mul(&self.a, x)) + linalg::dot(&self.b, x)
    }

    /// `|x'Ax| + |b'x|`: the size of the terms `f(x)` is summed from, for rounding margins.
    pub fn scale(&self, x: &[f64]) -> f64 {
        linalg::dot(x, &linalg::mul(&self.a, x)).abs() + linalg::dot(&self.b, x).abs()
    }

    /// `grad f(x) = 2Ax + b`
    pub fn grad(&self, x: &[f64]) -> Vec<f64> {
        linalg::mul(&self.a, x)
            .iter()
            .zip(&self.b)
            .map(|(ax, b)| 2.0 * ax + b)
            .collect()
    }

    /// `f(S/n)` in physical units (C, C^2, C %RH), for reports.
    pub fn physical(&self, sum: &[i128], n: usize) -> f64 {
        let x: Vec<f64> = sum.iter().map(|&s| s as f64 / n as f64).collect();
        let v = self.eval(&x);
        match self.kind {
            Kind::Average => self.centre[0] + self.resolution * v,
            _ => v * self.resolution * self.resolution,
        }
    }

    /// The slack that every geometric comparison keeps from the threshold, so that rounding in
    /// `f64` can only make a check pessimistic.
    pub fn margin(&self, scale: f64) -> f64 {
        1e-9 * (self.f_unit + (self.threshold() * self.f_unit).abs() + scale.abs())
    }
}

/// The mean of an integer sum, as the `f64` point the geometry works on.
pub fn mean(sum: &[i128], n: usize) -> Vec<f64> {
    sum.iter().map(|&s| s as f64 / n as f64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variance_side_is_exact() {
        let f = Function::thesis(Kind::Variance);
        // readings 20 +- 1.41 C: variance 1.9881 <= 2; 20 +- 1.42: 2.0164 > 2
        for (d, side) in [(141, Side::Below), (142, Side::Above)] {
            let vs = [f.lift([d, 0]), f.lift([-d, 0])];
            let sum: Vec<i128> = (0..2)
                .map(|k| vs.iter().map(|v| v[k] as i128).sum())
                .collect();
            assert_eq!(f.side_of_sum(&sum, 2), side);
        }
        // exactly on the threshold counts as below: +-sqrt(2) is not a reading, but T = 1.0
        let f = Function::new(Kind::Variance, 1.0, [20.0, 0.0], 0.01).unwrap();
        let vs = [f.lift([100, 0]), f.lift([-100, 0])];
        let sum: Vec<i128> = (0..2)
            .map(|k| vs.iter().map(|v| v[k] as i128).sum())
            .collect();
        assert_eq!(f.side_of_sum(&sum, 2), Side::Below);
    }

    #[test]
    fn average_and_covariance_agree_with_float_evaluation() {
        let f = Function::thesis(Kind::Covariance);
        let qs = [[150, 300], [-100, -200], [30, 10]];
        let vs: Vec<Vec<i64>> = qs.iter().map(|&q| f.lift(q)).collect();
        let sum: Vec<i128> = (0..3)
            .map(|k| vs.iter().map(|v| v[k] as i128).sum())
            .collect();
        let x = mean(&sum, 3);
        let mt = (150.0 - 100.0 + 30.0) / 3.0;
        let mh = (300.0 - 200.0 + 10.0) / 3.0;
        let cov = (150.0 * 300.0 + 100.0 * 200.0 + 300.0) / 3.0 - mt * mh;
        assert!((f.eval(&x) - cov).abs() < 1e-6);
        let avg = Function::thesis(Kind::Average);
        assert_eq!(avg.side_of_sum(&[1], 1), Side::Above);
        assert_eq!(avg.side_of_sum(&[0], 1), Side::Below);
        assert!(Function::new(Kind::Average, 20.003, [20.0, 0.0], 0.01).is_err());
    }
}
