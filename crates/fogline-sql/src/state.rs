//! Stateful functions, fogline's own: anomaly detectors and pattern sets, keyed by partition.

use std::collections::HashMap;
use std::sync::Arc;

use fogline_detect::Detector;

use crate::error::SqlError;
use crate::eval::{CExpr, Ctx};
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
}

/// One call site: its own state per partition key.
#[derive(Debug)]
pub(crate) struct Site {
    /// Index into [`States`].
    pub id: usize,
    /// The function.
    pub kind: SiteKind,
    /// The value argument.
    pub arg: CExpr,
    /// Partition keys (`OVER (PARTITION BY ..)`, else GROUP BY keys).
    pub partition: Vec<CExpr>,
    /// `OVER (WHEN ..)`: state updates only for rows meeting it.
    pub when: Option<CExpr>,
}

/// A site's detectors: the rule's own (no partition) and one per partition key.
type Slot = (
    Option<Box<dyn Detector>>,
    HashMap<String, Box<dyn Detector>>,
);

/// Detector state of every call site, and the pattern sets of the node.
pub(crate) struct States {
    ext: Arc<dyn Extensions>,
    /// Per site: the detector of the rule (no partition) and those of each key.
    detectors: Vec<Slot>,
    key: String,
}

impl States {
    pub(crate) fn new(ext: Arc<dyn Extensions>, sites: usize) -> States {
        States {
            ext,
            detectors: (0..sites).map(|_| (None, HashMap::new())).collect(),
            key: String::new(),
        }
    }

    /// Forgets every detector's state.
    pub(crate) fn clear(&mut self) {
        for d in &mut self.detectors {
            *d = (None, HashMap::new());
        }
    }

    /// Evaluates a stateful call on one row.
    pub(crate) fn call(&mut self, site: &Site, cx: &Ctx<'_>) -> Result<Value, SqlError> {
        if let Some(w) = &site.when {
            if !w.test(cx, self)? {
                return Ok(Value::Null);
            }
        }
        let v = site.arg.eval(cx, self)?.into_owned();
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
                let mut key = std::mem::take(&mut self.key);
                key.clear();
                for p in &site.partition {
                    let pv = p.eval(cx, self)?;
                    key.push_str(&pv.to_json().to_string());
                    key.push('\u{1f}');
                }
                let fresh = || fogline_detect::by_name(name).expect("checked at plan time");
                let slot = &mut self.detectors[site.id];
                let det = if site.partition.is_empty() {
                    slot.0.get_or_insert_with(fresh)
                } else if slot.1.contains_key(&key) {
                    slot.1.get_mut(&key).expect("present")
                } else {
                    slot.1.entry(key.clone()).or_insert_with(fresh)
                };
                let score = det.update(cx.ts.div_euclid(1000), x);
                self.key = key;
                Ok(match site.kind {
                    SiteKind::IsAnomaly(_, th) => Value::Bool(score >= th),
                    _ => Value::Float(score),
                })
            }
        }
    }
}
