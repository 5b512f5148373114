//! Selection files (`A[SEL]`, `.npy`, `.json`) through the view, against a straightforward
//! model of numpy's basic indexing over the expected values.

use proptest::prelude::*;
use std::sync::Arc;
use zarrfs::cache::read_ahead::ReadPolicy;
use zarrfs::meta::{DataType, LoadOptions};
use zarrfs::store::MemoryStore;
use zarrfs::view::{npy_header, IoCause, ReadSink, View, ViewError};

/// A data type of the test arrays: zarr name, zarrfs type, bytes of element number `k`.
#[derive(Clone, Copy, Debug)]
enum Ty {
    U8,
    I16,
    F32,
    F64,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::U8 => "uint8",
            Ty::I16 => "int16",
            Ty::F32 => "float32",
            Ty::F64 => "float64",
        }
    }

    fn dtype(self) -> DataType {
        match self {
            Ty::U8 => DataType::UInt(1),
            Ty::I16 => DataType::Int(2),
            Ty::F32 => DataType::Float(4),
            Ty::F64 => DataType::Float(8),
        }
    }

    fn bytes(self, k: u64) -> Vec<u8> {
        match self {
            Ty::U8 => vec![(k % 251) as u8 + 1],
            Ty::I16 => ((k as i16).wrapping_mul(3) - 100).to_le_bytes().to_vec(),
            Ty::F32 => (k as f32 * 0.5 + 1.0).to_le_bytes().to_vec(),
            Ty::F64 => (k as f64 * -0.25 + 2.0).to_le_bytes().to_vec(),
        }
    }

    /// The fill value (7) as bytes.
    fn fill(self) -> Vec<u8> {
        match self {
            Ty::U8 => vec![7],
            Ty::I16 => 7i16.to_le_bytes().to_vec(),
            Ty::F32 => 7f32.to_le_bytes().to_vec(),
            Ty::F64 => 7f64.to_le_bytes().to_vec(),
        }
    }
}

/// How the test arrays' chunks are stored: as they are, or compressed (zstd: decoded only as
/// far as a selection needs; gzip: decoded whole).
#[derive(Clone, Copy, Debug)]
enum Codec {
    Raw,
    Zstd,
    Gzip,
}

impl Codec {
    fn json(self) -> &'static str {
        match self {
            Codec::Raw => "",
            Codec::Zstd => r#", {"name": "zstd", "configuration": {"level": 1}}"#,
            Codec::Gzip => r#", {"name": "gzip", "configuration": {"level": 1}}"#,
        }
    }

    fn encode(self, raw: Vec<u8>) -> Vec<u8> {
        match self {
            Codec::Raw => raw,
            Codec::Zstd => zstd::bulk::compress(&raw, 1).unwrap(),
            Codec::Gzip => {
                use std::io::Write;
                let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                z.write_all(&raw).unwrap();
                z.finish().unwrap()
            }
        }
    }
}

/// An array of `shape` in chunks of `chunks` named `a`, axes named `d0`, `d1`, ...; the chunks
/// whose linear index is in `missing` are not stored (they read as the fill value). Returns
/// the view and the expected elements (C order).
fn array(shape: &[u64], chunks: &[u64], ty: Ty, missing: &[u64]) -> (View, Vec<Vec<u8>>) {
    stored_array(shape, chunks, ty, missing, Codec::Raw, 1 << 20)
}

/// [`array`] with chunks stored through `codec` and a cache of `cache` bytes (selections of at
/// most a quarter of it are gathered in memory; larger ones are read through the cache).
fn stored_array(
    shape: &[u64],
    chunks: &[u64],
    ty: Ty,
    missing: &[u64],
    codec: Codec,
    cache: u64,
) -> (View, Vec<Vec<u8>>) {
    let (s, expected) = array_store(shape, chunks, ty, missing, codec);
    (view_of(Arc::new(s), cache), expected)
}

/// A view of the hierarchy in `store`, with a cache of `cache` bytes.
fn view_of(store: Arc<dyn zarrfs::store::Store>, cache: u64) -> View {
    zarrfs::view::from_store(store, "root", cache, &LoadOptions::default()).unwrap()
}

