//! The decoded elements of one selection of bounded size, gathered in one buffer: each chunk is
//! decoded (by a read-ahead worker, or by the first reader that needs it) into a reused scratch
//! buffer, only as far as the selection needs, and its selected elements are copied into the
//! buffer row by row as the decoder produces them. Reads copy from the buffer as soon as the rows
//! they cover are there. Nothing enters the chunk cache, so no partly decoded chunk can ever be
//! mistaken for a whole one; chunks already cached are copied from the cache.

use super::array_file::extend_with_fill;
use super::chunk_source::ChunkSource;
use super::slice_file::{Row, SliceFile};
use crate::cache::{ChunkCache, ChunkId};
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
    /// Being decoded: every row starting before this byte of the decoded chunk is copied.
    Running(u64),
    /// All its rows are copied.
    Done,
    /// Its decoding failed: reads take the chunk-cache path, which reports why.
    Failed,
}

struct State {
    out: Vec<u8>,
    slots: Vec<Slot>,
}

/// The selection's bytes and the progress of each of its chunks.
pub(super) struct SelectionBuffer {
    state: Mutex<State>,
    changed: Condvar,
}

/// Copies the elements of `row` from decoded chunk bytes `data` into the selection bytes `out`;
/// `None` when the chunk is too short (corrupt: the caller marks the chunk failed).
fn copy_row(out: &mut [u8], data: &[u8], row: &Row, es: usize) -> Option<()> {
    let (src, at, n, step) = (
        row.src as usize,
        row.out as usize,
        row.n as usize,
        row.step as usize,
    );
    let dst = out.get_mut(at..at + n * es)?;
    if step == 1 {
        dst.copy_from_slice(data.get(src..src + n * es)?);
    } else {
        let span = data.get(src..src + (n - 1) * step * es + es)?;
        for (d, s) in dst.chunks_exact_mut(es).zip(span.chunks(step * es)) {
            d.copy_from_slice(&s[..es]);
        }
    }
    Some(())
}

impl SelectionBuffer {
    /// Room for `bytes` bytes of selection over `slots` chunks.
    pub fn new(bytes: u64, slots: u64) -> Self {
        SelectionBuffer {
            state: Mutex::new(State {
                out: vec![0; bytes as usize],
                slots: vec![Slot::Pending; slots as usize],
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes held.
    pub fn len(&self) -> u64 {
        self.lock().out.len() as u64
    }

    /// Fills chunk `slot` unless someone started it (a read-ahead job).
    pub fn fill(&self, file: &SliceFile, source: &ChunkSource, cache: &ChunkCache, slot: u64) {
        if self.claim(slot) {
            self.fill_claimed(file, source, cache, slot);
        }
    }

    /// Marks `slot` as started when nobody has; true when this call did.
    fn claim(&self, slot: u64) -> bool {
        let mut state = self.lock();
        let claimed = state.slots.get(slot as usize) == Some(&Slot::Pending);
        if claimed {
            state.slots[slot as usize] = Slot::Running(0);
        }
        claimed
    }

    fn set(&self, slot: u64, to: Slot) {
        self.lock().slots[slot as usize] = to;
        self.changed.notify_all();
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
        let need = (last.src + ((last.n - 1) * last.step + 1) * es as u64) as usize;
        let id = ChunkId {
            array: source.id,
            index: chunk,
        };
        if !cache.contains(id) {
            let coords = source.layout.chunk_coords(chunk);
            let mut scratch = cache.pool().take(file.chunk_bytes() as usize);
            let mut next = 0;
            let mut bad = false;
            let loaded = source
                .reader
                .load_prefix(&coords, &mut scratch, need, &mut |data| {
                    let mut state = self.lock();
                    let ready = rows[next..]
                        .iter()
                        .take_while(|r| {
                            (r.src + ((r.n - 1) * r.step + 1) * es as u64) as usize <= data.len()
                        })
                        .count();
                    for row in &rows[next..next + ready] {
                        bad |= copy_row(&mut state.out, data, row, es).is_none();
                    }
                    next += ready;
                    let upto = rows.get(next).map_or(u64::MAX, |r| r.src);
                    state.slots[slot as usize] = Slot::Running(upto);
                    drop(state);
                    self.changed.notify_all();
                });
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
                let mut state = self.lock();
                rows.iter()
                    .try_for_each(|row| copy_row(&mut state.out, &data, row, es))
            }
        }
    }

    /// Writes the fill value into the rows of an absent chunk.
    fn copy_fill(&self, file: &SliceFile, source: &ChunkSource, rows: &[Row]) -> Option<()> {
        let fill = &source.reader.meta().fill_value;
        let es = file.elem_size();
        let mut run = Vec::new();
        let mut state = self.lock();
        for row in rows {
            run.clear();
            extend_with_fill(&mut run, fill, 0, row.n * es);
            let at = row.out as usize;
            state.out.get_mut(at..at + run.len())?.copy_from_slice(&run);
        }
        Some(())
    }

    /// Waits until the elements of chunk `slot` whose bytes start before byte `upto` of the
    /// decoded chunk are in, filling the chunk here when nobody has started it. False when the
    /// chunk failed.
    pub fn wait_for(
        &self,
        file: &SliceFile,
        source: &ChunkSource,
        cache: &ChunkCache,
        slot: u64,
        upto: u64,
    ) -> bool {
        let mut state = self.lock();
        loop {
            match state.slots.get(slot as usize) {
                Some(Slot::Done) => return true,
                Some(Slot::Running(ready)) if *ready >= upto => return true,
                Some(Slot::Running(_)) => {
                    state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
                }
                Some(Slot::Pending) => {
                    state.slots[slot as usize] = Slot::Running(0);
                    drop(state);
                    self.fill_claimed(file, source, cache, slot);
                    state = self.lock();
                }
                Some(Slot::Failed) | None => return false,
            }
        }
    }

    /// Appends bytes `offset..end` of the selection to `out` (all of whose chunks are in).
    pub fn copy_out(&self, offset: u64, end: u64, out: &mut Vec<u8>) {
        let state = self.lock();
        out.extend_from_slice(&state.out[offset as usize..end as usize]);
    }
}
