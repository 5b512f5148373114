//! Maps a range of elements of an array file (C order) to runs inside chunks.

use super::GridError;
use crate::codec::step_in;
use crate::meta::element_count;

/// One stretch of consecutive elements that is consecutive in one chunk as well.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// Linear (C-order) index of the chunk in the chunk grid.
    pub chunk: u64,
    /// Element offset of the run inside the chunk's decoded buffer.
    pub chunk_offset: u64,
    /// Element index of the run's first element in the array file.
    pub start: u64,
    /// Number of elements.
    pub len: u64,
}

/// The geometry of an array split into a regular chunk grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GridGeometry {
    shape: Vec<u64>,
    chunk_shape: Vec<u64>,
    grid: Vec<u64>,
    /// Axes after this one are covered whole by every chunk, so runs extend across them.
    merge_axis: usize,
    /// Elements in one step of `merge_axis` (product of the shape after it).
    inner: u64,
}

impl GridGeometry {
    /// The layout of an array of `shape` in chunks of `chunk_shape`. Every count and product
    /// the layout uses later (elements, elements per chunk, chunks, the grid's extent along each
    /// axis) is checked here, so none can overflow afterwards; an error says which one does.
    pub fn new(shape: &[u64], chunk_shape: &[u64]) -> Result<Self, GridError> {
        let shapes = || (shape.to_vec(), chunk_shape.to_vec());
        if shape.len() != chunk_shape.len() || chunk_shape.contains(&0) {
            let (shape, chunk_shape) = shapes();
            return Err(GridError::NotTiled { shape, chunk_shape });
        }
        let product = element_count;
        let grid: Vec<u64> = shape
            .iter()
            .zip(chunk_shape)
            .map(|(&s, &c)| s.div_ceil(c))
            .collect();
        let fits = product(shape).is_some()
            && product(chunk_shape).is_some()
            && product(&grid).is_some()
            && grid
                .iter()
                .zip(chunk_shape)
                .all(|(&g, &c)| g.checked_mul(c).is_some());
        if !fits {
            let (shape, chunk_shape) = shapes();
            return Err(GridError::Overflow { shape, chunk_shape });
        }
        let mut merge_axis = shape.len().saturating_sub(1);
        while merge_axis > 0 && chunk_shape[merge_axis] == shape[merge_axis] {
            merge_axis -= 1;
        }
        let inner = shape.iter().skip(merge_axis + 1).product();
        Ok(GridGeometry {
            shape: shape.to_vec(),
            chunk_shape: chunk_shape.to_vec(),
            grid,
            merge_axis,
            inner,
        })
    }

    /// Number of elements in the array (checked in [`GridGeometry::new`]).
    pub fn len(&self) -> u64 {
        element_count(&self.shape).unwrap_or_default()
    }

    /// True when the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of elements in one (full-size) chunk.
    pub fn chunk_len(&self) -> u64 {
        self.chunk_shape.iter().product()
    }

    /// Elements of the array covered by one layer of chunks along the first axis: a reader going
    /// through the file in order needs all chunks of such a band at once.
    pub fn band_len(&self) -> u64 {
        match self.chunk_shape.first() {
            None => 1,
            Some(&c) => c.min(self.shape[0]) * element_count(&self.shape[1..]).unwrap_or_default(),
        }
    }

    /// The grid index of the chunk with linear index `chunk`.
    pub fn chunk_coords(&self, mut chunk: u64) -> Vec<u64> {
        let mut idx = vec![0; self.grid.len()];
        for ax in (0..self.grid.len()).rev() {
            idx[ax] = chunk % self.grid[ax];
            chunk /= self.grid[ax];
        }
        idx
    }

    /// One past the element index (in the array file) of the last element of chunk `chunk`: a
    /// reader going through the file in order is done with the chunk once it gets there.
    pub fn chunk_end(&self, chunk: u64) -> u64 {
        let last = self
            .chunk_coords(chunk)
            .iter()
            .enumerate()
            .fold(0, |at, (ax, &c)| {
                let coord = ((c + 1) * self.chunk_shape[ax]).min(self.shape[ax]) - 1;
                at * self.shape[ax] + coord
            });
        last + 1
    }

