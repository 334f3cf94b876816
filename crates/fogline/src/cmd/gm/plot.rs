//! Hand-written SVG for the `fogline gm` figures: horizontal bars and line panels, log axes.
//! Enough for two figures; no plotting crate in the edge binary.

use std::fmt::Write;

const PALETTE: [&str; 8] = [
    "#1b6ca8", "#d1495b", "#2e933c", "#edae49", "#6a4c93", "#00798c", "#8d6a9f", "#444444",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Ticks at powers of ten (log) or at round steps (linear) between `lo` and `hi`.
fn ticks(lo: f64, hi: f64, log: bool) -> Vec<f64> {
    if log {
        let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        return (a..=b).map(|e| 10f64.powi(e)).collect();
    }
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let step = 10f64.powf((span / 5.0).log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * step)
        .find(|s| span / s <= 6.0)
        .unwrap_or(step * 10.0);
    let mut t = (lo / step).floor() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 {
        out.push(t);
        t += step;
    }
    out
}

fn fmt_tick(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e4 || v.abs() < 1e-2) {
        format!("{v:.0e}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// An axis mapping data to pixels.
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    from: f64,
    to: f64,
}

impl Axis {
    fn new(values: impl Iterator<Item = f64>, log: bool, from: f64, to: f64) -> Axis {
        let vs: Vec<f64> = values
            .filter(|v| v.is_finite() && (!log || *v > 0.0))
            .collect();
        let mut lo = vs.iter().cloned().fold(f64::INFINITY, f64::min);
        let mut hi = vs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        if !lo.is_finite() {
            (lo, hi) = (1.0, 10.0);
        }
        if log {
            lo = 10f64.powf(lo.log10().floor());
            hi = 10f64.powf(hi.log10().ceil().max(lo.log10() + 1.0));
        } else {
            lo = lo.min(0.0);
            if hi <= lo {
                hi = lo + 1.0;
            }
            hi *= 1.05;
        }
        Axis {
            lo,
            hi,
            log,
            from,
            to,
        }
    }

    fn px(&self, v: f64) -> f64 {
        let f = if self.log {
            (v.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.from + f * (self.to - self.from)
    }
}

/// Horizontal bars, one group per function: `groups[(title, [(label, value)])]`, log x.
pub fn bars(title: &str, x_label: &str, groups: &[(String, Vec<(String, f64)>)]) -> String {
    let rows: usize = groups.iter().map(|g| g.1.len() + 1).sum();
    let (w, left, right, top) = (760.0, 190.0, 40.0, 50.0);
    let h = top + 22.0 * rows as f64 + 60.0;
    let x = Axis::new(
        groups.iter().flat_map(|g| g.1.iter().map(|b| b.1)),
        true,
        left,
        w - right,
    );
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="{}" y="24" text-anchor="middle" font-size="15">{}</text>"#,
        w / 2.0,
        esc(title)
    );
    let bottom = h - 40.0;
    for t in ticks(x.lo, x.hi, true) {
        let px = x.px(t);
        let _ = write!(
            s,
            r##"<line x1="{px}" y1="{top}" x2="{px}" y2="{bottom}" stroke="#ddd"/><text x="{px}" y="{}" text-anchor="middle">{}</text>"##,
            bottom + 15.0,
            fmt_tick(t)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (left + w - right) / 2.0,
        bottom + 32.0,
        esc(x_label)
    );
    let mut y = top;
    for (gi, (name, items)) in groups.iter().enumerate() {
        let _ = write!(
            s,
            r#"<text x="8" y="{}" font-weight="bold">{}</text>"#,
            y + 14.0,
            esc(name)
        );
        y += 22.0;
        for (label, v) in items {
            let colour = PALETTE[gi % PALETTE.len()];
            let _ = write!(
                s,
                r#"<text x="{}" y="{}" text-anchor="end">{}</text><rect x="{left}" y="{}" width="{}" height="16" fill="{colour}"/><text x="{}" y="{}">{}</text>"#,
                left - 6.0,
                y + 12.0,
                esc(label),
                y,
                (x.px(*v) - left).max(1.0),
                x.px(*v) + 4.0,
                y + 12.0,
                fmt_tick((v * 100.0).round() / 100.0)
            );
            y += 22.0;
        }
    }
    s.push_str("</svg>\n");
    s
}

/// One panel of line series.
pub struct Panel {
    /// title
    pub title: String,
    /// x axis label
    pub x_label: String,
    /// y axis label
    pub y_label: String,
    /// (name, points)
    pub series: Vec<(String, Vec<(f64, f64)>)>,
}

/// Panels side by side, log x and log y, with one legend.
pub fn lines(panels: &[Panel]) -> String {
    let (pw, ph, m) = (420.0, 320.0, 60.0);
    let w = pw * panels.len() as f64;
    let legend = panels.first().map_or(0, |p| p.series.len());
    let h = ph + 20.0 * legend as f64 + 20.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/>"#
    );
    for (pi, p) in panels.iter().enumerate() {
        let ox = pi as f64 * pw;
        let all = || p.series.iter().flat_map(|se| se.1.iter());
        let x = Axis::new(all().map(|q| q.0), true, ox + m, ox + pw - 20.0);
        let y = Axis::new(all().map(|q| q.1), true, ph - 50.0, 40.0);
        let _ = write!(
            s,
            r#"<text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
            ox + pw / 2.0,
            esc(&p.title)
        );
        for t in ticks(y.lo, y.hi, true) {
            let py = y.px(t);
            let _ = write!(
                s,
                r##"<line x1="{}" y1="{py}" x2="{}" y2="{py}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
                ox + m,
                ox + pw - 20.0,
                ox + m - 4.0,
                py + 4.0,
                fmt_tick(t)
            );
        }
        for t in ticks(x.lo, x.hi, true) {
            let px = x.px(t);
            let _ = write!(
                s,
                r##"<line x1="{px}" y1="40" x2="{px}" y2="{}" stroke="#ddd"/><text x="{px}" y="{}" text-anchor="middle">{}</text>"##,
                ph - 50.0,
                ph - 35.0,
                fmt_tick(t)
            );
        }
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text><text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})">{}</text>"#,
            ox + pw / 2.0,
            ph - 18.0,
            esc(&p.x_label),
            ox + 14.0,
            ph / 2.0,
            ox + 14.0,
            ph / 2.0,
            esc(&p.y_label)
        );
        for (si, (_, pts)) in p.series.iter().enumerate() {
            let colour = PALETTE[si % PALETTE.len()];
            let path: Vec<String> = pts
                .iter()
                .filter(|q| q.0 > 0.0 && q.1 > 0.0)
                .map(|q| format!("{:.1},{:.1}", x.px(q.0), y.px(q.1)))
                .collect();
            let _ = write!(
                s,
                r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
                path.join(" ")
            );
            for pt in &path {
                let (cx, cy) = pt.split_once(',').unwrap_or(("0", "0"));
                let _ = write!(s, r#"<circle cx="{cx}" cy="{cy}" r="3" fill="{colour}"/>"#);
            }
        }
    }
    if let Some(p) = panels.first() {
        for (si, (name, _)) in p.series.iter().enumerate() {
            let yy = ph + 20.0 * si as f64;
            let colour = PALETTE[si % PALETTE.len()];
            let _ = write!(
                s,
                r#"<rect x="{m}" y="{}" width="24" height="4" fill="{colour}"/><text x="{}" y="{}">{}</text>"#,
                yy - 4.0,
                m + 30.0,
                yy,
                esc(name)
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_well_formed_svg() {
        let b = bars(
            "t",
            "x",
            &[("g".into(), vec![("a<b".into(), 4.3), ("c".into(), 44.0)])],
        );
        assert!(b.starts_with("<svg") && b.trim_end().ends_with("</svg>") && b.contains("a&lt;b"));
        let l = lines(&[Panel {
            title: "p".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![("s".into(), vec![(0.1, 400.0), (5.0, 40_000.0)])],
        }]);
        assert!(l.contains("<polyline") && l.trim_end().ends_with("</svg>"));
        assert_eq!(ticks(0.1, 5.0, true), vec![0.1, 1.0, 10.0]);
    }
}
