//! A `SELECT` compiled against its stream and run record by record and tick by tick: the
//! API of the node's rules component.
//!
//! The pipeline is eKuiper's: in event time, late records are dropped first; WHERE on each
//! record (for count windows and in event time, on the window's rows: eKuiper pushes it
//! below processing-time windows only), the window's FILTER, the window; on each emission
//! GROUP BY, aggregates per group, HAVING, projection, ORDER BY and LIMIT over the window's
//! results. A rule without a window projects each record that passes WHERE. Analytic
//! functions of the SELECT list (and of WHERE on records) see every record.

use std::cell::RefCell;
use std::sync::Arc;

use crate::ast::{self, WindowKind};
use crate::compile::{changed_cols, default_name, Aliases, Compiler};
use crate::decode::Decoder;
use crate::error::SqlError;
use crate::eval::{CExpr, Ctx, Fields};
use crate::project::{Core, OutField, DECODE, FILTER, WINDOW};
use crate::state::{Hits, States};
use crate::value::Row;
use crate::window::{check_window, clock, event_time, Compact, Rec, Windows};

/// A record's meta: its topic and when the broker received it.
#[derive(Clone, Debug)]
pub struct Meta {
    /// The topic it was published to.
    pub topic: Arc<str>,
    /// Broker receive time, ms since the epoch.
    pub timestamp_ms: i64,
}

/// One result: a record's row, or a window's rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Emit {
    /// The output rows.
    pub rows: Vec<Row>,
}

/// How a rule runs.
#[derive(Clone, Debug)]
pub struct PlanOptions {
    /// Windows by the stream's `TIMESTAMP` field (else by receive time and the clock).
    pub is_event_time: bool,
    /// How far behind the highest event time records may come (event time only).
    pub late_tolerance_ms: u64,
    /// Most records a time window holds at once: a window keeps its records until it
    /// emits, so a long window over a fast stream would hold memory without a bound. A
    /// record beyond it is dropped and counted ([`Plan::window_full_dropped`], and as a
    /// window exception); a count window longer than this is refused.
    pub max_window_rows: usize,
}

/// The default of [`PlanOptions::max_window_rows`].
pub const DEFAULT_MAX_WINDOW_ROWS: usize = 1_000_000;

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            is_event_time: false,
            late_tolerance_ms: 0,
            max_window_rows: DEFAULT_MAX_WINDOW_ROWS,
        }
    }
}

/// What the node lends to rules: named pattern sets for `match_count` and `matches`.
pub trait Extensions: Send + Sync {
    /// The pattern set of that name, if defined.
    fn pattern_set(&self, name: &str) -> Option<Arc<fogline_match::Matcher>>;
}

/// Counters of one operator of a rule.
#[derive(Clone, Debug, Default)]
pub struct OperatorStats {
    /// `decode`, `filter`, `window`, `project` or `order`.
    pub name: &'static str,
    /// Records (or windows) in.
    pub records_in: u64,
    /// Records (or windows) out.
    pub records_out: u64,
    /// Errors.
    pub exceptions: u64,
    /// The latest error.
    pub last_exception: Option<String>,
    /// Time spent, ns.
    pub process_ns: u64,
}

/// A compiled rule.
pub struct Plan {
    core: Core,
    windows: Option<Windows>,
    /// Without a window, in event time: records held until the watermark passes them (a
    /// tumbling window of 1 ms, each let go in order).
    reorder: Option<Windows>,
    win_filter: Option<CExpr>,
    trigger: Option<CExpr>,
    decoder: Decoder,
    /// `decode` takes `&self`: its counters live apart.
    decode_stats: RefCell<OperatorStats>,
    opts: PlanOptions,
    ts_field: Option<String>,
    /// Fields a window keeps of each row, sorted (`None`: all of them).
    keep: Option<Vec<Arc<str>>>,
    /// Records dropped because their window held `max_window_rows` already.
    window_full: u64,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("windowed", &self.windows.is_some())
            .finish_non_exhaustive()
    }
}

