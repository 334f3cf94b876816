//! The text form: every predicate kind, quoting, unicode, and every error.

use fogline_profile::{
    DataProfile, ErrorKind, GeoPoint, Interest, ParseError, Predicate as P, Term,
};

fn one(text: &str) -> P {
    let i = Interest::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(i.terms.len(), 1, "{text}");
    assert_eq!(
        Interest::parse(&i.to_string()).unwrap(),
        i,
        "round trip of {text}"
    );
    i.terms[0].predicate.clone()
}

fn err(text: &str) -> ParseError {
    Interest::parse(text).expect_err(text)
}

fn pt(lat: f64, lon: f64) -> GeoPoint {
    GeoPoint { lat, lon }
}

fn s(x: &str) -> String {
    x.to_string()
}

#[test]
fn profile_items_quotes_and_repeats() {
    let p =
        DataProfile::parse(" type=drone  name=\"big drone\" urgent eq=\"a=b\" e=\"\" ").unwrap();
    assert_eq!(p.get("type"), Some(Some("drone")));
    assert_eq!(p.get("name"), Some(Some("big drone")));
    assert_eq!(p.get("urgent"), Some(None));
    assert_eq!(p.get("eq"), Some(Some("a=b")));
    assert_eq!(p.get("e"), Some(Some("")));
    assert_eq!(p.get("nope"), None);
    let p = DataProfile::parse(r#"q="say \"hi\" \\o/" star=Li* b=x\ y"#).unwrap();
    assert_eq!(p.get("q"), Some(Some(r#"say "hi" \o/"#)));
    assert_eq!(p.get("star"), Some(Some("Li*")));
    assert_eq!(p.get("b"), Some(Some("x y")));
    // Later wins, at the first position.
    let p = DataProfile::parse("a=1 b a=2 b=3").unwrap();
    assert_eq!(
        p.pairs,
        vec![(s("a"), Some(s("2"))), (s("b"), Some(s("3")))]
    );
    assert_eq!(DataProfile::parse("").unwrap(), DataProfile::default());
}

#[test]
fn profile_unicode_and_display() {
    let p = DataProfile::parse("城市=東京 name=Zürich größe=\"groß und klein\" x@y=1").unwrap();
    assert_eq!(p.get("城市"), Some(Some("東京")));
    assert_eq!(p.get("x@y"), Some(Some("1")));
    assert_eq!(
        p.to_string(),
        "城市=東京 name=Zürich größe=\"groß und klein\" x@y=1"
    );
    let p = DataProfile::from_pairs([
        ("a", Some("x y")),
        ("b", None),
        ("c", Some("")),
        ("d", Some("\"q\\")),
        ("a", Some("z")),
    ])
    .unwrap();
    assert_eq!(p.to_string(), r#"a=z b c="" d="\"q\\""#);
    assert_eq!(DataProfile::parse(&p.to_string()).unwrap(), p);
}

#[test]
fn profile_errors() {
    let e = DataProfile::parse("a=1 =x").unwrap_err();
    assert_eq!(
        (e.position, e.term.as_str(), &e.kind),
        (4, "=x", &ErrorKind::EmptyAttribute)
    );
    let e = DataProfile::parse("a b~c").unwrap_err();
    assert_eq!((e.position, e.kind), (3, ErrorKind::AttributeChar('~')));
    assert_eq!(
        DataProfile::parse("@a").unwrap_err().kind,
        ErrorKind::AttributeChar('@')
    );
    assert_eq!(
        DataProfile::parse("a*").unwrap_err().kind,
        ErrorKind::AttributeChar('*')
    );
    let e = DataProfile::parse("a= b").unwrap_err();
    assert_eq!(
        (e.position, e.term.as_str(), e.kind),
        (2, "a=", ErrorKind::EmptyValue)
    );
    let e = DataProfile::parse("x a=\"open end").unwrap_err();
    assert_eq!((e.position, e.term.as_str()), (4, "a=\"open end"));
    assert_eq!(e.kind, ErrorKind::UnterminatedQuote);
    let e = DataProfile::parse("a=\"q\"x").unwrap_err();
    assert_eq!((e.position, e.kind), (5, ErrorKind::AfterQuote));
    assert_eq!(
        DataProfile::parse("a=x\\").unwrap_err().kind,
        ErrorKind::DanglingEscape
    );
    assert_eq!(
        DataProfile::parse("a=b=c").unwrap_err().kind,
        ErrorKind::ValueChar('=')
    );
    assert_eq!(
        DataProfile::parse("a=b\"c").unwrap_err().kind,
        ErrorKind::ValueChar('"')
    );
    let e = DataProfile::from_pairs([("ok", None::<&str>), ("b d", None)]).unwrap_err();
    assert_eq!(
        (e.position, e.term.as_str(), e.kind),
        (1, "b d", ErrorKind::AttributeChar(' '))
    );
    let e = DataProfile::from_pairs([("", Some("x"))]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::EmptyAttribute);
    let msg = DataProfile::parse("a=1 b=\"x").unwrap_err().to_string();
    assert_eq!(msg, "in `b=\"x` at byte 6: expected a closing `\"`");
}

#[test]
fn keywords() {
    assert_eq!(one("sensor"), P::Present);
    assert_eq!(one("sensor=*"), P::Present);
    assert_eq!(one("sensor=lidar"), P::Exact(s("lidar")));
    assert_eq!(one("sensor=Li*"), P::Prefix(s("Li")));
    assert_eq!(one("sensor=*dar"), P::Suffix(s("dar")));
    assert_eq!(one("sensor=L*d?r"), P::Wildcard(s("L*d?r")));
    assert_eq!(one("sensor=*ida*"), P::Wildcard(s("*ida*")));
    assert_eq!(one("sensor=?"), P::Wildcard(s("?")));
    assert_eq!(one("sensor=**"), P::Wildcard(s("**")));
    assert_eq!(one("name=Zürich*"), P::Prefix(s("Zürich")));
    assert_eq!(one("城市=*京"), P::Suffix(s("京")));
    assert_eq!(one("城市=東?"), P::Wildcard(s("東?")));
    // Quoted = exact, whatever it holds; escapes make `*` and `?` literal.
    assert_eq!(one("a=\"Li*\""), P::Exact(s("Li*")));
    assert_eq!(one("a=\"20..30\""), P::Exact(s("20..30")));
    assert_eq!(one("a=\"big drone\""), P::Exact(s("big drone")));
    assert_eq!(one(r"a=Li\*"), P::Exact(s("Li*")));
    assert_eq!(one(r"a=Li\**"), P::Prefix(s("Li*")));
    assert_eq!(one(r"a=*\?"), P::Suffix(s("?")));
    assert_eq!(one(r"a=\*x*?\\"), P::Wildcard(s(r"\*x*?\\")));
    assert_eq!(one(r"a=big\ *"), P::Prefix(s("big ")));
    assert_eq!(one("a=40,-74"), P::Exact(s("40,-74")));
}

#[test]
fn ranges() {
    let r = |low, high| P::Range { low, high };
    assert_eq!(one("t=20..30"), r(Some(20.0), Some(30.0)));
    assert_eq!(one("t=20.."), r(Some(20.0), None));
    assert_eq!(one("t=..30"), r(None, Some(30.0)));
    assert_eq!(one("t=.."), r(None, None));
    assert_eq!(one("t=-5.5..-1e-3"), r(Some(-5.5), Some(-0.001)));
    assert_eq!(one("t=1E3..+2e+3"), r(Some(1000.0), Some(2000.0)));
    assert_eq!(one("t=7..7"), r(Some(7.0), Some(7.0)));
    assert_eq!(one("t=1e300..1e301").to_string_term(), "t=1e300..1e301");
}

trait TermText {
    fn to_string_term(self) -> String;
}

impl TermText for P {
    fn to_string_term(self) -> String {
        let t = Term {
            attribute: s("t"),
            predicate: self,
        };
        t.to_string()
    }
}

#[test]
fn geo() {
    assert_eq!(
        one("geo=40.0,-74.5..40.1,-74.3"),
        P::GeoBox {
            south_west: pt(40.0, -74.5),
            north_east: pt(40.1, -74.3)
        }
    );
    assert_eq!(
        one("geo=-10,170..10,-170"),
        P::GeoBox {
            south_west: pt(-10.0, 170.0),
            north_east: pt(10.0, -170.0)
        }
    );
    let near = |lat, lon, radius_m| P::Near {
        center: pt(lat, lon),
        radius_m,
    };
    assert_eq!(one("at~40.05,-74.40,5km"), near(40.05, -74.4, 5000.0));
    assert_eq!(one("at~40.05,-74.40,250m"), near(40.05, -74.4, 250.0));
    assert_eq!(one("at~-90,180,12.5"), near(-90.0, 180.0, 12.5));
    assert_eq!(near(1.0, 2.0, 5000.0).to_string_term(), "t~1,2,5km");
    assert_eq!(near(1.0, 2.0, 1500.5).to_string_term(), "t~1,2,1500.5m");
}

#[test]
fn topics_and_whole_interests() {
    let i = Interest::parse("@site/+/lidar type=drone sensor=Li* t=20..").unwrap();
    assert_eq!(i.topic.as_deref(), Some("site/+/lidar"));
    assert_eq!(i.terms.len(), 3);
    assert_eq!(i.to_string(), "@site/+/lidar type=drone sensor=Li* t=20..");
    let i = Interest::parse("a @\"my site/#\"").unwrap();
    assert_eq!(i.topic.as_deref(), Some("my site/#"));
    assert_eq!(i.to_string(), "@\"my site/#\" a");
    assert_eq!(Interest::parse("").unwrap(), Interest::default());
    // Repeated attributes are all kept: a conjunction.
    assert_eq!(Interest::parse("t=1.. t=..2").unwrap().terms.len(), 2);
}

#[test]
fn interest_errors() {
    let e = err("a=1 t=30..20");
    assert_eq!((e.position, e.term.as_str()), (6, "t=30..20"));
    assert_eq!(
        e.kind,
        ErrorKind::RangeReversed {
            low: 30.0,
            high: 20.0
        }
    );
    assert_eq!(
        e.to_string(),
        "in `t=30..20` at byte 6: expected low <= high in a range, found 30 > 20"
    );
    assert_eq!(err("t=1..x").kind, ErrorKind::Number(s("x")));
    assert_eq!(err("t=inf..").kind, ErrorKind::Number(s("inf")));
    assert_eq!(err("t=..NaN").kind, ErrorKind::Number(s("NaN")));
    assert_eq!(err("t=.5..").kind, ErrorKind::Number(s(".5")));
    assert_eq!(err("t=1...2").kind, ErrorKind::Number(s(".2")));
    assert_eq!(err("t=1e999..").kind, ErrorKind::Number(s("1e999")));
    assert_eq!(err("g=1,2..3").kind, ErrorKind::Point(s("3")));
    assert_eq!(err("g=1,x..3,4").kind, ErrorKind::Point(s("1,x")));
    assert_eq!(err("g=91,0..92,1").kind, ErrorKind::Latitude(91.0));
    assert_eq!(err("g=0,0..1,180.5").kind, ErrorKind::Longitude(180.5));
    let kind = ErrorKind::BoxReversed {
        south: 2.0,
        north: 1.0,
    };
    assert_eq!(err("g=2,0..1,1").kind, kind);
    assert_eq!(err("n~1,2").kind, ErrorKind::Near(s("1,2")));
    assert_eq!(err("n~1,2,").kind, ErrorKind::Radius(s("")));
    assert_eq!(err("n~1,2,0km").kind, ErrorKind::Radius(s("0km")));
    assert_eq!(err("n~1,2,-5").kind, ErrorKind::Radius(s("-5")));
    assert_eq!(err("n~1,2,5mi").kind, ErrorKind::Radius(s("5mi")));
    assert_eq!(err("n~1,2,1e308km").kind, ErrorKind::Radius(s("1e308km")));
    assert_eq!(err("n~-91,2,5").kind, ErrorKind::Latitude(-91.0));
    assert_eq!(err("n~1,-181,5").kind, ErrorKind::Longitude(-181.0));
    assert_eq!(err("n~\"1,2,3\"").kind, ErrorKind::Quoted);
    assert_eq!(err("n~").kind, ErrorKind::EmptyValue);
    let e = err("@a @b");
    assert_eq!(
        (e.position, e.term.as_str(), e.kind),
        (3, "@b", ErrorKind::SecondTopic)
    );
    let bad = |t| ErrorKind::Topic(t);
    assert_eq!(err("@").kind, bad(fogline_wire::TopicError::Empty));
    assert_eq!(
        err("@a/#/b").kind,
        bad(fogline_wire::TopicError::BadWildcard)
    );
    assert_eq!(err("x =y").kind, ErrorKind::EmptyAttribute);
    assert_eq!(err("~1,2,3").kind, ErrorKind::EmptyAttribute);
    assert_eq!(err("a?=1").kind, ErrorKind::AttributeChar('?'));
    assert_eq!(err("a\"b").kind, ErrorKind::AttributeChar('"'));
    assert_eq!(err("a=b c=").kind, ErrorKind::EmptyValue);
    assert_eq!(err("a=\"x").kind, ErrorKind::UnterminatedQuote);
    assert_eq!(err("a=x\\").kind, ErrorKind::DanglingEscape);
    assert_eq!(err("a=x=y").kind, ErrorKind::ValueChar('='));
}

#[test]
fn parse_terms_refuses_a_topic_term_and_reads_the_rest_as_parse_does() {
    let text = "sensor=li* alt=100.. geo~40.05,-74.40,5km";
    assert_eq!(
        Interest::parse_terms(text).unwrap(),
        Interest::parse(text).unwrap()
    );
    let err = Interest::parse_terms("sensor=li* @site/#").unwrap_err();
    assert_eq!(err.kind, fogline_profile::ErrorKind::TopicHere);
    assert!(Interest::parse("sensor=li* @site/#").is_ok());
}
