//! Checks against the real NAB corpus, when it is present: `FOGLINE_NAB_DIR`, or
//! `../shared/data/nab` beside the workspace. Without the data the tests print
//! a notice and pass (the unit tests cover the scorer on hand-made files).

use fogline_detect::nab::{evaluate, run_detector, Corpus};
use std::path::PathBuf;

fn corpus() -> Option<Corpus> {
    let dir = std::env::var_os("FOGLINE_NAB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/nab")
        });
    if !dir.join("labels/combined_windows.json").exists() {
        eprintln!("NAB corpus not found at {}; skipping", dir.display());
        return None;
    }
    Some(Corpus::load(&dir).expect("the NAB corpus loads"))
}

#[test]
fn corpus_shape_matches_nab() {
    let Some(c) = corpus() else { return };
    assert_eq!(c.files.len(), 58);
    assert_eq!(c.row_count(), 365_558);
    assert_eq!(c.window_count(), 116);
    let names: Vec<&str> = c.profiles.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["standard", "reward_low_FP_rate", "reward_low_FN_rate"]
    );
}

/// NAB's windowed Gaussian, scored with its outputs rounded to 12 significant
/// digits as NAB's results CSVs store them, reproduces the published
/// scoreboard (39.65 / 20.87 / 47.41); at full precision it scores 40.13.
#[test]
fn windowed_gaussian_reproduces_published_score() {
    let Some(c) = corpus() else { return };
    let make = || fogline_detect::by_name("windowed-gaussian").expect("registered");
    let (scores, _) = run_detector(&c, &make);
    let rounded: Vec<Vec<f64>> = scores
        .iter()
        .map(|s| {
            s.iter()
                .map(|x| format!("{x:.11e}").parse::<f64>().expect("a number"))
                .collect()
        })
        .collect();
    let r = evaluate(&c, &rounded).expect("valid scores");
    let published = [39.649_523_5, 20.867_985_8, 47.410_027_2];
    for (p, want) in r.iter().zip(published) {
        assert!(
            (p.normalised - want).abs() < 0.01,
            "{}: {} vs {want}",
            p.profile,
            p.normalised
        );
    }
    let full = evaluate(&c, &scores).expect("valid scores");
    assert!(
        (full[0].normalised - 40.13).abs() < 0.01,
        "full precision {}",
        full[0].normalised
    );
}
