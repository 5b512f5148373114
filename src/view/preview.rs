//! `A.png`: a picture of an array of two or more dimensions with a numeric type (the view
//! builds none for the extension floats served as their bits, such as `bfloat16`). It shows the
//! first 2-D slice (the last two axes, index 0 on the others), scaled to 8-bit grey between
//! the slice's minimum and maximum (NaN, infinities and the fill value black; complex numbers as
//! their magnitude; bool black and white), at most [`MAX_SIDE`] pixels a side (every n-th
//! element beyond). It is rendered when first opened, once however many open it at the same
//! time, reading only the chunks of that slice through the chunk cache, chunk by chunk (each
//! chunk loaded once, whatever the cache holds), and kept in a small LRU; a render that failed
//! fails the opens that waited for it and is not kept (the next open tries again). Arrays
//! whose first slice needs more than [`MAX_DECODE`] bytes of decoded chunks have none.

use super::held_chunks::HeldChunks;
use super::row_walk::RowWalk;
use super::selection::AxisSel;
use super::{Content, Inode, IoCause, View, ViewError, ROOT_INO};
use crate::codec::NumType;
use crate::meta::{ArrayMeta, DataType};
use crate::store::FlightLru;
use std::sync::Arc;

/// Longest side of a preview, in pixels.
pub const MAX_SIDE: u64 = 1024;
/// Rendered previews kept (each at most about 1 MiB).
const KEPT: u64 = 16;
/// The most decoded chunk bytes a preview may need: an array whose first slice lies in more
/// chunks than that has no picture (rendering happens at `stat`, which must stay quick).
pub const MAX_DECODE: u64 = 512 << 20;

/// What a preview needs of its array.
pub(super) struct Preview {
    /// The array's number in the view's list of arrays, and its path (for messages).
    pub(super) array: u32,
    path: String,
    dtype: DataType,
    /// Rows and columns of the slice.
    rows: u64,
    cols: u64,
    fill: Vec<u8>,
}

/// Rendered previews, by preview number: each rendered once however many open it at the same
/// time (they share its outcome, its error too); a failed render is not kept.
pub(super) type Rendered = FlightLru<u32, Arc<[u8]>, ViewError>;

/// An empty cache of rendered previews.
pub(super) fn rendered_cache() -> Rendered {
    FlightLru::new(KEPT, |_| 1)
}

impl Preview {
    /// The preview of array number `array`, when it has one: two or more dimensions, none
    /// empty (on any axis: an empty array has no first slice), and a numeric or bool type.
    pub(super) fn of(array: u32, path: &str, meta: &ArrayMeta) -> Option<Preview> {
        let numeric = matches!(
            meta.dtype,
            DataType::Bool
                | DataType::Int(_)
                | DataType::UInt(_)
                | DataType::Float(2 | 4 | 8)
                | DataType::Complex(8 | 16)
        );
        let ([.., rows, cols], [.., chunk_rows, chunk_cols]) =
            (&meta.shape[..], &meta.chunk_shape[..])
        else {
            return None;
        };
        if !numeric || meta.element_count().is_none_or(|n| n == 0) {
            return None;
        }
        let (rows, cols) = (*rows, *cols);
        let slice_chunks = rows
            .div_ceil(*chunk_rows.max(&1))
            .checked_mul(cols.div_ceil(*chunk_cols.max(&1)));
        let chunk_bytes = meta
            .chunk_shape
            .iter()
            .try_fold(meta.dtype.size() as u64, |acc, &d| acc.checked_mul(d));
        let decode = chunk_bytes
            .zip(slice_chunks)
            .and_then(|(bytes, chunks)| bytes.checked_mul(chunks));
        if decode.is_none_or(|d| d > MAX_DECODE) {
            log::debug!("{path}: no preview: its first slice lies in more than {MAX_DECODE} bytes of chunks");
            return None;
        }
        Some(Preview {
            array,
            path: path.to_string(),
            dtype: meta.dtype.clone(),
            rows,
            cols,
            fill: meta.fill_value.clone(),
        })
    }
}

/// One element as a number (complex: its magnitude); `None` for NaN and infinities.
fn value(dtype: &DataType, b: &[u8]) -> Option<f64> {
    let v = match dtype {
        DataType::Complex(n) => {
            let half = n / 2;
            let re = value(&DataType::Float(half), b.get(..half)?)?;
            let im = value(&DataType::Float(half), b.get(half..)?)?;
            re.hypot(im)
        }
        _ => {
            let num = NumType::from_data_type(dtype, false)?;
            num.read(b.get(..num.size)?).to_f64()
        }
    };
    v.is_finite().then_some(v)
}

