//! `--cache-dir` through real FUSE mounts: passthrough (or copying) of complete arrays across
//! remounts, two mounts sharing a directory, a daemon killed mid-write, a full disk, arrays read
//! off block boundaries, the map of a large array, the LRU order.

use crate::common;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use common::float_store::{
    expected, file_with_ext, files, lock_held, write_floats, write_store, N,
};
use common::mount::{timed, Mount};
use common::string_store;
use std::path::{Path, PathBuf};

fn read_all(path: PathBuf) -> Vec<u8> {
    timed("read", move || std::fs::read(path).unwrap())
}

fn cache_arg(dir: &Path) -> String {
    format!("--cache-dir={}", dir.display())
}

#[test]
fn a_remount_serves_a_complete_array_from_its_backing_file() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_store(store.path(), 0.5);
    let arg = cache_arg(cache.path());
    let m = Mount::new(store.path(), &[&arg, "-vv"]);
    assert_eq!(read_all(m.join("a")), expected(0.5));
    let (_, log) = m.stop();
    assert!(log.contains("decoded completely"), "{log}");
    assert_eq!(files(cache.path(), "data"), 1);

    // The first open of a.npy after completion writes its local copy (with passthrough only).
    let m = Mount::new(store.path(), &[&arg, "-vv"]);
    let npy = read_all(m.join("a.npy"));
    assert_eq!(npy[npy.len() - N * 8..], expected(0.5));
    let (_, log) = m.stop();
    let passthrough = log.contains("served with FUSE passthrough");
    assert_eq!(
        files(cache.path(), "npy"),
        usize::from(passthrough),
        "{log}"
    );

    let m = Mount::new(store.path(), &[&arg, "-vv"]);
    assert_eq!(read_all(m.join("a")), expected(0.5));
    assert_eq!(read_all(m.join("a.npy")), npy);
    let (_, log) = m.stop();
    assert!(log.contains("served from backing file"), "{log}");
    assert!(log.contains("opens answered with passthrough"), "{log}");
    let copied = |n: usize| format!(" {n} bytes copied from backing files");
    if passthrough {
        // The kernel read both files itself: the daemon copied nothing.
        assert_eq!(log.matches("opened with passthrough").count(), 2, "{log}");
        assert!(log.contains(&copied(0)), "{log}");
    } else {
        // Every byte of `a` and of a.npy's data part, once (the page cache keeps them).
        assert!(log.contains("copied from their backing files"), "{log}");
        assert!(log.contains(&copied(2 * N * 8)), "{log}");
    }
}

/// The expected bytes of array `path` of case `case` of the manifest `manifest`.
fn expected_of(manifest: &str, case: &str, path: &str) -> Vec<u8> {
    let cases = common::load_manifest(manifest);
    let c = cases.iter().find(|c| c.name == case).unwrap();
    common::expected_bytes(c.nodes.iter().find(|n| n.path == path).unwrap()).1
}

#[test]
fn each_icechunk_snapshot_has_its_own_backing_files() {
    if !common::mount::fuse_ready() {
        return;
    }
    // `small` has the same metadata in both snapshots, and another first element.
    let repo = common::fixtures_dir().join("icechunk/repo_v2");
    let cache = tempfile::tempdir().unwrap();
    let arg = cache_arg(cache.path());
    let want = |case| expected_of("icechunk/manifest.json", case, "small");
    assert_ne!(want("repo_v2_tag"), want("repo_v2_main"));
    let m = Mount::new(&repo, &[&arg, "--ref", "v1"]);
    assert_eq!(read_all(m.join("small")), want("repo_v2_tag"));
    drop(m);
    assert_eq!(files(cache.path(), "data"), 1);
    let m = Mount::new(&repo, &[&arg]);
    assert_eq!(read_all(m.join("small")), want("repo_v2_main"));
    drop(m);
    assert_eq!(files(cache.path(), "data"), 2);
}

#[test]
fn chunks_read_before_the_listing_are_not_kept_in_the_cache_dir() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_store(store.path(), 1.0);
    let arg = cache_arg(cache.path());
    let m = Mount::new(store.path(), &[&arg, "-v"]);
    // A selection decodes chunk 0 before `a` is first opened (and listed); then the chunks
    // change, the metadata not.
    assert_eq!(read_all(m.join("a[0:10]")), expected(1.0)[..80]);
    write_store(store.path(), 2.0);
    assert_eq!(read_all(m.join("a"))[8000..], expected(2.0)[8000..]);
    let (_, log) = m.stop();
    assert!(log.contains("not cached on disk in this mount"), "{log}");
    assert_eq!(files(cache.path(), "data"), 0);
    let m = Mount::new(store.path(), &[&arg]);
    assert_eq!(read_all(m.join("a")), expected(2.0));
    drop(m);
    assert_eq!(files(cache.path(), "data"), 1);
}