/// The store of [`stored_array`] and the expected elements.
fn array_store(
    shape: &[u64],
    chunks: &[u64],
    ty: Ty,
    missing: &[u64],
    codec: Codec,
) -> (MemoryStore, Vec<Vec<u8>>) {
    let names: Vec<String> = (0..shape.len()).map(|i| format!("\"d{i}\"")).collect();
    let mut s = MemoryStore::new();
    s.insert(
        "a/zarr.json",
        format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": {shape:?},
            "data_type": "{}", "fill_value": 7, "dimension_names": [{}],
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": {chunks:?}}}}},
            "chunk_key_encoding": {{"name": "default"}},
            "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}{}]}}"#,
            ty.name(),
            names.join(","),
            codec.json()
        ),
    );
    s.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#);
    let grid: Vec<u64> = shape
        .iter()
        .zip(chunks)
        .map(|(s, c)| s.div_ceil(*c))
        .collect();
    let total: u64 = shape.iter().product();
    let mut expected = vec![Vec::new(); total as usize];
    for chunk in 0..grid.iter().product::<u64>() {
        let mut cc = vec![0; grid.len()];
        let mut rest = chunk;
        for ax in (0..grid.len()).rev() {
            cc[ax] = rest % grid[ax];
            rest /= grid[ax];
        }
        let stored = !missing.contains(&chunk);
        let mut buf = Vec::new();
        for within in 0..chunks.iter().product::<u64>() {
            let mut w = within;
            let mut coords = vec![0; grid.len()];
            for ax in (0..grid.len()).rev() {
                coords[ax] = cc[ax] * chunks[ax] + w % chunks[ax];
                w /= chunks[ax];
            }
            let inside = coords.iter().zip(shape).all(|(c, s)| c < s);
            let k = coords.iter().zip(shape).fold(0, |acc, (c, s)| acc * s + c);
            let value = if inside { ty.bytes(k) } else { ty.fill() };
            if inside {
                expected[k as usize] = if stored { value.clone() } else { ty.fill() };
            }
            buf.extend(value);
        }
        if stored {
            let key: Vec<String> = cc.iter().map(u64::to_string).collect();
            let key = if key.is_empty() {
                "a/c".to_string()
            } else {
                format!("a/c/{}", key.join("/"))
            };
            s.insert(key, codec.encode(buf));
        }
    }
    (s, expected)
}

/// One item of a selection, as the test writes it.
#[derive(Clone, Debug)]
enum Item {
    Index(i64),
    Slice(Option<i64>, Option<i64>, Option<i64>),
}

impl Item {
    fn text(&self) -> String {
        let opt = |v: &Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
        match self {
            Item::Index(i) => i.to_string(),
            Item::Slice(a, b, None) => format!("{}:{}", opt(a), opt(b)),
            Item::Slice(a, b, c) => format!("{}:{}:{}", opt(a), opt(b), opt(c)),
        }
    }

    /// The indices numpy selects along an axis of length `n`, and whether the axis stays.
    fn indices(&self, n: i64) -> (Vec<u64>, bool) {
        match *self {
            Item::Index(i) => (vec![if i < 0 { i + n } else { i } as u64], false),
            Item::Slice(a, b, c) => {
                let clip = |v: i64| {
                    let v = if v < 0 { v + n } else { v };
                    v.clamp(0, n)
                };
                let start = a.map_or(0, clip);
                let stop = b.map_or(n, clip);
                let step = c.unwrap_or(1) as usize;
                (
                    (start..stop.max(start))
                        .step_by(step)
                        .map(|i| i as u64)
                        .collect(),
                    true,
                )
            }
        }
    }
}

fn item(n: u64) -> impl Strategy<Value = Item> {
    let n = n as i64;
    let bound = prop::option::of(-n - 3..n + 3);
    prop_oneof![
        (-n..n).prop_map(Item::Index),
        (bound.clone(), bound, prop::option::of(1i64..4))
            .prop_map(|(a, b, c)| Item::Slice(a, b, c)),
    ]
}

#[derive(Clone, Debug)]
struct Case {
    shape: Vec<u64>,
    chunks: Vec<u64>,
    ty: Ty,
    missing: Vec<u64>,
    items: Vec<Item>,
    /// How the items are written: 0 positions from the first axis, 1 `...` then the last
    /// axes, 2 by dimension name, in reverse order.
    form: u8,
    read_size: u32,
    prefetch: bool,
    codec: Codec,
    /// Cache bytes: 1 MiB gathers every selection in memory, 4 KiB only the small ones.
    cache: u64,
    /// Bytes of `a` read before the selection (its chunks are then cached).
    warm: u64,
}

fn case() -> impl Strategy<Value = Case> {
    prop::collection::vec((1u64..7, 1u64..5), 0..4)
        .prop_flat_map(|dims| {
            let (shape, chunks): (Vec<u64>, Vec<u64>) = dims.into_iter().unzip();
            let items: Vec<_> = shape.iter().map(|&n| item(n)).collect();
            (
                Just(shape.clone()),
                Just(chunks),
                prop_oneof![Just(Ty::U8), Just(Ty::I16), Just(Ty::F32), Just(Ty::F64)],
                prop::collection::vec(0u64..20, 0..3),
                items,
                0..=shape.len(),
                0u8..3,
                1u32..40,
                any::<bool>(),
                prop_oneof![Just(Codec::Raw), Just(Codec::Zstd), Just(Codec::Gzip)],
                prop_oneof![Just(1u64 << 20), Just(4096)],
                prop_oneof![Just(0u64), 1u64..200],
            )
        })
        .prop_map(
            |(
                shape,
                chunks,
                ty,
                missing,
                items,
                used,
                form,
                read_size,
                prefetch,
                codec,
                cache,
                warm,
            )| {
                let items = match form {
                    1 => items[items.len() - used..].to_vec(),
                    _ => items[..used].to_vec(),
                };
                Case {
                    shape,
                    chunks,
                    ty,
                    missing,
                    items,
                    form,
                    read_size,
                    prefetch,
                    codec,
                    cache,
                    warm,
                }
            },
        )
}

