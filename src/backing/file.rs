//! One array's backing file: being written (`KEY.part`) or complete (`KEY.data`).

use super::block_map::BlockMap;
use super::dir::{transient, BackingDir, Covers, HeldLock};
use super::fds::Reopen;
use super::owned::open_owned;
use super::records;
use super::BLOCK;
use parking_lot::Mutex;
use rustix::fs::FallocateFlags;
use rustix::io::Errno;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// How often the pages of the map changed since the last save are saved (each save syncs the
/// data first, off the read path): a crash loses at most about this much decoding.
const SAVE_EVERY: Duration = Duration::from_secs(2);

/// A file opened again this long after its last mark is marked again as just opened (see
/// [`BackingFile::touch`]).
const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// Where a file being written lives, its map file (`KEY.map`, opened to save records, renamed
/// to `KEY.sum` once complete), and the lock that makes this mount its only writer (let go
/// once the file is complete: a complete array needs none, and may then be evicted).
pub(super) struct Writing {
    pub part: PathBuf,
    pub map: PathBuf,
    pub data: PathBuf,
    pub sum: PathBuf,
    pub lock: Mutex<Option<HeldLock>>,
}

impl Writing {
    /// `KEY.map`, open for writing (it exists while this mount holds the lock).
    fn map_file(&self) -> io::Result<File> {
        open_owned(&self.map, true)?.ok_or_else(|| io::ErrorKind::NotFound.into())
    }
}

struct State {
    /// Which blocks are present and their checksums, each checked before the block is served;
    /// `None` for a file complete when attached (checked whole then).
    map: Option<BlockMap>,
    /// Blocks were written since the map was last saved.
    unsaved: bool,
    /// When the map was last saved (or the file opened).
    saved: Instant,
    /// Writing failed: the blocks the saved map does not claim were given back to the file
    /// system (see [`Shared::give_back`]), and none is written any more.
    given_back: bool,
}

/// What the readers and the background jobs share.
struct Shared {
    /// The file, its descriptor among those the directory keeps open (see `fds`).
    file: Reopen,
    size: u64,
    state: Mutex<State>,
    complete: AtomicBool,
    /// Whether the complete file matches its checksums, once checked whole (at once for a
    /// file complete when attached, which was checked then); the lock is held while checking.
    sound: Mutex<Option<bool>>,
    writing: Option<Writing>,
    /// This writer's room in the directory's budget is reserved (see [`BackingDir::attach`]):
    /// given up once the file is complete or dropped.
    reserved: AtomicBool,
    /// The file (or its map) was removed or replaced behind this mount's back (see
    /// [`Shared::gone`]): the array's next open lets go of it (see [`BackingFile::removed`]).
    gone: AtomicBool,
    dir: Arc<BackingDir>,
    /// The name of the array's files in `dir`.
    key: String,
    label: String,
}

/// An array's decoded bytes on local disk, laid out like its file `A`.
pub struct BackingFile {
    shared: Arc<Shared>,
    /// The last background job that syncs (saves the map, publishes the file, gives back the
    /// disk after a write error); each job waits for the one before it.
    syncing: Mutex<Option<JoinHandle<()>>>,
    /// A job giving back the disk was started.
    giving_back: AtomicBool,
    /// `KEY.npy`, once complete (see [`BackingFile::npy_file`]); emptied when it was removed
    /// or replaced since.
    npy: Arc<Mutex<Option<Reopen>>>,
    /// Writes `KEY.npy` off the open path.
    npy_job: Mutex<Option<JoinHandle<()>>>,
    /// The last job writing `KEY.npy` failed for want of a resource (descriptors, memory): the
    /// next call tries again.
    npy_again: Arc<AtomicBool>,
}

