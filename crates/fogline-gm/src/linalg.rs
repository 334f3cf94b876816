//! Small dense linear algebra for quadratics in a handful of dimensions: symmetric eigenvalues
//! (Jacobi), the minimum of a quadratic over a ball (the trust-region problem, bounded from below
//! through its dual so the answer is never optimistic) and over a box (every face enumerated).

// Matrix code reads best with the indices of the formulas it implements.
#![allow(clippy::needless_range_loop)]

/// A square matrix, row major.
pub type Mat = Vec<Vec<f64>>;

/// `x . y`
pub fn dot(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y).map(|(a, b)| a * b).sum()
}

/// `A x`
pub fn mul(a: &Mat, x: &[f64]) -> Vec<f64> {
    a.iter().map(|row| dot(row, x)).collect()
}

/// Eigenvalues and eigenvectors (as columns of the returned matrix) of a symmetric matrix, by
/// cyclic Jacobi rotations: exact enough in a few sweeps for the 1-3 dimensions used here.
pub fn sym_eigen(a: &Mat) -> (Vec<f64>, Mat) {
    let n = a.len();
    let mut m = a.clone();
    let mut v: Mat = (0..n)
        .map(|i| (0..n).map(|j| f64::from(u8::from(i == j))).collect())
        .collect();
    for _ in 0..64 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| m[i][j] * m[i][j])
            .sum();
        if off < 1e-30 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                if m[p][q] == 0.0 {
                    continue;
                }
                let theta = (m[q][q] - m[p][p]) / (2.0 * m[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (mkp, mkq) = (m[k][p], m[k][q]);
                    m[k][p] = c * mkp - s * mkq;
                    m[k][q] = s * mkp + c * mkq;
                }
                for k in 0..n {
                    let (mpk, mqk) = (m[p][k], m[q][k]);
                    m[p][k] = c * mpk - s * mqk;
                    m[q][k] = s * mpk + c * mqk;
                }
                for row in v.iter_mut() {
                    let (vp, vq) = (row[p], row[q]);
                    row[p] = c * vp - s * vq;
                    row[q] = s * vp + c * vq;
                }
            }
        }
    }
    ((0..n).map(|i| m[i][i]).collect(), v)
}

/// A lower bound on `min { z'Az + g'z : |z| <= r }`, given A's eigen-decomposition.
///
/// Weak duality gives, for every `mu >= 0` with `A + mu I` positive definite,
/// `min >= -sum h_i^2 / (4 (l_i + mu)) - mu r^2` (h = V'g); the bound is concave in `mu` and
/// tight at its maximum (the trust-region problem has no duality gap), which bisection on its
/// derivative finds. A bound, not a point value: a safe-zone check built on it can be
/// pessimistic by rounding, never optimistic.
pub fn ball_min(lambda: &[f64], vecs: &Mat, g: &[f64], r: f64) -> f64 {
    let n = lambda.len();
    let h: Vec<f64> = (0..n)
        .map(|i| (0..n).map(|k| vecs[k][i] * g[k]).sum())
        .collect();
    let dual = |mu: f64| -> f64 {
        let mut s = -mu * r * r;
        for i in 0..n {
            if h[i] != 0.0 {
                s -= h[i] * h[i] / (4.0 * (lambda[i] + mu));
            }
        }
        s
    };
    // derivative of the dual: |w(mu)|^2 - r^2
    let slope = |mu: f64| -> f64 {
        let mut s = -r * r;
        for i in 0..n {
            if h[i] != 0.0 {
                let d = 2.0 * (lambda[i] + mu);
                s += h[i] * h[i] / (d * d);
            }
        }
        s
    };
    let lmin = lambda.iter().cloned().fold(f64::INFINITY, f64::min);
    let lo = (-lmin).max(0.0);
    // Where some l_i + mu = 0 with h_i = 0 the dual stays finite at `lo` (the "hard case").
    let at_lo_finite = (0..n).all(|i| lambda[i] + lo > 0.0 || h[i] == 0.0);
    if at_lo_finite && slope(lo) <= 0.0 {
        return dual(lo);
    }
    let hn = h.iter().map(|x| x * x).sum::<f64>().sqrt();
    let mut a = lo;
    let mut b = lo + hn / (2.0 * r.max(f64::MIN_POSITIVE)) + 1.0;
    while slope(b) > 0.0 {
        b = lo + 2.0 * (b - lo);
    }
    for _ in 0..200 {
        let m = 0.5 * (a + b);
        if m <= a || m >= b {
            break;
        }
        if slope(m) > 0.0 {
            a = m;
        } else {
            b = m;
        }
    }
    // Both ends are valid multipliers (b > lo); take the better bound.
    let db = dual(b);
    if a > lo || at_lo_finite {
        db.max(dual(a))
    } else {
        db
    }
}

