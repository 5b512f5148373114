//! A walked hierarchy costs a bounded number of bytes per node (what the mount keeps of each
//! array once its group is listed), and opening consolidated metadata a few times its text,
//! counted by the allocator.

#[path = "common/counting_alloc.rs"]
mod counting_alloc;

use std::sync::Arc;
use zarrfs::cache::ChunkCache;
use zarrfs::meta::{LoadOptions, StoreRef, Tree};
use zarrfs::store::{MemoryStore, Store};
use zarrfs::view::{FileKind, View, Wait, ROOT_INO};

#[global_allocator]
static ALLOC: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

const GROUPS: usize = 10;
const ARRAYS: usize = 200;

/// A v3 array as zarr-python writes it, with two attributes and a dimension name.
fn array(g: usize, a: usize) -> String {
    format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "float32",
  "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [4]}}}},
  "chunk_key_encoding": {{"name": "default", "configuration": {{"separator": "/"}}}},
  "fill_value": 0.0, "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}],
  "attributes": {{"units": "m", "long_name": "array {a} of group {g}"}},
  "dimension_names": ["x"]}}"#
    )
}

fn group(title: &str) -> String {
    format!(r#"{{"zarr_format": 3, "node_type": "group", "attributes": {{"title": "{title}"}}}}"#)
}

/// `GROUPS` groups of `ARRAYS` arrays each; with `consolidated`, their documents in the root's
/// `consolidated_metadata` too.
fn store(consolidated: bool) -> MemoryStore {
    let mut s = MemoryStore::new();
    let mut all = Vec::new();
    for g in 0..GROUPS {
        let path = format!("g{g:02}");
        s.insert(format!("{path}/zarr.json"), group(&path));
        all.push(format!(r#""{path}": {}"#, group(&path)));
        for a in 0..ARRAYS {
            let path = format!("{path}/a{a:03}");
            s.insert(format!("{path}/zarr.json"), array(g, a));
            all.push(format!(r#""{path}": {}"#, array(g, a)));
        }
    }
    let root = match consolidated {
        false => group("root"),
        true => format!(
            r#"{{"zarr_format": 3, "node_type": "group", "attributes": {{}},
                "consolidated_metadata": {{"kind": "inline", "must_understand": false,
                "metadata": {{{}}}}}}}"#,
            all.join(",")
        ),
    };
    s.insert("zarr.json", root);
    s
}

/// Lists every directory below `dir` with its entries' attributes, as `find` and `ls -lR` do
/// (readdirplus); returns the number of files.
fn walk(view: &View, dir: u64) -> usize {
    let mut files = 0;
    for entry in view.readdir(dir, 2).unwrap() {
        view.listed_attr(entry.ino, Wait::Yes).unwrap();
        files += match entry.kind {
            FileKind::Directory => walk(view, entry.ino),
            FileKind::File => 1,
        };
    }
    files
}

/// The bytes a mount of [`store`] holds per array once walked, above the store's own: its tree
/// (with the consolidated documents, if any) and its view. The store is read on this thread
/// alone (a memory store is probed one node at a time), so this thread's count is all of it.
fn held_per_array(consolidated: bool) -> isize {
    let store = Arc::new(store(consolidated));
    let (view, held) = counting_alloc::kept_allocation(|| {
        let tree = Tree::open(StoreRef::Shared(store.clone()), &LoadOptions::default()).unwrap();
        let view = View::build(tree, store, Arc::new(ChunkCache::new(1 << 20)), "root");
        // Each array's `A`, `A.json` and `A.npy`.
        assert!(walk(&view, ROOT_INO) > 3 * GROUPS * ARRAYS);
        view
    });
    drop(view);
    held / (GROUPS * ARRAYS) as isize
}

// The view holds about 1,750 bytes per array here (the document's compact text about 400 of
// them), and consolidated documents about 620 more. Each document kept pretty-printed, and
// lists kept with their spare room, held about 2,550 and 3,180.

#[test]
fn a_walked_array_holds_a_bounded_number_of_bytes() {
    let held = held_per_array(false);
    assert!(held <= 2_000, "{held} bytes per array");
}

#[test]
fn a_walked_consolidated_array_holds_a_bounded_number_of_bytes() {
    let held = held_per_array(true);
    assert!(held <= 2_600, "{held} bytes per array");
}

#[test]
fn opening_consolidated_metadata_holds_a_few_times_its_text() {
    let store = Arc::new(store(true));
    let root = store.get_bounded("zarr.json", u64::MAX).unwrap().unwrap();
    let peak = counting_alloc::peak_allocation(|| {
        Tree::open(StoreRef::Shared(store.clone()), &LoadOptions::default()).unwrap()
    });
    // The root's text and each document's compact text: about 2.2 times the root's text.
    // Parsing the whole root, to see whether it is a v3 draft's, held 14 times.
    let most = 3 * root.bytes.len();
    assert!(peak <= most, "opening held {peak} bytes, more than {most}");
}