/// The selection text and numpy's result: shape and elements (C order).
fn model(c: &Case, expected: &[Vec<u8>]) -> (String, Vec<u64>, Vec<u8>) {
    let rank = c.shape.len();
    let first = if c.form == 1 { rank - c.items.len() } else { 0 };
    let mut per_axis: Vec<(Vec<u64>, bool)> =
        c.shape.iter().map(|&n| ((0..n).collect(), true)).collect();
    for (i, it) in c.items.iter().enumerate() {
        per_axis[first + i] = it.indices(c.shape[first + i] as i64);
    }
    let text = match c.form {
        1 => std::iter::once("...".to_string())
            .chain(c.items.iter().map(Item::text))
            .collect::<Vec<_>>()
            .join(","),
        2 => (0..c.items.len())
            .rev()
            .map(|i| format!("d{i}={}", c.items[i].text()))
            .collect::<Vec<_>>()
            .join(","),
        _ => c.items.iter().map(Item::text).collect::<Vec<_>>().join(","),
    };
    let shape: Vec<u64> = per_axis
        .iter()
        .filter(|(_, keep)| *keep)
        .map(|(ix, _)| ix.len() as u64)
        .collect();
    // Every combination of the selected indices, in C order.
    let mut flat: Vec<u64> = vec![0];
    for (ax, (ix, _)) in per_axis.iter().enumerate() {
        flat = flat
            .iter()
            .flat_map(|&f| ix.iter().map(move |&i| f * c.shape[ax] + i))
            .collect();
    }
    let bytes = flat
        .iter()
        .flat_map(|&k| expected[k as usize].clone())
        .collect();
    (text, shape, bytes)
}

fn read_all(view: &View, path: &str, step: u32) -> Vec<u8> {
    let ino = view.resolve(path).unwrap();
    let size = view.getattr(ino).unwrap().size;
    let fh = view.open(ino).unwrap();
    let mut out = Vec::new();
    let mut at = 0;
    while at < size + 10 {
        view.read_into(ino, fh, at, step, &mut out).unwrap();
        at += u64::from(step);
    }
    view.release(fh);
    assert_eq!(out.len() as u64, size, "{path}: stat size");
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn selections_match_numpy_basic_indexing(c in case()) {
        let (mut view, expected) =
            stored_array(&c.shape, &c.chunks, c.ty, &c.missing, c.codec, c.cache);
        if c.prefetch {
            view.set_read_policy(ReadPolicy::local(2));
        }
        if c.warm > 0 {
            let ino = view.resolve("a").unwrap();
            let fh = view.open(ino).unwrap();
            view.read_into(ino, fh, 0, c.warm as u32, &mut Vec::new()).unwrap();
            view.release(fh);
        }
        let (text, shape, bytes) = model(&c, &expected);
        let data = read_all(&view, &format!("a[{text}]"), c.read_size);
        prop_assert!(data == bytes, "a[{}]: {} bytes, expected {}", text, data.len(), bytes.len());
        let npy = read_all(&view, &format!("a[{text}].npy"), 4096);
        let header = npy_header(&c.ty.dtype(), &shape);
        prop_assert_eq!(&npy[..header.len()], &header[..]);
        prop_assert!(npy[header.len()..] == bytes[..]);
        let json: serde_json::Value =
            serde_json::from_slice(&read_all(&view, &format!("a[{text}].json"), 4096)).unwrap();
        prop_assert_eq!(&json["shape"], &serde_json::json!(shape));
        prop_assert_eq!(&json["source"], "a");
    }
}