#[test]
fn two_mounts_share_a_cache_dir() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_store(store.path(), 7.0);
    let arg = cache_arg(cache.path());
    let (m1, m2) = (
        Mount::new(store.path(), &[&arg]),
        Mount::new(store.path(), &[&arg]),
    );
    let (p1, p2) = (m1.join("a"), m2.join("a"));
    let t = std::thread::spawn(move || read_all(p1));
    assert_eq!(read_all(p2), expected(7.0));
    assert_eq!(t.join().unwrap(), expected(7.0));
    assert_eq!(read_all(m1.join("a")), expected(7.0));
    assert_eq!(read_all(m2.join("a")), expected(7.0));
    drop((m1, m2));
    assert_eq!(files(cache.path(), "data"), 1);
    assert_eq!(files(cache.path(), "part"), 0);
}

#[test]
fn a_daemon_killed_mid_write_leaves_nothing_that_passes_as_complete() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_store(store.path(), 3.0);
    let arg = cache_arg(cache.path());
    // Small kernel readahead: the first read does not reach the end.
    let m = Mount::new(store.path(), &[&arg, "--read-ahead", "4K"]);
    let path = m.join("a");
    let head = timed("read", move || {
        use std::io::Read;
        let mut buf = vec![0; 8192];
        std::fs::File::open(path)
            .unwrap()
            .read_exact(&mut buf)
            .unwrap();
        buf
    });
    assert_eq!(head, expected(3.0)[..8192]);
    let _ = kill(Pid::from_raw(m.pid() as i32), Signal::SIGKILL);
    drop(m);
    assert_eq!(files(cache.path(), "part"), 1);
    assert_eq!(files(cache.path(), "data"), 0);

    let m = Mount::new(store.path(), &[&arg]);
    assert_eq!(read_all(m.join("a")), expected(3.0));
    drop(m);
    assert_eq!(files(cache.path(), "data"), 1);
}

/// A small tmpfs, unmounted on drop.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    /// A tmpfs of `size`, private to root (as a cache directory must be).
    fn new(size: &str) -> Tmpfs {
        Tmpfs::with(&format!("size={size},mode=0700"))
    }

    /// A tmpfs mounted with `options`.
    fn with(options: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "cannot mount a tmpfs");
        Tmpfs(dir)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.0.path())
            .status();
    }
}

#[test]
fn a_full_cache_dir_degrades_to_uncached_reads_with_one_log_line() {
    if !common::mount::root_fuse_ready() {
        return;
    }
    let store = tempfile::tempdir().unwrap();
    write_store(store.path(), 9.0);
    let small = Tmpfs::new("16k");
    let arg = cache_arg(small.0.path());
    let m = Mount::new(store.path(), &[&arg, "--cache-dir-size", "1G"]);
    for _ in 0..2 {
        assert_eq!(read_all(m.join("a")), expected(9.0));
    }
    let (_, log) = m.stop();
    assert_eq!(log.matches("cannot write").count(), 1, "{log}");
    assert_eq!(files(small.0.path(), "data"), 0);
}

#[test]
fn an_array_completed_while_open_opens_again_while_the_first_file_is_open() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_store(store.path(), 6.0);
    let arg = cache_arg(cache.path());
    let m = Mount::new(store.path(), &[&arg, "-v"]);
    let (path, dir) = (m.join("a"), cache.path().to_path_buf());
    timed("reopen", move || {
        use std::io::Read;
        let mut first = std::fs::File::open(&path).unwrap();
        let mut bytes = Vec::new();
        first.read_to_end(&mut bytes).unwrap();
        assert_eq!(bytes, expected(6.0));
        while files(&dir, "data") == 0 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // The kernel refuses passthrough while the inode is open through the page cache.
        assert_eq!(std::fs::read(&path).unwrap(), expected(6.0));
        drop(first);
        assert_eq!(std::fs::read(&path).unwrap(), expected(6.0));
    });
    let (_, log) = m.stop();
    // The open made while the first file was open must not use passthrough; the last one may
    // or may not, since the kernel tells zarrfs of the first file's close asynchronously.
    assert!(log.matches("opened with passthrough").count() <= 1, "{log}");
    assert!(!log.contains("FUSE passthrough refused"), "{log}");
}

