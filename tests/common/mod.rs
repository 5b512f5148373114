//! Shared test helpers: the fixture manifests, expected files, and real FUSE mounts.
#![allow(dead_code)]

pub mod float_store;
pub mod fuse_check;
pub mod mount;
pub mod servers;
pub mod string_store;
pub mod view_check;

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One node of a fixture store and what zarrfs must show for it.
#[derive(Debug, Clone)]
pub struct NodeCase {
    pub path: String,
    pub is_group: bool,
    pub json: Option<Value>,
    pub npy: Option<PathBuf>,
    pub text: Option<PathBuf>,
    /// None (healthy), "eio", "absent" or "partial_eio".
    pub expect: Option<String>,
    pub ok_range: Option<(u64, u64)>,
}

impl NodeCase {
    /// True when the array shows an `A.png`: readable, two or more dimensions, none empty, and
    /// a numeric or bool type (as its expected `.npy` header says).
    pub fn has_preview(&self) -> bool {
        if self.is_group || self.text.is_some() || self.expect.as_deref() == Some("eio") {
            return false;
        }
        let Some(npy) = self.npy.as_ref().and_then(|p| std::fs::read(p).ok()) else {
            return false;
        };
        let (descr, shape) = npy_descr_shape(&npy);
        let numeric = descr.len() >= 3 && "biufc".contains(&descr[1..2]) && !descr.contains('(');
        numeric && shape.len() >= 2 && shape.iter().all(|&d| d > 0)
    }
}

/// Bytes of every array's decoded data in a store case (the sum of its expected `A` files).
pub fn decoded_total(case: &StoreCase) -> u64 {
    case.nodes
        .iter()
        .filter_map(|n| n.npy.as_ref())
        .map(|p| {
            let npy = std::fs::read(p).unwrap();
            (npy.len() - npy_header_len(&npy)) as u64
        })
        .sum()
}

/// The `descr` and `shape` of an NPY header.
pub fn npy_descr_shape(npy: &[u8]) -> (String, Vec<u64>) {
    let header = String::from_utf8_lossy(&npy[..npy_header_len(npy)]).into_owned();
    let at = header.find("'descr': ").unwrap() + 9;
    let rest = &header[at..];
    let descr = rest[..rest.find(", 'fortran_order'").unwrap()].trim_matches('\'');
    let at = header.find("'shape': (").unwrap() + 10;
    let rest = &header[at..];
    let shape = rest[..rest.find(')').unwrap()]
        .split(',')
        .filter_map(|d| d.trim().parse().ok())
        .collect();
    (descr.to_string(), shape)
}

/// One fixture store.
#[derive(Debug, Clone)]
pub struct StoreCase {
    pub name: String,
    pub store: PathBuf,
    pub root_name: Option<String>,
    pub options: Vec<String>,
    pub nodes: Vec<NodeCase>,
}

impl StoreCase {
    /// Mount-relative path of an array's data file (`A`) or a group's directory.
    pub fn file_of(&self, node: &NodeCase) -> String {
        match (&self.root_name, node.path.is_empty()) {
            (Some(root), true) => root.clone(),
            _ => node.path.clone(),
        }
    }

    /// Every path the mount must list (directories and files), relative to the mount root.
    pub fn expected_paths(&self) -> BTreeSet<String> {
        // zarrfs's own files at the root.
        let mut out = BTreeSet::from([".zarrfs".to_string(), ".zarrfs/stats".to_string()]);
        for node in &self.nodes {
            if node.expect.as_deref() == Some("absent") {
                continue;
            }
            let p = self.file_of(node);
            if node.is_group {
                if !p.is_empty() {
                    out.insert(p.clone());
                }
                out.insert(join(&p, ".group.json"));
                out.insert(join(&p, ".header.cdl"));
                out.insert(join(&p, ".ncstream"));
                out.insert(join(&p, ".zom.json"));
            } else {
                if node.path.is_empty() {
                    // A root array is the root group's variable in the netCDF view.
                    out.insert(".header.cdl".into());
                    out.insert(".ncstream".into());
                }
                out.insert(p.clone());
                out.insert(format!("{p}.json"));
                out.insert(format!("{p}.npy"));
                if node.has_preview() {
                    out.insert(format!("{p}.png"));
                }
            }
        }
        out
    }

    /// This case mounted from `url` instead of its local store, with extra options.
    pub fn at(&self, url: String, extra: &[&str]) -> StoreCase {
        let mut c = self.clone();
        c.store = PathBuf::from(url);
        c.options.extend(extra.iter().map(|s| s.to_string()));
        c
    }