impl Plan {
    /// Compiles `select` against `stream`.
    ///
    /// # Errors
    /// [`SqlError::Plan`]: FROM does not name the stream, an unknown function or one with
    /// the wrong number of arguments, an aggregate or GROUP BY without a window, a field
    /// not in the stream's schema, a window of zero size.
    pub fn new(
        select: &ast::Select,
        stream: &ast::StreamDef,
        opts: PlanOptions,
        ext: Arc<dyn Extensions>,
    ) -> Result<Plan, SqlError> {
        if !select.from.eq_ignore_ascii_case(&stream.name) {
            return Err(SqlError::Plan(format!(
                "FROM {} does not name the stream {}",
                select.from, stream.name
            )));
        }
        let windowed = select.window.is_some();
        if !windowed && !select.group_by.is_empty() {
            return Err(SqlError::Plan("GROUP BY needs a window".into()));
        }
        if let Some(w) = &select.window {
            check_window(&w.kind)?;
            if let WindowKind::Count { count, .. } = w.kind {
                if count > opts.max_window_rows as u64 {
                    return Err(SqlError::Plan(format!(
                        "COUNTWINDOW({count}) holds more records than a window may ({}, \
                         [rules] max_window_rows)",
                        opts.max_window_rows
                    )));
                }
            }
        }
        // eKuiper runs WHERE on a window's rows, not on records, for count windows and in
        // event time (it pushes it below only processing-time windows).
        let where_after = matches!(
            select.window.as_ref().map(|w| &w.kind),
            Some(WindowKind::Count { .. })
        ) || (windowed && opts.is_event_time);
        let mut c = Compiler::new(select, stream);
        if opts.is_event_time {
            c.event_field = stream.options.timestamp.clone();
        }
        let mut fields = Vec::new();
        let mut unnamed = 0;
        c.allow_aggs = windowed;
        c.pre_eval = !windowed;
        c.aliases_in = Aliases::Undeclared;
        for f in &select.fields {
            if let ast::Expr::Wildcard { .. } = f.expr {
                c.expr(&f.expr)?;
                fields.push(OutField::Wildcard);
                continue;
            }
            if let ast::Expr::Call(call) = &f.expr {
                if call.name == "changed_cols" {
                    fields.push(changed_cols(&mut c, call, &mut unnamed)?);
                    continue;
                }
            }
            let name = match &f.alias {
                Some(a) => a.clone(),
                None => default_name(&f.expr, &mut unnamed),
            };
            fields.push(OutField::Expr(name, c.expr(&f.expr)?));
        }
        c.allow_aggs = false;
        // eKuiper's WHERE may name an output alias (`WHERE ... AND lc < 2`).
        // Analytic calls in WHERE run on every record, not cut short by AND and OR (unless
        // WHERE runs on a window's rows).
        c.pre_eval = !where_after;
        let filter = select.filter.as_ref().map(|e| c.expr(e)).transpose()?;
        c.pre_eval = false;
        c.aliases_in = Aliases::Off;
        let group_by = select
            .group_by
            .iter()
            .map(|e| c.expr(e))
            .collect::<Result<_, _>>()?;
        let (win_filter, trigger) = match &select.window {
            Some(w) => (w.filter.as_ref().map(|e| c.expr(e)).transpose()?, {
                c.in_when = true;
                let t = w.trigger.as_ref().map(|e| c.expr(e)).transpose()?;
                c.in_when = false;
                t
            }),
            None => (None, None),
        };
        c.allow_aggs = windowed;
        c.aliases_in = Aliases::On;
        let having = select.having.as_ref().map(|e| c.expr(e)).transpose()?;
        let order_by = select
            .order_by
            .iter()
            .map(|o| Ok((c.expr(&o.expr)?, o.descending)))
            .collect::<Result<_, SqlError>>()?;
        let ts_field = stream.options.timestamp.clone();
        if opts.is_event_time && ts_field.is_none() && windowed {
            return Err(SqlError::Plan(format!(
                "event time needs the stream {} to declare a TIMESTAMP field",
                stream.name
            )));
        }
        let mut keep = (!c.reads_row).then(|| {
            let mut k = std::mem::take(&mut c.fields_read);
            k.extend(ts_field.clone());
            k.sort();
            k.dedup();
            k.into_iter().map(Arc::from).collect::<Vec<Arc<str>>>()
        });
        if !windowed {
            keep = None;
        }
        let names = ["decode", "filter", "window", "project", "order"];
        let (post_filter, filter) = if where_after {
            (filter, None)
        } else {
            (None, filter)
        };
        Ok(Plan {
            core: Core {
                sampler: Default::default(),
                fields,
                filter,
                post_filter,
                group_by,
                having,
                order_by,
                limit: select.limit,
                aggs: c.aggs,
                states: States::new(ext, c.sites, c.pre_sites.len()),
                pre: c.pre_sites,
                stats: names.map(|name| OperatorStats {
                    name,
                    ..OperatorStats::default()
                }),
            },
            windows: select.window.as_ref().map(|w| Windows::new(w.kind.clone())),
            reorder: (!windowed && opts.is_event_time && ts_field.is_some())
                .then(|| Windows::new(WindowKind::Tumbling { length_ms: 1 })),
            win_filter,
            trigger,
            decoder: Decoder::new(stream),
            decode_stats: RefCell::new(OperatorStats {
                name: "decode",
                ..OperatorStats::default()
            }),
            opts,
            ts_field,
            keep,
            window_full: 0,
        })
    }

