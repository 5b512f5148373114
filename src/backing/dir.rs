//! The cache directory: finding, creating and evicting backing files.

use super::block_map::BlockMap;
use super::fds::{OpenFiles, Which};
use super::file::{BackingFile, Writing};
use super::owned::{
    claim_dir, create_fresh, open_or_create, open_owned, writable_dir, write_synced,
};
use super::records;
use super::{Held, Identity};
use parking_lot::Mutex;
use rustix::fs::{flock, FlockOperation};
use rustix::io::Errno;
use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

/// A directory of backing files shared by any number of mounts.
pub struct BackingDir {
    root: PathBuf,
    budget: u64,
    writable: AtomicBool,
    /// The room reserved in the budget for the files this process is writing, by key and
    /// which of the key's files they are (see [`BackingDir::reserve`]); also makes evictions
    /// one at a time in this process.
    reserved: Mutex<HashMap<(String, Covers), u64>>,
    /// The keys of the arrays whose writing did not fit the budget (logged once each).
    refused: Mutex<HashSet<String>>,
    /// Per key, where this process holds the array's backing file (see [`BackingDir::hold`]).
    held: Mutex<HashMap<String, Vec<Weak<Held>>>>,
    hit_bytes: AtomicU64,
    passthrough_opens: AtomicU64,
    /// The descriptors of backing files kept open (see [`OpenFiles`]).
    files: OpenFiles,
    /// The keys of the arrays this process is writing, least recently opened first (see
    /// [`BackingDir::attach`]).
    writers: Mutex<lru::LruCache<String, ()>>,
    /// How many arrays this process writes at once, at most.
    max_writers: usize,
}

/// The soft limit of open descriptors of this process.
fn descriptor_limit() -> u64 {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    limit.current.unwrap_or(u64::MAX)
}

/// Whether `e` is for want of a resource that may come back (descriptors, memory, threads):
/// the cache directory is tried again later, not turned off.
pub(super) fn transient(e: &io::Error) -> bool {
    matches!(
        Errno::from_io_error(e),
        Some(Errno::MFILE | Errno::NFILE | Errno::NOMEM | Errno::AGAIN)
    )
}

/// `--cache-dir` given without a directory: `$XDG_CACHE_HOME/zarrfs`, else
/// `$HOME/.cache/zarrfs`, else (neither set) `/tmp/zarrfs-cache-UID`, directly in `/tmp`,
/// whose sticky bit keeps other users from renaming it away (in a `/tmp/.cache` another user
/// made, they could); for root, `/var/cache/zarrfs`.
pub fn default_dir() -> PathBuf {
    let set = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    let uid = rustix::process::geteuid().as_raw();
    default_dir_of(uid, set("XDG_CACHE_HOME"), set("HOME"))
}

/// [`default_dir`] for user `uid` with those variables.
fn default_dir_of(uid: u32, xdg: Option<OsString>, home: Option<OsString>) -> PathBuf {
    match (uid, xdg, home) {
        (0, _, _) => PathBuf::from("/var/cache/zarrfs"),
        (_, Some(dir), _) => PathBuf::from(dir).join("zarrfs"),
        (_, None, Some(home)) => PathBuf::from(home).join(".cache/zarrfs"),
        (uid, None, None) => PathBuf::from(format!("/tmp/zarrfs-cache-{uid}")),
    }
}

/// 10% of the free space of the filesystem holding `dir`.
pub fn default_budget(dir: &Path) -> io::Result<u64> {
    let st = rustix::fs::statvfs(dir)?;
    Ok(st.f_bavail * st.f_frsize / 10)
}

/// Takes `file`'s exclusive flock without waiting; false when another holds it.
fn try_lock(file: &File) -> bool {
    flock(file, FlockOperation::NonBlockingLockExclusive).is_ok()
}

impl BackingDir {
    /// Uses (and creates, mode 0700) `root`, keeping at most `budget` bytes there (default:
    /// 10% of the free space). `PermissionDenied` when another user owns it or may write into
    /// it (see `claim_dir`). A directory the daemon cannot write into serves the complete
    /// arrays it holds, with a log line. Of the process's descriptor limit (as it is now), a
    /// quarter (at most 1024) is kept open for backing files, and an eighth (at most 512)
    /// arrays are written at once, each holding its lock file open.
    pub fn open(root: &Path, budget: Option<u64>) -> io::Result<Arc<Self>> {
        Self::open_within(root, budget, descriptor_limit())
    }

