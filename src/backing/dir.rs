//! The cache directory: finding, creating and evicting backing files.

use super::bitmap::Bitmap;
use super::file::{BackingFile, Writing};
use super::owned::{
    claim_dir, create_fresh, open_or_create, open_owned, read_owned, writable_dir, write_synced,
};
use super::sums::Sums;
use super::{Held, Identity};
use parking_lot::Mutex;
use rustix::fs::{flock, FlockOperation};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::SystemTime;

/// A directory of backing files shared by any number of mounts.
pub struct BackingDir {
    root: PathBuf,
    budget: u64,
    writable: AtomicBool,
    /// One eviction at a time in this process.
    evicting: Mutex<()>,
    /// Per key, where this process holds the array's backing file (see [`BackingDir::hold`]).
    held: Mutex<HashMap<String, Vec<Weak<Held>>>>,
    hit_bytes: AtomicU64,
    passthrough_opens: AtomicU64,
}

/// `--cache-dir` given without a directory: `$XDG_CACHE_HOME/zarrfs`, else
/// `$HOME/.cache/zarrfs`; for root, `/var/cache/zarrfs`.
pub fn default_dir() -> PathBuf {
    if rustix::process::geteuid().is_root() {
        return PathBuf::from("/var/cache/zarrfs");
    }
    match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("zarrfs"),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into()))
            .join(".cache/zarrfs"),
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
    /// arrays it holds, with a log line.
    pub fn open(root: &Path, budget: Option<u64>) -> io::Result<Arc<Self>> {
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
            evicting: Mutex::new(()),
            held: Mutex::default(),
            hit_bytes: AtomicU64::new(0),
            passthrough_opens: AtomicU64::new(0),
        }))
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

    /// Turns writing off for good, saying so once.
    pub(super) fn write_failed(&self, e: &io::Error, label: &str) {
        if self.writable.swap(false, Ordering::Relaxed) {
            log::warn!(
                "cache dir {}: cannot write ({label}: {e}); serving uncached from now on",
                self.root.display()
            );
        }
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

    /// Lets go of the backing files of `key` this process holds (see [`BackingDir::hold`]);
    /// one being attached right now is skipped (its next attach sees it removed).
    fn let_go(&self, key: &str) {
        let all = self.held.lock();
        for held in all.get(key).into_iter().flatten().filter_map(Weak::upgrade) {
            if let Some(mut slot) = held.try_lock() {
                slot.take_if(|f| f.key() == key);
            }
        }
    }

    /// Whether `file` is still `KEY.ext` (not evicted nor replaced).
    pub(super) fn is_linked(&self, file: &File, key: &str, ext: &str) -> bool {
        still_linked(file, &self.file_path(key, ext)).unwrap_or(false)
    }

    /// Takes the flock of `KEY.lock` without waiting; `None` when another holds it. An evicter
    /// removes the lock file while holding it: a lock taken on a file no longer linked at the
    /// path is dropped and taken again on the path's new file.
    pub(super) fn take_lock(&self, key: &str) -> Option<File> {
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
                return Some(lock);
            }
        }
    }

    /// The backing file of the array `label` with identity `id` and `size` bytes: the complete
    /// one, or one to write (resumed where a previous writer left off), or `None` when another
    /// mount is writing it, writing is off, or it does not fit the budget.
    pub fn attach(self: &Arc<Self>, id: &Identity, size: u64, label: &str) -> Option<BackingFile> {
        if let Some(done) = self.complete(id, Some(size), label) {
            return Some(done);
        }
        if !self.writable() || size > self.budget {
            return None;
        }
        let Some(lock) = self.take_lock(id.key()) else {
            log::debug!("{label}: another mount is writing its backing file");
            return None;
        };
        // The writer before us may just have finished.
        if let Some(done) = self.complete(id, Some(size), label) {
            return Some(done);
        }
        self.make_room(size, id.key());
        match self.start(id, size, lock, label) {
            Ok(file) => Some(file),
            Err(e) => {
                self.write_failed(&e, label);
                None
            }
        }
    }

    /// The complete backing file with identity `id`, whatever its size (for a file whose size
    /// is known only once it is complete, e.g. the text of a variable-length array).
    pub fn attach_complete(self: &Arc<Self>, id: &Identity, label: &str) -> Option<BackingFile> {
        self.complete(id, None, label)
    }

    /// The complete backing file with identity `id`, when it exists, has `size` bytes (when
    /// given) and every block matches its checksum in `KEY.sum` (read whole here: this runs at
    /// the array's first open in a mount). One that does not is removed, with a log line.
    fn complete(
        self: &Arc<Self>,
        id: &Identity,
        size: Option<u64>,
        label: &str,
    ) -> Option<BackingFile> {
        let path = self.path(id, "data");
        let file = open_owned(&path, false).ok()??;
        let len = file.metadata().ok()?.len();
        if size.is_some_and(|size| size != len) {
            return None;
        }
        let size = len;
        if let Err(why) = verified(&file, size, &self.path(id, "sum")) {
            log::warn!(
                "{label}: backing file {} {why}: removed, the array is decoded again",
                path.display()
            );
            for ext in ["data", "sum", "npy", "npysum"] {
                let _ = std::fs::remove_file(self.path(id, ext));
            }
            return None;
        }
        // The mtime orders the LRU.
        let _ = file.set_modified(SystemTime::now());
        log::info!("{label}: served from backing file {}", path.display());
        Some(BackingFile::new(
            self.clone(),
            file,
            size,
            None,
            id.key(),
            label,
        ))
    }

    fn start(
        self: &Arc<Self>,
        id: &Identity,
        size: u64,
        lock: File,
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
        let resumed = (file.metadata()?.len() == size)
            .then(|| read_owned(&map).ok().flatten())
            .flatten()
            .and_then(|bytes| {
                let (sums, bits) = Sums::parse(size, &bytes)?;
                Some((Bitmap::from_bytes(size, bits.to_vec())?, sums))
            });
        let (written, sums) = match resumed {
            Some(written) => {
                log::info!("{label}: resuming backing file {}", part.display());
                written
            }
            None => {
                let _ = std::fs::remove_file(&map);
                file.set_len(0)?;
                file.set_len(size)?;
                (Bitmap::new(size), Sums::new(size))
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
        Ok(BackingFile::new(
            self.clone(),
            file,
            size,
            Some((written, sums, writing)),
            id.key(),
            label,
        ))
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
        if !self.writable() || len > self.budget {
            return Ok(None);
        }
        let Some(_lock) = self.take_lock(key) else {
            return Ok(None);
        };
        if let Some(done) = self.complete_npy(key, len) {
            return Ok(Some(done));
        }
        self.make_room(len, key);
        let (part, npy) = (self.file_path(key, "npypart"), self.file_path(key, "npy"));
        let written = (|| {
            let mut out = create_fresh(&part)?;
            out.write_all(header)?;
            copy_range(data, &mut out, size)?;
            out.sync_all()?;
            let sums = Sums::of_file(&out, len)?;
            write_synced(&self.file_path(key, "npysum"), &sums.to_bytes())?;
            std::fs::rename(&part, &npy)?;
            File::open(&self.root)?.sync_all()?;
            Ok(out)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&part);
        }
        written.map(Some)
    }

    /// Evicts whole arrays (every file of one key), least recently opened first, until `need`
    /// more bytes fit the budget. Arrays whose lock another holds (being written) and `keep`
    /// stay. Each is removed under its lock, the lock file last. Only files named as zarrfs
    /// names its own are counted or removed: whatever else the directory holds is left alone.
    fn make_room(&self, need: u64, keep: &str) {
        let _one = self.evicting.lock();
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return;
        };
        let mut used = 0u64;
        let mut arrays: HashMap<String, (SystemTime, u64)> = HashMap::new();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some((key, ext)) = backing_name(&name) else {
                continue;
            };
            let Ok(meta) = e.metadata() else { continue };
            let disk = meta.blocks() * 512;
            used += disk;
            if key == keep || ext == "lock" {
                continue;
            }
            let array = arrays
                .entry(key.to_string())
                .or_insert((SystemTime::UNIX_EPOCH, 0));
            if let Ok(mtime) = meta.modified() {
                array.0 = array.0.max(mtime);
            }
            array.1 += disk;
        }
        let mut arrays: Vec<_> = arrays.into_iter().collect();
        arrays.sort_by_key(|(_, (mtime, _))| *mtime);
        for (key, (_, disk)) in arrays {
            if used.saturating_add(need) <= self.budget {
                break;
            }
            let Some(_lock) = self.take_lock(&key) else {
                continue;
            };
            for ext in ARRAY_FILES {
                let _ = std::fs::remove_file(self.file_path(&key, ext));
            }
            let _ = std::fs::remove_file(self.file_path(&key, "lock"));
            self.let_go(&key);
            log::info!("cache dir {}: evicted {key}", self.root.display());
            used = used.saturating_sub(disk);
        }
    }
}