    /// A payload to rows by the stream's format and schema (counted in the `decode` stats).
    ///
    /// # Errors
    /// [`SqlError::Decode`]: not in the format, or (strict) not fitting the schema.
    pub fn decode(&self, payload: &[u8]) -> Result<Vec<Row>, SqlError> {
        let t0 = self.core.sampler.start();
        let r = self.decoder.decode(payload);
        let mut s = self.decode_stats.borrow_mut();
        s.records_in += 1;
        crate::sample::lap(&mut s.process_ns, t0);
        match &r {
            Ok(rows) => s.records_out += rows.len() as u64,
            Err(e) => {
                s.exceptions += 1;
                s.last_exception = Some(e.to_string());
            }
        }
        r
    }

    /// One record: WHERE, then the window or the projection. Results go to `out`.
    ///
    /// # Errors
    /// [`SqlError::Eval`]: an expression failed on this record (counted in the stats; the
    /// rule goes on with the next).
    pub fn push(&mut self, row: Row, meta: &Meta, out: &mut Vec<Emit>) -> Result<(), SqlError> {
        if self.windows.is_none() {
            return self.push_record(row, meta, out);
        }
        let t0 = self.core.sampler.start();
        let core = &mut self.core;
        core.stats[FILTER].records_in += 1;
        let Some(w) = &mut self.windows else {
            unreachable!("checked above")
        };
        // The record's time; in event time, late records go before any clause runs.
        let ts = if self.opts.is_event_time {
            event_time(&row, self.ts_field.as_deref()).map_err(|e| core.fail(WINDOW, e))?
        } else {
            clock(meta.timestamp_ms).max(w.wm)
        };
        if !w.admit(ts) {
            return Ok(());
        }
        let cx = Ctx {
            row: &row,
            topic: &meta.topic,
            ts: meta.timestamp_ms,
            window: None,
            aggs: &[],
        };
        core.pre_eval(&cx)?;
        let mut pass = match &core.filter {
            Some(f) => f
                .test(&cx, &mut core.states)
                .map_err(|e| core.fail(FILTER, e))?,
            None => true,
        };
        if pass {
            if let Some(f) = &self.win_filter {
                pass = f
                    .test(&cx, &mut core.states)
                    .map_err(|e| core.fail(FILTER, e))?;
            }
        }
        let t1 = crate::sample::lap(&mut core.stats[FILTER].process_ns, t0);
        let kept = if pass {
            let trigger = match &self.trigger {
                Some(t) => t
                    .test(&cx, &mut core.states)
                    .map_err(|e| core.fail(WINDOW, e))?,
                None => true,
            };
            if trigger {
                Hits::hit(&mut core.states.hits.when, ts);
            }
            core.stats[FILTER].records_out += 1;
            core.stats[WINDOW].records_in += 1;
            let rec = Rec {
                row: match &self.keep {
                    Some(k) => Compact::keep(row, k),
                    None => Compact::all(row),
                },
                topic: meta.topic.clone(),
                ts,
                meta_ts: meta.timestamp_ms,
            };
            Some((rec, trigger))
        } else {
            None
        };
        // Time goes on with every record, kept or not.
        let wm = if self.opts.is_event_time {
            w.max_seen
                .saturating_sub(self.opts.late_tolerance_ms as i64)
        } else {
            ts
        };
        let timed = !matches!(w.kind, WindowKind::Count { .. });
        // A window whose results fail is counted and passed: the window goes on.
        let mut first = None;
        let mut fire = |s: i64, e: i64, rows: &[Rec]| -> Result<(), SqlError> {
            core.stats[WINDOW].records_out += 1;
            if let Err(e) = core.emit_window(s, e, rows, out) {
                first.get_or_insert(e);
            }
            Ok(())
        };
        let mut full = false;
        if let Some((rec, trigger)) = kept {
            if timed && w.buf.len() >= self.opts.max_window_rows {
                // The windows this record's time closes go first: they may make room.
                w.advance(wm, &mut fire)?;
                full = w.buf.len() >= self.opts.max_window_rows;
            }
            if !full {
                w.insert(rec, trigger, &mut fire)?;
            }
        }
        if timed && w.max_seen != i64::MIN {
            w.advance(wm, &mut fire)?;
        }
        if full {
            self.window_full += 1;
            let s = &mut core.stats[WINDOW];
            s.exceptions += 1;
            // The message once in a while, not a string per dropped record.
            if self.window_full % 1024 == 1 {
                s.last_exception = Some(format!(
                    "a window holds its most records ({}, [rules] max_window_rows): {} \
                     records dropped so far",
                    self.opts.max_window_rows, self.window_full
                ));
            }
        }
        crate::sample::lap(&mut core.stats[WINDOW].process_ns, t1);
        first.map_or(Ok(()), Err)
    }