#[test]
fn a_string_array_is_served_from_its_backing_files_and_rebuilt_when_stale() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    string_store::copy_store(store.path());
    let (text, npy) = (string_store::expected(), string_store::expected_npy());
    let arg = cache_arg(cache.path());
    let read_both = |m: &Mount| {
        let a = read_all(m.join(string_store::ARRAY));
        (a, read_all(m.join(&format!("{}.npy", string_store::ARRAY))))
    };
    let m = Mount::new(store.path(), &[&arg, "-vv"]);
    assert_eq!(read_both(&m), (text.clone(), npy.clone()));
    let (_, log) = m.stop();
    assert_eq!(log.matches("decoded completely").count(), 2, "{log}");
    assert_eq!(files(cache.path(), "data"), 2);

    let m = Mount::new(store.path(), &[&arg, "-vv"]);
    assert_eq!(read_both(&m), (text.clone(), npy.clone()));
    let (_, log) = m.stop();
    assert_eq!(log.matches("served from backing file").count(), 2, "{log}");
    if log.contains("served with FUSE passthrough") {
        assert_eq!(log.matches("opened with passthrough").count(), 2, "{log}");
        assert!(log.contains(" 0 bytes copied from backing files"), "{log}");
    } else {
        let copied = format!(
            " {} bytes copied from backing files",
            text.len() + npy.len()
        );
        assert!(log.contains(&copied), "{log}");
    }

    // A changed chunk: decoded again into new backing files.
    std::thread::sleep(std::time::Duration::from_millis(20));
    string_store::change_chunk(store.path());
    let m = Mount::new(store.path(), &[&arg, "-vv"]);
    let (changed, changed_npy) = read_both(&m);
    assert_eq!(changed, string_store::expected_changed());
    let (_, log) = m.stop();
    assert!(!log.contains("served from backing file"), "{log}");
    assert!(!log.contains("opened with passthrough"), "{log}");
    assert_eq!(files(cache.path(), "data"), 4);
    // Served from the new files, the new bytes.
    let m = Mount::new(store.path(), &[&arg, "-vv"]);
    assert_eq!(read_both(&m), (changed, changed_npy));
    let (_, log) = m.stop();
    assert_eq!(log.matches("served from backing file").count(), 2, "{log}");
}

#[test]
fn a_read_only_cache_dir_serves_uncached_with_a_log_line() {
    if !common::mount::root_fuse_ready() {
        return;
    }
    let store = tempfile::tempdir().unwrap();
    write_store(store.path(), 2.5);
    let read_only = Tmpfs::with("ro,size=1m,mode=0700");
    let m = Mount::new(store.path(), &[&cache_arg(read_only.0.path())]);
    assert_eq!(read_all(m.join("a")), expected(2.5));
    let (_, log) = m.stop();
    assert_eq!(log.matches("read-only").count(), 1, "{log}");
}

#[test]
fn a_rewritten_chunk_of_a_v3_draft_store_is_noticed() {
    if !common::mount::fuse_ready() {
        return;
    }
    // The drafts keep chunks apart from metadata (`data/root/big_endian/c0`): the identity
    // must list there, not under the array's path, where nothing is.
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let fixture = common::fixtures_dir().join("dialects/v3_draft_2022.zarr");
    common::servers::copy_tree(&fixture, store.path());
    let arg = cache_arg(cache.path());
    let m = Mount::new(store.path(), &[&arg]);
    let before = read_all(m.join("big_endian"));
    m.stop();
    assert_eq!(files(cache.path(), "data"), 1);

    let chunks = store.path().join("data/root/big_endian");
    let (c0, c1) = (chunks.join("c0"), chunks.join("c1"));
    let first = std::fs::read(&c0).unwrap();
    std::fs::copy(&c1, &c0).unwrap();
    std::fs::write(&c1, first).unwrap();
    let m = Mount::new(store.path(), &[]);
    let want = read_all(m.join("big_endian"));
    m.stop();
    assert_ne!(want, before, "the chunks hold different values");
    let m = Mount::new(store.path(), &[&arg]);
    assert_eq!(read_all(m.join("big_endian")), want);
    m.stop();
}