impl BackingFile {
    /// A backing file: complete (`KEY.data`) when `partial` is `None`, else being written
    /// (`KEY.part`, with room reserved for it in the directory), with the map of which blocks
    /// are present and their checksums, and where it is written. Its descriptor joins those
    /// the directory keeps open (see `fds`).
    pub(super) fn new(
        dir: Arc<BackingDir>,
        file: File,
        size: u64,
        partial: Option<(BlockMap, Writing)>,
        key: &str,
        label: &str,
    ) -> io::Result<Self> {
        let (map, writing) = match partial {
            Some((map, writing)) => (Some(map), Some(writing)),
            None => (None, None),
        };
        let file = match &writing {
            Some(w) => dir
                .files()
                .register(file, vec![w.part.clone(), w.data.clone()], true)?,
            None => dir
                .files()
                .register(file, vec![dir.file_path(key, "data")], false)?,
        };
        Ok(BackingFile {
            shared: Arc::new(Shared {
                file,
                size,
                state: Mutex::new(State {
                    map,
                    unsaved: false,
                    saved: Instant::now(),
                    given_back: false,
                }),
                complete: AtomicBool::new(writing.is_none()),
                sound: Mutex::new(writing.is_none().then_some(true)),
                reserved: AtomicBool::new(writing.is_some()),
                gone: AtomicBool::new(false),
                writing,
                dir,
                key: key.to_string(),
                label: label.to_string(),
            }),
            syncing: Mutex::new(None),
            giving_back: AtomicBool::new(false),
            npy: Arc::default(),
            npy_job: Mutex::new(None),
            npy_again: Arc::default(),
        })
    }

    /// True when every byte is present (the file is `KEY.data`).
    pub fn is_complete(&self) -> bool {
        self.shared.complete.load(Ordering::Acquire)
    }

    /// True when this file was complete and has since been removed from the directory
    /// (evicted, by any mount; one `stat`), or was found removed or replaced when used: its
    /// readers go on reading it while they can, but it takes disk space until let go.
    pub fn removed(&self) -> bool {
        let s = &self.shared;
        s.gone.load(Ordering::Acquire)
            || (self.is_complete() && !s.file.linked_at(&s.dir.file_path(&s.key, "data")))
    }

    /// Marks the file as just opened (its modification time orders the directory's LRU), when
    /// its mark is older than a minute: a mount serving an array for days keeps it recent for
    /// the others sharing the directory. One `fstat`, and now and then a time set. A file
    /// being written counts as used in this mount (see [`BackingDir::attach`]); one complete
    /// whose publishing could not start is published now.
    pub fn touch(&self) {
        let s = &self.shared;
        if s.writing.is_some() && !self.is_complete() {
            s.dir.writer_used(&s.key);
            if s.state.lock().map.as_ref().is_some_and(BlockMap::is_full) {
                self.in_background(false, "backing-sync", Shared::publish);
            }
        }
        let Ok(file) = s.file() else { return };
        let age = file
            .metadata()
            .and_then(|m| m.modified())
            .map(|t| t.elapsed());
        if !matches!(age, Ok(Ok(age)) if age < TOUCH_EVERY) {
            let _ = file.set_modified(SystemTime::now());
        }
    }

    /// The name of the array's files.
    pub(super) fn key(&self) -> &str {
        &self.shared.key
    }

    /// Size of the file (of what it holds).
    pub fn size(&self) -> u64 {
        self.shared.size
    }

    /// The open file, once complete, for the kernel to read directly (passthrough): checked
    /// whole against its checksums at the first call for a file this mount wrote (one read
    /// of the file). A file that fails is removed from the directory, with a log line, and
    /// `None` returned from then on: reads copy from it, checking each block. One that
    /// cannot be checked now (for want of a resource) is checked again at the next call.
    pub fn passthrough(&self) -> Option<Arc<File>> {
        if !self.is_complete() {
            return None;
        }
        let s = &self.shared;
        let mut sound = s.sound.lock();
        if sound.is_none() {
            *sound = s.check_whole();
        }
        match *sound {
            Some(true) => s.file().ok(),
            _ => None,
        }
    }

