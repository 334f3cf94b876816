//! Window state to JSON and back, exactly: `bigint` and `float` kept apart, bytes tagged.

use std::sync::Arc;

use serde_json::{json, Map, Value as J};

use crate::analytic::AnState;
use crate::error::SqlError;
use crate::eval::Fields;
use crate::state::{Hits, St, States};
use crate::value::{base64, Row, Value};
use crate::window::{Buf, Compact, Rec, Windows};

const BYTES: &str = "$bytes";

fn enc(v: &Value) -> J {
    match v {
        Value::Bytes(b) => json!({ BYTES: base64(b) }),
        Value::Array(a) => a.iter().map(enc).collect(),
        Value::Object(o) => enc_row(o),
        Value::Float(f) if !f.is_finite() => json!({ "$float": f.to_string() }),
        v => v.to_json(),
    }
}

fn enc_row(r: &Row) -> J {
    J::Object(
        r.iter()
            .map(|(k, v)| (k.clone(), enc(v)))
            .collect::<Map<_, _>>(),
    )
}

fn dec(j: &J) -> Result<Value, SqlError> {
    Ok(match j {
        J::Object(o) if o.len() == 1 && o.contains_key(BYTES) => {
            let s = o[BYTES].as_str().ok_or_else(|| bad("bytes"))?;
            Value::Bytes(unbase64(s)?.into())
        }
        J::Object(o) if o.len() == 1 && o.contains_key("$float") => {
            let s = o["$float"].as_str().ok_or_else(|| bad("float"))?;
            Value::Float(s.parse().map_err(|_| bad("float"))?)
        }
        J::Object(o) => Value::Object(dec_row(o)?),
        J::Array(a) => Value::Array(a.iter().map(dec).collect::<Result<_, _>>()?),
        j => Value::from(j.clone()),
    })
}

fn dec_row(o: &Map<String, J>) -> Result<Row, SqlError> {
    o.iter().map(|(k, v)| Ok((k.clone(), dec(v)?))).collect()
}

fn bad(what: &str) -> SqlError {
    SqlError::Plan(format!("bad window snapshot: {what}"))
}

fn unbase64(s: &str) -> Result<Vec<u8>, SqlError> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|c| *c != b'=') {
        let d = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(bad("base64")),
        };
        acc = acc << 6 | u32::from(d);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Ok(out)
}

/// The window's state.
pub(crate) fn save(w: &Windows) -> J {
    json!({
        "kind": format!("{:?}", w.kind),
        "wm": w.wm,
        "max_seen": w.max_seen,
        "cont": w.cont,
        "since": w.since,
        "late": w.late,
        "triggers": w.triggers,
        "rows": w.buf.iter().map(|r| json!({
            "ts": r.ts, "meta_ts": r.meta_ts, "topic": &*r.topic, "row": enc_row(&r.row.to_row()),
        })).collect::<Vec<_>>(),
    })
}

/// Puts a [`save`]d state back.
pub(crate) fn load(w: &mut Windows, j: &J) -> Result<(), SqlError> {
    if j["kind"].as_str() != Some(&format!("{:?}", w.kind)) {
        return Err(bad("another window kind"));
    }
    let int = |k: &str| j[k].as_i64().ok_or_else(|| bad(k));
    w.wm = int("wm")?;
    w.max_seen = int("max_seen")?;
    w.cont = serde_json::from_value(j["cont"].clone()).map_err(|_| bad("cont"))?;
    w.since = int("since")? as u64;
    w.late = int("late")? as u64;
    w.triggers = serde_json::from_value(j["triggers"].clone()).map_err(|_| bad("triggers"))?;
    let rows = j["rows"].as_array().ok_or_else(|| bad("rows"))?;
    w.buf = Buf::from(
        rows.iter()
            .map(|r| {
                Ok(Rec {
                    row: match &r["row"] {
                        J::Object(o) => Compact::all(dec_row(o)?),
                        _ => return Err(bad("row")),
                    },
                    topic: Arc::from(r["topic"].as_str().ok_or_else(|| bad("topic"))?),
                    ts: r["ts"].as_i64().ok_or_else(|| bad("ts"))?,
                    meta_ts: r["meta_ts"].as_i64().ok_or_else(|| bad("meta_ts"))?,
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
    );
    Ok(())
}

fn save_an(a: &AnState) -> J {
    json!({
        "hist": a.hist.iter().map(enc).collect::<Vec<_>>(),
        "prev": a.prev.iter().map(|p| p.as_ref().map(|v| json!([enc(v)]))).collect::<Vec<_>>(),
        "acc": enc(&a.acc),
        "n": a.n,
    })
}

fn load_an(j: &J) -> Result<AnState, SqlError> {
    let arr = |k: &str| j[k].as_array().ok_or_else(|| bad(k));
    Ok(AnState {
        hist: arr("hist")?.iter().map(dec).collect::<Result<_, _>>()?,
        prev: arr("prev")?
            .iter()
            .map(|p| match p {
                J::Null => Ok(None),
                p => dec(&p[0]).map(Some),
            })
            .collect::<Result<_, _>>()?,
        acc: dec(&j["acc"])?,
        n: j["n"].as_u64().ok_or_else(|| bad("n"))?,
    })
}

/// The state of analytic functions (per site and partition) and the rule's hits; detector
/// state is not kept (detectors do not export it).
pub(crate) fn save_states(s: &States) -> J {
    let an = |st: &St| match st {
        St::An(a) => Some(save_an(a)),
        St::Det(_) => None,
    };
    let h = s.hits;
    json!({
        "hits": [h.rule, h.when, h.agg],
        "sites": s.slots.iter().map(|(own, keyed)| json!({
            "own": own.as_ref().and_then(an),
            "keyed": keyed
                .iter()
                .filter_map(|(k, st)| Some((k.clone(), an(st)?)))
                .collect::<Map<_, _>>(),
        })).collect::<Vec<_>>(),
    })
}

/// Puts [`save_states`] back.
pub(crate) fn load_states(s: &mut States, j: &J) -> Result<(), SqlError> {
    let hits: [(i64, i64); 3] =
        serde_json::from_value(j["hits"].clone()).map_err(|_| bad("hits"))?;
    s.hits = Hits {
        rule: hits[0],
        when: hits[1],
        agg: hits[2],
    };
    let sites = j["sites"].as_array().ok_or_else(|| bad("sites"))?;
    if sites.len() != s.slots.len() {
        return Err(bad("another rule's functions"));
    }
    for (slot, site) in s.slots.iter_mut().zip(sites) {
        slot.0 = match &site["own"] {
            J::Null => None,
            a => Some(St::An(load_an(a)?)),
        };
        slot.1.clear();
        for (k, a) in site["keyed"].as_object().ok_or_else(|| bad("keyed"))? {
            slot.1.insert(k.clone(), St::An(load_an(a)?));
        }
    }
    Ok(())
}
