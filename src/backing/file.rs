//! One array's backing file: being written (`KEY.part`) or complete (`KEY.data`).

use super::bitmap::Bitmap;
use super::dir::BackingDir;
use super::BLOCK;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

/// Bytes written between two saves of the bitmap (each save syncs the data first).
const SAVE_EVERY: u64 = 64 << 20;

/// Where a file being written lives, and the lock that makes this mount its only writer.
pub(super) struct Writing {
    pub part: PathBuf,
    pub map: PathBuf,
    pub data: PathBuf,
    pub _lock: File,
}

struct State {
    /// `None` once complete.
    map: Option<Bitmap>,
    unsaved: u64,
}

/// An array's decoded bytes on local disk, laid out like its file `A`.
pub struct BackingFile {
    file: File,
    size: u64,
    state: Mutex<State>,
    complete: Arc<AtomicBool>,
    writing: Option<Writing>,
    /// Syncs and publishes the file once every block is written, off the read path.
    publishing: Mutex<Option<JoinHandle<()>>>,
    dir: Arc<BackingDir>,
    /// The name of the array's files in `dir`.
    key: String,
    /// `KEY.npy`, once complete (see [`BackingFile::npy_file`]).
    npy: Arc<OnceLock<File>>,
    /// Writes `KEY.npy` off the open path.
    npy_job: Mutex<Option<JoinHandle<()>>>,
    label: String,
}

impl BackingFile {
    /// A complete backing file (`KEY.data`).
    pub(super) fn complete(
        dir: Arc<BackingDir>,
        file: File,
        size: u64,
        key: &str,
        label: &str,
    ) -> Self {
        Self::new(dir, file, size, None, key, label)
    }

    /// A file being written (`KEY.part`): `map` says which blocks are present.
    pub(super) fn partial(
        dir: Arc<BackingDir>,
        file: File,
        size: u64,
        map: Bitmap,
        writing: Writing,
        key: &str,
        label: &str,
    ) -> Self {
        Self::new(dir, file, size, Some((map, writing)), key, label)
    }

    fn new(
        dir: Arc<BackingDir>,
        file: File,
        size: u64,
        partial: Option<(Bitmap, Writing)>,
        key: &str,
        label: &str,
    ) -> Self {
        let (map, writing) = partial.unzip();
        BackingFile {
            file,
            size,
            state: Mutex::new(State { map, unsaved: 0 }),
            complete: Arc::new(AtomicBool::new(writing.is_none())),
            writing,
            publishing: Mutex::new(None),
            dir,
            key: key.to_string(),
            npy: Arc::default(),
            npy_job: Mutex::new(None),
            label: label.to_string(),
        }
    }

    /// True when every byte is present (the file is `KEY.data`).
    pub fn is_complete(&self) -> bool {
        self.complete.load(Ordering::Acquire)
    }

    /// The open file (for passthrough, once complete).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// `A.npy` on local disk (`header`, then this file's bytes) once this file is complete,
    /// for passthrough. The first call after completion starts writing it in the background
    /// (copied from this file in the kernel) and returns `None`, as do calls until it is done;
    /// meanwhile `A.npy` is served by copying from this file.
    pub fn npy_file(&self, header: &[u8]) -> Option<File> {
        if !self.is_complete() {
            return None;
        }
        if let Some(npy) = self.npy.get() {
            return npy.try_clone().ok();
        }
        let len = header.len() as u64 + self.size;
        if let Some(done) = self.dir.complete_npy(&self.key, len) {
            let _ = done.set_modified(std::time::SystemTime::now());
            let _ = self.npy.set(done);
            return self.npy.get()?.try_clone().ok();
        }
        let mut job = self.npy_job.lock().unwrap_or_else(|p| p.into_inner());
        if job.is_some() {
            return None;
        }
        let data = match self.file.try_clone() {
            Ok(f) => f,
            Err(e) => {
                self.dir.write_failed(&e, &self.label);
                return None;
            }
        };
        let (dir, key, size, npy) = (
            self.dir.clone(),
            self.key.clone(),
            self.size,
            self.npy.clone(),
        );
        let (header, label) = (header.to_vec(), self.label.clone());
        let build = move || match dir.build_npy(&key, &data, size, &header) {
            Ok(Some(file)) => {
                log::info!("{label}: its NPY file is on local disk too");
                let _ = npy.set(file);
            }
            Ok(None) => log::debug!("{label}: its NPY file is not written (locked or full)"),
            Err(e) => dir.write_failed(&e, &label),
        };
        self.spawn(&mut job, "backing-npy", build);
        None
    }

