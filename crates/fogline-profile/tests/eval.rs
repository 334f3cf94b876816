//! The reference semantics, case by case (paper 004 section IV-D1).

use fogline_profile::{wildcard_matches, DataProfile, GeoPoint, Interest, Predicate};

fn matches(interest: &str, profile: &str) -> bool {
    let i = Interest::parse(interest).unwrap();
    i.matches(&DataProfile::parse(profile).unwrap(), "t")
}

fn holds(interest_term: &str, value: Option<&str>) -> bool {
    let i = Interest::parse(interest_term).unwrap();
    i.terms[0].predicate.holds(value)
}

#[test]
fn paper_example() {
    let data = "type=drone sensor=lidar lat=40.0583 lon=-74.4056 urgent";
    assert!(matches(
        "type=drone sensor=Li* lat=40..41 lon=-75..-74",
        "type=drone sensor=Lidar lat=40.0583 lon=-74.4056"
    ));
    assert!(!matches("type=drone sensor=Li*", data), "case-sensitive");
    assert!(matches("type=drone sensor=li* urgent", data));
    assert!(!matches("type=drone missing", data), "absent attribute");
    assert!(matches("", data), "no terms: everything");
}

#[test]
fn present_and_valueless() {
    assert!(holds("a", None));
    assert!(holds("a", Some("")));
    assert!(holds("a=*", None), "`*` is Present");
    for t in [
        "a=x",
        "a=x*",
        "a=*x",
        "a=x?",
        "a=..",
        "a=0,0..1,1",
        "a~0,0,1",
    ] {
        assert!(!holds(t, None), "{t} needs a value");
    }
}

#[test]
fn keywords() {
    assert!(holds("a=lidar", Some("lidar")));
    assert!(!holds("a=lidar", Some("lidar ")));
    assert!(holds("a=\"\"", Some("")));
    assert!(holds("a=Li*", Some("Li")));
    assert!(holds("a=*dar", Some("dar")));
    assert!(!holds("a=*dar", Some("ar")));
    assert!(holds("a=L*d?r", Some("Lidar")));
    assert!(holds("a=L*d?r", Some("Ldxr")));
    assert!(!holds("a=L*d?r", Some("Ldr")));
    assert!(holds("name=Zürich*", Some("Zürich HB")));
    assert!(
        holds("name=Z?rich", Some("Zürich")),
        "? is one character, not one byte"
    );
    assert!(holds("城市=東?", Some("東京")));
    assert!(!holds("城市=東?", Some("東京都")));
    assert!(holds("a=*京*", Some("東京都")));
    assert!(holds(r"a=a\*b*", Some("a*bc")));
    assert!(!holds(r"a=a\*b*", Some("axbc")));
    assert!(holds(r"a=*\?", Some("why?")));
}

#[test]
fn wildcard_edges() {
    assert!(wildcard_matches("", ""));
    assert!(!wildcard_matches("", "a"));
    assert!(wildcard_matches("*", ""));
    assert!(wildcard_matches("**", "abc"));
    assert!(!wildcard_matches("?", ""));
    assert!(wildcard_matches("a*b*c", "aXbYbZc"));
    assert!(!wildcard_matches("a*b*c", "aXbYbZ"));
    assert!(wildcard_matches(r"\\", "\\"));
    // The classic exponential case for backtracking matchers finishes at once.
    let text = "a".repeat(5000);
    assert!(!wildcard_matches(&format!("{}b", "a*".repeat(200)), &text));
}

#[test]
fn ranges() {
    assert!(holds("t=20..30", Some("20")));
    assert!(holds("t=20..30", Some("30")));
    assert!(holds("t=20..30", Some("2.5e1")));
    assert!(!holds("t=20..30", Some("30.0001")));
    assert!(holds("t=20..", Some("1e300")));
    assert!(holds("t=..-5", Some("-5")));
    assert!(!holds("t=..-5", Some("-4.9")));
    assert!(holds("t=..", Some("0")));
    for v in ["", "abc", "20 ", "inf", "NaN", ".5", "5.", "0x10", "1,2"] {
        assert!(!holds("t=..", Some(v)), "{v:?} is not a number");
    }
}

#[test]
fn geo_boxes() {
    let b = "g=40.0,-74.5..40.1,-74.3";
    assert!(holds(b, Some("40.05,-74.4")));
    assert!(holds(b, Some("40,-74.5")), "edges are inside");
    assert!(!holds(b, Some("40.05,-74.2")));
    assert!(!holds(b, Some("40.05 -74.4")));
    assert!(!holds(b, Some("95,-74.4")), "not a point");
    // Across the antimeridian.
    let w = "g=-10,170..10,-170";
    assert!(holds(w, Some("0,175")));
    assert!(holds(w, Some("0,-175")));
    assert!(holds(w, Some("0,180")));
    assert!(holds(w, Some("0,-180")));
    assert!(!holds(w, Some("0,0")));
    assert!(!holds(w, Some("0,169")));
    // -180 and 180 are one meridian.
    assert!(holds("g=0,170..10,180", Some("5,-180")));
    assert!(holds("g=0,-180..10,-170", Some("5,180")));
    // The poles: every longitude names the same point.
    assert!(holds("g=80,10..90,20", Some("90,-135")));
    assert!(!holds("g=80,10..89,20", Some("90,15")));
    assert!(holds("g=-90,0..-80,1", Some("-90,100")));
    assert!(holds("g=80,-180..90,180", Some("85,123")), "a polar cap");
}

#[test]
fn near() {
    let c = GeoPoint {
        lat: 40.05,
        lon: -74.40,
    };
    // One degree of latitude is R·π/180 ≈ 111 195 m.
    let deg = 6_371_008.8 * std::f64::consts::PI / 180.0;
    let north = GeoPoint {
        lat: 41.05,
        lon: -74.40,
    };
    assert!((c.distance_m(north) - deg).abs() < 1e-6);
    let p = Predicate::Near {
        center: c,
        radius_m: deg + 1e-3,
    };
    assert!(p.holds(Some("41.05,-74.40")));
    let p = Predicate::Near {
        center: c,
        radius_m: deg - 1e-3,
    };
    assert!(!p.holds(Some("41.05,-74.40")));
    assert!(holds("n~40.05,-74.40,5km", Some("40.05,-74.40")));
    assert!(!holds("n~40.05,-74.40,5km", Some("not,a point")));
    // Across the antimeridian: 0,179.99 to 0,-179.99 is 0.02 degrees.
    assert!(holds("n~0,179.99,2.3km", Some("0,-179.99")));
    assert!(!holds("n~0,179.99,2.2km", Some("0,-179.99")));
    // Near a pole, longitude barely matters.
    assert!(holds("n~89.999,0,250m", Some("89.999,180")));
    assert!(holds("n~90,0,1m", Some("90,-77")));
}

#[test]
fn topic_filters() {
    let i = Interest::parse("@site/+/lidar type=drone").unwrap();
    let p = DataProfile::parse("type=drone").unwrap();
    assert!(i.matches(&p, "site/a/lidar"));
    assert!(!i.matches(&p, "site/a/b/lidar"));
    assert!(!i.matches(&DataProfile::default(), "site/a/lidar"));
    let all = Interest::parse("@#").unwrap();
    assert!(all.matches(&p, "x/y"));
    assert!(!all.matches(&p, "$SYS/x"));
    assert!(Interest::parse("@a/#").unwrap().matches(&p, "a"));
}
