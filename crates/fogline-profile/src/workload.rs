//! The routing-cost workload, shared by `examples/route_cost.rs` and `fogline-bench route`
//! (not part of the API): 100 clusters; interest i belongs to cluster i*7 mod 100 and has d
//! terms, term j on attribute `aj` of kind j: exact keyword, numeric range, prefix, geo box,
//! suffix, geo radius. A profile of cluster c satisfies exactly the terms of cluster c, so
//! each term, and each interest, holds for 1% of the profiles.

use crate::model::{DataProfile, GeoPoint, Interest, Predicate, Term};

/// Clusters of the workload: each profile and each interest belongs to one.
pub const CLUSTERS: usize = 100;

/// The place of cluster `c`.
fn spot(c: usize) -> GeoPoint {
    GeoPoint {
        lat: -60.0 + (c % 10) as f64 * 12.0,
        lon: -170.0 + (c / 10) as f64 * 34.0,
    }
}

/// Interest `i` of `d` terms (cluster `i*7 mod 100`).
pub fn interest(i: usize, d: usize) -> Interest {
    let c = i * 7 % CLUSTERS;
    let g = spot(c);
    let wiggle = (i % 13) as f64 * 0.01; // ranges and boxes differ a little per interest
    let terms = (0..d)
        .map(|j| {
            let predicate = match j {
                0 => Predicate::Exact(format!("k{c}")),
                1 => Predicate::Range {
                    low: Some(c as f64 - wiggle),
                    high: Some(c as f64 + 0.5),
                },
                2 => Predicate::Prefix(format!("p{c}-")),
                3 => Predicate::GeoBox {
                    south_west: GeoPoint {
                        lat: g.lat - 0.5 - wiggle,
                        lon: g.lon - 0.5,
                    },
                    north_east: GeoPoint {
                        lat: g.lat + 0.5,
                        lon: g.lon + 0.5 + wiggle,
                    },
                },
                4 => Predicate::Suffix(format!("-s{c}")),
                _ => Predicate::Near {
                    center: g,
                    radius_m: 20_000.0 + wiggle * 1e5,
                },
            };
            Term {
                attribute: format!("a{j}"),
                predicate,
            }
        })
        .collect();
    Interest { terms, topic: None }
}

/// A data profile of cluster `c` with `d` attributes: it satisfies exactly the terms of the
/// interests of cluster `c`.
pub fn profile(c: usize, d: usize) -> DataProfile {
    let g = spot(c);
    let pairs = (0..d)
        .map(|j| {
            let v = match j {
                0 => format!("k{c}"),
                1 => format!("{c}.25"),
                2 => format!("p{c}-v"),
                4 => format!("v-s{c}"),
                _ => format!("{},{}", g.lat + 0.01, g.lon - 0.01),
            };
            (format!("a{j}"), Some(v))
        })
        .collect();
    DataProfile { pairs }
}
