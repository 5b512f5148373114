//! Variable-length arrays (strings, bytes) as files: `A` is text, one element per line in C
//! order (newline and backslash escaped as `\n` and `\\`); `A.npy` is fixed width (`<U<n>` or
//! `|S<n>`, n the longest element). Both sizes are known only once every chunk has been read,
//! and reading them all is O(elements): a FUSE thread must never pay that for a `stat`.
//!
//! So sizes are found by a scan that keeps a small index (one entry per run of elements). A
//! `stat` of an array of at most [`SYNC_SCAN_MAX`] elements runs it on the spot (bounded work);
//! for a larger array it hands the scan to the view's [`Sizer`] thread and answers with size 0
//! until the scan is done, then with the real size. These files are served with direct I/O
//! ([`super::View::direct_io`]), so reads never depend on the size `stat` showed: a read waits
//! for the scan (it needs the index to find its bytes) and returns the data, and end of file
//! is where the data ends.

use super::chunk_source::ChunkSource;
use super::error::chunk_failed;
use super::{npy_header, IoCause, ViewError};
use crate::cache::{ChunkCache, ChunkData};
use crate::codec::vlen;
use crate::meta::DataType;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};

/// Arrays with at most this many elements are scanned on the thread that first needs a size.
pub const SYNC_SCAN_MAX: u64 = 1 << 16;

/// Where each run of elements starts in the text, and the sizes derived from a full scan.
struct TextIndex {
    /// (first element, first text byte) of every run, in order.
    runs: Vec<(u64, u64)>,
    text_size: u64,
    /// Longest element, in code points (text) or bytes.
    width: usize,
    header: Vec<u8>,
}

/// How far the scan of one array is.
enum Scan {
    NotStarted,
    Running,
    Done(Result<Arc<TextIndex>, ViewError>),
}

/// A variable-length array served as text and as a fixed-width NPY file.
pub struct VlenFile {
    path: String,
    source: ChunkSource,
    utf8: bool,
    shape: Vec<u64>,
    scan: Mutex<Scan>,
    scanned: Condvar,
}

/// The background thread that scans large variable-length arrays for their sizes, one at a
/// time, started on first use.
pub struct Sizer {
    cache: Arc<ChunkCache>,
    queue: Mutex<Option<Sender<Arc<VlenFile>>>>,
}

impl Sizer {
    /// A sizer reading chunks through `cache`.
    pub fn new(cache: Arc<ChunkCache>) -> Self {
        Sizer {
            cache,
            queue: Mutex::new(None),
        }
    }

    fn submit(&self, file: Arc<VlenFile>) {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let sender = queue.get_or_insert_with(|| {
            let (tx, rx) = channel::<Arc<VlenFile>>();
            let cache = self.cache.clone();
            let _ = std::thread::Builder::new()
                .name("vlen-sizer".into())
                .spawn(move || {
                    for file in rx {
                        let _ = file.run_scan(&cache);
                    }
                });
            tx
        });
        if let Err(lost) = sender.send(file) {
            // The thread could not start: scan here rather than leave readers waiting.
            let _ = lost.0.run_scan(&self.cache);
        }
    }
}

/// Appends `item` escaped, plus its newline.
fn escape_into(out: &mut Vec<u8>, item: &[u8]) {
    for &b in item {
        match b {
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\\' => out.extend_from_slice(b"\\\\"),
            _ => out.push(b),
        }
    }
    out.push(b'\n');
}

fn escaped_len(item: &[u8]) -> u64 {
    1 + item.len() as u64 + item.iter().filter(|&&b| b == b'\n' || b == b'\\').count() as u64
}

impl VlenFile {
    /// The files of the variable-length array whose chunks `source` reads.
    pub fn new(path: &str, source: ChunkSource) -> Self {
        let meta = source.reader.meta();
        let (utf8, shape) = (meta.dtype == DataType::String, meta.shape.clone());
        VlenFile {
            path: path.to_string(),
            source,
            utf8,
            shape,
            scan: Mutex::new(Scan::NotStarted),
            scanned: Condvar::new(),
        }
    }

    pub(super) fn shown(&self) -> &str {
        if self.path.is_empty() {
            "/"
        } else {
            &self.path
        }
    }

    fn chunk(&self, cache: &ChunkCache, chunk: u64) -> Result<ChunkData, ViewError> {
        self.source.chunk(cache, chunk).map_err(chunk_failed)
    }

    /// Element `k` of a decoded chunk, or the fill value when the chunk is absent.
    fn item<'a>(&'a self, data: &'a ChunkData, k: u64) -> Result<&'a [u8], ViewError> {
        match data {
            None => Ok(&self.source.reader.meta().fill_value),
            Some(buf) => vlen::item(buf, k as usize).ok_or_else(|| {
                log::error!("{}: decoded chunk lacks element {k}", self.shown());
                ViewError::Io(IoCause::Corrupt)
            }),
        }
    }

