//! Syntax tree to compiled expressions: names checked and resolved once, at plan time.

use crate::agg::{AggKind, AggSpec};
use crate::ast::{self, Expr, UnaryOp};
use crate::error::SqlError;
use crate::eval::{CExpr, HitOf, Like};
use crate::ops::LikePattern;
use crate::project::{Changed, OutField};
use crate::state::{Site, SiteKind};
use crate::value::{Row, Value};

fn plan_err(msg: String) -> SqlError {
    SqlError::Plan(msg)
}

/// Where output aliases stand for their expressions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Aliases {
    /// Nowhere (WHERE, GROUP BY, the window's clauses).
    Off,
    /// For names the stream's schema does not declare (the SELECT list).
    Undeclared,
    /// Before fields (HAVING, ORDER BY).
    On,
}

/// Compiles the expressions of one rule.
pub(crate) struct Compiler<'a> {
    stream: &'a str,
    alias: Option<&'a str>,
    /// Declared field names; `None` for a schemaless stream.
    schema: Option<Vec<&'a str>>,
    /// Output aliases, usable in HAVING and ORDER BY.
    aliases: Vec<(&'a str, &'a Expr)>,
    group_by: &'a [Expr],
    /// Aggregates allowed in the clause being compiled.
    pub allow_aggs: bool,
    /// Where output aliases resolve in the clause being compiled.
    pub aliases_in: Aliases,
    /// Aliases being expanded (not to be expanded within themselves).
    expanding: Vec<&'a str>,
    in_agg: bool,
    /// The aggregates found.
    pub aggs: Vec<AggSpec>,
    /// Stateful call sites found.
    pub sites: usize,
    /// Field names read, and whether the whole row is.
    pub fields_read: Vec<String>,
    pub reads_row: bool,
    /// The event time field, in event time.
    pub event_field: Option<String>,
    /// Analytic calls compiled now are evaluated ahead of WHERE (eKuiper's order).
    pub pre_eval: bool,
    /// Compiling a sliding window's `OVER (WHEN ..)`.
    pub in_when: bool,
    /// Those sites, in evaluation order.
    pub pre_sites: Vec<Site>,
}

