//! `.ncstream` of every fixture group: read through the view in pieces that cut across the
//! framing and the values, decoded by siphon (tests/ncstream_check.py) and every variable's
//! values, strings included, compared with the expected arrays and texts.

mod common;
#[allow(dead_code)] // Only its allocation counter and view_of are used here.
#[path = "common/hostile.rs"]
mod hostile_support;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use zarrfs::meta::LoadOptions;
use zarrfs::view::{View, ViewError};

#[global_allocator]
static ALLOC: hostile_support::CountingAlloc = hostile_support::CountingAlloc;

/// The whole file at `path`, read in pieces of `step` bytes.
fn read_in_pieces(view: &View, path: &str, step: u32) -> Result<Vec<u8>, ViewError> {
    let ino = view.resolve(path)?;
    let size = view.getattr(ino)?.size;
    let mut out = Vec::new();
    while (out.len() as u64) < size {
        let got = view.read(ino, out.len() as u64, step)?;
        assert!(
            !got.is_empty(),
            "{path}: read stops before the stat size {size}"
        );
        out.extend(got);
    }
    assert!(
        view.read(ino, size, step)?.is_empty(),
        "{path}: bytes past the stat size"
    );
    Ok(out)
}

/// One stream to check: its name, file and expected values (stream path -> .npy).
type Case = (String, std::path::PathBuf, BTreeMap<String, String>);

/// Decodes every stream with siphon and compares it with its expected values; false when
/// siphon is missing (then the test is skipped, or fails under ZARRFS_REQUIRE_FUSE=1).
fn check_with_siphon(cases: &[Case], dir: &std::path::Path) -> bool {
    let list: Vec<serde_json::Value> = cases
        .iter()
        .map(|(name, file, expected)| {
            serde_json::json!({"name": name, "stream": file, "expected": expected})
        })
        .collect();
    let json = dir.join("cases.json");
    std::fs::write(&json, serde_json::to_vec(&list).unwrap()).unwrap();
    let script = common::fixtures_dir().join("../ncstream_check.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(&json)
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout);
    if out.status.code() == Some(3) {
        assert!(
            std::env::var(common::mount::REQUIRE_FUSE).as_deref() != Ok("1"),
            "siphon is required (pip install siphon): {text}"
        );
        eprintln!("skipped: {text}");
        return false;
    }
    eprintln!("{text}");
    assert!(
        out.status.success(),
        "siphon's decoding differs from the expected arrays:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

/// Taken by each test: the spare buffers are the process's, so a test reading alongside would
/// count in the allocation peak of the bounded-memory one.
static ONE_AT_A_TIME: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

#[test]
fn every_fixture_group_streams_its_values() {
    let _one = ONE_AT_A_TIME.lock();
    let tmp = tempfile::tempdir().unwrap();
    let mut cases: Vec<Case> = Vec::new();
    for manifest in ["dialects/manifest.json", "manifest.json"] {
        for case in common::load_manifest(manifest) {
            let load = LoadOptions {
                consolidated: !case.options.iter().any(|o| o == "--no-consolidated"),
            };
            let view =
                zarrfs::view::from_location(case.store.to_str().unwrap(), 64 << 20, &load).unwrap();
            // Groups, and a root array (the root group's one variable, named `root_name`).
            let root_array = case.root_name.is_some();
            for group in case
                .nodes
                .iter()
                .filter(|n| n.is_group || (root_array && n.path.is_empty()))
            {
                let path = common::join(&group.path, ".ncstream");
                let stream = match read_in_pieces(&view, &path, 4093) {
                    Ok(s) => s,
                    // A group holding arrays the manifest expects to fail: so does its stream.
                    Err(ViewError::Io(_))
                        if case.nodes.iter().any(|n| {
                            n.expect.is_some()
                                && (group.path.is_empty()
                                    || n.path.starts_with(&format!("{}/", group.path)))
                        }) =>
                    {
                        continue
                    }
                    Err(e) => panic!("{}: {path}: {e:?}", case.name),
                };
                let whole = read_in_pieces(&view, &path, 1 << 20).unwrap();
                assert_eq!(
                    stream, whole,
                    "{}: {path}: reads in pieces differ",
                    case.name
                );
                let prefix = if group.path.is_empty() {
                    String::new()
                } else {
                    format!("{}/", group.path)
                };
                let expected: BTreeMap<String, String> = case
                    .healthy_arrays()
                    .filter(|n| n.path.starts_with(&prefix))
                    .filter_map(|n| {
                        // Strings: a variable-length array's text, or a `|Sn`/`<Un` NPY file.
                        let file = n.text.as_ref().or(n.npy.as_ref())?.to_str()?.to_string();
                        let name = match &case.root_name {
                            Some(root) if n.path.is_empty() => root.clone(),
                            _ => n.path[prefix.len()..].to_string(),
                        };
                        Some((name, file))
                    })
                    .collect();
                let file = tmp.path().join(format!("{}.{}", cases.len(), "ncstream"));
                std::fs::write(&file, &stream).unwrap();
                cases.push((format!("{} {path}", case.name), file, expected));
            }
        }
    }
    let checked: usize = cases.iter().map(|c| c.2.len()).sum();
    assert!(checked > 50, "only {checked} variables checked");
    let strings = cases
        .iter()
        .flat_map(|c| c.2.values())
        .filter(|f| f.ends_with(".txt"))
        .count();
    assert!(
        strings >= 2,
        "only {strings} variable-length string variables checked"
    );
    check_with_siphon(&cases, tmp.path());
}

/// A 64 MiB group streams in pieces with memory near one read and the 1 MiB cache: the values are read from the
/// array as the stream is read, never gathered whole.
#[test]
fn a_large_group_streams_in_bounded_memory() {
    let _one = ONE_AT_A_TIME.lock();
    const SIDE: u64 = 4096;
    let mut s = zarrfs::store::MemoryStore::new();
    s.insert(".zgroup", r#"{"zarr_format": 2}"#);
    s.insert(
        "big/.zarray",
        format!(
            r#"{{"zarr_format": 2, "shape": [{SIDE}, {SIDE}], "chunks": [256, 256], "dtype": "<f4",
               "compressor": null, "filters": null, "fill_value": 1.5, "order": "C"}}"#
        ),
    );
    let view = hostile_support::view_of(Arc::new(s)).unwrap();
    let ino = view.resolve(".ncstream").unwrap();
    let size = view.getattr(ino).unwrap().size;
    let values = SIDE * SIDE * 4;
    assert!(size > values && size < values + 1024, "size {size}");
    let mut first = Vec::new();
    let mut last = Vec::new();
    let peak = hostile_support::peak_allocation(|| {
        let mut offset = 0;
        while offset < size {
            let piece = view.read(ino, offset, 1 << 20).unwrap();
            if offset == 0 {
                first = piece.clone();
            }
            offset += piece.len() as u64;
            if offset >= size {
                last = piece;
            }
        }
    });
    assert!(
        peak < 8 << 20,
        "reading the stream held {peak} bytes at once"
    );
    assert_eq!(&first[..4], b"CDFS");
    assert_eq!(&last[last.len() - 4..], [0xed, 0xed, 0xde, 0xde]);
    // The values end the data message, just before MAGIC_END: 1.5 big-endian.
    assert_eq!(&last[last.len() - 8..last.len() - 4], 1.5f32.to_be_bytes());
}

/// A `|S5` array of 3000 strings in three chunks, one chunk absent (the fill value): the stream
/// measures every string before its size is shown, and reads cutting through the strings at odd
/// offsets decode in siphon to the same elements.
#[test]
fn many_strings_stream_in_pieces() {
    let _one = ONE_AT_A_TIME.lock();
    const N: usize = 3000;
    let mut s = zarrfs::store::MemoryStore::new();
    s.insert(".zgroup", r#"{"zarr_format": 2}"#);
    s.insert(
        "words/.zarray",
        format!(
            r#"{{"zarr_format": 2, "shape": [{N}], "chunks": [1000], "dtype": "|S5",
               "compressor": null, "filters": null, "fill_value": "ZmlsbA==", "order": "C"}}"#
        ),
    );
    let word = |i: usize| format!("w{}", i * 7 % 9973).into_bytes();
    let mut expected = Vec::new();
    for chunk in [0, 2] {
        let mut bytes = Vec::new();
        for i in chunk * 1000..(chunk + 1) * 1000 {
            let mut w = word(i);
            w.resize(5, 0);
            bytes.extend(w);
        }
        s.insert(format!("words/{chunk}"), bytes);
    }
    for i in 0..N {
        expected.extend(if (1000..2000).contains(&i) {
            b"fill".to_vec()
        } else {
            word(i)
        });
        expected.push(b'\n');
    }
    let view = hostile_support::view_of(Arc::new(s)).unwrap();
    let stream = read_in_pieces(&view, ".ncstream", 7).unwrap();
    assert_eq!(stream, read_in_pieces(&view, ".ncstream", 1 << 20).unwrap());
    let tmp = tempfile::tempdir().unwrap();
    let (file, text) = (tmp.path().join("s.ncstream"), tmp.path().join("words.txt"));
    std::fs::write(&file, &stream).unwrap();
    std::fs::write(&text, &expected).unwrap();
    let expected = BTreeMap::from([("words".to_string(), text.to_str().unwrap().to_string())]);
    check_with_siphon(&[("words".into(), file, expected)], tmp.path());
}

