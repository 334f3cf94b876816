//! Boxes and circles of one attribute on a grid over latitude/longitude with cells at
//! several resolutions. Each shape sits at the finest level where its bounding box covers
//! at most [`MAX_CELLS`] cells; a point looks up its one cell per occupied level (at most
//! `LEVELS` lookups) and checks the shapes found there exactly.

use super::FastMap;
use crate::model::{GeoPoint, Predicate};

/// Mean earth radius (IUGG), metres.
pub(crate) const EARTH_RADIUS_M: f64 = 6_371_008.8;
const LEVELS: usize = 21;
// Few cells per shape: each is a copy to store and a lookup that may find it.
const MAX_CELLS: usize = 4;

/// A shape a point may fall in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Shape {
    Box { s: f64, w: f64, n: f64, e: f64 },
    Near { lat: f64, lon: f64, radius_m: f64 },
}

impl Shape {
    pub(crate) fn of(p: &Predicate) -> Option<Shape> {
        match *p {
            Predicate::GeoBox {
                south_west: sw,
                north_east: ne,
            } => Some(Shape::Box {
                s: sw.lat,
                w: sw.lon,
                n: ne.lat,
                e: ne.lon,
            }),
            Predicate::Near { center, radius_m } => Some(Shape::Near {
                lat: center.lat,
                lon: center.lon,
                radius_m,
            }),
            _ => None,
        }
    }

    /// The exact check, by the crate's reference semantics.
    pub(crate) fn contains(&self, p: GeoPoint) -> bool {
        match *self {
            Shape::Box { s, w, n, e } => {
                crate::box_contains(GeoPoint { lat: s, lon: w }, GeoPoint { lat: n, lon: e }, p)
            }
            Shape::Near { lat, lon, radius_m } => GeoPoint { lat, lon }.distance_m(p) <= radius_m,
        }
    }

    /// Bounding pieces `(s, w, n, e)` with `w <= e` inside the earth's ranges, covering
    /// every point the shape contains. `Err(())`: no safe box (checked against every point);
    /// `Ok(empty)`: contains no point.
    pub(crate) fn pieces(&self) -> Result<Vec<[f64; 4]>, ()> {
        let mut out = Vec::new();
        match *self {
            Shape::Box { s, w, n, e } => {
                if [s, w, n, e].iter().any(|c| c.is_nan()) {
                    return Ok(out);
                }
                let (s, n) = (s.max(-90.0), n.min(90.0));
                let lons = if w > e {
                    vec![(w, 180.0), (-180.0, e)]
                } else {
                    vec![(w, e)]
                };
                for (w, e) in lons {
                    let (w, e) = (w.max(-180.0), e.min(180.0));
                    if s <= n && w <= e {
                        out.push([s, w, n, e]);
                        // -180 and 180 are one meridian: a point on it is on either edge.
                        if e >= 180.0 {
                            out.push([s, -180.0, n, -180.0]);
                        }
                        if w <= -180.0 {
                            out.push([s, 180.0, n, 180.0]);
                        }
                    }
                }
                // A pole is one point at every longitude: a box reaching it holds it.
                if s <= n && !out.is_empty() {
                    if n >= 90.0 {
                        out.push([90.0, -180.0, 90.0, 180.0]);
                    }
                    if s <= -90.0 {
                        out.push([-90.0, -180.0, -90.0, 180.0]);
                    }
                }
            }
            Shape::Near { lat, lon, radius_m } => {
                if radius_m.is_nan() || radius_m < 0.0 {
                    return Ok(out); // no distance is at most that
                }
                if !lon.is_finite() || lat.is_nan() {
                    return Err(());
                }
                if !(-90.0..=90.0).contains(&lat) {
                    return Err(());
                }
                // Widened a little so rounding in the exact check never falls outside.
                let r = (radius_m / EARTH_RADIUS_M) * (1.0 + 1e-9) + 1e-12;
                let rd = r.to_degrees() + 1e-9;
                let lon = (lon + 180.0).rem_euclid(360.0) - 180.0;
                let (s, n) = (lat - rd, lat + rd);
                if r >= std::f64::consts::PI || s <= -90.0 || n >= 90.0 {
                    out.push([s.max(-90.0), -180.0, n.min(90.0), 180.0]);
                    return Ok(out);
                }
                let q = r.sin() / lat.to_radians().cos();
                let dl = if q >= 1.0 {
                    180.0
                } else {
                    q.asin().to_degrees() + 1e-9
                };
                let (w, e) = (lon - dl, lon + dl);
                if dl >= 180.0 {
                    out.push([s, -180.0, n, 180.0]);
                } else if w < -180.0 {
                    out.push([s, w + 360.0, n, 180.0]);
                    out.push([s, -180.0, n, e]);
                } else if e > 180.0 {
                    out.push([s, w, n, 180.0]);
                    out.push([s, -180.0, n, e - 360.0]);
                } else {
                    out.push([s, w, n, e]);
                }
            }
        }
        Ok(out)
    }
}

