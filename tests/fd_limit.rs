//! The cache directory under a low limit of open descriptors. The limit is set for this whole
//! process: the tests here run one at a time.

mod common;

use common::float_store::{expected, files, write_floats, write_store, N};
use parking_lot::Mutex;
use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
use std::path::Path;
use std::sync::Arc;
use zarrfs::backing::{BackingDir, Identity};
use zarrfs::meta::LoadOptions;
use zarrfs::store::{self, Store};
use zarrfs::view::View;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Descriptors this process has open.
fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").unwrap().count() as u64
}

/// The soft limit of open descriptors set to `soft` while it lives.
struct Limit(Rlimit);

impl Limit {
    fn set(soft: u64) -> Self {
        let old = getrlimit(Resource::Nofile);
        let low = Rlimit {
            current: Some(soft),
            maximum: old.maximum,
        };
        setrlimit(Resource::Nofile, low).unwrap();
        Limit(old)
    }
}

impl Drop for Limit {
    fn drop(&mut self) {
        setrlimit(Resource::Nofile, self.0).unwrap();
    }
}

fn view(store: &Path, dir: &Arc<BackingDir>) -> View {
    let location = store.to_str().unwrap();
    let s: Arc<dyn Store> = Arc::from(store::open(location).unwrap());
    let mut v =
        zarrfs::view::from_store(s.clone(), location, 64 << 20, &LoadOptions::default()).unwrap();
    v.set_backing_dir(dir.clone(), s, location);
    v
}

fn read(v: &View, name: &str, len: u32) -> Vec<u8> {
    let ino = v.resolve(name).unwrap();
    let fh = v.open(ino).unwrap();
    let bytes = v.read(ino, 0, len);
    v.release(fh);
    bytes.unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

#[test]
fn many_arrays_are_served_and_cached_under_a_low_descriptor_limit() {
    let _one = ONE_AT_A_TIME.lock();
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let arrays = 300;
    let want: Vec<Vec<u8>> = (0..arrays)
        .map(|i| write_floats(store.path(), &format!("a{i}"), (600, 600), i as f64))
        .collect();
    let limit = Limit::set(open_fds() + 64);
    let dir = BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
    let v = view(store.path(), &dir);
    for (i, want) in want.iter().enumerate() {
        assert_eq!(&read(&v, &format!("a{i}"), 4800), want, "a{i}");
    }
    // Read again, from the backing files.
    let hits = dir.hit_bytes();
    for (i, want) in want.iter().enumerate() {
        assert_eq!(&read(&v, &format!("a{i}"), 4800), want, "a{i}");
    }
    assert_eq!(dir.hit_bytes() - hits, arrays as u64 * 4800);
    drop(v);
    drop(limit);
    // Every array was written, the last ones too, and no lock is left behind.
    assert_eq!(files(cache.path(), "data"), arrays);
    assert_eq!(files(cache.path(), "sum"), arrays);
    assert_eq!(files(cache.path(), "part"), 0);
    assert_eq!(files(cache.path(), "lock"), 0);
}

#[test]
fn a_complete_file_that_cannot_be_checked_for_want_of_descriptors_is_kept() {
    let _one = ONE_AT_A_TIME.lock();
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_store(store.path(), 1.5);
    let dir = BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
    let v = view(store.path(), &dir);
    assert_eq!(read(&v, "a", (N * 8) as u32), expected(1.5));
    // The array's identity, as the view makes it (its document as `a.json` shows it).
    let metadata = read(&v, "a.json", 1 << 16);
    drop(v);
    assert_eq!(files(cache.path(), "data"), 1);
    let location = store.path().to_str().unwrap();
    let s = store::open(location).unwrap();
    let (id, _) = Identity::of(s.as_ref(), location, ("a", "a"), &metadata).unwrap();
    let size = (N * 8) as u64;
    let dir = BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
    assert!(dir.attach(&id, size, "a").unwrap().is_complete());

    // One descriptor left: `KEY.data` opens, `KEY.sum` does not.
    let limit = Limit::set(open_fds() + 16);
    let mut taken = Vec::new();
    while let Ok(f) = std::fs::File::open("/dev/null") {
        taken.push(f);
    }
    taken.pop();
    let squeezed = dir.attach(&id, size, "a");
    drop(taken);
    drop(limit);
    assert!(squeezed.is_none());
    assert_eq!(files(cache.path(), "data"), 1);
    assert_eq!(files(cache.path(), "sum"), 1);
    // Checked at the next attach, and served.
    let file = dir.attach(&id, size, "a").unwrap();
    assert!(file.is_complete());
    let mut bytes = Vec::new();
    file.read_into(0, size, &mut bytes).unwrap();
    assert_eq!(bytes, expected(1.5));
}
