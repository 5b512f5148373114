//! Helpers of tests/hostile.rs: the manifest of the hostile corpus and its checks, a store that
//! cannot list, a log capture and a per-thread allocation counter.

#[path = "counting_alloc.rs"]
mod counting_alloc;
pub use counting_alloc::{peak_allocation, CountingAlloc};

use serde_json::Value;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};
use std::time::SystemTime;
use zarrfs::cache::ChunkCache;
use zarrfs::meta::{load_hierarchy, LoadOptions, MetaError, NodeKind, StoreRef, Tree};
use zarrfs::store::{Layer, MemoryStore, Request, Store, StoreError};
use zarrfs::view::{View, ViewError};

/// The decoded-chunk budget of the views under test.
const CACHE_BYTES: u64 = 1 << 20;

thread_local! {
    static LOGS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::Level::Info
    }

    fn log(&self, record: &log::Record) {
        let line = format!("{}", record.args());
        let _ = LOGS.try_with(|logs| logs.borrow_mut().push(line));
    }

    fn flush(&self) {}
}

/// Starts capturing this thread's log lines afresh.
pub fn capture_logs() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        log::set_logger(&Capture).expect("no other logger");
        log::set_max_level(log::LevelFilter::Info);
    });
    LOGS.with(|l| l.borrow_mut().clear());
}

/// The log lines this thread produced since [`capture_logs`].
pub fn captured_logs() -> Vec<String> {
    LOGS.with(|l| l.borrow().clone())
}

/// The name of a `MetaError` variant (`TooLarge`, `Shape`, ...).
pub fn error_variant(e: &MetaError) -> String {
    format!("{e:?}")
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect()
}

/// Loads the hierarchy of `store` and builds its view, as a mount does.
pub fn view_of(store: Arc<dyn Store>) -> Result<View, MetaError> {
    let tree = Tree::open(StoreRef::Shared(store.clone()), &LoadOptions::default())?;
    let cache = Arc::new(ChunkCache::new(CACHE_BYTES));
    Ok(View::build(tree, store, cache, "root"))
}

/// The whole file at `path`, read as `cat` would.
pub fn read_all(view: &View, path: &str) -> Result<Vec<u8>, ViewError> {
    let ino = view.resolve(path)?;
    view.open(ino)?;
    let size = view.getattr(ino)?.size;
    let mut out = Vec::new();
    while (out.len() as u64) < size {
        let want = (size - out.len() as u64).min(1 << 20) as u32;
        let got = view.read(ino, out.len() as u64, want)?;
        if got.is_empty() {
            break;
        }
        out.extend(got);
    }
    Ok(out)
}

/// A memory store that cannot list its keys, like a plain HTTP server.
pub struct NoListStore(pub MemoryStore);

impl Layer for NoListStore {
    type Step = ();

    fn inner(&self) -> Result<&dyn Store, StoreError> {
        Ok(&self.0)
    }

    fn before(&self, request: &Request<'_>) -> Result<(), StoreError> {
        match request {
            Request::List(prefix) => Err(StoreError::CannotList(format!("http://test/{prefix}"))),
            _ => Ok(()),
        }
    }

    /// Several requests at once, as over HTTP (the memory store under it says one): the
    /// hierarchy is walked concurrently, as it is from a real server.
    fn parallelism(&self) -> usize {
        4
    }

    fn mtime(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH
    }

    fn describe(&self) -> String {
        "http://test".into()
    }
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// One store of the hostile corpus and its expected outcome (see the fields documented in
/// scripts/make_hostile_fixtures.py).
#[derive(Debug)]
pub struct Case {
    pub name: String,
    pub store: PathBuf,
    pub spec: Value,
}

impl Case {
    /// The stores of `dir/manifest.json`.
    pub fn load_manifest(dir: &Path) -> Vec<Case> {
        let text = std::fs::read_to_string(dir.join("manifest.json")).expect("manifest");
        let doc: Value = serde_json::from_str(&text).expect("manifest JSON");
        doc["stores"]
            .as_array()
            .expect("stores")
            .iter()
            .map(|s| Case {
                name: s["name"].as_str().expect("name").to_string(),
                store: dir.join(s["store"].as_str().expect("store")),
                spec: s.clone(),
            })
            .collect()
    }

    fn strings(&self, field: &str) -> Vec<&str> {
        self.spec[field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect()
    }

    fn map(&self, field: &str) -> Vec<(&str, &Value)> {
        self.spec[field]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v))
            .collect()
    }

