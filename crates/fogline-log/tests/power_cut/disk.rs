//! The disk a power cut leaves behind, rebuilt from the log's durability points.
//!
//! A [`Recorder`] watches one stream directory through the log's sync hook. It keeps what is
//! durable: the directory's entries as of its last fsync (name -> file id, an inode number),
//! and per file the bytes it held when it was synced (an `fsync` syncs all of a file, an
//! `msync` of a range those bytes and the file's length). Everything else is only in the page
//! cache, which writes back whatever it likes, whenever it likes.
//!
//! At every durability point, before it takes effect, the recorder takes a [`Moment`]: the
//! durable state and the live one (the directory and files as they are now). A power cut
//! between the previous point and this one leaves a disk that [`Moment::image`] draws: each
//! entry changed since the directory's fsync as it was or as it is, and each page of a file
//! as synced or as it is now (a record spanning pages may be torn); all synced bytes are
//! there. A `kill -9` leaves the live state on a disk whose durable part is unchanged
//! ([`Recorder::after_kill`]).

use crate::rng::Rng;
use fogline_log::Synced;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::os::unix::fs::{DirEntryExt, FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Once, PoisonError};

/// The unit the page cache writes back.
const PAGE: usize = 4096;

/// Directory entries: file name -> file id.
pub type Names = BTreeMap<String, u64>;
/// File contents by file id.
pub type Contents = HashMap<u64, Arc<Vec<u8>>>;
/// A stream directory to write: file name -> content.
pub type Image = BTreeMap<String, Vec<u8>>;

/// The durable and the live state of a directory at one moment.
#[derive(Clone, Debug)]
pub struct Moment {
    /// Entries as of the directory's last fsync.
    pub durable_names: Names,
    /// Contents as of each file's syncs (a file never synced is empty).
    pub durable: Contents,
    /// Entries now.
    pub live_names: Names,
    /// Contents now, of the files in `live_names`.
    pub live: Contents,
}

/// How much of what was not synced a power cut keeps.
#[derive(Clone, Copy, Debug)]
pub enum Keep {
    /// Nothing: the disk holds exactly what was synced.
    Nothing,
    /// A random half of the pages, entries and lengths.
    Half,
    /// A random eighth.
    Few,
    /// All of it (what a `kill -9` leaves).
    All,
}

impl Keep {
    pub fn random(rng: &mut Rng) -> Keep {
        [Keep::Nothing, Keep::Half, Keep::Few, Keep::All][rng.below(4) as usize]
    }

    fn keeps(self, rng: &mut Rng) -> bool {
        match self {
            Keep::Nothing => false,
            Keep::Half => rng.below(2) == 0,
            Keep::Few => rng.below(8) == 0,
            Keep::All => true,
        }
    }
}

impl Moment {
    /// A disk a power cut at this moment may leave.
    pub fn image(&self, keep: Keep, rng: &mut Rng) -> Image {
        let names: BTreeSet<&String> = self
            .durable_names
            .keys()
            .chain(self.live_names.keys())
            .collect();
        let mut image = Image::new();
        for name in names {
            let (was, is) = (self.durable_names.get(name), self.live_names.get(name));
            let id = if was == is || !keep.keeps(rng) {
                was
            } else {
                is
            };
            let Some(id) = id else { continue };
            let old = self.durable.get(id).map_or(&[][..], |v| &v[..]);
            let new = self.live.get(id).map_or(old, |v| &v[..]);
            let len = if keep.keeps(rng) {
                new.len()
            } else {
                old.len()
            };
            let mut bytes = vec![0u8; len];
            for start in (0..len).step_by(PAGE) {
                let src = if keep.keeps(rng) { new } else { old };
                let end = (start + PAGE).min(len).min(src.len());
                if start < end {
                    bytes[start..end].copy_from_slice(&src[start..end]);
                }
            }
            image.insert(name.clone(), bytes);
        }
        image
    }

    /// What a `kill -9` leaves: the live state.
    pub fn live_image(&self) -> Image {
        self.live_names
            .iter()
            .map(|(name, id)| (name.clone(), self.live[id].to_vec()))
            .collect()
    }
}

/// A moment taken at a durability point, and the workload step it happened in.
#[derive(Debug)]
pub struct Cut {
    pub step: usize,
    pub moment: Moment,
}

