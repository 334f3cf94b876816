//! The stages after the window: GROUP BY, aggregates, HAVING, projection, ORDER BY, LIMIT.

use std::collections::HashMap;
use std::time::Instant;

use crate::agg::AggSpec;
use crate::error::SqlError;
use crate::eval::{CExpr, Ctx};
use crate::ops;
use crate::plan::{Emit, OperatorStats};
use crate::state::States;
use crate::value::{Row, Value};
use crate::window::Rec;

/// One output field.
#[derive(Debug)]
pub(crate) enum OutField {
    /// `*`: the row's fields.
    Wildcard,
    /// A named expression.
    Expr(String, CExpr),
    /// `changed_cols(prefix, ignoreNull, cols..)`: the columns whose value changed since
    /// the previous result, named with the prefix (eKuiper's multi-column function).
    Changed(Box<Changed>),
}

/// The columns and state of a `changed_cols`.
#[derive(Debug)]
pub(crate) struct Changed {
    pub prefix: String,
    pub ignore_null: bool,
    /// Named columns; `None` for `*` (every field of the row).
    pub cols: Vec<Option<(String, CExpr)>>,
    /// The values of the previous result, by column name.
    pub prev: Row,
}

impl Changed {
    fn column(&mut self, name: &str, v: Value, out: &mut Row) {
        if (self.ignore_null && v.is_null()) || self.prev.get(name) == Some(&v) {
            return;
        }
        self.prev.insert(name.to_owned(), v.clone());
        out.entry(format!("{}{name}", self.prefix)).or_insert(v);
    }
}

/// Stage indices in the stats.
pub(crate) const DECODE: usize = 0;
pub(crate) const FILTER: usize = 1;
pub(crate) const WINDOW: usize = 2;
pub(crate) const PROJECT: usize = 3;
pub(crate) const ORDER: usize = 4;

/// Everything but the window: what evaluates rows.
pub(crate) struct Core {
    pub fields: Vec<OutField>,
    /// WHERE before the window (or on each record without one).
    pub filter: Option<CExpr>,
    /// WHERE over a count window's rows (eKuiper does not push it below count windows).
    pub post_filter: Option<CExpr>,
    pub group_by: Vec<CExpr>,
    pub having: Option<CExpr>,
    pub order_by: Vec<(CExpr, bool)>,
    pub limit: Option<u64>,
    pub aggs: Vec<AggSpec>,
    pub states: States,
    /// Analytic sites evaluated on each record ahead of WHERE.
    pub pre: Vec<crate::state::Site>,
    pub stats: [OperatorStats; 5],
    /// Which records are timed for `stats`.
    pub sampler: crate::sample::Sampler,
}

impl Core {
    pub(crate) fn fail(&mut self, stage: usize, e: SqlError) -> SqlError {
        let s = &mut self.stats[stage];
        s.exceptions += 1;
        s.last_exception = Some(e.to_string());
        e
    }

