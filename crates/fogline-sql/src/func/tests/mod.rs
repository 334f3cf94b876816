//! Shared helpers of the per-family tables, and tests of the registry itself.

use super::*;

/// What a case expects.
pub(super) enum Want {
    /// Exactly this value.
    Is(Value),
    /// A float within 1e-9 (relative) of this.
    About(f64),
    /// An `Eval` error whose message contains this.
    Fails(&'static str),
}

pub(super) fn i(v: i64) -> Value {
    Value::Int(v)
}
pub(super) fn fl(v: f64) -> Value {
    Value::Float(v)
}
pub(super) fn s(v: &str) -> Value {
    Value::Str(v.to_owned())
}
pub(super) fn b(v: bool) -> Value {
    Value::Bool(v)
}
pub(super) const NULL: Value = Value::Null;

/// Runs a table of `name(args) -> want` through the registry (so names, argument bounds
/// and bodies are all checked).
pub(super) fn run(cases: Vec<(&str, Vec<Value>, Want)>) {
    for (name, args, want) in cases {
        let f = scalar(name).unwrap_or_else(|| panic!("{name} is not registered"));
        assert!(
            (f.min_args..=f.max_args).contains(&args.len()),
            "{name}: {} arguments outside {}..={}",
            args.len(),
            f.min_args,
            f.max_args
        );
        let got = (f.call)(&args);
        let show = format!("{name}({args:?}) = {got:?}");
        match want {
            Want::Is(v) => assert_eq!(got, Ok(v), "{show}"),
            Want::About(x) => match got {
                Ok(Value::Float(y)) => {
                    assert!((x - y).abs() <= 1e-9 * x.abs().max(1.0), "{show}, want {x}")
                }
                _ => panic!("{show}, want about {x}"),
            },
            Want::Fails(m) => match &got {
                Err(SqlError::Eval(e)) => {
                    assert!(e.contains(m), "{show}, want an error with {m:?}");
                    assert!(e.starts_with(&format!("function {name}: ")), "{show}");
                }
                _ => panic!("{show}, want an error with {m:?}"),
            },
        }
    }
}

#[test]
fn names_are_lowercase_unique_and_found() {
    let all = all();
    assert!(all.len() > 130, "{} functions", all.len());
    for w in all.windows(2) {
        assert!(w[0].name < w[1].name, "{} twice or unsorted", w[1].name);
    }
    for f in all {
        assert_eq!(f.name, f.name.to_lowercase());
        assert!(f.min_args <= f.max_args, "{}", f.name);
        assert_eq!(scalar(f.name).map(|g| g.name), Some(f.name));
    }
    assert!(scalar("ABS").is_none(), "the evaluator lowercases names");
    assert!(scalar("no_such_function").is_none());
}

#[test]
fn errors_name_the_function_and_the_types() {
    let err = (scalar("abs").unwrap().call)(&[s("x")]).unwrap_err();
    assert_eq!(
        err,
        SqlError::Eval("function abs: expected a number, found string".into())
    );
}

mod convert;
mod hash;
mod math;
mod other;
mod string;
mod time;

#[test]
fn functions_md_matches_the_registry() {
    let doc = include_str!("../../../FUNCTIONS.md");
    let mut listed = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let name = cells[1].trim_matches('`');
        let here = cells[2];
        let found = scalar(name).is_some();
        match here {
            "yes" => assert!(found, "FUNCTIONS.md says {name} is here"),
            "no" | "elsewhere" => assert!(!found, "FUNCTIONS.md says {name} is not here"),
            other => panic!("{name}: unknown status {other:?}"),
        }
        listed.push(name);
    }
    // Registered names eKuiper has but does not document are named in the text.
    for f in all() {
        assert!(
            listed.contains(&f.name)
                || doc.contains(&format!("`{}` (registered by eKuiper", f.name)),
            "{} is registered but not in FUNCTIONS.md",
            f.name
        );
    }
}
