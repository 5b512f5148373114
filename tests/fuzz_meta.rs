//! Mutation fuzzing of the metadata parsers: every metadata document of the fixture stores
//! (`.zarray`, `.zgroup`, `.zattrs`, `.zmetadata`, `zarr.json`, NCZarr's), mutated byte-wise
//! and as JSON (leaves set to extreme numbers, hostile names and types, keys renamed), loaded with
//! `meta::Tree` and rendered by the view, whose files are then stat'ed and read.
//! Nothing may panic, and no allocation may exceed the bound. See `fuzz_support`.

mod fuzz_support;

use fuzz_support::{
    fixtures, mutate, run, save_finding, take_largest_allocation, Rng, MAX_ALLOCATION,
};
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use zarrfs::cache::ChunkCache;
use zarrfs::meta::{LoadOptions, StoreRef, Tree};
use zarrfs::store::{MemoryStore, Store};
use zarrfs::view::{FileKind, View};

#[global_allocator]
static ALLOC: fuzz_support::CountingAlloc = fuzz_support::CountingAlloc;

/// Numbers that break shapes, sizes and counts.
const NUMBERS: [&str; 9] = [
    "18446744073709551615",
    "18446744073709551616",
    "-1",
    "0",
    "4611686018427387904",
    "9223372036854775807",
    "1e308",
    "-9223372036854775808",
    "4294967296",
];
/// Strings that break names and keys.
const PATHS: [&str; 5] = ["", "..", "/abs", "../../escape", "a/../../b"];
/// Strings that break data types (the sizes are what matters).
const HUGE_TYPES: [&str; 3] = [
    ">U4611686018427387904",
    "|S1000000000",
    "V18446744073709551615",
];
/// Other strings that break types and codecs.
const STRINGS: [&str; 5] = ["<f16", "\u{0}", "nosuch", "NaN", "gzip"];

/// The key paths of every leaf (and empty container) of `v`.
fn leaves(v: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(m) if !m.is_empty() => m.iter().for_each(|(k, x)| {
            at.push(k.clone());
            leaves(x, at, out);
            at.pop();
        }),
        Value::Array(a) if !a.is_empty() => a.iter().enumerate().for_each(|(i, x)| {
            at.push(format!("#{i}"));
            leaves(x, at, out);
            at.pop();
        }),
        _ => out.push(at.clone()),
    }
}

fn at_path<'a>(v: &'a mut Value, path: &[String]) -> &'a mut Value {
    path.iter().fold(v, |v, k| match k.strip_prefix('#') {
        Some(i) => &mut v[i.parse::<usize>().unwrap()],
        None => &mut v[k.as_str()],
    })
}

/// `doc` parsed as JSON with one leaf replaced by a hostile value, or one object key renamed;
/// `None` when `doc` is not JSON.
fn mutate_json(doc: &[u8], rng: &mut Rng) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(doc).ok()?;
    let mut all = Vec::new();
    leaves(&v, &mut Vec::new(), &mut all);
    let path = all.get(rng.below(all.len()))?.clone();
    let pick = |list: &[&'static str], rng: &mut Rng| list[rng.below(list.len())];
    if rng.below(4) == 0 && !path.is_empty() {
        // Rename the key that leads to this leaf's innermost object entry.
        let (last, parent) = path.split_last()?;
        if let Value::Object(m) = at_path(&mut v, parent) {
            if let Some(x) = m.remove(last) {
                m.insert(pick(&PATHS, rng).to_string(), x);
            }
        }
        return serde_json::to_vec_pretty(&v).ok();
    }
    let leaf = at_path(&mut v, &path);
    *leaf = match (rng.below(6), &*leaf) {
        (0, _) => Value::Null,
        (1, _) => serde_json::json!([]),
        (2, _) => Value::String(pick(&PATHS, rng).into()),
        (3, _) => Value::String(pick(&HUGE_TYPES, rng).into()),
        (_, Value::String(_)) => Value::String(pick(&STRINGS, rng).into()),
        _ => serde_json::from_str(pick(&NUMBERS, rng)).unwrap(),
    };
    serde_json::to_vec_pretty(&v).ok()
}

/// One fixture store in memory, and one of its metadata documents.
struct Case {
    name: String,
    files: Vec<(String, Vec<u8>)>,
    doc: usize,
}

fn is_metadata(key: &str, bytes: &[u8]) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    (name.starts_with('.') || name.ends_with(".json")) && bytes.first() == Some(&b'{')
}

fn corpus() -> Vec<Case> {
    let mut cases = Vec::new();
    for store in fuzz_support::files_under(&fixtures()) {
        // The stores are the directories holding a root metadata document.
        let name = store.file_name().unwrap().to_string_lossy().into_owned();
        if !matches!(
            name.as_str(),
            ".zgroup" | ".zarray" | "zarr.json" | ".nczgroup"
        ) {
            continue;
        }
        let root = store.parent().unwrap();
        if root.extension().is_none_or(|e| e != "zarr") {
            continue;
        }
        if cases
            .iter()
            .any(|c: &Case| c.name == root.display().to_string())
        {
            continue;
        }
        let files: Vec<(String, Vec<u8>)> = fuzz_support::files_under(root)
            .into_iter()
            .map(|p| {
                let key = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                (key, std::fs::read(&p).unwrap())
            })
            .collect();
        for doc in 0..files.len() {
            if is_metadata(&files[doc].0, &files[doc].1) {
                cases.push(Case {
                    name: root.display().to_string(),
                    files: files.clone(),
                    doc,
                });
            }
        }
    }
    cases
}