/// Solves `M x = y` by Gaussian elimination with partial pivoting; `None` if `M` is singular.
pub fn solve(mut m: Mat, mut y: Vec<f64>) -> Option<Vec<f64>> {
    let n = y.len();
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs()))?;
        if m[p][c].abs() < 1e-12 {
            return None;
        }
        m.swap(c, p);
        y.swap(c, p);
        for r in c + 1..n {
            let f = m[r][c] / m[c][c];
            for k in c..n {
                m[r][k] -= f * m[c][k];
            }
            y[r] -= f * y[c];
        }
    }
    let mut x = vec![0.0; n];
    for c in (0..n).rev() {
        let s: f64 = (c + 1..n).map(|k| m[c][k] * x[k]).sum();
        x[c] = (y[c] - s) / m[c][c];
    }
    Some(x)
}

/// `min { x'Ax + b'x : lo <= x <= hi }`, exactly up to rounding: the minimum of a quadratic over
/// a box lies at a stationary point of the quadratic restricted to some face, so every face
/// (each coordinate at its low end, its high end, or free) is tried. 3^d faces: for d <= 4.
pub fn box_min(a: &Mat, b: &[f64], lo: &[f64], hi: &[f64]) -> f64 {
    let d = b.len();
    let eval = |x: &[f64]| dot(x, &mul(a, x)) + dot(b, x);
    let mut best = f64::INFINITY;
    let faces = 3usize.pow(d as u32);
    for face in 0..faces {
        let mut x = vec![0.0; d];
        let mut free = Vec::new();
        let mut code = face;
        for i in 0..d {
            match code % 3 {
                0 => x[i] = lo[i],
                1 => x[i] = hi[i],
                _ => free.push(i),
            }
            code /= 3;
        }
        if !free.is_empty() {
            // grad_f = 2 A_ff x_f + 2 A_fF x_F + b_f = 0
            let m: Mat = free
                .iter()
                .map(|&i| free.iter().map(|&j| 2.0 * a[i][j]).collect())
                .collect();
            let y: Vec<f64> = free
                .iter()
                .map(|&i| {
                    let fixed: f64 = (0..d)
                        .filter(|j| !free.contains(j))
                        .map(|j| 2.0 * a[i][j] * x[j])
                        .sum();
                    -(b[i] + fixed)
                })
                .collect();
            // A singular face has its extremes on its boundary, which other faces cover.
            let Some(xf) = solve(m, y) else { continue };
            let inside = free
                .iter()
                .zip(&xf)
                .all(|(&i, &v)| v >= lo[i] && v <= hi[i]);
            if !inside {
                continue;
            }
            for (&i, &v) in free.iter().zip(&xf) {
                x[i] = v;
            }
        }
        best = best.min(eval(&x));
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eigen_of_a_swap_matrix() {
        let (l, v) = sym_eigen(&vec![vec![0.0, 1.0], vec![1.0, 0.0]]);
        let mut s = l.clone();
        s.sort_by(f64::total_cmp);
        assert!((s[0] + 1.0).abs() < 1e-12 && (s[1] - 1.0).abs() < 1e-12);
        for i in 0..2 {
            let col = [v[0][i], v[1][i]];
            let av = mul(&vec![vec![0.0, 1.0], vec![1.0, 0.0]], &col);
            assert!((av[0] - l[i] * col[0]).abs() < 1e-12);
        }
    }

    #[test]
    fn ball_min_of_a_concave_quadratic_is_on_the_rim() {
        // -z_x^2 over the unit ball: -1, at (+-1, 0); the hard case (g = 0).
        let (l, v) = sym_eigen(&vec![vec![-1.0, 0.0], vec![0.0, 0.0]]);
        let m = ball_min(&l, &v, &[0.0, 0.0], 1.0);
        assert!((m + 1.0).abs() < 1e-9, "{m}");
        // z_y over a ball of radius 2: -2.
        let m = ball_min(&l, &v, &[0.0, 1.0], 2.0);
        let brute = (0..100_000)
            .map(|k| {
                let t = k as f64 / 100_000.0 * std::f64::consts::TAU;
                let (x, y) = (2.0 * t.cos(), 2.0 * t.sin());
                -x * x + y
            })
            .fold(f64::INFINITY, f64::min);
        assert!(m <= brute + 1e-9 && m > brute - 1e-6, "{m} {brute}");
    }

    #[test]
    fn box_min_finds_a_corner_and_an_interior_point() {
        let a = vec![vec![1.0, 0.0], vec![0.0, 1.0]];
        assert!((box_min(&a, &[0.0, 0.0], &[-1.0, -1.0], &[1.0, 1.0])).abs() < 1e-12);
        let a = vec![vec![0.0, 0.5], vec![0.5, 0.0]];
        assert!((box_min(&a, &[0.0, 0.0], &[-1.0, -1.0], &[1.0, 1.0]) + 1.0).abs() < 1e-12);
    }
}
