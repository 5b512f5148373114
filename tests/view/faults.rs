//! Faults injected under the view: store errors, short reads, corrupted bytes and latency fail
//! the reads that meet them with EIO and the right cause, never a panic or a hang; errors are
//! not kept, so the same read succeeds once the fault is gone; other files keep reading.

use crate::synth;

use std::sync::mpsc::channel;
use std::sync::Arc;
use std::time::Duration;
use zarrfs::cache::read_ahead::ReadPolicy;
use zarrfs::fetch::{ChunkReader, FetchCause, Uncached};
use zarrfs::meta::{load_hierarchy, LoadOptions, NodeKind};
use zarrfs::store::{Fault, FaultyStore, MemoryStore, Store};
use zarrfs::view::{IoCause, View, ViewError};

fn view_of(store: Arc<dyn Store>, cache: u64) -> View {
    let mut view = zarrfs::view::from_store(store, "root", cache, &LoadOptions::default()).unwrap();
    view.set_read_policy(ReadPolicy::local(2));
    view
}

/// Runs `f` on a thread and fails the test instead of hanging when it takes over a minute.
fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the call hung")
}

fn read_whole(view: &View, path: &str) -> Result<Vec<u8>, ViewError> {
    let ino = view.resolve(path)?;
    let fh = view.open(ino)?;
    let size = view.getattr(ino)?.size;
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < size {
        view.read_into(ino, fh, offset, 128 << 10, &mut out)?;
        offset += 128 << 10;
    }
    view.release(fh);
    Ok(out)
}

/// The arrays of [`synth::mixed_store`] behind `faults`.
fn faulty_view(faults: impl FnOnce(FaultyStore) -> FaultyStore) -> (View, Vec<synth::Synth>) {
    let (store, arrays) = synth::mixed_store();
    let store = faults(FaultyStore::new(Arc::new(store)));
    (view_of(Arc::new(store), 1 << 20), arrays)
}

#[test]
fn store_errors_fail_the_reads_of_that_array_only_and_are_not_kept() {
    // Every other read of the zstd array's chunks fails.
    let (view, arrays) = faulty_view(|s| s.with("zstd/c/", 2, Fault::Error));
    let mut outcomes = Vec::new();
    for _ in 0..20 {
        match read_whole(&view, "zstd") {
            Ok(bytes) => {
                assert_eq!(bytes, arrays[0].expected);
                outcomes.push(true);
            }
            Err(e) => {
                assert_eq!(e, ViewError::Io(IoCause::Store));
                outcomes.push(false);
            }
        }
    }
    // A read failed, and a later one of the same array read right: the error was not kept.
    let failed = outcomes
        .iter()
        .position(|ok| !ok)
        .expect("the fault was met");
    assert!(outcomes[failed..].contains(&true), "{outcomes:?}");
    for a in &arrays[1..] {
        assert_eq!(
            read_whole(&view, &a.path).unwrap(),
            a.expected,
            "{}",
            a.path
        );
    }
}

#[test]
fn short_reads_and_corrupted_bytes_are_corrupt_chunks() {
    for (fault, array, keys) in [
        (Fault::ShortRead, "sharded", "sharded/c/"),
        (Fault::Corrupt, "sharded", "sharded/c/"),
        (Fault::ShortRead, "zstd", "zstd/c/"),
        (Fault::Corrupt, "forder", "forder/0."),
        (Fault::ShortRead, "rows", "rows/c/"),
    ] {
        let (view, arrays) = faulty_view(|s| s.with(keys, 1, fault.clone()));
        assert_eq!(
            read_whole(&view, array),
            Err(ViewError::Io(IoCause::Corrupt)),
            "{fault:?} on {array}"
        );
        for a in arrays.iter().filter(|a| a.path != array) {
            assert_eq!(read_whole(&view, &a.path).unwrap(), a.expected);
        }
    }
}

