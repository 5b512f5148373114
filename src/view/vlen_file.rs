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
//!
//! A selection of the array (`A[SEL]`, `A[SEL].npy`) is the same kind of file over the selected
//! elements: it streams like `A`, whatever its size.
//!
//! The scan and each read walk the chunks in an order known before they start: they queue the
//! chunks they will meet next on the mount's read-ahead, in that order and as far ahead as the
//! read policy has walks look (over the network: many requests in flight), and take each one
//! as it lands (see [`Ahead`]). A read that starts at the beginning or goes on from an earlier
//! read of its file looks past its own range, to the file's end: a sequential reader finds its
//! next chunks loaded or on their way, also while other readers read the same file elsewhere.

use super::array_file::MAX_PREFETCH_CHUNKS;
use super::backed::{read_through, ArrayBacking, ArrayIdentity, Backing};
use super::chunk_source::ChunkSource;
use super::held_chunks::{cached, HeldChunks};
use super::kinds::overlap;
use super::slice_file::SliceFile;
use super::{npy_header, IoCause, ViewError};
use crate::backing::BackingFile;
use crate::cache::read_ahead::{ReadAhead, ReadPolicy};
use crate::cache::{ChunkCache, ChunkData};
use crate::codec::vlen;
use crate::meta::{DataType, Document};
use crate::store::shown_key;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;

/// Arrays with at most this many elements are scanned on the thread that first needs a size.
pub const SYNC_SCAN_MAX: u64 = 1 << 16;

/// Most elements of stored chunks between two marks of the text index.
const MARK_EVERY: u64 = 1024;
/// Chunks a selection's walk keeps at hand (its rows cross the chunks of the last axis).
const MAX_HELD_CHUNKS: usize = 64;
/// Read-ahead trails kept per part of a file (see [`Trails`]).
const MAX_TRAILS: usize = 8;

/// A point of the text index: element `elem` starts at text byte `byte`. With `fill` not 0, the
/// elements from there to the next mark are absent, `fill` bytes of text each.
#[derive(Clone, Copy)]
struct Mark {
    elem: u64,
    byte: u64,
    fill: u64,
}

impl Mark {
    /// The first element of this mark's stretch that ends after text byte `byte` (at or after
    /// this mark's), and where it starts: computed inside a stretch of absent elements.
    fn at(&self, byte: u64) -> (u64, u64) {
        match self.fill {
            0 => (self.elem, self.byte),
            fill => {
                let k = (byte - self.byte) / fill;
                (self.elem + k, self.byte + k * fill)
            }
        }
    }
}

/// Where elements start in the text (a mark at most every [`MARK_EVERY`] elements of stored
/// chunks, and one for each stretch of absent ones, however long), and the sizes derived from
/// a full scan.
struct TextIndex {
    /// The marks, by element (and so by byte); the first is element 0.
    marks: Vec<Mark>,
    text_size: u64,
    /// Longest element, in code points (text) or bytes.
    width: usize,
    header: Vec<u8>,
}

/// How far the scan of one array is. A failed scan (`Done(Err)`) is the answer of those who
/// waited for it; the next caller scans again (the fault may have been transient).
enum Scan {
    NotStarted,
    /// Handed to the sizer thread, not started: a reader may take it over.
    Queued,
    Running,
    Done(Result<Arc<TextIndex>, ViewError>),
}

/// The elements a file shows: the whole array, or a selection of it.
enum Elements {
    Whole,
    Selection(Arc<SliceFile>),
}

impl Elements {
    /// The position of the chunk holding element `elem` (of the chunk grid `layout`) in the
    /// order a walk through the elements first meets the chunks: C order over the chunks it
    /// touches (for the whole array, the chunks' linear index).
    fn position(&self, layout: &super::GridGeometry, elem: u64) -> u64 {
        match self {
            Elements::Whole => layout
                .runs(elem, elem + 1)
                .next()
                .map_or(0, |run| run.chunk),
            Elements::Selection(slice) => slice.walk_position(elem),
        }
    }

    /// The chunk at position `at` of that order.
    fn chunk_at(&self, at: u64) -> u64 {
        match self {
            Elements::Whole => at,
            Elements::Selection(slice) => slice.walk_chunk(at),
        }
    }
}

