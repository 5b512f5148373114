//! The file of a selection (`A[SEL]`, `A[SEL].npy`): its elements in C order, read straight
//! from the chunks that intersect the selection, run by run, without materializing it.

use super::array_file::{extend_with_fill, ArrayFile, MAX_PREFETCH_CHUNKS};
use super::chunk_source::{ChunkSource, Dest};
use super::error::chunk_failed;
use super::held_chunks::HeldChunks;
use super::kinds::Reply;
use super::row_walk::RowWalk;
use super::selection::{AxisSel, Selection};
use super::selection_buffer::{SelectionBuffer, MAX_SLOTS};
use super::{npy_header, SendBytes, ViewError};
use crate::cache::read_ahead::{Job, ReadAhead};
use crate::cache::ChunkCache;
use crate::codec::step_in;
use crate::fetch::Loaded;
use crate::memory::filling::FillingBuffer;
use crate::meta::gcd;
use crate::meta::ArrayMeta;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Chunks one read keeps at hand (its rows cross the chunks of the selection's last axis).
const MAX_HELD_CHUNKS: usize = 64;

/// One selection of one array as files.
pub struct SliceFile {
    /// The source array's number in the view.
    pub array: u32,
    /// `dir/A[SEL]`, for log lines.
    name: String,
    /// Its rows, and the chunk grid they lie in.
    pub(super) rows: RowWalk,
    /// Per axis, the chunk indices the selection touches, ascending.
    axis_chunks: Vec<Vec<u64>>,
    elem_size: u64,
    data_size: u64,
    header: Vec<u8>,
    /// Position in the C-order walk over `axis_chunks` up to which chunks have been queued.
    queued: AtomicU64,
    /// Whether the file has been opened since it was looked up.
    opened: AtomicBool,
    /// Its open file handles.
    handles: AtomicU32,
    /// The selection gathered in memory, while the view keeps it (see [`SliceFile::hold_buffer`]).
    buffer: Mutex<Option<Arc<SelectionBuffer>>>,
    /// True when the selection is whole chunks, each one run of it (frames of frame-sized
    /// chunks, say): reads are sent straight from each chunk, and it is never gathered.
    runs_of_chunks: bool,
}

/// The selected elements of one row of a selection inside one chunk.
#[derive(Clone, Copy, Debug)]
pub(super) struct Row {
    /// Byte offset of the first element in the decoded chunk.
    pub src: u64,
    /// Byte offset of the first element in the selection.
    pub out: u64,
    /// Number of elements.
    pub n: u64,
    /// Elements between two selected ones in the chunk.
    pub step: u64,
}

impl Row {
    /// Byte offset in the decoded chunk just past the row's last element (`es` bytes each).
    pub fn src_end(&self, es: u64) -> u64 {
        self.src + ((self.n - 1) * self.step + 1) * es
    }
}

/// The chunk indices along one axis (chunks of `cs`) holding the indices `sel` selects.
fn chunks_along(sel: &AxisSel, cs: u64) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    if sel.count == 0 {
        return out;
    }
    let last = sel.start + (sel.count - 1) * sel.step;
    let mut c = sel.start / cs;
    while c * cs <= last {
        // The first selected index at or after the chunk's start.
        let lo = (c * cs).max(sel.start);
        let k = (lo - sel.start).div_ceil(sel.step);
        let at = sel.start + k * sel.step;
        if at > last {
            break;
        }
        let chunk = at / cs;
        out.push(chunk);
        c = chunk + 1;
    }
    out
}

/// Most chunks a selection file may cross along one axis: the chunks along each axis are listed
/// at lookup (8 bytes each), and a selection of an array of 10^12 one-element chunks must not
/// list them.
const MAX_AXIS_CHUNKS: u64 = 1 << 20;