    /// [`BackingDir::open`] for a process that may have `descriptors` open: a quarter of them
    /// (16 to 1024) are kept open for backing files, and an eighth (8 to 512) arrays are
    /// written at once.
    fn open_within(root: &Path, budget: Option<u64>, descriptors: u64) -> io::Result<Arc<Self>> {
        claim_dir(root)?;
        let budget = match budget {
            Some(b) => b,
            None => default_budget(root)?,
        };
        let writable = writable_dir(root);
        if writable {
            log::info!(
                "cache dir {}: up to {budget} bytes of decoded arrays",
                root.display()
            );
        } else {
            log::warn!(
                "cache dir {}: read-only; complete arrays in it are served, nothing is written",
                root.display()
            );
        }
        Ok(Arc::new(BackingDir {
            root: root.to_path_buf(),
            budget,
            writable: AtomicBool::new(writable),
            reserved: Mutex::default(),
            refused: Mutex::default(),
            held: Mutex::default(),
            hit_bytes: AtomicU64::new(0),
            passthrough_opens: AtomicU64::new(0),
            files: OpenFiles::new((descriptors / 4).clamp(16, 1024) as usize),
            writers: Mutex::new(lru::LruCache::unbounded()),
            max_writers: (descriptors / 8).clamp(8, 512) as usize,
        }))
    }

    /// The descriptors of backing files kept open.
    pub(super) fn files(&self) -> &OpenFiles {
        &self.files
    }

    /// Counts the array `key` as being written by this process, and lets go of the arrays
    /// opened least recently when more than the most written at once are (their readers go
    /// on uncached; their next open attaches them again, resuming their files). An array
    /// counts until its backing file is complete or dropped (see [`BackingDir::writer_done`]):
    /// one that cannot be let go now (being attached) is let go at a later call, and one a
    /// reader still holds counts until that reader drops it. The files let go are dropped here,
    /// holding none of this directory's locks (the caller may hold its array's slot).
    fn started_writing(&self, key: &str) {
        let out: Vec<String> = {
            let mut writers = self.writers.lock();
            writers.push(key.to_string(), ());
            let over = writers.len().saturating_sub(self.max_writers);
            writers
                .iter()
                .rev()
                .take(over)
                .map(|(k, ())| k.clone())
                .collect()
        };
        let mut let_go = Vec::new();
        for key in out {
            log::debug!(
                "cache dir {}: lets go of {key}, written by this mount but opened least recently",
                self.root.display()
            );
            let_go.extend(self.let_go(&key));
        }
        drop(let_go);
    }

    /// Notes that the array `key`, being written, was just opened.
    pub(super) fn writer_used(&self, key: &str) {
        self.writers.lock().promote(key);
    }

