//! eKuiper's analytic functions (docs/en_US/sqls/functions/analytic_functions.md): state
//! across records per partition: `lag`, `latest`, `changed_col`, `had_changed`, `acc_*`.
//! With `OVER (WHEN ..)` false, the state is not updated and its saved value is returned.

use std::collections::VecDeque;

use crate::ast::Expr;
use crate::error::SqlError;
use crate::ops;
use crate::value::Value;

/// An analytic function and its constant arguments.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum AnKind {
    Lag { offset: usize, ignore_null: bool },
    Latest,
    ChangedCol { ignore_null: bool },
    HadChanged { ignore_null: bool },
    AccSum,
    AccMin,
    AccMax,
    AccCount,
    AccAvg,
}

/// The state of one partition.
#[derive(Debug, Default)]
pub(crate) struct AnState {
    pub(crate) hist: VecDeque<Value>,
    pub(crate) prev: Vec<Option<Value>>,
    pub(crate) acc: Value,
    pub(crate) n: u64,
}

fn constant<'e>(name: &str, e: Option<&'e Expr>) -> Result<Option<&'e Value>, SqlError> {
    match e {
        None => Ok(None),
        Some(Expr::Literal(v)) => Ok(Some(v)),
        Some(_) => Err(SqlError::Plan(format!(
            "{name}: argument must be a constant"
        ))),
    }
}

fn flag(name: &str, e: Option<&Expr>) -> Result<bool, SqlError> {
    match constant(name, e)? {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(SqlError::Plan(format!("{name}: {v:?} is not a boolean"))),
    }
}

/// The analytic function of that name: its kind, arity and the indices of the arguments
/// evaluated per row (the others are constants). `None`: not an analytic function.
#[allow(clippy::type_complexity)]
pub(crate) fn by_name(
    name: &str,
    args: &[Expr],
) -> Option<Result<(AnKind, usize, usize, Vec<usize>), SqlError>> {
    let k = match name {
        "lag" => (|| {
            let offset = match constant(name, args.get(1))? {
                None => 1,
                Some(Value::Int(i)) if (1..=1 << 20).contains(i) => *i as usize,
                Some(v) => return Err(SqlError::Plan(format!("lag: offset {v:?}"))),
            };
            let ignore_null = flag(name, args.get(3))?;
            let value_args = if args.len() >= 3 { vec![0, 2] } else { vec![0] };
            Ok((
                AnKind::Lag {
                    offset,
                    ignore_null,
                },
                1,
                4,
                value_args,
            ))
        })(),
        "latest" => Ok((AnKind::Latest, 1, 2, (0..args.len().min(2)).collect())),
        "changed_col" => flag(name, args.first())
            .map(|ignore_null| (AnKind::ChangedCol { ignore_null }, 2, 2, vec![1])),
        "had_changed" => flag(name, args.first()).map(|ignore_null| {
            let rest = (1..args.len()).collect();
            (AnKind::HadChanged { ignore_null }, 2, usize::MAX, rest)
        }),
        "acc_sum" => Ok((AnKind::AccSum, 1, 1, vec![0])),
        "acc_min" => Ok((AnKind::AccMin, 1, 1, vec![0])),
        "acc_max" => Ok((AnKind::AccMax, 1, 1, vec![0])),
        "acc_count" => Ok((AnKind::AccCount, 1, 1, vec![0])),
        "acc_avg" => Ok((AnKind::AccAvg, 1, 1, vec![0])),
        _ => return None,
    };
    Some(k)
}

fn same(a: &Value, b: &Value) -> bool {
    ops::equal(a, b).unwrap_or(a == b)
}

/// One row: `vals` are the evaluated arguments; `update` false under a failed WHEN.
pub(crate) fn step(
    kind: AnKind,
    st: &mut AnState,
    vals: &[Value],
    update: bool,
) -> Result<Value, SqlError> {
    let v = vals.first().cloned().unwrap_or_default();
    Ok(match kind {
        AnKind::Lag {
            offset,
            ignore_null,
        } => {
            let out = if st.hist.len() >= offset {
                st.hist[st.hist.len() - offset].clone()
            } else {
                vals.get(1).cloned().unwrap_or_default()
            };
            if update && !(ignore_null && v.is_null()) {
                st.hist.push_back(v);
                if st.hist.len() > offset {
                    st.hist.pop_front();
                }
            }
            out
        }
        AnKind::Latest => {
            if update && !v.is_null() {
                st.acc = v;
            }
            if st.acc.is_null() {
                vals.get(1).cloned().unwrap_or_default()
            } else {
                st.acc.clone()
            }
        }
        AnKind::ChangedCol { .. } | AnKind::HadChanged { .. } if !update => match kind {
            AnKind::HadChanged { .. } => Value::Bool(false),
            _ => Value::Null,
        },
        AnKind::ChangedCol { ignore_null } => {
            let prev = st.prev.first().and_then(|p| p.as_ref());
            if (ignore_null && v.is_null()) || prev.is_some_and(|p| same(p, &v)) {
                Value::Null
            } else {
                st.prev = vec![Some(v.clone())];
                v
            }
        }
        AnKind::HadChanged { ignore_null } => {
            st.prev.resize(vals.len(), None);
            let mut changed = false;
            for (p, v) in st.prev.iter_mut().zip(vals) {
                if (ignore_null && v.is_null()) || p.as_ref().is_some_and(|p| same(p, v)) {
                    continue;
                }
                changed = true;
                *p = Some(v.clone());
            }
            Value::Bool(changed)
        }
        AnKind::AccCount => {
            if update && !v.is_null() {
                st.n += 1;
            }
            Value::Int(st.n as i64)
        }
        AnKind::AccSum | AnKind::AccAvg | AnKind::AccMin | AnKind::AccMax => {
            if update && !v.is_null() {
                if v.as_f64().is_none() && kind != AnKind::AccMin && kind != AnKind::AccMax {
                    return Err(SqlError::Eval(format!("cannot accumulate {v:?}")));
                }
                st.n += 1;
                st.acc = match (&st.acc, kind) {
                    (Value::Null, _) => v,
                    (a, AnKind::AccMin | AnKind::AccMax) => {
                        let o = ops::compare(&v, a).ok_or_else(|| {
                            SqlError::Eval(format!("cannot compare {v:?} and {a:?}"))
                        })?;
                        let take = if kind == AnKind::AccMin {
                            o.is_lt()
                        } else {
                            o.is_gt()
                        };
                        if take {
                            v
                        } else {
                            a.clone()
                        }
                    }
                    (Value::Int(a), _) if matches!(v, Value::Int(_)) => {
                        let Value::Int(b) = v else { unreachable!() };
                        a.checked_add(b)
                            .map_or(Value::Float(*a as f64 + b as f64), Value::Int)
                    }
                    (a, _) => Value::Float(a.as_f64().unwrap_or(0.0) + v.as_f64().unwrap_or(0.0)),
                };
            }
            match kind {
                AnKind::AccAvg if st.n > 0 => {
                    Value::Float(st.acc.as_f64().unwrap_or(f64::NAN) / st.n as f64)
                }
                AnKind::AccAvg => Value::Null,
                _ => st.acc.clone(),
            }
        }
    })
}