    /// A record of a rule without a window; in event time, held until the watermark passes
    /// it and let go in time order (as eKuiper's watermark does), late ones dropped.
    fn push_record(&mut self, row: Row, meta: &Meta, out: &mut Vec<Emit>) -> Result<(), SqlError> {
        let core = &mut self.core;
        let Some(r) = &mut self.reorder else {
            let ts = match self.opts.is_event_time {
                true => event_time(&row, self.ts_field.as_deref()).unwrap_or(meta.timestamp_ms),
                false => meta.timestamp_ms,
            };
            return core.record(row, &meta.topic, meta.timestamp_ms, ts, out);
        };
        let ts = event_time(&row, self.ts_field.as_deref()).map_err(|e| core.fail(WINDOW, e))?;
        if !r.admit(ts) {
            return Ok(());
        }
        let rec = Rec {
            row: Compact::all(row),
            topic: meta.topic.clone(),
            ts,
            meta_ts: meta.timestamp_ms,
        };
        r.insert(rec, false, &mut |_, _, _| Ok(()))?;
        let wm = r
            .max_seen
            .saturating_sub(self.opts.late_tolerance_ms as i64);
        // Every record let go is processed; the first error is returned.
        let mut first = None;
        r.advance(wm, &mut |_, _, recs| {
            for rec in recs {
                let res = core.record(rec.row.to_row(), &rec.topic, rec.meta_ts, rec.ts, out);
                if let Err(e) = res {
                    first.get_or_insert(e);
                }
            }
            Ok(())
        })?;
        first.map_or(Ok(()), Err)
    }

    /// The clock: in processing time, emits the windows that ended by `now_ms`.
    ///
    /// # Errors
    /// [`SqlError::Eval`]: an expression failed on a window's rows.
    pub fn tick(&mut self, now_ms: i64, out: &mut Vec<Emit>) -> Result<(), SqlError> {
        if self.opts.is_event_time {
            return Ok(());
        }
        let Some(w) = &mut self.windows else {
            return Ok(());
        };
        let core = &mut self.core;
        let mut first = None;
        let mut fire = |s: i64, e: i64, rows: &[Rec]| -> Result<(), SqlError> {
            core.stats[WINDOW].records_out += 1;
            if let Err(e) = core.emit_window(s, e, rows, out) {
                first.get_or_insert(e);
            }
            Ok(())
        };
        w.advance(clock(now_ms), &mut fire)?;
        first.map_or(Ok(()), Err)
    }

    /// When [`Plan::tick`] must next be called (`None`: no timer pending).
    pub fn next_tick(&self) -> Option<i64> {
        if self.opts.is_event_time {
            return None;
        }
        self.windows.as_ref()?.next_due()
    }

    /// The rule's state, for a checkpoint: the window's (rows with meta, bounds, counters),
    /// analytic functions' and the hit counters; not detectors'.
    pub fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({
            "window": self.windows.as_ref().or(self.reorder.as_ref()).map(crate::snap::save),
            "state": crate::snap::save_states(&self.core.states),
        })
    }

    /// Puts back a [`Plan::snapshot`] of the same rule. Detector state starts afresh.
    ///
    /// # Errors
    /// [`SqlError::Plan`]: the snapshot is not one of this rule's.
    pub fn restore(&mut self, state: &serde_json::Value) -> Result<(), SqlError> {
        self.core.states.clear();
        crate::snap::load_states(&mut self.core.states, &state["state"])?;
        match (
            self.windows.as_mut().or(self.reorder.as_mut()),
            &state["window"],
        ) {
            (Some(w), j) => crate::snap::load(w, j),
            (None, serde_json::Value::Null) => Ok(()),
            (None, _) => Err(SqlError::Plan(
                "a window's snapshot for a rule without".into(),
            )),
        }
    }

    /// True when the rule has a window.
    pub fn is_windowed(&self) -> bool {
        self.windows.is_some()
    }

    /// Counters per operator: decode, filter, window, project, order.
    pub fn stats(&self) -> Vec<OperatorStats> {
        let mut v = self.core.stats.to_vec();
        v[DECODE] = self.decode_stats.borrow().clone();
        v
    }

    /// Records dropped because their window held `max_window_rows` already.
    pub fn window_full_dropped(&self) -> u64 {
        self.window_full
    }

    /// Records dropped as later than the watermark allows.
    pub fn late_dropped(&self) -> u64 {
        self.windows
            .as_ref()
            .or(self.reorder.as_ref())
            .map_or(0, |w| w.late)
    }
}