    /// Notes that this process no longer writes the array `key` (complete, or let go).
    pub(super) fn writer_done(&self, key: &str) {
        self.writers.lock().pop(key);
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Bytes served by copying from backing files.
    pub fn hit_bytes(&self) -> u64 {
        self.hit_bytes.load(Ordering::Relaxed)
    }

    /// Opens answered with passthrough.
    pub fn passthrough_opens(&self) -> u64 {
        self.passthrough_opens.load(Ordering::Relaxed)
    }

    /// Counts an open answered with passthrough.
    pub fn count_passthrough(&self) {
        self.passthrough_opens.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn count_hit(&self, bytes: u64) {
        self.hit_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(super) fn writable(&self) -> bool {
        self.writable.load(Ordering::Relaxed)
    }

    /// Turns writing off for good, saying so once; true when it is off. An error for want of a
    /// resource (see [`transient`]) does not: what failed is tried again later (false).
    pub(super) fn write_failed(&self, e: &io::Error, label: &str) -> bool {
        if transient(e) {
            log::debug!(
                "cache dir {}: {label}: {e}; served uncached for now, tried again later",
                self.root.display()
            );
            return false;
        }
        if self.writable.swap(false, Ordering::Relaxed) {
            log::warn!(
                "cache dir {}: cannot write ({label}: {e}); serving uncached from now on",
                self.root.display()
            );
        }
        true
    }

    fn path(&self, id: &Identity, ext: &str) -> PathBuf {
        self.file_path(id.key(), ext)
    }

    pub(super) fn file_path(&self, key: &str, ext: &str) -> PathBuf {
        self.root.join(format!("{key}.{ext}"))
    }

    /// Registers `held`, which holds the backing file of `id`: this process's eviction of the
    /// array empties it.
    pub fn hold(&self, id: &Identity, held: &Arc<Held>) {
        let mut all = self.held.lock();
        all.retain(|_, slots| {
            slots.retain(|s| s.strong_count() > 0);
            !slots.is_empty()
        });
        all.entry(id.key().to_string())
            .or_default()
            .push(Arc::downgrade(held));
    }

    /// Makes this directory's renames and removals durable.
    pub(super) fn sync_root(&self) -> io::Result<()> {
        File::open(&self.root)?.sync_all()
    }

    /// Takes every backing file this process holds out of where it is held, for a daemon that
    /// exits while its session still serves the view (a mount detached in use): a file is
    /// finished (its map saved, or published) only as it is dropped, which the caller does
    /// once no reader holds it. A slot an attach holds longer than `wait` (it may be checking a
    /// whole file) is left as it is.
    pub fn let_go_all(&self, wait: Duration) -> Vec<Arc<BackingFile>> {
        // Not under `held`'s lock: an attach holds its slot while it registers it there.
        let held: Vec<Arc<Held>> = self
            .held
            .lock()
            .values()
            .flatten()
            .filter_map(Weak::upgrade)
            .collect();
        let until = Instant::now() + wait;
        held.iter()
            .filter_map(|slot| slot.try_lock_until(until)?.take())
            .collect()
    }

    /// Takes the backing files of `key` this process holds out of their holders (see
    /// [`BackingDir::hold`]); one being attached right now is skipped (its next attach sees it
    /// removed). The caller drops them once it holds no lock: dropping one waits for its
    /// background jobs (which may take this directory's locks) and saves or publishes it.
    #[must_use]
    fn let_go(&self, key: &str) -> Vec<Arc<BackingFile>> {
        let all = self.held.lock();
        let holders = all.get(key).into_iter().flatten().filter_map(Weak::upgrade);
        holders
            .filter_map(|held| held.try_lock()?.take_if(|f| f.key() == key))
            .collect()
    }

    /// Takes the flock of `KEY.lock` without waiting; `None` when another holds it. The lock
    /// file is removed when let go (see [`HeldLock`]), as an evicter does: a lock taken on a
    /// file no longer linked at the path is dropped and taken again on the path's new file.
    pub(super) fn take_lock(&self, key: &str) -> Option<HeldLock> {
        let path = self.file_path(key, "lock");
        loop {
            let lock = match open_or_create(&path) {
                Ok(lock) => lock,
                Err(e) => {
                    self.write_failed(&e, key);
                    return None;
                }
            };
            if !try_lock(&lock) {
                return None;
            }
            if still_linked(&lock, &path).ok()? {
                return Some(HeldLock { file: lock, path });
            }
        }
    }

    /// The backing file of the array `label` with identity `id` and `size` bytes: the complete
    /// one, or one to write (resumed where a previous writer left off), or `None` when another
    /// mount is writing it, writing is off, it does not fit the budget, or its complete file
    /// cannot be checked now (for want of a resource: tried again at the next call). A file
    /// to write reserves its full size (and its map's) in the budget until it is complete: one
    /// that does not fit beside the files being written is not written (one log line). It
    /// counts among the arrays this process writes at once (see `started_writing`).
    pub fn attach(self: &Arc<Self>, id: &Identity, size: u64, label: &str) -> Option<BackingFile> {
        if let Some(done) = self.complete(id, Some(size), label).ok()? {
            return Some(done);
        }
        let need = size.saturating_add(records::file_len(size));
        if !self.writable() || need > self.budget {
            return None;
        }
        let Some(lock) = self.take_lock(id.key()) else {
            log::debug!(
                "{label}: its backing file is being written by another mount, or by one of this mount's writers let go and not yet dropped"
            );
            return None;
        };
        // The writer before us may just have finished, or have stopped between the renames
        // that publish its file.
        if let Some(done) = self.complete(id, Some(size), label).ok()? {
            return Some(done);
        }
        if let Some(done) = self.publish_left(id, size, label).ok()? {
            return Some(done);
        }
        if !self.reserve(id.key(), Covers::Array, need) {
            if self.refused.lock().insert(id.key().to_string()) {
                log::info!(
                    "{label}: its backing file ({need} bytes) does not fit --cache-dir-size beside the files being written; served uncached"
                );
            }
            return None;
        }
        match self.start(id, size, lock, label) {
            Ok(file) => {
                self.started_writing(id.key());
                Some(file)
            }
            Err(e) => {
                self.unreserve(id.key(), Covers::Array);
                self.write_failed(&e, label);
                None
            }
        }
    }

    /// The complete backing file with identity `id`, whatever its size (for a file whose size
    /// is known only once it is complete, e.g. the text of a variable-length array).
    pub fn attach_complete(self: &Arc<Self>, id: &Identity, label: &str) -> Option<BackingFile> {
        self.complete(id, None, label).ok().flatten()
    }

    /// The complete backing file with identity `id`, when it exists, has `size` bytes (when
    /// given) and every block matches its checksum in `KEY.sum` (read whole here: this runs at
    /// the array's first open in a mount). One that does not, or whose bytes or checksums
    /// cannot be read (an I/O error), is removed, with a log line; one that cannot be read now
    /// for want of a resource (see [`transient`]) is kept, and the error returned: the array
    /// is served uncached until it can be checked.
    fn complete(
        self: &Arc<Self>,
        id: &Identity,
        size: Option<u64>,
        label: &str,
    ) -> io::Result<Option<BackingFile>> {
        let path = self.path(id, "data");
        let Some(file) = open_owned(&path, false)? else {
            return Ok(None);
        };
        let len = file.metadata()?.len();
        if size.is_some_and(|size| size != len) {
            return Ok(None);
        }
        let size = len;
        match verified(&file, size, &self.path(id, "sum")) {
            Ok(()) => {}
            Err(why) if why.for_now() => {
                log::warn!(
                    "{label}: backing file {} {why} now: served uncached, checked again at a later open",
                    path.display()
                );
                return Err(io::Error::other(why));
            }
            Err(why) => {
                log::warn!(
                    "{label}: backing file {} {why}: removed, the array is decoded again",
                    path.display()
                );
                for ext in ["data", "sum", "npy", "npysum"] {
                    let _ = std::fs::remove_file(self.path(id, ext));
                }
                return Ok(None);
            }
        }
        // The mtime orders the LRU.
        let _ = file.set_modified(SystemTime::now());
        log::info!("{label}: served from backing file {}", path.display());
        BackingFile::new(self.clone(), file, size, None, id.key(), label).map(Some)
    }

    /// `KEY.part` published as `KEY.data` when it is complete: its writer had synced it and
    /// renamed its map to `KEY.sum` but stopped before renaming it, and every block matches
    /// its checksum (read whole here). `Ok(None)` when there is no such file, or it does not
    /// match or cannot be read (it is decoded again); an error when it cannot be read now, for
    /// want of a resource (see [`transient`]). Called holding the array's lock.
    fn publish_left(
        self: &Arc<Self>,
        id: &Identity,
        size: u64,
        label: &str,
    ) -> io::Result<Option<BackingFile>> {
        let part = self.path(id, "part");
        let Some(file) = open_owned(&part, false)? else {
            return Ok(None);
        };
        if file.metadata()?.len() != size {
            return Ok(None);
        }
        match verified(&file, size, &self.path(id, "sum")) {
            Ok(()) => {}
            Err(why) if why.for_now() => return Err(io::Error::other(why)),
            // A file being written has its map and no sums yet: it is resumed (see `start`).
            Err(Unverified::NoSums) => return Ok(None),
            Err(why) => {
                log::warn!(
                    "{label}: unpublished backing file {} {why}: decoded again",
                    part.display()
                );
                return Ok(None);
            }
        }
        let data = self.path(id, "data");
        std::fs::rename(&part, &data)?;
        self.sync_root()?;
        let _ = std::fs::remove_file(self.path(id, "map"));
        let _ = file.set_modified(SystemTime::now());
        log::info!(
            "{label}: backing file {} was complete but not yet published: published",
            data.display()
        );
        BackingFile::new(self.clone(), file, size, None, id.key(), label).map(Some)
    }

    fn start(
        self: &Arc<Self>,
        id: &Identity,
        size: u64,
        lock: HeldLock,
        label: &str,
    ) -> io::Result<BackingFile> {
        let (part, map, data, sum) = (
            self.path(id, "part"),
            self.path(id, "map"),
            self.path(id, "data"),
            self.path(id, "sum"),
        );
        let file = match open_owned(&part, true)? {
            Some(file) => file,
            None => create_fresh(&part)?,
        };
        let resumed = match open_owned(&map, true)? {
            Some(map_file) if file.metadata()?.len() == size => {
                let written = BlockMap::from_saved(size, records::read_all(&map_file, size)?);
                (!written.is_empty()).then_some(written)
            }
            _ => None,
        };
        let written = match resumed {
            Some(resumed) => {
                log::info!("{label}: resuming backing file {}", part.display());
                resumed
            }
            None => {
                create_fresh(&map)?;
                file.set_len(0)?;
                file.set_len(size)?;
                BlockMap::new(size)
            }
        };
        let _ = file.set_modified(SystemTime::now());
        let writing = Writing {
            part,
            map,
            data,
            sum,
            lock: parking_lot::Mutex::new(Some(lock)),
        };
        BackingFile::new(
            self.clone(),
            file,
            size,
            Some((written, writing)),
            id.key(),
            label,
        )
    }

    /// `KEY.npy` (NPY header then the array's bytes) when it is complete: `len` bytes long
    /// (it is renamed into place only once synced) and matching its checksums (`KEY.npysum`,
    /// read whole here); one that does not is removed, with a log line.
    pub(super) fn complete_npy(&self, key: &str, len: u64) -> Option<File> {
        let path = self.file_path(key, "npy");
        let file = open_owned(&path, false).ok()??;
        if file.metadata().ok()?.len() != len {
            return None;
        }
        if let Err(why) = verified(&file, len, &self.file_path(key, "npysum")) {
            log::warn!("{} {why}: removed, written again", path.display());
            let _ = std::fs::remove_file(&path);
            return None;
        }
        Some(file)
    }

    /// Writes `KEY.npy` from the complete `KEY.data` (`data`, `size` bytes) under the array's
    /// lock: `header`, then the data copied in the kernel, synced, then renamed from
    /// `KEY.npypart`. `Ok(None)` when another mount holds the lock or writing is off.
    pub(super) fn build_npy(
        &self,
        key: &str,
        data: &File,
        size: u64,
        header: &[u8],
    ) -> io::Result<Option<File>> {
        let len = header.len() as u64 + size;
        let need = len.saturating_add(records::file_len(len));
        if !self.writable() || need > self.budget {
            return Ok(None);
        }
        let Some(_lock) = self.take_lock(key) else {
            return Ok(None);
        };
        if let Some(done) = self.complete_npy(key, len) {
            return Ok(Some(done));
        }
        if !self.reserve(key, Covers::Npy, need) {
            return Ok(None);
        }
        let (part, npy) = (self.file_path(key, "npypart"), self.file_path(key, "npy"));
        let written = (|| {
            let mut out = create_fresh(&part)?;
            out.write_all(header)?;
            copy_range(data, &mut out, size)?;
            out.sync_all()?;
            let sums = self.file_path(key, "npysum");
            write_synced(&sums, |to| records::write_of_file(&out, len, to))?;
            std::fs::rename(&part, &npy)?;
            self.sync_root()?;
            Ok(out)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&part);
        }
        self.unreserve(key, Covers::Npy);
        written.map(Some)
    }

    /// Reserves `need` bytes of the budget for the files of `key` that `covers` says, which
    /// this process is about to write, after evicting whole arrays (every file of one key),
    /// least recently opened first, until they fit; false (nothing reserved) when they do not.
    /// Files being written count by their full size: those of this process by their
    /// reservation (or their size on disk, when larger), `.part`, `.map` and `.npypart` files
    /// of other mounts by their length; arrays being written (locked) and `key` itself are not
    /// evicted. Each is removed under its lock, the lock file last; leftovers of an interrupted
    /// save (`.tmp`) of an array nobody is writing are removed. Only files named as zarrfs
    /// names its own are counted or removed: whatever else the directory holds is left alone.
    pub(super) fn reserve(&self, key: &str, covers: Covers, need: u64) -> bool {
        // The files of the arrays evicted, dropped after `reserved` is let go (see `let_go`).
        let mut evicted = Vec::new();
        let mut reserved = self.reserved.lock();
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return false;
        };
        let mut arrays: HashMap<String, ArrayUse> = HashMap::new();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some((k, ext)) = backing_name(&name) else {
                continue;
            };
            let Ok(meta) = e.metadata() else { continue };
            let array = arrays.entry(k.to_string()).or_default();
            array.bytes[Covers::of(ext) as usize] += counted_bytes(ext, &meta);
            array.tmp |= ext.ends_with(".tmp");
            match meta.modified() {
                Ok(mtime) if ext != "lock" => array.mtime = array.mtime.max(mtime),
                _ => {}
            }
        }
        let mut claims = reserved.clone();
        claims.insert((key.to_string(), covers), need);
        let on_disk: u64 = arrays.iter().map(|(k, a)| a.counted(k, &claims)).sum();
        let claimed_only = claims.iter().filter(|((k, _), _)| !arrays.contains_key(k));
        let mut used = on_disk.saturating_add(claimed_only.map(|(_, &n)| n).sum());
        let mut arrays: Vec<_> = arrays
            .into_iter()
            .filter(|(k, _)| !claims.keys().any(|(c, _)| c == k))
            .collect();
        for (k, array) in arrays.iter_mut().filter(|(_, a)| a.tmp) {
            if let Some(_lock) = self.take_lock(k) {
                for ext in ARRAY_FILES {
                    let tmp = self.file_path(k, &format!("{ext}.tmp"));
                    if let Ok(meta) = std::fs::symlink_metadata(&tmp) {
                        if std::fs::remove_file(&tmp).is_ok() {
                            let bytes = counted_bytes(ext, &meta);
                            used = used.saturating_sub(bytes);
                            let counted = &mut array.bytes[Covers::of(ext) as usize];
                            *counted = counted.saturating_sub(bytes);
                        }
                    }
                }
            }
        }
        arrays.sort_by_key(|(_, a)| a.mtime);
        for (k, array) in arrays {
            if used <= self.budget {
                break;
            }
            let Some(_lock) = self.take_lock(&k) else {
                continue;
            };
            for ext in ARRAY_FILES {
                let _ = std::fs::remove_file(self.file_path(&k, ext));
                let _ = std::fs::remove_file(self.file_path(&k, &format!("{ext}.tmp")));
            }
            // The lock file goes last, when `_lock` is dropped.
            evicted.extend(self.let_go(&k));
            log::info!("cache dir {}: evicted {k}", self.root.display());
            used = used.saturating_sub(array.bytes.iter().sum());
        }
        let fits = used <= self.budget;
        if fits {
            reserved.insert((key.to_string(), covers), need);
        }
        drop(reserved);
        drop(evicted);
        fits
    }

    /// Gives back the room reserved for the files of `key` that `covers` says (written, or
    /// given up).
    pub(super) fn unreserve(&self, key: &str, covers: Covers) {
        self.reserved.lock().remove(&(key.to_string(), covers));
    }
}

/// Which files of a key a reservation stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Covers {
    /// The backing file and its map or checksums.
    Array = 0,
    /// The NPY file and its checksums.
    Npy = 1,
}