    /// The output row of one row context.
    pub(crate) fn project(&mut self, cx: &Ctx<'_>) -> Result<Row, SqlError> {
        let mut out = Row::new();
        for f in &mut self.fields {
            match f {
                OutField::Changed(c) => {
                    for i in 0..c.cols.len() {
                        match &c.cols[i] {
                            Some((name, e)) => {
                                let v = e.eval(cx, &mut self.states)?.into_owned();
                                let name = name.clone();
                                c.column(&name, v, &mut out);
                            }
                            None => {
                                let mut all = Vec::new();
                                cx.row.each(&mut |k, v| all.push((k.to_owned(), v.clone())));
                                for (k, v) in all {
                                    c.column(&k, v, &mut out);
                                }
                            }
                        }
                    }
                }
                OutField::Wildcard => {
                    cx.row.each(&mut |k, v| {
                        if !out.contains_key(k) {
                            out.insert(k.to_owned(), v.clone());
                        }
                    });
                }
                OutField::Expr(name, e) => {
                    // eKuiper leaves NULL results out of the row.
                    if !out.contains_key(name) {
                        let v = e.eval(cx, &mut self.states)?.into_owned();
                        if !v.is_null() {
                            out.insert(name.clone(), v);
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// Evaluates the analytic calls that run ahead of WHERE on every record.
    pub(crate) fn pre_eval(&mut self, cx: &Ctx<'_>) -> Result<(), SqlError> {
        for i in 0..self.pre.len() {
            match self.states.call(&self.pre[i], cx) {
                Ok(v) => self.states.cache[i] = v,
                Err(e) => return Err(self.fail(PROJECT, e)),
            }
        }
        Ok(())
    }

    /// A record of a rule without a window: analytic calls, WHERE, projection; `hit_ts` is
    /// its event time, for `last_hit_time()`.
    pub(crate) fn record(
        &mut self,
        row: Row,
        topic: &str,
        meta_ts: i64,
        hit_ts: i64,
        out: &mut Vec<Emit>,
    ) -> Result<(), SqlError> {
        let t0 = self.sampler.start();
        self.stats[FILTER].records_in += 1;
        let cx = Ctx {
            row: &row,
            topic,
            ts: meta_ts,
            window: None,
            aggs: &[],
        };
        self.pre_eval(&cx)?;
        let pass = match &self.filter {
            Some(f) => f
                .test(&cx, &mut self.states)
                .map_err(|e| self.fail(FILTER, e))?,
            None => true,
        };
        let t1 = crate::sample::lap(&mut self.stats[FILTER].process_ns, t0);
        if !pass {
            return Ok(());
        }
        self.stats[FILTER].records_out += 1;
        self.stats[PROJECT].records_in += 1;
        let r = self.project_record(row, topic, meta_ts);
        crate::sample::lap(&mut self.stats[PROJECT].process_ns, t1);
        let r = r.map_err(|e| self.fail(PROJECT, e))?;
        crate::state::Hits::hit(&mut self.states.hits.rule, hit_ts);
        self.stats[PROJECT].records_out += 1;
        out.push(Emit { rows: vec![r] });
        Ok(())
    }

    /// A record of a rule without a window: its row is moved out when it is all `SELECT *`.
    pub(crate) fn project_record(
        &mut self,
        row: Row,
        topic: &str,
        ts: i64,
    ) -> Result<Row, SqlError> {
        if let [OutField::Wildcard] = self.fields[..] {
            return Ok(row);
        }
        let cx = Ctx {
            row: &row,
            topic,
            ts,
            window: None,
            aggs: &[],
        };
        self.project(&cx)
    }

    /// One window's rows to its result.
    pub(crate) fn emit_window(
        &mut self,
        start: i64,
        end: i64,
        rows: &[Rec],
        out: &mut Vec<Emit>,
    ) -> Result<(), SqlError> {
        let t0 = Instant::now();
        let window = Some((start, end));
        let mut kept: Vec<&Rec> = Vec::with_capacity(rows.len());
        for r in rows {
            let pass = match &self.post_filter {
                None => true,
                Some(f) => {
                    let cx = rec_ctx(r, window, &[]);
                    f.test(&cx, &mut self.states)
                        .map_err(|e| self.fail(FILTER, e))?
                }
            };
            if pass {
                kept.push(r);
            }
        }
        self.stats[PROJECT].records_in += 1;
        let res = self.groups(&kept, window);
        let t1 = Instant::now();
        self.stats[PROJECT].process_ns += (t1 - t0).as_nanos() as u64;
        let mut results = res.map_err(|e| self.fail(PROJECT, e))?;
        if results.is_empty() {
            return Ok(());
        }
        self.stats[PROJECT].records_out += 1;
        if !self.order_by.is_empty() {
            self.stats[ORDER].records_in += 1;
            results.sort_by(|a, b| {
                for (i, (_, desc)) in self.order_by.iter().enumerate() {
                    let o = ops::sort_order(&a.0[i], &b.0[i]);
                    let o = if *desc { o.reverse() } else { o };
                    if o.is_ne() {
                        return o;
                    }
                }
                std::cmp::Ordering::Equal
            });
            self.stats[ORDER].records_out += 1;
            self.stats[ORDER].process_ns += t1.elapsed().as_nanos() as u64;
        }
        let mut rows: Vec<Row> = results.into_iter().map(|r| r.1).collect();
        if let Some(l) = self.limit {
            rows.truncate(l as usize);
        }
        if !rows.is_empty() {
            out.push(Emit { rows });
        }
        Ok(())
    }

    /// Groups, aggregates, HAVING and projection: output rows with their ORDER BY keys.
    fn groups(
        &mut self,
        rows: &[&Rec],
        window: Option<(i64, i64)>,
    ) -> Result<Vec<(Vec<Value>, Row)>, SqlError> {
        let grouped = !self.group_by.is_empty() || !self.aggs.is_empty();
        let mut results = Vec::new();
        if !grouped {
            for r in rows {
                self.one_group(std::slice::from_ref(r), window, &mut results)?;
            }
            return Ok(results);
        }
        if self.group_by.is_empty() {
            if !rows.is_empty() {
                self.one_group(rows, window, &mut results)?;
            }
            return Ok(results);
        }
        // Groups in order of first appearance, keyed by their keys' JSON.
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut groups: Vec<Vec<&Rec>> = Vec::new();
        for r in rows {
            let cx = rec_ctx(r, window, &[]);
            let mut key = String::new();
            for k in &self.group_by {
                key.push_str(&k.eval(&cx, &mut self.states)?.to_json().to_string());
                key.push('\u{1f}');
            }
            let i = *index.entry(key).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[i].push(r);
        }
        for g in groups {
            self.one_group(&g, window, &mut results)?;
        }
        Ok(results)
    }

    fn one_group(
        &mut self,
        rows: &[&Rec],
        window: Option<(i64, i64)>,
        results: &mut Vec<(Vec<Value>, Row)>,
    ) -> Result<(), SqlError> {
        let aggs = self
            .aggs
            .iter()
            .map(|a| a.compute(rows, window, &mut self.states))
            .collect::<Result<Vec<_>, _>>()?;
        // Plain fields of a group read its first row, as eKuiper does.
        let cx = rec_ctx(rows[0], window, &aggs);
        if let Some(h) = &self.having {
            if !h.test(&cx, &mut self.states)? {
                return Ok(());
            }
        }
        let keys = self
            .order_by
            .iter()
            .map(|(e, _)| e.eval(&cx, &mut self.states).map(|v| v.into_owned()))
            .collect::<Result<Vec<_>, _>>()?;
        let row = self.project(&cx)?;
        results.push((keys, row));
        // A result row is a hit of the rule: its event time is the window's end.
        let end = window.map_or(0, |w| w.1);
        crate::state::Hits::hit(&mut self.states.hits.agg, end);
        Ok(())
    }
}

fn rec_ctx<'a>(r: &'a Rec, window: Option<(i64, i64)>, aggs: &'a [Value]) -> Ctx<'a> {
    Ctx {
        row: &r.row,
        topic: &r.topic,
        ts: r.meta_ts,
        window,
        aggs,
    }
}
