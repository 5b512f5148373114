//! The cache directory of decoded arrays (`--cache-dir`), driven through the view.

mod common;

use common::float_store::{expected, file_with_ext, files, lock_held, write_store, CHUNK, N};
use common::servers;
use common::string_store;
use std::path::Path;
use std::sync::Arc;
use tempfile::TempDir;
use zarrfs::backing::BackingDir;
use zarrfs::meta::LoadOptions;
use zarrfs::store::{self, RemoteOptions, Store};
use zarrfs::view::View;

fn view(store: &Path, dir: &Arc<BackingDir>) -> View {
    let location = store.to_str().unwrap();
    view_of(Arc::from(store::open(location).unwrap()), location, dir)
}

/// A view of `s` (opened from `location`) using the cache directory `dir`.
fn view_of(s: Arc<dyn Store>, location: &str, dir: &Arc<BackingDir>) -> View {
    let mut v =
        zarrfs::view::from_store(s.clone(), location, 64 << 20, &LoadOptions::default()).unwrap();
    v.set_backing_dir(dir.clone(), s, location);
    v
}

/// A store of the array written with `value`, and a cache directory of `budget` bytes.
fn store_and_cache(value: f64, budget: u64) -> (TempDir, TempDir, Arc<BackingDir>) {
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_store(store.path(), value);
    let dir = BackingDir::open(cache.path(), Some(budget)).unwrap();
    (store, cache, dir)
}

fn read(v: &View, from: u64, len: u32) -> Vec<u8> {
    let ino = v.resolve("a").unwrap();
    let fh = v.open(ino).unwrap();
    let bytes = v.read(ino, from, len).unwrap();
    v.release(fh);
    bytes
}

#[test]
fn a_complete_array_is_served_from_its_backing_file_after_a_remount() {
    let (store, cache, dir) = store_and_cache(1.5, 1 << 30);
    assert_eq!(
        read(&view(store.path(), &dir), 0, (N * 8) as u32),
        expected(1.5)
    );
    assert_eq!(files(cache.path(), "data"), 1);
    assert_eq!(files(cache.path(), "part"), 0);
    let dir2 = BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
    let v = view(store.path(), &dir2);
    assert_eq!(read(&v, 0, (N * 8) as u32), expected(1.5));
    assert_eq!(dir2.hit_bytes(), (N * 8) as u64);
    assert!(v.passthrough_file(v.resolve("a").unwrap()).is_some());
    let stats: serde_json::Value = serde_json::from_slice(&v.stats_json()).unwrap();
    assert_eq!(stats["cache_dir"]["backing_hit_bytes"], (N * 8) as u64);
}

#[test]
fn a_partly_cached_array_mixes_cached_and_decoded_bytes() {
    let (store, cache, dir) = store_and_cache(2.0, 1 << 30);
    // The first 12 KiB, then the "daemon" goes away: no .data, the .part resumes.
    assert_eq!(
        read(&view(store.path(), &dir), 0, 12288),
        expected(2.0)[..12288]
    );
    assert_eq!(files(cache.path(), "data"), 0);
    assert_eq!(files(cache.path(), "part"), 1);
    let dir2 = BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
    let v = view(store.path(), &dir2);
    assert_eq!(read(&v, 100, (N * 8 - 100) as u32), expected(2.0)[100..]);
    assert_eq!(dir2.hit_bytes(), 12288 - 100);
    assert_eq!(read(&v, 0, (N * 8) as u32), expected(2.0));
    // Dropping the view waits for the complete file to be published.
    drop(v);
    assert_eq!(files(cache.path(), "data"), 1);
    assert_eq!(files(cache.path(), "part"), 0);
}

