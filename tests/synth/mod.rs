//! Synthetic arrays for the stress and fault tests: every element is a function of its array
//! and coordinates, chunks are encoded here (zstd, zlib, gzip, sharding with a crc32c index,
//! F order, raw), some are left out, and the expected bytes of each array file are computed
//! from the same function, independently of zarrfs.
#![allow(dead_code)]

use std::io::Write;
use zarrfs::store::MemoryStore;

/// Fill value of every synthetic array.
pub const FILL: u64 = 7;

/// Every chunk index of a `shape` array in chunks of `chunk`, in C order.
fn grid(shape: [u64; 2], chunk: [u64; 2]) -> impl Iterator<Item = (u64, u64)> {
    let cols = shape[1].div_ceil(chunk[1]);
    (0..shape[0].div_ceil(chunk[0])).flat_map(move |i| (0..cols).map(move |j| (i, j)))
}

/// Element (r, c) of array `k`.
pub fn value(k: u64, r: u64, c: u64) -> u64 {
    (k * 1_000_003 + r * 7919 + c * 104_729 + r * c) % 65_521
}

/// One synthetic array: its path and the bytes its data file `A` must show.
pub struct Synth {
    pub path: String,
    pub expected: Vec<u8>,
}

/// The elements of chunk `(i, j)` of a `shape` array in chunks of `chunk` (full size; outside
/// the array: fill), C or F order, as little-endian bytes of `size` bytes each.
fn chunk_bytes(
    k: u64,
    shape: [u64; 2],
    chunk: [u64; 2],
    (i, j): (u64, u64),
    f_order: bool,
    size: usize,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut push = |rr: u64, cc: u64| {
        let (r, c) = (i * chunk[0] + rr, j * chunk[1] + cc);
        let v = if r < shape[0] && c < shape[1] {
            value(k, r, c)
        } else {
            FILL
        };
        out.extend_from_slice(&v.to_le_bytes()[..size]);
    };
    if f_order {
        for cc in 0..chunk[1] {
            for rr in 0..chunk[0] {
                push(rr, cc);
            }
        }
    } else {
        for rr in 0..chunk[0] {
            for cc in 0..chunk[1] {
                push(rr, cc);
            }
        }
    }
    out
}

/// The data file of array `k`: element (r, c) present when `present(r, c)`, else fill.
fn expected(k: u64, shape: [u64; 2], size: usize, present: impl Fn(u64, u64) -> bool) -> Vec<u8> {
    let mut out = Vec::new();
    for r in 0..shape[0] {
        for c in 0..shape[1] {
            let v = if present(r, c) { value(k, r, c) } else { FILL };
            out.extend_from_slice(&v.to_le_bytes()[..size]);
        }
    }
    out
}

fn v3_meta(shape: [u64; 2], chunk: [u64; 2], dtype: &str, codecs: &str) -> String {
    format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": {shape:?}, "data_type": "{dtype}",
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": {chunk:?}}}}},
            "chunk_key_encoding": {{"name": "default"}}, "fill_value": {FILL}, "codecs": {codecs}}}"#
    )
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// How one regular-chunked array is stored.
struct Stored {
    /// The metadata document's key (below the array) and its text.
    meta: (&'static str, String),
    /// Chunk (i, j) → key below the array.
    key: fn(u64, u64) -> String,
    /// Chunk bytes → stored object.
    encode: fn(&[u8]) -> Vec<u8>,
    /// Element size in bytes.
    size: usize,
    /// Chunks stored in F order.
    f_order: bool,
    /// Chunks left out.
    missing: fn(u64, u64) -> bool,
}

/// Writes array `k` at `path` of `shape` in chunks of `chunk` as `how` says.
fn write(
    s: &mut MemoryStore,
    k: u64,
    path: &str,
    shape: [u64; 2],
    chunk: [u64; 2],
    how: Stored,
) -> Synth {
    s.insert(format!("{path}/{}", how.meta.0), how.meta.1);
    for (i, j) in grid(shape, chunk).filter(|&(i, j)| !(how.missing)(i, j)) {
        let raw = chunk_bytes(k, shape, chunk, (i, j), how.f_order, how.size);
        s.insert(format!("{path}/{}", (how.key)(i, j)), (how.encode)(&raw));
    }
    let present = |r: u64, c: u64| !(how.missing)(r / chunk[0], c / chunk[1]);
    Synth {
        path: path.into(),
        expected: expected(k, shape, how.size, present),
    }
}

/// A `uint16` zstd array (Zarr v3) with every fifth chunk or so missing.
pub fn zstd_u16(
    s: &mut MemoryStore,
    k: u64,
    path: &str,
    shape: [u64; 2],
    chunk: [u64; 2],
) -> Synth {
    let codecs = r#"[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]"#;
    let how = Stored {
        meta: ("zarr.json", v3_meta(shape, chunk, "uint16", codecs)),
        key: |i, j| format!("c/{i}/{j}"),
        encode: |raw| zstd::bulk::compress(raw, 1).unwrap(),
        size: 2,
        f_order: false,
        missing: |i, j| (i + 2 * j) % 5 == 0,
    };
    write(s, k, path, shape, chunk, how)
}

/// An `<i4` zlib array (Zarr v2) with chunks in F order, some missing.
pub fn zlib_f_order_i32(
    s: &mut MemoryStore,
    k: u64,
    path: &str,
    shape: [u64; 2],
    chunk: [u64; 2],
) -> Synth {
    let meta = format!(
        r#"{{"zarr_format": 2, "shape": {shape:?}, "chunks": {chunk:?}, "dtype": "<i4",
            "fill_value": {FILL}, "order": "F", "filters": null,
            "compressor": {{"id": "zlib", "level": 1}}}}"#
    );
    let how = Stored {
        meta: (".zarray", meta),
        key: |i, j| format!("{i}.{j}"),
        encode: zlib,
        size: 4,
        f_order: true,
        missing: |i, j| (i * j) % 7 == 3,
    };
    write(s, k, path, shape, chunk, how)
}

