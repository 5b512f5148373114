//! The netCDF files of a large tree are made group by group, as they are asked for: reading a
//! leaf's `.header.cdl` or `.ncstream` makes the dataset once and that leaf's file, not the
//! header of every group (each holding its whole subtree), and what it keeps stays small.

#[allow(dead_code)] // Only its allocation counter and view_of are used here.
#[path = "common/hostile.rs"]
mod hostile_support;

use std::sync::Arc;
use zarrfs::store::MemoryStore;
use zarrfs::view::View;

#[global_allocator]
static ALLOC: hostile_support::CountingAlloc = hostile_support::CountingAlloc;

/// Levels of the chain of groups (the hierarchy shows 64).
const DEPTH: usize = 60;
/// Sibling groups at the bottom of the chain.
const WIDE: usize = 2000;
/// Variables of the bottom's groups `m` (each its own named dimension) and `n` (each an
/// anonymous dimension of the root, of its own length).
const DIMS: usize = 1000;

fn array(shape: &str) -> String {
    format!(
        r#"{{"zarr_format": 2, "shape": {shape}, "chunks": {shape}, "dtype": "<i4",
            "compressor": null, "filters": null, "fill_value": 7, "order": "C"}}"#
    )
}

/// A chain of `DEPTH` groups `g`, each with a variable `v(x)`; at its bottom, `w` holding
/// `WIDE` groups `s<j>` of one variable `a(d<j>)` with two attributes, and `m` and `n`.
fn store() -> MemoryStore {
    let mut s = MemoryStore::new();
    s.insert(".zgroup", r#"{"zarr_format": 2}"#);
    s.insert(".zattrs", r#"{"title": "scale"}"#);
    let mut chain = String::new();
    for level in 0..DEPTH {
        chain.push_str("g/");
        s.insert(format!("{chain}.zgroup"), r#"{"zarr_format": 2}"#);
        s.insert(
            format!("{chain}.zattrs"),
            format!(r#"{{"level": {level}}}"#),
        );
        s.insert(format!("{chain}v/.zarray"), array("[2]"));
        s.insert(
            format!("{chain}v/.zattrs"),
            r#"{"_ARRAY_DIMENSIONS": ["x"]}"#,
        );
    }
    for group in ["w", "m", "n"] {
        s.insert(format!("{chain}{group}/.zgroup"), r#"{"zarr_format": 2}"#);
    }
    for j in 0..WIDE {
        let dir = format!("{chain}w/s{j}/");
        s.insert(format!("{dir}.zgroup"), r#"{"zarr_format": 2}"#);
        s.insert(format!("{dir}a/.zarray"), array("[3]"));
        let attrs = format!(r#"{{"_ARRAY_DIMENSIONS": ["d{j}"], "units": "K", "scale": 1.5}}"#);
        s.insert(format!("{dir}a/.zattrs"), attrs);
    }
    for k in 0..DIMS {
        s.insert(format!("{chain}m/a{k}/.zarray"), array("[2]"));
        let names = format!(r#"{{"_ARRAY_DIMENSIONS": ["x{k}"]}}"#);
        s.insert(format!("{chain}m/a{k}/.zattrs"), names);
        s.insert(
            format!("{chain}n/a{k}/.zarray"),
            array(&format!("[{}]", k + 1)),
        );
    }
    s
}

/// The bottom of the chain.
fn bottom() -> String {
    vec!["g"; DEPTH].join("/")
}

/// The whole file at `path`, its stat size checked, read in pieces of `step` bytes.
fn read(view: &View, path: &str, step: u32) -> Vec<u8> {
    let ino = view.resolve(path).unwrap();
    let size = view.getattr(ino).unwrap().size;
    let mut out = Vec::new();
    while (out.len() as u64) < size {
        let got = view.read(ino, out.len() as u64, step).unwrap();
        assert!(
            !got.is_empty(),
            "{path}: read stops before the stat size {size}"
        );
        out.extend(got);
    }
    assert!(
        view.read(ino, size, step).unwrap().is_empty(),
        "{path}: bytes past the stat size"
    );
    out
}

/// The view of [`store`], its whole tree loaded (as the first use of a netCDF file loads it).
fn loaded_view() -> View {
    let view = hostile_support::view_of(Arc::new(store())).unwrap();
    // The size of the root's `.zom.json` loads the whole tree.
    view.getattr(view.resolve(".zom.json").unwrap()).unwrap();
    view
}

#[test]
fn a_leaf_header_is_made_alone() {
    let view = loaded_view();
    let leaf = format!("{}/w/s7/.header.cdl", bottom());
    let mut cdl = Vec::new();
    let held = hostile_support::peak_allocation(|| cdl = read(&view, &leaf, 1 << 20));
    assert_eq!(
        String::from_utf8(cdl).unwrap(),
        "netcdf s7 {\ndimensions:\n\td7 = 3 ;\nvariables:\n\tint a(d7) ;\n\
         \t\ta:units = \"K\" ;\n\t\ta:scale = 1.5 ;\n}\n"
    );
    // The dataset (made once, from the whole tree) and the leaf's header: about 22 MB. Making
    // every group's header and stream at once, each holding its subtree, held about 200 MB.
    assert!(held < 64 << 20, "reading a leaf's header held {held} bytes");
}

#[test]
fn a_leaf_stream_is_made_alone() {
    let view = loaded_view();
    let leaf = format!("{}/w/s7/.ncstream", bottom());
    let mut stream = Vec::new();
    let held = hostile_support::peak_allocation(|| stream = read(&view, &leaf, 1 << 20));
    assert_eq!(&stream[..4], b"CDFS");
    assert_eq!(&stream[stream.len() - 4..], [0xed, 0xed, 0xde, 0xde]);
    // The values of `a`, big-endian, end the data message.
    let values: Vec<u8> = [7i32; 3].iter().flat_map(|v| v.to_be_bytes()).collect();
    assert_eq!(&stream[stream.len() - 16..stream.len() - 4], values);
    assert!(held < 64 << 20, "reading a leaf's stream held {held} bytes");
}

/// The root's header (every group below it), read in pieces as `cat` reads it and at odd
/// offsets, equals itself read whole; groups of many dimensions show them all, in order.
#[test]
fn large_headers_read_in_pieces() {
    let view = loaded_view();
    let whole = read(&view, ".header.cdl", u32::MAX);
    assert!(whole.len() > 1 << 20, "{} bytes", whole.len());
    for step in [128 << 10, 65_537, 4093] {
        assert!(
            read(&view, ".header.cdl", step) == whole,
            "read in pieces of {step}"
        );
    }
    let text = String::from_utf8(whole).unwrap();
    assert!(text.starts_with("netcdf root {\ndimensions:\n\t_Anonymous_Dim_1 = 1 ;\n"));
    // The bottom's sibling groups, nested 62 levels deep.
    let ind = "  ".repeat(DEPTH + 1);
    let last = format!("\n{ind}group: s{} {{\n{ind}  dimensions:\n", WIDE - 1);
    assert!(text.contains(&last));
    assert!(text.ends_with("  } // group g\n}\n"));
    // `m`: a dimension of its own per variable, in the variables' order (by name).
    let mut names: Vec<usize> = (0..DIMS).collect();
    names.sort_by_key(|k| k.to_string());
    let dims: String = names.iter().map(|k| format!("\tx{k} = 2 ;\n")).collect();
    let vars: String = names
        .iter()
        .map(|k| format!("\tint a{k}(x{k}) ;\n"))
        .collect();
    let m = read(&view, &format!("{}/m/.header.cdl", bottom()), 1 << 20);
    let expected = format!("netcdf m {{\ndimensions:\n{dims}variables:\n{vars}}}\n");
    assert!(String::from_utf8(m).unwrap() == expected, "m/.header.cdl");
    // `n`: the root's anonymous dimensions it uses, declared in it.
    let dims: String = names
        .iter()
        .map(|k| format!("\t_Anonymous_Dim_{0} = {0} ;\n", k + 1))
        .collect();
    let vars: String = names
        .iter()
        .map(|k| format!("\tint a{k}(_Anonymous_Dim_{}) ;\n", k + 1))
        .collect();
    let n = read(&view, &format!("{}/n/.header.cdl", bottom()), 1 << 20);
    let expected = format!("netcdf n {{\ndimensions:\n{dims}variables:\n{vars}}}\n");
    assert!(String::from_utf8(n).unwrap() == expected, "n/.header.cdl");
}
