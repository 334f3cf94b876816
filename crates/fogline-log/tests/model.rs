//! Model-based test: random sequences of append / commit / read / read-by-time / retention /
//! reopen against a plain `Vec` model that also simulates segment rolling, for memory and mmap
//! storage.

mod common;

use common::file_opts;
use fogline_log::{now_micros, Log, LogOptions, Storage, RECORD_OVERHEAD};
use proptest::prelude::*;
use std::time::Duration;

const HOUR: u64 = 3_600_000_000;

#[derive(Debug, Clone)]
enum Op {
    Append {
        dt: i64,
        topic: usize,
        headers: usize,
        payload: usize,
    },
    Commit,
    Read {
        from: u64,
        max_records: usize,
        max_bytes: usize,
    },
    ReadTime {
        dt: u64,
    },
    Retention {
        after: u64,
    },
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (-500i64..2000, 1usize..20, 0usize..10, prop_oneof![0usize..100, 0usize..700])
            .prop_map(|(dt, topic, headers, payload)| Op::Append { dt, topic, headers, payload }),
        2 => Just(Op::Commit),
        2 => (0u64..200, 0usize..20, 0usize..3000)
            .prop_map(|(from, max_records, max_bytes)| Op::Read { from, max_records, max_bytes }),
        1 => (0u64..300_000).prop_map(|dt| Op::ReadTime { dt }),
        1 => prop_oneof![Just(0u64), 2 * HOUR..2 * HOUR + 300_000]
            .prop_map(|after| Op::Retention { after }),
        1 => Just(Op::Reopen),
    ]
}

/// (timestamp, topic, headers, payload)
type Rec = (u64, Vec<u8>, Vec<u8>, Vec<u8>);

struct Seg {
    base: u64,
    cap: usize,
    bytes: usize,
    count: u64,
    last_ts: u64,
}

struct Model {
    t0: u64,
    /// Record `o` is `records[o]`: (timestamp, topic, headers, payload).
    records: Vec<Rec>,
    first: u64,
    committed: u64,
    segs: Vec<Seg>,
    retention_bytes: Option<u64>,
    segment: usize,
    cursor: i64,
}

fn size(r: &Rec) -> usize {
    RECORD_OVERHEAD + r.1.len() + r.2.len() + r.3.len()
}

impl Model {
    fn next(&self) -> u64 {
        self.records.len() as u64
    }

    fn retention(&mut self, now: Option<u64>) {
        while self.segs.len() > 1 {
            let total: usize = self.segs.iter().map(|s| s.bytes).sum();
            let big = self.retention_bytes.is_some_and(|m| total as u64 > m);
            let old = now.is_some_and(|n| self.segs[0].last_ts < n.saturating_sub(2 * HOUR));
            if !(big || old) {
                break;
            }
            self.segs.remove(0);
            self.first = self.segs[0].base;
        }
    }

    fn append(&mut self, rec: Rec) -> u64 {
        let sz = size(&rec);
        let next = self.next();
        let active = self.segs.last_mut().unwrap();
        if active.cap - active.bytes < sz {
            let cap = self.segment.max(sz);
            if active.count == 0 {
                active.cap = cap;
            } else {
                self.committed = next;
                self.segs.push(Seg {
                    base: next,
                    cap,
                    bytes: 0,
                    count: 0,
                    last_ts: 0,
                });
                // Records are an hour old and the age limit is two hours: only bytes count.
                self.retention(None);
            }
        }
        let active = self.segs.last_mut().unwrap();
        active.bytes += sz;
        active.count += 1;
        active.last_ts = rec.0;
        self.records.push(rec);
        next
    }
}