/// What a variable-length array's chunks are read with: the cache, and the mount's read-ahead
/// with its policy (none: each chunk is loaded when a walk comes to it).
#[derive(Clone, Copy)]
pub(super) struct Reads<'a> {
    pub cache: &'a ChunkCache,
    pub ahead: Option<(&'a Arc<ReadAhead>, &'a ReadPolicy)>,
}

/// How far the read-ahead of a file's reads got: kept between reads (see [`Trails`]), so that a
/// read going on from where an earlier one was queues only what no earlier read did.
#[derive(Clone, Copy)]
struct Trail {
    /// The elements the walk of the read that left it went through: `from..to`.
    from: u64,
    to: u64,
    /// One past the furthest position (see [`Elements::position`]) the walk met.
    reached: u64,
    /// The next position to queue (at least `reached`): those in between are queued.
    next: u64,
    /// How many chunks were met, and the bytes of the largest decoded one (`None` while only
    /// absent chunks were met).
    met: u64,
    largest: Option<u64>,
}

impl Trail {
    /// A walk through elements `from..to`, starting in the chunk at position `at`: it loads
    /// that chunk itself.
    fn start(from: u64, to: u64, at: u64) -> Self {
        Trail {
            from,
            to,
            reached: at,
            next: at + 1,
            met: 0,
            largest: None,
        }
    }
}

/// The trails the last reads of one part of a file left, at most [`MAX_TRAILS`], the one left
/// last first: as the kernel keeps the read-ahead state of each open file, though these files'
/// handles do not tell readers apart, so a read is matched by where it starts. Several readers
/// of the file (two `cat`s a little apart) each go on from their own trail.
#[derive(Default)]
struct Trails(Mutex<Vec<Trail>>);

impl Trails {
    /// The trail a walk through elements `from..to` goes on from: that of a read whose elements
    /// it starts in and goes at least as far as (a sequential reader's next read starts where
    /// its last one ended; a read of the text walks from the index mark at or before its first
    /// byte, inside that read's elements). None for a walk from the beginning (a new reader, or
    /// one reading again), or within an earlier read's elements (reading again there).
    fn going_on(&self, from: u64, to: u64) -> Option<Trail> {
        if from == 0 {
            return None;
        }
        let trails = self.0.lock();
        let goes_on = |t: &&Trail| t.from <= from && from <= t.to && t.to <= to;
        trails.iter().find(goes_on).copied()
    }

    /// Keeps `trail`, in place of those that ended among the elements its walk went through (the
    /// trail it went on from, or another reader's at the same place: the next read there goes on
    /// from this one), and of the one left longest ago when [`MAX_TRAILS`] are kept. A trail
    /// going further (a reader ahead, whose last read this one re-read part of) stays.
    fn leave(&self, trail: Trail) {
        let mut trails = self.0.lock();
        trails.retain(|t| t.to < trail.from || t.to > trail.to);
        trails.insert(0, trail);
        trails.truncate(MAX_TRAILS);
    }
}

/// The chunks a walk through a file meets next, queued on the read-ahead in the order it meets
/// them (see [`Elements::position`]), as far ahead as the read policy has walks look
/// ([`ReadPolicy::walk_window`]) for chunks as large as the largest met so far, and at most
/// [`MAX_PREFETCH_CHUNKS`]. The walk loads the first chunk itself (the size of its chunks is not
/// known before), then takes each chunk as it lands: a chunk queued or being loaded is never
/// loaded twice (see [`ChunkSource::claim`]).
///
/// A scan looks as far as the file's end, another file's walk through the elements (a netCDF
/// view's) as far as the end of its range. A read of a part of the file looks as far as the end
/// of its own range, or as far as the file's end when it starts at the beginning or goes on
/// from an earlier read of that part (a sequential reader, whose next reads need those chunks):
/// then it starts from the [`Trail`] that read left, so queues nothing twice; each read leaves
/// its trail for the next (see [`Trails`]). Any other read (one going back, or skipping ahead)
/// starts a trail of its own.
struct Ahead<'a> {
    pool: &'a ReadAhead,
    policy: &'a ReadPolicy,
    cache: &'a ChunkCache,
    source: &'a ChunkSource,
    elements: &'a Elements,
    /// The end of the positions to queue.
    end: u64,
    /// The position of the chunk met last.
    last: Option<u64>,
    trail: Trail,
    /// Where the trail is kept between reads (`None` for a scan, or another file's walk).
    kept: Option<&'a Trails>,
}