impl Covers {
    /// The files extension `ext` names belong to.
    fn of(ext: &str) -> Covers {
        match ext.trim_end_matches(".tmp") {
            "npy" | "npysum" | "npypart" => Covers::Npy,
            _ => Covers::Array,
        }
    }
}

/// What the files of one key take, as eviction counts them.
struct ArrayUse {
    /// Bytes, by [`Covers`].
    bytes: [u64; 2],
    /// When it was last opened (the newest modification time of its files).
    mtime: SystemTime,
    /// It has leftovers of an interrupted save.
    tmp: bool,
}

impl Default for ArrayUse {
    fn default() -> Self {
        ArrayUse {
            bytes: [0; 2],
            mtime: SystemTime::UNIX_EPOCH,
            tmp: false,
        }
    }
}

impl ArrayUse {
    /// Bytes counted for the files of key `key`: what they take, or what `claims` reserve
    /// for them, whichever is more.
    fn counted(&self, key: &str, claims: &HashMap<(String, Covers), u64>) -> u64 {
        [Covers::Array, Covers::Npy]
            .into_iter()
            .map(|c| {
                let claim = claims.get(&(key.to_string(), c)).copied().unwrap_or(0);
                self.bytes[c as usize].max(claim)
            })
            .sum()
    }
}