    /// `A.npy` on local disk (`header`, then this file's bytes) once this file is complete,
    /// for passthrough. The first call after completion starts writing it in the background
    /// (copied from this file in the kernel) and returns `None`, as do calls until it is done;
    /// meanwhile `A.npy` is served by copying from this file.
    /// One removed or replaced since (evicted, or written again by another mount) is looked
    /// for again, and written again when missing.
    pub fn npy_file(&self, header: &[u8]) -> Option<File> {
        // The NPY file is copied from this one: checked first.
        let data = self.passthrough()?;
        let s = &self.shared;
        let files = s.dir.files();
        {
            let mut npy = self.npy.lock();
            if let Some(known) = npy.as_ref() {
                match files.get(known) {
                    Ok(file) => return file.try_clone().ok(),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        log::debug!(
                            "{}: its NPY file was removed or replaced: looked for again",
                            s.label
                        );
                        files.forget(known);
                        *npy = None;
                        self.npy_again.store(true, Ordering::Relaxed);
                    }
                    Err(_) => return None,
                }
            }
        }
        let len = header.len() as u64 + s.size;
        if let Some(done) = s.dir.complete_npy(&s.key, len) {
            let _ = done.set_modified(std::time::SystemTime::now());
            let path = s.dir.file_path(&s.key, "npy");
            let done = files.register(done, vec![path], false).ok()?;
            let file = files.get(&done).ok()?.try_clone().ok();
            *self.npy.lock() = Some(done);
            return file;
        }
        let mut job = self.npy_job.lock();
        let again = || {
            job.as_ref().is_some_and(|h| h.is_finished())
                && self.npy_again.swap(false, Ordering::Relaxed)
        };
        if job.is_some() && !again() {
            return None;
        }
        let (dir, key, size, npy) = (s.dir.clone(), s.key.clone(), s.size, self.npy.clone());
        let (header, label, retry) = (header.to_vec(), s.label.clone(), self.npy_again.clone());
        let build = move || match dir.build_npy(&key, &data, size, &header) {
            Ok(Some(file)) => {
                log::info!("{label}: its NPY file is on local disk too");
                let path = dir.file_path(&key, "npy");
                match dir.files().register(file, vec![path], false) {
                    Ok(file) => *npy.lock() = Some(file),
                    Err(e) => retry.store(!dir.write_failed(&e, &label), Ordering::Relaxed),
                }
            }
            Ok(None) => log::debug!("{label}: its NPY file is not written (locked or full)"),
            Err(e) => retry.store(!dir.write_failed(&e, &label), Ordering::Relaxed),
        };
        *job = self.spawn("backing-npy", build);
        None
    }

    /// Runs `job` on a thread named `name`; `None` when none can start (writing is turned off
    /// unless that is for want of a resource: tried again later).
    fn spawn(&self, name: &str, job: impl FnOnce() + Send + 'static) -> Option<JoinHandle<()>> {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(job)
            .map_err(|e| self.shared.dir.write_failed(&e, &self.shared.label))
            .ok()
    }

    /// Splits `from..to` into runs, each wholly present (`true`) or not.
    pub fn runs(&self, from: u64, to: u64) -> Vec<(u64, u64, bool)> {
        let to = to.min(self.shared.size);
        if from >= to {
            return Vec::new();
        }
        let state = self.shared.state.lock();
        let Some(map) = &state.map else {
            return vec![(from, to, true)];
        };
        let mut runs: Vec<(u64, u64, bool)> = Vec::new();
        let mut at = from;
        while at < to {
            let b = at / BLOCK;
            let end = ((b + 1) * BLOCK).min(to);
            let here = map.has(b);
            match runs.last_mut() {
                Some(last) if last.2 == here => last.1 = end,
                _ => runs.push((at, end, here)),
            }
            at = end;
        }
        runs
    }

    /// `from..to` widened to whole blocks (up to the end of the file).
    pub fn whole_blocks(&self, from: u64, to: u64) -> (u64, u64) {
        let size = self.shared.size;
        (
            (from / BLOCK) * BLOCK,
            to.div_ceil(BLOCK).saturating_mul(BLOCK).min(size),
        )
    }

    /// Appends bytes `from..to` (present ones: see [`BackingFile::runs`]) to `out`. The
    /// blocks of a file written in this mount are checked against their checksums: a block
    /// that fails is marked absent (decoded and written again) with a log line, and the read
    /// fails.
    pub fn read_into(&self, from: u64, to: u64, out: &mut Vec<u8>) -> io::Result<()> {
        let s = &self.shared;
        let file = s.file()?;
        if s.state.lock().map.is_none() {
            // Complete, and checked whole when attached.
            let at = out.len();
            out.resize(at + (to - from) as usize, 0);
            let read = file.read_exact_at(&mut out[at..], from);
            match read {
                Ok(()) => s.dir.count_hit(to - from),
                Err(_) => out.truncate(at),
            }
            return read;
        }
        let (start, end) = self.whole_blocks(from, to);
        let first = start / BLOCK;
        let mut blocks = vec![0; (end - start) as usize];
        file.read_exact_at(&mut blocks, start)?;
        let mut state = s.state.lock();
        let state = &mut *state;
        let Some(map) = state.map.as_mut() else {
            return Err(io::ErrorKind::InvalidData.into());
        };
        if let Some(bad) = map.mismatch(first, &blocks) {
            map.unset(bad);
            state.unsaved = true;
            log::warn!(
                "{}: block {bad} of its backing file fails its checksum: decoded again",
                s.label
            );
            return Err(io::ErrorKind::InvalidData.into());
        }
        let at = (from - first * BLOCK) as usize;
        out.extend_from_slice(&blocks[at..at + (to - from) as usize]);
        s.dir.count_hit(to - from);
        Ok(())
    }

    /// Writes freshly decoded bytes of `A` at `offset` and records the blocks they fill
    /// wholly; the last one completes the file (synced and published in the background), and
    /// now and then the pages of the map that changed are saved in the background. A write
    /// error turns writing off (see [`BackingDir`]) and gives back the disk the saved map
    /// does not account for (see `Shared::give_back`); when the file cannot be opened for
    /// want of descriptors, or was removed (see [`Shared::gone`]), the bytes are only not
    /// written.
    pub fn store(&self, offset: u64, bytes: &[u8]) {
        let s = &self.shared;
        if self.is_complete() || bytes.is_empty() {
            return;
        }
        if !s.dir.writable() {
            return self.give_back_later();
        }
        let written = s.file().and_then(|file| {
            allocate(&file, offset, bytes.len() as u64)?;
            file.write_all_at(bytes, offset)
        });
        if let Err(e) = written {
            if !s.gone(&e) && s.dir.write_failed(&e, &s.label) {
                self.give_back_later();
            }
            return;
        }
        let end = offset + bytes.len() as u64;
        let first = offset.div_ceil(BLOCK);
        let last = if end >= s.size {
            s.size.div_ceil(BLOCK)
        } else {
            end / BLOCK
        };
        let mut guard = s.state.lock();
        let state = &mut *guard;
        let Some(map) = state.map.as_mut() else {
            return;
        };
        if state.given_back {
            // Written after the disk was given back: given back too.
            let runs = map.absent_runs(offset / BLOCK, end.div_ceil(BLOCK));
            return s.punch(&runs);
        }
        // Once full, the file is being published: nothing more to record.
        if map.is_full() {
            return;
        }
        if first < last {
            let at = (first * BLOCK - offset) as usize;
            let whole = ((last * BLOCK).min(end) - offset) as usize;
            map.record(first, &bytes[at..whole]);
        }
        let full = map.is_full();
        let mut state = guard;
        if full {
            state.unsaved = false;
            drop(state);
            return self.in_background(true, "backing-sync", Shared::publish);
        }
        state.unsaved = true;
        if state.saved.elapsed() >= SAVE_EVERY {
            state.saved = Instant::now();
            drop(state);
            self.in_background(false, "backing-save", |s| s.save_if(|_| true));
        }
    }

    /// Starts giving back the disk the saved map does not account for, once.
    fn give_back_later(&self) {
        if self.shared.writing.is_some() && !self.giving_back.swap(true, Ordering::Relaxed) {
            self.in_background(true, "backing-give-back", Shared::give_back);
        }
    }

    /// Runs `job` on a thread of its own after the previous one; unless `always`, not while
    /// the previous one runs.
    fn in_background(&self, always: bool, name: &str, job: fn(&Shared)) {
        let mut slot = self.syncing.lock();
        if !always && slot.as_ref().is_some_and(|h| !h.is_finished()) {
            return;
        }
        let (before, shared) = (slot.take(), self.shared.clone());
        *slot = self.spawn(name, move || {
            if let Some(before) = before {
                let _ = before.join();
            }
            job(&shared);
        });
    }
}

