//! The cache directory under a low limit of open descriptors. The limit is set for this whole
//! process: the tests here run one at a time.

mod common;

use common::float_store::{expected, file_with_ext, files, write_floats, write_store, N};
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
struct Limit(Rlimit, u64);

impl Limit {
    fn set(soft: u64) -> Self {
        let old = getrlimit(Resource::Nofile);
        let low = Rlimit {
            current: Some(soft),
            maximum: old.maximum,
        };
        setrlimit(Resource::Nofile, low).unwrap();
        Limit(old, soft)
    }

    /// Arrays a cache directory opened now writes at once (see `BackingDir::open`).
    fn writers(&self) -> usize {
        (self.1 / 8).clamp(8, 512) as usize
    }

    /// Descriptors of backing files a cache directory opened now keeps open.
    fn kept(&self) -> usize {
        (self.1 / 4).clamp(16, 1024) as usize
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

/// The local file the kernel would read `name` from (passthrough), if any.
fn passthrough(v: &View, name: &str) -> Option<std::fs::File> {
    let ino = v.resolve(name).unwrap();
    let fh = v.open(ino).unwrap();
    let file = v.passthrough_file(ino);
    v.release(fh);
    file
}

/// The bytes of `file` (read at offsets: its descriptor may be shared).
fn contents(file: &std::fs::File) -> Vec<u8> {
    let mut bytes = vec![0; file.metadata().unwrap().len() as usize];
    std::os::unix::fs::FileExt::read_exact_at(file, &mut bytes, 0).unwrap();
    bytes
}

/// Replaces `path` by a copy of itself: the same bytes in another file, as another mount
/// evicting it and writing it again leaves it.
fn replace_by_copy(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    std::fs::remove_file(path).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Writes `n` arrays `a0`.. of 16000 bytes into `store` and returns their bytes.
fn small_arrays(store: &Path, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| write_floats(store, &format!("a{i}"), (2000, 1000), i as f64 + 1.0))
        .collect()
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

#[test]
fn arrays_let_go_past_the_most_written_at_once_resume_where_they_stopped() {
    let _one = ONE_AT_A_TIME.lock();
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let limit = Limit::set(open_fds() + 64);
    let (writers, arrays) = (limit.writers(), limit.writers() * 2 + 3);
    let want: Vec<Vec<u8>> = (0..arrays)
        .map(|i| write_floats(store.path(), &format!("a{i}"), (20_000, 5000), i as f64))
        .collect();
    let dir = BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
    let v = view(store.path(), &dir);
    // Each read in part: only the `writers` opened last are still written (and locked).
    for (i, want) in want.iter().enumerate() {
        assert_eq!(read(&v, &format!("a{i}"), 40_000), want[..40_000], "a{i}");
    }
    assert_eq!(files(cache.path(), "lock"), writers);
    assert_eq!(files(cache.path(), "part"), arrays);
    assert_eq!(files(cache.path(), "map"), arrays);
    // Read whole: the 10 blocks each had written come from its file, resumed if let go.
    let hits = dir.hit_bytes();
    for (i, want) in want.iter().enumerate() {
        assert_eq!(&read(&v, &format!("a{i}"), 160_000), want, "a{i}");
    }
    assert_eq!(dir.hit_bytes() - hits, arrays as u64 * 40_960);
    drop(v);
    drop(limit);
    assert_eq!(files(cache.path(), "data"), arrays);
    assert_eq!(files(cache.path(), "sum"), arrays);
    for left in ["part", "map", "lock"] {
        assert_eq!(files(cache.path(), left), 0, ".{left}");
    }
}

#[test]
fn a_partial_file_replaced_behind_the_mounts_back_turns_no_writing_off() {
    let _one = ONE_AT_A_TIME.lock();
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let limit = Limit::set(open_fds() + 64);
    let kept = limit.kept();
    let want = small_arrays(store.path(), kept + 1);
    let big = write_floats(store.path(), "big", (20_000, 5000), 0.5);
    let dir = BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
    let first = view(store.path(), &dir);
    for (i, want) in want[..kept].iter().enumerate() {
        assert_eq!(&read(&first, &format!("a{i}"), 16_000), want, "a{i}");
    }
    drop(first);
    let v = view(store.path(), &dir);
    assert_eq!(read(&v, "big", 40_000), big[..40_000]);
    // Its file replaced, then its descriptor closed to keep those of `kept` others open.
    replace_by_copy(&file_with_ext(cache.path(), "part"));
    for (i, want) in want[..kept].iter().enumerate() {
        assert_eq!(&read(&v, &format!("a{i}"), 16_000), want, "a{i}");
    }
    // Its file is gone for this mount: served decoded, and writing goes on for the others.
    assert_eq!(read(&v, "big", 160_000), big);
    assert_eq!(&read(&v, &format!("a{kept}"), 16_000), &want[kept]);
    drop(v);
    drop(limit);
    assert_eq!(files(cache.path(), "data"), kept + 1);
}

#[test]
fn an_npy_file_replaced_since_it_was_first_opened_is_served_with_passthrough_again() {
    let _one = ONE_AT_A_TIME.lock();
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let limit = Limit::set(open_fds() + 64);
    let kept = limit.kept();
    let want = small_arrays(store.path(), kept + 1);
    let dir = BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
    let first = view(store.path(), &dir);
    for (i, want) in want.iter().enumerate() {
        assert_eq!(&read(&first, &format!("a{i}"), 16_000), want, "a{i}");
    }
    drop(first);
    // The first open of `a0.npy` writes its file (dropping the view waits for it).
    let first = view(store.path(), &dir);
    assert!(passthrough(&first, "a0.npy").is_none());
    drop(first);
    let v = view(store.path(), &dir);
    let npy = contents(&passthrough(&v, "a0.npy").unwrap());
    // Replaced (as another mount evicting it and writing it again would), then its
    // descriptor closed to keep those of `kept` others open.
    replace_by_copy(&file_with_ext(cache.path(), "npy"));
    for (i, want) in want[1..].iter().enumerate() {
        assert_eq!(&read(&v, &format!("a{}", i + 1), 16_000), want);
    }
    let again = passthrough(&v, "a0.npy").expect("a0.npy on local disk again");
    assert_eq!(contents(&again), npy);
    assert_eq!(npy[npy.len() - 16_000..], want[0]);
    drop(v);
    drop(limit);
}
