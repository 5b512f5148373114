//! One array's backing file: being written (`KEY.part`) or complete (`KEY.data`).

use super::block_map::BlockMap;
use super::dir::{BackingDir, Covers};
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
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// How often the pages of the map changed since the last save are saved (each save syncs the
/// data first, off the read path): a crash loses at most about this much decoding.
const SAVE_EVERY: Duration = Duration::from_secs(2);

/// A file opened again this long after its last mark is marked again as just opened (see
/// [`BackingFile::touch`]).
const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// Where a file being written lives, its map file, and the lock that makes this mount its only
/// writer (let go once the file is complete: a complete array needs none, and may then be
/// evicted).
pub(super) struct Writing {
    pub part: PathBuf,
    pub map: PathBuf,
    pub data: PathBuf,
    pub sum: PathBuf,
    /// `KEY.map`, open for writing records (renamed to `KEY.sum` once complete).
    pub map_file: File,
    pub lock: Mutex<Option<File>>,
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
    file: File,
    size: u64,
    state: Mutex<State>,
    complete: AtomicBool,
    /// Whether the complete file matches its checksums, once checked whole (at once for a
    /// file complete when attached, which was checked then).
    sound: OnceLock<bool>,
    writing: Option<Writing>,
    /// This writer's room in the directory's budget is reserved (see [`BackingDir::attach`]):
    /// given up once the file is complete or dropped.
    reserved: AtomicBool,
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
    /// `KEY.npy`, once complete (see [`BackingFile::npy_file`]).
    npy: Arc<OnceLock<File>>,
    /// Writes `KEY.npy` off the open path.
    npy_job: Mutex<Option<JoinHandle<()>>>,
}

