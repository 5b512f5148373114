//! Mutation fuzzing of every decoder: each chunk object (or shard) of the fixture stores, with
//! random mutations, through the array's whole decode chain (`fetch::ChunkReader`, which is
//! what reads use). Nothing may panic, every failure is a typed error, and no allocation may
//! exceed the bound. See `fuzz_support` for the method and `ZARRFS_FUZZ_SECONDS`.

mod fuzz_support;

use fuzz_support::{fixtures, mutate, run, save_finding, take_largest_allocation, MAX_ALLOCATION};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;
use zarrfs::fetch::{ChunkReader, FetchCause, Uncached};
use zarrfs::meta::{load_hierarchy, LoadOptions, NodeKind};
use zarrfs::store::{too_large, DirStore, Entry, Latency, Object, ObjectMeta, Store, StoreError};

/// The cache budget the readers are built for.
const CACHE_SIZE: u64 = 64 << 20;

#[global_allocator]
static ALLOC: fuzz_support::CountingAlloc = fuzz_support::CountingAlloc;

/// A directory store whose value under one key is replaced by test bytes.
struct Swapped {
    inner: DirStore,
    swap: Mutex<Option<(String, Vec<u8>)>>,
}

impl Swapped {
    fn value(&self, key: &str) -> Option<Vec<u8>> {
        let swap = self.swap.lock();
        swap.as_ref()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }
}

impl Store for Swapped {
    fn get_bounded(&self, key: &str, max: u64) -> Result<Option<Object>, StoreError> {
        match self.value(key) {
            Some(bytes) => {
                too_large(key, bytes.len() as u64, max)?;
                Ok(Some(Object { bytes, mtime: None }))
            }
            None => self.inner.get_bounded(key, max),
        }
    }
    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError> {
        match self.value(key) {
            Some(v) => {
                let s = (start.min(v.len() as u64)) as usize;
                let e = (start.saturating_add(len).min(v.len() as u64)) as usize;
                Ok(Some(v[s..e].to_vec()))
            }
            None => self.inner.get_range(key, start, len),
        }
    }
    fn get_range_into(
        &self,
        key: &str,
        start: u64,
        len: u64,
        tag: Option<&str>,
        buf: &mut Vec<u8>,
    ) -> Result<bool, StoreError> {
        if self.value(key).is_none() {
            return self.inner.get_range_into(key, start, len, tag, buf);
        }
        let got = self.get_range(key, start, len)?;
        let present = got.is_some();
        *buf = got.unwrap_or_default();
        Ok(present)
    }
    fn get_suffix(&self, key: &str, len: u64) -> Result<Option<(Vec<u8>, ObjectMeta)>, StoreError> {
        match self.value(key) {
            Some(v) => {
                let start = v.len().saturating_sub(len as usize);
                let meta = ObjectMeta {
                    size: v.len() as u64,
                    mtime: None,
                    tag: None,
                };
                Ok(Some((v[start..].to_vec(), meta)))
            }
            None => self.inner.get_suffix(key, len),
        }
    }
    fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        match self.value(key) {
            Some(v) => Ok(Some(ObjectMeta {
                size: v.len() as u64,
                mtime: None,
                tag: None,
            })),
            None => self.inner.head(key),
        }
    }
    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        self.inner.list_dir(prefix)
    }
    fn version(&self) -> Option<String> {
        self.inner.version()
    }
    fn about(&self) -> Vec<(String, String)> {
        self.inner.about()
    }
    fn parallelism(&self) -> usize {
        self.inner.parallelism()
    }
    fn latency(&self) -> Latency {
        self.inner.latency()
    }
    fn mtime(&self) -> SystemTime {
        self.inner.mtime()
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// One stored chunk object (or shard) and a reader of its array over a [`Swapped`] store.
struct Case {
    name: String,
    store: Arc<Swapped>,
    reader: ChunkReader,
    key: String,
    idx: Vec<u64>,
    original: Vec<u8>,
    /// Whether the manifest says this array's stored objects may fail to decode.
    may_fail: bool,
}

/// Every directory store the fixture manifests list, with the arrays the manifest says fail
/// to read (a node's `expect` "eio" or "partial_eio", or the hostile manifest's `eio` list).
fn fixture_stores() -> Vec<(PathBuf, BTreeSet<String>)> {
    let mut stores = BTreeMap::new();
    for manifest in fuzz_support::files_under(&fixtures()) {
        if manifest.file_name().is_some_and(|n| n == "manifest.json") {
            let doc: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
            for entry in doc["stores"].as_array().into_iter().flatten() {
                let Some(name) = entry["store"].as_str() else {
                    continue;
                };
                let path = manifest.parent().unwrap().join(name);
                if path.is_dir() {
                    let failing = entry["nodes"].as_array().into_iter().flatten();
                    let failing = failing
                        .filter(|n| n["expect"].as_str().is_some_and(|e| e.ends_with("eio")))
                        .filter_map(|n| n["path"].as_str())
                        .chain(
                            entry["eio"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .flat_map(|p| p.as_str()),
                        )
                        .map(str::to_owned);
                    stores
                        .entry(path)
                        .or_insert_with(BTreeSet::new)
                        .extend(failing);
                }
            }
        }
    }
    stores.into_iter().collect()
}

/// The cases of one store: for every readable array, each stored object once.
fn cases_of(root: &Path, failing: &BTreeSet<String>) -> Vec<Case> {
    let store = Arc::new(Swapped {
        inner: DirStore::new(root).unwrap(),
        swap: Mutex::new(None),
    });
    let Ok(h) = load_hierarchy(store.as_ref(), &LoadOptions::default()) else {
        return Vec::new();
    };
    let mut cases = Vec::new();
    for node in &h.nodes {
        let NodeKind::Array(Ok(meta)) = &node.kind else {
            continue;
        };
        let dyn_store: Arc<dyn Store> = store.clone();
        // As a mount with `--cache-size 64M` reads them.
        let make = || {
            ChunkReader::new(dyn_store.clone(), &node.path, meta.clone())
                .ok()
                .map(|r| r.limit_decoded(CACHE_SIZE))
        };
        let Some(probe) = make() else { continue };
        let rcs = probe.read_chunk_shape().to_vec();
        let grid: Vec<u64> = meta
            .shape
            .iter()
            .zip(&rcs)
            .map(|(s, c)| s.div_ceil(*c))
            .collect();
        let count = zarrfs::meta::element_count(&grid).unwrap_or(u64::MAX);
        let mut seen = BTreeSet::new();
        for linear in 0..count.min(64) {
            let mut idx = vec![0; grid.len()];
            let mut rest = linear;
            for ax in (0..grid.len()).rev() {
                idx[ax] = rest % grid[ax];
                rest /= grid[ax];
            }
            let stored: Vec<u64> = idx
                .iter()
                .zip(&rcs)
                .zip(&meta.chunk_shape)
                .map(|((i, r), c)| i * r / c)
                .collect();
            let key = meta.chunk_keys.key(&stored);
            if !seen.insert(key.clone()) {
                continue;
            }
            let Ok(Some(object)) = store.inner.get(&key) else {
                continue;
            };
            cases.push(Case {
                name: format!("{}:{}", root.display(), key),
                store: store.clone(),
                reader: make().unwrap(),
                key,
                idx,
                original: object.bytes,
                // A root array shows as the file `root`, the name manifests use for it.
                may_fail: failing.contains(if node.path.is_empty() {
                    "root"
                } else {
                    &node.path
                }),
            });
        }
    }
    cases
}

/// Decodes `input` as the object of `case`; says what went wrong, if anything did.
fn check(case: &Case, input: &[u8]) -> Option<String> {
    *case.store.swap.lock() = Some((case.key.clone(), input.to_vec()));
    take_largest_allocation();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        case.reader
            .load(&case.idx, None, &mut Vec::new(), &Uncached)
    }));
    let largest = take_largest_allocation();
    *case.store.swap.lock() = None;
    match outcome {
        Err(_) => Some("panicked".into()),
        Ok(Err(e)) if e.cause == FetchCause::Panicked => Some(format!("decoder panic: {e}")),
        _ if largest > MAX_ALLOCATION => Some(format!("allocated {largest} bytes")),
        _ => None,
    }
}

