//! Groups are loaded when first used, through real FUSE mounts: a group's children appear at
//! its first listing, a deep lookup loads only the path's groups, concurrent first lookups load
//! a group once, a broken group leaves the rest readable, and over S3 without consolidated
//! metadata the mount and every listing cost one level's requests (with `--no-look-ahead`);
//! by default the groups a walk visits next are loaded ahead, a bounded few, in the background.
//! What was loaded is read from `.zarrfs/stats` (`metadata.groups_loaded`, the groups requests
//! used; `metadata.groups_loaded_ahead`; `store.requests`, the store's request counter).

use crate::common;

use common::mount::{timed, Mount};
use common::servers;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

/// Groups `g0..` at the root, each with this many arrays and a subgroup `sub`.
const GROUPS: usize = 6;
const ARRAYS: usize = 5;

const GROUP: &str = r#"{"zarr_format": 3, "node_type": "group", "attributes": {}}"#;

fn array_doc(data_type: &str) -> String {
    format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "{data_type}",
        "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [4]}}}},
        "chunk_key_encoding": {{"name": "default", "configuration": {{"separator": "/"}}}},
        "fill_value": 0, "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}]}}"#
    )
}

/// The elements of the array written under `seed`: four little-endian int32.
fn values(seed: i32) -> Vec<u8> {
    (0..4).flat_map(|k| (seed * 10 + k).to_le_bytes()).collect()
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn write_array(dir: &Path, seed: i32) {
    write(&dir.join("zarr.json"), array_doc("int32"));
    write(&dir.join("c/0"), values(seed));
}

/// A Zarr v3 tree without consolidated metadata: `g0..g5` (arrays `a0..a4` and a subgroup
/// `sub` with arrays `s0`, `s1`), a chain `deep/d1/d2/d3` holding array `x` (with a sibling
/// group at every level), a group `bad` whose `zarr.json` is not JSON, and a group `gbroken`
/// holding an array `broken` of an unknown data type next to a healthy `ok`.
fn tree(root: &Path) {
    write(&root.join("zarr.json"), GROUP);
    for g in 0..GROUPS {
        let dir = root.join(format!("g{g}"));
        write(&dir.join("zarr.json"), GROUP);
        for a in 0..ARRAYS {
            write_array(&dir.join(format!("a{a}")), (g * 100 + a) as i32);
        }
        write(&dir.join("sub/zarr.json"), GROUP);
        for s in 0..2 {
            write_array(&dir.join(format!("sub/s{s}")), (g * 100 + 50 + s) as i32);
        }
    }
    let mut dir = root.to_path_buf();
    for level in ["deep", "d1", "d2", "d3"] {
        dir = dir.join(level);
        write(&dir.join("zarr.json"), GROUP);
        write(&dir.join("side/zarr.json"), GROUP);
        write_array(&dir.join("side/y"), 7);
    }
    write_array(&dir.join("x"), 9);
    write(&root.join("bad/zarr.json"), "{not json");
    write_array(&root.join("bad/hidden"), 1);
    write(&root.join("gbroken/zarr.json"), GROUP);
    write(&root.join("gbroken/broken/zarr.json"), array_doc("nosuch"));
    write_array(&root.join("gbroken/ok"), 3);
}

fn stats(mount: &Mount) -> Value {
    let path = mount.join(".zarrfs/stats");
    let text = timed("read stats", move || std::fs::read(path).unwrap());
    serde_json::from_slice(&text).unwrap()
}

fn groups_loaded(mount: &Mount) -> u64 {
    stats(mount)["metadata"]["groups_loaded"].as_u64().unwrap()
}

fn names(path: PathBuf) -> Vec<String> {
    let mut names: Vec<String> = timed("list", move || {
        std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    });
    names.sort();
    names
}

fn read(path: PathBuf) -> std::io::Result<Vec<u8>> {
    timed("read", move || std::fs::read(path))
}

fn local_mount() -> (tempfile::TempDir, Mount) {
    let store = tempfile::tempdir().unwrap();
    tree(store.path());
    let mount = Mount::new(store.path(), &[]);
    (store, mount)
}

#[test]
fn a_groups_children_appear_at_its_first_listing() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (_store, m) = local_mount();
    // Reading the statistics loads the root only.
    assert_eq!(groups_loaded(&m), 1);
    let root = names(m.path().to_path_buf());
    assert!(root.contains(&"g3".to_string()) && root.contains(&"deep".to_string()));
    assert_eq!(
        groups_loaded(&m),
        1,
        "listing the root loads no group below it"
    );
    let mut want: Vec<String> = (0..ARRAYS)
        .flat_map(|a| [format!("a{a}"), format!("a{a}.json"), format!("a{a}.npy")])
        .collect();
    want.extend(
        [
            ".group.json",
            ".header.cdl",
            ".ncstream",
            ".zom.json",
            "sub",
        ]
        .map(String::from),
    );
    want.sort();
    assert_eq!(names(m.join("g3")), want);
    assert_eq!(groups_loaded(&m), 2);
    assert_eq!(read(m.join("g3/a4")).unwrap(), values(304));
    assert_eq!(names(m.join("g3/sub")).len(), 2 * 3 + 4);
    assert_eq!(read(m.join("g3/sub/s1")).unwrap(), values(351));
    assert_eq!(groups_loaded(&m), 3);
    names(m.join("g3"));
    assert_eq!(groups_loaded(&m), 3, "a group is loaded once");
}

