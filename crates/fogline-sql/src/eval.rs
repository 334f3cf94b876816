//! Expressions compiled against a stream (fields, functions and aggregates resolved at plan
//! time), evaluated over a row context with eKuiper's semantics: NULL propagates, `bigint`
//! and `float` stay apart, `+` does not join strings.

use std::borrow::Cow;

use crate::ast::BinaryOp;
use crate::error::SqlError;
use crate::func::Scalar;
use crate::ops;
use crate::state::States;
use crate::value::{Row, Value};

/// What an expression sees: one row, its record's meta, the window and a group's aggregates.
pub(crate) struct Ctx<'a> {
    /// The row.
    pub row: &'a dyn Fields,
    /// The record's topic.
    pub topic: &'a str,
    /// The record's timestamp (ms).
    pub ts: i64,
    /// Window bounds `[start, end)`, when evaluating a window's results.
    pub window: Option<(i64, i64)>,
    /// The group's aggregate results, by [`CExpr::Agg`] index.
    pub aggs: &'a [Value],
}

/// A row's fields, however stored: a decoded [`Row`], or a window's compact copy.
pub(crate) trait Fields {
    /// The field of that name.
    fn field(&self, name: &str) -> Option<&Value>;
    /// Every field, in name order.
    fn each(&self, f: &mut dyn FnMut(&str, &Value));
    /// The fields as a [`Row`].
    fn to_row(&self) -> Row;
}

impl Fields for Row {
    fn field(&self, name: &str) -> Option<&Value> {
        self.get(name)
    }
    fn each(&self, f: &mut dyn FnMut(&str, &Value)) {
        self.iter().for_each(|(k, v)| f(k, v));
    }
    fn to_row(&self) -> Row {
        self.clone()
    }
}

/// A compiled expression.
#[derive(Debug)]
pub(crate) enum CExpr {
    Lit(Value),
    Field(Box<str>),
    Row,
    Arrow(Box<CExpr>, Box<str>),
    Index(Box<CExpr>, Box<CExpr>),
    Slice(Box<CExpr>, Option<Box<CExpr>>, Option<Box<CExpr>>),
    Neg(Box<CExpr>),
    Not(Box<CExpr>),
    Bin(BinaryOp, Box<CExpr>, Box<CExpr>),
    Between(Box<CExpr>, Box<CExpr>, Box<CExpr>, bool),
    In(Box<CExpr>, Vec<CExpr>, bool),
    Like(Box<CExpr>, Like, bool),
    IsNull(Box<CExpr>, bool),
    Case(Option<Box<CExpr>>, Vec<(CExpr, CExpr)>, Option<Box<CExpr>>),
    Scalar(&'static Scalar, Vec<CExpr>),
    Agg(usize),
    MetaTopic,
    MetaTimestamp,
    MetaAll,
    WindowStart,
    WindowEnd,
    /// `event_time()`: the window's end, else the event time field (or the meta time).
    EventTime(Option<Box<str>>),
    /// `last_hit_count()` and the like: which hits, and the time (else the count).
    Hit(HitOf, bool),
    /// A stateful function call site (detectors, pattern sets, analytic functions).
    Stateful(Box<crate::state::Site>),
    /// The result of a site evaluated ahead of WHERE.
    Cached(usize),
}

/// Whose hits `last_hit_*` and `last_agg_hit_*` read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HitOf {
    Rule,
    When,
    Agg,
}

/// A LIKE pattern: constant (parsed once) or computed per row.
#[derive(Debug)]
pub(crate) enum Like {
    Const(ops::LikePattern),
    Dyn(Box<CExpr>),
}

type R<'a> = Result<Cow<'a, Value>, SqlError>;

const NULL: Value = Value::Null;

fn owned<'a>(v: Value) -> R<'a> {
    Ok(Cow::Owned(v))
}

impl CExpr {
    /// Evaluates to a boolean for WHERE, HAVING and FILTER: only TRUE passes.
    pub(crate) fn test(&self, cx: &Ctx<'_>, st: &mut States) -> Result<bool, SqlError> {
        match &*self.eval(cx, st)? {
            Value::Bool(b) => Ok(*b),
            Value::Null => Ok(false),
            v => Err(SqlError::Eval(format!("condition is not a boolean: {v:?}"))),
        }
    }

