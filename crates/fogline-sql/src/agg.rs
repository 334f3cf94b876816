//! Aggregates over a group's rows, computed exactly at emit time: sums of `bigint`s stay
//! `bigint`, NULLs are ignored (as eKuiper's aggregate docs state), `FILTER (WHERE ..)`
//! narrows the rows.

use std::cmp::Ordering;

use crate::error::SqlError;
use crate::eval::{CExpr, Ctx, Fields};
use crate::ops;
use crate::state::States;
use crate::value::{Row, Value};
use crate::window::Rec;

/// The aggregate functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AggKind {
    Count,
    Sum,
    Avg,
    Min,
    Max,
    Stddev,
    Stddevs,
    Var,
    Vars,
    Median,
    PercentileCont,
    PercentileDisc,
    Collect,
    MergeAgg,
    Deduplicate,
    LastValue,
}

impl AggKind {
    /// The aggregate of that name, with its (min, max) argument counts.
    pub(crate) fn by_name(name: &str) -> Option<(AggKind, usize, usize)> {
        use AggKind::*;
        Some(match name {
            "count" => (Count, 1, 1),
            "sum" => (Sum, 1, 1),
            "avg" => (Avg, 1, 1),
            "min" => (Min, 1, 1),
            "max" => (Max, 1, 1),
            "stddev" => (Stddev, 1, 1),
            "stddevs" => (Stddevs, 1, 1),
            "var" => (Var, 1, 1),
            "vars" => (Vars, 1, 1),
            "median" => (Median, 1, 1),
            "percentile" | "percentile_cont" => (PercentileCont, 2, 2),
            "percentile_disc" => (PercentileDisc, 2, 2),
            "collect" => (Collect, 1, 1),
            "merge_agg" => (MergeAgg, 1, 1),
            "deduplicate" => (Deduplicate, 2, 2),
            "last_value" => (LastValue, 2, 2),
            _ => return None,
        })
    }
}

/// One aggregate of a rule.
#[derive(Debug)]
pub(crate) struct AggSpec {
    pub kind: AggKind,
    /// The column; `None` for `*`.
    pub arg: Option<CExpr>,
    /// The constant second argument (percentile, `all`, `ignoreNull`).
    pub param: Value,
    /// `FILTER (WHERE ..)`.
    pub filter: Option<CExpr>,
}

fn ctx<'a>(r: &'a Rec, window: Option<(i64, i64)>) -> Ctx<'a> {
    Ctx {
        row: &r.row,
        topic: &r.topic,
        ts: r.meta_ts,
        window,
        aggs: &[],
    }
}