/// True when element `b` equals the fill value `fill`: the same bytes, or for floats the same
/// number (`-0.0` is `0.0`), part by part for complex numbers.
fn is_fill(dtype: &DataType, b: &[u8], fill: &[u8]) -> bool {
    if b == fill {
        return true;
    }
    match dtype {
        DataType::Float(_) => value(dtype, b).is_some() && value(dtype, b) == value(dtype, fill),
        DataType::Complex(n) if fill.len() == *n => {
            let part = DataType::Float(n / 2);
            let (b, fill) = (b.split_at(n / 2), fill.split_at(n / 2));
            is_fill(&part, b.0, fill.0) && is_fill(&part, b.1, fill.1)
        }
        _ => false,
    }
}

/// 8-bit grey levels of `values` (`None` black) between their minimum and maximum; a constant
/// slice is white, bool is black and white. Values so far apart that their difference
/// overflows (±1e308) are scaled by halves.
fn grey(values: &[Option<f64>], bool_type: bool) -> Vec<u8> {
    let (lo, hi) = if bool_type {
        (0.0, 1.0)
    } else {
        values
            .iter()
            .flatten()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            })
    };
    let level = |v: f64| {
        let span = hi - lo;
        if span.is_finite() {
            (v - lo) / span
        } else {
            (v / 2.0 - lo / 2.0) / (hi / 2.0 - lo / 2.0)
        }
    };
    values
        .iter()
        .map(|v| match v {
            None => 0,
            Some(_) if hi <= lo => 255,
            Some(v) => (level(*v) * 255.0).round() as u8,
        })
        .collect()
}

fn encode(width: u32, height: u32, pixels: &[u8]) -> Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(pixels)?;
    writer.finish()?;
    Ok(out)
}

impl View {
    /// Shows no `A.png` files (`--no-previews`); called before the view is used. The root's
    /// listing, made with the view when the store is an array, loses its preview too.
    pub fn hide_previews(&mut self) {
        self.previews_shown = false;
        let previews: Vec<u64> = match self.known_dir(ROOT_INO).and_then(|d| d.listing.get()) {
            Some(listing) => listing
                .entries
                .iter()
                .map(|&(_, ino)| ino)
                .filter(|&ino| matches!(self.known(ino).content, Content::Preview(_)))
                .collect(),
            None => return,
        };
        let root = self.inodes.get_mut((ROOT_INO - 1) as usize);
        if let Some(Inode {
            content: Content::Dir(dir),
            ..
        }) = root
        {
            if let Some(listing) = dir.listing.get_mut() {
                listing.entries.retain(|(_, ino)| !previews.contains(ino));
            }
        }
    }

    /// The size of preview `p` if it has been rendered and is still kept.
    pub(super) fn rendered_size(&self, p: u32) -> Option<u64> {
        self.rendered.peek(&p).map(|png| png.len() as u64)
    }

    /// The PNG of preview `p`, rendered now unless kept (calls made while it is rendered wait
    /// for that render and share its outcome); `Err` (EIO with its cause, logged) when its data
    /// cannot be read, and the next call tries again.
    pub(super) fn preview_png(&self, p: u32) -> Result<Arc<[u8]>, ViewError> {
        let preview = &self.previews[p as usize];
        let panicked = || ViewError::Io(IoCause::Panicked);
        self.rendered.get_or_load(p, panicked, || {
            self.render(preview).inspect_err(|e| {
                log::error!(
                    "{}.png: not rendered (the next open tries again): {e:?}",
                    preview.path
                );
            })
        })
    }

    /// The elements of `p`'s first slice, every `step`-th row and column, in C order: gathered
    /// chunk by chunk, so that each chunk is loaded once (row by row, a band of chunks larger
    /// than the cache would be loaded again for every row).
    fn sampled_slice(&self, p: &Preview, step: u64) -> Result<Vec<u8>, ViewError> {
        let array = &self.arrays[p.array as usize];
        let source = array.readable()?;
        let shape = &source.reader.meta().shape;
        let chunk_shape = source.reader.read_chunk_shape().to_vec();
        let lead = shape.len().saturating_sub(2);
        let axes: Vec<AxisSel> = (shape.iter().enumerate())
            .map(|(axis, &len)| AxisSel {
                start: 0,
                step: if axis < lead { 1 } else { step },
                count: if axis < lead { 1 } else { len.div_ceil(step) },
                dropped: axis < lead,
            })
            .collect();
        let count = axes.iter().map(|a| a.count).product();
        let rows = RowWalk::selection(axes, chunk_shape, shape);
        let mut out = Vec::new();
        let mut held = HeldChunks::new(1, &self.cache);
        let read = (source, &*self.cache, array.display_path());
        let es = p.dtype.size() as u64;
        rows.read_by_chunk(read, (0, count, es), &mut out, &mut held)?;
        Ok(out)
    }

