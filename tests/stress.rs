//! Concurrency stress: 8 threads each make thousands of random reads (random files, offsets and
//! lengths, with runs in order so prefetch and drop-behind engage) over arrays of every kind
//! (zstd, zlib in F order, sharded with missing shards and inner chunks, raw whole-row chunks,
//! and the real-writer fixtures of v3_codecs.zarr) through one cache far smaller than the data;
//! every byte is compared with values computed independently of zarrfs.

mod common;
mod synth;

use std::sync::Arc;
use zarrfs::cache::read_ahead::ReadPolicy;
use zarrfs::cache::ChunkCache;
use zarrfs::meta::{LoadOptions, StoreRef, Tree};
use zarrfs::store::{DirStore, Store};
use zarrfs::view::View;

const THREADS: u64 = 8;
const READS_PER_THREAD: u64 = 4000;

/// A small deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn view_of(store: Arc<dyn Store>, cache: u64) -> View {
    let tree = Tree::open(StoreRef::Shared(store.clone()), &LoadOptions::default()).unwrap();
    let mut view = View::build(tree, store, Arc::new(ChunkCache::new(cache)), "root");
    view.set_read_policy(ReadPolicy::local(2));
    view
}

/// (inode, expected bytes) of every file to read: `A` and `A.npy` of each array.
fn targets(view: &View, files: Vec<(String, Vec<u8>)>) -> Vec<(u64, Arc<Vec<u8>>)> {
    files
        .into_iter()
        .map(|(path, bytes)| {
            let ino = view.resolve(&path).unwrap();
            assert_eq!(
                view.getattr(ino).unwrap().size,
                bytes.len() as u64,
                "{path}"
            );
            (ino, Arc::new(bytes))
        })
        .collect()
}

/// Runs the readers over `files` (path, expected bytes) and checks every byte they read, and
/// that the cache kept within its budget.
fn hammer(view: View, files: Vec<(String, Vec<u8>)>) -> Arc<View> {
    let view = Arc::new(view);
    let targets = Arc::new(targets(&view, files));
    let wrong = read_concurrently(view.clone(), targets);
    assert!(
        wrong.is_empty(),
        "{} wrong reads, e.g. {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(5)]
    );
    assert!(view.cache().stats().used <= view.cache().budget());
    view
}

/// Runs the readers; returns the reads that came back wrong.
fn read_concurrently(view: Arc<View>, targets: Arc<Vec<(u64, Arc<Vec<u8>>)>>) -> Vec<String> {
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (view, targets) = (view.clone(), targets.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(t * 7919 + 1);
                let mut wrong = Vec::new();
                let mut k = 0;
                while k < READS_PER_THREAD {
                    let (ino, expected) = &targets[rng.below(targets.len() as u64) as usize];
                    let size = expected.len() as u64;
                    let fh = view.open(*ino).unwrap();
                    // A run of reads in order (prefetch, drop-behind), or one random read.
                    let run = if rng.below(4) == 0 {
                        1 + rng.below(24)
                    } else {
                        1
                    };
                    let mut offset = rng.below(size + 64);
                    for _ in 0..run {
                        let longest = if rng.below(8) == 0 { 256 << 10 } else { 8192 };
                        let len = 1 + rng.below(longest);
                        let mut out = Vec::new();
                        match view.read_into(*ino, fh, offset, len as u32, &mut out) {
                            Ok(()) => {
                                let from = offset.min(size) as usize;
                                let to = offset.saturating_add(len).min(size) as usize;
                                if out[..] != expected[from..to] {
                                    wrong.push(format!("ino {ino}: {len} bytes at {offset}"));
                                }
                            }
                            Err(e) => wrong.push(format!("ino {ino}: {len} at {offset}: {e:?}")),
                        }
                        offset += len;
                        k += 1;
                    }
                    view.release(fh);
                }
                wrong
            })
        })
        .collect();
    threads
        .into_iter()
        .flat_map(|t| t.join().expect("a reader panicked"))
        .collect()
}

#[test]
fn eight_threads_of_random_reads_see_the_right_bytes_through_a_small_cache() {
    let (store, arrays) = synth::mixed_store();
    let data: usize = arrays.iter().map(|a| a.expected.len()).sum();
    let cache = 128 << 10;
    assert!(
        data as u64 > 6 * cache,
        "the cache is far smaller than the data"
    );
    let store: Arc<dyn Store> = Arc::new(store);
    let view = view_of(store, cache);
    let mut files = Vec::new();
    for a in &arrays {
        let ino = view.resolve(&format!("{}.npy", a.path)).unwrap();
        let npy = view.read(ino, 0, 4096).unwrap();
        let header = common::npy_header_len(&npy);
        let mut expected_npy = npy[..header].to_vec();
        expected_npy.extend(&a.expected);
        files.push((a.path.clone(), a.expected.clone()));
        files.push((format!("{}.npy", a.path), expected_npy));
    }
    let view = hammer(view, files);
    let stats = view.cache().stats();
    assert!(
        stats.loads > stats.hits / 100,
        "the cache was too small to keep everything"
    );
}

#[test]
fn eight_threads_of_random_reads_over_real_writer_fixtures() {
    let case = common::load_manifest("manifest.json")
        .into_iter()
        .find(|c| c.name == "v3_codecs")
        .unwrap();
    let store: Arc<dyn Store> = Arc::new(DirStore::new(&case.store).unwrap());
    let view = view_of(store, 16 << 10);
    let mut files = Vec::new();
    for node in case.healthy_arrays().filter(|n| n.text.is_none()) {
        let (npy, data) = common::expected_bytes(node);
        let file = case.file_of(node);
        files.push((format!("{file}.npy"), npy));
        files.push((file, data));
    }
    assert!(files.len() >= 20, "v3_codecs has many arrays");
    hammer(view, files);
}