#[test]
fn each_chunk_of_a_selection_is_decoded_once_per_read() {
    // Zstd chunks of 2x4x4 f32 in a 6x12x12 array; selections whose rows each cross several
    // chunks: 12 whole chunks (a chunk-aligned sub-block), cut chunks, a band of rows across
    // the whole last axis, a strided band. Gathered in memory (large cache) or read through a
    // cache that holds their chunks but not them gathered, with read-ahead on and off: one
    // read of the whole file fetches, and so decodes, each chunk it touches exactly once
    // (regular chunks: one decode is one store request); gathered, reads of any size do too,
    // all of them together.
    let (shape, chunks) = ([6u64, 12, 12], [2u64, 4, 4]);
    for (sel, touched) in [
        ("0:6,4:12,0:8", 12),
        ("1:6,3:11,2:11", 27),
        ("1:6,3:8,:", 18),
        ("0:6,:,::2", 27),
    ] {
        let items = sel
            .split(',')
            .map(|p| {
                let v: Vec<Option<i64>> = p.split(':').map(|x| x.parse().ok()).collect();
                Item::Slice(v[0], v[1], v.get(2).copied().flatten())
            })
            .collect();
        for (cache, gathered) in [(1u64 << 20, true), (4096, false)] {
            for read_ahead in [0, 2] {
                let (store, expected) = array_store(&shape, &chunks, Ty::F32, &[], Codec::Zstd);
                let (store, counts) = zarrfs::store::CountingStore::new(Box::new(store));
                let mut view = view_of(Arc::new(store), cache);
                view.set_read_policy(ReadPolicy::local(read_ahead));
                let case = Case {
                    shape: shape.to_vec(),
                    chunks: chunks.to_vec(),
                    ty: Ty::F32,
                    missing: Vec::new(),
                    items: Vec::clone(&items),
                    form: 0,
                    read_size: 0,
                    prefetch: read_ahead > 0,
                    codec: Codec::Zstd,
                    cache,
                    warm: 0,
                };
                let (_, _, want) = model(&case, &expected);
                assert!(
                    want.len() as u64 > cache / 4 || gathered,
                    "a[{sel}] is gathered"
                );
                let steps: &[u32] = if gathered {
                    &[1 << 20, 100]
                } else {
                    &[1 << 20]
                };
                for &step in steps {
                    // A fresh file for each: nothing is left from an earlier read.
                    let suffix = if step == 100 { ".npy" } else { "" };
                    let name = format!("a[{sel}]{suffix}");
                    let before = counts.requests();
                    let got = read_all(&view, &name, step);
                    let header = got.len() - want.len();
                    assert!(got[header..] == want[..], "{name} in reads of {step}");
                    assert_eq!(
                        counts.requests() - before,
                        touched,
                        "{name} in reads of {step}: cache {cache}, read-ahead {read_ahead}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_read_whose_rows_cross_more_chunks_than_it_holds_loads_each_chunk_once() {
    // uint8 128x16384 in chunks of 64x128 (8 KiB), chunk 3 absent: `a[:,::128]` takes one
    // element of each of the 128 chunks a row crosses, 16 KiB in all. A cache of 32 KiB keeps
    // three chunks and does not gather the selection, and a read holds 4 KiB of chunks: row by
    // row, each row would load its 128 chunks again.
    let (shape, chunks) = ([128u64, 16384], [64u64, 128]);
    let (view, expected) = stored_array(&shape, &chunks, Ty::U8, &[3], Codec::Raw, 32 << 10);
    let want: Vec<u8> = (0..128)
        .flat_map(|r| (0..16384).step_by(128).map(move |c| r * 16384 + c))
        .flat_map(|k| expected[k as usize].clone())
        .collect();
    // Four reads of 32 rows, each in one band of 128 chunks.
    assert!(read_all(&view, "a[:,::128]", 4096) == want);
    let loads = view.cache().stats().loads;
    assert!(
        loads <= 4 * 128,
        "{loads} chunk loads for four reads of 128 chunks"
    );
}

#[test]
fn a_read_of_the_array_file_whose_rows_cross_more_chunks_than_it_holds_loads_each_once() {
    // uint8 64x4096 in chunks of 64x1024 (64 KiB): each row crosses the 4 chunks of the one
    // band. A cache of 192 KiB keeps two of them, and a read holds 24 KiB of chunks (less than
    // one): row by row, each of the 64 rows would load the 4 chunks again.
    let (view, expected) =
        stored_array(&[64, 4096], &[64, 1024], Ty::U8, &[], Codec::Raw, 192 << 10);
    let want: Vec<u8> = expected.concat();
    let ino = view.resolve("a").unwrap();
    assert!(view.read(ino, 0, 256 << 10).unwrap() == want);
    assert_eq!(view.cache().stats().loads, 4);
}

#[test]
fn gathered_selections_kept_stay_within_a_sixteenth_of_the_cache_the_newest_always() {
    // f32 64x64 in 8x8 chunks, a cache of 64 KiB: selections of up to 16 KiB are gathered,
    // and those kept after use fit in 4 KiB together, the newest whatever its size. Bands of
    // 24 rows (6 KiB, 24 chunks each): a band let go decodes its chunks again when read again,
    // the one kept does not.
    let (shape, chunks) = ([64u64, 64], [8u64, 8]);
    let (store, expected) = array_store(&shape, &chunks, Ty::F32, &[], Codec::Raw);
    let (store, counts) = zarrfs::store::CountingStore::new(Box::new(store));
    let view = view_of(Arc::new(store), 64 << 10);
    let band = |rows: std::ops::Range<usize>| -> Vec<u8> {
        expected[rows.start * 64..rows.end * 64].concat()
    };
    let read = |name: &str, want: Vec<u8>| {
        let before = counts.requests();
        assert!(read_all(&view, name, 4096) == want, "{name}");
        counts.requests() - before
    };
    assert_eq!(read("a[0:24,:]", band(0..24)), 24);
    assert_eq!(read("a[24:48,:]", band(24..48)), 24);
    assert_eq!(read("a[24:48,:]", band(24..48)), 0, "the newest is kept");
    assert_eq!(read("a[0:24,:]", band(0..24)), 24, "the oldest was let go");
    assert_eq!(read("a[0:24,:]", band(0..24)), 0, "and is kept again");
}

#[test]
fn an_open_selection_keeps_its_gathered_buffer_while_others_are_gathered() {
    // As above (bands of 6 KiB; a cache of 64 KiB keeps 4 KiB of them after use): a band still
    // open keeps its buffer while another is gathered, and is let go once released.
    let (shape, chunks) = ([64u64, 64], [8u64, 8]);
    let (store, expected) = array_store(&shape, &chunks, Ty::F32, &[], Codec::Raw);
    let (store, counts) = zarrfs::store::CountingStore::new(Box::new(store));
    let view = view_of(Arc::new(store), 64 << 10);
    let band = |rows: std::ops::Range<usize>| -> Vec<u8> {
        expected[rows.start * 64..rows.end * 64].concat()
    };
    let a = view.resolve("a[0:24,:]").unwrap();
    let fh = view.open(a).unwrap();
    let read_open = || {
        let (before, mut out) = (counts.requests(), Vec::new());
        for at in [0, 4096] {
            view.read_into(a, fh, at, 4096, &mut out).unwrap();
        }
        assert!(out == band(0..24), "a[0:24,:] through its open handle");
        counts.requests() - before
    };
    assert_eq!(read_open(), 24);
    assert!(read_all(&view, "a[24:48,:]", 4096) == band(24..48));
    assert_eq!(read_open(), 0, "kept while open");
    view.release(fh);
    assert!(read_all(&view, "a[40:64,:]", 4096) == band(40..64));
    let before = counts.requests();
    assert!(read_all(&view, "a[0:24,:]", 4096) == band(0..24));
    assert_eq!(counts.requests() - before, 24, "let go once released");
}

#[test]
fn a_name_looked_up_twice_is_the_same_inode_and_is_not_listed() {
    let (view, _) = array(&[4, 5], &[2, 2], Ty::F32, &[]);
    let a = view.resolve("a[1:3,::2]").unwrap();
    assert_eq!(view.resolve("a[1:3,::2]").unwrap(), a);
    assert_ne!(view.resolve("a[1:3,::2].npy").unwrap(), a);
    assert_eq!(view.getattr(a).unwrap().size, 2 * 3 * 4);
    let dir = view.resolve("a").map(|_| 1).unwrap();
    let names: Vec<String> = view
        .readdir(dir, 0)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(!names.iter().any(|n| n.contains('[')), "{names:?}");
    let json = String::from_utf8(
        view.read(view.resolve("a[-1].json").unwrap(), 0, 4096)
            .unwrap(),
    )
    .unwrap();
    assert!(json.contains("\"selection\": \"3,0:5\""), "{json}");
}

/// A view of array `b`: `planes` planes of `plane` bytes of noise, stored with zstd in chunks of
/// `chunk_planes` planes (chunk `cut` stored without its last 64 bytes), read-ahead on; and its
/// bytes.
fn noise_planes(
    planes: usize,
    plane: usize,
    chunk_planes: usize,
    cut: Option<usize>,
) -> (View, Vec<u8>) {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let data: Vec<u8> = (0..planes * plane)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let mut s = MemoryStore::new();
    s.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#);
    s.insert(
        "b/zarr.json",
        format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": [{planes}, {plane}],
            "data_type": "uint8", "fill_value": 0,
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [{chunk_planes}, {plane}]}}}},
            "chunk_key_encoding": {{"name": "default"}},
            "codecs": [{{"name": "bytes"}}, {{"name": "zstd", "configuration": {{"level": 1}}}}]}}"#
        ),
    );
    for (i, chunk) in data.chunks(chunk_planes * plane).enumerate() {
        let mut z = zstd::bulk::compress(chunk, 1).unwrap();
        if cut == Some(i) {
            z.truncate(z.len() - 64);
        }
        s.insert(format!("b/c/{i}/0"), z);
    }
    let store: Arc<dyn zarrfs::store::Store> = Arc::new(s);
    let mut view =
        zarrfs::view::from_store(store, "root", 16 << 20, &LoadOptions::default()).unwrap();
    view.set_read_policy(ReadPolicy::local(2));
    (view, data)
}