/// NCZarr's unlimited dimension (`"time": {"size": 4, "unlimited": 1}`, netCDF-c 4.10.1) is
/// unlimited in the stream's header, in the group's dimensions and in the shapes of the
/// variables using it, as netCDF-Java's `NcStream.encodeDim` writes it.
#[test]
fn unlimited_dimensions_are_marked_in_the_header() {
    use prost::Message;
    use zarrfs::view::netcdf::proto;
    let _one = ONE_AT_A_TIME.lock();
    let store = common::fixtures_dir().join("dialects/nczarr_gen4.zarr");
    let view =
        zarrfs::view::from_location(store.to_str().unwrap(), 64 << 20, &LoadOptions::default())
            .unwrap();
    let stream = read_in_pieces(&view, ".ncstream", 1 << 20).unwrap();
    assert_eq!(&stream[..4], b"CDFS");
    let header = proto::Header::decode_length_delimited(&stream[8..]).unwrap();
    let root = header.root.unwrap();
    let unlimited = |dims: &[proto::Dimension]| -> Vec<(String, bool)> {
        dims.iter()
            .map(|d| (d.name.clone(), d.is_unlimited))
            .collect()
    };
    assert_eq!(
        unlimited(&root.dims)[..2],
        [("time".to_string(), true), ("lat".to_string(), false)]
    );
    let temp = root.vars.iter().find(|v| v.name == "temp").unwrap();
    assert_eq!(
        unlimited(&temp.shape),
        [
            ("time".to_string(), true),
            ("lat".to_string(), false),
            ("lon".to_string(), false)
        ]
    );
    // A subgroup's variable using the root's `time`.
    let forecast = root.groups.iter().find(|g| g.name == "forecast").unwrap();
    let wind = forecast.vars.iter().find(|v| v.name == "wind").unwrap();
    assert!(wind.shape[0].is_unlimited && !wind.shape[1].is_unlimited);
}