/// A sharded `uint32` array (Zarr v3): inner chunks gzip, index at the end with crc32c; shard
/// (1, 1) missing, and in shard (0, 0) the inner chunks with (a + b) % 4 == 1.
pub fn sharded_u32(
    s: &mut MemoryStore,
    k: u64,
    path: &str,
    shape: [u64; 2],
    shard: [u64; 2],
    inner: [u64; 2],
) -> Synth {
    let codecs = format!(
        r#"[{{"name": "sharding_indexed", "configuration": {{"chunk_shape": {inner:?},
            "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}, {{"name": "gzip", "configuration": {{"level": 1}}}}],
            "index_codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}, {{"name": "crc32c"}}],
            "index_location": "end"}}}}]"#
    );
    s.insert(
        format!("{path}/zarr.json"),
        v3_meta(shape, shard, "uint32", &codecs),
    );
    let per = [shard[0] / inner[0], shard[1] / inner[1]];
    let missing = |si: u64, sj: u64, a: u64, b: u64| {
        (si, sj) == (1, 1) || ((si, sj) == (0, 0) && (a + b) % 4 == 1)
    };
    for si in 0..shape[0].div_ceil(shard[0]) {
        for sj in 0..shape[1].div_ceil(shard[1]) {
            if (si, sj) == (1, 1) {
                continue;
            }
            let (mut body, mut index) = (Vec::new(), Vec::new());
            for a in 0..per[0] {
                for b in 0..per[1] {
                    if missing(si, sj, a, b) {
                        index.extend(u64::MAX.to_le_bytes());
                        index.extend(u64::MAX.to_le_bytes());
                        continue;
                    }
                    let at = (si * per[0] + a, sj * per[1] + b);
                    let encoded = gzip(&chunk_bytes(k, shape, inner, at, false, 4));
                    index.extend((body.len() as u64).to_le_bytes());
                    index.extend((encoded.len() as u64).to_le_bytes());
                    body.extend(encoded);
                }
            }
            let crc = crc32c::crc32c(&index);
            body.extend(index);
            body.extend(crc.to_le_bytes());
            s.insert(format!("{path}/c/{si}/{sj}"), body);
        }
    }
    let present = |r: u64, c: u64| {
        let (si, sj) = (r / shard[0], c / shard[1]);
        let (a, b) = ((r % shard[0]) / inner[0], (c % shard[1]) / inner[1]);
        !missing(si, sj, a, b)
    };
    Synth {
        path: path.into(),
        expected: expected(k, shape, 4, present),
    }
}

/// A raw `uint8` array (Zarr v3) in chunks of 16 whole rows, every sixth missing: reads of
/// whole chunks decode straight into the reply.
pub fn raw_rows_u8(s: &mut MemoryStore, k: u64, path: &str, shape: [u64; 2]) -> Synth {
    let chunk = [16, shape[1]];
    let how = Stored {
        meta: (
            "zarr.json",
            v3_meta(shape, chunk, "uint8", r#"[{"name": "bytes"}]"#),
        ),
        key: |i, j| format!("c/{i}/{j}"),
        encode: |raw| raw.to_vec(),
        size: 1,
        f_order: false,
        missing: |i, _| i % 6 == 5,
    };
    write(s, k, path, shape, chunk, how)
}

/// A store holding one array of each kind above (plus the root group).
pub fn mixed_store() -> (MemoryStore, Vec<Synth>) {
    let mut s = MemoryStore::new();
    s.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#);
    let arrays = vec![
        zstd_u16(&mut s, 1, "zstd", [300, 500], [64, 100]),
        zlib_f_order_i32(&mut s, 2, "forder", [210, 300], [50, 64]),
        sharded_u32(&mut s, 3, "sharded", [256, 192], [128, 96], [32, 32]),
        raw_rows_u8(&mut s, 4, "rows", [400, 1000]),
    ];
    (s, arrays)
}