    /// The distinct chunks holding elements `start..end`, at most `max`, the chunk of `start`
    /// first. The range is cut into at most two boxes per axis (a C-order range is a partial
    /// slice, whole slices, a partial slice, recursively), so the cost follows the number of
    /// chunks, not of runs: this is what prefetch asks for every read.
    pub fn chunks_in(&self, start: u64, end: u64, max: usize) -> Vec<u64> {
        let end = end.min(self.len());
        let mut boxes = Vec::new();
        push_boxes(&self.shape, start, end, &mut Vec::new(), &mut boxes);
        let mut chunks = Vec::new();
        for b in &boxes {
            let first: Vec<u64> = b
                .iter()
                .zip(&self.chunk_shape)
                .map(|(r, c)| r.0 / c)
                .collect();
            let end: Vec<u64> = b
                .iter()
                .zip(&self.chunk_shape)
                .map(|(r, c)| r.1.div_ceil(*c))
                .collect();
            let mut idx = first.clone();
            loop {
                let chunk = idx.iter().zip(&self.grid).fold(0, |at, (i, g)| at * g + i);
                if !chunks.contains(&chunk) {
                    if chunks.len() == max {
                        return chunks;
                    }
                    chunks.push(chunk);
                }
                if !step_in(&mut idx, &first, &end) {
                    break;
                }
            }
        }
        chunks
    }

    /// The runs covering elements `start..end`, in order. Positions are found by division for
    /// the first run only; after that they advance chunk by chunk (this is the read hot path).
    pub fn runs(&self, start: u64, end: u64) -> Runs<'_> {
        Runs {
            layout: self,
            e: start,
            end,
            pos: None,
        }
    }
}

/// Appends to `out` the boxes (per axis `lo..hi`) that make up elements `start..end` of an
/// array of `shape`, in file order; `fixed` holds the ranges of the axes outside `shape`.
fn push_boxes(
    shape: &[u64],
    start: u64,
    end: u64,
    fixed: &mut Vec<(u64, u64)>,
    out: &mut Vec<Vec<(u64, u64)>>,
) {
    if start >= end {
        return;
    }
    let Some((_, rest)) = shape.split_first() else {
        out.push(fixed.clone());
        return;
    };
    let inner: u64 = rest.iter().product();
    let (a, a_off) = (start / inner, start % inner);
    let (b, b_end) = ((end - 1) / inner, (end - 1) % inner + 1);
    // Elements `from..to` of slice `i` along this axis.
    let slice = |i: u64, from: u64, to: u64, fixed: &mut Vec<(u64, u64)>, out: &mut Vec<_>| {
        fixed.push((i, i + 1));
        push_boxes(rest, from, to, fixed, out);
        fixed.pop();
    };
    if a == b {
        return slice(a, a_off, b_end, fixed, out);
    }
    let whole_from = if a_off > 0 { a + 1 } else { a };
    let whole_to = if b_end < inner { b } else { b + 1 };
    if a_off > 0 {
        slice(a, a_off, inner, fixed, out);
    }
    if whole_from < whole_to {
        let mut whole = fixed.clone();
        whole.push((whole_from, whole_to));
        whole.extend(rest.iter().map(|&m| (0, m)));
        out.push(whole);
    }
    if b_end < inner {
        slice(b, 0, b_end, fixed, out);
    }
}

/// Where a walk through the array stands: per axis the coordinate, the chunk index and the
/// coordinate inside the chunk.
struct Position {
    coords: Vec<u64>,
    chunk: Vec<u64>,
    within: Vec<u64>,
}

/// Iterator over the runs of a range of elements (see [`GridGeometry::runs`]).
pub struct Runs<'a> {
    layout: &'a GridGeometry,
    e: u64,
    end: u64,
    pos: Option<Position>,
}