#[test]
fn fetch_errors_name_the_node_and_the_key() {
    let (store, _) = synth::mixed_store();
    let inner: Arc<dyn Store> = Arc::new(store);
    let h = load_hierarchy(inner.as_ref(), &LoadOptions::default()).unwrap();
    let store: Arc<dyn Store> = Arc::new(FaultyStore::new(inner).with("/c/", 1, Fault::Error));
    let reader = |path: &str| {
        let node = h.nodes.iter().find(|n| n.path == path).unwrap();
        let NodeKind::Array(Ok(meta)) = &node.kind else {
            panic!("{path} is an array")
        };
        ChunkReader::new(store.clone(), path, meta.clone()).unwrap()
    };
    let err = reader("zstd")
        .load(&[0, 1], None, &mut Vec::new(), &Uncached)
        .unwrap_err();
    assert_eq!(err.cause, FetchCause::Store);
    assert!(
        err.message.starts_with("zstd: chunk zstd/c/0/1: ") && err.message.contains("injected"),
        "{err}"
    );
    let err = reader("sharded")
        .load(&[0, 0], None, &mut Vec::new(), &Uncached)
        .unwrap_err();
    assert_eq!(err.cause, FetchCause::Store, "{err}");
    assert!(
        err.message.starts_with("sharded: shard sharded/c/0/0: ")
            && err.message.contains("injected"),
        "{err}"
    );
}

#[test]
fn slow_stores_still_read_right_with_prefetch_and_nothing_hangs() {
    let (view, arrays) = faulty_view(|s| s.with("", 1, Fault::Latency(Duration::from_millis(2))));
    let view = Arc::new(view);
    let readers: Vec<_> = arrays
        .into_iter()
        .map(|a| {
            let view = view.clone();
            std::thread::spawn(move || (read_whole(&view, &a.path), a.expected))
        })
        .collect();
    for r in readers {
        let (got, expected) = r.join().unwrap();
        assert_eq!(got.unwrap(), expected);
    }
}

fn one_array(meta: &str, chunks: &[(&str, Vec<u8>)]) -> MemoryStore {
    let mut s = MemoryStore::new();
    s.insert("zarr.json", meta);
    for (key, bytes) in chunks {
        s.insert(*key, bytes.clone());
    }
    s
}

#[test]
fn an_oversized_chunk_object_is_refused_unread() {
    // 4 uint8 per chunk; the stored object is 8 MiB of zeros.
    let meta = r#"{"zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "bytes"}, {"name": "zstd"}]}"#;
    let small = zstd::bulk::compress(&[1, 2, 3, 4], 1).unwrap();
    let store = one_array(meta, &[("c/0", small), ("c/1", vec![0; 8 << 20])]);
    let view = view_of(Arc::new(store), 1 << 20);
    let ino = view.resolve("root").unwrap();
    assert_eq!(view.read(ino, 0, 4).unwrap(), vec![1, 2, 3, 4]);
    assert_eq!(view.read(ino, 4, 4), Err(ViewError::Io(IoCause::Oversized)));
}

#[test]
fn a_chunk_larger_than_the_cache_is_refused_without_decoding() {
    // Chunks of 2 MiB, a cache of 1 MiB.
    let meta = r#"{"zarr_format": 3, "node_type": "array", "shape": [4194304], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2097152]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}"#;
    let store = one_array(meta, &[("c/0", vec![5; 2 << 20])]);
    let view = view_of(Arc::new(store), 1 << 20);
    let ino = view.resolve("root").unwrap();
    assert_eq!(view.getattr(ino).unwrap().size, 4 << 20, "its real size");
    let too_large = ViewError::Io(IoCause::TooLargeForCache);
    assert_eq!(view.open(ino), Err(too_large));
    for _ in 0..3 {
        assert_eq!(view.read(ino, 1000, 100), Err(too_large));
    }
    assert_eq!(view.cache().stats().loads, 0, "never decoded");
}