fn cell_range(lo: f64, hi: f64, min: f64, span: f64, level: usize) -> (u64, u64) {
    let cells = 1u64 << level;
    let at = |x: f64| (((x - min) / span * cells as f64).floor().max(0.0) as u64).min(cells - 1);
    (at(lo), at(hi))
}

fn cell_key(level: usize, y: u64, x: u64) -> u64 {
    (level as u64) << 48 | y << 24 | x
}

/// The cells a set of pieces occupies: the finest level with at most `MAX_CELLS` of them.
fn cells_of(pieces: &[[f64; 4]]) -> Vec<u64> {
    for level in (0..LEVELS).rev() {
        let mut keys = Vec::new();
        for &[s, w, n, e] in pieces {
            let (y0, y1) = cell_range(s, n, -90.0, 180.0, level);
            let (x0, x1) = cell_range(w, e, -180.0, 360.0, level);
            if ((y1 - y0 + 1) * (x1 - x0 + 1)) as usize > MAX_CELLS {
                keys.clear();
                break;
            }
            for y in y0..=y1 {
                keys.extend((x0..=x1).map(|x| cell_key(level, y, x)));
            }
        }
        if !keys.is_empty() || level == 0 {
            keys.sort_unstable();
            keys.dedup();
            return keys;
        }
    }
    unreachable!("level 0 always returns")
}

/// A shape and its owner, stored once; cells refer to it by number.
#[derive(Clone, Copy)]
struct Stored {
    slot: u32,
    shape: Shape,
}

/// The shapes of one attribute.
#[derive(Default)]
pub(crate) struct GeoGrid {
    shapes: Vec<Stored>,
    free: Vec<u32>,
    /// `(slot, term)` -> shape number, for removal.
    numbers: FastMap<(u32, u32), u32>,
    /// Cell key -> `(slot, shape number)`: the slot is kept here too so removal need not
    /// follow the numbers.
    cells: FastMap<u64, Vec<(u32, u32)>>,
    per_level: [usize; LEVELS],
    /// Shapes with no safe bounding box, checked for every point.
    loose: Vec<u32>,
    len: usize,
}

impl GeoGrid {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.shapes.capacity() * std::mem::size_of::<Stored>()
            + (self.free.capacity() + self.loose.capacity()) * 4
            + self.numbers.capacity() * 13
            + self.cells.capacity() * (9 + std::mem::size_of::<Vec<(u32, u32)>>())
            + self.cells.values().map(|v| v.capacity() * 8).sum::<usize>()
    }

    pub(crate) fn insert(&mut self, shape: Shape, slot: u32, term: u32) {
        let stored = Stored { slot, shape };
        let n = match self.free.pop() {
            Some(n) => {
                self.shapes[n as usize] = stored;
                n
            }
            None => {
                self.shapes.push(stored);
                (self.shapes.len() - 1) as u32
            }
        };
        self.len += 1;
        self.numbers.insert((slot, term), n);
        match shape.pieces() {
            Err(()) => self.loose.push(n),
            Ok(p) => {
                // No pieces: holds for no point, so it is filed nowhere.
                for key in if p.is_empty() {
                    Vec::new()
                } else {
                    cells_of(&p)
                } {
                    self.per_level[(key >> 48) as usize] += 1;
                    self.cells.entry(key).or_default().push((slot, n));
                }
            }
        }
    }

    pub(crate) fn remove(&mut self, shape: Shape, slot: u32, term: u32) {
        let Some(n) = self.numbers.remove(&(slot, term)) else {
            return;
        };
        self.len -= 1;
        self.free.push(n);
        match shape.pieces() {
            Err(()) => self.loose.retain(|&x| x != n),
            Ok(p) => {
                for key in if p.is_empty() {
                    Vec::new()
                } else {
                    cells_of(&p)
                } {
                    let Some(list) = self.cells.get_mut(&key) else {
                        continue;
                    };
                    if let Some(i) = list.iter().position(|&e| e == (slot, n)) {
                        list.swap_remove(i);
                        self.per_level[(key >> 48) as usize] -= 1;
                    }
                    if list.is_empty() {
                        self.cells.remove(&key);
                    }
                }
            }
        }
    }

    /// Calls `hit(slot)` for every shape containing `p`.
    pub(crate) fn stab(&self, p: GeoPoint, hit: &mut impl FnMut(u32)) {
        let mut check = |n: u32| {
            let s = &self.shapes[n as usize];
            if s.shape.contains(p) {
                hit(s.slot);
            }
        };
        self.loose.iter().for_each(|&n| check(n));
        for level in 0..LEVELS {
            if self.per_level[level] == 0 {
                continue;
            }
            let (y, _) = cell_range(p.lat, p.lat, -90.0, 180.0, level);
            let (x, _) = cell_range(p.lon, p.lon, -180.0, 360.0, level);
            if let Some(list) = self.cells.get(&cell_key(level, y, x)) {
                list.iter().for_each(|&(_, n)| check(n));
            }
        }
    }
}