/// True when the selection `axes` of an array of `shape` in chunks of `chunk_shape` (touching
/// `axis_chunks` along each axis) is made of whole chunks that are each one run of it: every
/// axis selected whole chunks in order, and every axis before the last one crossing chunks
/// holds one selected index per chunk. Rows of whole chunks that cross several chunks (a
/// chunk-aligned sub-block) are not: each chunk is then a set of row pieces.
fn runs_of_whole_chunks(
    axes: &[AxisSel],
    chunk_shape: &[u64],
    shape: &[u64],
    axis_chunks: &[Vec<u64>],
) -> bool {
    let whole = axes
        .iter()
        .zip(chunk_shape)
        .zip(shape)
        .all(|((a, &cs), &n)| {
            a.step == 1 && a.start % cs == 0 && (a.count % cs == 0 || a.start + a.count == n)
        });
    let last_crossing = axis_chunks.iter().rposition(|c| c.len() > 1);
    whole
        && last_crossing.is_none_or(|k| {
            axes[..k]
                .iter()
                .zip(chunk_shape)
                .all(|(a, &cs)| a.count.min(cs) == 1)
        })
}

impl SliceFile {
    /// The selection `sel` (named `name`) of array number `array`, whose chunks are `source`;
    /// refused (EIO, with a log line) when it crosses more than [`MAX_AXIS_CHUNKS`] chunks
    /// along one axis.
    pub fn new(
        name: String,
        array: u32,
        source: &ChunkSource,
        sel: &Selection,
    ) -> Result<Self, ViewError> {
        let meta: &ArrayMeta = source.reader.meta();
        let chunk_shape = source.reader.read_chunk_shape().to_vec();
        let rows = RowWalk::selection(sel.axes.clone(), chunk_shape, &meta.shape);
        for (axis, &crossed) in rows.touched.iter().enumerate() {
            if crossed > MAX_AXIS_CHUNKS {
                log::warn!(
                    "{name}: crosses {crossed} chunks along axis {axis}, more than the \
                     {MAX_AXIS_CHUNKS} a selection file may; read that part of the array file, \
                     or select less"
                );
                return Err(ViewError::Io(super::IoCause::BadConfig));
            }
        }
        let axis_chunks: Vec<Vec<u64>> = (rows.axes.iter().zip(&rows.chunk_shape))
            .map(|(a, &c)| chunks_along(a, c))
            .collect();
        let shape: Vec<u64> = if meta.shape.is_empty() {
            vec![1]
        } else {
            meta.shape.clone()
        };
        let runs_of_chunks =
            runs_of_whole_chunks(&rows.axes, &rows.chunk_shape, &shape, &axis_chunks);
        let elem_size = (meta.dtype.size() as u64).max(1);
        let out_shape = sel.shape();
        Ok(SliceFile {
            array,
            name,
            rows,
            axis_chunks,
            elem_size,
            data_size: sel.element_count() * elem_size,
            header: npy_header(&meta.dtype, &out_shape),
            queued: AtomicU64::new(0),
            opened: AtomicBool::new(false),
            handles: AtomicU32::new(0),
            buffer: Mutex::new(None),
            runs_of_chunks,
        })
    }

    /// Size of `A[SEL]`.
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// Memory the selection takes gathered: its bytes and the bookkeeping of its buffer (two
    /// bits per unit of [`SliceFile::row_grain`] bytes, and each chunk's mark and state).
    pub(super) fn gathered_size(&self) -> u64 {
        let (len, parts) = (self.data_size as usize, self.slot_count() as usize);
        let overhead = FillingBuffer::uninit_overhead(len, parts, self.row_grain() as usize);
        self.data_size.saturating_add(overhead as u64)
    }

    /// The bytes every row of the selection (its part in one chunk) starts and ends on a
    /// multiple of: rows start where an output line starts or where the last axis crosses into
    /// a chunk, so the elements between those places, at least one.
    fn row_grain(&self) -> u64 {
        let (Some(a), Some(&cs), Some(chunks)) = (
            self.rows.axes.last(),
            self.rows.chunk_shape.last(),
            self.axis_chunks.last(),
        ) else {
            return self.elem_size.max(1);
        };
        let cuts = chunks.iter().map(|&g| a.selected_before(g * cs));
        cuts.fold(a.count, gcd).max(1) * self.elem_size.max(1)
    }