/// Where a finding was made: parsing the metadata (`meta::Tree`), or rendering and
/// reading it (the view and everything under it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Meta,
    View,
}

/// Runs `f`, noting a panic or an allocation beyond the bound as a finding of `stage`.
fn watch<T>(stage: Stage, f: impl FnOnce() -> T) -> Result<T, (Stage, String)> {
    take_largest_allocation();
    let outcome = catch_unwind(AssertUnwindSafe(f));
    let largest = take_largest_allocation();
    match outcome {
        Err(_) => Err((stage, "panicked".into())),
        Ok(_) if largest > MAX_ALLOCATION => Err((stage, format!("allocated {largest} bytes"))),
        Ok(v) => Ok(v),
    }
}

/// Loads the store with document `case.doc` replaced by `input`, builds its view, and stats
/// and reads every file (but for variable-length text, whose reads wait for a full scan).
fn check(case: &Case, input: &[u8], consolidated: bool) -> Result<(), (Stage, String)> {
    let mut store = MemoryStore::new();
    for (i, (key, bytes)) in case.files.iter().enumerate() {
        let value = if i == case.doc { input } else { bytes };
        store.insert(key.as_str(), value.to_vec());
    }
    let store: Arc<dyn Store> = Arc::new(store);
    let loaded = watch(Stage::Meta, || {
        Tree::open(
            StoreRef::Shared(store.clone()),
            &LoadOptions { consolidated },
        )
        .ok()
    })?;
    let Some(tree) = loaded else { return Ok(()) };
    watch(Stage::View, || {
        let view = View::build(tree, store, Arc::new(ChunkCache::new(16 << 20)), "root");
        // Every group loaded (df's totals load the whole tree), so every inode exists.
        view.totals();
        for ino in 1..=view.len() as u64 {
            if view.direct_io(ino) {
                continue;
            }
            let Ok(attr) = view.getattr(ino) else {
                continue;
            };
            if attr.kind == FileKind::Directory {
                let _ = view.readdir(ino, 0);
                continue;
            }
            if view.open(ino).is_ok() {
                let _ = view.read(ino, 0, 4096);
                let _ = view.read(ino, attr.size.saturating_sub(100), 4096);
            }
        }
    })
}

#[test]
fn mutated_metadata_loads_or_fails_cleanly() {
    fuzz_support::cap_memory();
    let cases = corpus();
    assert!(
        cases.len() >= 100,
        "only {} metadata documents",
        cases.len()
    );
    std::panic::set_hook(Box::new(|_| {}));
    let (runs, found) = run(&cases, 0x5eed_0002, |case, rng| {
        let (_, original) = &case.files[case.doc];
        let json = (rng.below(2) == 0)
            .then(|| mutate_json(original, rng))
            .flatten();
        let input = json.unwrap_or_else(|| mutate(original, rng));
        check(case, &input, rng.below(2) == 0)
            .err()
            .map(|(stage, why)| (input, format!("{stage:?}: {why}")))
    });
    let _ = std::panic::take_hook();
    let report: Vec<String> = found
        .iter()
        .take(40)
        .enumerate()
        .map(|(n, (i, input, why))| {
            let case = &cases[*i];
            let name = format!("{n}-{}", case.files[case.doc].0.replace('/', "~"));
            let saved = save_finding("meta", &name, input);
            format!(
                "{} {}: {why} ({})",
                case.name,
                case.files[case.doc].0,
                saved.display()
            )
        })
        .collect();
    eprintln!(
        "meta: {runs} mutated documents over {} originals",
        cases.len()
    );
    eprintln!("{}", report.join("\n"));
    assert!(
        found.is_empty(),
        "{} findings:\n{}",
        found.len(),
        report.join("\n")
    );
}

/// Replays committed findings: `tests/fixtures/fuzz/meta/<store>/<key with ~ for />`.
#[test]
fn committed_metadata_findings_load_or_fail_cleanly() {
    fuzz_support::cap_memory();
    let cases = corpus();
    let mut failed = Vec::new();
    for (rel, store, key, bytes) in fuzz_support::committed("fuzz/meta") {
        let case = cases
            .iter()
            .find(|c| c.name.ends_with(&format!("/{store}")) && c.files[c.doc].0 == key)
            .unwrap_or_else(|| panic!("{rel}: no such fixture document"));
        for consolidated in [true, false] {
            if let Err((stage, why)) = check(case, &bytes, consolidated) {
                failed.push(format!("fuzz/meta/{rel}: {stage:?}: {why}"));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