    /// Checks the store against its expected outcome; returns every mismatch.
    pub fn check(&self) -> Vec<String> {
        capture_logs();
        let mut errors = Vec::new();
        let peak = peak_allocation(|| self.check_view(&mut errors));
        for want in self.strings("log") {
            let logs = captured_logs();
            if !logs.iter().any(|l| l.contains(want)) {
                errors.push(format!("no log line holds {want:?}; lines: {logs:#?}"));
            }
        }
        if let Some(max) = self.spec["max_alloc"].as_u64() {
            if peak as u64 > max {
                errors.push(format!("allocated {peak} bytes at once, more than {max}"));
            }
        }
        errors
    }

    fn check_view(&self, errors: &mut Vec<String>) {
        let store: Arc<dyn Store> = match zarrfs::store::open(self.store.to_str().unwrap()) {
            Ok(s) => Arc::from(s),
            Err(e) => return errors.push(format!("cannot open: {e}")),
        };
        let expected_load = self.spec["load"].as_str().unwrap_or("ok");
        let h = match (
            load_hierarchy(store.as_ref(), &LoadOptions::default()),
            expected_load,
        ) {
            (Ok(h), "ok") => h,
            (Err(e), "ok") => return errors.push(format!("load failed: {e}")),
            (Ok(_), want) => return errors.push(format!("loaded, expected {want}")),
            (Err(e), want) => {
                if error_variant(&e) != want {
                    errors.push(format!("load failed with {e:?}, expected {want}"));
                }
                return;
            }
        };
        for (path, want) in self.map("node_errors") {
            let got = match h.nodes.iter().find(|n| n.path == path).map(|n| &n.kind) {
                Some(NodeKind::Array(Err(e))) => error_variant(e),
                Some(other) => format!("{other:?}"),
                None => "absent".into(),
            };
            if Some(got.as_str()) != want.as_str() {
                errors.push(format!("node {path:?}: {got}, expected {want}"));
            }
        }
        let view = view_of(store).expect("loaded above");
        for path in self.strings("show") {
            if let Err(e) = view.resolve(path) {
                errors.push(format!("{path:?} does not show: {e:?}"));
            }
        }
        for path in self.strings("absent") {
            if view.resolve(path) != Err(ViewError::NotFound) {
                errors.push(format!("{path:?} shows"));
            }
        }
        for (dir, want) in self.map("dirs") {
            let got: Vec<String> = view
                .resolve(dir)
                .and_then(|ino| view.readdir(ino, 2))
                .map(|entries| entries.into_iter().map(|e| e.name).collect())
                .unwrap_or_default();
            // The netCDF files every group shows (tests/netcdf_*.rs check them).
            let got: Vec<String> = got
                .into_iter()
                .filter(|n| n != ".header.cdl" && n != ".ncstream")
                .collect();
            // Every group directory holds a `.zom.json` beside its `.group.json`; the root also
            // holds `.zarrfs`.
            let want: Vec<&str> = want
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .flat_map(|n| match n {
                    ".group.json" => vec![n, ".zom.json"],
                    _ => vec![n],
                })
                .collect();
            let mut want = want;
            if dir.is_empty() {
                want.push(".zarrfs");
                want.sort();
            }
            if got != want {
                errors.push(format!(
                    "directory {dir:?} lists {got:?}, expected {want:?}"
                ));
            }
        }
        for (path, want) in self.map("size") {
            let got = view
                .resolve(path)
                .and_then(|ino| view.getattr(ino))
                .map(|a| a.size);
            if got != Ok(want.as_u64().unwrap()) {
                errors.push(format!("{path:?} has size {got:?}, expected {want}"));
            }
        }
        for (path, hex) in self.map("bytes") {
            match read_all(&view, path) {
                Ok(bytes) if bytes == unhex(hex.as_str().unwrap()) => {}
                Ok(bytes) => errors.push(format!("{path:?} reads {bytes:02x?}, expected {hex}")),
                Err(e) => errors.push(format!("{path:?} fails to read: {e:?}")),
            }
        }
        for path in self.strings("eio") {
            match read_all(&view, path) {
                Err(ViewError::Io(_)) => {}
                other => errors.push(format!(
                    "{path:?} reads {:?}, expected EIO",
                    other.map(|b| b.len())
                )),
            }
        }
        for read in self.spec["reads"].as_array().into_iter().flatten() {
            let path = read[0].as_str().unwrap();
            let (offset, len) = (read[1].as_u64().unwrap(), read[2].as_u64().unwrap() as u32);
            let got = view
                .resolve(path)
                .and_then(|ino| view.open(ino).and_then(|_| view.read(ino, offset, len)))
                .map_err(ViewError::errno);
            let want = match read[3].as_str() {
                Some(hex) => Ok(unhex(hex)),
                None => Err(libc::EIO),
            };
            if got != want {
                errors.push(format!(
                    "{path:?} at {offset}+{len}: {got:02x?}, expected {want:02x?}"
                ));
            }
        }
    }
}
