//! The three stores under test, behind one trait: fogline (its log plus `ProfileIndex`),
//! SQLite (rusqlite, bundled) and redb. Each stores the same records and answers the same
//! queries with `(offset, timestamp)` pairs in offset order, and each commit is made durable
//! to the [`Durability`] class of the run.

use std::path::Path;

use anyhow::{ensure, Context};
use bytes::Bytes;
use fogline_log::{Log, LogOptions, Storage};
use fogline_profile::{DataProfile, Interest};
use fogline_store::{ProfileIndex, Query};
use redb::{ReadableDatabase, TableDefinition};
use rusqlite::{params, Connection};

/// What a committed record survives; every engine of a run is set to the same class.
#[derive(clap::ValueEnum, serde::Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Durability {
    /// A power loss (or kernel crash): each commit is on the device before it returns.
    PowerLoss,
    /// A crash or `kill -9` of the process (not a power loss): each commit is in the
    /// kernel's page cache before it returns.
    ProcessCrash,
}

impl Durability {
    /// The name used on the command line and in the results.
    pub fn name(self) -> &'static str {
        match self {
            Durability::PowerLoss => "power-loss",
            Durability::ProcessCrash => "process-crash",
        }
    }

    /// Each engine's setting for this class, as the summary states it.
    pub fn settings(self) -> &'static str {
        match self {
            Durability::PowerLoss => {
                "fogline `fsync` storage (a commit msyncs what was appended since the last; \
                 with more than one batch, a batch's msync runs on a second thread while the \
                 previous batch, already durable, is filed in the index, as the node's \
                 flusher and store run: each batch is durable before the next is appended); \
                 SQLite WAL, `synchronous=FULL` (a commit syncs the WAL); \
                 redb `Durability::Immediate` (a commit is synced before it returns)"
            }
            Durability::ProcessCrash => {
                "fogline `mmap` storage (an append is copied into the file's shared mapping, \
                 so it is in the page cache once `append` returns; a commit makes it visible, \
                 no sync); SQLite WAL, `synchronous=NORMAL` (a commit is written to the WAL \
                 with no sync: it survives a process crash, and may roll back after a power \
                 loss); redb `Durability::Immediate`, as in the power-loss class: redb 4.6 \
                 has only `None` and `Immediate`, and a `None` commit updates only the \
                 in-memory copy of the file's header (and may leave pages in redb's own \
                 write buffer), so a killed process reopens at the last `Immediate` commit"
            }
        }
    }
}

/// A record as every engine receives it.
pub struct Rec {
    pub offset: u64,
    pub ts: u64,
    pub topic: String,
    /// The data profile as record headers (fogline's carriage).
    pub headers: Bytes,
    /// The same profile as pairs (what the other engines file).
    pub profile: DataProfile,
    pub payload: Bytes,
}

/// The kinds of query of the paper's figures 6 and 7.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Exact,
    Prefix,
    Suffix,
}

/// A query of one term on one attribute, with its fogline form parsed once (as a
/// subscription's interest would be).
pub struct Ask {
    pub kind: Kind,
    pub attr: &'static str,
    pub value: String,
    pub query: Query,
}

impl Ask {
    pub fn new(kind: Kind, attr: &'static str, value: &str) -> Ask {
        let text = match kind {
            Kind::Exact => format!("{attr}={value}"),
            Kind::Prefix => format!("{attr}={value}*"),
            Kind::Suffix => format!("{attr}=*{value}"),
        };
        let interest = Interest::parse(&text).expect("the bench's queries parse");
        Ask {
            kind,
            attr,
            value: value.to_string(),
            query: Query::new(interest),
        }
    }
}

/// The answer's fingerprint: how many records, and the sum of their offsets.
pub type Answer = (usize, u64);

fn fingerprint(hits: impl Iterator<Item = (u64, u64)>) -> Answer {
    hits.fold((0, 0), |(n, s), (off, _ts)| (n + 1, s + off))
}

/// A store under test.
pub trait Engine {
    /// Stores `recs`, committing (durably) after every `batch` records and after the last.
    fn store(&mut self, recs: &[Rec], batch: usize) -> anyhow::Result<()>;
    /// The records matching `ask`, in offset order, fingerprinted.
    fn query(&mut self, ask: &Ask) -> anyhow::Result<Answer>;
}

/// fogline: the log, with `fsync` storage for power-loss durability (a commit is an msync of
/// what was appended since the previous one) or `mmap` storage for process-crash durability
/// (its default: appends are copied into a shared file mapping), and the index fed from each
/// record's headers, as the node would feed it (with `fsync` storage, from durable records
/// while the next batch is flushed: see `store_pipelined`).
pub struct Fogline {
    log: Log,
    index: ProfileIndex,
}

impl Fogline {
    pub fn open(dir: &Path, durability: Durability) -> anyhow::Result<Self> {
        let opts = LogOptions {
            storage: match durability {
                Durability::PowerLoss => Storage::Fsync,
                Durability::ProcessCrash => Storage::Mmap,
            },
            dir: Some(dir.to_path_buf()),
            ..LogOptions::default()
        };
        let (log, _) = Log::open(opts)?;
        Ok(Fogline {
            log,
            index: ProfileIndex::new(),
        })
    }

