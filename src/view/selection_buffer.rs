//! The decoded elements of one selection of bounded size, gathered in one buffer: each chunk is
//! decoded (by a read-ahead worker, or by the first reader that needs it) into a reused scratch
//! buffer, only as far as the selection needs, and its selected elements are copied into the
//! buffer row by row as the decoder produces them (while they are in the processor's cache).
//! Reads copy from the buffer as soon as the rows they cover are in: the first plane of a block
//! goes out while the chunks' later planes still decode. Nothing enters the chunk cache, so no
//! partly decoded chunk can ever be mistaken for a whole one; chunks already cached are copied
//! from the cache.

use super::array_file::extend_with_fill;
use super::chunk_source::{ChunkSource, Dest};
use super::slice_file::{Row, SliceFile};
use crate::cache::ChunkCache;
use crate::codec::{DecodeTarget, Need, Target};
use crate::fetch::Loaded;
use crate::memory::filling::{Filler, FillingBuffer};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Most chunks one selection buffer tracks (a part each); selections over more chunks take the
/// chunk-cache path.
pub(super) const MAX_SLOTS: u64 = 1 << 20;

/// The selection's bytes, a part per chunk ("slot"): a slot's mark is how many of its chunk's
/// decoded bytes are in, the rows ending within them copied. A failed slot sends its reads
/// down the chunk-cache path, which reports why.
pub(super) struct SelectionBuffer {
    out: FillingBuffer,
}

/// Copies the elements of `row` from decoded chunk bytes `data` into the selection through the
/// writer of its chunk's slot (strided ones gathered in `gather` first); `None` when the chunk
/// is too short (corrupt: the slot fails).
fn copy_row(
    out: &mut Filler,
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
    /// Room for `bytes` bytes of selection over `slots` chunks, whose rows start and end on
    /// multiples of `grain` bytes.
    pub fn new(bytes: u64, slots: u64, grain: u64) -> Self {
        SelectionBuffer {
            out: FillingBuffer::uninit(bytes as usize, slots as usize, grain as usize),
        }
    }

    /// Fills chunk `slot` unless someone started it (a read-ahead job, or a reader).
    pub fn fill(&self, file: &SliceFile, source: &ChunkSource, cache: &ChunkCache, slot: u64) {
        let Some(mut filler) = self.out.claim(slot as usize) else {
            return;
        };
        let run = || self.decode_and_copy(&mut filler, file, source, cache, slot);
        if let Ok(Some(())) = catch_unwind(AssertUnwindSafe(run)) {
            filler.finish();
        }
    }

    /// Decodes chunk `slot` as far as its last selected element and copies its rows in; `None`
    /// on any failure.
    fn decode_and_copy(
        &self,
        out: &mut Filler,
        file: &SliceFile,
        source: &ChunkSource,
        cache: &ChunkCache,
        slot: u64,
    ) -> Option<()> {
        let es = file.elem_size() as usize;
        let (chunk, rows) = file.slot_rows(slot);
        let last = rows.last()?;
        let need = last.src_end(es as u64) as usize;
        // Copies the rows that end within the decoded bytes `data` and are not in yet.
        let (mut next, mut bad, mut gather) = (0, false, Vec::new());
        let mut copy = |data: &[u8]| {
            let ready = rows[next..]
                .iter()
                .take_while(|r| r.src_end(es as u64) as usize <= data.len())
                .count();
            for row in &rows[next..next + ready] {
                bad |= copy_row(out, data, row, es, &mut gather).is_none();
            }
            next += ready;
            if ready > 0 && !bad {
                out.publish(data.len());
            }
        };
        let mut data = None;
        if !cache.contains(source.id(chunk)) {
            let mut scratch = crate::memory::buffers().take(file.chunk_bytes() as usize);
            let room = DecodeTarget::new(&mut scratch);
            let target = Target::Room(room, Need::Front(need, &mut copy));
            let loaded = source.load(cache, chunk, Dest::Room(target, None));
            crate::memory::buffers().give(scratch);
            match loaded.ok()? {
                Loaded::Decoded => return (!bad && next == rows.len()).then_some(()),
                Loaded::Absent => return copy_fill(out, file, source, &rows),
                Loaded::Unsuited => {}
            }
        }
        source.load(cache, chunk, Dest::Cache(&mut data)).ok()?;
        let Some(data) = data else {
            return copy_fill(out, file, source, &rows);
        };
        copy(&data);
        (!bad && next == rows.len()).then_some(())
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
        self.fill(file, source, cache, slot);
        self.out.wait(slot as usize, need as usize) && !self.out.failed(slot as usize)
    }

    /// Bytes `offset..end` of the selection, whose rows the caller has waited for (see
    /// [`SelectionBuffer::wait_for`]); `None` when out of bounds or not all in.
    pub fn bytes(&self, offset: u64, end: u64) -> Option<&[u8]> {
        self.out.read_written(offset as usize, end as usize)
    }
}

/// Writes the fill value into the rows of an absent chunk, through the writer of its slot.
fn copy_fill(out: &mut Filler, file: &SliceFile, source: &ChunkSource, rows: &[Row]) -> Option<()> {
    let fill = &source.reader.meta().fill_value;
    let es = file.elem_size();
    let mut run = Vec::new();
    for row in rows {
        run.clear();
        extend_with_fill(&mut run, fill, 0, row.n * es);
        out.write(row.out as usize, &run)?;
    }
    Some(())
}
