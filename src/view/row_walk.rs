//! Walking the elements of a selection (or of a whole array) in C order, row by row (a row: the
//! selected indices along the last axis), or chunk by chunk: where each row lies in the chunk
//! grid, and its pieces inside each chunk. A read whose rows go round more chunks than it holds
//! is gathered chunk by chunk, so that each of its chunks is loaded once.

use super::chunk_source::ChunkSource;
use super::held_chunks::HeldChunks;
use super::selection::AxisSel;
use super::ViewError;
use crate::cache::ChunkCache;

/// The rows of a selection of an array in a regular chunk grid.
pub(super) struct RowWalk {
    /// Per source axis (a scalar counts as one axis of length 1).
    pub axes: Vec<AxisSel>,
    pub chunk_shape: Vec<u64>,
    pub grid: Vec<u64>,
    /// Per axis, how many chunks the selection touches.
    pub touched: Vec<u64>,
}

/// How many chunks of `cs` elements the selection `sel` of one axis crosses, counted without
/// listing them: a step longer than a chunk crosses one per element, a shorter one every
/// chunk from the first element's to the last's.
fn chunks_crossed(sel: &AxisSel, cs: u64) -> u64 {
    if sel.count == 0 {
        return 0;
    }
    let last = sel.start + (sel.count - 1) * sel.step;
    (last / cs - sel.start / cs + 1).min(sel.count)
}

impl RowWalk {
    /// The selection `axes` of an array of `shape` in chunks of `chunk_shape` (a scalar, with
    /// no axes, as one axis of length 1).
    pub fn selection(mut axes: Vec<AxisSel>, mut chunk_shape: Vec<u64>, shape: &[u64]) -> Self {
        let mut shape = shape.to_vec();
        if axes.is_empty() {
            axes.push(AxisSel {
                start: 0,
                step: 1,
                count: 1,
                dropped: true,
            });
            chunk_shape.push(1);
            shape.push(1);
        }
        let grid = (shape.iter().zip(&chunk_shape))
            .map(|(&n, &c)| n.div_ceil(c.max(1)))
            .collect();
        let touched = (axes.iter().zip(&chunk_shape))
            .map(|(a, &c)| chunks_crossed(a, c.max(1)))
            .collect();
        RowWalk {
            axes,
            chunk_shape,
            grid,
            touched,
        }
    }

    /// All of an array of `shape` in chunks of `chunk_shape`.
    pub fn whole(shape: &[u64], chunk_shape: &[u64]) -> Self {
        let axes = (shape.iter())
            .map(|&count| AxisSel {
                start: 0,
                step: 1,
                count,
                dropped: false,
            })
            .collect();
        RowWalk::selection(axes, chunk_shape.to_vec(), shape)
    }

    /// Calls `piece(chunk, first, n, step)` for the selected elements `e0..e1` (C order of
    /// the selection) in order: `n` elements of chunk `chunk` (linear index), the first at
    /// element offset `first` in the decoded chunk, then every `step`-th. Walks the selection
    /// row by row (a row: the selected indices along the last axis), each row cut at chunk
    /// boundaries.
    pub fn walk(
        &self,
        e0: u64,
        e1: u64,
        mut piece: impl FnMut(u64, u64, u64, u64) -> Result<(), ViewError>,
    ) -> Result<(), ViewError> {
        for row in self.rows_of(e0, e1) {
            let place = [(row, self.row_place(row))];
            self.pieces(e0, e1, &place, &mut |c, first, n, step, _| {
                piece(c, first, n, step)
            })?;
        }
        Ok(())
    }

    /// Like [`RowWalk::walk`], but chunk by chunk: the pieces of each chunk one after the
    /// other, each also given `e`, the element of the selection it starts at.
    fn walk_by_chunk(
        &self,
        e0: u64,
        e1: u64,
        mut piece: impl FnMut(u64, u64, u64, u64, u64) -> Result<(), ViewError>,
    ) -> Result<(), ViewError> {
        let mut rows: Vec<(u64, (u64, u64))> = self
            .rows_of(e0, e1)
            .map(|row| (row, self.row_place(row)))
            .collect();
        rows.sort_by_key(|&(_, (chunks, _))| chunks);
        for band in rows.chunk_by(|a, b| a.1 .0 == b.1 .0) {
            self.pieces(e0, e1, band, &mut piece)?;
        }
        Ok(())
    }

    /// The rows (numbered in C order) holding selected elements `e0..e1`.
    fn rows_of(&self, e0: u64, e1: u64) -> std::ops::Range<u64> {
        let row_len = self.axes[self.axes.len() - 1].count.max(1);
        if e0 >= e1 {
            return 0..0;
        }
        e0 / row_len..e1.div_ceil(row_len)
    }

    /// Where row `row` lies: the linear index of its chunks along every axis but the last, and
    /// its element offset inside them.
    fn row_place(&self, row: u64) -> (u64, u64) {
        let last = self.axes.len() - 1;
        let (mut rest, mut chunks, mut offset, mut grid, mut shape) = (row, 0, 0, 1, 1);
        for ax in (0..last).rev() {
            let a = &self.axes[ax];
            let src = a.start + (rest % a.count) * a.step;
            rest /= a.count;
            let cs = self.chunk_shape[ax];
            chunks += src / cs * grid;
            offset += src % cs * shape;
            grid *= self.grid[ax];
            shape *= cs;
        }
        (chunks, offset)
    }