impl Runs<'_> {
    fn start_position(&self, mut e: u64) -> Position {
        let l = self.layout;
        let n = l.shape.len();
        let mut coords = vec![0; n];
        for ax in (0..n).rev() {
            coords[ax] = e % l.shape[ax];
            e /= l.shape[ax];
        }
        let chunk = coords
            .iter()
            .zip(&l.chunk_shape)
            .map(|(c, cs)| c / cs)
            .collect();
        let within = coords
            .iter()
            .zip(&l.chunk_shape)
            .map(|(c, cs)| c % cs)
            .collect();
        Position {
            coords,
            chunk,
            within,
        }
    }
}

impl Iterator for Runs<'_> {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        let (l, e, end) = (self.layout, self.e, self.end);
        if e >= end {
            return None;
        }
        if l.shape.is_empty() {
            self.e = end;
            return Some(Run {
                chunk: 0,
                chunk_offset: 0,
                start: e,
                len: end - e,
            });
        }
        if self.pos.is_none() {
            self.pos = Some(self.start_position(e));
        }
        let p = self.pos.as_mut()?;
        let j = l.merge_axis;
        let (mut chunk, mut chunk_offset, mut inner_off) = (0u64, 0u64, 0u64);
        for ax in 0..l.shape.len() {
            chunk = chunk * l.grid[ax] + p.chunk[ax];
            chunk_offset = chunk_offset * l.chunk_shape[ax] + p.within[ax];
            if ax > j {
                inner_off = inner_off * l.shape[ax] + p.coords[ax];
            }
        }
        let chunk_end = ((p.chunk[j] + 1) * l.chunk_shape[j]).min(l.shape[j]);
        let avail = (chunk_end - p.coords[j]) * l.inner - inner_off;
        let len = avail.min(end - e);
        self.e = e + len;
        if len == avail && self.e < end {
            // On to the start of the next chunk along the merge axis (carrying outwards).
            for ax in j + 1..l.shape.len() {
                (p.coords[ax], p.chunk[ax], p.within[ax]) = (0, 0, 0);
            }
            p.coords[j] = chunk_end;
            (p.chunk[j], p.within[j]) = (p.chunk[j] + 1, 0);
            let mut ax = j;
            while p.coords[ax] == l.shape[ax] && ax > 0 {
                (p.coords[ax], p.chunk[ax], p.within[ax]) = (0, 0, 0);
                ax -= 1;
                p.coords[ax] += 1;
                p.within[ax] += 1;
                if p.within[ax] == l.chunk_shape[ax] {
                    (p.chunk[ax], p.within[ax]) = (p.chunk[ax] + 1, 0);
                }
            }
        }
        Some(Run {
            chunk,
            chunk_offset,
            start: e,
            len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The naive model: element by element, where is it?
    fn locate(shape: &[u64], chunks: &[u64], e: u64) -> (u64, u64) {
        let mut coords = vec![0; shape.len()];
        let mut rest = e;
        for ax in (0..shape.len()).rev() {
            coords[ax] = rest % shape[ax];
            rest /= shape[ax];
        }
        let (mut chunk, mut off) = (0, 0);
        for ax in 0..shape.len() {
            let grid = shape[ax].div_ceil(chunks[ax]);
            chunk = chunk * grid + coords[ax] / chunks[ax];
            off = off * chunks[ax] + coords[ax] % chunks[ax];
        }
        (chunk, off)
    }

    fn shapes() -> impl Strategy<Value = (Vec<u64>, Vec<u64>)> {
        prop::collection::vec((1u64..7, 1u64..8), 0..5).prop_map(|dims| dims.into_iter().unzip())
    }

    proptest! {
        #[test]
        fn runs_match_the_naive_model((shape, chunks) in shapes(), a in 0u64..2000, b in 0u64..2000) {
            let layout = GridGeometry::new(&shape, &chunks).unwrap();
            let n = layout.len();
            let (start, end) = ((a % (n + 1)).min(b % (n + 1)), (a % (n + 1)).max(b % (n + 1)));
            let mut next = start;
            for run in layout.runs(start, end) {
                prop_assert_eq!(run.start, next);
                prop_assert!(run.len > 0);
                for k in 0..run.len {
                    prop_assert_eq!(locate(&shape, &chunks, run.start + k), (run.chunk, run.chunk_offset + k));
                }
                next += run.len;
            }
            prop_assert_eq!(next, end);
        }

        #[test]
        fn chunks_in_are_the_chunks_of_the_runs((shape, chunks) in shapes(), a in 0u64..2000, b in 0u64..2000) {
            let layout = GridGeometry::new(&shape, &chunks).unwrap();
            let n = layout.len();
            let (start, end) = ((a % (n + 1)).min(b % (n + 1)), (a % (n + 1)).max(b % (n + 1)));
            let mut expected: Vec<u64> = layout.runs(start, end).map(|r| r.chunk).collect();
            let got = layout.chunks_in(start, end, usize::MAX);
            if let Some(&first) = expected.first() {
                prop_assert_eq!(got.first(), Some(&first), "the chunk of `start` comes first");
            }
            let mut sorted = got.clone();
            sorted.sort_unstable();
            sorted.dedup();
            prop_assert_eq!(sorted.len(), got.len(), "no chunk twice");
            expected.sort_unstable();
            expected.dedup();
            prop_assert_eq!(sorted, expected);
            let capped = layout.chunks_in(start, end, 2);
            prop_assert_eq!(&capped[..], &got[..got.len().min(2)]);
        }

        #[test]
        fn chunk_end_is_one_past_the_last_element_of_the_chunk((shape, chunks) in shapes()) {
            let layout = GridGeometry::new(&shape, &chunks).unwrap();
            let mut last = std::collections::HashMap::new();
            for e in 0..layout.len() {
                last.insert(locate(&shape, &chunks, e).0, e + 1);
            }
            for (chunk, end) in last {
                prop_assert_eq!(layout.chunk_end(chunk), end);
            }
        }
    }

    #[test]
    fn whole_rows_merge_when_chunks_span_trailing_axes() {
        let layout = GridGeometry::new(&[4, 3, 5], &[2, 3, 5]).unwrap();
        assert_eq!(
            layout.runs(0, 60).map(|r| r.len).collect::<Vec<_>>(),
            vec![30, 30]
        );
        let layout = GridGeometry::new(&[4, 5], &[2, 2]).unwrap();
        assert_eq!(
            layout
                .runs(0, 5)
                .map(|r| (r.chunk, r.len))
                .collect::<Vec<_>>(),
            vec![(0, 2), (1, 2), (2, 1)]
        );
        assert_eq!(layout.chunk_coords(5), vec![1, 2]);
        let scalar = GridGeometry::new(&[], &[]).unwrap();
        assert_eq!(
            scalar.runs(0, 1).collect::<Vec<_>>(),
            vec![Run {
                chunk: 0,
                chunk_offset: 0,
                start: 0,
                len: 1
            }]
        );
    }

    #[test]
    fn overflowing_layouts_are_refused() {
        let half = u64::MAX / 2 + 1;
        for (shape, chunks) in [
            (vec![u64::MAX, 2], vec![1, 1]),
            (vec![4, 4], vec![u64::MAX, u64::MAX]),
            (vec![half + 1], vec![half]),
            (vec![u64::MAX, u64::MAX], vec![1, u64::MAX]),
        ] {
            let err = GridGeometry::new(&shape, &chunks).unwrap_err();
            assert!(matches!(err, GridError::Overflow { .. }), "{err}");
            assert!(err.to_string().contains("overflows"), "{err}");
        }
        let not_tiled = |s: &[u64], c: &[u64]| {
            matches!(GridGeometry::new(s, c), Err(GridError::NotTiled { .. }))
        };
        assert!(not_tiled(&[4], &[0]));
        assert!(not_tiled(&[4], &[]));
        assert_eq!(GridGeometry::new(&[0, 3], &[2, 2]).unwrap().len(), 0);
    }
}