impl<'a> Ahead<'a> {
    /// The read-ahead of a walk through elements `from..to` (`from < to`) of `file`, a read of
    /// `part` (`None`: the scan, or another file's walk through them); `None` without a
    /// read-ahead, or when the policy has walks load no chunk ahead (a local store).
    fn new(
        file: &'a VlenFile,
        reads: Reads<'a>,
        part: Option<Part>,
        from: u64,
        to: u64,
    ) -> Option<Self> {
        let (pool, policy) = reads.ahead?;
        if policy.walk_window(1, reads.cache.budget()) == 0 {
            return None;
        }
        let (layout, elements) = (&file.source.layout, &file.elements);
        let at = elements.position(layout, from);
        let kept = part.map(|part| &file.trails[part as usize]);
        let going_on = kept.and_then(|kept| kept.going_on(from, to));
        let whole = part.is_none() || from == 0 || going_on.is_some();
        let last = if whole { file.count } else { to };
        Some(Ahead {
            pool,
            policy,
            cache: reads.cache,
            source: &file.source,
            elements,
            end: elements.position(layout, last - 1) + 1,
            last: None,
            trail: going_on.map_or(Trail::start(from, to, at), |t| Trail { from, to, ..t }),
            kept,
        })
    }

    /// The walk is at element `elem`, in chunk `chunk` decoded as `data`: queues the chunks
    /// after it, as many as the window holds.
    fn met(&mut self, elem: u64, chunk: u64, data: &ChunkData) {
        let at = match self.elements {
            Elements::Whole => chunk,
            Elements::Selection(slice) => slice.walk_position(elem),
        };
        if self.last == Some(at) {
            return;
        }
        self.last = Some(at);
        let trail = &mut self.trail;
        if let Some(data) = data {
            let bytes = data.capacity() as u64;
            trail.largest = Some(trail.largest.map_or(bytes, |b| b.max(bytes)));
        }
        // A chunk met again (a selection's rows cross the same chunks) changes nothing; a new
        // one is past those queued before it.
        if at >= trail.reached {
            trail.met += 1;
            trail.reached = at + 1;
            trail.next = trail.next.max(trail.reached);
        }
        let next = trail.next;
        let room = self.room().saturating_sub(next - self.trail.reached);
        let stop = self.end.min(next.saturating_add(room));
        if stop <= next {
            return;
        }
        let chunks: Vec<u64> = (next..stop).map(|at| self.elements.chunk_at(at)).collect();
        // A full queue refuses the rest: they are offered again at the next chunk met.
        for job in self.source.jobs(&chunks) {
            if !self.pool.submit(job) {
                break;
            }
            self.trail.next += 1;
        }
    }

    /// How many chunks may be queued ahead of the walk: as many as the window holds of chunks
    /// as large as the largest met; while only absent chunks were met (they say nothing of the
    /// size of the others), twice as many as met, and no more than the window holds of chunks
    /// of the least a decoded chunk takes (its index of elements).
    fn room(&self) -> u64 {
        let (trail, budget) = (&self.trail, self.cache.budget());
        let least = vlen::index_bytes(self.source.layout.chunk_len() as usize) as u64;
        let chunk = trail.largest.unwrap_or(least).max(1);
        let chunks = self.policy.walk_window(chunk, budget) / chunk;
        let chunks = match trail.largest {
            Some(_) => chunks,
            None => chunks.min(trail.met.saturating_mul(2)),
        };
        chunks.min(MAX_PREFETCH_CHUNKS as u64)
    }
}

impl Drop for Ahead<'_> {
    /// Leaves the trail for the next reads of the part.
    fn drop(&mut self) {
        if let Some(kept) = self.kept {
            kept.leave(self.trail);
        }
    }
}

/// Elements `start..start+n` of a file: of decoded chunk `data` (`None`: absent, all fill
/// value), the elements at `first`, `first + step`, ...
struct Piece<'a> {
    start: u64,
    data: &'a ChunkData,
    first: u64,
    n: u64,
    step: u64,
}

/// A variable-length array, or a selection of one, served as text and as a fixed-width NPY
/// file.
pub struct VlenFile {
    /// The path (or `path[SEL]`) as logs show it.
    path: String,
    source: ChunkSource,
    utf8: bool,
    /// Shape of the elements shown (the array's, or the selection's).
    shape: Vec<u64>,
    /// Number of elements shown.
    count: u64,
    elements: Elements,
    scan: Mutex<Scan>,
    scanned: Condvar,
    /// The metadata document (part of the backing file's identity).
    metadata: Document,
    identity: ArrayIdentity,
    /// The backing files of the text `A` and of `A.npy` (of the whole array only; see
    /// [`crate::backing`]).
    backing: [ArrayBacking; 2],
    /// Whether a read attached them once the sizes were known (later, only opens retry).
    attached_by_read: [AtomicBool; 2],
    /// Where the last reads of each part left their read-ahead (see [`Ahead`]).
    trails: [Trails; 2],
}

