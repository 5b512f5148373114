//! Selection files by name: `A[SEL]`, `A[SEL].npy` and `A[SEL].json` in the directory of array
//! `A`. They are not listed (the namespace is infinite); a lookup parses the name and gives the
//! file an inode. The table counts the kernel's references as the kernel does (one per lookup
//! answered, given back by `forget`): a file the kernel still knows, open or cached, keeps its
//! inode; past a bound, the files it has forgotten are let go, oldest first.

use super::kinds::{extend_range, Measure, ReadAt, Reply, ServedFile};
use super::npy::read_after_header;
use super::selection::{split_name, Selection};
use super::slice_file::{selection_json, SliceFile};
use super::vlen_file::{Part, VlenFile};
use super::{ArrayPart, Attr, Attrs, Content, TextFile, View, ViewError, Wait};
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Inode numbers of selection files start here (the tree's own inodes are numbered from 1).
const SLICE_INO_BASE: u64 = 1 << 62;
/// Selection files kept once the kernel has forgotten them; past this, the first forgotten
/// are let go.
const MAX_SLICES: usize = 4096;

/// What a selection file holds.
#[derive(Clone)]
enum Body {
    /// The selected elements, read from the chunks.
    Data(Arc<SliceFile>),
    /// The NPY header plus the selected elements.
    Npy(Arc<SliceFile>),
    /// A selection of a variable-length array: its text (`A[SEL]`) or NPY file (`.npy`).
    Vlen(Arc<VlenFile>, Part),
    /// The `.json` document.
    Bytes(Arc<[u8]>),
}

/// One selection file.
#[derive(Clone)]
pub(super) struct SliceEntry {
    body: Body,
    pub(super) mtime: SystemTime,
}

/// A selection file, its name, and how many of its lookups the kernel has not forgotten.
struct Slot {
    entry: SliceEntry,
    name: (u64, String),
    lookups: u64,
    /// In `Table::forgotten`.
    queued: bool,
}

#[derive(Default)]
struct Table {
    by_name: HashMap<(u64, String), u64>,
    by_ino: HashMap<u64, Slot>,
    /// Inodes whose lookups all were forgotten, in that order (some looked up again since),
    /// each once.
    forgotten: VecDeque<u64>,
    next: u64,
}

/// The selection files looked up so far (thread-safe, bounded).
#[derive(Default)]
pub struct SliceTable {
    table: Mutex<Table>,
    /// The selection files holding their selection in memory, oldest first, and those bytes.
    buffered: Mutex<(VecDeque<Arc<SliceFile>>, u64)>,
    /// The selection files open, by handle.
    open: Mutex<HashMap<u64, Arc<SliceFile>>>,
    /// Invalid names logged in the current minute, and when it started: any user may look up
    /// names, so their warnings are rate-limited.
    refused: Mutex<(u32, Option<Instant>)>,
}

/// Invalid selection names logged a minute at most; the others are logged at debug level.
const REFUSED_LOGGED: u32 = 100;

impl SliceTable {
    /// Logs why the selection name `shown` is refused, as a warning unless
    /// [`REFUSED_LOGGED`] were this minute; returns the level.
    fn refused(&self, shown: &str, reason: &dyn std::fmt::Display) -> log::Level {
        let mut refused = self.refused.lock();
        let now = Instant::now();
        if refused
            .1
            .is_none_or(|start| now.duration_since(start) >= Duration::from_secs(60))
        {
            *refused = (0, Some(now));
        }
        refused.0 = refused.0.saturating_add(1);
        match refused.0 {
            n if n <= REFUSED_LOGGED => log::warn!("{shown}: {reason}"),
            n if n == REFUSED_LOGGED + 1 => log::warn!(
                "{shown}: {reason} (further refused selection names are logged at debug level \
                 until the minute is over)"
            ),
            _ => {
                log::debug!("{shown}: {reason}");
                return log::Level::Debug;
            }
        }
        log::Level::Warn
    }

    fn get(&self, ino: u64) -> Option<SliceEntry> {
        self.table.lock().by_ino.get(&ino).map(|s| s.entry.clone())
    }

    /// The inode of `name` in `parent`, if it has one, looked up once more when `count`.
    fn find(&self, parent: u64, name: &str, count: bool) -> Option<u64> {
        let mut t = self.table.lock();
        let ino = *t.by_name.get(&(parent, name.to_string()))?;
        let slot = t.by_ino.get_mut(&ino)?;
        slot.lookups += u64::from(count);
        Some(ino)
    }

    /// Remembers `entry` as `name` in `parent` (unless another lookup just did), looked up
    /// once, and returns its inode.
    fn insert(&self, parent: u64, name: &str, entry: SliceEntry) -> u64 {
        let mut t = self.table.lock();
        let key = (parent, name.to_string());
        if let Some(&ino) = t.by_name.get(&key) {
            if let Some(slot) = t.by_ino.get_mut(&ino) {
                slot.lookups += 1;
            }
            return ino;
        }
        while t.by_ino.len() >= MAX_SLICES {
            let Some(old) = t.forgotten.pop_front() else {
                break;
            };
            let Some(slot) = t.by_ino.get_mut(&old) else {
                continue;
            };
            slot.queued = false;
            if slot.lookups == 0 {
                let name = slot.name.clone();
                t.by_ino.remove(&old);
                t.by_name.remove(&name);
            }
        }
        let ino = SLICE_INO_BASE + t.next;
        t.next += 1;
        t.by_name.insert(key.clone(), ino);
        let slot = Slot {
            entry,
            name: key,
            lookups: 1,
            queued: false,
        };
        t.by_ino.insert(ino, slot);
        ino
    }

    /// The kernel forgets `n` lookups of selection file `ino`.
    pub(super) fn forget(&self, ino: u64, n: u64) {
        let mut t = self.table.lock();
        let Some(slot) = t.by_ino.get_mut(&ino) else {
            return;
        };
        slot.lookups = slot.lookups.saturating_sub(n);
        if slot.lookups == 0 && !slot.queued {
            slot.queued = true;
            t.forgotten.push_back(ino);
        }
    }

    /// The lookups of selection files the kernel has not forgotten yet.
    pub(super) fn held(&self) -> u64 {
        self.table.lock().by_ino.values().map(|s| s.lookups).sum()
    }

    /// Lets `file` gather its selection in memory when it takes at most a quarter of the cache
    /// budget `cache`. The oldest buffers are let go first: those of files no handle has open,
    /// until what stays fits in a sixteenth of the cache with this one, then, if need be, any,
    /// until all fit in the quarter. A buffer let go returns its memory to the spares, so this
    /// selection is gathered in memory already mapped, not fresh pages.
    fn hold_buffer(&self, file: &Arc<SliceFile>, cache: u64) {
        let (largest, kept, size) = (cache / 4, cache / 16, file.gathered_size());
        if !file.may_hold_buffer(largest) {
            return;
        }
        let mut held = self.buffered.lock();
        let (files, bytes) = &mut *held;
        let mut at = 0;
        while *bytes + size > kept && at < files.len() {
            if files[at].is_open() {
                at += 1;
            } else if let Some(old) = files.remove(at) {
                *bytes = bytes.saturating_sub(old.gathered_size());
                old.drop_buffer();
            }
        }
        while *bytes + size > largest {
            let Some(old) = files.pop_front() else { break };
            *bytes = bytes.saturating_sub(old.gathered_size());
            old.drop_buffer();
        }
        if file.hold_buffer(largest) {
            *bytes += size;
            files.push_back(file.clone());
        }
    }

    /// Handle `fh` of `file` is open.
    fn opened(&self, fh: u64, file: &Arc<SliceFile>) {
        file.count_handle(true);
        self.open.lock().insert(fh, file.clone());
    }

    /// Handle `fh` is released (nothing when it is not a selection file's).
    pub(super) fn release(&self, fh: u64) {
        if let Some(file) = self.open.lock().remove(&fh) {
            file.count_handle(false);
        }
    }
}

/// True when `ino` numbers a selection file.
pub(super) fn is_slice(ino: u64) -> bool {
    ino >= SLICE_INO_BASE
}

impl View {
    /// The selection file `name` in directory `parent`, made on first lookup (only by a call
    /// that may wait: making it may read the store). Names that are not selections of an
    /// array there are not found; an invalid selection is not found either, and says why in
    /// one log line.
    pub(super) fn lookup_slice(
        &self,
        parent: u64,
        name: &str,
        wait: Wait,
    ) -> Result<Attr, ViewError> {
        if wait == Wait::No {
            // Its lookup is counted only once answered: a lookup given back would put the file
            // among those that may be dropped, and the call that waits counts it anyway.
            if let Some(ino) = self.slices.find(parent, name, false) {
                // Not counted, the file may be dropped meanwhile: the call that waits tells.
                let Ok(attr) = self.getattr_with(ino, wait) else {
                    return Err(ViewError::WouldBlock);
                };
                return match self.slices.find(parent, name, true) {
                    Some(again) if again == ino => Ok(attr),
                    Some(other) => {
                        self.slices.forget(other, 1);
                        Err(ViewError::WouldBlock)
                    }
                    None => Err(ViewError::WouldBlock),
                };
            }
        } else if let Some(ino) = self.slices.find(parent, name, true) {
            return self.attr_of_looked_up(ino, wait);
        }
        let (array_name, text, suffix) = split_name(name).ok_or(ViewError::NotFound)?;
        let dir = self.dir(parent, wait)?;
        let array_ino = dir.get(array_name).ok_or(ViewError::NotFound)?;
        let inode = self.inode(array_ino)?;
        let selectable = matches!(
            inode.content,
            Content::Array(ArrayPart { npy: false, .. })
                | Content::Text(TextFile {
                    part: Part::Text,
                    ..
                })
        );
        if !selectable {
            return Err(ViewError::NotFound);
        }
        if wait == Wait::No {
            // Making the file may read the store.
            return Err(ViewError::WouldBlock);
        }
        let (k, meta, path) = match inode.content {
            Content::Array(ArrayPart {
                array: k,
                npy: false,
            }) => {
                let array = &self.arrays[k as usize];
                let meta = match array.meta() {
                    Some(meta) => meta,
                    // Metadata that could not be parsed: the log says why.
                    None => array.readable()?.reader.meta(),
                };
                (k, meta, array.display_path())
            }
            Content::Text(TextFile {
                vlen: k,
                part: Part::Text,
            }) => {
                let vlen = &self.vlen[k as usize];
                (k, vlen.source().reader.meta(), vlen.display_path())
            }
            _ => return Err(ViewError::NotFound),
        };
        let dims = match inode.xattrs {
            Attrs::Node(zom) => self.zoms.dimensions(zom).axis_names(meta.shape.len()),
            _ => vec![None; meta.shape.len()],
        };
        let shown = format!("{path}[{text}]");
        let sel = Selection::parse(text, &meta.shape, &dims).map_err(|reason| {
            self.slices.refused(&shown, &reason);
            ViewError::NotFound
        })?;
        let body = match (&inode.content, suffix) {
            // The document needs the metadata only: it is there for an array zarrfs cannot decode.
            (_, ".json") => Body::Bytes(selection_json(path, &sel, meta)),
            (Content::Text(_), _) => {
                let source = self.vlen[k as usize].source();
                let file = Arc::new(SliceFile::new(shown.clone(), k, source, &sel)?);
                let vlen = self.vlen[k as usize].selection(shown, file, sel.shape());
                let part = if suffix == ".npy" {
                    Part::Npy
                } else {
                    Part::Text
                };
                Body::Vlen(Arc::new(vlen), part)
            }
            _ => {
                let source = self.arrays[k as usize].readable()?;
                let file = Arc::new(SliceFile::new(shown.clone(), k, source, &sel)?);
                match suffix {
                    ".npy" => Body::Npy(file),
                    _ => Body::Data(file),
                }
            }
        };
        // Decoding starts at lookup: it runs while the caller opens the file and sets up its read.
        if let Body::Data(f) | Body::Npy(f) = &body {
            self.slices.hold_buffer(f, self.cache.budget());
            if let Some(pool) = &self.prefetcher {
                f.prefetch_from(&self.arrays[k as usize], pool, &self.cache, 0, true);
            }
        }
        let entry = SliceEntry {
            body,
            mtime: inode.mtime,
        };
        let ino = self.slices.insert(parent, name, entry);
        self.attr_of_looked_up(ino, wait)
    }

    /// The attributes of selection file `ino`, just looked up; its lookup is given back when
    /// they cannot be told (the kernel is answered with an error, and holds no reference).
    fn attr_of_looked_up(&self, ino: u64, wait: Wait) -> Result<Attr, ViewError> {
        let attr = self.getattr_with(ino, wait);
        if attr.is_err() {
            self.slices.forget(ino, 1);
        }
        attr
    }

    /// Selection file `ino`.
    pub(super) fn slice(&self, ino: u64) -> Result<SliceEntry, ViewError> {
        self.slices.get(ino).ok_or(ViewError::NotFound)
    }
}

impl ServedFile for SliceEntry {
    /// Sizes of large selections of variable-length arrays are found in the background: see
    /// `vlen_file`.
    fn size(&self, view: &View, _dir: u64, measure: Measure) -> Result<Option<u64>, ViewError> {
        Ok(Some(match &self.body {
            Body::Data(f) => f.data_size(),
            Body::Npy(f) => f.npy_size(),
            Body::Vlen(v, part) => {
                return match v.known_size(*part) {
                    Some(known) => Ok(known),
                    None => measure.scanned(|| v.size(*part, view.vlen_reads(), &view.sizer)),
                };
            }
            Body::Bytes(b) => b.len() as u64,
        }))
    }

    /// Queues the first of its chunks for decoding (the first open after the lookup finds
    /// them queued; a later one queues them again: they may have left the cache since).
    fn open(&self, view: &View, _page_cached: bool) -> Result<u64, ViewError> {
        let (Body::Data(f) | Body::Npy(f)) = &self.body else {
            return Ok(0);
        };
        let array = &view.arrays[f.array as usize];
        array.check_readable()?;
        view.slices.hold_buffer(f, view.cache.budget());
        if let Some(pool) = &view.prefetcher {
            let again = !f.first_open();
            f.prefetch_from(array, pool, &view.cache, 0, again);
        }
        let fh = view.next_handle.fetch_add(1, Ordering::Relaxed) + 1;
        view.slices.opened(fh, f);
        Ok(fh)
    }

    /// Queues the chunks from the read on for decoding in parallel.
    fn read(&self, view: &View, _dir: u64, read: ReadAt, reply: Reply) -> Result<(), ViewError> {
        let (f, npy) = match &self.body {
            Body::Bytes(bytes) => {
                extend_range(bytes, read, reply.out);
                return Ok(());
            }
            Body::Vlen(v, part) => {
                reply
                    .out
                    .extend(v.read(view.vlen_reads(), None, *part, read.offset, read.len)?);
                return Ok(());
            }
            Body::Data(f) => (f, false),
            Body::Npy(f) => (f, true),
        };
        let array = &view.arrays[f.array as usize];
        let source = array.readable()?;
        if let Some(pool) = &view.prefetcher {
            let data_offset = match npy {
                true => read.offset.saturating_sub(f.header_len()),
                false => read.offset,
            };
            f.prefetch_from(array, pool, &view.cache, data_offset, false);
        }
        let read_data = |at, n, reply: Reply| f.read_data(source, &view.cache, at, n, reply);
        match npy {
            true => read_after_header(f.header(), read.offset, read.len, reply, read_data),
            false => read_data(read.offset, read.len, reply),
        }
    }

    /// The selections of numbers (a selection is read about once, so the kernel's page cache
    /// would only cost a copy and its pages, and replies go straight into the reader's buffer
    /// as its chunks decode), and large selections of variable-length arrays, whose size
    /// `stat` shows as 0 until known.
    fn direct_io(&self, _view: &View) -> bool {
        match &self.body {
            Body::Data(_) | Body::Npy(_) => true,
            Body::Vlen(v, _) => v.size_may_lag(),
            Body::Bytes(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_names_are_warned_of_a_hundred_a_minute() {
        let table = SliceTable::default();
        let levels: Vec<log::Level> = (0..103)
            .map(|i| table.refused(&format!("a[{i}"), &"bad"))
            .collect();
        assert!(levels[..101].iter().all(|l| *l == log::Level::Warn));
        assert_eq!(levels[101..], [log::Level::Debug; 2]);
        // A minute later, warnings again.
        table.refused.lock().1 = Some(Instant::now() - Duration::from_secs(61));
        assert_eq!(table.refused("a[x", &"bad"), log::Level::Warn);
    }

    #[test]
    fn only_files_the_kernel_forgot_are_let_go() {
        let table = SliceTable::default();
        let entry = || SliceEntry {
            body: Body::Bytes(Arc::from(&b"{}"[..])),
            mtime: SystemTime::UNIX_EPOCH,
        };
        let inos: Vec<u64> = (0..MAX_SLICES + 10)
            .map(|i| table.insert(1, &format!("a[{i}]"), entry()))
            .collect();
        // All still known to the kernel: none is let go, past the bound too.
        assert!(inos.iter().all(|&ino| table.get(ino).is_some()));
        assert_eq!(table.find(1, "a[0]", true), Some(inos[0]));
        table.forget(inos[0], 1);
        assert!(table.get(inos[0]).is_some(), "one lookup left");
        for &ino in &inos[..30] {
            table.forget(ino, 1);
        }
        // Looked up again after it was forgotten: kept.
        assert_eq!(table.find(1, "a[1]", true), Some(inos[1]));
        for i in 0..20 {
            table.insert(2, &format!("b[{i}]"), entry());
        }
        // Over the bound, the table shrinks back to it as far as forgotten files allow.
        let kept = |ino: &u64| table.get(*ino).is_some();
        assert!(!kept(&inos[0]) && kept(&inos[1]) && !kept(&inos[2]));
        assert_eq!(inos[..30].iter().filter(|i| kept(i)).count(), 1);
        assert_eq!(table.find(1, "a[0]", true), None, "its name is let go too");
        assert!(inos[30..].iter().all(kept));
    }
}
