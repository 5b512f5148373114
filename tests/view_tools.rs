//! The tool-facing files and answers of the view (no FUSE): `.zom.json` validated against ZEP
//! 6's JSON schemas and compared with each fixture's known structure, extended attributes with
//! size probing, and the `df` totals.

mod common;

use common::{load_manifest, npy_header_len, StoreCase};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::Command;
use zarrfs::view::{self, View, ViewError, XattrReply};

fn open(case: &StoreCase) -> View {
    view::open(
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

/// The `descr` of an expected `.npy` file's header.
fn npy_descr(npy: &[u8]) -> String {
    let header = String::from_utf8_lossy(&npy[..npy_header_len(npy)]).into_owned();
    let at = header.find("'descr': ").unwrap() + 9;
    let rest = &header[at..];
    let end = rest.find(", 'fortran_order'").unwrap();
    rest[..end].trim_matches('\'').to_string()
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
                    npy_descr(&npy),
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
    let expected: u64 = case
        .nodes
        .iter()
        .filter_map(|n| n.npy.as_ref())
        .map(|p| {
            let npy = std::fs::read(p).unwrap();
            (npy.len() - npy_header_len(&npy)) as u64
        })
        .sum();
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
