//! The tool-facing files and answers of the view (no FUSE): `.zom.json` validated against ZEP
//! 6's JSON schemas and compared with each fixture's known structure, extended attributes with
//! size probing, and the `df` totals.

use crate::common;

use common::{load_manifest, StoreCase};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use zarrfs::view::{self, View, ViewError, XattrReply};

fn open(case: &StoreCase) -> View {
    view::from_location(
        case.store.to_str().unwrap(),
        64 << 20,
        &zarrfs::meta::LoadOptions {
            consolidated: !case.options.iter().any(|o| o == "--no-consolidated"),
        },
    )
    .unwrap()
}

fn read_json(view: &View, path: &str) -> Value {
    let ino = view
        .resolve(path)
        .unwrap_or_else(|e| panic!("{path}: {e:?}"));
    let size = view.getattr(ino).unwrap().size;
    serde_json::from_slice(&view.read(ino, 0, size as u32).unwrap()).unwrap()
}

fn every_case() -> Vec<StoreCase> {
    let mut cases = load_manifest("manifest.json");
    cases.extend(load_manifest("dialects/manifest.json"));
    cases
}

/// The ZOM path of a node below a group ZOM: `members.a.members.b`.
fn member<'a>(zom: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .try_fold(zom, |z, name| z.get("members")?.get(name))
}

