//! Operators on values: arithmetic, comparison, indexing, LIKE.

use std::cmp::Ordering;

use crate::ast::BinaryOp;
use crate::error::SqlError;
use crate::value::Value;

fn err(op: BinaryOp, l: &Value, r: &Value) -> SqlError {
    SqlError::Eval(format!("invalid operation {l:?} {op:?} {r:?}"))
}

/// `x op y` for every operator but AND and OR. NULL on either side gives NULL.
pub(crate) fn binary(op: BinaryOp, l: &Value, r: &Value) -> Result<Value, SqlError> {
    use BinaryOp::*;
    if l.is_null() || r.is_null() {
        return Ok(Value::Null);
    }
    match op {
        Add | Sub | Mul | Div | Mod => arith(op, l, r),
        BitAnd | BitOr | BitXor => match (l, r) {
            (Value::Int(a), Value::Int(b)) => Ok(Value::Int(match op {
                BitAnd => a & b,
                BitOr => a | b,
                _ => a ^ b,
            })),
            _ => Err(err(op, l, r)),
        },
        // Values of types that do not compare are an error, as in eKuiper.
        Eq | Ne if !comparable(l, r) => Err(err(op, l, r)),
        Eq => Ok(Value::Bool(equal(l, r) == Some(true))),
        Ne => Ok(Value::Bool(equal(l, r) != Some(true))),
        Lt | Le | Gt | Ge => {
            let o = compare(l, r).ok_or_else(|| err(op, l, r))?;
            Ok(Value::Bool(match op {
                Lt => o == Ordering::Less,
                Le => o != Ordering::Greater,
                Gt => o == Ordering::Greater,
                _ => o != Ordering::Less,
            }))
        }
        And | Or => unreachable!("AND and OR short-circuit in eval"),
    }
}

fn arith(op: BinaryOp, l: &Value, r: &Value) -> Result<Value, SqlError> {
    use BinaryOp::*;
    match (l, r) {
        (Value::Int(a), Value::Int(b)) => {
            let (a, b) = (*a, *b);
            if matches!(op, Div | Mod) && b == 0 {
                return Err(SqlError::Eval("division by zero".into()));
            }
            let v = match op {
                Add => a.checked_add(b),
                Sub => a.checked_sub(b),
                Mul => a.checked_mul(b),
                Div => a.checked_div(b),
                _ => a.checked_rem(b),
            };
            v.map(Value::Int)
                .ok_or_else(|| SqlError::Eval(format!("integer overflow in {a} {op:?} {b}")))
        }
        _ => {
            let (Some(a), Some(b)) = (l.as_f64(), r.as_f64()) else {
                return Err(err(op, l, r));
            };
            if matches!(op, Div | Mod) && b == 0.0 {
                return Err(SqlError::Eval("division by zero".into()));
            }
            Ok(Value::Float(match op {
                Add => a + b,
                Sub => a - b,
                Mul => a * b,
                Div => a / b,
                _ => a % b,
            }))
        }
    }
}

/// `-x`.
pub(crate) fn neg(v: &Value) -> Result<Value, SqlError> {
    match v {
        Value::Int(i) => i
            .checked_neg()
            .map(Value::Int)
            .ok_or_else(|| SqlError::Eval("integer overflow in negation".into())),
        Value::Float(f) => Ok(Value::Float(-f)),
        Value::Null => Ok(Value::Null),
        v => Err(SqlError::Eval(format!("cannot negate {v:?}"))),
    }
}

/// A boolean operand of AND/OR: NULL is unknown.
pub(crate) fn truth(v: &Value) -> Result<Option<bool>, SqlError> {
    match v {
        Value::Bool(b) => Ok(Some(*b)),
        Value::Null => Ok(None),
        v => Err(SqlError::Eval(format!("not a boolean: {v:?}"))),
    }
}

/// Equality with numbers compared numerically; `None` when either side is NULL.
pub(crate) fn equal(l: &Value, r: &Value) -> Option<bool> {
    match (l, r) {
        (Value::Null, _) | (_, Value::Null) => None,
        (Value::Int(a), Value::Int(b)) => Some(a == b),
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
            Some(l.as_f64() == r.as_f64())
        }
        _ => Some(l == r),
    }
}

/// True when `=` may compare the two (non-NULL) values.
fn comparable(l: &Value, r: &Value) -> bool {
    matches!(
        (l, r),
        (
            Value::Int(_) | Value::Float(_),
            Value::Int(_) | Value::Float(_)
        ) | (Value::Str(_), Value::Str(_))
            | (Value::Bool(_), Value::Bool(_))
            | (Value::Bytes(_), Value::Bytes(_))
            | (Value::Array(_), Value::Array(_))
            | (Value::Object(_), Value::Object(_))
    )
}