impl AggSpec {
    /// The aggregate over a group's rows.
    pub(crate) fn compute(
        &self,
        rows: &[&Rec],
        window: Option<(i64, i64)>,
        st: &mut States,
    ) -> Result<Value, SqlError> {
        // The rows passing FILTER, with the argument's value (the whole row for `*`).
        let mut vals: Vec<Value> = Vec::with_capacity(rows.len());
        let mut kept: Vec<&Rec> = Vec::new();
        for r in rows {
            let cx = ctx(r, window);
            if let Some(f) = &self.filter {
                if !f.test(&cx, st)? {
                    continue;
                }
            }
            vals.push(match &self.arg {
                Some(a) => a.eval(&cx, st)?.into_owned(),
                None => Value::Object(r.row.to_row()),
            });
            kept.push(r);
        }
        use AggKind::*;
        let nonnull = || vals.iter().filter(|v| !v.is_null());
        Ok(match self.kind {
            Count => Value::Int(match self.arg {
                None => vals.len(),
                Some(_) => nonnull().count(),
            } as i64),
            Sum => sum(nonnull())?,
            Avg => {
                let n = nonnull().count();
                match sum(nonnull())? {
                    Value::Null => Value::Null,
                    s => Value::Float(s.as_f64().unwrap_or(f64::NAN) / n as f64),
                }
            }
            Min | Max => {
                let mut best: Option<&Value> = None;
                for v in nonnull() {
                    let o = match best {
                        None => Ordering::Equal,
                        Some(b) => ops::compare(v, b).ok_or_else(|| {
                            SqlError::Eval(format!("cannot compare {v:?} and {b:?}"))
                        })?,
                    };
                    let better = if self.kind == Min {
                        o == Ordering::Less
                    } else {
                        o == Ordering::Greater
                    };
                    if best.is_none() || better {
                        best = Some(v);
                    }
                }
                best.cloned().unwrap_or_default()
            }
            Stddev | Stddevs | Var | Vars => {
                let xs = numbers(nonnull())?;
                let sample = matches!(self.kind, Stddevs | Vars);
                let n = xs.len();
                if n == 0 || (sample && n < 2) {
                    return Ok(Value::Null);
                }
                let mean = xs.iter().sum::<f64>() / n as f64;
                let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
                let var = ss / if sample { n - 1 } else { n } as f64;
                Value::Float(if matches!(self.kind, Stddev | Stddevs) {
                    var.sqrt()
                } else {
                    var
                })
            }
            Median | PercentileCont | PercentileDisc => {
                let p = match self.kind {
                    Median => 0.5,
                    _ => self.param.as_f64().unwrap_or(0.5).clamp(0.0, 1.0),
                };
                let mut xs = numbers(nonnull())?;
                if xs.is_empty() {
                    return Ok(Value::Null);
                }
                let n = xs.len();
                if self.kind == PercentileDisc {
                    // The first value whose cumulative share reaches p, of its own type.
                    let mut vs: Vec<(f64, &Value)> = xs.iter().copied().zip(nonnull()).collect();
                    vs.sort_by(|a, b| a.0.total_cmp(&b.0));
                    let k = ((p * n as f64).ceil() as usize).clamp(1, n);
                    vs[k - 1].1.clone()
                } else {
                    xs.sort_by(f64::total_cmp);
                    let pos = p * (n - 1) as f64;
                    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
                    Value::Float(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo as f64))
                }
            }
            Collect => Value::Array(vals),
            MergeAgg => {
                let mut out = Row::new();
                for v in vals {
                    if let Value::Object(o) = v {
                        out.extend(o);
                    }
                }
                Value::Object(out)
            }
            Deduplicate => {
                // Keyed by the column; `all` returns every first occurrence's row, else the
                // latest row unless its key was seen before in the group.
                let all = self.param == Value::Bool(true);
                let mut seen: Vec<&Value> = Vec::new();
                let mut out = Vec::new();
                let mut last_new = false;
                for (v, r) in vals.iter().zip(&kept) {
                    last_new = !seen
                        .iter()
                        .any(|s| ops::equal(s, v) == Some(true) || *s == v);
                    if last_new {
                        seen.push(v);
                        if all {
                            out.push(Value::Object(r.row.to_row()));
                        }
                    }
                }
                if all {
                    Value::Array(out)
                } else if last_new {
                    kept.last()
                        .map_or(Value::Null, |r| Value::Object(r.row.to_row()))
                } else {
                    Value::Null
                }
            }
            LastValue => {
                let ignore_null = self.param == Value::Bool(true);
                let mut it = vals.into_iter().rev();
                if ignore_null {
                    it.find(|v| !v.is_null()).unwrap_or_default()
                } else {
                    it.next().unwrap_or_default()
                }
            }
        })
    }
}

fn sum<'a>(vals: impl Iterator<Item = &'a Value>) -> Result<Value, SqlError> {
    let mut acc: Option<Value> = None;
    for v in vals {
        acc = Some(match (acc, v) {
            (None, Value::Int(i)) => Value::Int(*i),
            (None, Value::Float(f)) => Value::Float(*f),
            (Some(Value::Int(a)), Value::Int(b)) => match a.checked_add(*b) {
                Some(s) => Value::Int(s),
                None => Value::Float(a as f64 + *b as f64),
            },
            (Some(a), b) if b.as_f64().is_some() => {
                Value::Float(a.as_f64().unwrap_or(f64::NAN) + b.as_f64().unwrap_or(f64::NAN))
            }
            (_, v) => return Err(SqlError::Eval(format!("cannot sum {v:?}"))),
        });
    }
    Ok(acc.unwrap_or_default())
}

fn numbers<'a>(vals: impl Iterator<Item = &'a Value>) -> Result<Vec<f64>, SqlError> {
    vals.map(|v| {
        v.as_f64()
            .ok_or_else(|| SqlError::Eval(format!("not a number: {v:?}")))
    })
    .collect()
}
