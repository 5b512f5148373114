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
use super::selection_bytes::SelectionBytes;
use super::slice_file::{Row, SliceFile};
use crate::cache::{ChunkCache, ChunkId};
use crate::codec::DecodeTarget;
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

/// The selection's bytes and the progress of each of its chunks.
pub(super) struct SelectionBuffer {
    /// Written row by row by the threads filling slots, each row once, and read where the
    /// slots say the rows are in.
    out: SelectionBytes,
    slots: Mutex<Slots>,
    changed: Condvar,
}

/// The chunks' progress, and what the waiting readers wait for.
struct Slots {
    of: Vec<Slot>,
    /// (slot, decoded bytes needed) per waiting reader: progress wakes only those it serves.
    wants: Vec<(u64, u64)>,
}

/// True when a chunk in state `slot` serves a reader needing its first `need` decoded bytes
/// (or done waiting: failed).
fn serves(slot: Slot, need: u64) -> bool {
    match slot {
        Slot::Running(done) => done >= need,
        Slot::Pending => false,
        Slot::Done | Slot::Failed => true,
    }
}

/// Copies the elements of `row` from decoded chunk bytes `data` into the selection bytes `out`
/// (strided ones gathered in `gather` first); `None` when the chunk is too short (corrupt: the
/// caller marks the chunk failed). The caller fills the row's slot: nobody else writes the row,
/// and nobody reads it before the slot says it is in.
fn copy_row(
    out: &SelectionBytes,
    data: &[u8],
    row: &Row,
    es: usize,
    gather: &mut Vec<u8>,
) -> Option<()> {
    let (src, at, n, step) = (
        row.src as usize,
        row.out as usize,
        row.n as usize,
        row.step as usize,
    );
    // SAFETY: see above.
    if step == 1 {
        return unsafe { out.write(at, data.get(src..src + n * es)?) };
    }
    let span = data.get(src..row.src_end(es as u64) as usize)?;
    gather.clear();
    for s in span.chunks(step * es) {
        gather.extend_from_slice(&s[..es]);
    }
    unsafe { out.write(at, gather) }
}

impl SelectionBuffer {
    /// Room for `bytes` bytes of selection over `slots` chunks.
    pub fn new(bytes: u64, slots: u64) -> Self {
        SelectionBuffer {
            out: SelectionBytes::new(bytes as usize),
            slots: Mutex::new(Slots {
                of: vec![Slot::Pending; slots as usize],
                wants: Vec::new(),
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes held.
    pub fn len(&self) -> u64 {
        self.out.len() as u64
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

    /// Sets the state of `slot`, waking the readers it now serves.
    fn set(&self, slot: u64, to: Slot) {
        let mut slots = self.lock();
        slots.of[slot as usize] = to;
        if slots
            .wants
            .iter()
            .any(|&(s, need)| s == slot && serves(to, need))
        {
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
            let mut scratch = cache.buffers().take(file.chunk_bytes() as usize);
            let (mut next, mut bad, mut gather) = (0, false, Vec::new());
            let loaded = source.reader.load_prefix(
                &coords,
                None,
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
            cache.buffers().give(scratch);
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
            // SAFETY: the caller fills this slot: nobody else writes or reads its rows yet.
            unsafe { self.out.write(row.out as usize, &run)? };
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
                    slots.wants.push((slot, need));
                    slots = self.changed.wait(slots).unwrap_or_else(|p| p.into_inner());
                    if let Some(i) = slots.wants.iter().position(|&w| w == (slot, need)) {
                        slots.wants.swap_remove(i);
                    }
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

    /// Bytes `offset..end` of the selection, whose rows the caller has waited for (see
    /// [`SelectionBuffer::wait_for`]); `None` when out of bounds.
    pub fn bytes(&self, offset: u64, end: u64) -> Option<&[u8]> {
        // SAFETY: rows are written once, before their slot says they are in; these are in.
        unsafe { self.out.read(offset as usize, end as usize) }
    }
}
