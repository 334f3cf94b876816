//! `fogline gm table3.2|fig3.5|data` on a small configuration: the tables come out, the
//! plots are written, lossless runs miss nothing, and a data.txt written by `gm data` gives
//! the same table as the generator it came from.

use std::process::Command;

fn gm(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_fogline"))
        .arg("gm")
        .args(args)
        .output()
        .expect("fogline runs");
    assert!(
        out.status.success(),
        "fogline gm {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const SMALL: [&str; 6] = ["--source", "parametric", "--nodes", "6", "--hours", "12"];

#[test]
fn table_3_2_reports_every_protocol_and_misses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("t.svg");
    let mut args = vec!["table3.2", "--json", "--plot", svg.to_str().unwrap()];
    args.extend(SMALL);
    let rows: serde_json::Value = serde_json::from_str(&gm(&args)).expect("JSON");
    let rows = rows.as_array().unwrap();
    // the baselines and every zone's protocols (experiment::table_protocols), per function
    assert_eq!(rows.len(), 2 * 14);
    for row in rows {
        let r = &row["report"];
        let protocol = r["protocol"].as_str().unwrap();
        assert!(r["crossings"].as_u64().unwrap() > 0, "{row}");
        if !protocol.starts_with("periodic") {
            assert_eq!(r["missed"], 0, "{row}");
            assert_eq!(r["wrong_epochs"], 0, "{row}");
            assert_eq!(r["mismatch_epochs"], 0, "{row}");
        }
        if protocol == "every-reading" {
            assert_eq!(r["sent"], r["readings"]);
        }
    }
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.starts_with("<svg") && plot.contains("broadcast/ball"));

    let text = gm(&[&["table3.2"], &SMALL[..]].concat());
    assert!(
        text.contains("variance")
            && text.contains("coordinator/convex")
            && text.contains("predict/convex")
            && text.contains("predict/band"),
        "{text}"
    );
}

#[test]
fn fig_3_5_sweeps_the_loss_rates() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("f.svg");
    let mut args = vec![
        "fig3.5",
        "--json",
        "--seeds",
        "1",
        "--protocols",
        "broadcast/ball,repair/band",
        "--plot",
        svg.to_str().unwrap(),
    ];
    args.extend(SMALL);
    let points: serde_json::Value = serde_json::from_str(&gm(&args)).expect("JSON");
    let points = points.as_array().unwrap();
    assert_eq!(points.len(), 2 * 7);
    let first = &points[0];
    assert_eq!(first["protocol"], "broadcast/ball");
    assert_eq!(first["loss"], 0.001);
    let last = &points[6];
    assert!(last["measured_loss"].as_f64().unwrap() > 0.02, "{last}");
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.contains("<polyline") && plot.contains("repair/band"));

    let flood = gm(&[
        &[
            "fig3.5",
            "--net",
            "flood",
            "--seeds",
            "1",
            "--protocols",
            "every-reading",
        ],
        &SMALL[..],
    ]
    .concat());
    assert!(flood.contains("every-reading"), "{flood}");
}

#[test]
fn a_written_data_txt_replays_like_its_generator() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.txt");
    gm(&[&["data", "-o", file.to_str().unwrap()], &SMALL[..]].concat());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text
        .lines()
        .next()
        .unwrap()
        .starts_with("2004-02-28 00:00:00.000 0 22 "));
    let from_generator = gm(&[&["table3.2", "--json"], &SMALL[..]].concat());
    let from_file = gm(&[
        "table3.2",
        "--json",
        "--source",
        file.to_str().unwrap(),
        "--nodes",
        "6",
        "--hours",
        "12",
    ]);
    assert_eq!(from_generator, from_file);
}

#[test]
fn a_bad_source_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_fogline"))
        .args(["gm", "table3.2", "--source", "/nonexistent/data.txt"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/data.txt"));
}