    fn render(&self, p: &Preview) -> Result<Arc<[u8]>, ViewError> {
        let es = p.dtype.size();
        let step = p.rows.max(p.cols).div_ceil(MAX_SIDE);
        // Fill values are black, but for booleans, black and white whatever the fill.
        let bool = p.dtype == DataType::Bool;
        let values: Vec<Option<f64>> = (self.sampled_slice(p, step)?.chunks_exact(es))
            .map(|b| {
                (bool || !is_fill(&p.dtype, b, &p.fill))
                    .then(|| value(&p.dtype, b))
                    .flatten()
            })
            .collect();
        let (width, height) = (p.cols.div_ceil(step) as u32, p.rows.div_ceil(step) as u32);
        let pixels = grey(&values, bool);
        encode(width, height, &pixels).map(Arc::from).map_err(|e| {
            log::error!("{}: preview cannot be encoded: {e}", p.path);
            ViewError::Io(IoCause::Corrupt)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    #[test]
    fn values_and_grey_levels() {
        assert_eq!(value(&DataType::Int(2), &(-3i16).to_le_bytes()), Some(-3.0));
        assert_eq!(value(&DataType::UInt(1), &[200]), Some(200.0));
        assert_eq!(value(&DataType::Float(4), &f32::NAN.to_le_bytes()), None);
        let c: Vec<u8> = [3f32, 4f32].iter().flat_map(|f| f.to_le_bytes()).collect();
        assert_eq!(value(&DataType::Complex(8), &c), Some(5.0));
        assert_eq!(
            grey(&[Some(1.0), None, Some(3.0), Some(2.0)], false),
            [0, 0, 255, 128]
        );
        assert_eq!(grey(&[Some(0.0), Some(0.0)], true), [0, 0]);
        assert_eq!(grey(&[Some(7.0)], false), [255]);
        // hi - lo overflows to infinity: still scaled.
        let far = [Some(-1e308), Some(1e308), Some(0.0)];
        assert_eq!(grey(&far, false), [0, 255, 128]);
        let extremes = [Some(f64::MIN), Some(f64::MAX), Some(f64::MAX / 2.0)];
        assert_eq!(grey(&extremes, false), [0, 255, 191]);
    }

    fn meta(shape: &[u64], chunks: &[u64]) -> ArrayMeta {
        ArrayMeta {
            shape: shape.to_vec(),
            chunk_shape: chunks.to_vec(),
            grid: crate::meta::ChunkGrid::Regular,
            dtype: DataType::Float(4),
            fill_value: vec![0; 4],
            codecs: Vec::new(),
            chunk_keys: crate::meta::ChunkKeys::new("", crate::meta::KeyStyle::V2, '.'),
        }
    }

    #[test]
    fn only_arrays_with_elements_have_a_preview() {
        let has =
            |shape: &[u64], chunks: &[u64]| Preview::of(0, "a", &meta(shape, chunks)).is_some();
        assert!(has(&[1, 10, 10], &[1, 5, 5]));
        // Empty on an axis before the last two: no first slice to show.
        assert!(!has(&[0, 10, 10], &[1, 5, 5]));
        assert!(!has(&[10, 0], &[5, 5]));
        // The element count overflows u64 (and with it the slice's chunk count): no preview,
        // no overflow.
        assert!(!has(&[0, 1 << 33, 1 << 33], &[1, 1, 1]));
        assert!(!has(&[1, 1 << 33, 1 << 33], &[1, 1, 1]));
    }

    use crate::store::{Layer, MemoryStore, Request, Store, StoreError};
    use parking_lot::Condvar;

    /// What [`Gate`] does with the reads of chunk `b/0.0`.
    #[derive(Default)]
    struct GateState {
        /// Held until open.
        open: bool,
        /// Failed once let through.
        fail: bool,
        /// Reads seen.
        reads: usize,
    }

    /// A store holding the one chunk `b/0.0` of a 2 × 2 ubyte array `b`, whose reads of it wait
    /// until the gate opens, and are counted.
    struct Gate {
        inner: MemoryStore,
        state: Mutex<GateState>,
        changed: Condvar,
    }

    impl Layer for Gate {
        type Step = ();

        fn inner(&self) -> Result<&dyn Store, StoreError> {
            Ok(&self.inner)
        }

        fn before(&self, request: &Request<'_>) -> Result<(), StoreError> {
            if request.key() != "b/0.0" {
                return Ok(());
            }
            let mut state = self.state.lock();
            state.reads += 1;
            self.changed.notify_all();
            while !state.open {
                self.changed.wait(&mut state);
            }
            match state.fail {
                true => Err(StoreError::io(
                    "b/0.0",
                    std::io::Error::other("gate failed"),
                )),
                false => Ok(()),
            }
        }
    }

    impl Gate {
        fn new(fail: bool) -> Arc<Gate> {
            let mut s = MemoryStore::new();
            s.insert(".zgroup", r#"{"zarr_format": 2}"#);
            s.insert(
                "b/.zarray",
                r#"{"zarr_format": 2, "shape": [2, 2], "chunks": [2, 2], "dtype": "|u1", "compressor": null, "fill_value": 0, "order": "C", "filters": null}"#,
            );
            s.insert("b/0.0", vec![1u8, 2, 3, 4]);
            let state = GateState {
                fail,
                ..GateState::default()
            };
            Arc::new(Gate {
                inner: s,
                state: Mutex::new(state),
                changed: Condvar::new(),
            })
        }

        fn reads(&self) -> usize {
            self.state.lock().reads
        }

        /// Lets the held reads through, failing them unless told `fail` false.
        fn open(&self, fail: bool) {
            let mut state = self.state.lock();
            (state.open, state.fail) = (true, fail);
            self.changed.notify_all();
        }
    }

    /// What an open of a preview got.
    type Rendering = Result<Arc<[u8]>, ViewError>;

    /// The opens of `b.png` by `n` threads at once, started while the gate is closed, and let
    /// through (failing or not) once the first is reading the chunk and the others wait for
    /// its render; the gate, the view and the preview's number stay for more opens.
    fn first_opens(n: usize, fail: bool) -> (Arc<Gate>, View, u32, Vec<Rendering>) {
        use crate::view::kinds::PreviewFile;
        let gate = Gate::new(fail);
        let store: Arc<dyn Store> = gate.clone();
        let view = super::super::from_store(store, "mem", 1 << 20, &Default::default()).unwrap();
        let ino = view.resolve("b.png").unwrap();
        let Content::Preview(PreviewFile(p)) = view.known(ino).content else {
            panic!("b.png is a preview");
        };
        // The opens that joined the render under way (each counted as it starts to wait).
        let waiting = || view.rendered.stats().hits as usize;
        let all = std::thread::scope(|s| {
            let opens: Vec<_> = (0..n).map(|_| s.spawn(|| view.preview_png(p))).collect();
            while gate.reads() == 0 || waiting() < n - 1 {
                std::thread::yield_now();
            }
            gate.open(fail);
            opens.into_iter().map(|t| t.join().unwrap()).collect()
        });
        (gate, view, p, all)
    }

    #[test]
    fn concurrent_first_opens_render_the_picture_once() {
        let (gate, _view, _, all) = first_opens(4, false);
        let all: Vec<Arc<[u8]>> = all.into_iter().map(Result::unwrap).collect();
        assert!(
            all.iter().all(|png| Arc::ptr_eq(png, &all[0])),
            "rendered more than once"
        );
        assert_eq!(gate.reads(), 1);
    }

    #[test]
    fn opens_waiting_for_a_failed_render_get_its_error_and_later_ones_render_again() {
        let (gate, view, p, all) = first_opens(4, true);
        assert_eq!(all, vec![Err(ViewError::Io(IoCause::Store)); 4]);
        assert_eq!(gate.reads(), 1, "the waiting opens rendered again");
        // The next open renders again, and its picture is kept.
        gate.open(false);
        let png = view.preview_png(p).unwrap();
        assert_eq!(gate.reads(), 2);
        assert!(Arc::ptr_eq(&view.preview_png(p).unwrap(), &png));
        assert_eq!(gate.reads(), 2);
    }
}