#[test]
fn a_rectilinear_chunk_larger_than_the_cache_is_refused_like_a_regular_one() {
    // Stored chunks of 2 MiB, 2 MiB and 64 KiB (read in chunks of 64 KiB, their common
    // divisor), a cache of 1 MiB: a stored chunk could never be kept, and each read chunk
    // would fetch and decode the whole of it again.
    let meta = r#"{"zarr_format": 3, "node_type": "array", "shape": [4259840], "data_type": "uint8",
        "chunk_grid": {"name": "rectilinear", "configuration": {"kind": "inline",
            "chunk_shapes": [[2097152, 2097152, 65536]]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}"#;
    let store = one_array(meta, &[("c/0", vec![5; 2 << 20])]);
    let view = view_of(Arc::new(store), 1 << 20);
    let ino = view.resolve("root").unwrap();
    let too_large = ViewError::Io(IoCause::TooLargeForCache);
    assert_eq!(view.open(ino), Err(too_large));
    assert_eq!(view.read(ino, 1000, 100), Err(too_large));
    assert_eq!(view.cache().stats().loads, 0, "never decoded");
}

#[test]
fn shard_indexes_count_against_the_cache_budget() {
    let (store, arrays) = synth::mixed_store();
    let view = view_of(Arc::new(store), 64 << 10);
    let sharded = arrays.iter().find(|a| a.path == "sharded").unwrap();
    assert_eq!(read_whole(&view, "sharded").unwrap(), sharded.expected);
    let stats = view.cache().stats();
    assert!(stats.used <= view.cache().budget(), "{stats:?}");
}

#[test]
fn an_array_whose_layout_overflows_is_unreadable_not_a_panic() {
    // u64::MAX one-byte elements in chunks of 2^31: the chunk grid spans 2^64 elements.
    let meta = r#"{"zarr_format": 3, "node_type": "array", "shape": [18446744073709551615],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2147483648]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}"#;
    let view = view_of(Arc::new(one_array(meta, &[])), 4 << 30);
    let ino = view.resolve("root").unwrap();
    // More bytes than a file can have (2^63): refused with its metadata, shown empty.
    assert_eq!(view.getattr(ino).unwrap().size, 0);
    let bad = ViewError::Io(IoCause::Metadata);
    assert_eq!(view.open(ino), Err(bad));
    assert_eq!(view.read(ino, 0, 5), Err(bad));
}

#[test]
fn an_unsupported_codec_shows_the_real_size_and_fails_with_eio() {
    let meta = r#"{"zarr_format": 3, "node_type": "array", "shape": [3, 5], "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "bytes"}, {"name": "nosuch"}]}"#;
    let view = view_of(Arc::new(one_array(meta, &[])), 1 << 20);
    let ino = view.resolve("root").unwrap();
    assert_eq!(view.getattr(ino).unwrap().size, 60);
    let npy = view.resolve("root.npy").unwrap();
    assert_eq!(view.getattr(npy).unwrap().size, 128 + 60);
    let unsupported = ViewError::Io(IoCause::Unsupported);
    assert_eq!(view.open(ino), Err(unsupported));
    assert_eq!(view.open(npy), Err(unsupported));
    assert_eq!(view.read(ino, 0, 60), Err(unsupported));
    assert_eq!(view.read(npy, 0, 10), Err(unsupported), "the header too");
}

/// A `vlen-utf8` chunk of `items`.
fn vlen_chunk(items: &[String]) -> Vec<u8> {
    let mut out = (items.len() as u32).to_le_bytes().to_vec();
    for item in items {
        out.extend((item.len() as u32).to_le_bytes());
        out.extend(item.as_bytes());
    }
    out
}

#[test]
fn stat_of_a_large_string_array_does_not_scan_it_on_the_calling_thread() {
    const N: u64 = 4 * zarrfs::view::SYNC_SCAN_MAX;
    const CHUNK: u64 = N / 4;
    let meta = format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [{N}], "data_type": "string",
        "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [{CHUNK}]}}}},
        "chunk_key_encoding": {{"name": "default"}}, "fill_value": "",
        "codecs": [{{"name": "vlen-utf8"}}]}}"#
    );
    let item = |i: u64| format!("s{}", i % 1000);
    let chunks: Vec<(String, Vec<u8>)> = (0..N / CHUNK)
        .map(|c| {
            let items: Vec<String> = (c * CHUNK..(c + 1) * CHUNK).map(item).collect();
            (format!("c/{c}"), vlen_chunk(&items))
        })
        .collect();
    let chunks: Vec<(&str, Vec<u8>)> = chunks
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    let expected: Vec<u8> = (0..N)
        .flat_map(|i| format!("{}\n", item(i)).into_bytes())
        .collect();
    // Every chunk read takes a minute: a stat that read chunks would not come back in time.
    let slow = FaultyStore::new(Arc::new(one_array(&meta, &chunks))).with(
        "c/",
        1,
        Fault::Latency(Duration::from_secs(3600)),
    );
    let view = Arc::new(view_of(Arc::new(slow), 64 << 20));
    let ino = view.resolve("root").unwrap();
    let v = view.clone();
    let size = within_a_minute(move || v.getattr(ino).unwrap().size);
    assert_eq!(size, 0, "unknown until the scan is done");
    assert!(view.direct_io(ino), "served without depending on st_size");
    assert!(!view.direct_io(view.resolve("root.json").unwrap()));

    // The same array on a fast store: the scan runs in the background, reads wait for it.
    let view = view_of(Arc::new(one_array(&meta, &chunks)), 64 << 20);
    let ino = view.resolve("root").unwrap();
    let _ = view.getattr(ino).unwrap();
    view.open(ino).unwrap();
    let mut got = Vec::new();
    loop {
        let part = view.read(ino, got.len() as u64, 1 << 20).unwrap();
        if part.is_empty() {
            break;
        }
        got.extend(part);
    }
    assert_eq!(got, expected);
    assert_eq!(view.getattr(ino).unwrap().size, expected.len() as u64);
}