impl Shared {
    /// The open file (opened again when its descriptor was closed; see [`Shared::gone`]).
    fn file(&self) -> io::Result<Arc<File>> {
        self.dir.files().get(&self.file).inspect_err(|e| {
            self.gone(e);
        })
    }

    /// Whether `e` says that the file or its map is no longer in the directory (`NotFound`:
    /// removed or replaced, by a user or another mount's eviction): no write failure, the
    /// file is gone, and the array's next open lets go of it and attaches it again (see
    /// [`BackingFile::removed`]). Said once in the log.
    fn gone(&self, e: &io::Error) -> bool {
        let gone = e.kind() == io::ErrorKind::NotFound;
        if gone && !self.gone.swap(true, Ordering::AcqRel) {
            log::info!(
                "{}: its backing file was removed or replaced ({e}): let go at its next open",
                self.label
            );
        }
        gone
    }

    /// Reads the whole (complete) file and checks it against the checksums saved in
    /// `KEY.sum` as it was written; a block that fails is marked absent and the file removed
    /// from the directory, with a log line, as is a file or checksums that cannot be read (an
    /// I/O error: reads check each block, and decode those that cannot be read). `None` for a
    /// file that cannot be read now for want of a resource (see [`transient`]): not used whole
    /// (no passthrough) until checked; its blocks are still checked as they are read.
    fn check_whole(&self) -> Option<bool> {
        let Some(w) = &self.writing else {
            return Some(true);
        };
        let checked = open_owned(&w.sum, false)
            .and_then(|sums| sums.ok_or_else(|| io::ErrorKind::NotFound.into()))
            .and_then(|sums| records::verify(&sums, &*self.file()?, self.size));
        let bad = match checked {
            Ok(None) => return Some(true),
            Ok(Some(b)) => b,
            Err(e) if transient(&e) => {
                log::warn!(
                    "{}: its backing file cannot be read whole now ({e}): not served with passthrough",
                    self.label
                );
                return None;
            }
            Err(e) => {
                // Removed only while it is still this file (not another mount's newer one).
                if !self.gone(&e) && self.file.linked_at(&w.data) {
                    log::warn!(
                        "{}: its backing file cannot be read whole ({e}): the file is removed, reads check each block",
                        self.label
                    );
                    for path in [&w.data, &w.sum] {
                        let _ = std::fs::remove_file(path);
                    }
                }
                return Some(false);
            }
        };
        if let Some(map) = self.state.lock().map.as_mut() {
            map.unset(bad);
        }
        log::warn!(
            "{}: block {bad} of its backing file fails its checksum: the file is removed, reads decode that block again",
            self.label
        );
        for path in [&w.data, &w.sum] {
            let _ = std::fs::remove_file(path);
        }
        Some(false)
    }