/// Validates `docs` (name -> document) against the ZEP 6 schema of Zarr version `version`
/// with Python's `jsonschema`; returns the failures.
fn validate(version: u8, docs: &BTreeMap<String, Value>) -> Vec<String> {
    let schema = format!(
        "{}/tests/zom/v{version}.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let input = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(input.path(), serde_json::to_vec(docs).unwrap()).unwrap();
    let script = r#"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
v = cls(schema)
for name, doc in json.load(open(sys.argv[2])).items():
    for e in v.iter_errors(doc):
        print(f"{name}: {list(e.absolute_path)}: {e.message}")
"#;
    let out = Command::new("python3")
        .args(["-c", script, &schema, input.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "jsonschema: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn every_group_has_a_zom_that_validates_and_matches_the_fixture() {
    let mut docs: [BTreeMap<String, Value>; 2] = Default::default();
    let mut errors = Vec::new();
    let mut checked_members = 0;
    for case in every_case() {
        if case.root_name.is_some() {
            continue; // An array at the store root: no group, no ZOM.
        }
        let view = open(&case);
        let root = read_json(&view, ".zom.json");
        let version = root["zarr_format"].as_u64().unwrap();
        for node in case
            .nodes
            .iter()
            .filter(|n| n.expect.as_deref() != Some("absent"))
        {
            if node.is_group {
                let zom = read_json(&view, &common::join(&node.path, ".zom.json"));
                // A subgroup's own ZOM is the same subtree as in the root's.
                if member(&root, &node.path) != Some(&zom) {
                    errors.push(format!(
                        "{}: {}: .zom.json differs from the root's",
                        case.name, node.path
                    ));
                }
                let name = format!("{}:{}", case.name, node.path);
                docs[(version - 2) as usize].insert(name, zom);
                continue;
            }
            let Some(z) = member(&root, &node.path) else {
                errors.push(format!(
                    "{}: {} missing from .zom.json",
                    case.name, node.path
                ));
                continue;
            };
            checked_members += 1;
            if z.get("members").is_some() {
                errors.push(format!(
                    "{}: {} is an array with members",
                    case.name, node.path
                ));
            }
            let Some(expected) = &node.json else { continue };
            if let (Some(a), Some(b)) = (expected.get("attributes"), z.get("attributes")) {
                if a != b {
                    errors.push(format!(
                        "{}: {}: attributes {b} != {a}",
                        case.name, node.path
                    ));
                }
            }
            if let (Some(a), Some(b)) = (expected.get("shape"), z.get("shape")) {
                if a != b {
                    errors.push(format!("{}: {}: shape {b} != {a}", case.name, node.path));
                }
            }
        }
        // Nothing but the fixture's nodes.
        let mut stack = vec![(String::new(), &root)];
        while let Some((path, z)) = stack.pop() {
            for (name, m) in z
                .get("members")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                let p = common::join(&path, name);
                if !case.nodes.iter().any(|n| n.path == p) {
                    errors.push(format!(
                        "{}: {p} in .zom.json but not in the store",
                        case.name
                    ));
                }
                stack.push((p, m));
            }
        }
    }
    assert!(
        checked_members > 50,
        "only {checked_members} arrays checked"
    );
    assert!(
        docs[0].len() > 5 && docs[1].len() > 5,
        "too few groups of each version"
    );
    errors.extend(validate(2, &docs[0]));
    errors.extend(validate(3, &docs[1]));
    assert!(
        errors.is_empty(),
        "{} problems:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

fn xattr(view: &View, path: &str, name: &str) -> Result<String, ViewError> {
    let ino = view.resolve(path).unwrap();
    let XattrReply::Size(n) = view.getxattr(ino, name, 0)? else {
        panic!("size 0 must ask for the length");
    };
    let XattrReply::Data(bytes) = view.getxattr(ino, name, n + 7)? else {
        panic!("a large buffer gets the value");
    };
    assert_eq!(bytes.len() as u32, n, "{path} {name}: probed length");
    if n > 1 {
        assert_eq!(view.getxattr(ino, name, n - 1), Err(ViewError::TooSmall));
    }
    Ok(String::from_utf8(bytes).unwrap())
}

#[test]
fn arrays_and_groups_carry_their_metadata_as_extended_attributes() {
    let mut arrays = 0;
    for case in load_manifest("manifest.json") {
        let view = open(&case);
        for node in case.healthy_arrays() {
            let (Some(expected), Some(npy)) = (&node.json, &node.npy) else {
                continue;
            };
            if node.text.is_some() {
                continue;
            }
            let file = case.file_of(node);
            for f in [file.clone(), format!("{file}.npy")] {
                let shape: Value =
                    serde_json::from_str(&xattr(&view, &f, "user.zarr.shape").unwrap()).unwrap();
                if let Some(s) = expected.get("shape") {
                    assert_eq!(&shape, s, "{}: {f}", case.name);
                }
                let npy = std::fs::read(npy).unwrap();
                assert_eq!(
                    xattr(&view, &f, "user.zarr.dtype").unwrap(),
                    common::npy_descr_shape(&npy).0,
                    "{}: {f}",
                    case.name
                );
                let format = xattr(&view, &f, "user.zarr.format").unwrap();
                assert_eq!(
                    Some(format.as_str()),
                    expected
                        .get("zarr_format")
                        .map(|v| v.to_string())
                        .as_deref()
                        .or(Some(format.as_str()))
                );
                for name in [
                    "user.zarr.chunks",
                    "user.zarr.codecs",
                    "user.zarr.fill_value",
                    "user.zarr.dimension_names",
                ] {
                    serde_json::from_str::<Value>(&xattr(&view, &f, name).unwrap()).unwrap();
                }
            }
            let ino = view.resolve(&file).unwrap();
            let XattrReply::Data(list) = view.listxattr(ino, 4096).unwrap() else {
                panic!()
            };
            let names: Vec<&[u8]> = list.split(|&b| b == 0).filter(|s| !s.is_empty()).collect();
            assert_eq!(names.len(), 7, "{}: {file}", case.name);
            assert_eq!(
                view.getxattr(ino, "user.nosuch", 0),
                Err(ViewError::NoAttribute)
            );
            // Namespaces zarrfs does not have: EOPNOTSUPP, which `ls -l` remembers per
            // filesystem, instead of ENODATA, which it asks again for every file.
            for other in ["security.selinux", "system.posix_acl_access"] {
                assert_eq!(
                    view.getxattr(ino, other, 0).map_err(ViewError::errno),
                    Err(libc::EOPNOTSUPP)
                );
            }
            assert_eq!(view.listxattr(ino, 3), Err(ViewError::TooSmall));
            arrays += 1;
        }
        for node in case.nodes.iter().filter(|n| n.is_group) {
            let attrs: Value =
                serde_json::from_str(&xattr(&view, &node.path, "user.zarr.attributes").unwrap())
                    .unwrap();
            if let Some(expected) = node.json.as_ref().and_then(|j| j.get("attributes")) {
                assert_eq!(&attrs, expected, "{}: {}", case.name, node.path);
            }
            let format = xattr(&view, &node.path, "user.zarr.format").unwrap();
            assert!(format == "2" || format == "3", "{format}");
        }
    }
    assert!(arrays > 40, "only {arrays} arrays checked");
}

#[test]
fn xattrs_of_json_files_are_absent() {
    let case = load_manifest("manifest.json")
        .into_iter()
        .find(|c| c.name == "demo")
        .unwrap();
    let view = open(&case);
    let ino = view.resolve(".group.json").unwrap();
    assert_eq!(view.listxattr(ino, 0), Ok(XattrReply::Size(0)));
    assert_eq!(
        view.getxattr(ino, "user.zarr.shape", 0),
        Err(ViewError::NoAttribute)
    );
    assert_eq!(
        view.getxattr(9_999_999, "user.zarr.shape", 0),
        Err(ViewError::NotFound)
    );
}

#[test]
fn totals_are_the_decoded_size_of_the_arrays() {
    let case = load_manifest("manifest.json")
        .into_iter()
        .find(|c| c.name == "demo")
        .unwrap();
    assert!(case
        .nodes
        .iter()
        .all(|n| n.expect.is_none() && n.text.is_none()));
    let view = open(&case);
    let expected = common::decoded_total(&case);
    assert!(expected > 0);
    let totals = view.totals();
    assert_eq!(totals.data_bytes, expected);
    assert_eq!(totals.files as usize, view.len());
    assert_eq!(totals.blocks(4096), expected.div_ceil(4096));
    let _ = json!(null);
}

fn stats(view: &View) -> Value {
    read_json(view, ".zarrfs/stats")
}

#[test]
fn stats_move_as_reads_happen() {
    let case = load_manifest("manifest.json")
        .into_iter()
        .find(|c| c.name == "demo")
        .unwrap();
    let view = open(&case);
    let before = stats(&view);
    assert_eq!(before["cache"]["entries"], 0);
    assert_eq!(before["cache"]["misses"], 0);
    let ino = view.resolve("surface/temperature").unwrap();
    let size = view.getattr(ino).unwrap().size;
    let data = view.read(ino, 0, size as u32).unwrap();
    assert_eq!(data.len() as u64, size);
    view.read(ino, 0, 8).unwrap();
    let after = stats(&view);
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap();
    let misses = n(&after["cache"], "misses");
    assert!(misses > 0, "{after}");
    assert_eq!(n(&after["cache"], "entries"), misses);
    assert!(n(&after["cache"], "hits") > 0, "{after}");
    assert!(n(&after["cache"], "bytes") >= size);
    // Counters are process-wide (tests run in parallel): they only grow.
    assert!(n(&after, "reads") >= n(&before, "reads") + 3, "{after}");
    assert!(n(&after, "read_bytes") >= n(&before, "read_bytes") + size + 8);
    assert!(n(&after, "store_requests") >= n(&before, "store_requests") + misses);
    assert!(n(&after, "store_bytes") > n(&before, "store_bytes"));
    let sizes: u64 = after["read_sizes"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(sizes, n(&after, "reads"));
    // The file is served with direct I/O and its size is that of a fresh rendering.
    let file = view.resolve(".zarrfs/stats").unwrap();
    assert!(view.direct_io(file));
    assert!(view.getattr(file).unwrap().size > 100);
}

/// The expected grey pixels of each array's preview, computed with numpy from its expected
/// `.npy` and fill value: `(height, width, pixels)`, or `None` for a fill value this script
/// does not parse (hex and base64 forms).
fn numpy_previews(items: &[(String, Value)]) -> Vec<Option<(u32, u32, Vec<u8>)>> {
    let script = r#"
import json, sys, math
import numpy as np
out = []
for path, fill in json.load(open(sys.argv[1])):
    a = np.load(path)
    special = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}
    def num(f):
        if f is None: return 0
        if isinstance(f, str):
            if f not in special: raise ValueError(f)
            return special[f]
        return f
    try:
        fill = complex(num(fill[0]), num(fill[1])) if isinstance(fill, list) else num(fill)
    except (ValueError, TypeError):
        out.append(None); continue
    s = a[(0,) * (a.ndim - 2)]
    step = -(-max(s.shape) // 1024)
    s = s[::step, ::step]
    with np.errstate(invalid="ignore"):
        v = np.abs(s).astype(np.float64) if np.iscomplexobj(s) else s.astype(np.float64)
        bad = ~np.isfinite(v)
        if s.dtype != np.bool_:  # booleans are black and white, whatever their fill value
            bad |= s == np.array(fill).astype(s.dtype)
    if s.dtype == np.bool_:
        lo, hi = 0.0, 1.0
    elif (~bad).any():
        lo, hi = v[~bad].min(), v[~bad].max()
    else:
        lo, hi = 0.0, 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        g = np.floor((v - lo) / (hi - lo) * 255 + 0.5) if hi > lo else np.full(v.shape, 255.0)
    g[bad] = 0
    out.append([s.shape[0], s.shape[1], g.astype(np.uint8).tobytes().hex()])
print(json.dumps(out))
"#;
    let input = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(input.path(), serde_json::to_vec(items).unwrap()).unwrap();
    let out = Command::new("python3")
        .args(["-c", script, input.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "numpy: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    doc.iter()
        .map(|v| {
            let v = v.as_array()?;
            let hex = v[2].as_str().unwrap();
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            Some((
                v[0].as_u64().unwrap() as u32,
                v[1].as_u64().unwrap() as u32,
                bytes,
            ))
        })
        .collect()
}

/// Decodes a grey 8-bit PNG: `(height, width, pixels)`.
fn decode_png(png_bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Grayscale);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    buf.truncate(info.buffer_size());
    (info.height, info.width, buf)
}

#[test]
fn previews_show_the_first_slice_scaled_as_numpy_computes_it() {
    let mut compared = 0;
    for case in every_case() {
        let view = open(&case);
        let nodes: Vec<_> = case
            .nodes
            .iter()
            .filter(|n| n.has_preview() && n.expect.is_none())
            .collect();
        let items: Vec<(String, Value)> = nodes
            .iter()
            .map(|n| {
                // The fill value as the array's metadata (its `A.json`) states it.
                let doc = read_json(&view, &format!("{}.json", case.file_of(n)));
                let fill = doc.get("fill_value").cloned().unwrap_or(Value::Null);
                (n.npy.as_ref().unwrap().to_str().unwrap().to_string(), fill)
            })
            .collect();
        if items.is_empty() {
            continue;
        }
        for (node, expected) in nodes.iter().zip(numpy_previews(&items)) {
            let path = format!("{}.png", case.file_of(node));
            let ino = view
                .resolve(&path)
                .unwrap_or_else(|e| panic!("{}: {path}: {e:?}", case.name));
            assert_eq!(
                view.getattr(ino).unwrap().size,
                0,
                "rendered by stat: {path}"
            );
            assert!(view.direct_io(ino));
            view.open(ino).unwrap();
            let size = view.getattr(ino).unwrap().size;
            assert!(size > 0, "{}: {path}", case.name);
            let png_bytes = view.read(ino, 0, size as u32).unwrap();
            assert_eq!(png_bytes.len() as u64, size);
            let Some(expected) = expected else { continue };
            assert_eq!(decode_png(&png_bytes), expected, "{}: {path}", case.name);
            compared += 1;
        }
    }
    assert!(compared > 20, "only {compared} previews compared");
}

#[test]
fn large_slices_are_strided_to_at_most_1024_pixels() {
    use zarrfs::store::MemoryStore;
    let mut s = MemoryStore::new();
    s.insert(".zgroup", r#"{"zarr_format": 2}"#);
    s.insert(
        "big/.zarray",
        r#"{"zarr_format": 2, "shape": [2, 3000, 2500], "chunks": [1, 1000, 1000], "dtype": "<u2", "compressor": null, "fill_value": 7, "order": "C", "filters": null}"#,
    );
    // Only the chunks of the first slice exist; element (0, r, c) is r + c.
    for (ci, cj) in (0..3).flat_map(|i| (0..3).map(move |j| (i, j))) {
        let mut chunk = Vec::new();
        for r in 0..1000u64 {
            for c in 0..1000u64 {
                let (r, c) = (ci * 1000 + r, cj * 1000 + c);
                chunk.extend_from_slice(&((r + c) as u16).to_le_bytes());
            }
        }
        s.insert(format!("big/0.{ci}.{cj}"), chunk);
    }
    let view = view::from_store(Arc::new(s), "mem", 256 << 20, &Default::default()).unwrap();
    let ino = view.resolve("big.png").unwrap();
    view.open(ino).unwrap();
    let size = view.getattr(ino).unwrap().size;
    let (h, w, px) = decode_png(&view.read(ino, 0, size as u32).unwrap());
    // step = ceil(3000 / 1024) = 3: rows 0, 3, ... 2997; columns 0, 3, ... 2499.
    assert_eq!((h, w), (1000, 834));
    // Sampled values r + c are multiples of 3, so none is the fill 7: 0 is the minimum.
    let hi = (2997 + 2499) as f64;
    for (i, &p) in px.iter().enumerate() {
        let v = ((i / 834 * 3) + (i % 834 * 3)) as f64;
        assert_eq!(p, (v / hi * 255.0 + 0.5).floor() as u8, "pixel {i}");
    }
    // Only the nine chunks of the first slice were decoded.
    assert_eq!(view.cache().stats().loads, 9);
    assert_eq!(px[0], 0, "0 is the minimum");
    assert_eq!(*px.last().unwrap(), 255, "the maximum");
}

#[test]
fn booleans_are_black_and_white_whatever_their_fill_value() {
    use zarrfs::store::MemoryStore;
    let mut s = MemoryStore::new();
    s.insert(".zgroup", r#"{"zarr_format": 2}"#);
    s.insert(
        "b/.zarray",
        r#"{"zarr_format": 2, "shape": [2, 4], "chunks": [2, 4], "dtype": "|b1", "compressor": null, "fill_value": true, "order": "C", "filters": null}"#,
    );
    s.insert("b/0.0", vec![1u8, 0, 1, 0, 0, 1, 0, 1]);
    let view = view::from_store(Arc::new(s), "mem", 1 << 20, &Default::default()).unwrap();
    let ino = view.resolve("b.png").unwrap();
    view.open(ino).unwrap();
    let size = view.getattr(ino).unwrap().size;
    let (h, w, px) = decode_png(&view.read(ino, 0, size as u32).unwrap());
    assert_eq!((h, w), (2, 4));
    assert_eq!(px, [255, 0, 255, 0, 0, 255, 0, 255]);
}

#[test]
fn arrays_whose_first_slice_needs_too_many_chunk_bytes_have_no_preview() {
    use zarrfs::store::MemoryStore;
    let mut s = MemoryStore::new();
    s.insert(".zgroup", r#"{"zarr_format": 2}"#);
    // One 3.2 GB chunk holds the first slice: over the 512 MiB a preview may decode.
    s.insert(
        "huge/.zarray",
        r#"{"zarr_format": 2, "shape": [20000, 20000], "chunks": [20000, 20000], "dtype": "<f8", "compressor": null, "fill_value": 0, "order": "C", "filters": null}"#,
    );
    s.insert(
        "fine/.zarray",
        r#"{"zarr_format": 2, "shape": [3, 20000, 20000], "chunks": [1, 2000, 2000], "dtype": "<u1", "compressor": null, "fill_value": 0, "order": "C", "filters": null}"#,
    );
    let view = view::from_store(Arc::new(s), "mem", 8 << 30, &Default::default()).unwrap();
    assert_eq!(view.resolve("huge.png"), Err(ViewError::NotFound));
    assert!(view.resolve("huge.npy").is_ok());
    assert!(view.resolve("fine.png").is_ok());
}

#[test]
fn a_preview_loads_each_chunk_of_its_slice_once_whatever_the_cache_holds() {
    use zarrfs::store::{CountingStore, MemoryStore};
    let mut s = MemoryStore::new();
    s.insert(".zgroup", r#"{"zarr_format": 2}"#);
    // One band of two 8 MiB chunks: more than the 12 MiB cache holds at once.
    s.insert(
        "img/.zarray",
        r#"{"zarr_format": 2, "shape": [1, 2048, 2048], "chunks": [1, 2048, 1024], "dtype": "<f4", "compressor": null, "fill_value": 0, "order": "C", "filters": null}"#,
    );
    // Element (0, r, c) is r + c.
    for cj in 0..2u64 {
        let mut chunk = Vec::with_capacity(8 << 20);
        for r in 0..2048u64 {
            for c in 0..1024u64 {
                chunk.extend_from_slice(&((r + cj * 1024 + c) as f32).to_le_bytes());
            }
        }
        s.insert(format!("img/0.0.{cj}"), chunk);
    }
    let (store, counts) = CountingStore::new(Box::new(s));
    let view = view::from_store(Arc::new(store), "mem", 12 << 20, &Default::default()).unwrap();
    let ino = view.resolve("img.png").unwrap();
    let before = counts.requests();
    view.open(ino).unwrap();
    let size = view.getattr(ino).unwrap().size;
    let (h, w, px) = decode_png(&view.read(ino, 0, size as u32).unwrap());
    assert_eq!(view.cache().stats().loads, 2, "each chunk decoded once");
    assert_eq!(counts.requests() - before, 2, "each chunk requested once");
    // step = 2: rows and columns 0, 2, ... 2046; values 2i + 2j, the first (0) the fill value
    // (black), the others scaled from 2 to 4092.
    assert_eq!((h, w), (1024, 1024));
    assert_eq!(px[0], 0);
    for (i, &p) in px.iter().enumerate().skip(1) {
        let v = (2 * (i / 1024) + 2 * (i % 1024)) as f64;
        let level = (v - 2.0) / 4090.0 * 255.0;
        assert_eq!(p, level.round() as u8, "pixel {i}");
    }
}

#[test]
fn attribute_values_longer_than_getxattr_returns_are_left_out() {
    use zarrfs::store::MemoryStore;
    let mut s = MemoryStore::new();
    s.insert(".zgroup", r#"{"zarr_format": 2}"#);
    s.insert("big/.zgroup", r#"{"zarr_format": 2}"#);
    // `user.zarr.attributes` is `{"t":"xxx..."}`: 8 bytes more than the text.
    let attrs = |len: usize| format!(r#"{{"t": "{}"}}"#, "x".repeat(len));
    s.insert("big/.zattrs", attrs(65_536 - 7));
    s.insert("fits/.zgroup", r#"{"zarr_format": 2}"#);
    s.insert("fits/.zattrs", attrs(65_536 - 8));
    let view = view::from_store(Arc::new(s), "mem", 1 << 20, &Default::default()).unwrap();
    let names = |path: &str| match view.listxattr(view.resolve(path).unwrap(), 4096).unwrap() {
        XattrReply::Data(names) => names,
        XattrReply::Size(_) => panic!("asked for the names"),
    };
    let fits = view.resolve("fits").unwrap();
    assert_eq!(names("fits"), b"user.zarr.format\0user.zarr.attributes\0");
    assert_eq!(
        view.getxattr(fits, "user.zarr.attributes", 0).unwrap(),
        XattrReply::Size(65_536)
    );
    let big = view.resolve("big").unwrap();
    assert_eq!(names("big"), b"user.zarr.format\0");
    assert_eq!(
        view.getxattr(big, "user.zarr.attributes", 0),
        Err(ViewError::NoAttribute)
    );
    assert_eq!(
        view.getxattr(big, "user.zarr.format", 0).unwrap(),
        XattrReply::Size(1)
    );
}