/// Which of the two files of a variable-length array.
#[derive(Clone, Copy)]
pub(super) enum Part {
    /// The text `A`.
    Text = 0,
    /// The fixed-width `A.npy`.
    Npy = 1,
}

/// A scan handed to the [`Sizer`]: the file, and the read-ahead it reads with.
type Queued = (Arc<VlenFile>, Option<(Arc<ReadAhead>, ReadPolicy)>);

/// The background thread that scans large variable-length arrays for their sizes, one at a
/// time, started on first use.
pub struct Sizer {
    cache: Arc<ChunkCache>,
    queue: Mutex<Option<Sender<Queued>>>,
}

impl Sizer {
    /// A sizer reading chunks through `cache`.
    pub fn new(cache: Arc<ChunkCache>) -> Self {
        Sizer {
            cache,
            queue: Mutex::new(None),
        }
    }

    /// Queues the scan of `file`, which reads ahead as `reads` does.
    fn submit(&self, file: Arc<VlenFile>, reads: Reads) {
        let ahead = reads.ahead.map(|(pool, policy)| (pool.clone(), *policy));
        let mut queue = self.queue.lock();
        let sender = queue.get_or_insert_with(|| {
            let (tx, rx) = channel::<Queued>();
            let cache = self.cache.clone();
            let _ = std::thread::Builder::new()
                .name("vlen-sizer".into())
                .spawn(move || {
                    for (file, ahead) in rx {
                        let ahead = ahead.as_ref().map(|(pool, policy)| (pool, policy));
                        file.scan_if_queued(Reads {
                            cache: &cache,
                            ahead,
                        });
                    }
                });
            tx
        });
        if let Err(lost) = sender.send((file, ahead)) {
            // The thread could not start: scan here rather than leave readers waiting.
            let (file, _) = lost.0;
            file.scan_if_queued(reads);
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
    /// The files of the variable-length array whose chunks `source` reads, whose metadata
    /// document is `metadata`.
    pub fn new(path: &str, source: ChunkSource, metadata: Document) -> Self {
        let meta = source.reader.meta();
        let (utf8, shape) = (meta.dtype == DataType::String, meta.shape.clone());
        VlenFile {
            path: path.to_string(),
            count: source.layout.len(),
            source,
            utf8,
            shape,
            elements: Elements::Whole,
            scan: Mutex::new(Scan::NotStarted),
            scanned: Condvar::new(),
            metadata,
            identity: ArrayIdentity::default(),
            backing: Default::default(),
            attached_by_read: Default::default(),
            trails: Default::default(),
        }
    }

    /// The files of selection `slice` of this array, of shape `shape`, named `name` in logs.
    pub(super) fn selection(&self, name: String, slice: Arc<SliceFile>, shape: Vec<u64>) -> Self {
        VlenFile {
            path: name,
            count: crate::meta::element_count(&shape).unwrap_or(u64::MAX),
            shape,
            elements: Elements::Selection(slice),
            ..VlenFile::new("", self.source.clone(), self.metadata.clone())
        }
    }

    /// Calls `each` with the pieces (see [`Piece`]) holding elements `from..to`, in order,
    /// their chunks read ahead as `reads` says for a read of `part` (`None`: the scan, or
    /// another file's walk; see [`Ahead`]).
    fn pieces(
        &self,
        reads: Reads,
        part: Option<Part>,
        from: u64,
        to: u64,
        each: &mut dyn FnMut(Piece<'_>) -> Result<(), ViewError>,
    ) -> Result<(), ViewError> {
        if from >= to {
            return Ok(());
        }
        let cache = reads.cache;
        let mut ahead = Ahead::new(self, reads, part, from, to);
        let mut met = |elem, chunk, data: &ChunkData| {
            if let Some(ahead) = &mut ahead {
                ahead.met(elem, chunk, data);
            }
        };
        match &self.elements {
            Elements::Whole => {
                for run in self.source.layout.runs(from, to) {
                    let data = cached(&self.source, cache, run.chunk)?;
                    met(run.start, run.chunk, &data);
                    each(Piece {
                        start: run.start,
                        data: &data,
                        first: run.chunk_offset,
                        n: run.len,
                        step: 1,
                    })?;
                }
                Ok(())
            }
            Elements::Selection(slice) => {
                let mut held = HeldChunks::new(MAX_HELD_CHUNKS, cache);
                let mut start = from;
                slice.rows.walk(from, to, |chunk, first, n, step| {
                    let data = held.get(&self.source, cache, chunk)?;
                    met(start, chunk, &data);
                    each(Piece {
                        start,
                        data: &data,
                        first,
                        n,
                        step,
                    })?;
                    start += n;
                    Ok(())
                })
            }
        }
    }

    /// Calls `each` with elements `from..to` in C order (the fill value for absent chunks).
    pub(super) fn items(
        &self,
        reads: Reads,
        from: u64,
        to: u64,
        each: &mut dyn FnMut(&[u8]) -> Result<(), ViewError>,
    ) -> Result<(), ViewError> {
        self.items_of(reads, None, from, to, each)
    }

    /// [`VlenFile::items`], for a read of `part` (`None`: another file's walk).
    fn items_of(
        &self,
        reads: Reads,
        part: Option<Part>,
        from: u64,
        to: u64,
        each: &mut dyn FnMut(&[u8]) -> Result<(), ViewError>,
    ) -> Result<(), ViewError> {
        self.pieces(reads, part, from, to, &mut |p| {
            for j in 0..p.n {
                each(self.item(p.data, p.first + j * p.step)?)?;
            }
            Ok(())
        })
    }

    /// The path as logs show it.
    pub(super) fn display_path(&self) -> &str {
        shown_key(&self.path)
    }

    /// Element `k` of a decoded chunk, or the fill value when the chunk is absent.
    fn item<'a>(&'a self, data: &'a ChunkData, k: u64) -> Result<&'a [u8], ViewError> {
        match data {
            None => Ok(&self.source.reader.meta().fill_value),
            Some(buf) => vlen::item(buf, k as usize).ok_or_else(|| {
                log::error!("{}: decoded chunk lacks element {k}", self.display_path());
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

    /// The sizer's scan, unless a reader took it over.
    fn scan_if_queued(&self, reads: Reads) {
        if matches!(*self.scan.lock(), Scan::Queued) {
            let _ = self.index(reads);
        }
    }

    fn build_index(&self, reads: Reads) -> Result<Arc<TextIndex>, ViewError> {
        let (mut marks, mut bytes, mut width) = (Vec::<Mark>::new(), 0u64, 0usize);
        let fill = &self.source.reader.meta().fill_value;
        self.pieces(reads, None, 0, self.count, &mut |p| {
            if p.data.is_none() {
                // Absent elements are all the fill value: one mark however many they are.
                let len = escaped_len(fill);
                if marks.last().is_none_or(|m| m.fill != len) {
                    marks.push(Mark {
                        elem: p.start,
                        byte: bytes,
                        fill: len,
                    });
                }
                bytes = bytes.saturating_add(len.saturating_mul(p.n));
                width = width.max(self.width_of(fill));
                return Ok(());
            }
            for j in 0..p.n {
                let elem = p.start + j;
                if marks
                    .last()
                    .is_none_or(|m| m.fill != 0 || elem - m.elem >= MARK_EVERY)
                {
                    marks.push(Mark {
                        elem,
                        byte: bytes,
                        fill: 0,
                    });
                }
                let item = self.item(p.data, p.first + j * p.step)?;
                bytes = bytes.saturating_add(escaped_len(item));
                width = width.max(self.width_of(item));
            }
            Ok(())
        })?;
        let width = width.max(1);
        let dtype = if self.utf8 {
            DataType::Unicode(width)
        } else {
            DataType::Bytes(width)
        };
        Ok(Arc::new(TextIndex {
            marks,
            text_size: bytes,
            width,
            header: npy_header(&dtype, &self.shape),
        }))
    }

    /// The index: read every chunk and built on this thread, unless another thread is doing
    /// it (then waited for, its outcome the answer); the outcome is kept and every waiter woken.
    fn index(&self, reads: Reads) -> Result<Arc<TextIndex>, ViewError> {
        let mut scan = self.scan.lock();
        loop {
            match &*scan {
                Scan::Done(Ok(index)) => return Ok(index.clone()),
                Scan::Running => {
                    self.scanned.wait(&mut scan);
                    if let Scan::Done(Err(e)) = &*scan {
                        return Err(*e);
                    }
                }
                Scan::NotStarted | Scan::Queued | Scan::Done(Err(_)) => {
                    *scan = Scan::Running;
                    drop(scan);
                    // A panic must not leave the scan running for ever: its waiters would wait.
                    let build = std::panic::AssertUnwindSafe(|| self.build_index(reads));
                    let outcome = std::panic::catch_unwind(build)
                        .unwrap_or(Err(ViewError::Io(IoCause::Panicked)));
                    *self.scan.lock() = Scan::Done(outcome.clone());
                    self.scanned.notify_all();
                    return outcome;
                }
            }
        }
    }

    /// The index if known now, for `stat`: a small array is scanned on the spot, a large one is
    /// handed to `sizer` (`Ok(None)` until it is done). See the module documentation.
    fn known_index(
        self: &Arc<Self>,
        reads: Reads,
        sizer: &Sizer,
    ) -> Result<Option<Arc<TextIndex>>, ViewError> {
        let mut scan = self.scan.lock();
        match &*scan {
            Scan::Done(Ok(index)) => Ok(Some(index.clone())),
            // A small array's size is never answered as unknown: its files are read through
            // the page cache, up to the size `stat` showed.
            _ if self.count <= SYNC_SCAN_MAX => {
                drop(scan);
                self.index(reads).map(Some)
            }
            Scan::Running | Scan::Queued => Ok(None),
            Scan::NotStarted | Scan::Done(Err(_)) => {
                *scan = Scan::Queued;
                drop(scan);
                sizer.submit(self.clone(), reads);
                Ok(None)
            }
        }
    }

    /// True when `stat` may show this array's files with size 0 (a large array, scanned in the
    /// background, or one whose scan failed): their reads must not stop at the size the kernel
    /// last saw, but reach the daemon, which answers them (EIO when the scan fails again).
    pub fn size_may_lag(&self) -> bool {
        self.count > SYNC_SCAN_MAX || matches!(*self.scan.lock(), Scan::Done(Err(_)))
    }

    /// The array's identity in `backing`: its chunks listed (once), which must come before
    /// any chunk is read for the files to be written in this mount (see
    /// [`ArrayIdentity::get`]). Selections have none.
    pub(super) fn identify(&self, backing: &Backing) -> Option<&crate::backing::Identity> {
        if !matches!(self.elements, Elements::Whole) {
            return None;
        }
        let names = (self.path.as_str(), self.display_path());
        let reader = &self.source.reader;
        self.identity.get(backing, names, &self.metadata, reader)
    }

    /// Attaches the backing file of `part` in `backing`: once its size is known (a file to
    /// write, or a complete one), before that only a complete one (see
    /// [`ArrayBacking::attach`]). Selections have none.
    pub(super) fn attach_backing(&self, backing: &Backing, part: Part) {
        let size = match &*self.scan.lock() {
            Scan::Done(Ok(index)) => Some(self.scanned_size(index, part)),
            _ => None,
        };
        let label = self.display_path();
        if let Some(id) = self.identify(backing) {
            let kind = match part {
                Part::Text => "txt",
                Part::Npy => "npy",
            };
            self.backing[part as usize].attach(backing, &id.of_kind(kind), label, size);
        }
    }

    /// The backing file of `part`, once complete.
    pub(super) fn complete_backing(&self, part: Part) -> Option<Arc<BackingFile>> {
        self.backing[part as usize]
            .get()
            .filter(|f| f.is_complete())
    }

    /// Size of file `part`; `None` while a large array is being scanned, or when its scan
    /// failed (known at once when its backing file is complete).
    pub(super) fn size(self: &Arc<Self>, part: Part, reads: Reads, sizer: &Sizer) -> Option<u64> {
        if let Some(file) = self.complete_backing(part) {
            return Some(file.size());
        }
        let index = self.known_index(reads, sizer).ok()??;
        Some(self.scanned_size(&index, part))
    }

    /// Size of file `part` as far as it is known without work: `Some(Some(size))` when its
    /// backing file is complete or the scan is done, `Some(None)` while a large array's scan is
    /// queued or running (the answer [`VlenFile::size`] gives then), `None` when finding it
    /// needs work (a scan to start, or a small array's scan on the spot).
    pub(super) fn known_size(&self, part: Part) -> Option<Option<u64>> {
        if let Some(file) = self.complete_backing(part) {
            return Some(Some(file.size()));
        }
        match &*self.scan.lock() {
            Scan::Done(Ok(index)) => Some(Some(self.scanned_size(index, part))),
            Scan::Queued | Scan::Running if self.count > SYNC_SCAN_MAX => Some(None),
            _ => None,
        }
    }

    /// Size of file `part` as the scan found it.
    fn scanned_size(&self, index: &TextIndex, part: Part) -> u64 {
        match part {
            Part::Text => index.text_size,
            Part::Npy => {
                let cells = self.count.saturating_mul(self.npy_width(index) as u64);
                (index.header.len() as u64).saturating_add(cells)
            }
        }
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

    /// Bytes `offset..offset+len` of `part`: copied from its backing file in `backing`
    /// (attached once the size is known) where it holds them, else decoded (and then written
    /// into the backing file).
    pub(super) fn read(
        &self,
        reads: Reads,
        backing: Option<&Backing>,
        part: Part,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, ViewError> {
        let slot = &self.backing[part as usize];
        let tried = &self.attached_by_read[part as usize];
        let unattached = slot.get().is_none() && !tried.swap(true, Relaxed);
        if let Some(backing) = backing.filter(|_| unattached) {
            // The size is known once scanned.
            self.index(reads)?;
            self.attach_backing(backing, part);
        }
        let decode = |from: u64, len: u64| match part {
            Part::Text => self.decode_text(reads, from, len),
            Part::Npy => self.decode_npy(reads, from, len),
        };
        let Some(file) = slot.get() else {
            return decode(offset, len);
        };
        let mut out = Vec::new();
        let end = offset.saturating_add(len).min(file.size());
        read_through(
            &file,
            self.display_path(),
            (offset, end),
            &mut out,
            |from, to, out| {
                out.extend(decode(from, to - from)?);
                Ok(())
            },
        )?;
        Ok(out)
    }

    /// Bytes `offset..offset+len` of the text file, decoded.
    fn decode_text(&self, reads: Reads, offset: u64, len: u64) -> Result<Vec<u8>, ViewError> {
        let index = self.index(reads)?;
        let end = offset.saturating_add(len).min(index.text_size);
        let mut out = Vec::new();
        if offset >= end {
            return Ok(out);
        }
        // From the element holding `offset` (or the mark before it) to the one holding the
        // last byte, or the next mark.
        let marks = &index.marks;
        let stretch = |byte: u64| marks.partition_point(|m| m.byte <= byte).saturating_sub(1);
        let (first, last) = (stretch(offset), stretch(end - 1));
        let (from, mut at) = marks[first].at(offset);
        let next = marks.get(last + 1).map_or(self.count, |m| m.elem);
        let to = match marks[last].fill {
            0 => next,
            _ => marks[last].at(end - 1).0 + 1,
        };
        let mut line = Vec::new();
        self.items_of(reads, Some(Part::Text), from, to, &mut |item| {
            let n = escaped_len(item);
            if at + n > offset && at < end {
                line.clear();
                escape_into(&mut line, item);
                out.extend_from_slice(overlap(&line, at, offset, end));
            }
            at += n;
            Ok(())
        })?;
        Ok(out)
    }

    /// Bytes `offset..offset+len` of `A.npy`, decoded.
    fn decode_npy(&self, reads: Reads, offset: u64, len: u64) -> Result<Vec<u8>, ViewError> {
        let index = self.index(reads)?;
        let total = self.scanned_size(&index, Part::Npy);
        let end = offset.saturating_add(len).min(total);
        let mut out = Vec::new();
        if offset >= end {
            return Ok(out);
        }
        let hlen = index.header.len() as u64;
        out.extend_from_slice(overlap(&index.header, 0, offset, end));
        let w = self.npy_width(&index) as u64;
        let (from, to) = (offset.max(hlen) - hlen, end.saturating_sub(hlen));
        if from >= to {
            return Ok(out);
        }
        let mut cell = Vec::with_capacity(w as usize);
        let mut at = from / w * w;
        self.items_of(
            reads,
            Some(Part::Npy),
            from / w,
            to.div_ceil(w),
            &mut |item| {
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
                out.extend_from_slice(overlap(&cell, at, from, to));
                at += w;
                Ok(())
            },
        )?;
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