    /// Saves the pages of the map changed since the last save when `due` (a failure turns
    /// writing off and gives back the disk; for want of a resource, they are saved later).
    fn save_if(&self, due: impl Fn(&State) -> bool) {
        let Some(w) = &self.writing else { return };
        let changed = {
            let mut state = self.state.lock();
            let open = !self.complete.load(Ordering::Acquire) && !state.given_back;
            if !open || !due(&state) || !self.dir.writable() {
                return;
            }
            state.unsaved = false;
            state.saved = Instant::now();
            match state.map.as_mut() {
                Some(map) => map.take_changed(),
                None => return,
            }
        };
        if changed.is_empty() {
            return;
        }
        // Every block in the map was written before its bit was set, and is synced next: the
        // saved map never claims unsynced blocks. Readers and writers go on meanwhile.
        let saved = (|| {
            self.file()?.sync_data()?;
            let map = w.map_file()?;
            records::write(&map, self.size, &changed)?;
            map.sync_data()
        })();
        match saved {
            Ok(()) => {
                if let Some(map) = self.state.lock().map.as_mut() {
                    map.saved(&changed);
                }
            }
            Err(e) => self.not_saved(&e, &changed),
        }
    }

    /// After `changed` (pages of the map) could not be saved: writing is turned off and the
    /// disk given back, or, for want of a resource, they are saved at a later save.
    fn not_saved(&self, e: &io::Error, changed: &[records::Record]) {
        if self.gone(e) {
            return;
        }
        if self.dir.write_failed(e, &self.label) {
            return self.give_back();
        }
        let mut state = self.state.lock();
        if let Some(map) = state.map.as_mut() {
            map.changed_again(changed);
            state.unsaved = true;
        }
    }

