//! Selection files by name: `A[SEL]`, `A[SEL].npy` and `A[SEL].json` in the directory of array
//! `A`. They are not listed (the namespace is infinite); a lookup parses the name and gives the
//! file an inode, kept in a bounded table so that repeated lookups give the same inode.

use super::kinds::{extend_range, ReadAt, Reply, ServedFile};
use super::npy::read_after_header;
use super::selection::{split_name, Selection};
use super::slice_file::SliceFile;
use super::vlen_file::{Part, VlenFile};
use super::{ArrayPart, Attr, Attrs, Content, TextFile, View, ViewError};
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;

/// Inode numbers of selection files start here (the tree's own inodes are numbered from 1).
const SLICE_INO_BASE: u64 = 1 << 62;
/// Most selection files remembered; the oldest are forgotten first.
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

#[derive(Default)]
struct Table {
    by_name: HashMap<(u64, String), u64>,
    by_ino: HashMap<u64, (SliceEntry, (u64, String))>,
    order: VecDeque<u64>,
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
}

impl SliceTable {
    fn get(&self, ino: u64) -> Option<SliceEntry> {
        self.table.lock().by_ino.get(&ino).map(|(e, _)| e.clone())
    }

    fn find(&self, parent: u64, name: &str) -> Option<u64> {
        self.table
            .lock()
            .by_name
            .get(&(parent, name.to_string()))
            .copied()
    }

    /// Remembers `entry` as `name` in `parent` (unless another lookup just did) and returns
    /// its inode.
    fn insert(&self, parent: u64, name: &str, entry: SliceEntry) -> u64 {
        let mut t = self.table.lock();
        let key = (parent, name.to_string());
        if let Some(&ino) = t.by_name.get(&key) {
            return ino;
        }
        if t.order.len() == MAX_SLICES {
            if let Some(old) = t.order.pop_front() {
                if let Some((_, k)) = t.by_ino.remove(&old) {
                    t.by_name.remove(&k);
                }
            }
        }
        let ino = SLICE_INO_BASE + t.next;
        t.next += 1;
        t.by_name.insert(key.clone(), ino);
        t.by_ino.insert(ino, (entry, key));
        t.order.push_back(ino);
        ino
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
    /// The selection file `name` in directory `parent`, made on first lookup. Names that are
    /// not selections of an array there are not found; an invalid selection is not found
    /// either, and says why in one log line.
    pub(super) fn lookup_slice(&self, parent: u64, name: &str) -> Result<Attr, ViewError> {
        if let Some(ino) = self.slices.find(parent, name) {
            return self.getattr(ino);
        }
        let (array_name, text, suffix) = split_name(name).ok_or(ViewError::NotFound)?;
        let dir = self.dir(parent)?;
        let array_ino = dir.get(array_name).ok_or(ViewError::NotFound)?;
        let inode = self.inode(array_ino)?;
        let (k, source, path) = match inode.content {
            Content::Array(ArrayPart {
                array: k,
                npy: false,
            }) => {
                let array = &self.arrays[k as usize];
                (k, array.readable()?, array.display_path())
            }
            Content::Text(TextFile {
                vlen: k,
                part: Part::Text,
            }) => {
                let vlen = &self.vlen[k as usize];
                (k, vlen.source(), vlen.display_path())
            }
            _ => return Err(ViewError::NotFound),
        };
        let meta = source.reader.meta();
        let dims = match inode.xattrs {
            Attrs::Node(zom) => self.zoms.dimensions(zom).axis_names(meta.shape.len()),
            _ => vec![None; meta.shape.len()],
        };
        let shown = format!("{path}[{text}]");
        let sel = Selection::parse(text, &meta.shape, &dims).map_err(|reason| {
            log::warn!("{shown}: {reason}");
            ViewError::NotFound
        })?;
        let file = Arc::new(SliceFile::new(shown.clone(), k, path, source, &sel));
        let body = match (&inode.content, suffix) {
            (_, ".json") => Body::Bytes(file.json().clone()),
            (Content::Text(_), _) => {
                let vlen = self.vlen[k as usize].selection(shown, file, sel.shape());
                let part = if suffix == ".npy" {
                    Part::Npy
                } else {
                    Part::Text
                };
                Body::Vlen(Arc::new(vlen), part)
            }
            (_, ".npy") => Body::Npy(file),
            _ => Body::Data(file),
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
        self.getattr(ino)
    }

    /// Selection file `ino`.
    pub(super) fn slice(&self, ino: u64) -> Result<SliceEntry, ViewError> {
        self.slices.get(ino).ok_or(ViewError::NotFound)
    }
}

impl ServedFile for SliceEntry {
    /// Sizes of large selections of variable-length arrays are found in the background: see
    /// `vlen_file`.
    fn size(&self, view: &View, _dir: u64, _measure: bool) -> Option<u64> {
        Some(match &self.body {
            Body::Data(f) => f.data_size(),
            Body::Npy(f) => f.npy_size(),
            Body::Vlen(v, part) => v.size(*part, &view.cache, &view.sizer).unwrap_or(0),
            Body::Bytes(b) => b.len() as u64,
        })
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
                    .extend(v.read(&view.cache, None, *part, read.offset, read.len)?);
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
