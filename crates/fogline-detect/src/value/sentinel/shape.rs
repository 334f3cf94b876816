//! Shape novelty at one time scale.
//!
//! Points are averaged in blocks of `scale`; the last `dim` block means form a
//! vector. Its nonconformity is the L1 distance to the nearest of the last `mem`
//! stored vectors, leaving out the `dim` most recent ones (they overlap it).
//! State: a ring of `mem * dim` numbers plus `dim` recent means, fixed at
//! construction. Cost per block: `mem * dim` subtractions at most (the search
//! stops summing a candidate once it is worse than the best so far).

/// Shape memory at one scale.
#[derive(Debug, Clone)]
pub struct Shape {
    scale: usize,
    dim: usize,
    mem: usize,
    block_sum: f64,
    block_len: usize,
    recent: Vec<f64>,
    filled: usize,
    ring: Vec<f64>,
    stored: usize,
    head: usize,
}

impl Shape {
    /// `scale`: points per block; `dim`: blocks per vector; `mem`: vectors kept.
    pub fn new(scale: usize, dim: usize, mem: usize) -> Shape {
        let dim = dim.max(1);
        let mem = mem.max(dim + 1);
        Shape {
            scale: scale.max(1),
            dim,
            mem,
            block_sum: 0.0,
            block_len: 0,
            recent: vec![0.0; dim],
            filled: 0,
            ring: vec![0.0; mem * dim],
            stored: 0,
            head: 0,
        }
    }

    /// Points per block.
    pub fn scale(&self) -> usize {
        self.scale
    }

    /// Adds a point; when it completes a block and a full vector with at least
    /// one comparable stored vector, returns the nearest-neighbour distance.
    pub fn push(&mut self, x: f64) -> Option<f64> {
        self.block_sum += x;
        self.block_len += 1;
        if self.block_len < self.scale {
            return None;
        }
        let mean = self.block_sum / self.block_len as f64;
        self.block_sum = 0.0;
        self.block_len = 0;
        self.recent.rotate_left(1);
        self.recent[self.dim - 1] = mean;
        self.filled += 1;
        if self.filled < self.dim {
            return None;
        }
        let comparable = self.stored.saturating_sub(self.dim);
        let mut best = f64::INFINITY;
        // The oldest `comparable` vectors: ring slots head - stored .. head - dim.
        for k in 0..comparable {
            let slot = (self.head + self.mem - self.stored + k) % self.mem;
            let v = &self.ring[slot * self.dim..(slot + 1) * self.dim];
            let mut d = 0.0;
            for (a, b) in v.iter().zip(&self.recent) {
                d += (a - b).abs();
                if d >= best {
                    break;
                }
            }
            if d < best {
                best = d;
            }
        }
        let slot = self.head;
        self.ring[slot * self.dim..(slot + 1) * self.dim].copy_from_slice(&self.recent);
        self.head = (self.head + 1) % self.mem;
        self.stored = (self.stored + 1).min(self.mem);
        best.is_finite().then_some(best)
    }

    /// Bytes of state.
    pub fn state_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + 8 * (self.ring.capacity() + self.recent.capacity())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_shape_has_distance_zero_and_a_new_one_does_not() {
        let mut s = Shape::new(2, 3, 64);
        let pattern = [0.0, 0.0, 1.0, 1.0, 5.0, 5.0, 2.0, 2.0];
        let mut last = None;
        for i in 0..200 {
            if let Some(d) = s.push(pattern[i % pattern.len()]) {
                last = Some(d);
            }
        }
        assert_eq!(last, Some(0.0));
        s.push(9.0);
        // [5, 2, 9] against the cycle's triples: nearest is [5, 2, 0].
        assert_eq!(s.push(9.0), Some(9.0));
    }

    #[test]
    fn nearest_ignores_overlapping_recent_vectors() {
        let mut s = Shape::new(1, 2, 16);
        // Two vectors only: nothing comparable yet.
        assert_eq!(s.push(1.0), None);
        assert_eq!(s.push(2.0), None);
        assert_eq!(s.push(3.0), None);
        // [3, 4]: the two stored vectors overlap it.
        assert_eq!(s.push(4.0), None);
        // [4, 5] against [1, 2].
        assert_eq!(s.push(5.0), Some(6.0));
    }
}