#[test]
fn mutated_chunks_decode_or_fail_cleanly() {
    fuzz_support::cap_memory();
    let stores = fixture_stores();
    let cases: Vec<Case> = stores.iter().flat_map(|(s, f)| cases_of(s, f)).collect();
    assert!(
        cases.len() >= 100,
        "only {} chunk objects in the corpus",
        cases.len()
    );
    for case in &cases {
        assert_eq!(check(case, &case.original), None, "{} as stored", case.name);
        let stored = case
            .reader
            .load(&case.idx, None, &mut Vec::new(), &Uncached);
        assert!(
            case.may_fail || stored.is_ok(),
            "{} as stored: {:?}",
            case.name,
            stored.err()
        );
    }
    std::panic::set_hook(Box::new(|_| {}));
    let (runs, found) = run(&cases, 0x5eed_0001, |case, rng| {
        let input = mutate(&case.original, rng);
        check(case, &input).map(|why| (input, why))
    });
    let _ = std::panic::take_hook();
    let report: Vec<String> = found
        .iter()
        .take(20)
        .enumerate()
        .map(|(n, (i, input, why))| {
            let name = format!("{n}-{}", cases[*i].key.replace('/', "~"));
            let saved = save_finding("decoders", &name, input);
            format!(
                "{}: {why} (input saved to {})",
                cases[*i].name,
                saved.display()
            )
        })
        .collect();
    eprintln!(
        "decoders: {runs} mutated inputs over {} objects",
        cases.len()
    );
    assert!(
        found.is_empty(),
        "{} findings:\n{}",
        found.len(),
        report.join("\n")
    );
}