/// The flock of an array's lock file (see [`BackingDir::take_lock`]): the file is removed
/// when the lock is let go, so lock files are left only by a process that stopped holding one.
pub(super) struct HeldLock {
    file: File,
    path: PathBuf,
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        if still_linked(&self.file, &self.path).unwrap_or(false) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether `file` is still the file linked at `path` (not removed nor replaced since it was
/// opened).
fn still_linked(file: &File, path: &Path) -> io::Result<bool> {
    let held = Which::of(&file.metadata()?);
    match std::fs::symlink_metadata(path) {
        Ok(now) => Ok(Which::of(&now) == held),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// The files of one array besides its lock file (and the `EXT.tmp` an interrupted save of
/// one may leave).
const ARRAY_FILES: [&str; 7] = ["data", "sum", "part", "map", "npy", "npysum", "npypart"];

/// The files still being written, which grow to their length.
const GROWING: [&str; 3] = ["part", "map", "npypart"];

/// The bytes the eviction counts for a file with extension `ext` (and `.tmp`, maybe): those it
/// takes on disk, or its length for a file still being written (see [`GROWING`]).
fn counted_bytes(ext: &str, meta: &std::fs::Metadata) -> u64 {
    let disk = meta.blocks() * 512;
    match GROWING.contains(&ext.trim_end_matches(".tmp")) {
        true => disk.max(meta.len()),
        false => disk,
    }
}

/// The key and extension of `name` when it names a file of a backing key (see
/// [`Identity`](super::Identity): 32 hex digits, or those and `.txt` or `.npy`; the extension
/// one of [`ARRAY_FILES`], `lock`, or one of those and `.tmp`), else `None`.
fn backing_name(name: &str) -> Option<(&str, &str)> {
    let base = name.strip_suffix(".tmp").unwrap_or(name);
    let (key, ext) = base.rsplit_once('.')?;
    let hex = key
        .strip_suffix(".txt")
        .or(key.strip_suffix(".npy"))
        .unwrap_or(key);
    let ours = hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let tmp = base.len() < name.len();
    let known = ARRAY_FILES.contains(&ext) || (ext == "lock" && !tmp);
    (ours && known).then_some((key, &name[key.len() + 1..]))
}

/// Why a backing file is not used: the end of a log line naming the file.
#[derive(Debug, thiserror::Error)]
enum Unverified {
    /// Its checksum file could not be read.
    #[error("has unreadable checksums ({0})")]
    UnreadableSums(io::Error),
    /// It has no checksum file.
    #[error("has no checksums")]
    NoSums,
    /// Its checksum file is of another format or size.
    #[error("has checksums of another format or size")]
    OtherFormat,
    /// A block differs from its checksum.
    #[error("fails its checksum at block {0}")]
    Mismatch(u64),
    /// The file itself could not be read.
    #[error("cannot be read ({0})")]
    Unreadable(io::Error),
}

impl Unverified {
    /// Whether the file could not be checked only for want of a resource (see [`transient`]):
    /// it is kept and checked again later. For any other reason (an I/O error too: a bad
    /// sector would fail at every open) it is not used, and decoded again.
    fn for_now(&self) -> bool {
        matches!(self, Unverified::UnreadableSums(e) | Unverified::Unreadable(e) if transient(e))
    }
}

/// Checks the first `size` bytes of `file` against the checksums saved in `sums`; why not
/// when they do not match.
fn verified(file: &File, size: u64, sums: &Path) -> Result<(), Unverified> {
    let saved = open_owned(sums, false)
        .map_err(Unverified::UnreadableSums)?
        .ok_or(Unverified::NoSums)?;
    let len = saved.metadata().map_err(Unverified::UnreadableSums)?.len();
    if len != records::file_len(size) {
        return Err(Unverified::OtherFormat);
    }
    match records::verify(&saved, file, size) {
        Ok(None) => Ok(()),
        Ok(Some(b)) => Err(Unverified::Mismatch(b)),
        Err(e) => Err(Unverified::Unreadable(e)),
    }
}

/// Copies the first `size` bytes of `from` to the end of `to`: in the kernel
/// (`copy_file_range`, which `io::copy` uses between files), else through a buffer.
fn copy_range(mut from: &File, to: &mut File, size: u64) -> io::Result<()> {
    from.rewind()?;
    if io::copy(&mut io::Read::take(from, size), to)? != size {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

impl Drop for BackingDir {
    fn drop(&mut self) {
        log::info!(
            "cache dir {}: {} bytes copied from backing files, {} opens answered with passthrough",
            self.root.display(),
            self.hit_bytes(),
            self.passthrough_opens()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_directory_is_never_below_a_directory_another_user_may_own() {
        let dir = |xdg: Option<&str>, home: Option<&str>| {
            default_dir_of(1000, xdg.map(Into::into), home.map(Into::into))
        };
        assert_eq!(dir(Some("/x"), Some("/h")), Path::new("/x/zarrfs"));
        assert_eq!(dir(None, Some("/h")), Path::new("/h/.cache/zarrfs"));
        // Not /tmp/.cache/zarrfs: /tmp/.cache may be another user's, who could swap it.
        assert_eq!(dir(None, None), Path::new("/tmp/zarrfs-cache-1000"));
        assert_eq!(
            default_dir_of(0, None, None),
            Path::new("/var/cache/zarrfs")
        );
    }

    #[test]
    fn a_lock_file_removed_or_replaced_after_its_open_is_no_longer_linked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.lock");
        let first = File::create(&path).unwrap();
        assert!(still_linked(&first, &path).unwrap());
        std::fs::remove_file(&path).unwrap();
        assert!(!still_linked(&first, &path).unwrap());
        let second = File::create(&path).unwrap();
        assert!(!still_linked(&first, &path).unwrap());
        assert!(still_linked(&second, &path).unwrap());
    }

    #[test]
    fn eviction_counts_and_removes_only_files_zarrfs_names() {
        let root = tempfile::tempdir().unwrap();
        let dir = BackingDir::open(root.path(), Some(1 << 20)).unwrap();
        let key = "0123456789abcdef0123456789abcdef";
        let foreign = ["x.npy", "download.part", "notes.data", "0123.sum", "a.lock"];
        for name in foreign {
            std::fs::write(root.path().join(name), vec![1u8; 2 << 20]).unwrap();
        }
        for name in [format!("{key}.data"), format!("{key}.txt.sum")] {
            std::fs::write(root.path().join(name), vec![1u8; 8192]).unwrap();
        }
        // 10 MiB of other files do not count: room for all but 64 KiB of the budget is there.
        let new = "fedcba9876543210fedcba9876543210";
        assert!(dir.reserve(new, Covers::Array, (1 << 20) - (64 << 10)));
        assert!(root.path().join(format!("{key}.data")).exists());
        dir.unreserve(new, Covers::Array);
        // The arrays go to make room for the whole budget; the other files stay.
        assert!(dir.reserve(new, Covers::Array, 1 << 20));
        for name in foreign {
            assert!(root.path().join(name).exists(), "{name}");
        }
        assert!(!root.path().join(format!("{key}.data")).exists());
        assert!(!root.path().join(format!("{key}.txt.sum")).exists());
        assert_eq!(
            backing_name(&format!("{key}.npy.npysum")),
            Some((&*format!("{key}.npy"), "npysum"))
        );
        assert_eq!(backing_name(&format!("{key}.data.data")), None);
        assert_eq!(
            backing_name(&format!("{key}.txt.map.tmp")),
            Some((&*format!("{key}.txt"), "map.tmp"))
        );
        assert_eq!(backing_name(&format!("{key}.lock.tmp")), None);
        assert_eq!(backing_name(&format!("{key}.tmp")), None);
    }

    /// Bytes the files of `root` take on disk.
    fn disk_use(root: &Path) -> u64 {
        std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().blocks() * 512)
            .sum()
    }

    #[test]
    fn files_being_written_hold_their_whole_size_in_the_budget() {
        let root = tempfile::tempdir().unwrap();
        let dir = BackingDir::open(root.path(), Some(100_000)).unwrap();
        let [a, b, c] = ["a", "b", "c"].map(|k| k.repeat(32));
        // Another mount's partial file, sparse: counted by its length.
        let other = File::create(dir.file_path(&c, "part")).unwrap();
        other.set_len(30_000).unwrap();
        let writing = dir.take_lock(&c).unwrap();
        assert!(dir.reserve(&a, Covers::Array, 40_000));
        // Nothing written yet by `a`: its reservation counts.
        assert!(!dir.reserve(&b, Covers::Array, 40_000));
        assert!(dir.reserve(&b, Covers::Array, 30_000));
        // Once `a` is written and its reservation given up, its file counts.
        std::fs::write(dir.file_path(&a, "data"), vec![1u8; 40_000]).unwrap();
        dir.unreserve(&a, Covers::Array);
        assert!(!dir.reserve(&a, Covers::Npy, 4096), "no array is evictable");
        drop(writing);
        // Without its lock, the other mount's partial file goes (the oldest).
        other.set_modified(SystemTime::UNIX_EPOCH).unwrap();
        assert!(dir.reserve(&a, Covers::Npy, 4096));
        assert!(!dir.file_path(&c, "part").exists());
    }

    #[test]
    fn leftovers_of_an_interrupted_save_are_counted_and_removed_unless_locked() {
        let root = tempfile::tempdir().unwrap();
        let dir = BackingDir::open(root.path(), Some(1 << 20)).unwrap();
        let [a, b, c] = ["a", "b", "c"].map(|k| k.repeat(32));
        for (key, ext) in [
            (&a, "map.tmp"),
            (&a, "part"),
            (&b, "npysum.tmp"),
            (&c, "sum.tmp"),
        ] {
            std::fs::write(dir.file_path(key, ext), vec![1u8; 200_000]).unwrap();
        }
        let writing = dir.take_lock(&c).unwrap();
        // 800 KB in use: 300 KB more do not fit until the leftovers of `a` and `b` go.
        let d = "d".repeat(32);
        assert!(dir.reserve(&d, Covers::Array, 300_000));
        dir.unreserve(&d, Covers::Array);
        assert!(!dir.file_path(&a, "map.tmp").exists());
        assert!(!dir.file_path(&b, "npysum.tmp").exists());
        assert!(dir.file_path(&a, "part").exists(), "no eviction was needed");
        assert!(
            dir.file_path(&c, "sum.tmp").exists(),
            "its writer holds the lock"
        );
        assert_eq!(disk_use(root.path()), 400_000_u64.next_multiple_of(4096));
        // Evicted with its key.
        drop(writing);
        assert!(dir.reserve(&"e".repeat(32), Covers::Array, 1 << 20));
        assert_eq!(disk_use(root.path()), 0);
    }

    #[test]
    fn a_writer_that_cannot_be_let_go_now_still_counts_and_is_let_go_later() {
        let (root, stored) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        // 64 descriptors: 8 arrays written at once.
        let dir = BackingDir::open_within(root.path(), Some(1 << 30), 64).unwrap();
        let location = stored.path().to_str().unwrap();
        let store = crate::store::open(location).unwrap();
        let held: Vec<Arc<Held>> = (0..10).map(|_| Arc::default()).collect();
        // As a file of a view attaches its backing file (see `ArrayBacking::attach`).
        let attach = |i: usize| {
            let path = format!("a{i}");
            let (id, _) = Identity::of(store.as_ref(), location, (&path, &path), b"{}").unwrap();
            let mut slot = held[i].lock();
            *slot = dir.attach(&id, 3 * 4096, &path).map(Arc::new);
            assert!(slot.is_some(), "{path}");
            dir.hold(&id, &held[i]);
        };
        let locks = || files_ending(root.path(), ".lock");
        for i in 0..8 {
            attach(i);
        }
        assert_eq!(locks(), 8);
        // The least recently opened is being attached again right now: it cannot be let go.
        let busy = held[0].lock();
        attach(8);
        drop(busy);
        assert_eq!(locks(), 9);
        // It still counts, and goes at the next writer, with the next least recent one.
        attach(9);
        assert_eq!(locks(), 8);
        assert!(held[0].lock().is_none() && held[1].lock().is_none());
        assert!(held[2..].iter().all(|h| h.lock().is_some()));
        drop(held);
        assert_eq!(locks(), 0);
        assert_eq!(files_ending(root.path(), ".part"), 10);
    }

    /// Names in `root` ending in `end`.
    fn files_ending(root: &Path, end: &str) -> usize {
        std::fs::read_dir(root)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(end)
            })
            .count()
    }

    #[test]
    fn only_a_file_unreadable_for_want_of_a_resource_is_kept_to_be_checked_later() {
        let unreadable = |e: Errno| Unverified::Unreadable(e.into());
        let unreadable_sums = |e: Errno| Unverified::UnreadableSums(e.into());
        for e in [Errno::MFILE, Errno::NFILE, Errno::NOMEM, Errno::AGAIN] {
            assert!(
                unreadable(e).for_now() && unreadable_sums(e).for_now(),
                "{e}"
            );
        }
        // A bad sector, or any other error: removed and decoded again.
        for e in [Errno::IO, Errno::ISDIR, Errno::ACCESS] {
            assert!(
                !unreadable(e).for_now() && !unreadable_sums(e).for_now(),
                "{e}"
            );
        }
        assert!(!Unverified::Mismatch(3).for_now() && !Unverified::NoSums.for_now());
    }

    #[test]
    fn a_lock_held_elsewhere_is_not_taken_and_an_evicted_one_is_taken_fresh() {
        let root = tempfile::tempdir().unwrap();
        let dir = BackingDir::open(root.path(), Some(1 << 20)).unwrap();
        let held = dir.take_lock("k").unwrap();
        assert!(dir.take_lock("k").is_none());
        // An evicter removes the lock file while holding it, then lets go.
        std::fs::remove_file(dir.file_path("k", "lock")).unwrap();
        drop(held);
        let again = dir.take_lock("k").unwrap();
        assert!(still_linked(&again.file, &dir.file_path("k", "lock")).unwrap());
        // Let go, it is removed.
        drop(again);
        assert!(!dir.file_path("k", "lock").exists());
    }
}