    /// Runs `job` on a thread named `name`, kept in `slot` (joined on drop).
    fn spawn(
        &self,
        slot: &mut Option<JoinHandle<()>>,
        name: &str,
        job: impl FnOnce() + Send + 'static,
    ) {
        match std::thread::Builder::new().name(name.into()).spawn(job) {
            Ok(handle) => *slot = Some(handle),
            Err(e) => self.dir.write_failed(&e, &self.label),
        }
    }

    /// Splits `from..to` into runs, each wholly present (`true`) or not.
    pub fn runs(&self, from: u64, to: u64) -> Vec<(u64, u64, bool)> {
        let to = to.min(self.size);
        if from >= to {
            return Vec::new();
        }
        let state = self.lock();
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

    /// Appends bytes `from..to` (present ones: see [`BackingFile::runs`]) to `out`.
    pub fn read_into(&self, from: u64, to: u64, out: &mut Vec<u8>) -> io::Result<()> {
        let at = out.len();
        out.resize(at + (to - from) as usize, 0);
        let read = self.file.read_exact_at(&mut out[at..], from);
        if read.is_err() {
            out.truncate(at);
        } else {
            self.dir.count_hit(to - from);
        }
        read
    }

    /// Writes freshly decoded bytes of `A` at `offset` and records the blocks they fill; the
    /// last one completes the file. A write error turns writing off (see [`BackingDir`]).
    pub fn store(&self, offset: u64, bytes: &[u8]) {
        if self.is_complete() || !self.dir.writable() || bytes.is_empty() {
            return;
        }
        if let Err(e) = self.file.write_all_at(bytes, offset) {
            return self.dir.write_failed(&e, &self.label);
        }
        let end = offset + bytes.len() as u64;
        let first = offset.div_ceil(BLOCK);
        let last = if end >= self.size {
            self.size.div_ceil(BLOCK)
        } else {
            end / BLOCK
        };
        let mut state = self.lock();
        let Some(map) = state.map.as_mut() else {
            return;
        };
        (first..last).for_each(|b| map.set(b));
        if map.is_full() {
            state.unsaved = 0;
            drop(state);
            return self.publish();
        }
        state.unsaved += bytes.len() as u64;
        let result = if state.unsaved >= SAVE_EVERY {
            self.save_map(&mut state)
        } else {
            Ok(())
        };
        if let Err(e) = result {
            self.dir.write_failed(&e, &self.label);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Syncs the data, then replaces the saved bitmap: it never claims unsynced blocks.
    fn save_map(&self, state: &mut State) -> io::Result<()> {
        let (Some(w), Some(map)) = (&self.writing, &state.map) else {
            return Ok(());
        };
        self.file.sync_data()?;
        let tmp = w.map.with_extension("map.tmp");
        std::fs::write(&tmp, map.as_bytes())?;
        File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, &w.map)?;
        state.unsaved = 0;
        Ok(())
    }

    /// Starts syncing the data and renaming `KEY.part` to `KEY.data` on a thread of its own
    /// (syncing waits for the disk; reads go on meanwhile, served from the file).
    fn publish(&self) {
        let Some(w) = &self.writing else { return };
        let mut slot = self.publishing.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() {
            return;
        }
        let file = match self.file.try_clone() {
            Ok(f) => f,
            Err(e) => return self.dir.write_failed(&e, &self.label),
        };
        let (part, data, map) = (w.part.clone(), w.data.clone(), w.map.clone());
        let (dir, complete, label) = (self.dir.clone(), self.complete.clone(), self.label.clone());
        let job = move || {
            let synced = file.sync_all().and_then(|()| std::fs::rename(&part, &data));
            match synced.and_then(|()| File::open(dir.root())?.sync_all()) {
                Ok(()) => {
                    let _ = std::fs::remove_file(&map);
                    complete.store(true, Ordering::Release);
                    log::info!("{label}: decoded completely into {}", data.display());
                }
                Err(e) => dir.write_failed(&e, &label),
            }
        };
        self.spawn(&mut slot, "backing-sync", job);
    }
}

impl Drop for BackingFile {
    fn drop(&mut self) {
        let publishing = self.publishing.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(handle) = publishing.take() {
            let _ = handle.join();
        }
        let npy_job = self.npy_job.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(handle) = npy_job.take() {
            let _ = handle.join();
        }
        let mut state = self.lock();
        if state.map.is_some() && state.unsaved > 0 && self.dir.writable() {
            let _ = self.save_map(&mut state);
        }
    }
}