impl<'a> Compiler<'a> {
    pub(crate) fn new(select: &'a ast::Select, stream: &'a ast::StreamDef) -> Compiler<'a> {
        let schema = (!stream.fields.is_empty())
            .then(|| stream.fields.iter().map(|f| f.name.as_str()).collect());
        Compiler {
            stream: &stream.name,
            alias: select.from_alias.as_deref(),
            schema,
            aliases: select
                .fields
                .iter()
                .filter_map(|f| Some((f.alias.as_deref()?, &f.expr)))
                .collect(),
            group_by: &select.group_by,
            allow_aggs: false,
            aliases_in: Aliases::Off,
            expanding: Vec::new(),
            in_agg: false,
            aggs: Vec::new(),
            sites: 0,
            fields_read: Vec::new(),
            reads_row: false,
            event_field: None,
            pre_eval: false,
            in_when: false,
            pre_sites: Vec::new(),
        }
    }

    fn check_stream(&self, s: &Option<String>) -> Result<(), SqlError> {
        match s {
            Some(s) if !s.eq_ignore_ascii_case(self.stream) && Some(s.as_str()) != self.alias => {
                Err(plan_err(format!("unknown stream '{s}'")))
            }
            _ => Ok(()),
        }
    }

    fn boxed(&mut self, e: &Expr) -> Result<Box<CExpr>, SqlError> {
        self.expr(e).map(Box::new)
    }

    /// Compiles one expression.
    pub(crate) fn expr(&mut self, e: &Expr) -> Result<CExpr, SqlError> {
        Ok(match e {
            Expr::Literal(v) => CExpr::Lit(v.clone()),
            Expr::Field { stream, name } => {
                self.check_stream(stream)?;
                let declared = self
                    .schema
                    .as_ref()
                    .is_none_or(|s| s.contains(&name.as_str()));
                // An output alias stands for its expression: in HAVING and ORDER BY, and in
                // the SELECT list for names the schema does not declare (eKuiper's
                // `lag(size) + 1 AS b, lag(b)`); never inside its own expansion.
                let aliases_here = match self.aliases_in {
                    Aliases::Off => false,
                    Aliases::Undeclared => self.schema.is_none() || !declared,
                    Aliases::On => true,
                };
                if aliases_here && stream.is_none() && !self.expanding.contains(&name.as_str()) {
                    let found = self.aliases.iter().find(|(n, _)| *n == name).copied();
                    if let Some((n, a)) = found {
                        self.expanding.push(n);
                        let e = self.expr(a);
                        self.expanding.pop();
                        return e;
                    }
                }
                if !declared {
                    return Err(plan_err(format!("unknown field '{name}'")));
                }
                self.fields_read.push(name.clone());
                CExpr::Field(name.as_str().into())
            }
            Expr::Wildcard { stream } => {
                self.check_stream(stream)?;
                self.reads_row = true;
                CExpr::Row
            }
            Expr::Arrow(e, name) => CExpr::Arrow(self.boxed(e)?, name.as_str().into()),
            Expr::Index(e, i) => CExpr::Index(self.boxed(e)?, self.boxed(i)?),
            Expr::Slice(e, lo, hi) => CExpr::Slice(
                self.boxed(e)?,
                lo.as_deref().map(|x| self.boxed(x)).transpose()?,
                hi.as_deref().map(|x| self.boxed(x)).transpose()?,
            ),
            Expr::Unary(UnaryOp::Neg, e) => CExpr::Neg(self.boxed(e)?),
            Expr::Unary(UnaryOp::Not, e) => CExpr::Not(self.boxed(e)?),
            Expr::Binary(op, l, r) => CExpr::Bin(*op, self.boxed(l)?, self.boxed(r)?),
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => CExpr::Between(
                self.boxed(expr)?,
                self.boxed(low)?,
                self.boxed(high)?,
                *negated,
            ),
            Expr::In {
                expr,
                list,
                negated,
            } => CExpr::In(
                self.boxed(expr)?,
                list.iter()
                    .map(|x| self.expr(x))
                    .collect::<Result<_, _>>()?,
                *negated,
            ),
            Expr::Like {
                expr,
                pattern,
                negated,
            } => {
                let p = match &**pattern {
                    Expr::Literal(Value::Str(p)) => Like::Const(LikePattern::new(p)),
                    p => Like::Dyn(self.boxed(p)?),
                };
                CExpr::Like(self.boxed(expr)?, p, *negated)
            }
            Expr::IsNull { expr, negated } => CExpr::IsNull(self.boxed(expr)?, *negated),
            Expr::Case {
                operand,
                whens,
                otherwise,
            } => CExpr::Case(
                operand.as_deref().map(|x| self.boxed(x)).transpose()?,
                whens
                    .iter()
                    .map(|(w, t)| Ok((self.expr(w)?, self.expr(t)?)))
                    .collect::<Result<_, SqlError>>()?,
                otherwise.as_deref().map(|x| self.boxed(x)).transpose()?,
            ),
            Expr::Call(c) => self.call(c)?,
        })
    }

    fn arity(name: &str, n: usize, min: usize, max: usize) -> Result<(), SqlError> {
        if n < min || n > max {
            let want = if min == max {
                format!("{min}")
            } else if max == usize::MAX {
                format!("at least {min}")
            } else {
                format!("{min} to {max}")
            };
            return Err(plan_err(format!(
                "function {name} takes {want} arguments, got {n}"
            )));
        }
        Ok(())
    }

    fn call(&mut self, c: &ast::Call) -> Result<CExpr, SqlError> {
        let name = c.name.as_str();
        let n = c.args.len();
        match name {
            "meta" => {
                Self::arity(name, n, 1, 1)?;
                return Ok(match &c.args[0] {
                    Expr::Wildcard { .. } => CExpr::MetaAll,
                    Expr::Field { name, .. } if name.eq_ignore_ascii_case("topic") => {
                        CExpr::MetaTopic
                    }
                    Expr::Field { name, .. } if name.eq_ignore_ascii_case("timestamp") => {
                        CExpr::MetaTimestamp
                    }
                    _ => CExpr::Lit(Value::Null),
                });
            }
            "event_time" => {
                // A window's end over its results (as eKuiper's window tests show); else the
                // record's TIMESTAMP field in event time, or its receipt.
                Self::arity(name, n, 0, 0)?;
                return Ok(CExpr::EventTime(
                    self.event_field.as_deref().map(Into::into),
                ));
            }
            "mqtt" => {
                Self::arity(name, n, 1, 1)?;
                return Ok(match &c.args[0] {
                    Expr::Field { name, .. } if name.eq_ignore_ascii_case("topic") => {
                        CExpr::MetaTopic
                    }
                    _ => CExpr::Lit(Value::Null),
                });
            }
            "last_hit_count" | "last_hit_time" | "last_agg_hit_count" | "last_agg_hit_time" => {
                Self::arity(name, n, 0, 0)?;
                let of = if name.contains("agg") {
                    if !self.allow_aggs {
                        return Err(plan_err(format!(
                            "{name} is only allowed in the SELECT list and HAVING of a rule \
                             with a window"
                        )));
                    }
                    HitOf::Agg
                } else if self.in_when {
                    HitOf::When
                } else {
                    HitOf::Rule
                };
                return Ok(CExpr::Hit(of, name.ends_with("time")));
            }
            "window_start" | "window_end" => {
                Self::arity(name, n, 0, 0)?;
                return Ok(if name == "window_start" {
                    CExpr::WindowStart
                } else {
                    CExpr::WindowEnd
                });
            }
            _ => {}
        }
        if let Some((kind, min, max)) = AggKind::by_name(name) {
            Self::arity(name, n, min, max)?;
            if !self.allow_aggs {
                return Err(plan_err(format!(
                    "aggregate function {name} is only allowed in the SELECT list and HAVING \
                     of a rule with a window"
                )));
            }
            if self.in_agg {
                return Err(plan_err(format!("aggregate {name} inside an aggregate")));
            }
            self.in_agg = true;
            let arg = match &c.args[0] {
                Expr::Wildcard { stream }
                    if matches!(kind, AggKind::Count | AggKind::Collect | AggKind::MergeAgg) =>
                {
                    self.check_stream(stream)?;
                    self.reads_row |= kind != AggKind::Count;
                    None
                }
                a => Some(self.expr(a)?),
            };
            let param = match c.args.get(1) {
                None => Value::Null,
                Some(Expr::Literal(v)) => v.clone(),
                Some(_) => {
                    return Err(plan_err(format!(
                        "the second argument of {name} must be a constant"
                    )))
                }
            };
            let filter = c.filter.as_deref().map(|f| self.expr(f)).transpose()?;
            self.in_agg = false;
            self.aggs.push(AggSpec {
                kind,
                arg,
                param,
                filter,
            });
            return Ok(CExpr::Agg(self.aggs.len() - 1));
        }
        let lit = |i: usize| match c.args.get(i) {
            Some(Expr::Literal(Value::Str(s))) => Ok(s.clone()),
            _ => Err(plan_err(format!(
                "argument {} of {name} must be a string constant",
                i + 1
            ))),
        };
        let mut value_args = vec![0];
        let kind = match name {
            _ if crate::analytic::by_name(name, &c.args).is_some() => {
                let (k, min, max, vals) =
                    crate::analytic::by_name(name, &c.args).expect("is analytic")?;
                Self::arity(name, n, min, max)?;
                value_args = vals;
                SiteKind::Analytic(k)
            }
            "anomaly_score" | "is_anomaly" => {
                Self::arity(name, n, 2, if name == "is_anomaly" { 3 } else { 2 })?;
                let det = lit(1)?;
                if fogline_detect::by_name(&det).is_none() {
                    return Err(plan_err(format!(
                        "unknown detector '{det}' (known: {})",
                        fogline_detect::DETECTOR_NAMES.join(", ")
                    )));
                }
                if name == "anomaly_score" {
                    SiteKind::Score(det)
                } else {
                    let th = match c.args.get(2) {
                        None => 0.5,
                        Some(Expr::Literal(v)) if v.as_f64().is_some() => v.as_f64().unwrap_or(0.5),
                        Some(_) => {
                            return Err(plan_err("is_anomaly's threshold must be a number".into()))
                        }
                    };
                    SiteKind::IsAnomaly(det, th)
                }
            }
            "match_count" | "matches" => {
                Self::arity(name, n, 2, 2)?;
                if name == "match_count" {
                    SiteKind::MatchCount(lit(1)?)
                } else {
                    SiteKind::Matches(lit(1)?)
                }
            }
            _ => {
                let f = crate::func::scalar(name)
                    .ok_or_else(|| plan_err(format!("unknown function {name}")))?;
                Self::arity(name, n, f.min_args, f.max_args)?;
                let args = c
                    .args
                    .iter()
                    .map(|a| self.expr(a))
                    .collect::<Result<_, _>>()?;
                return Ok(CExpr::Scalar(f, args));
            }
        };
        let keys = if c.partition_by.is_empty() {
            self.group_by
        } else {
            &c.partition_by
        };
        let args = value_args
            .iter()
            .map(|&i| self.expr(&c.args[i]))
            .collect::<Result<_, _>>()?;
        let partition = keys
            .iter()
            .map(|k| self.expr(k))
            .collect::<Result<_, _>>()?;
        let when = c.when.as_deref().map(|w| self.expr(w)).transpose()?;
        // The id after the arguments': calls nested in them have their own.
        let site = Site {
            id: self.sites,
            kind,
            args,
            partition,
            when,
        };
        self.sites += 1;
        if self.pre_eval && matches!(site.kind, SiteKind::Analytic(_)) {
            self.pre_sites.push(site);
            return Ok(CExpr::Cached(self.pre_sites.len() - 1));
        }
        Ok(CExpr::Stateful(Box::new(site)))
    }
}