    /// Builds a fresh index by scanning the whole log (what the node does at start); the
    /// records it filed.
    pub fn rebuild(&mut self) -> anyhow::Result<usize> {
        let mut index = ProfileIndex::new();
        let mut from = 0;
        let mut batch = Vec::new();
        loop {
            batch.clear();
            self.log.read_into(from, 4096, 16 << 20, &mut batch)?;
            let Some(last) = batch.last() else { break };
            from = last.offset + 1;
            for r in &batch {
                let topic = std::str::from_utf8(&r.topic)?;
                index.insert_block(r.offset, r.timestamp, topic, &r.headers);
            }
        }
        self.index = index;
        Ok(self.index.len())
    }

    /// The index's estimate of its own heap bytes.
    pub fn index_bytes(&self) -> usize {
        self.index.memory_bytes()
    }

    fn append(&mut self, chunk: &[Rec]) -> anyhow::Result<()> {
        for r in chunk {
            let off = self
                .log
                .append(r.ts, r.topic.as_bytes(), &r.headers, &r.payload)?;
            ensure!(off == r.offset, "log offset {off}, expected {}", r.offset);
        }
        Ok(())
    }

    fn file(&mut self, chunk: &[Rec]) {
        for r in chunk {
            self.index
                .insert_block(r.offset, r.ts, &r.topic, &r.headers);
        }
    }

    /// With `fsync` storage and more than one batch, as the node runs it: a batch's flush
    /// runs on another thread (the node's flusher) while the previous batch, already
    /// durable, is filed in the index (the node's store files what its log has committed).
    /// Each batch is durable before the next is appended, and only durable records are
    /// filed.
    fn store_pipelined(&mut self, chunks: &[&[Rec]]) -> anyhow::Result<()> {
        std::thread::scope(|s| {
            let (to_flusher, jobs) = std::sync::mpsc::channel::<fogline_log::SyncJob>();
            let (to_writer, done) = std::sync::mpsc::channel();
            s.spawn(move || {
                for job in jobs {
                    let r = job.run();
                    if to_writer.send((job, r)).is_err() {
                        break;
                    }
                }
            });
            let mut durable: Option<&[Rec]> = None;
            for &chunk in chunks {
                self.append(chunk)?;
                let Some(job) = self.log.sync_job() else {
                    self.log.commit()?;
                    self.file(durable.replace(chunk).unwrap_or_default());
                    continue;
                };
                to_flusher.send(job).context("the flusher thread ended")?;
                self.file(durable.take().unwrap_or_default());
                let (job, flushed) = done.recv().context("the flusher thread ended")?;
                flushed?;
                self.log.finish_sync(&job);
                durable = Some(chunk);
            }
            self.file(durable.unwrap_or_default());
            Ok(())
        })
    }
}

impl Engine for Fogline {
    fn store(&mut self, recs: &[Rec], batch: usize) -> anyhow::Result<()> {
        let chunks: Vec<&[Rec]> = recs.chunks(batch.max(1)).collect();
        if chunks.len() > 1 && self.log.options().storage == Storage::Fsync {
            return self.store_pipelined(&chunks);
        }
        // One batch (nothing to overlap its flush with) or no flush: append, file, commit.
        for chunk in chunks {
            self.append(chunk)?;
            self.file(chunk);
            self.log.commit()?;
        }
        Ok(())
    }

    fn query(&mut self, ask: &Ask) -> anyhow::Result<Answer> {
        let page = self.index.query(&ask.query);
        Ok(fingerprint(
            page.hits.iter().map(|h| (h.offset, h.timestamp_us)),
        ))
    }
}

/// SQLite in WAL mode, with `synchronous=FULL` for power-loss durability (a commit syncs the
/// WAL) or `synchronous=NORMAL` for process-crash durability (a commit writes the WAL without
/// a sync; the WAL is synced at checkpoints). `records(off PRIMARY KEY, ts, topic, payload)` and `attrs(attr, value, off, ts)`,
/// one row per attribute, keyed (and so indexed) by `(attr, value, off)` without rowid.
pub struct Sqlite {
    conn: Connection,
}

impl Sqlite {
    pub fn open(dir: &Path, durability: Durability) -> anyhow::Result<Self> {
        let conn = Connection::open(dir.join("store.sqlite"))?;
        let sync = match durability {
            Durability::PowerLoss => "FULL",
            Durability::ProcessCrash => "NORMAL",
        };
        conn.execute_batch(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous={sync};"
        ))?;
        conn.execute_batch(
            "CREATE TABLE records(off INTEGER PRIMARY KEY, ts INTEGER NOT NULL,
                                  topic TEXT NOT NULL, payload BLOB NOT NULL);
             CREATE TABLE attrs(attr TEXT NOT NULL, value TEXT NOT NULL, off INTEGER NOT NULL,
                                ts INTEGER NOT NULL, PRIMARY KEY(attr, value, off))
                                WITHOUT ROWID;",
        )?;
        Ok(Sqlite { conn })
    }
}