    /// Size of `A[SEL].npy`.
    pub fn npy_size(&self) -> u64 {
        self.header.len() as u64 + self.data_size
    }

    /// The NPY header of `A[SEL].npy`.
    pub fn header(&self) -> &[u8] {
        &self.header
    }

    /// Length of the NPY header.
    pub fn header_len(&self) -> u64 {
        self.header.len() as u64
    }

    /// Bytes `offset..offset+len` of `A[SEL]` (fewer at the end) into `reply`: from the buffer
    /// gathering it, when there is one; else walking its pieces (a row's elements inside one
    /// chunk) chunk by chunk when its rows go round more chunks than one read holds (see
    /// [`RowWalk::read_going_round`]), or row by row (see [`SliceFile::read_by_row`]).
    pub fn read_data(
        &self,
        source: &ChunkSource,
        cache: &ChunkCache,
        offset: u64,
        len: u64,
        reply: Reply,
    ) -> Result<(), ViewError> {
        let Reply { out, mut send, .. } = reply;
        let end = offset.saturating_add(len).min(self.data_size);
        if offset >= end {
            return Ok(());
        }
        let es = self.elem_size;
        let (e0, e1) = (offset / es, end.div_ceil(es));
        if let Some(buffer) = self.buffer() {
            // Rows not all in (their chunk failed) are read through the cache, which says why.
            let ready = self.wait_buffered(&buffer, source, cache, e0, e1)?;
            if let Some(bytes) = ready.then(|| buffer.bytes(offset, end)).flatten() {
                match send {
                    Some(send) => send(bytes),
                    None => out.extend_from_slice(bytes),
                }
                return Ok(());
            }
            send = None;
        }
        let mut held = HeldChunks::new(MAX_HELD_CHUNKS, cache);
        let read = (source, cache, self.name.as_str());
        if self
            .rows
            .read_going_round(read, (offset, end, es), out, &mut held)?
        {
            return Ok(());
        }
        let at = out.len();
        let send = send.map(|s| (s, offset, end));
        if self.read_by_row(source, cache, (e0, e1), out, &mut held, send)? {
            return Ok(());
        }
        let skip = offset - e0 * es;
        if skip > 0 {
            out.drain(at..at + skip as usize);
        }
        out.truncate(at + (end - offset) as usize);
        Ok(())
    }

    /// Appends selected elements `e0..e1` to `out` in order, walking their pieces, each run of
    /// consecutive bytes of one chunk copied at once, strided pieces element by element, the
    /// chunks of a row kept in `held`. A read (bytes `offset..end` of `A[SEL]`, for `send`)
    /// that is one run is answered straight from the chunk: true then.
    fn read_by_row(
        &self,
        source: &ChunkSource,
        cache: &ChunkCache,
        (e0, e1): (u64, u64),
        out: &mut Vec<u8>,
        held: &mut HeldChunks,
        send: Option<(SendBytes, u64, u64)>,
    ) -> Result<bool, ViewError> {
        let (es, at) = (self.elem_size, out.len());
        out.reserve(((e1 - e0) * es) as usize);
        let fill = &source.reader.meta().fill_value;
        // Copies the `n` elements of chunk `chunk` from element `first` on, every `step`-th.
        let mut copy = |out: &mut Vec<u8>, (chunk, first, n, step): (u64, u64, u64, u64)| {
            let span = ((first * es) as usize, ((n - 1) * step * es + es) as usize);
            let Some(bytes) = held.bytes(source, cache, chunk, span, &self.name)? else {
                extend_with_fill(out, fill, 0, n * es);
                return Ok(());
            };
            if step == 1 {
                out.extend_from_slice(bytes);
            } else {
                for el in bytes.chunks((step * es) as usize) {
                    out.extend_from_slice(&el[..es as usize]);
                }
            }
            Ok::<_, ViewError>(())
        };
        // The run of consecutive elements of one chunk the pieces so far end with.
        let mut run: Option<(u64, u64, u64)> = None;
        self.rows.walk(e0, e1, |chunk, first, n, step| {
            let step = if n == 1 { 1 } else { step };
            match &mut run {
                Some((c, f, m)) if step == 1 && *c == chunk && *f + *m == first => *m += n,
                _ => {
                    if let Some((c, f, m)) = run.take() {
                        copy(out, (c, f, m, 1))?;
                    }
                    match step {
                        1 => run = Some((chunk, first, n)),
                        _ => copy(out, (chunk, first, n, step))?,
                    }
                }
            }
            Ok(())
        })?;
        if let Some((chunk, first, n)) = run {
            // A read that is this one run is answered straight from the chunk.
            if let Some((send, offset, end)) = send.filter(|_| out.len() == at) {
                let from = (first * es + offset - e0 * es) as usize;
                let range = from..from + (end - offset) as usize;
                let sent = source.load(cache, chunk, Dest::Send(range, send));
                if sent.map_err(chunk_failed)? == Loaded::Decoded {
                    return Ok(true);
                }
            }
            copy(out, (chunk, first, n, 1))?;
        }
        Ok(false)
    }