/// The durable state of one stream directory, kept up to date by the sync hook.
#[derive(Debug)]
pub struct Recorder {
    dir: PathBuf,
    /// Entries as of the directory's last fsync.
    names: Names,
    /// Contents as of each file's syncs.
    data: Contents,
    /// The live contents at the last moment (unchanged files share them).
    last_live: Contents,
    /// Ids for files that have a durable name but no live one (see `after_kill`).
    next_phantom: u64,
    step: usize,
    /// A crash planned in this step.
    crash: Option<Pick>,
    cuts: Vec<Cut>,
}

/// Picks the moment of a planned crash: one of the step's durability points or its end.
/// Directory syncs are the likeliest, then file syncs: they are rarer than commits, and the
/// creations, renames and removals around them are where a missing sync would hide.
#[derive(Debug)]
struct Pick {
    rng: Rng,
    /// Weight of the points seen so far.
    weight: u64,
    moment: Option<Moment>,
}

impl Pick {
    /// Takes `moment` with the chance its weight gives it; true if it did.
    fn offer(&mut self, weight: u64, moment: &Moment) -> bool {
        self.weight += weight;
        let take = self.rng.below(self.weight) < weight;
        if take {
            self.moment = Some(moment.clone());
        }
        take
    }
}

impl Recorder {
    /// A recorder for `dir`, whose files are all durable as they are (a fresh disk).
    pub fn new(dir: &Path) -> Recorder {
        let names = listing(dir);
        let data = names
            .iter()
            .map(|(name, &id)| (id, Arc::new(read(&dir.join(name)))))
            .collect();
        Recorder {
            dir: dir.to_path_buf(),
            names,
            data,
            last_live: Contents::new(),
            next_phantom: u64::MAX,
            step: 0,
            crash: None,
            cuts: Vec::new(),
        }
    }

    /// A recorder for `dir`, which holds `m.live_image()` and whose disk holds `m`'s durable
    /// part: a process killed at `m` restarts on it (the page cache survived, nothing more
    /// became durable).
    pub fn after_kill(dir: &Path, m: &Moment) -> Recorder {
        let mut r = Recorder::new(dir);
        let now = r.names.clone();
        let id_now = |old: u64| {
            let name = m.live_names.iter().find(|(_, &id)| id == old)?.0;
            now.get(name).copied()
        };
        let mut data = Contents::new();
        for (name, &id) in &now {
            let old = m.live_names[name];
            data.insert(id, m.durable.get(&old).cloned().unwrap_or_default());
        }
        let mut names = Names::new();
        for (name, &old) in &m.durable_names {
            let id = id_now(old).unwrap_or_else(|| {
                r.next_phantom -= 1;
                let synced = m.durable.get(&old).cloned().unwrap_or_default();
                data.insert(r.next_phantom, synced);
                r.next_phantom
            });
            names.insert(name.clone(), id);
        }
        r.names = names;
        r.data = data;
        r
    }

    /// Starts workload step `step`; with `crash`, a crash is planned in it (`crash_moment`
    /// says when, from this seed).
    pub fn begin(&mut self, step: usize, crash: Option<u64>) {
        self.step = step;
        self.crash = crash.map(|seed| Pick {
            rng: Rng::new(seed),
            weight: 0,
            moment: None,
        });
    }

    /// When the crash planned in this step happens: the moment, and whether that is in the
    /// middle of the step (at a durability point) rather than after it.
    pub fn crash_moment(&mut self) -> Option<(Moment, bool)> {
        let mut crash = self.crash.take()?;
        let end = self.moment();
        if crash.offer(1, &end) {
            return Some((end, false));
        }
        crash.moment.map(|m| (m, true))
    }

    /// The cuts taken since the last call.
    pub fn take_cuts(&mut self) -> Vec<Cut> {
        std::mem::take(&mut self.cuts)
    }

    /// The durable and the live state now.
    pub fn moment(&mut self) -> Moment {
        let mut live_names = Names::new();
        let mut live = Contents::new();
        for (name, id) in listing(&self.dir) {
            let bytes = match fs::read(self.dir.join(&name)) {
                Ok(bytes) => bytes,
                // Removed since the listing (retention's thread): gone now.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => panic!("read {name}: {e}"),
            };
            let same = self.last_live.get(&id).filter(|v| ***v == bytes);
            live.insert(id, same.cloned().unwrap_or_else(|| Arc::new(bytes)));
            live_names.insert(name, id);
        }
        self.last_live = live.clone();
        Moment {
            durable_names: self.names.clone(),
            durable: self.data.clone(),
            live_names,
            live,
        }
    }