/// The output name of an unaliased field, as eKuiper names it: the field's name, the
/// function's name, else `kuiper_field_<n>` counting such fields.
pub(crate) fn default_name(e: &Expr, unnamed: &mut usize) -> String {
    match e {
        Expr::Field { name, .. } => name.clone(),
        Expr::Call(c) => c.name.clone(),
        _ => {
            let n = format!("kuiper_field_{unnamed}");
            *unnamed += 1;
            n
        }
    }
}

/// `changed_cols(prefix, ignoreNull, cols..)` of the SELECT list.
pub(crate) fn changed_cols(
    c: &mut Compiler<'_>,
    call: &ast::Call,
    unnamed: &mut usize,
) -> Result<OutField, SqlError> {
    let bad = || SqlError::Plan("changed_cols(prefix, ignoreNull, cols..): bad arguments".into());
    let (prefix, ignore_null) = match &call.args[..] {
        [ast::Expr::Literal(Value::Str(p)), ast::Expr::Literal(Value::Bool(b)), _, ..] => {
            (p.clone(), *b)
        }
        _ => return Err(bad()),
    };
    let cols = call.args[2..]
        .iter()
        .map(|e| match e {
            ast::Expr::Wildcard { .. } => {
                c.expr(e)?;
                Ok(None)
            }
            e => Ok(Some((default_name(e, unnamed), c.expr(e)?))),
        })
        .collect::<Result<_, SqlError>>()?;
    Ok(OutField::Changed(Box::new(Changed {
        prefix,
        ignore_null,
        cols,
        prev: Row::new(),
    })))
}
