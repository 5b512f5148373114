//! The decoded elements of one selection of bounded size, gathered in one buffer: each chunk is
//! decoded (by a read-ahead worker, or by the first reader that needs it) into a reused scratch
//! buffer, only as far as the selection needs, and its selected elements are copied into the
//! buffer row by row as the decoder produces them (while they are in the processor's cache).
//! Reads copy from the buffer as soon as the rows they cover are in: the first plane of a block
//! goes out while the chunks' later planes still decode. Nothing enters the chunk cache, so no
//! partly decoded chunk can ever be mistaken for a whole one; chunks already cached are copied
//! from the cache.

use super::array_file::extend_with_fill;
use super::chunk_source::ChunkSource;
use super::slice_file::{Row, SliceFile};
use crate::cache::{ChunkCache, ChunkId};
use crate::codec::DecodeTarget;
use bytes::BytesMut;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, MutexGuard};

/// Most chunks one selection buffer tracks (a slot each); selections over more chunks take the
/// chunk-cache path.
pub(super) const MAX_SLOTS: u64 = 1 << 20;

/// Where one chunk of the selection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Nobody has started it.
    Pending,
    /// Being decoded and copied in: the rows ending within its first this many decoded bytes
    /// are in.
    Running(u64),
    /// All its rows are copied.
    Done,
    /// Its decoding failed: reads take the chunk-cache path, which reports why.
    Failed,
}

/// Bytes per page of the selection's bytes: each page has its own lock, so that the threads
/// copying different chunks in, and the readers copying out, seldom wait for one another.
const PAGE: usize = 64 << 10;

/// The selection's bytes, in separately locked pages of one allocation (of huge pages when
/// large: see [`crate::huge_pages`]), which the kernel maps as the chunks are copied in.
struct Pages {
    pages: Vec<Mutex<BytesMut>>,
    len: usize,
}

impl Pages {
    fn new(len: usize) -> Self {
        let mut all = BytesMut::zeroed(len);
        let mut pages = Vec::with_capacity(len.div_ceil(PAGE));
        while !all.is_empty() {
            pages.push(Mutex::new(all.split_to(PAGE.min(all.len()))));
        }
        Pages { pages, len }
    }

    /// Calls `each(page bytes, range in the page, offset in at..end)` for the pages holding
    /// bytes `at..end`, each locked meanwhile; `None` when the range is out of bounds.
    fn visit(
        &self,
        at: usize,
        end: usize,
        mut each: impl FnMut(&mut [u8], std::ops::Range<usize>, usize),
    ) -> Option<()> {
        if at > end || end > self.len {
            return None;
        }
        let mut pos = at;
        while pos < end {
            let (page, within) = (pos / PAGE, pos % PAGE);
            let n = (PAGE - within).min(end - pos);
            let mut bytes = self.pages[page].lock().unwrap_or_else(|p| p.into_inner());
            each(&mut bytes, within..within + n, pos - at);
            pos += n;
        }
        Some(())
    }

    /// Writes `src` at byte `at`.
    fn write(&self, at: usize, src: &[u8]) -> Option<()> {
        self.visit(at, at.checked_add(src.len())?, |page, range, from| {
            let n = range.len();
            page[range].copy_from_slice(&src[from..from + n]);
        })
    }

    /// Appends bytes `at..end` to `out`.
    fn read(&self, at: usize, end: usize, out: &mut Vec<u8>) -> Option<()> {
        self.visit(at, end, |page, range, _| {
            out.extend_from_slice(&page[range])
        })
    }
}

/// The selection's bytes and the progress of each of its chunks.
pub(super) struct SelectionBuffer {
    out: Pages,
    slots: Mutex<Slots>,
    changed: Condvar,
}

/// The chunks' progress, and how many readers wait for some.
struct Slots {
    of: Vec<Slot>,
    waiting: usize,
}

/// Copies the elements of `row` from decoded chunk bytes `data` into the selection bytes `out`
/// (strided ones gathered in `gather` first); `None` when the chunk is too short (corrupt: the
/// caller marks the chunk failed).
fn copy_row(out: &Pages, data: &[u8], row: &Row, es: usize, gather: &mut Vec<u8>) -> Option<()> {
    let (src, at, n, step) = (
        row.src as usize,
        row.out as usize,
        row.n as usize,
        row.step as usize,
    );
    if step == 1 {
        return out.write(at, data.get(src..src + n * es)?);
    }
    let span = data.get(src..row.src_end(es as u64) as usize)?;
    gather.clear();
    for s in span.chunks(step * es) {
        gather.extend_from_slice(&s[..es]);
    }
    out.write(at, gather)
}