/// Reads `path` with O_DIRECT (each read reaches zarrfs as asked) `len` bytes at a time.
fn read_direct_by(path: PathBuf, len: usize) -> Vec<u8> {
    timed("read", move || {
        use std::os::unix::fs::{FileExt, OpenOptionsExt};
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .unwrap();
        let (mut out, mut buf) = (Vec::new(), vec![0; len]);
        loop {
            let n = file.read_at(&mut buf, out.len() as u64).unwrap();
            if n == 0 {
                return out;
            }
            out.extend_from_slice(&buf[..n]);
        }
    })
}

#[test]
fn an_array_read_through_its_npy_file_or_unaligned_reads_completes() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // 3.2 MB: the kernel reads `b.npy` in several requests, each offset by the NPY header from
    // the blocks of `b`.
    let b = write_floats(store.path(), "b", (400_000, 100_000), 0.25);
    let c = write_floats(store.path(), "c", (20_000, 3_000), 0.25);
    let arg = cache_arg(cache.path());
    let m = Mount::new(store.path(), &[&arg]);
    let npy = read_all(m.join("b.npy"));
    assert_eq!(npy[npy.len() - b.len()..], b);
    assert_eq!(read_direct_by(m.join("c"), 1000), c);
    drop(m);
    assert_eq!(
        files(cache.path(), "part"),
        0,
        "a backing file is incomplete"
    );
    assert_eq!(files(cache.path(), "data"), 2);
    let m = Mount::new(store.path(), &[&arg, "-v"]);
    assert_eq!(read_all(m.join("b")), b);
    assert_eq!(read_all(m.join("c")), c);
    let (_, log) = m.stop();
    assert_eq!(log.matches("served from backing file").count(), 2, "{log}");
}

/// Bytes `path` takes on disk.
fn allocated(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().blocks() * 512
}

#[test]
fn the_map_of_a_large_array_grows_with_what_was_read_not_with_the_array() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // 16 GiB of fill value (no chunk written): a map of every block would take 16 MiB.
    std::fs::write(store.path().join(".zgroup"), r#"{"zarr_format":2}"#).unwrap();
    std::fs::create_dir(store.path().join("big")).unwrap();
    let zarray = r#"{"zarr_format":2,"shape":[2147483648],"chunks":[1048576],"dtype":"<f8","compressor":null,"fill_value":0.0,"filters":null,"order":"C"}"#;
    std::fs::write(store.path().join("big/.zarray"), zarray).unwrap();
    let args = [&cache_arg(cache.path()), "--cache-dir-size", "1T", "-v"];
    let read_some = |m: &Mount| {
        let path = m.join("big");
        timed("read", move || {
            use std::os::unix::fs::FileExt;
            let mut buf = vec![1u8; 8192];
            let file = std::fs::File::open(path).unwrap();
            file.read_exact_at(&mut buf, 8 << 30).unwrap();
            buf
        })
    };
    let m = Mount::new(store.path(), &args);
    assert_eq!(read_some(&m), vec![0; 8192]);
    drop(m);
    // What the kernel read ahead and its map: one page of the map (4 KiB per 3.9 MiB).
    let (part, map) = (
        file_with_ext(cache.path(), "part"),
        file_with_ext(cache.path(), "map"),
    );
    assert!(allocated(&part) <= 4 << 20, "{}", allocated(&part));
    assert!((1..=8192).contains(&allocated(&map)), "{}", allocated(&map));
    // The next mount resumes from it.
    let m = Mount::new(store.path(), &args);
    assert_eq!(read_some(&m), vec![0; 8192]);
    let (_, log) = m.stop();
    assert!(log.contains("resuming backing file"), "{log}");
    assert!(!log.contains(" 0 bytes copied from backing files"), "{log}");
}

/// Blocks the saved map `map` of a file of `size` bytes claims (see `backing::records`: one
/// record per 992 blocks, every 4 KiB, checksums then bits).
fn claimed(map: &Path, size: u64) -> u64 {
    let bytes = std::fs::read(map).unwrap();
    let blocks = size.div_ceil(4096) as usize;
    (0..blocks.div_ceil(992))
        .map(|p| {
            let n = (blocks - p * 992).min(992);
            let at = p * 4096 + 4 * n;
            let bits = bytes.get(at..at + n.div_ceil(8)).unwrap_or_default();
            bits.iter().map(|b| u64::from(b.count_ones())).sum::<u64>()
        })
        .sum()
}