/// The chunk reader of the one array `a` of `store`.
fn reader_of(store: MemoryStore) -> Result<ChunkReader, zarrfs::fetch::FetchError> {
    let store: Arc<dyn Store> = Arc::new(store);
    let h = load_hierarchy(store.as_ref(), &LoadOptions::default()).unwrap();
    let node = h.nodes.iter().find(|n| n.path == "a").unwrap();
    let NodeKind::Array(Ok(meta)) = &node.kind else {
        panic!("a is an array")
    };
    ChunkReader::new(store.clone(), "a", meta.clone())
}

#[test]
fn shards_of_a_rectilinear_grid_are_charged_by_their_inner_chunks() {
    let mut s = MemoryStore::new();
    s.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#);
    s.insert(
        "a/zarr.json",
        r#"{"zarr_format": 3, "node_type": "array", "shape": [16384, 16384],
        "data_type": "float64", "fill_value": 0, "chunk_key_encoding": {"name": "default"},
        "chunk_grid": {"name": "rectilinear", "configuration": {"kind": "inline",
            "chunk_shapes": [[8192, 8192], [8192, 8192]]}},
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [256, 256],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]}"#,
    );
    // One 256 x 256 inner chunk and one shard index of 32 x 32 entries, not a whole shard.
    let reader = reader_of(s).unwrap();
    assert_eq!(
        reader.cached_bytes_per_chunk(),
        256 * 256 * 8 + 32 * 32 * 16
    );
}

#[test]
fn an_inner_chunk_that_is_a_shard_of_its_own_is_not_refused_as_oversized() {
    // A shard inside a shard: 16384 bytes of data and 16384 index entries of 16 bytes, far
    // more than twice the data.
    let inner_shard = |index_first: bool| {
        let data: Vec<u8> = (0..16384u32).map(|i| (i % 251) as u8).collect();
        let index: Vec<u8> = (0..16384u64)
            .flat_map(|i| {
                let at = if index_first { 16384 * 16 + i } else { i };
                [at.to_le_bytes(), 1u64.to_le_bytes()].concat()
            })
            .collect();
        (data, index)
    };
    let (data, index) = inner_shard(false);
    let inner = [data.clone(), index].concat();
    let outer_index = [0u64.to_le_bytes(), (inner.len() as u64).to_le_bytes()].concat();
    let mut s = MemoryStore::new();
    s.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#);
    s.insert(
        "a/zarr.json",
        r#"{"zarr_format": 3, "node_type": "array", "shape": [16384], "data_type": "uint8",
        "fill_value": 0, "chunk_key_encoding": {"name": "default"},
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16384]}},
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [16384],
            "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1],
                "codecs": [{"name": "bytes"}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]}"#,
    );
    s.insert("a/c/0", [inner, outer_index].concat());
    let reader = reader_of(s).unwrap();
    let mut out = Vec::new();
    let loaded = reader.load(&[0], None, &mut out, &Uncached).unwrap();
    assert_eq!((loaded, out), (zarrfs::fetch::Loaded::Decoded, data));
}