    fn width_of(&self, item: &[u8]) -> usize {
        if self.utf8 {
            String::from_utf8_lossy(item).chars().count()
        } else {
            item.len()
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Scan> {
        self.scan.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads every chunk and builds the index, unless another thread does or did; the outcome
    /// is kept and every waiter woken.
    fn run_scan(&self, cache: &ChunkCache) -> Result<Arc<TextIndex>, ViewError> {
        {
            let mut scan = self.lock();
            match &*scan {
                Scan::Done(outcome) => return outcome.clone(),
                Scan::Running | Scan::NotStarted => *scan = Scan::Running,
            }
        }
        let outcome = self.build_index(cache);
        *self.lock() = Scan::Done(outcome.clone());
        self.scanned.notify_all();
        outcome
    }

    fn build_index(&self, cache: &ChunkCache) -> Result<Arc<TextIndex>, ViewError> {
        let layout = &self.source.layout;
        let (mut runs, mut bytes, mut width) = (Vec::new(), 0u64, 0usize);
        for run in layout.runs(0, layout.len()) {
            runs.push((run.start, bytes));
            let data = self.chunk(cache, run.chunk)?;
            if data.is_none() {
                // A missing chunk is all fill value: one step however long the run.
                let fill = &self.source.reader.meta().fill_value;
                bytes = bytes.saturating_add(escaped_len(fill).saturating_mul(run.len));
                width = width.max(self.width_of(fill));
                continue;
            }
            for k in 0..run.len {
                let item = self.item(&data, run.chunk_offset + k)?;
                bytes = bytes.saturating_add(escaped_len(item));
                width = width.max(self.width_of(item));
            }
        }
        let width = width.max(1);
        let dtype = if self.utf8 {
            DataType::Unicode(width)
        } else {
            DataType::Bytes(width)
        };
        Ok(Arc::new(TextIndex {
            runs,
            text_size: bytes,
            width,
            header: npy_header(&dtype, &self.shape),
        }))
    }

    /// The index, for a read: scanned on this thread if nobody has started, else waited for.
    fn index(&self, cache: &ChunkCache) -> Result<Arc<TextIndex>, ViewError> {
        let mut scan = self.lock();
        loop {
            match &*scan {
                Scan::Done(outcome) => return outcome.clone(),
                Scan::NotStarted => {
                    drop(scan);
                    return self.run_scan(cache);
                }
                Scan::Running => {
                    scan = self.scanned.wait(scan).unwrap_or_else(|p| p.into_inner());
                }
            }
        }
    }

    /// The index if known now, for `stat`: a small array is scanned on the spot, a large one is
    /// handed to `sizer` (`Ok(None)` until it is done). See the module documentation.
    fn known_index(
        self: &Arc<Self>,
        cache: &ChunkCache,
        sizer: &Sizer,
    ) -> Result<Option<Arc<TextIndex>>, ViewError> {
        let mut scan = self.lock();
        match &*scan {
            Scan::Done(outcome) => outcome.clone().map(Some),
            Scan::Running => Ok(None),
            Scan::NotStarted if self.source.layout.len() <= SYNC_SCAN_MAX => {
                drop(scan);
                self.run_scan(cache).map(Some)
            }
            Scan::NotStarted => {
                *scan = Scan::Running;
                drop(scan);
                sizer.submit(self.clone());
                Ok(None)
            }
        }
    }

    /// True when `stat` may show this array's files with size 0 (a large array, scanned in the
    /// background): their reads must not stop at the size the kernel last saw.
    pub fn size_may_lag(&self) -> bool {
        self.source.layout.len() > SYNC_SCAN_MAX
    }

    /// Size of the text file `A` as `stat` shows it: 0 while a large array is being scanned.
    pub fn text_size(
        self: &Arc<Self>,
        cache: &ChunkCache,
        sizer: &Sizer,
    ) -> Result<u64, ViewError> {
        Ok(self
            .known_index(cache, sizer)?
            .map_or(0, |index| index.text_size))
    }

    /// Size of `A.npy` as `stat` shows it: 0 while a large array is being scanned.
    pub fn npy_size(self: &Arc<Self>, cache: &ChunkCache, sizer: &Sizer) -> Result<u64, ViewError> {
        Ok(self
            .known_index(cache, sizer)?
            .map_or(0, |index| self.npy_total(&index)))
    }

    fn npy_total(&self, index: &TextIndex) -> u64 {
        let cells = self
            .source
            .layout
            .len()
            .saturating_mul(self.npy_width(index) as u64);
        (index.header.len() as u64).saturating_add(cells)
    }

    fn npy_width(&self, index: &TextIndex) -> usize {
        if self.utf8 {
            4 * index.width
        } else {
            index.width
        }
    }

    /// The chunks this array is read from.
    pub(super) fn source(&self) -> &ChunkSource {
        &self.source
    }

    /// The text and NPY files of a selection of this array of `shape`, whose elements are
    /// `elements` (chunk, element offset in the chunk) in order, laid out as `A` and `A.npy`.
    pub(super) fn selection_files(
        &self,
        cache: &ChunkCache,
        shape: &[u64],
        elements: &[(u64, u64)],
    ) -> Result<(Vec<u8>, Vec<u8>), ViewError> {
        let (mut text, mut items, mut width) = (Vec::new(), Vec::new(), 1);
        let mut held: Option<(u64, ChunkData)> = None;
        for &(chunk, k) in elements {
            if held.as_ref().is_none_or(|(c, _)| *c != chunk) {
                held = Some((chunk, self.chunk(cache, chunk)?));
            }
            let data = held.as_ref().map(|(_, d)| d).unwrap_or(&None);
            let item = self.item(data, k)?;
            escape_into(&mut text, item);
            width = width.max(self.width_of(item));
            items.push(item.to_vec());
        }
        let dtype = if self.utf8 {
            DataType::Unicode(width)
        } else {
            DataType::Bytes(width)
        };
        let mut npy = npy_header(&dtype, shape);
        let w = dtype.size();
        for item in items {
            let at = npy.len();
            if self.utf8 {
                npy.extend(
                    String::from_utf8_lossy(&item)
                        .chars()
                        .flat_map(|c| (c as u32).to_le_bytes()),
                );
            } else {
                npy.extend_from_slice(&item);
            }
            npy.resize(at + w, 0);
        }
        Ok((text, npy))
    }

    /// Calls `each` with elements `from..to` in C order (the fill value for absent chunks).
    pub fn each_item(
        &self,
        cache: &ChunkCache,
        from: u64,
        to: u64,
        each: &mut dyn FnMut(&[u8]),
    ) -> Result<(), ViewError> {
        for run in self.source.layout.runs(from, to) {
            let data = self.chunk(cache, run.chunk)?;
            for k in 0..run.len {
                each(self.item(&data, run.chunk_offset + k)?);
            }
        }
        Ok(())
    }

    /// Bytes `offset..offset+len` of the text file.
    pub fn read_text(
        &self,
        cache: &ChunkCache,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, ViewError> {
        let index = self.index(cache)?;
        let end = offset.saturating_add(len).min(index.text_size);
        let mut out = Vec::new();
        if offset >= end {
            return Ok(out);
        }
        let first = index
            .runs
            .partition_point(|&(_, b)| b <= offset)
            .saturating_sub(1);
        let mut line = Vec::new();
        for &(start, mut at) in &index.runs[first..] {
            if at >= end {
                break;
            }
            let layout = &self.source.layout;
            let Some(run) = layout.runs(start, layout.len()).next() else {
                break;
            };
            let data = self.chunk(cache, run.chunk)?;
            for k in 0..run.len {
                let item = self.item(&data, run.chunk_offset + k)?;
                let n = escaped_len(item);
                if at + n > offset && at < end {
                    line.clear();
                    escape_into(&mut line, item);
                    let from = offset.saturating_sub(at) as usize;
                    let to = ((end - at) as usize).min(line.len());
                    out.extend_from_slice(&line[from..to]);
                }
                at += n;
                if at >= end {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Bytes `offset..offset+len` of `A.npy`.
    pub fn read_npy(
        &self,
        cache: &ChunkCache,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, ViewError> {
        let index = self.index(cache)?;
        let total = self.npy_total(&index);
        let end = offset.saturating_add(len).min(total);
        let mut out = Vec::new();
        if offset >= end {
            return Ok(out);
        }
        let hlen = index.header.len() as u64;
        if offset < hlen {
            out.extend_from_slice(&index.header[offset as usize..end.min(hlen) as usize]);
        }
        let w = self.npy_width(&index) as u64;
        let (from, to) = (offset.max(hlen) - hlen, end.saturating_sub(hlen));
        if from >= to {
            return Ok(out);
        }
        let mut cell = Vec::with_capacity(w as usize);
        for run in self.source.layout.runs(from / w, to.div_ceil(w)) {
            let data = self.chunk(cache, run.chunk)?;
            for k in 0..run.len {
                let item = self.item(&data, run.chunk_offset + k)?;
                cell.clear();
                if self.utf8 {
                    cell.extend(
                        String::from_utf8_lossy(item)
                            .chars()
                            .flat_map(|c| (c as u32).to_le_bytes()),
                    );
                } else {
                    cell.extend_from_slice(item);
                }
                cell.resize(w as usize, 0);
                let at = (run.start + k) * w;
                let (a, b) = (from.max(at) - at, to.min(at + w) - at);
                out.extend_from_slice(&cell[a as usize..b as usize]);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_newlines_and_backslashes() {
        let mut out = Vec::new();
        escape_into(&mut out, b"a\nb\\c");
        assert_eq!(out, b"a\\nb\\\\c\n");
        assert_eq!(escaped_len(b"a\nb\\c"), out.len() as u64);
    }
}