fn run(storage: Storage, segment: usize, retention_bytes: Option<u64>, ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let opts = LogOptions {
        retention_bytes,
        retention_age: Some(Duration::from_micros(2 * HOUR)),
        ..file_opts(dir.path(), storage, segment as u64)
    };
    let (mut log, _) = Log::open(opts.clone()).unwrap();
    let mut m = Model {
        t0: now_micros() - HOUR,
        records: vec![],
        first: 0,
        committed: 0,
        segs: vec![Seg {
            base: 0,
            cap: segment,
            bytes: 0,
            count: 0,
            last_ts: 0,
        }],
        retention_bytes,
        segment,
        cursor: 0,
    };
    for (step, op) in ops.into_iter().enumerate() {
        match op {
            Op::Append {
                dt,
                topic,
                headers,
                payload,
            } => {
                m.cursor = (m.cursor + dt).max(0);
                let o = m.next();
                let ts = (m.t0 + m.cursor as u64).max(m.records.last().map_or(0, |r| r.0));
                let rec = (
                    ts,
                    vec![b'a' + (o % 26) as u8; topic],
                    vec![o as u8; headers],
                    (0..payload)
                        .map(|j| (o as usize * 7 + j) as u8)
                        .collect::<Vec<u8>>(),
                );
                let got = log.append(m.t0 + m.cursor as u64, &rec.1, &rec.2, &rec.3);
                assert_eq!(got.unwrap(), m.append(rec), "step {step}");
            }
            Op::Commit => {
                log.commit().unwrap();
                m.committed = m.next();
            }
            Op::Read {
                from,
                max_records,
                max_bytes,
            } => {
                let got = log.read(from, max_records, max_bytes).unwrap();
                let mut want = vec![];
                let mut bytes = 0;
                for o in from.max(m.first)..m.committed {
                    let sz = size(&m.records[o as usize]);
                    if want.len() == max_records || (!want.is_empty() && bytes + sz > max_bytes) {
                        break;
                    }
                    bytes += sz;
                    want.push(o);
                }
                let offsets: Vec<u64> = got.iter().map(|r| r.offset).collect();
                assert_eq!(
                    offsets, want,
                    "step {step}: read({from}, {max_records}, {max_bytes})"
                );
                for r in &got {
                    let (ts, t, h, p) = &m.records[r.offset as usize];
                    assert_eq!(r.timestamp, *ts);
                    assert_eq!(
                        (&r.topic[..], &r.headers[..], &r.payload[..]),
                        (&t[..], &h[..], &p[..])
                    );
                }
            }
            Op::ReadTime { dt } => {
                let t = m.t0 + dt;
                let want = (m.first..m.next())
                    .find(|&o| m.records[o as usize].0 >= t)
                    .unwrap_or(m.next());
                assert_eq!(log.offset_for_time(t), want, "step {step}: time {t}");
            }
            Op::Retention { after } => {
                let r = log.enforce_retention(m.t0 + after);
                m.retention(Some(m.t0 + after));
                assert_eq!(r.first_offset, m.first, "step {step}");
            }
            Op::Reopen => {
                if storage != Storage::Memory {
                    drop(log);
                    let (l, report) = Log::open(opts.clone()).unwrap();
                    assert!(report.repairs.is_empty(), "step {step}: {report}");
                    log = l;
                    // Appended records were written into the shared mapping: all survive.
                    m.committed = m.next();
                }
            }
        }
        let st = log.stats();
        assert_eq!(
            (st.first_offset, st.next_offset, log.committed_offset()),
            (m.first, m.next(), m.committed),
            "step {step}"
        );
        assert_eq!(st.segments, m.segs.len(), "step {step}");
        let bytes: usize = m.segs.iter().map(|s| s.bytes).sum();
        assert_eq!(st.bytes, bytes as u64, "step {step}");
        assert_eq!(st.records, m.next() - m.first, "step {step}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn memory_matches_model(segment in prop_oneof![Just(512usize), Just(16384)],
                            ret in prop_oneof![Just(None), (500u64..20000).prop_map(Some)],
                            ops in proptest::collection::vec(op(), 1..150)) {
        run(Storage::Memory, segment, ret, ops);
    }

    #[test]
    fn mmap_matches_model(segment in prop_oneof![Just(512usize), Just(16384)],
                          ret in prop_oneof![Just(None), (500u64..20000).prop_map(Some)],
                          ops in proptest::collection::vec(op(), 1..150)) {
        run(Storage::Mmap, segment, ret, ops);
    }
}
