//! Drop-behind: a sequential reader's passed chunks leave the chunk cache (the page cache holds
//! those bytes); O_DIRECT and out-of-order readers keep theirs.

use std::sync::Arc;
use zarrfs::meta::LoadOptions;
use zarrfs::store::MemoryStore;
use zarrfs::view::View;

const ROWS: u64 = 4096;
const COLS: u64 = 4096;
const MIB: u64 = 1 << 20;

/// A 16 MiB uint8 array in 16 chunks of 512 × 2048 (runs of 2 KiB, so no read covers a whole
/// chunk and every chunk goes through the cache); element (r, c) = (r * 7 + c) % 251.
fn view() -> View {
    let mut s = MemoryStore::new();
    s.insert(
        "zarr.json",
        format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": [{ROWS}, {COLS}],
            "data_type": "uint8", "fill_value": 0,
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [512, 2048]}}}},
            "chunk_key_encoding": {{"name": "default"}},
            "codecs": [{{"name": "bytes"}}]}}"#
        ),
    );
    for i in 0..ROWS / 512 {
        for j in 0..COLS / 2048 {
            let chunk: Vec<u8> = (0..512 * 2048u64)
                .map(|k| (((i * 512 + k / 2048) * 7 + j * 2048 + k % 2048) % 251) as u8)
                .collect();
            s.insert(format!("c/{i}/{j}"), chunk);
        }
    }
    let store: Arc<dyn zarrfs::store::Store> = Arc::new(s);
    zarrfs::view::from_store(store, "a", 64 * MIB, &LoadOptions::default()).unwrap()
}

fn expected(offset: u64, len: u64) -> Vec<u8> {
    (offset..offset + len)
        .map(|e| (((e / COLS) * 7 + e % COLS) % 251) as u8)
        .collect()
}

/// Reads the whole file in 1 MiB steps through handle `fh`, checking every byte.
fn read_in_order(view: &View, ino: u64, fh: u64) {
    let mut out = Vec::new();
    for k in 0..ROWS * COLS / MIB {
        out.clear();
        view.read_into(ino, fh, k * MIB, MIB as u32, &mut out)
            .unwrap();
        assert!(out == expected(k * MIB, MIB), "bytes at {k} MiB");
    }
}

fn cached_chunks(view: &View) -> u64 {
    view.cache().stats().used / MIB
}

#[test]
fn a_sequential_reader_drops_the_chunks_it_has_passed() {
    let view = view();
    let ino = view.resolve("a").unwrap();
    let fh = view.open(ino).unwrap();
    read_in_order(&view, ino, fh);
    // The last read starts at 15 MiB; chunks ending 4 MiB or more before that (the first five
    // bands of two chunks, ending at 2, 4, .., 10 MiB) are gone, the last three bands stay.
    assert_eq!(cached_chunks(&view), 6);
}

#[test]
fn direct_and_out_of_order_readers_keep_their_chunks() {
    let view = view();
    let ino = view.resolve("a").unwrap();
    let fh = view.open_direct(ino).unwrap();
    read_in_order(&view, ino, fh);
    assert_eq!(
        cached_chunks(&view),
        16,
        "O_DIRECT: the chunk cache is the only cache"
    );

    let view = self::view();
    let fh = view.open(ino).unwrap();
    let mut out = Vec::new();
    for k in [15, 0, 9, 3, 12, 6, 1, 14, 4, 11, 7, 2, 13, 5, 10, 8] {
        out.clear();
        view.read_into(ino, fh, k * MIB, MIB as u32, &mut out)
            .unwrap();
        assert!(out == expected(k * MIB, MIB), "bytes at {k} MiB");
    }
    assert_eq!(cached_chunks(&view), 16, "random reads drop nothing");
}

#[test]
fn chunks_other_readers_use_stay_when_a_sequential_reader_passes_them() {
    let view = view();
    let ino = view.resolve("a").unwrap();
    // Chunk 0 is read through a handle of `a.npy`, chunk 2 (from 2 MiB on) with no handle.
    let npy = view.resolve("a.npy").unwrap();
    let header = view.read(npy, 0, 128).unwrap().len() as u64;
    let npy_fh = view.open(npy).unwrap();
    let mut out = Vec::new();
    view.read_into(npy, npy_fh, header, 100, &mut out).unwrap();
    assert!(out == expected(0, 100));
    assert!(view.read(ino, 2 * MIB, 100).unwrap() == expected(2 * MIB, 100));
    let fh = view.open(ino).unwrap();
    read_in_order(&view, ino, fh);
    // The six chunks the sequential reader has not passed, and the two others used.
    assert_eq!(cached_chunks(&view), 8);
    view.release(npy_fh);
}
