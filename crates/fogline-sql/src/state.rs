//! Stateful functions, keyed by partition: fogline's own (anomaly detectors, pattern sets)
//! and eKuiper's analytic functions.

use std::collections::HashMap;
use std::sync::Arc;

use fogline_detect::Detector;

use crate::analytic::{step, AnKind, AnState};
use crate::error::SqlError;
use crate::eval::{eval_args, CExpr, Ctx};
use crate::plan::Extensions;
use crate::value::Value;

/// What a stateful call site does.
#[derive(Debug)]
pub(crate) enum SiteKind {
    /// `anomaly_score(x, 'detector')`.
    Score(String),
    /// `is_anomaly(x, 'detector'[, threshold])`.
    IsAnomaly(String, f64),
    /// `match_count(x, 'set')`.
    MatchCount(String),
    /// `matches(x, 'set')`.
    Matches(String),
    /// An analytic function.
    Analytic(AnKind),
}

/// One call site: its own state per partition key.
#[derive(Debug)]
pub(crate) struct Site {
    /// Index into [`States`].
    pub id: usize,
    /// The function.
    pub kind: SiteKind,
    /// The arguments evaluated per row (the value first).
    pub args: Vec<CExpr>,
    /// Partition keys (`OVER (PARTITION BY ..)`, else GROUP BY keys).
    pub partition: Vec<CExpr>,
    /// `OVER (WHEN ..)`: state updates only for rows meeting it.
    pub when: Option<CExpr>,
}

/// The state of a site for one partition.
pub(crate) enum St {
    Det(Box<dyn Detector>),
    An(AnState),
}

/// A site's states: the rule's own (no partition) and one per partition key.
pub(crate) type Slot = (Option<St>, HashMap<String, St>);

/// State of every call site, the pattern sets of the node, and the results of analytic
/// functions evaluated ahead of WHERE.
pub(crate) struct States {
    ext: Arc<dyn Extensions>,
    pub(crate) slots: Vec<Slot>,
    key: String,
    /// Results of the sites evaluated ahead, by [`CExpr::Cached`] index.
    pub cache: Vec<Value>,
    /// `(count, time)` of the rule's hits, read by `last_hit_count()` and the like.
    pub hits: Hits,
}

/// The hits of a rule: `(count, event time of the last)`, each updated after a hit so
/// that the functions read the state before it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Hits {
    /// Records that passed WHERE (`last_hit_*` of a rule without a window).
    pub rule: (i64, i64),
    /// Records that met a sliding window's `OVER (WHEN ..)` (`last_hit_*` there).
    pub when: (i64, i64),
    /// Result rows of windows that passed HAVING (`last_agg_hit_*`).
    pub agg: (i64, i64),
}

impl Hits {
    /// One more hit at `t`.
    pub(crate) fn hit(slot: &mut (i64, i64), t: i64) {
        *slot = (slot.0 + 1, t);
    }
}

impl States {
    pub(crate) fn new(ext: Arc<dyn Extensions>, sites: usize, cached: usize) -> States {
        States {
            ext,
            slots: (0..sites).map(|_| (None, HashMap::new())).collect(),
            key: String::new(),
            cache: vec![Value::Null; cached],
            hits: Hits::default(),
        }
    }

    /// Forgets every site's state.
    pub(crate) fn clear(&mut self) {
        for d in &mut self.slots {
            *d = (None, HashMap::new());
        }
    }

    /// The state of `site` for the row's partition, made by `fresh` the first time.
    fn state(
        &mut self,
        site: &Site,
        cx: &Ctx<'_>,
        fresh: impl FnOnce() -> St,
    ) -> Result<&mut St, SqlError> {
        if site.partition.is_empty() {
            return Ok(self.slots[site.id].0.get_or_insert_with(fresh));
        }
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        for p in &site.partition {
            let pv = p.eval(cx, self)?;
            key.push_str(&pv.to_json().to_string());
            key.push('\u{1f}');
        }
        let map = &mut self.slots[site.id].1;
        if !map.contains_key(&key) {
            map.insert(key.clone(), fresh());
        }
        let st = map.get_mut(&key).expect("present");
        self.key = key;
        Ok(st)
    }

    /// Evaluates a stateful call on one row.
    pub(crate) fn call(&mut self, site: &Site, cx: &Ctx<'_>) -> Result<Value, SqlError> {
        let update = match &site.when {
            Some(w) => w.test(cx, self)?,
            None => true,
        };
        if let SiteKind::Analytic(k) = site.kind {
            let vals = eval_args(&site.args, cx, self)?;
            let st = self.state(site, cx, || St::An(AnState::default()))?;
            if !matches!(st, St::An(_)) {
                *st = St::An(AnState::default()); // another rule's snapshot
            }
            let St::An(st) = st else {
                unreachable!("replaced above")
            };
            return step(k, st, &vals, update);
        }
        if !update {
            return Ok(Value::Null);
        }
        let v = site.args[0].eval(cx, self)?.into_owned();
        if v.is_null() {
            return Ok(Value::Null);
        }
        match &site.kind {
            SiteKind::MatchCount(set) | SiteKind::Matches(set) => {
                let m = self
                    .ext
                    .pattern_set(set)
                    .ok_or_else(|| SqlError::Eval(format!("unknown pattern set '{set}'")))?;
                let n = match &v {
                    Value::Str(s) => m.count(s.as_bytes()),
                    Value::Bytes(b) => m.count(b),
                    v => return Err(SqlError::Eval(format!("cannot match patterns in {v:?}"))),
                };
                Ok(match site.kind {
                    SiteKind::MatchCount(_) => Value::Int(n as i64),
                    _ => Value::Bool(n > 0),
                })
            }
            SiteKind::Score(name) | SiteKind::IsAnomaly(name, _) => {
                let x = v
                    .as_f64()
                    .ok_or_else(|| SqlError::Eval(format!("anomaly score of {v:?}")))?;
                let fresh =
                    || St::Det(fogline_detect::by_name(name).expect("checked at plan time"));
                let st = self.state(site, cx, fresh)?;
                if !matches!(st, St::Det(_)) {
                    *st = fresh(); // another rule's snapshot
                }
                let St::Det(det) = st else {
                    unreachable!("replaced above")
                };
                let score = det.update(cx.ts.div_euclid(1000), x);
                Ok(match site.kind {
                    SiteKind::IsAnomaly(_, th) => Value::Bool(score >= th),
                    _ => Value::Float(score),
                })
            }
            SiteKind::Analytic(_) => unreachable!("handled above"),
        }
    }
}