/// The smallest text above every text starting with `prefix` (its last character raised).
fn prefix_end(prefix: &str) -> String {
    let mut s: Vec<char> = prefix.chars().collect();
    match s.pop() {
        Some(c) => {
            s.push(char::from_u32(c as u32 + 1).unwrap_or(char::MAX));
            s.into_iter().collect()
        }
        None => char::MAX.to_string(),
    }
}

impl Engine for Sqlite {
    fn store(&mut self, recs: &[Rec], batch: usize) -> anyhow::Result<()> {
        for chunk in recs.chunks(batch.max(1)) {
            let tx = self.conn.transaction()?;
            {
                let mut rec = tx.prepare_cached("INSERT INTO records VALUES (?1, ?2, ?3, ?4)")?;
                let mut attr = tx.prepare_cached("INSERT INTO attrs VALUES (?1, ?2, ?3, ?4)")?;
                for r in chunk {
                    rec.execute(params![
                        r.offset as i64,
                        r.ts as i64,
                        r.topic,
                        &r.payload[..]
                    ])?;
                    for (a, v) in &r.profile.pairs {
                        let v = v.as_deref().unwrap_or("");
                        attr.execute(params![a, v, r.offset as i64, r.ts as i64])?;
                    }
                }
            }
            tx.commit()?;
        }
        Ok(())
    }

    fn query(&mut self, ask: &Ask) -> anyhow::Result<Answer> {
        let rows = |sql: &str, p: &[&dyn rusqlite::ToSql]| -> anyhow::Result<Answer> {
            let mut st = self.conn.prepare_cached(sql)?;
            let hits = st
                .query_map(p, |row| {
                    Ok((row.get::<_, i64>(0)? as u64, row.get::<_, i64>(1)? as u64))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(fingerprint(hits.into_iter()))
        };
        let (a, v) = (&ask.attr, &ask.value);
        match ask.kind {
            Kind::Exact => rows(
                "SELECT off, ts FROM attrs WHERE attr = ?1 AND value = ?2 ORDER BY off",
                &[a, v],
            ),
            // A range on the key: the prefix form SQLite's planner searches the index with.
            Kind::Prefix => rows(
                "SELECT off, ts FROM attrs WHERE attr = ?1 AND value >= ?2 AND value < ?3
                 ORDER BY off",
                &[a, v, &prefix_end(v)],
            ),
            // No index serves a suffix: the attribute's rows are scanned.
            Kind::Suffix => rows(
                "SELECT off, ts FROM attrs WHERE attr = ?1 AND value GLOB ?2 ORDER BY off",
                &[a, &format!("*{v}")],
            ),
        }
    }
}

const RECORDS: TableDefinition<u64, (u64, &str, &[u8])> = TableDefinition::new("records");
const ATTRS: TableDefinition<(&str, &str, u64), u64> = TableDefinition::new("attrs");

/// redb with `Durability::Immediate` (its default: a commit is synced before it returns) in
/// both classes: its weaker `Durability::None` does not survive a process crash (see
/// [`Durability::settings`]).
/// `records: off -> (ts, topic, payload)` and `attrs: (attr, value, off) -> ts`.
pub struct Redb {
    db: redb::Database,
}

impl Redb {
    pub fn open(dir: &Path) -> anyhow::Result<Self> {
        let db = redb::Database::create(dir.join("store.redb"))?;
        Ok(Redb { db })
    }
}

impl Engine for Redb {
    fn store(&mut self, recs: &[Rec], batch: usize) -> anyhow::Result<()> {
        for chunk in recs.chunks(batch.max(1)) {
            let tx = self.db.begin_write()?;
            {
                let mut records = tx.open_table(RECORDS)?;
                let mut attrs = tx.open_table(ATTRS)?;
                for r in chunk {
                    records.insert(r.offset, (r.ts, r.topic.as_str(), &r.payload[..]))?;
                    for (a, v) in &r.profile.pairs {
                        let v = v.as_deref().unwrap_or("");
                        attrs.insert((a.as_str(), v, r.offset), r.ts)?;
                    }
                }
            }
            tx.commit()?;
        }
        Ok(())
    }

    fn query(&mut self, ask: &Ask) -> anyhow::Result<Answer> {
        let tx = self.db.begin_read()?;
        let attrs = tx.open_table(ATTRS).context("attrs table")?;
        let mut hits = Vec::new();
        let from = if ask.kind == Kind::Suffix {
            ""
        } else {
            &ask.value
        };
        for entry in attrs.range((ask.attr, from, 0)..)? {
            let (key, ts) = entry?;
            let (a, v, off) = key.value();
            if a != ask.attr {
                break;
            }
            let hit = match ask.kind {
                Kind::Exact if v != ask.value => break,
                Kind::Prefix if !v.starts_with(ask.value.as_str()) => break,
                Kind::Suffix => v.ends_with(ask.value.as_str()),
                Kind::Exact | Kind::Prefix => true,
            };
            if hit {
                hits.push((off, ts.value()));
            }
        }
        if ask.kind != Kind::Exact {
            hits.sort_unstable();
        }
        Ok(fingerprint(hits.into_iter()))
    }
}