#[test]
fn a_selection_decoding_part_of_a_chunk_leaves_the_array_whole() {
    // One zstd chunk of 4 planes of 256 KiB of noise: `b[0]` decodes only about its first
    // plane (the decoder stops once the selection's bytes are out); that part must never pass
    // for the chunk, which `b` then reads whole.
    let (planes, plane) = (4usize, 1usize << 18);
    let (view, data) = noise_planes(planes, plane, planes, None);
    assert!(read_all(&view, "b[0]", 100_000) == data[..plane]);
    assert!(read_all(&view, "b[1,5:9]", 3) == data[plane + 5..plane + 9]);
    let strided: Vec<u8> = (0..planes)
        .flat_map(|p| (0..4).map(move |k| p * plane + k * 65536))
        .map(|at| data[at])
        .collect();
    assert!(read_all(&view, "b[:,::65536]", 7) == strided);
    assert!(read_all(&view, "b", 1 << 20) == data);
    assert!(read_all(&view, "b[3]", 1 << 20) == data[3 * plane..]);
}

/// Keeps apart what a read copies into its buffer (first) and what it answers straight from a
/// chunk before it is done (second).
struct Split<'a>(&'a mut Vec<u8>, &'a mut Vec<u8>);

impl ReadSink for Split<'_> {
    fn answer(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    fn answer_early(&mut self, bytes: &[u8]) {
        self.1.extend_from_slice(bytes);
    }
}