    /// Calls `piece(chunk, first, n, step, e)` for the selected elements `e0..e1` of `rows`
    /// (each with its place, see [`RowWalk::row_place`]), which lie in the same chunks
    /// along every axis but the last: chunk by chunk along the last axis, the pieces of every
    /// row in it.
    fn pieces(
        &self,
        e0: u64,
        e1: u64,
        rows: &[(u64, (u64, u64))],
        piece: &mut impl FnMut(u64, u64, u64, u64, u64) -> Result<(), ViewError>,
    ) -> Result<(), ViewError> {
        let last = self.axes.len() - 1;
        let lsel = &self.axes[last];
        let (lcs, lgrid, row_len) = (self.chunk_shape[last], self.grid[last], lsel.count);
        // The selected indices along the last axis of row `row` among `e0..e1`.
        let span = |row: u64| {
            let at = row * row_len;
            (e0.max(at) - at, e1.min(at + row_len) - at)
        };
        let (lo, hi) = rows.iter().fold((row_len, 0), |(lo, hi), &(row, _)| {
            let (w0, w1) = span(row);
            (lo.min(w0), hi.max(w1))
        });
        let mut k = lo;
        while k < hi {
            let c = (lsel.start + k * lsel.step) / lcs;
            let k_end = hi.min(((c + 1) * lcs - lsel.start).div_ceil(lsel.step));
            for &(row, (chunks, offset)) in rows {
                let (w0, w1) = span(row);
                let (from, to) = (k.max(w0), k_end.min(w1));
                if from < to {
                    let s = lsel.start + from * lsel.step;
                    let first = offset * lcs + s % lcs;
                    piece(
                        chunks * lgrid + c,
                        first,
                        to - from,
                        lsel.step,
                        row * row_len + from,
                    )?;
                }
            }
            k = k_end;
        }
        Ok(())
    }

    /// How many chunks a walk of the rows in order goes round before it comes back to one:
    /// the chunks of a row, times those of the axes between the last and the innermost axis
    /// with several selected indices in one chunk (whose next index walks them again); 1 when
    /// no chunk is come back to.
    fn chunks_gone_round(&self) -> u64 {
        let last = self.axes.len() - 1;
        let mut round = self.touched[last];
        for ax in (0..last).rev() {
            let chunks = self.touched[ax];
            if self.axes[ax].count > chunks {
                return round;
            }
            round = round.saturating_mul(chunks);
        }
        1
    }

    /// Appends bytes `offset..end` of the selection (elements of `es` bytes; `name` for log
    /// lines) to `out` chunk by chunk (see [`RowWalk::read_by_chunk`]) when they span rows
    /// that go round more chunks than `held` keeps; false (nothing read) otherwise.
    pub fn read_going_round(
        &self,
        (source, cache, name): (&ChunkSource, &ChunkCache, &str),
        (offset, end, es): (u64, u64, u64),
        out: &mut Vec<u8>,
        held: &mut HeldChunks,
    ) -> Result<bool, ViewError> {
        let (e0, e1) = (offset / es, end.div_ceil(es));
        let rows = self.rows_of(e0, e1);
        let chunk_bytes = self.chunk_shape.iter().product::<u64>().saturating_mul(es);
        if rows.end - rows.start < 2 || held.keeps(self.chunks_gone_round(), chunk_bytes) {
            return Ok(false);
        }
        let at = out.len();
        self.read_by_chunk((source, cache, name), (e0, e1, es), out, held)?;
        out.drain(at..at + (offset - e0 * es) as usize);
        out.truncate(at + (end - offset) as usize);
        Ok(true)
    }

    /// Appends selected elements `e0..e1` (of `es` bytes) to `out` gathered chunk by chunk,
    /// for a selection whose rows go round more chunks than `held` keeps (in row order, each
    /// row would load them again): each chunk of the read is loaded once.
    pub fn read_by_chunk(
        &self,
        (source, cache, name): (&ChunkSource, &ChunkCache, &str),
        (e0, e1, es): (u64, u64, u64),
        out: &mut Vec<u8>,
        held: &mut HeldChunks,
    ) -> Result<(), ViewError> {
        let (es, at) = (es as usize, out.len());
        out.resize(at + (e1 - e0) as usize * es, 0);
        let fill = &source.reader.meta().fill_value;
        self.walk_by_chunk(e0, e1, |chunk, first, n, step, e| {
            let to = &mut out[at + (e - e0) as usize * es..][..n as usize * es];
            let span = (
                first as usize * es,
                (n - 1) as usize * step as usize * es + es,
            );
            match held.bytes(source, cache, chunk, span, name)? {
                None => to
                    .iter_mut()
                    .zip(fill.iter().cycle())
                    .for_each(|(b, f)| *b = *f),
                Some(bytes) if step == 1 => to.copy_from_slice(bytes),
                Some(bytes) => {
                    let from = bytes.chunks(step as usize * es);
                    to.chunks_mut(es)
                        .zip(from)
                        .for_each(|(el, src)| el.copy_from_slice(&src[..es]));
                }
            }
            Ok(())
        })
    }
}