/// Whether `file` is still the file linked at `path` (not removed nor replaced since it was
/// opened).
fn still_linked(file: &File, path: &Path) -> io::Result<bool> {
    let held = file.metadata()?;
    match std::fs::metadata(path) {
        Ok(now) => Ok(now.dev() == held.dev() && now.ino() == held.ino()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// The files of one array besides its lock file.
const ARRAY_FILES: [&str; 7] = ["data", "sum", "part", "map", "npy", "npysum", "npypart"];

/// The key and extension of `name` when it names a file of a backing key (see
/// [`Identity`](super::Identity): 32 hex digits, or those and `.txt` or `.npy`), else `None`.
fn backing_name(name: &str) -> Option<(&str, &str)> {
    let (key, ext) = name.rsplit_once('.')?;
    let hex = key
        .strip_suffix(".txt")
        .or(key.strip_suffix(".npy"))
        .unwrap_or(key);
    let ours = hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    (ours && (ext == "lock" || ARRAY_FILES.contains(&ext))).then_some((key, ext))
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
    #[error("has checksums of another format")]
    OtherFormat,
    /// A block differs from its checksum.
    #[error("fails its checksum at block {0}")]
    Mismatch(u64),
    /// The file itself could not be read.
    #[error("cannot be read ({0})")]
    Unreadable(io::Error),
}

/// Checks the first `size` bytes of `file` against the checksums saved in `sums`; why not
/// when they do not match.
fn verified(file: &File, size: u64, sums: &Path) -> Result<(), Unverified> {
    let saved = read_owned(sums)
        .map_err(Unverified::UnreadableSums)?
        .ok_or(Unverified::NoSums)?;
    let (sums, _) = Sums::parse(size, &saved).ok_or(Unverified::OtherFormat)?;
    match sums.verify(file, size) {
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
        dir.make_room((1 << 20) - (64 << 10), "");
        assert!(root.path().join(format!("{key}.data")).exists());
        // The arrays go to make room for the whole budget; the other files stay.
        dir.make_room(1 << 20, "");
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
        assert!(still_linked(&again, &dir.file_path("k", "lock")).unwrap());
    }
}