#[test]
fn a_write_error_gives_back_the_disk_no_saved_map_accounts_for() {
    if !common::mount::root_fuse_ready() {
        return;
    }
    let store = tempfile::tempdir().unwrap();
    let a = write_floats(store.path(), "a", (786_432, 131_072), 0.25);
    // 6 MiB do not fit.
    let small = Tmpfs::new("4m");
    let arg = cache_arg(small.0.path());
    for _ in 0..2 {
        let m = Mount::new(store.path(), &[&arg, "--cache-dir-size", "1G"]);
        assert_eq!(read_all(m.join("a")), a);
        let (_, log) = m.stop();
        assert_eq!(log.matches("cannot write").count(), 1, "{log}");
        let part = file_with_ext(small.0.path(), "part");
        let kept = match files(small.0.path(), "map") {
            0 => 0,
            _ => claimed(&file_with_ext(small.0.path(), "map"), a.len() as u64),
        };
        assert!(
            allocated(&part) <= kept * 4096,
            "{} bytes kept, {kept} blocks claimed",
            allocated(&part)
        );
    }
}

#[test]
fn an_array_opened_again_is_marked_as_recently_opened() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_store(store.path(), 1.25);
    let m = Mount::new(store.path(), &[&cache_arg(cache.path())]);
    assert_eq!(read_all(m.join("a")), expected(1.25));
    let dir = cache.path().to_path_buf();
    timed("publish", move || {
        while files(&dir, "data") == 0 || lock_held(&dir) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    });
    // Another mount sharing the directory orders eviction by this time.
    let data = file_with_ext(cache.path(), "data");
    let day = std::time::Duration::from_secs(86_400);
    let old = std::time::SystemTime::now() - day;
    std::fs::File::open(&data)
        .unwrap()
        .set_modified(old)
        .unwrap();
    assert_eq!(read_all(m.join("a")), expected(1.25));
    drop(m);
    let mtime = std::fs::metadata(&data).unwrap().modified().unwrap();
    assert!(mtime > old + day / 2, "still marked as opened a day ago");
}

/// A zarrfs mount started under `prlimit` (which runs it in its place), stopped when dropped.
struct Limited(std::process::Child, tempfile::TempDir);

impl Drop for Limited {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.0.id() as i32), Signal::SIGTERM);
        let _ = self.0.wait();
        common::mount::force_unmount(self.1.path());
    }
}

#[test]
fn a_mount_raises_its_descriptor_limit_and_serves_many_arrays_within_it() {
    if !common::mount::fuse_ready() {
        return;
    }
    // util-linux's prlimit (missing, the test fails under ZARRFS_REQUIRE_FUSE, as .ci/run sets).
    let found = std::process::Command::new("sh")
        .args(["-c", "command -v prlimit"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("ZARRFS_REQUIRE_FUSE").is_none(),
            "missing prlimit: run .ci/run"
        );
        eprintln!("skipping: missing prlimit");
        return;
    }
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let arrays = 300;
    let want: Vec<Vec<u8>> = (0..arrays)
        .map(|i| write_floats(store.path(), &format!("a{i}"), (600, 600), i as f64))
        .collect();
    let mountpoint = tempfile::tempdir().unwrap();
    // Soft limit 64, hard 128: the daemon raises the soft one.
    let child = std::process::Command::new("prlimit")
        .arg("--nofile=64:128")
        .arg(env!("CARGO_BIN_EXE_zarrfs"))
        .args(["-f", &cache_arg(cache.path())])
        .args([store.path(), mountpoint.path()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut m = Limited(child, mountpoint);
    while !common::mount::is_fuse_mount(m.1.path()) {
        assert!(m.0.try_wait().unwrap().is_none(), "zarrfs exited");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", m.0.id())).unwrap();
    let line = limits.lines().find(|l| l.starts_with("Max open files"));
    let words: Vec<&str> = line.unwrap().split_whitespace().collect();
    assert_eq!(words[3..5], ["128", "128"], "{limits}");
    for (i, want) in want.iter().enumerate() {
        assert_eq!(&read_all(m.1.path().join(format!("a{i}"))), want, "a{i}");
    }
    drop(m);
    assert_eq!(files(cache.path(), "data"), arrays);
    assert_eq!(files(cache.path(), "lock"), 0);
}