#[test]
fn a_lookup_of_a_deep_path_loads_only_its_ancestors() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (_store, m) = local_mount();
    assert_eq!(read(m.join("deep/d1/d2/d3/x")).unwrap(), values(9));
    // The root, deep, d1, d2 and d3: none of the `side` groups, none of `g0..`.
    assert_eq!(groups_loaded(&m), 5);
    assert_eq!(read(m.join("deep/d1/side/y")).unwrap(), values(7));
    assert_eq!(groups_loaded(&m), 6);
}

#[test]
fn concurrent_first_lookups_of_a_group_load_it_once() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (_store, m) = local_mount();
    let path = m.join("g5/a2");
    let start = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (path, start) = (path.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                std::fs::read(path).unwrap()
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), values(502));
    }
    // The root and g5, each once, whatever thread came first.
    assert_eq!(groups_loaded(&m), 2);
}

#[test]
fn a_broken_group_leaves_the_rest_readable() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (_store, m) = local_mount();
    let missing = read(m.join("bad/hidden")).unwrap_err();
    assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    assert!(!names(m.path().to_path_buf()).contains(&"bad".to_string()));
    let broken = read(m.join("gbroken/broken")).unwrap_err();
    assert_eq!(broken.raw_os_error(), Some(libc::EIO));
    assert_eq!(read(m.join("gbroken/ok")).unwrap(), values(3));
    assert_eq!(read(m.join("g1/a2")).unwrap(), values(102));
    let zom: Value = serde_json::from_slice(&read(m.join(".zom.json")).unwrap()).unwrap();
    assert!(zom["members"]["g1"]["members"]["sub"]["members"]["s0"].is_object());
    let (status, stderr) = m.stop();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("bad: left out"), "{stderr}");
    assert!(
        stderr.contains("gbroken/broken: data cannot be read"),
        "{stderr}"
    );
}

/// The test tree served by an S3 server as `tree` in bucket `bucket`, credentials set; the
/// directory it was written to goes with the first value.
fn served_tree(bucket: &str) -> (tempfile::TempDir, servers::Server) {
    let store = tempfile::tempdir().unwrap();
    let tree_dir = store.path().join("tree");
    tree(&tree_dir);
    let server = servers::s3_server(&[(bucket, std::slice::from_ref(&tree_dir))]);
    servers::s3_credentials_env();
    (store, server)
}

fn requests(mount: &Mount) -> u64 {
    stats(mount)["store"]["requests"].as_u64().unwrap()
}

#[test]
fn a_remote_tree_without_consolidated_metadata_loads_one_level_per_listing() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (_store, server) = served_tree("lazy");
    // Requests are counted per listing: no groups loaded ahead of use.
    let m = Mount::new(
        Path::new("s3://lazy/tree"),
        &["--endpoint", &server.url, "--no-look-ahead"],
    );
    let mounted = requests(&m);
    let root = names(m.path().to_path_buf());
    assert_eq!(requests(&m), mounted, "the root was listed at mount");
    assert!(root.contains(&"g0".to_string()));
    // One group's level: its listing and its children's documents, the same for two groups
    // of the same shape, and nothing of their subgroups.
    let before = requests(&m);
    assert_eq!(names(m.join("g2")).len(), 3 * ARRAYS + 5);
    let g2 = requests(&m) - before;
    let before = requests(&m);
    names(m.join("g4"));
    let g4 = requests(&m) - before;
    assert_eq!(g2, g4);
    assert!(
        g2 > ARRAYS as u64 && g2 <= 2 * (ARRAYS as u64 + 2),
        "{g2} requests"
    );
    let before = requests(&m);
    names(m.join("g2"));
    assert_eq!(requests(&m), before, "a group is listed once");
    assert_eq!(read(m.join("g2/sub/s0")).unwrap(), values(250));
    assert!(
        requests(&m) > before,
        "g2/sub is loaded at its first lookup"
    );
    // A full walk loads the rest; the mount itself cost a small part of it.
    let root_path = m.path().to_path_buf();
    let out = timed("find", move || {
        std::process::Command::new("find")
            .arg(root_path)
            .output()
            .unwrap()
    });
    assert!(out.status.success());
    let walked = requests(&m);
    assert!(mounted * 4 < walked, "mount {mounted}, walk {walked}");
    assert_eq!(read(m.join("g5/sub/s1")).unwrap(), values(551));
}