    /// Takes a cut now.
    pub fn cut(&mut self) {
        let moment = self.moment();
        self.cuts.push(Cut {
            step: self.step,
            moment,
        });
    }

    /// A durability point: a cut just before it, then what it made durable.
    fn synced(&mut self, s: Synced<'_>) {
        self.cut();
        if let (Some(crash), Some(cut)) = (&mut self.crash, self.cuts.last()) {
            let weight = match s {
                Synced::Dir { .. } => 6,
                Synced::File { .. } => 3,
                Synced::Range { .. } => 1,
            };
            crash.offer(weight, &cut.moment);
        }
        match s {
            Synced::Dir { .. } => {
                self.names = listing(&self.dir);
                // A file with no name left, durable or live, is gone for good.
                let named: BTreeSet<u64> = self.names.values().copied().collect();
                self.data.retain(|id, _| named.contains(id));
            }
            Synced::File { path, file } => {
                let id = file.metadata().expect("fstat").ino();
                let meta = fs::metadata(path).expect("a synced file has its name");
                assert_eq!(
                    meta.ino(),
                    id,
                    "{} was renamed while synced",
                    path.display()
                );
                self.data.insert(id, Arc::new(read(path)));
            }
            Synced::Range { path, start, end } => {
                // A segment sealed (so synced whole) and removed before its `SyncJob` ran.
                let Ok(meta) = fs::metadata(path) else { return };
                let mut bytes = vec![0u8; end - start];
                fs::File::open(path)
                    .and_then(|f| f.read_exact_at(&mut bytes, start as u64))
                    .expect("read a synced range");
                let d = Arc::make_mut(self.data.entry(meta.ino()).or_default());
                d.resize(meta.len() as usize, 0);
                d[start..end].copy_from_slice(&bytes);
            }
        }
    }
}

/// A directory's entries (the lock file is no data).
fn listing(dir: &Path) -> Names {
    fs::read_dir(dir)
        .expect("read directory")
        .map(|e| e.expect("directory entry"))
        .filter(|e| e.file_name() != ".lock")
        .map(|e| (e.file_name().into_string().expect("file name"), e.ino()))
        .collect()
}

fn read(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Writes `image` into the empty directory `dir`.
pub fn write_image(dir: &Path, image: &Image) {
    for (name, bytes) in image {
        fs::write(dir.join(name), bytes).expect("write image file");
    }
}

/// A recorder shared with the sync hook.
pub type Shared = Arc<Mutex<Recorder>>;

static WATCHED: Mutex<Vec<(PathBuf, Shared)>> = Mutex::new(Vec::new());
static INSTALL: Once = Once::new();

/// Sends the durability points of `rec`'s directory to it (until `unwatch`).
pub fn watch(rec: &Shared) {
    INSTALL.call_once(|| assert!(fogline_log::set_sync_hook(dispatch), "hook set twice"));
    let dir = lock(rec).dir.clone();
    lock_watched().push((dir, rec.clone()));
}

/// Stops watching `dir`.
pub fn unwatch(dir: &Path) {
    lock_watched().retain(|(d, _)| d != dir);
}

fn dispatch(s: Synced<'_>) {
    let dir = match s {
        Synced::Dir { path } => Some(path),
        Synced::Range { path, .. } | Synced::File { path, .. } => path.parent(),
    };
    let rec = lock_watched()
        .iter()
        .find(|(d, _)| Some(d.as_path()) == dir)
        .map(|(_, r)| r.clone());
    if let Some(rec) = rec {
        lock(&rec).synced(s);
    }
}

pub fn lock(rec: &Shared) -> std::sync::MutexGuard<'_, Recorder> {
    rec.lock().unwrap_or_else(PoisonError::into_inner)
}

fn lock_watched() -> std::sync::MutexGuard<'static, Vec<(PathBuf, Shared)>> {
    WATCHED.lock().unwrap_or_else(PoisonError::into_inner)
}