/// Order of two values of comparable types (numbers, strings, booleans, bytes).
pub(crate) fn compare(l: &Value, r: &Value) -> Option<Ordering> {
    match (l, r) {
        (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
            l.as_f64()?.partial_cmp(&r.as_f64()?)
        }
        (Value::Str(a), Value::Str(b)) => Some(a.cmp(b)),
        (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        (Value::Bytes(a), Value::Bytes(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

/// A total order for ORDER BY: NULL first, then by type, then by value.
pub(crate) fn sort_order(l: &Value, r: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) | Value::Float(_) => 2,
            Value::Str(_) => 3,
            Value::Bytes(_) => 4,
            Value::Array(_) => 5,
            Value::Object(_) => 6,
        }
    }
    compare(l, r).unwrap_or_else(|| rank(l).cmp(&rank(r)))
}

/// `a[i]`, negative from the end; out of range is an error as in eKuiper.
pub(crate) fn index(a: &[Value], i: i64) -> Result<&Value, SqlError> {
    let n = a.len() as i64;
    let j = if i < 0 { n + i } else { i };
    if (0..n).contains(&j) {
        Ok(&a[j as usize])
    } else {
        Err(SqlError::Eval(format!(
            "index {i} out of range (length {n})"
        )))
    }
}

/// `a[lo:hi]` on an array or a string; bounds may be negative and are clamped.
pub(crate) fn slice(v: &Value, lo: Option<&Value>, hi: Option<&Value>) -> Result<Value, SqlError> {
    let bound = |b: Option<&Value>, n: i64, dflt: i64| -> Result<i64, SqlError> {
        match b {
            None | Some(Value::Null) => Ok(dflt),
            Some(Value::Int(i)) => Ok((if *i < 0 { n + i } else { *i }).clamp(0, n)),
            Some(v) => Err(SqlError::Eval(format!("slice bound {v:?}"))),
        }
    };
    match v {
        Value::Null => Ok(Value::Null),
        Value::Array(a) => {
            let n = a.len() as i64;
            let (l, h) = (bound(lo, n, 0)?, bound(hi, n, n)?);
            Ok(Value::Array(if l < h {
                a[l as usize..h as usize].to_vec()
            } else {
                Vec::new()
            }))
        }
        Value::Str(s) => {
            let chars: Vec<char> = s.chars().collect();
            let n = chars.len() as i64;
            let (l, h) = (bound(lo, n, 0)?, bound(hi, n, n)?);
            Ok(Value::Str(if l < h {
                chars[l as usize..h as usize].iter().collect()
            } else {
                String::new()
            }))
        }
        v => Err(SqlError::Eval(format!("cannot slice {v:?}"))),
    }
}

/// A LIKE pattern: `%` any run, `_` one character, `\` escapes the next.
#[derive(Debug, Clone)]
pub(crate) struct LikePattern(Vec<Tok>);

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Any,
    One,
    Ch(char),
}

impl LikePattern {
    pub(crate) fn new(p: &str) -> LikePattern {
        let mut out = Vec::new();
        let mut it = p.chars();
        while let Some(c) = it.next() {
            out.push(match c {
                '%' => Tok::Any,
                '_' => Tok::One,
                '\\' => Tok::Ch(it.next().unwrap_or('\\')),
                c => Tok::Ch(c),
            });
        }
        LikePattern(out)
    }

    /// Whole-string match, backtracking only to the last `%` (linear in practice).
    pub(crate) fn matches(&self, s: &str) -> bool {
        let s: Vec<char> = s.chars().collect();
        let p = &self.0;
        let (mut i, mut j) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while i < s.len() {
            match p.get(j) {
                Some(Tok::Any) => {
                    star = Some((j, i));
                    j += 1;
                }
                Some(Tok::One) => {
                    i += 1;
                    j += 1;
                }
                Some(Tok::Ch(c)) if *c == s[i] => {
                    i += 1;
                    j += 1;
                }
                _ => match star {
                    Some((sj, si)) => {
                        j = sj + 1;
                        i = si + 1;
                        star = Some((sj, si + 1));
                    }
                    None => return false,
                },
            }
        }
        p[j..].iter().all(|t| *t == Tok::Any)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_handles_runs_singles_and_escapes() {
        let m = |p: &str, s: &str| LikePattern::new(p).matches(s);
        assert!(m("a%", "abc"));
        assert!(m("%c", "abc"));
        assert!(m("a_c", "abc"));
        assert!(!m("a_c", "abbc"));
        assert!(m("%b%", "abc"));
        assert!(m("a\\%", "a%"));
        assert!(!m("a\\%", "ab"));
        assert!(m("%", ""));
        assert!(m("%a%b%", "xxaxxbxx"));
        assert!(!m("%a%b", "xxaxxbxx"));
    }

    #[test]
    fn arithmetic_keeps_ints_and_floats_apart() {
        use BinaryOp::*;
        let i = Value::Int;
        assert_eq!(binary(Div, &i(7), &i(2)).unwrap(), i(3));
        assert_eq!(binary(Div, &i(-7), &i(2)).unwrap(), i(-3));
        assert_eq!(
            binary(Add, &i(1), &Value::Float(2.0)).unwrap(),
            Value::Float(3.0)
        );
        assert!(binary(Div, &i(1), &i(0)).is_err());
        assert!(binary(Add, &Value::Str("a".into()), &Value::Str("b".into())).is_err());
        assert_eq!(binary(Add, &i(1), &Value::Null).unwrap(), Value::Null);
        assert_eq!(
            binary(Lt, &i(1), &Value::Float(1.5)).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            binary(Eq, &i(2), &Value::Float(2.0)).unwrap(),
            Value::Bool(true)
        );
    }

    #[test]
    fn indexes_and_slices_count_from_the_end() {
        let a: Vec<Value> = (0..5).map(Value::Int).collect();
        assert_eq!(index(&a, -1).unwrap(), &Value::Int(4));
        assert!(index(&a, 5).is_err());
        let arr = Value::Array(a);
        assert_eq!(
            slice(&arr, Some(&Value::Int(1)), Some(&Value::Int(-1))).unwrap(),
            Value::Array(vec![Value::Int(1), Value::Int(2), Value::Int(3)])
        );
        assert_eq!(
            slice(&arr, None, Some(&Value::Int(2))).unwrap(),
            Value::Array(vec![Value::Int(0), Value::Int(1)])
        );
    }
}