#[test]
fn a_read_inside_one_chunk_is_answered_straight_from_it() {
    // Chunks of one plane: `b[t]` is a whole chunk, decoded front to back (by the read-ahead
    // worker queued at lookup, or by the first read); each read inside it goes to `send`
    // straight from the chunk's bytes, and `out` stays empty.
    let (planes, plane) = (6usize, 1usize << 18);
    let (view, data) = noise_planes(planes, plane, 1, None);
    for (t, step) in [(2usize, 1u32 << 16), (4, 100_000), (2, 1 << 18)] {
        let name = format!("b[{t}]");
        let ino = view.resolve(&name).unwrap();
        let fh = view.open(ino).unwrap();
        let mut at = 0;
        while at < plane {
            let (mut out, mut sent) = (Vec::new(), Vec::new());
            view.read_into(ino, fh, at as u64, step, &mut Split(&mut out, &mut sent))
                .unwrap();
            assert!(out.is_empty(), "{name} at {at}: copied, not sent");
            let end = (at + step as usize).min(plane);
            assert!(
                sent == data[t * plane + at..t * plane + end],
                "{name} at {at}"
            );
            at = end;
        }
        view.release(fh);
    }
    // Gathered in memory, a strided selection is sent from there; a read across two chunks
    // of a streamed one is copied.
    let answer = |name: &str, at: u64, n: u32| {
        let ino = view.resolve(name).unwrap();
        let fh = view.open(ino).unwrap();
        let (mut out, mut sent) = (Vec::new(), Vec::new());
        view.read_into(ino, fh, at, n, &mut Split(&mut out, &mut sent))
            .unwrap();
        view.release(fh);
        (out, sent)
    };
    let (out, sent) = answer("b[:,::3]", 0, 4096);
    let want: Vec<u8> = data[..plane]
        .iter()
        .step_by(3)
        .take(4096)
        .copied()
        .collect();
    assert!(out.is_empty() && sent == want);
    let (out, sent) = answer("b[1:3]", plane as u64 - 100, 200);
    assert!(sent.is_empty() && out == data[2 * plane - 100..2 * plane + 100]);
}

#[test]
fn reads_of_the_array_file_inside_one_chunk_are_sent_from_it_too() {
    // The same for `b` itself: a read inside one chunk goes to `send`; a read across two
    // chunks, and a whole chunk decoded straight into the reply, are copied into `out`.
    let (planes, plane) = (6usize, 1usize << 18);
    let (view, data) = noise_planes(planes, plane, 1, None);
    let ino = view.resolve("b").unwrap();
    let answer = |at: usize, n: usize| {
        let fh = view.open(ino).unwrap();
        let (mut out, mut sent) = (Vec::new(), Vec::new());
        view.read_into(
            ino,
            fh,
            at as u64,
            n as u32,
            &mut Split(&mut out, &mut sent),
        )
        .unwrap();
        view.release(fh);
        (out, sent)
    };
    for (at, n) in [
        (3 * plane, 1 << 16),
        (3 * plane + 5, 100_000),
        (plane - 9, 9),
    ] {
        let (out, sent) = answer(at, n);
        assert!(out.is_empty(), "at {at}: copied, not sent");
        assert!(sent == data[at..at + n], "at {at}");
    }
    let (out, sent) = answer(2 * plane - 100, 200);
    assert!(sent.is_empty() && out == data[2 * plane - 100..2 * plane + 100]);
    let (out, sent) = answer(5 * plane, plane);
    assert!(
        sent.is_empty() && out == data[5 * plane..],
        "decoded into the reply"
    );
    let (out, sent) = answer(planes * plane - 10, 100);
    assert!(
        sent == data[planes * plane - 10..] && out.is_empty(),
        "cut at the end"
    );
}