#[test]
fn the_bitmap_is_saved_while_an_array_is_being_written() {
    let (store, cache, dir) = store_and_cache(2.0, 1 << 30);
    let v = view(store.path(), &dir);
    assert_eq!(read(&v, 0, 8192), expected(2.0)[..8192]);
    let map = file_with_ext(cache.path(), "map");
    let saved = || std::fs::metadata(&map).unwrap().len() > 0;
    assert!(!saved(), "no save on the read path");
    // A write two seconds (the save interval) later starts a save in the background.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert_eq!(read(&v, 8192, 4096), expected(2.0)[8192..12288]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !saved() {
        assert!(
            std::time::Instant::now() < deadline,
            "the bitmap was not saved"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // The saved map (its one record: a checksum per block, then the bits) claims the first
    // 12 KiB, which a crash now would keep.
    let blocks = (N * 8).div_ceil(4096);
    assert_eq!(std::fs::read(&map).unwrap()[4 * blocks], 0b111);
    drop(v);
    assert_eq!(files(cache.path(), "part"), 1);
}

#[test]
fn a_changed_chunk_or_metadata_makes_the_backing_file_stale() {
    let (store, cache, dir) = store_and_cache(1.0, 1 << 30);
    assert_eq!(
        read(&view(store.path(), &dir), 0, (N * 8) as u32),
        expected(1.0)
    );
    // Same size, new values and mtime.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write_store(store.path(), 3.0);
    assert_eq!(
        read(&view(store.path(), &dir), 0, (N * 8) as u32),
        expected(3.0)
    );
    assert_eq!(files(cache.path(), "data"), 2);
    // New metadata (attributes).
    std::fs::write(store.path().join("a/.zattrs"), r#"{"units":"K"}"#).unwrap();
    let before = dir.hit_bytes();
    assert_eq!(
        read(&view(store.path(), &dir), 0, (N * 8) as u32),
        expected(3.0)
    );
    assert_eq!(dir.hit_bytes(), before);
    assert_eq!(files(cache.path(), "data"), 3);
}

#[test]
fn a_changed_chunk_of_a_remote_store_makes_the_backing_file_stale() {
    let (stores, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_store(&stores.path().join("s.zarr"), 1.0);
    let s3 = servers::s3_server(&[("stale", &[stores.path().join("s.zarr")])]);
    servers::s3_credentials_env();
    let url = "s3://stale/s.zarr";
    let open = || -> Arc<dyn Store> {
        let options = RemoteOptions {
            endpoint: Some(s3.url.clone()),
            ..RemoteOptions::default()
        };
        Arc::from(store::open_with(url, &options).unwrap())
    };
    let dir = BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
    assert_eq!(
        read(&view_of(open(), url, &dir), 0, (N * 8) as u32),
        expected(1.0)
    );
    assert_eq!(files(cache.path(), "data"), 1);
    // Chunk 0 rewritten on the server: same size, new values, modified a little later (the
    // listing's last-modified time; s3s-fs lists no ETags).
    let chunk = s3.dir.path().join("root/stale/s.zarr/a/0");
    let before = std::fs::metadata(&chunk).unwrap().modified().unwrap();
    std::fs::write(&chunk, &expected(7.0)[..CHUNK * 8]).unwrap();
    let later = before + std::time::Duration::from_secs(2);
    std::fs::File::options()
        .write(true)
        .open(&chunk)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let mut want = expected(1.0);
    want[..CHUNK * 8].copy_from_slice(&expected(7.0)[..CHUNK * 8]);
    let hits = dir.hit_bytes();
    assert_eq!(read(&view_of(open(), url, &dir), 0, (N * 8) as u32), want);
    assert_eq!(dir.hit_bytes(), hits, "nothing came from the stale file");
    assert_eq!(files(cache.path(), "data"), 2);
}

/// Opens `a.npy` in a fresh view and asks for its local file (which starts writing it), then
/// drops the view (which waits for the writing).
fn npy_passthrough(store: &Path, dir: &Arc<BackingDir>) -> Option<std::fs::File> {
    let v = view(store, dir);
    let ino = v.resolve("a.npy").unwrap();
    let fh = v.open(ino).unwrap();
    let file = v.passthrough_file(ino);
    v.release(fh);
    file
}

#[test]
fn a_complete_arrays_npy_file_is_written_once_from_its_backing_file() {
    let (store, cache, dir) = store_and_cache(2.5, 1 << 30);
    read(&view(store.path(), &dir), 0, (N * 8) as u32);
    assert_eq!(files(cache.path(), "npy"), 0);
    // The first open after completion writes it in the background; it is not ready yet.
    assert!(npy_passthrough(store.path(), &dir).is_none());
    assert_eq!(files(cache.path(), "npy"), 1);
    assert_eq!(files(cache.path(), "npypart"), 0);
    let v = view(store.path(), &dir);
    let ino = v.resolve("a.npy").unwrap();
    let fh = v.open(ino).unwrap();
    let served = v.read(ino, 0, (N * 8 + 4096) as u32).unwrap();
    v.release(fh);
    assert_eq!(served[served.len() - N * 8..], expected(2.5));
    let mut local = Vec::new();
    let file = npy_passthrough(store.path(), &dir).expect("a.npy on local disk");
    std::io::Read::read_to_end(&mut &file, &mut local).unwrap();
    assert_eq!(local, served);
    assert_eq!(files(cache.path(), "npy"), 1);
}

#[test]
fn the_budget_evicts_whole_arrays() {
    let (store, cache, dir) = store_and_cache(1.0, 80_000);
    read(&view(store.path(), &dir), 0, (N * 8) as u32);
    assert!(npy_passthrough(store.path(), &dir).is_none());
    assert_eq!(files(cache.path(), "npy"), 1);
    assert_eq!(
        files(cache.path(), "lock"),
        0,
        "locks are let go and removed"
    );
    std::thread::sleep(std::time::Duration::from_millis(20));
    write_store(store.path(), 5.0);
    assert_eq!(
        read(&view(store.path(), &dir), 0, (N * 8) as u32),
        expected(5.0)
    );
    // The old array went whole: its data, its NPY file and their checksums.
    assert_eq!(files(cache.path(), "data"), 1);
    assert_eq!(files(cache.path(), "sum"), 1);
    assert_eq!(files(cache.path(), "npy"), 0);
    assert_eq!(files(cache.path(), "npysum"), 0);
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 2);
}

#[test]
fn an_array_another_mount_is_writing_is_not_evicted() {
    let (store, cache, dir) = store_and_cache(1.0, 40_000);
    // A partial array: its writer holds the lock while the view lives.
    let writer = view(store.path(), &dir);
    read(&writer, 0, 8192);
    assert_eq!(files(cache.path(), "part"), 1);
    let other = tempfile::tempdir().unwrap();
    write_store(other.path(), 2.0);
    assert_eq!(
        read(&view(other.path(), &dir), 0, (N * 8) as u32),
        expected(2.0)
    );
    // The written one stays, lock and all; it completes, and its lock goes once let go.
    assert_eq!(files(cache.path(), "part"), 1);
    assert!(lock_held(cache.path()));
    assert_eq!(read(&writer, 0, (N * 8) as u32), expected(1.0));
    drop(writer);
    assert_eq!(files(cache.path(), "lock"), 0);
}

#[test]
fn a_lock_file_is_left_only_while_its_array_is_written() {
    let (store, cache, dir) = store_and_cache(1.0, 1 << 30);
    // Opened, never read: its writer holds the lock while the view lives.
    let v = view(store.path(), &dir);
    let ino = v.resolve("a").unwrap();
    let fh = v.open(ino).unwrap();
    v.release(fh);
    assert!(lock_held(cache.path()));
    drop(v);
    assert_eq!(files(cache.path(), "lock"), 0);
    // Written whole, and its NPY file too.
    read(&view(store.path(), &dir), 0, (N * 8) as u32);
    assert!(npy_passthrough(store.path(), &dir).is_none());
    assert_eq!(files(cache.path(), "npy"), 1);
    assert_eq!(files(cache.path(), "lock"), 0);
}

#[test]
fn a_file_stopped_between_the_renames_of_its_publish_is_published_not_decoded_again() {
    let (store, cache, dir) = store_and_cache(1.5, 1 << 30);
    assert_eq!(
        read(&view(store.path(), &dir), 0, (N * 8) as u32),
        expected(1.5)
    );
    // `KEY.map` renamed to `KEY.sum`, then the crash: `KEY.part` not renamed to `KEY.data`.
    let data = file_with_ext(cache.path(), "data");
    std::fs::rename(&data, data.with_extension("part")).unwrap();
    let dir = BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
    let v = view(store.path(), &dir);
    assert_eq!(read(&v, 0, (N * 8) as u32), expected(1.5));
    assert_eq!(dir.hit_bytes(), (N * 8) as u64, "nothing decoded again");
    assert!(v.passthrough_file(v.resolve("a").unwrap()).is_some());
    assert_eq!(files(cache.path(), "data"), 1);
    assert_eq!(files(cache.path(), "part"), 0);
    // A `KEY.part` that does not match its `KEY.sum` is decoded again.
    drop(v);
    let data = file_with_ext(cache.path(), "data");
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[5000] ^= 1;
    std::fs::remove_file(&data).unwrap();
    std::fs::write(data.with_extension("part"), bytes).unwrap();
    let dir = BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
    assert_eq!(
        read(&view(store.path(), &dir), 0, (N * 8) as u32),
        expected(1.5)
    );
    assert_eq!(dir.hit_bytes(), 0);
    assert_eq!(files(cache.path(), "data"), 1);
}

#[test]
fn the_same_array_in_another_store_gets_its_own_backing_file() {
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (store.path().join("a.zarr"), store.path().join("b.zarr"));
    write_store(&a, 4.0);
    write_store(&b, 4.0);
    let dir = BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
    assert_eq!(read(&view(&a, &dir), 0, (N * 8) as u32), expected(4.0));
    assert_eq!(read(&view(&b, &dir), 0, (N * 8) as u32), expected(4.0));
    assert_eq!(dir.hit_bytes(), 0);
    assert_eq!(files(cache.path(), "data"), 2);
}

/// File `name` read whole through `v`, and whether a complete backing file (for passthrough)
/// was there at open.
fn read_whole(v: &View, name: &str) -> (Vec<u8>, bool) {
    let ino = v.resolve(name).unwrap();
    let fh = v.open(ino).unwrap();
    let complete_at_open = v.passthrough_file(ino).is_some();
    let bytes = v.read(ino, 0, 1 << 20).unwrap();
    v.release(fh);
    (bytes, complete_at_open)
}

#[test]
fn a_string_array_is_cached_as_text_and_npy_and_a_changed_chunk_makes_them_stale() {
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    string_store::copy_store(store.path());
    let (text, npy) = (string_store::expected(), string_store::expected_npy());
    let dir = BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
    let v = view(store.path(), &dir);
    assert_eq!(read_whole(&v, "strings"), (text.clone(), false));
    assert_eq!(read_whole(&v, "strings.npy"), (npy.clone(), false));
    drop(v);
    assert_eq!(files(cache.path(), "data"), 2);
    assert_eq!(files(cache.path(), "part"), 0);

    // A remount: complete at open, every byte copied from the backing files.
    let dir2 = BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
    let v = view(store.path(), &dir2);
    assert_eq!(read_whole(&v, "strings"), (text.clone(), true));
    assert_eq!(read_whole(&v, "strings.npy"), (npy.clone(), true));
    assert_eq!(dir2.hit_bytes(), (text.len() + npy.len()) as u64);
    // Selections are not cached.
    assert_eq!(
        read_whole(&v, "strings[0]").0,
        text.split_inclusive(|&b| b == b'\n')
            .take(4)
            .collect::<Vec<_>>()
            .concat()
    );
    drop(v);

    // A changed chunk: new backing files, the new bytes (`A.npy` as an uncached view shows it).
    std::thread::sleep(std::time::Duration::from_millis(20));
    string_store::change_chunk(store.path());
    let changed = string_store::expected_changed();
    assert_ne!(changed, text);
    let location = store.path().to_str().unwrap();
    let uncached =
        zarrfs::view::from_location(location, 64 << 20, &LoadOptions::default()).unwrap();
    let changed_npy = read_whole(&uncached, "strings.npy").0;
    assert_ne!(changed_npy, npy);
    let dir3 = BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
    let v = view(store.path(), &dir3);
    assert_eq!(read_whole(&v, "strings"), (changed.clone(), false));
    assert_eq!(read_whole(&v, "strings.npy"), (changed_npy.clone(), false));
    assert_eq!(dir3.hit_bytes(), 0);
    assert_eq!(read_whole(&v, "strings").0, changed);
    assert_eq!(read_whole(&v, "strings.npy").0, changed_npy);
    drop(v);
    assert_eq!(files(cache.path(), "data"), 4);
}

#[test]
fn a_byte_flipped_in_a_partial_backing_file_is_decoded_and_written_again() {
    let (store, cache, dir) = store_and_cache(8.0, 1 << 30);
    let v = view(store.path(), &dir);
    assert_eq!(read(&v, 0, 8192), expected(8.0)[..8192]);
    let part = file_with_ext(cache.path(), "part");
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(part)
        .unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, 100).unwrap();
    file.write_all_at(&[!byte[0]], 100).unwrap();
    assert_eq!(read(&v, 0, 8192), expected(8.0)[..8192]);
    assert_eq!(dir.hit_bytes(), 0, "a failing block is never copied out");
    // Written again, and served from the file.
    assert_eq!(read(&v, 0, 8192), expected(8.0)[..8192]);
    assert_eq!(dir.hit_bytes(), 8192);
}

#[test]
fn a_byte_flipped_in_a_file_this_mount_completed_is_never_handed_to_the_kernel() {
    let (store, cache, dir) = store_and_cache(6.0, 1 << 30);
    let v = view(store.path(), &dir);
    assert_eq!(read(&v, 0, (N * 8) as u32), expected(6.0));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    // Complete once published: renamed, and its lock let go.
    while files(cache.path(), "data") == 0 || lock_held(cache.path()) {
        assert!(std::time::Instant::now() < deadline, "never completed");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    use std::os::unix::fs::FileExt;
    let data = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(file_with_ext(cache.path(), "data"))
        .unwrap();
    data.write_all_at(&[0xff; 3], 3 * 4096 + 7).unwrap();
    let ino = v.resolve("a").unwrap();
    assert!(v.passthrough_file(ino).is_none());
    assert_eq!(files(cache.path(), "data"), 0, "the bad file is removed");
    assert_eq!(read(&v, 0, (N * 8) as u32), expected(6.0));
}