#[test]
fn a_failed_size_scan_is_tried_again_by_the_next_read() {
    let meta = r#"{"zarr_format": 3, "node_type": "array", "shape": [20], "data_type": "string",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [10]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": "",
        "codecs": [{"name": "vlen-utf8"}]}"#;
    let item = |i: u64| format!("s{i}");
    let chunk = |c: u64| vlen_chunk(&(c * 10..c * 10 + 10).map(item).collect::<Vec<_>>());
    let store = one_array(meta, &[("c/0", chunk(0)), ("c/1", chunk(1))]);
    // The second chunk read fails: the scan `stat` starts fails, once.
    let faulty = FaultyStore::new(Arc::new(store)).with("c/", 2, Fault::Error);
    let view = view_of(Arc::new(faulty), 1 << 20);
    let first = view.lookup(zarrfs::view::ROOT_INO, "root").unwrap();
    assert_eq!((first.size, first.exact), (0, false), "the scan failed");
    let ino = first.ino;
    view.open(ino).unwrap();
    let expected: Vec<u8> = (0..20)
        .flat_map(|i| format!("{}\n", item(i)).into_bytes())
        .collect();
    assert_eq!(view.read(ino, 0, 4096).unwrap(), expected);
    assert_eq!(view.getattr(ino).unwrap().size, expected.len() as u64);
}

#[test]
fn panics_below_the_view_fail_one_read_on_every_path() {
    // `rows` has chunks of whole rows (16000 bytes): a read of one whole chunk decodes straight
    // into the reply, bypassing the cache; `zstd` reads go through the cache.
    let (view, arrays) = faulty_view(|s| {
        s.with("rows/c/1/", 1, Fault::Panic)
            .with("zstd/c/0/1", 1, Fault::Panic)
    });
    let rows = view.resolve("rows").unwrap();
    let panicked = Err(ViewError::Io(IoCause::Panicked));
    assert_eq!(view.read(rows, 16000, 16000), panicked, "whole-chunk path");
    assert_eq!(view.read(rows, 16010, 100), panicked, "cached path");
    let zstd = view.resolve("zstd").unwrap();
    assert_eq!(view.read(zstd, 200, 100), panicked);
    // The threads live on, and everything else reads.
    assert_eq!(
        view.read(rows, 0, 16000).unwrap(),
        arrays[3].expected[..16000]
    );
    assert_eq!(read_whole(&view, "forder").unwrap(), arrays[1].expected);
}

const V2_ARRAY: &str = r#"{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<i2", "compressor": null, "fill_value": 0, "order": "C", "filters": null}"#;