    /// Syncs the data, saves the last changed pages of the map and renames `KEY.map` to
    /// `KEY.sum` and `KEY.part` to `KEY.data`; only then is the file complete (reads go on
    /// meanwhile, served from the file), and the lock is let go. The map file is closed once
    /// saved. For want of a resource, publishing is tried again at the next open.
    fn publish(&self) {
        let Some(w) = &self.writing else { return };
        // Published already: a block decoded again after a failed check filled the map once
        // more, and `KEY.part` is gone.
        if self.complete.load(Ordering::Acquire) {
            return;
        }
        // A write or sync failed before (this file's or another's): blocks the file claims may
        // be lost, and a later sync may not tell it (Linux reports a writeback error once).
        if !self.dir.writable() {
            return self.give_back();
        }
        let changed = match self.state.lock().map.as_mut() {
            Some(map) => map.take_changed(),
            None => return,
        };
        let synced = (|| {
            self.file()?.sync_all()?;
            let map = w.map_file()?;
            records::write(&map, self.size, &changed)?;
            map.set_len(records::file_len(self.size))?;
            map.sync_all()
        })();
        if let Err(e) = synced {
            return self.not_saved(&e, &changed);
        }
        if let Some(map) = self.state.lock().map.as_mut() {
            map.saved(&changed);
        }
        let renamed =
            std::fs::rename(&w.map, &w.sum).and_then(|()| std::fs::rename(&w.part, &w.data));
        if let Err(e) = renamed {
            if !self.gone(&e) {
                self.dir.write_failed(&e, &self.label);
                self.give_back();
            }
            return;
        }
        // Complete now; the renames are made durable by syncing the directory (a crash before
        // that may leave `KEY.part` beside `KEY.sum`, which the next writer publishes).
        if let Err(e) = self.dir.sync_root() {
            self.dir.write_failed(&e, &self.label);
        }
        self.complete.store(true, Ordering::Release);
        self.dir.writer_done(&self.key);
        w.lock.lock().take();
        self.unreserve();
        log::info!(
            "{}: decoded completely into {}",
            self.label,
            w.data.display()
        );
    }

    /// After a write error (writing is off): forgets the blocks the saved map does not claim
    /// and punches them out of the file, so that zarrfs does not keep the disk full with bytes
    /// no later mount could use; those blocks read from the store again. Once.
    fn give_back(&self) {
        if self.writing.is_none() || self.complete.load(Ordering::Acquire) {
            return;
        }
        let mut state = self.state.lock();
        if state.given_back {
            return;
        }
        state.given_back = true;
        if let Some(map) = state.map.as_mut() {
            let runs = map.forget_unsaved();
            self.punch(&runs);
            log::info!(
                "{}: the blocks of its backing file no saved map claims are given back to the file system",
                self.label
            );
        }
    }

    /// Deallocates the blocks of `runs` (`from..to` in blocks) from the file.
    fn punch(&self, runs: &[(u64, u64)]) {
        let Ok(file) = self.file() else { return };
        for &(from, to) in runs {
            let (at, end) = (from * BLOCK, (to * BLOCK).min(self.size));
            let flags = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
            let _ = rustix::fs::fallocate(&*file, flags, at, end.saturating_sub(at));
        }
    }

    /// Gives back this writer's room in the directory's budget, once.
    fn unreserve(&self) {
        if self.reserved.swap(false, Ordering::AcqRel) {
            self.dir.unreserve(&self.key, Covers::Array);
        }
    }
}

impl Drop for BackingFile {
    /// Waits for the background jobs, then saves the pages of the map changed since the last
    /// save, or publishes the file when full and not yet published (or, when writing failed,
    /// gives back the disk the saved map does not claim), and closes the file's descriptors.
    fn drop(&mut self) {
        for job in [&mut self.syncing, &mut self.npy_job] {
            if let Some(handle) = job.get_mut().take() {
                let _ = handle.join();
            }
        }
        let s = &self.shared;
        let full = s.state.lock().map.as_ref().is_some_and(BlockMap::is_full);
        match s.dir.writable() {
            // Its publishing failed for want of a resource: tried a last time.
            true if full => s.publish(),
            true => s.save_if(|s| s.unsaved),
            false => s.give_back(),
        }
        s.unreserve();
        if s.writing.is_some() && !self.is_complete() {
            s.dir.writer_done(&s.key);
        }
        let files = s.dir.files();
        files.forget(&s.file);
        if let Some(npy) = self.npy.lock().as_ref() {
            files.forget(npy);
        }
    }
}

/// Allocates `len` bytes of `file` from `offset` before they are written, which spares the file
/// system reserving them page by page as they are copied in (where it cannot, writing does).
fn allocate(file: &File, offset: u64, len: u64) -> io::Result<()> {
    match rustix::fs::fallocate(file, FallocateFlags::empty(), offset, len) {
        Ok(()) | Err(Errno::OPNOTSUPP | Errno::NOSYS) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