#[test]
fn a_frame_whose_chunk_ends_corrupt_fails_where_it_is_corrupt_only() {
    // Chunk 1 lacks its last 64 bytes: its zstd frame cannot be walked to its end, so it is
    // decoded whole, which fails, and no read of it sends a byte, not even of its first bytes
    // (which would decode right); the other frames read whole. The same with read-ahead, whose
    // worker's load fails the same way.
    let plane = 1usize << 18;
    for read_ahead in [false, true] {
        let (mut view, data) = noise_planes(3, plane, 1, Some(1));
        if !read_ahead {
            view.set_read_policy(ReadPolicy::local(0));
        }
        let ino = view.resolve("b[1]").unwrap();
        let fh = view.open(ino).unwrap();
        let read = |at: u64, n: u32| {
            let (mut out, mut sent) = (Vec::new(), Vec::new());
            let r = view.read_into(ino, fh, at, n, &mut Split(&mut out, &mut sent));
            assert!(out.is_empty());
            (r, sent)
        };
        let (r, sent) = read(0, 4096);
        assert!(
            matches!(r, Err(ViewError::Io(_))) && sent.is_empty(),
            "{r:?}, {} bytes sent",
            sent.len()
        );
        let (r, sent) = read(plane as u64 - 4096, 4096);
        assert!(
            matches!(r, Err(ViewError::Io(_))) && sent.is_empty(),
            "{r:?}"
        );
        view.release(fh);
        assert!(read_all(&view, "b[2]", 1 << 16) == data[2 * plane..]);
        assert!(read_all(&view, "b[0]", 1 << 16) == data[..plane]);
    }
}

#[test]
fn invalid_selections_are_not_found() {
    let (view, _) = array(&[4, 5], &[2, 2], Ty::U8, &[]);
    for name in [
        "a[5,x]", "a[4]", "a[0, 1]", "a[::0]", "a[1,2,3]", "a[d9=1]", "b[0]", "a[0", "a[0].txt",
    ] {
        assert!(
            matches!(view.resolve(name), Err(ViewError::NotFound)),
            "{name}"
        );
    }
}

/// Element `k` of the string array of `strings`: short, long, non-ASCII, with newlines and
/// backslashes (which the text file escapes).
fn string_item(k: u64) -> String {
    match k % 13 {
        0 => format!("é{k}ü"),
        5 => format!("a\nb{k}"),
        7 => format!("x\\{k}"),
        9 => "z".repeat((k % 40) as usize),
        _ => format!("s{}", k % 1000),
    }
}

/// A string array `a` of `shape` (2 axes) in chunks of `chunks`, chunk 1 not stored (it reads
/// as the fill value, ""); returns the view and the expected elements (C order).
fn strings(shape: [u64; 2], chunks: [u64; 2]) -> (View, Vec<String>) {
    let mut s = MemoryStore::new();
    s.insert(
        "a/zarr.json",
        format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": {shape:?},
            "data_type": "string", "fill_value": "",
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": {chunks:?}}}}},
            "chunk_key_encoding": {{"name": "default"}}, "codecs": [{{"name": "vlen-utf8"}}]}}"#
        ),
    );
    s.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#);
    let grid = [shape[0].div_ceil(chunks[0]), shape[1].div_ceil(chunks[1])];
    let mut expected = vec![String::new(); (shape[0] * shape[1]) as usize];
    for (ci, cj) in (0..grid[0]).flat_map(|i| (0..grid[1]).map(move |j| (i, j))) {
        let mut buf = ((chunks[0] * chunks[1]) as u32).to_le_bytes().to_vec();
        let stored = ci * grid[1] + cj != 1;
        for (i, j) in (0..chunks[0]).flat_map(|i| (0..chunks[1]).map(move |j| (i, j))) {
            let (r, c) = (ci * chunks[0] + i, cj * chunks[1] + j);
            let mut item = String::new();
            if r < shape[0] && c < shape[1] {
                let k = r * shape[1] + c;
                item = string_item(k);
                if stored {
                    expected[k as usize] = item.clone();
                }
            }
            buf.extend((item.len() as u32).to_le_bytes());
            buf.extend(item.as_bytes());
        }
        if stored {
            s.insert(format!("a/c/{ci}/{cj}"), buf);
        }
    }
    let store: Arc<dyn zarrfs::store::Store> = Arc::new(s);
    let view = zarrfs::view::from_store(store, "root", 64 << 20, &LoadOptions::default()).unwrap();
    (view, expected)
}