fn groups_ahead(mount: &Mount) -> u64 {
    stats(mount)["metadata"]["groups_loaded_ahead"]
        .as_u64()
        .unwrap()
}

/// Reads the statistics until `done` holds of them (at most 20 s), then once more after a
/// pause, so that nothing still loading is missed; returns the last.
fn settled(mount: &Mount, done: impl Fn(&Value) -> bool) -> Value {
    let start = std::time::Instant::now();
    while !done(&stats(mount)) {
        assert!(start.elapsed().as_secs() < 20, "{}", stats(mount));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    stats(mount)
}

#[test]
fn the_groups_a_walk_visits_next_are_loaded_ahead_and_no_further() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (_store, server) = served_tree("ahead");
    let m = Mount::new(Path::new("s3://ahead/tree"), &["--endpoint", &server.url]);
    // Reading the statistics uses the root: its eight groups (deep, g0..g5, gbroken; `bad`
    // is left out) load in the background, and nothing below them.
    let ahead = settled(&m, |s| s["metadata"]["groups_loaded_ahead"] == 8);
    assert_eq!(ahead["metadata"]["groups_loaded"], 1, "{ahead}");
    let loaded = ahead["store"]["requests"].as_u64().unwrap();
    let mut listed = 0;
    for g in 0..GROUPS {
        listed += names(m.join(&format!("g{g}"))).len();
    }
    assert_eq!(listed, GROUPS * (3 * ARRAYS + 5));
    // Their use queued their own subgroups (each `sub`), one level below what was used.
    let after = settled(&m, |s| {
        s["metadata"]["groups_loaded_ahead"] == 8 + GROUPS as u64
    });
    assert_eq!(
        after["metadata"]["groups_loaded"],
        1 + GROUPS as u64,
        "{after}"
    );
    assert!(after["store"]["requests"].as_u64().unwrap() > loaded);
    let before = requests(&m);
    assert_eq!(names(m.join("g2/sub")).len(), 2 * 3 + 4);
    assert_eq!(requests(&m), before, "g2/sub was loaded ahead");
    // `deep` was loaded but never used: nothing below it was.
    assert_eq!(groups_ahead(&m), 8 + GROUPS as u64);
    assert_eq!(read(m.join("deep/d1/d2/d3/x")).unwrap(), values(9));
}

/// A group of 1,500 arrays (4,503 names with the group's own files, more than one reply of
/// either kind carries) lists whole and in order, by readdir (`read_dir`) and by readdirplus
/// (`ls -l`, each name with its size).
#[test]
fn a_group_of_many_arrays_lists_every_name_reply_after_reply() {
    const MANY: usize = 1_500;
    let store = tempfile::tempdir().unwrap();
    write(&store.path().join("zarr.json"), GROUP);
    let dir = store.path().join("many");
    write(&dir.join("zarr.json"), GROUP);
    for a in 0..MANY {
        write(&dir.join(format!("a{a:04}/zarr.json")), array_doc("int32"));
    }
    let mount = Mount::new(store.path(), &[]);
    let mut expected: Vec<String> = (0..MANY)
        .flat_map(|a| ["", ".json", ".npy"].map(|ext| format!("a{a:04}{ext}")))
        .collect();
    expected.extend([".group.json", ".header.cdl", ".ncstream", ".zom.json"].map(String::from));
    expected.sort();
    let listed: Vec<String> = names(mount.join("many"))
        .into_iter()
        .filter(|n| !n.starts_with(".zarrfs"))
        .collect();
    assert_eq!(listed, expected);
    let path = mount.join("many");
    let ls = timed("ls -l", move || {
        std::process::Command::new("ls")
            .args(["-l", "--time-style=+"])
            .arg(path)
            .output()
            .unwrap()
    });
    assert!(ls.status.success(), "{ls:?}");
    let text = String::from_utf8(ls.stdout).unwrap();
    let sized: Vec<(u64, &str)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[4].parse().unwrap(), *f.last().unwrap())
        })
        .filter(|(_, n)| n.starts_with('a') && !n.contains('.'))
        .collect();
    assert_eq!(sized.len(), MANY);
    assert!(sized.iter().all(|&(size, _)| size == 16), "{sized:?}");
}