    /// Waits until the selected elements `e0..e1` are in `buffer` (decoding here the chunks
    /// nobody has started): the rows they touch, which chunks copy in whole, each as soon as
    /// its chunk has decoded that far. False when one of their chunks failed there.
    fn wait_buffered(
        &self,
        buffer: &SelectionBuffer,
        source: &ChunkSource,
        cache: &ChunkCache,
        e0: u64,
        e1: u64,
    ) -> Result<bool, ViewError> {
        let es = self.elem_size;
        let row = self.rows.axes[self.rows.axes.len() - 1].count.max(1);
        let e1 = e1
            .div_ceil(row)
            .saturating_mul(row)
            .min(self.data_size / es);
        // Per chunk, in the order the pieces meet them, how far into it they end: each chunk
        // is waited for once, however many rows cross it.
        let mut needs: Vec<(u64, u64)> = Vec::new();
        let mut at: HashMap<u64, usize> = HashMap::new();
        self.rows.walk(e0, e1, |chunk, first, n, step| {
            let need = (first + (n - 1) * step + 1) * es;
            let i = *at.entry(chunk).or_insert_with(|| {
                needs.push((chunk, 0));
                needs.len() - 1
            });
            needs[i].1 = needs[i].1.max(need);
            Ok(())
        })?;
        Ok(needs.into_iter().all(|(chunk, need)| {
            self.slot_of(chunk)
                .is_some_and(|slot| buffer.wait_for(self, source, cache, slot, need))
        }))
    }

    /// Bytes of one element.
    pub(super) fn elem_size(&self) -> u64 {
        self.elem_size
    }

    /// Bytes of one decoded chunk.
    pub(super) fn chunk_bytes(&self) -> u64 {
        self.rows.chunk_shape.iter().product::<u64>() * self.elem_size
    }

    /// Number of chunks the selection touches.
    fn slot_count(&self) -> u64 {
        self.axis_chunks.iter().map(|c| c.len() as u64).product()
    }

    /// The position of chunk `chunk` (linear index) in the C-order walk over `axis_chunks`, if
    /// the selection touches it.
    fn slot_of(&self, mut chunk: u64) -> Option<u64> {
        let (mut slot, mut scale) = (0, 1);
        for ax in (0..self.rows.axes.len()).rev() {
            let at = self.axis_chunks[ax].binary_search(&(chunk % self.rows.grid[ax]));
            chunk /= self.rows.grid[ax];
            slot += at.ok()? as u64 * scale;
            scale *= self.axis_chunks[ax].len() as u64;
        }
        Some(slot)
    }