/// A v2 root holding group `g`, which holds array `a` and group `sub`.
fn group_store() -> MemoryStore {
    let mut s = MemoryStore::new();
    for group in [".zgroup", "g/.zgroup", "g/sub/.zgroup"] {
        s.insert(group, r#"{"zarr_format": 2}"#);
    }
    s.insert("g/a/.zarray", V2_ARRAY);
    s
}

/// The names directory `path` shows, without the dot entries.
fn names(view: &View, path: &str) -> Result<Vec<String>, ViewError> {
    let entries = view.readdir(view.resolve(path)?, 2)?;
    Ok(entries.into_iter().map(|e| e.name).collect())
}

#[test]
fn a_group_whose_listing_or_probe_fails_gives_eio_and_is_loaded_again_at_its_next_use() {
    // The listing of `g` (a local error), then the metadata of its child `a` (a server's
    // error past the retries), fail on their first call.
    for (key, fault) in [("g", Fault::Error), ("g/a/.zarray", Fault::Unavailable)] {
        let store = FaultyStore::new(Arc::new(group_store())).first(key, 1, fault);
        let view = view_of(Arc::new(store), 1 << 20);
        let g = view.resolve("g").unwrap();
        let made = view.len();
        assert_eq!(
            names(&view, "g"),
            Err(ViewError::Io(IoCause::Store)),
            "{key}"
        );
        assert_eq!(view.len(), made, "{key}: no inode made by the failed load");
        let listing = names(&view, "g").unwrap();
        for name in ["a", "a.json", "sub"] {
            assert!(listing.iter().any(|n| n == name), "{key}: {listing:?}");
        }
        assert_eq!(
            view.lookup(g, "a").unwrap().ino,
            view.resolve("g/a").unwrap()
        );
    }
    // A lookup meets the failure the same way.
    let store = FaultyStore::new(Arc::new(group_store())).first("g", 1, Fault::Error);
    let view = view_of(Arc::new(store), 1 << 20);
    let g = view.resolve("g").unwrap();
    assert_eq!(view.lookup(g, "sub"), Err(ViewError::Io(IoCause::Store)));
    assert!(view.lookup(g, "sub").is_ok());
}

#[test]
fn a_group_the_look_ahead_fails_to_load_is_loaded_again_at_its_use() {
    let faulty = Arc::new(FaultyStore::new(Arc::new(group_store())).first("g", 1, Fault::Error));
    let view = Arc::new(view_of(faulty.clone(), 1 << 20));
    view.look_ahead();
    let before = faulty.calls();
    // Listing the root (loaded at open: no request) queues `g`, whose listing, the next
    // request, fails on the look-ahead's worker.
    names(&view, "").unwrap();
    within_a_minute(move || {
        while faulty.calls() == before {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    let listing = names(&view, "g").unwrap();
    assert!(listing.iter().any(|n| n == "sub"), "{listing:?}");
}

#[test]
fn a_root_whose_listing_fails_fails_the_open() {
    let store = FaultyStore::new(Arc::new(group_store())).first("", 1, Fault::Error);
    let err = zarrfs::view::from_store(Arc::new(store), "root", 1 << 20, &LoadOptions::default())
        .err()
        .expect("the open fails");
    assert!(err.to_string().contains("injected fault"), "{err}");
}

#[test]
fn a_preview_whose_chunk_failed_once_renders_at_the_next_open() {
    let mut s = MemoryStore::new();
    s.insert(".zgroup", r#"{"zarr_format": 2}"#);
    s.insert(
        "b/.zarray",
        r#"{"zarr_format": 2, "shape": [2, 2], "chunks": [2, 2], "dtype": "|u1", "compressor": null, "fill_value": 0, "order": "C", "filters": null}"#,
    );
    s.insert("b/0.0", vec![1u8, 2, 3, 4]);
    let store = FaultyStore::new(Arc::new(s)).first("b/0.0", 1, Fault::Error);
    let view = view_of(Arc::new(store), 1 << 20);
    let ino = view.resolve("b.png").unwrap();
    assert_eq!(view.open(ino), Err(ViewError::Io(IoCause::Store)));
    assert_eq!(view.getattr(ino).unwrap().size, 0, "nothing kept");
    view.open(ino).unwrap();
    let size = view.getattr(ino).unwrap().size;
    let png = view.read(ino, 0, size as u32).unwrap();
    let mut reader = png::Decoder::new(std::io::Cursor::new(png))
        .read_info()
        .unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    pixels.truncate(info.buffer_size());
    // None is the fill value 0: grey levels from 1 to 4.
    assert_eq!(pixels, [0, 85, 170, 255]);
}

/// A v2 root holding group `g`, which holds array `a` and group `sub`, which holds array `b`.
fn deeper_store() -> MemoryStore {
    let mut s = group_store();
    s.insert("g/sub/b/.zarray", V2_ARRAY);
    s
}

/// The whole of file `path`, read past its size (a read that finds more bytes than the size
/// `stat` showed returns them).
fn read_past_size(view: &View, path: &str) -> (u64, Vec<u8>) {
    let ino = view.resolve(path).unwrap();
    let size = view
        .getattr(ino)
        .unwrap_or_else(|e| panic!("{path}: {e:?}"))
        .size;
    (size, view.read(ino, 0, size as u32 + 4096).unwrap())
}

#[test]
fn a_subtree_file_is_not_made_while_a_group_below_cannot_be_listed() {
    for file in [".zom.json", ".header.cdl", ".ncstream"] {
        let store = FaultyStore::new(Arc::new(deeper_store())).first("g/sub", 1, Fault::Error);
        let view = view_of(Arc::new(store), 1 << 20);
        // A lookup measures the file: it meets the failure.
        assert_eq!(
            view.resolve(file),
            Err(ViewError::Io(IoCause::Store)),
            "{file}"
        );
        let (size, bytes) = read_past_size(&view, file);
        assert_eq!(bytes.len() as u64, size, "{file}: stat and read differ");
        let whole = std::str::from_utf8(&bytes).unwrap_or_default();
        match file {
            ".zom.json" => {
                let zom: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                let sub = &zom["members"]["g"]["members"]["sub"]["members"];
                assert!(sub.get("b").is_some(), "{zom}");
            }
            ".header.cdl" => assert!(whole.contains("short b("), "{whole}"),
            _ => {
                let fresh = view_of(Arc::new(deeper_store()), 1 << 20);
                assert_eq!(bytes, read_past_size(&fresh, file).1, "{file}");
            }
        }
    }
}