/// All of file `path`, read `step` bytes at a time until a read comes back empty (the size a
/// large variable-length selection shows is 0 until it has been scanned); then its size.
fn read_to_end(view: &View, path: &str, step: u32) -> (Vec<u8>, u64) {
    let ino = view.resolve(path).unwrap();
    let fh = view.open(ino).unwrap();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        view.read_into(ino, fh, out.len() as u64, step, &mut out)
            .unwrap();
        if out.len() == before {
            break;
        }
    }
    view.release(fh);
    (out, view.getattr(ino).unwrap().size)
}

#[test]
fn selections_of_strings_of_any_size_stream_as_text_and_npy() {
    let shape = [300u64, 500];
    let (view, expected) = strings(shape, [64, 96]);
    let large = (shape[0] * shape[1] - 300) as usize;
    assert!(large > zarrfs::view::SYNC_SCAN_MAX as usize);
    // (selection, rows, columns, elements)
    let cases: [(&str, Vec<u64>, Vec<u64>, usize); 5] = [
        ("7", vec![7], (0..500).collect(), 500),
        ("...,3", (0..300).collect(), vec![3], 300),
        (
            "10:290:3,5:499:2",
            (10..290).step_by(3).collect(),
            (5..499).step_by(2).collect(),
            0,
        ),
        (
            ":,3:400:2",
            (0..300).collect(),
            (3..400).step_by(2).collect(),
            59_700,
        ),
        (":,1:", (0..300).collect(), (1..500).collect(), large),
    ];
    for (sel, rows, cols, n) in cases {
        let items: Vec<&str> = rows
            .iter()
            .flat_map(|r| cols.iter().map(move |c| (r * shape[1] + c) as usize))
            .map(|k| expected[k].as_str())
            .collect();
        assert!(n == 0 || items.len() == n, "{sel}");
        let text: Vec<u8> = items
            .iter()
            .flat_map(|s| {
                format!("{}\n", s.replace('\\', "\\\\").replace('\n', "\\n")).into_bytes()
            })
            .collect();
        let name = format!("a[{sel}]");
        let ino = view.resolve(&name).unwrap();
        assert_eq!(
            view.direct_io(ino),
            items.len() as u64 > zarrfs::view::SYNC_SCAN_MAX,
            "{name}: direct I/O exactly while the size may be unknown"
        );
        for step in [4096, 100_000] {
            let (got, size) = read_to_end(&view, &name, step);
            assert!(
                got == text,
                "{name}: {} bytes, expected {}",
                got.len(),
                text.len()
            );
            assert_eq!(size, text.len() as u64, "{name}: size once scanned");
        }
        // `.npy`: fixed-width UTF-32 cells as wide as the longest selected element.
        let width = items
            .iter()
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0)
            .max(1);
        let out_shape: Vec<u64> = match sel {
            "7" => vec![cols.len() as u64],
            "...,3" => vec![rows.len() as u64],
            _ => vec![rows.len() as u64, cols.len() as u64],
        };
        let mut npy = npy_header(&DataType::Unicode(width), &out_shape);
        for s in &items {
            let at = npy.len();
            npy.extend(s.chars().flat_map(|c| (c as u32).to_le_bytes()));
            npy.resize(at + 4 * width, 0);
        }
        let (got, size) = read_to_end(&view, &format!("{name}.npy"), 65_536);
        assert!(
            got == npy,
            "{name}.npy: {} bytes, expected {}",
            got.len(),
            npy.len()
        );
        assert_eq!(size, npy.len() as u64);
    }
}

#[test]
fn a_selection_crossing_more_chunks_than_a_lookup_may_list_is_refused_without_listing_them() {
    // 10^12 one-byte chunks: listing those the whole selection crosses took all memory.
    let mut s = MemoryStore::new();
    s.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#);
    s.insert(
        "a/zarr.json",
        r#"{"zarr_format": 3, "node_type": "array", "shape": [1000000000000],
        "data_type": "uint8", "fill_value": 7,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
        "chunk_key_encoding": {"name": "default"}, "codecs": [{"name": "bytes"}]}"#,
    );
    let view = view_of(Arc::new(s), 16 << 20);
    for refused in ["a[:]", "a[::1000]", "a[:].npy"] {
        let got = view.resolve(refused).map(drop);
        assert_eq!(got, Err(ViewError::Io(IoCause::BadConfig)), "{refused}");
    }
    // As many chunks as a lookup may list is looked up; a wide step crossing few reads.
    assert!(view.resolve("a[:1048576]").is_ok());
    assert_eq!(read_all(&view, "a[::100000000]", 4096), vec![7; 10_000]);
    // The selection's JSON needs no chunk.
    assert!(view.resolve("a[:].json").is_ok());
}