    /// The chunk at position `slot` of the C-order walk over `axis_chunks` (linear index) and
    /// the selection's rows inside it, in the chunk's byte order.
    pub(super) fn slot_rows(&self, slot: u64) -> (u64, Vec<Row>) {
        let rank = self.rows.axes.len();
        let last = rank - 1;
        // Per axis: the chunk's grid index and the selection indices `lo..hi` inside it.
        let (mut w, mut g, mut bounds) = (slot, vec![0u64; rank], vec![0u64; 2 * rank]);
        let (lo, hi) = bounds.split_at_mut(rank);
        for ax in (0..rank).rev() {
            let n = self.axis_chunks[ax].len() as u64;
            g[ax] = self.axis_chunks[ax][(w % n) as usize];
            w /= n;
            let (a, cs) = (&self.rows.axes[ax], self.rows.chunk_shape[ax]);
            lo[ax] = a.selected_before(g[ax] * cs);
            hi[ax] = a.selected_before((g[ax] + 1) * cs);
        }
        let linear = (0..rank).fold(0, |l, ax| l * self.rows.grid[ax] + g[ax]);
        let (mut out_stride, mut chunk_stride) = (vec![1u64; rank], vec![1u64; rank]);
        for ax in (0..last).rev() {
            out_stride[ax] = out_stride[ax + 1] * self.rows.axes[ax + 1].count;
            chunk_stride[ax] = chunk_stride[ax + 1] * self.rows.chunk_shape[ax + 1];
        }
        let mut rows = Vec::new();
        if lo.iter().zip(&*hi).any(|(lo, hi)| lo >= hi) {
            return (linear, rows);
        }
        let mut k = lo.to_vec();
        loop {
            let (mut src, mut out) = (0, 0);
            for ax in 0..rank {
                let a = &self.rows.axes[ax];
                src += (a.start + k[ax] * a.step - g[ax] * self.rows.chunk_shape[ax])
                    * chunk_stride[ax];
                out += k[ax] * out_stride[ax];
            }
            rows.push(Row {
                src: src * self.elem_size,
                out: out * self.elem_size,
                n: hi[last] - lo[last],
                step: self.rows.axes[last].step,
            });
            if !step_in(&mut k[..last], lo, hi) {
                return (linear, rows);
            }
        }
    }

    /// True when the selection would be gathered in memory by [`SliceFile::hold_buffer`]: no
    /// buffer is held, it takes at most `max` bytes over few enough chunks, and it is not whole
    /// chunks that are each one run of it (those are sent straight from the chunks).
    pub(super) fn may_hold_buffer(&self, max: u64) -> bool {
        let small = self.data_size > 0 && self.gathered_size() <= max;
        small && self.slot_count() <= MAX_SLOTS && !self.runs_of_chunks && self.buffer().is_none()
    }

    /// Makes the buffer gathering the selection in memory when [`SliceFile::may_hold_buffer`];
    /// true when made.
    pub(super) fn hold_buffer(&self, max: u64) -> bool {
        if !self.may_hold_buffer(max) {
            return false;
        }
        let mut held = self.buffer.lock();
        if held.is_some() {
            return false;
        }
        *held = Some(Arc::new(SelectionBuffer::new(
            self.data_size,
            self.slot_count(),
            self.row_grain(),
        )));
        // Counted as queued anew: what jobs filled into a buffer let go left with it.
        self.queued.store(0, Ordering::Relaxed);
        true
    }

    /// Lets the buffer go (reads under way keep it until they are done).
    pub(super) fn drop_buffer(&self) {
        *self.buffer.lock() = None;
    }

    fn buffer(&self) -> Option<Arc<SelectionBuffer>> {
        self.buffer.lock().clone()
    }