    /// Evaluates the expression, borrowing from the row or the plan where it can.
    pub(crate) fn eval<'a>(&'a self, cx: &Ctx<'a>, st: &mut States) -> R<'a> {
        match self {
            CExpr::Lit(v) => Ok(Cow::Borrowed(v)),
            CExpr::Field(name) => Ok(Cow::Borrowed(cx.row.field(name).unwrap_or(&NULL))),
            CExpr::Row => owned(Value::Object(cx.row.to_row())),
            CExpr::Arrow(e, name) => match e.eval(cx, st)? {
                Cow::Borrowed(Value::Object(o)) => {
                    Ok(Cow::Borrowed(o.get(&**name).unwrap_or(&NULL)))
                }
                Cow::Owned(Value::Object(mut o)) => owned(o.remove(&**name).unwrap_or_default()),
                v if v.is_null() => owned(Value::Null),
                v => Err(SqlError::Eval(format!("-> {name} on a non-struct: {v:?}"))),
            },
            CExpr::Index(e, i) => {
                let i = i.eval(cx, st)?;
                let v = e.eval(cx, st)?;
                if v.is_null() || i.is_null() {
                    return owned(Value::Null);
                }
                match (v, &*i) {
                    (Cow::Borrowed(Value::Array(a)), Value::Int(i)) => {
                        Ok(Cow::Borrowed(ops::index(a, *i)?))
                    }
                    (Cow::Owned(Value::Array(a)), Value::Int(i)) => {
                        owned(ops::index(&a, *i)?.clone())
                    }
                    (Cow::Borrowed(Value::Object(o)), Value::Str(k)) => {
                        Ok(Cow::Borrowed(o.get(k).unwrap_or(&NULL)))
                    }
                    (v, i) => Err(SqlError::Eval(format!("cannot index {v:?} by {i:?}"))),
                }
            }
            CExpr::Slice(e, lo, hi) => {
                let v = e.eval(cx, st)?;
                let lo = match lo {
                    Some(x) => Some(x.eval(cx, st)?.into_owned()),
                    None => None,
                };
                let hi = match hi {
                    Some(x) => Some(x.eval(cx, st)?.into_owned()),
                    None => None,
                };
                owned(ops::slice(&v, lo.as_ref(), hi.as_ref())?)
            }
            CExpr::Neg(e) => owned(ops::neg(&*e.eval(cx, st)?)?),
            CExpr::Not(e) => owned(match &*e.eval(cx, st)? {
                Value::Bool(b) => Value::Bool(!b),
                Value::Null => Value::Null,
                v => return Err(SqlError::Eval(format!("NOT of a non-boolean: {v:?}"))),
            }),
            CExpr::Bin(BinaryOp::And, l, r) => {
                let l = ops::truth(&*l.eval(cx, st)?)?;
                if l == Some(false) {
                    return owned(Value::Bool(false));
                }
                let r = ops::truth(&*r.eval(cx, st)?)?;
                owned(match (l, r) {
                    (_, Some(false)) => Value::Bool(false),
                    (Some(true), Some(true)) => Value::Bool(true),
                    _ => Value::Null,
                })
            }
            CExpr::Bin(BinaryOp::Or, l, r) => {
                let l = ops::truth(&*l.eval(cx, st)?)?;
                if l == Some(true) {
                    return owned(Value::Bool(true));
                }
                let r = ops::truth(&*r.eval(cx, st)?)?;
                owned(match (l, r) {
                    (_, Some(true)) => Value::Bool(true),
                    (Some(false), Some(false)) => Value::Bool(false),
                    _ => Value::Null,
                })
            }
            CExpr::Bin(op, l, r) => {
                let l = l.eval(cx, st)?;
                let r = r.eval(cx, st)?;
                owned(ops::binary(*op, &l, &r)?)
            }
            CExpr::Between(e, lo, hi, negated) => {
                let v = e.eval(cx, st)?;
                let lo = lo.eval(cx, st)?;
                let hi = hi.eval(cx, st)?;
                let ge = ops::binary(BinaryOp::Ge, &v, &lo)?;
                let le = ops::binary(BinaryOp::Le, &v, &hi)?;
                owned(match (ge, le) {
                    (Value::Bool(a), Value::Bool(b)) => Value::Bool((a && b) != *negated),
                    _ => Value::Null,
                })
            }
            CExpr::In(e, list, negated) => {
                let v = e.eval(cx, st)?;
                if v.is_null() {
                    return owned(Value::Null);
                }
                for x in list {
                    if ops::equal(&v, &*x.eval(cx, st)?) == Some(true) {
                        return owned(Value::Bool(!negated));
                    }
                }
                owned(Value::Bool(*negated))
            }
            CExpr::Like(e, pattern, negated) => {
                let v = e.eval(cx, st)?;
                let s = match &*v {
                    Value::Str(s) => s,
                    Value::Null => return owned(Value::Null),
                    v => return Err(SqlError::Eval(format!("LIKE on a non-string: {v:?}"))),
                };
                let hit = match pattern {
                    Like::Const(p) => p.matches(s),
                    Like::Dyn(p) => match &*p.eval(cx, st)? {
                        Value::Str(p) => ops::LikePattern::new(p).matches(s),
                        Value::Null => return owned(Value::Null),
                        v => return Err(SqlError::Eval(format!("LIKE pattern {v:?}"))),
                    },
                };
                owned(Value::Bool(hit != *negated))
            }
            CExpr::IsNull(e, negated) => owned(Value::Bool(e.eval(cx, st)?.is_null() != *negated)),
            CExpr::Case(operand, whens, otherwise) => {
                let op = match operand {
                    Some(o) => Some(o.eval(cx, st)?),
                    None => None,
                };
                for (w, then) in whens {
                    let w = w.eval(cx, st)?;
                    let hit = match &op {
                        Some(o) => ops::equal(o, &w) == Some(true),
                        None => ops::truth(&w)? == Some(true),
                    };
                    if hit {
                        return then.eval(cx, st);
                    }
                }
                match otherwise {
                    Some(e) => e.eval(cx, st),
                    None => owned(Value::Null),
                }
            }
            CExpr::Scalar(f, args) => {
                let vals = eval_args(args, cx, st)?;
                owned((f.call)(&vals)?)
            }
            CExpr::Agg(i) => Ok(Cow::Borrowed(&cx.aggs[*i])),
            CExpr::MetaTopic => owned(Value::Str(cx.topic.to_owned())),
            CExpr::MetaTimestamp => owned(Value::Int(cx.ts)),
            CExpr::MetaAll => owned(Value::Object(Row::from([
                ("topic".to_owned(), Value::Str(cx.topic.to_owned())),
                ("timestamp".to_owned(), Value::Int(cx.ts)),
            ]))),
            // eKuiper: 0 without a window.
            CExpr::WindowStart => owned(Value::Int(cx.window.map_or(0, |w| w.0))),
            CExpr::WindowEnd => owned(Value::Int(cx.window.map_or(0, |w| w.1))),
            CExpr::Hit(of, time) => {
                let h = st.hits;
                let (count, t) = match of {
                    HitOf::Rule => h.rule,
                    HitOf::When => h.when,
                    HitOf::Agg => h.agg,
                };
                owned(Value::Int(if *time { t } else { count }))
            }
            CExpr::EventTime(field) => match (cx.window, field) {
                (Some(w), _) => owned(Value::Int(w.1)),
                (None, Some(f)) => Ok(Cow::Borrowed(cx.row.field(f).unwrap_or(&NULL))),
                (None, None) => owned(Value::Int(cx.ts)),
            },
            CExpr::Stateful(site) => owned(st.call(site, cx)?),
            CExpr::Cached(i) => owned(st.cache[*i].clone()),
        }
    }
}

/// Evaluates arguments into owned values (what a function call takes).
pub(crate) fn eval_args(
    args: &[CExpr],
    cx: &Ctx<'_>,
    st: &mut States,
) -> Result<Vec<Value>, SqlError> {
    args.iter()
        .map(|a| a.eval(cx, st).map(Cow::into_owned))
        .collect()
}