    /// The file name of the store (its directory or zip file).
    pub fn dir_name(&self) -> String {
        self.store
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    /// Arrays that must read correctly.
    pub fn healthy_arrays(&self) -> impl Iterator<Item = &NodeCase> {
        self.nodes
            .iter()
            .filter(|n| !n.is_group && n.expect.is_none())
    }
}

pub fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// The directory of the committed fixtures.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The stores of the fixture manifests (directories and zip files): the classic stores, the
/// dialects, the types of 2026 and strings in shards.
pub fn all_fixture_cases() -> Vec<StoreCase> {
    let mut cases = load_manifest("manifest.json");
    cases.extend(load_manifest("dialects/manifest.json"));
    cases.extend(load_manifest("types/manifest.json"));
    cases.extend(load_manifest(SHARDED_STRINGS));
    cases
}

/// The fixture store named `name`, of [`all_fixture_cases`].
pub fn fixture_case(name: &str) -> StoreCase {
    all_fixture_cases()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no fixture store {name}"))
}

/// The expected `A` bytes of array `path` of `case`.
pub fn expected_data(case: &StoreCase, path: &str) -> Vec<u8> {
    expected_bytes(case.nodes.iter().find(|n| n.path == path).unwrap()).1
}

/// Variable-length strings and bytes in shards, with absent inner chunks read as a non-empty
/// fill value (zarr-python 3.4; scripts/make_sharded_strings_fixture.py).
pub const SHARDED_STRINGS: &str = "sharded_strings/manifest.json";

/// Reads a manifest (relative to tests/fixtures) into store cases.
pub fn load_manifest(rel: &str) -> Vec<StoreCase> {
    let path = fixtures_dir().join(rel);
    let base = path.parent().unwrap().to_path_buf();
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let file = |v: Option<&Value>| v.and_then(Value::as_str).map(|s| base.join(s));
    doc["stores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| StoreCase {
            name: s["name"].as_str().unwrap().to_string(),
            store: base.join(s["store"].as_str().unwrap()),
            root_name: s.get("root_name").and_then(Value::as_str).map(String::from),
            options: s
                .get("options")
                .and_then(Value::as_array)
                .map(|o| o.iter().map(|x| x.as_str().unwrap().to_string()).collect())
                .unwrap_or_default(),
            nodes: s["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| NodeCase {
                    path: n["path"].as_str().unwrap().to_string(),
                    is_group: n["type"] == "group",
                    json: n.get("json").cloned(),
                    npy: file(n.get("npy")),
                    text: file(n.get("text")),
                    expect: n.get("expect").and_then(Value::as_str).map(String::from),
                    ok_range: n
                        .get("ok_range")
                        .and_then(Value::as_array)
                        .map(|r| (r[0].as_u64().unwrap(), r[1].as_u64().unwrap())),
                })
                .collect(),
        })
        .collect()
}

/// Length of an NPY file's header (magic, version, length field, dict).
pub fn npy_header_len(npy: &[u8]) -> usize {
    assert_eq!(&npy[..6], b"\x93NUMPY", "not an npy file");
    match npy[6] {
        1 => 10 + u16::from_le_bytes([npy[8], npy[9]]) as usize,
        _ => 12 + u32::from_le_bytes([npy[8], npy[9], npy[10], npy[11]]) as usize,
    }
}

/// Expected `A.npy` and `A` bytes of a node (`A` is the text file for variable-length types).
pub fn expected_bytes(node: &NodeCase) -> (Vec<u8>, Vec<u8>) {
    let npy = std::fs::read(node.npy.as_ref().expect("node has an npy")).unwrap();
    let data = match &node.text {
        Some(text) => std::fs::read(text).unwrap(),
        None => npy[npy_header_len(&npy)..].to_vec(),
    };
    (npy, data)
}

/// Runs `check` on every store of a manifest and fails with all the problems found.
pub fn check_all(manifest: &str, min_stores: usize, check: fn(&StoreCase) -> Vec<String>) {
    let cases = load_manifest(manifest);
    assert!(cases.len() >= min_stores, "{manifest} lists too few stores");
    check_cases(&cases, check);
}

/// Runs `check` on every case and fails with all the problems found.
pub fn check_cases(cases: &[StoreCase], check: fn(&StoreCase) -> Vec<String>) {
    let errors: Vec<String> = cases.iter().flat_map(check).collect();
    assert!(
        errors.is_empty(),
        "{} problems:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

/// Checks that every key of `expected` is in `actual` with the same value; returns a message otherwise.
pub fn json_subset(expected: &Value, actual: &Value) -> Result<(), String> {
    let (Some(e), Some(a)) = (expected.as_object(), actual.as_object()) else {
        return if expected == actual {
            Ok(())
        } else {
            Err(format!("{actual} != {expected}"))
        };
    };
    for (k, v) in e {
        match a.get(k) {
            None => return Err(format!("missing key {k:?}")),
            Some(got) if !json_equal(got, v) => return Err(format!("key {k:?}: {got} != {v}")),
            _ => {}
        }
    }
    Ok(())
}

/// JSON equality that treats numbers by value (1 == 1.0); integers on both sides compare
/// exactly (an f64 cannot tell 2^63 from 2^63 + 5).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if !x.is_f64() && !y.is_f64() => x == y,
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// Byte ranges worth reading from a file of `size` bytes with elements of `es` bytes and chunks
/// of `chunk_bytes`: starts, ends, odd offsets, element and chunk borders.
pub fn probe_ranges(size: u64, es: u64, chunk_bytes: u64, seed: u64) -> Vec<(u64, u64)> {
    let mut out = vec![
        (0, size),
        (0, 1),
        (size.saturating_sub(1), 1),
        (1, 7),
        (es.saturating_sub(1), es + 2),
    ];
    let mut x = seed | 1;
    for k in 1..4 {
        let border = k * chunk_bytes;
        if border < size {
            out.push((border - 1, 2));
            out.push((border.saturating_sub(3), 7 + chunk_bytes));
        }
    }
    for _ in 0..12 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let start = x % (size + 1);
        let len = (x >> 20) % (3 * chunk_bytes.max(1) + 5);
        out.push((start, len));
    }
    out
}