    /// Queues for decoding the selection's chunks from the one holding byte `offset` of
    /// `A[SEL]` on, in the order a reader meets them, up to a quarter of the cache budget. Chunks
    /// an earlier call queued are not queued again, unless `again` (a new open: they may have
    /// left the cache since).
    pub fn prefetch_from(
        self: &Arc<Self>,
        array: &ArrayFile,
        pool: &ReadAhead,
        cache: &Arc<ChunkCache>,
        offset: u64,
        again: bool,
    ) {
        if offset >= self.data_size {
            return;
        }
        let chunk_bytes = self.rows.chunk_shape.iter().product::<u64>() * self.elem_size;
        let max = ((cache.budget() / 4) / chunk_bytes.max(1)).clamp(1, MAX_PREFETCH_CHUNKS as u64);
        let first = self.walk_position(offset / self.elem_size);
        let end = first.saturating_add(max).min(self.walk_len());
        let queued = if again {
            self.queued.store(end, Ordering::Relaxed);
            first
        } else {
            self.queued.fetch_max(end, Ordering::Relaxed)
        };
        // A reader behind what was queued (parallel reads of the kernel's read-ahead, or a seek
        // back) queues nothing: what it needs and the cache lost, it decodes itself.
        let walked = first.max(queued)..end;
        if let (Some(_), Ok(source)) = (self.buffer(), array.readable()) {
            for slot in walked {
                let (file, source, cache) = (self.clone(), source.clone(), cache.clone());
                let id = source.id(self.walk_chunk(slot));
                // The buffer the file holds when the job runs: one let go and made again
                // meanwhile is filled all the same.
                let run = move || {
                    if let Some(buffer) = file.buffer() {
                        buffer.fill(&file, &source, &cache, slot);
                    }
                };
                pool.submit(Job::run(id, chunk_bytes, run));
            }
            return;
        }
        let chunks: Vec<u64> = walked.map(|w| self.walk_chunk(w)).collect();
        array.prefetch(pool, &chunks, false);
    }

    /// The position in the C-order walk over `axis_chunks` (the order a reader in order first
    /// meets the chunks) of the chunk holding element `elem` of the selection.
    pub(super) fn walk_position(&self, mut elem: u64) -> u64 {
        let (mut at, mut scale) = (0u64, 1u64);
        for ax in (0..self.rows.axes.len()).rev() {
            let a = &self.rows.axes[ax];
            let src = a.start + (elem % a.count) * a.step;
            elem /= a.count;
            let chunk = src / self.rows.chunk_shape[ax];
            at += self.axis_chunks[ax].binary_search(&chunk).unwrap_or(0) as u64 * scale;
            scale *= self.axis_chunks[ax].len() as u64;
        }
        at
    }

    /// The number of chunks the selection touches: the length of the walk over `axis_chunks`.
    fn walk_len(&self) -> u64 {
        self.axis_chunks.iter().map(|c| c.len() as u64).product()
    }

    /// The linear index of the chunk at position `w` of the C-order walk over `axis_chunks`.
    pub(super) fn walk_chunk(&self, mut w: u64) -> u64 {
        let (mut linear, mut scale) = (0, 1);
        for ax in (0..self.rows.axes.len()).rev() {
            let n = self.axis_chunks[ax].len() as u64;
            linear += self.axis_chunks[ax][(w % n) as usize] * scale;
            scale *= self.rows.grid[ax];
            w /= n;
        }
        linear
    }

    /// True at the first call: the first open after the lookup, which queued the first chunks.
    pub fn first_open(&self) -> bool {
        !self.opened.swap(true, Ordering::Relaxed)
    }

    /// Counts a handle opened (`true`) or released (`false`).
    pub(super) fn count_handle(&self, opened: bool) {
        match opened {
            true => self.handles.fetch_add(1, Ordering::Relaxed),
            false => self.handles.fetch_sub(1, Ordering::Relaxed),
        };
    }

    /// True while a handle of the file is open.
    pub(super) fn is_open(&self) -> bool {
        self.handles.load(Ordering::Relaxed) > 0
    }
}

/// The `A[SEL].json` document of selection `sel` of the array at `source_path`.
pub(super) fn selection_json(source_path: &str, sel: &Selection, meta: &ArrayMeta) -> Arc<[u8]> {
    let json = serde_json::json!({
        "source": source_path,
        "selection": sel.normalized(),
        "shape": sel.shape(),
        "dtype": meta.dtype.npy_descr(),
    });
    let mut json = serde_json::to_vec_pretty(&json).unwrap_or_default();
    json.push(b'\n');
    Arc::from(json)
}