impl BackingFile {
    /// A backing file: complete (`KEY.data`) when `partial` is `None`, else being written
    /// (`KEY.part`, with room reserved for it in the directory), with the map of which blocks
    /// are present and their checksums, and where it is written.
    pub(super) fn new(
        dir: Arc<BackingDir>,
        file: File,
        size: u64,
        partial: Option<(BlockMap, Writing)>,
        key: &str,
        label: &str,
    ) -> Self {
        let (map, writing) = match partial {
            Some((map, writing)) => (Some(map), Some(writing)),
            None => (None, None),
        };
        BackingFile {
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
                sound: match writing {
                    None => OnceLock::from(true),
                    Some(_) => OnceLock::new(),
                },
                reserved: AtomicBool::new(writing.is_some()),
                writing,
                dir,
                key: key.to_string(),
                label: label.to_string(),
            }),
            syncing: Mutex::new(None),
            giving_back: AtomicBool::new(false),
            npy: Arc::default(),
            npy_job: Mutex::new(None),
        }
    }

    /// True when every byte is present (the file is `KEY.data`).
    pub fn is_complete(&self) -> bool {
        self.shared.complete.load(Ordering::Acquire)
    }

    /// True when this file was complete and has since been removed from the directory
    /// (evicted, by any mount; one `stat`): its readers go on reading it, but it takes disk
    /// space until let go.
    pub fn removed(&self) -> bool {
        self.is_complete()
            && !self
                .shared
                .dir
                .is_linked(&self.shared.file, &self.shared.key, "data")
    }

    /// Marks the file as just opened (its modification time orders the directory's LRU), when
    /// its mark is older than a minute: a mount serving an array for days keeps it recent for
    /// the others sharing the directory. One `fstat`, and now and then a time set.
    pub fn touch(&self) {
        let file = &self.shared.file;
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
    /// `None` returned from then on: reads copy from it, checking each block.
    pub fn passthrough(&self) -> Option<&File> {
        if !self.is_complete() {
            return None;
        }
        let s = &self.shared;
        s.sound.get_or_init(|| s.check_whole()).then_some(&s.file)
    }

    /// `A.npy` on local disk (`header`, then this file's bytes) once this file is complete,
    /// for passthrough. The first call after completion starts writing it in the background
    /// (copied from this file in the kernel) and returns `None`, as do calls until it is done;
    /// meanwhile `A.npy` is served by copying from this file.
    pub fn npy_file(&self, header: &[u8]) -> Option<File> {
        // The NPY file is copied from this one: checked first.
        self.passthrough()?;
        if let Some(npy) = self.npy.get() {
            return npy.try_clone().ok();
        }
        let s = &self.shared;
        let len = header.len() as u64 + s.size;
        if let Some(done) = s.dir.complete_npy(&s.key, len) {
            let _ = done.set_modified(std::time::SystemTime::now());
            let _ = self.npy.set(done);
            return self.npy.get()?.try_clone().ok();
        }
        let mut job = self.npy_job.lock();
        if job.is_some() {
            return None;
        }
        let data = match s.file.try_clone() {
            Ok(f) => f,
            Err(e) => {
                s.dir.write_failed(&e, &s.label);
                return None;
            }
        };
        let (dir, key, size, npy) = (s.dir.clone(), s.key.clone(), s.size, self.npy.clone());
        let (header, label) = (header.to_vec(), s.label.clone());
        let build = move || match dir.build_npy(&key, &data, size, &header) {
            Ok(Some(file)) => {
                log::info!("{label}: its NPY file is on local disk too");
                let _ = npy.set(file);
            }
            Ok(None) => log::debug!("{label}: its NPY file is not written (locked or full)"),
            Err(e) => dir.write_failed(&e, &label),
        };
        *job = self.spawn("backing-npy", build);
        None
    }

    /// Runs `job` on a thread named `name`; `None` (writing turned off) when none can start.
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
        if s.state.lock().map.is_none() {
            // Complete, and checked whole when attached.
            let at = out.len();
            out.resize(at + (to - from) as usize, 0);
            let read = s.file.read_exact_at(&mut out[at..], from);
            match read {
                Ok(()) => s.dir.count_hit(to - from),
                Err(_) => out.truncate(at),
            }
            return read;
        }
        let (start, end) = self.whole_blocks(from, to);
        let first = start / BLOCK;
        let mut blocks = vec![0; (end - start) as usize];
        s.file.read_exact_at(&mut blocks, start)?;
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
    /// does not account for (see `Shared::give_back`).
    pub fn store(&self, offset: u64, bytes: &[u8]) {
        let s = &self.shared;
        if self.is_complete() || bytes.is_empty() {
            return;
        }
        if !s.dir.writable() {
            return self.give_back_later();
        }
        let written = allocate(&s.file, offset, bytes.len() as u64)
            .and_then(|()| s.file.write_all_at(bytes, offset));
        if let Err(e) = written {
            s.dir.write_failed(&e, &s.label);
            return self.give_back_later();
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
    /// Reads the whole (complete) file and checks it against the checksums saved in
    /// `KEY.sum` as it was written; a block that fails is marked absent and the file removed
    /// from the directory, with a log line. A file that cannot be read (a transient error) is
    /// only not used whole (no passthrough); its blocks are still checked as they are read.
    fn check_whole(&self) -> bool {
        let Some(w) = &self.writing else {
            return true;
        };
        let bad = match records::verify(&w.map_file, &self.file, self.size) {
            Ok(None) => return true,
            Ok(Some(b)) => b,
            Err(e) => {
                log::warn!(
                    "{}: its backing file cannot be read whole ({e}): not served with passthrough",
                    self.label
                );
                return false;
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
        false
    }

    /// Saves the pages of the map changed since the last save when `due` (a failure turns
    /// writing off and gives back the disk).
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
        let saved = self
            .file
            .sync_data()
            .and_then(|()| records::write(&w.map_file, self.size, &changed))
            .and_then(|()| w.map_file.sync_data());
        match saved {
            Ok(()) => {
                if let Some(map) = self.state.lock().map.as_mut() {
                    map.saved(&changed);
                }
            }
            Err(e) => {
                self.dir.write_failed(&e, &self.label);
                self.give_back();
            }
        }
    }

    /// Syncs the data, saves the last changed pages of the map and renames `KEY.map` to
    /// `KEY.sum` and `KEY.part` to `KEY.data`; only then is the file complete (reads go on
    /// meanwhile, served from the file), and the lock is let go.
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
        let synced = self
            .file
            .sync_all()
            .and_then(|()| records::write(&w.map_file, self.size, &changed))
            .and_then(|()| w.map_file.set_len(records::file_len(self.size)))
            .and_then(|()| w.map_file.sync_all())
            .and_then(|()| std::fs::rename(&w.map, &w.sum))
            .and_then(|()| std::fs::rename(&w.part, &w.data));
        match synced.and_then(|()| File::open(self.dir.root())?.sync_all()) {
            Ok(()) => {
                self.complete.store(true, Ordering::Release);
                w.lock.lock().take();
                self.unreserve();
                log::info!(
                    "{}: decoded completely into {}",
                    self.label,
                    w.data.display()
                );
            }
            Err(e) => {
                self.dir.write_failed(&e, &self.label);
                self.give_back();
            }
        }
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
        for &(from, to) in runs {
            let (at, end) = (from * BLOCK, (to * BLOCK).min(self.size));
            let flags = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
            let _ = rustix::fs::fallocate(&self.file, flags, at, end.saturating_sub(at));
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
    /// save (or, when writing failed, gives back the disk the saved map does not claim).
    fn drop(&mut self) {
        for job in [&mut self.syncing, &mut self.npy_job] {
            if let Some(handle) = job.get_mut().take() {
                let _ = handle.join();
            }
        }
        let s = &self.shared;
        match s.dir.writable() {
            true => s.save_if(|s| s.unsaved),
            false => s.give_back(),
        }
        s.unreserve();
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