impl SelectionBuffer {
    /// Room for `bytes` bytes of selection over `slots` chunks.
    pub fn new(bytes: u64, slots: u64) -> Self {
        SelectionBuffer {
            out: Pages::new(bytes as usize),
            slots: Mutex::new(Slots {
                of: vec![Slot::Pending; slots as usize],
                waiting: 0,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes held.
    pub fn len(&self) -> u64 {
        self.out.len as u64
    }

    /// Fills chunk `slot` unless someone started it (a read-ahead job).
    pub fn fill(&self, file: &SliceFile, source: &ChunkSource, cache: &ChunkCache, slot: u64) {
        if self.claim(slot) {
            self.fill_claimed(file, source, cache, slot);
        }
    }

    /// Marks `slot` as started when nobody has; true when this call did.
    fn claim(&self, slot: u64) -> bool {
        let mut slots = self.lock();
        let claimed = slots.of.get(slot as usize) == Some(&Slot::Pending);
        if claimed {
            slots.of[slot as usize] = Slot::Running(0);
        }
        claimed
    }

    /// Sets the state of `slot`, waking the readers waiting (if any).
    fn set(&self, slot: u64, to: Slot) {
        let mut slots = self.lock();
        slots.of[slot as usize] = to;
        if slots.waiting > 0 {
            self.changed.notify_all();
        }
    }

    fn fill_claimed(&self, file: &SliceFile, source: &ChunkSource, cache: &ChunkCache, slot: u64) {
        let run = || self.decode_and_copy(file, source, cache, slot);
        let outcome = catch_unwind(AssertUnwindSafe(run)).unwrap_or(None);
        self.set(
            slot,
            if outcome.is_some() {
                Slot::Done
            } else {
                Slot::Failed
            },
        );
    }

    /// Decodes chunk `slot` as far as its last selected element and copies its rows in; `None`
    /// on any failure.
    fn decode_and_copy(
        &self,
        file: &SliceFile,
        source: &ChunkSource,
        cache: &ChunkCache,
        slot: u64,
    ) -> Option<()> {
        let es = file.elem_size() as usize;
        let (chunk, rows) = file.slot_rows(slot);
        let last = rows.last()?;
        let need = last.src_end(es as u64) as usize;
        let id = ChunkId {
            array: source.id,
            index: chunk,
        };
        if !cache.contains(id) {
            let coords = source.layout.chunk_coords(chunk);
            let mut scratch = cache.pool().take(file.chunk_bytes() as usize);
            let (mut next, mut bad, mut gather) = (0, false, Vec::new());
            let loaded = source.reader.load_prefix(
                &coords,
                &mut DecodeTarget::new(&mut scratch),
                need,
                &mut |data| {
                    let ready = rows[next..]
                        .iter()
                        .take_while(|r| r.src_end(es as u64) as usize <= data.len())
                        .count();
                    for row in &rows[next..next + ready] {
                        bad |= copy_row(&self.out, data, row, es, &mut gather).is_none();
                    }
                    next += ready;
                    if ready > 0 && !bad {
                        self.set(slot, Slot::Running(data.len() as u64));
                    }
                },
            );
            cache.pool().give(scratch);
            match loaded {
                Ok(Some(true)) => return (!bad && next == rows.len()).then_some(()),
                Ok(Some(false)) => return self.copy_fill(file, source, &rows),
                Ok(None) => {}
                Err(_) => return None,
            }
        }
        match source.chunk(cache, chunk).ok()? {
            None => self.copy_fill(file, source, &rows),
            Some(data) => {
                let mut gather = Vec::new();
                rows.iter()
                    .try_for_each(|row| copy_row(&self.out, &data, row, es, &mut gather))
            }
        }
    }

    /// Writes the fill value into the rows of an absent chunk.
    fn copy_fill(&self, file: &SliceFile, source: &ChunkSource, rows: &[Row]) -> Option<()> {
        let fill = &source.reader.meta().fill_value;
        let es = file.elem_size();
        let mut run = Vec::new();
        for row in rows {
            run.clear();
            extend_with_fill(&mut run, fill, 0, row.n * es);
            self.out.write(row.out as usize, &run)?;
        }
        Some(())
    }

    /// Waits until the rows of chunk `slot` that end within its first `need` decoded bytes are
    /// in, filling the chunk here when nobody has started it. False when the chunk failed.
    pub fn wait_for(
        &self,
        file: &SliceFile,
        source: &ChunkSource,
        cache: &ChunkCache,
        slot: u64,
        need: u64,
    ) -> bool {
        let mut slots = self.lock();
        loop {
            match slots.of.get(slot as usize) {
                Some(Slot::Done) => return true,
                Some(Slot::Running(done)) if *done >= need => return true,
                Some(Slot::Running(_)) => {
                    slots.waiting += 1;
                    slots = self.changed.wait(slots).unwrap_or_else(|p| p.into_inner());
                    slots.waiting -= 1;
                }
                Some(Slot::Pending) => {
                    slots.of[slot as usize] = Slot::Running(0);
                    drop(slots);
                    self.fill_claimed(file, source, cache, slot);
                    slots = self.lock();
                }
                Some(Slot::Failed) | None => return false,
            }
        }
    }

    /// Appends bytes `offset..end` of the selection to `out` (all of whose chunks are in).
    pub fn copy_out(&self, offset: u64, end: u64, out: &mut Vec<u8>) {
        // In bounds: the file's reads end at its size, the buffer's length.
        let _ = self.out.read(offset as usize, end as usize, out);
    }
}
