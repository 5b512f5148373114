//! The cache directory never serves a wrong byte nor writes outside itself, through real FUSE
//! mounts: files another user planted (a link as `KEY.part`, a `KEY.data` of their own, placed
//! as that user with `setpriv`), a byte flipped in a complete backing file, a transient 404
//! from S3 for a listed chunk (through the fault proxy), and `--cache-dir-size` within one
//! live mount, also while several arrays are written at once.

use crate::common;

use common::float_store::{expected, file_with_ext, files, lock_held, write_store, N};
use common::mount::{timed, Mount};
use common::servers;
use std::io::Write;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn read_all(path: PathBuf) -> Vec<u8> {
    timed("read", move || std::fs::read(path).unwrap())
}

fn cache_arg(dir: &Path) -> String {
    format!("--cache-dir={}", dir.display())
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Runs `args` as the unprivileged user 65534 with `stdin` as its input.
fn as_nobody(args: &[&str], stdin: &[u8]) {
    let mut child = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(args)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    assert!(child.wait().unwrap().success(), "{args:?} as nobody");
}

/// The key of the array `a` of `store`: the stem of the backing file a first mount with a
/// private cache directory leaves.
fn key_of(store: &Path) -> String {
    let cache = tempfile::tempdir().unwrap();
    let m = Mount::new(store, &[&cache_arg(cache.path())]);
    assert_eq!(read_all(m.join("a")), expected(1.0));
    drop(m);
    let data = file_with_ext(cache.path(), "data");
    data.file_stem().unwrap().to_string_lossy().into_owned()
}

/// The checksum file zarrfs keeps for `bytes`, of at most 992 blocks (see `backing::records`:
/// the checksums, the bits, and a checksum of those seeded with the format, size and page).
fn sums_of(bytes: &[u8]) -> Vec<u8> {
    let blocks = bytes.len().div_ceil(4096);
    assert!(blocks <= 992);
    let mut out = Vec::new();
    for block in bytes.chunks(4096) {
        out.extend_from_slice(&crc32c::crc32c(block).to_le_bytes());
    }
    out.extend((0..blocks.div_ceil(8)).map(|i| 0xffu8 >> (8 * (i + 1)).saturating_sub(blocks)));
    let mut seal = crc32c::crc32c(b"zarrfs\x00\x03");
    seal = crc32c::crc32c_append(seal, &(bytes.len() as u64).to_le_bytes());
    seal = crc32c::crc32c_append(seal, &0u64.to_le_bytes());
    seal = crc32c::crc32c_append(seal, &out);
    out.extend_from_slice(&seal.to_le_bytes());
    out
}

#[test]
fn a_link_planted_as_a_part_file_overwrites_nothing() {
    if !common::mount::root_fuse_ready() {
        return;
    }
    let store = tempfile::tempdir().unwrap();
    write_store(store.path(), 1.0);
    let key = key_of(store.path());
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, b"root's own file").unwrap();
    chmod(&victim, 0o600);
    let victim_arg = victim.to_str().unwrap();

    // A shared directory (like /tmp): another user plants KEY.part as a link to the victim.
    let shared = tempfile::tempdir().unwrap();
    chmod(shared.path(), 0o1777);
    let planted = shared.path().join(format!("{key}.part"));
    as_nobody(&["ln", "-s", victim_arg, planted.to_str().unwrap()], b"");
    match Mount::try_new(store.path(), &[&cache_arg(shared.path())]) {
        Ok(m) => {
            let _ = std::fs::read(m.join("a"));
            drop(m);
            let victim = std::fs::read(&victim).unwrap();
            assert_eq!(
                victim.len(),
                15,
                "the victim was overwritten through the link"
            );
            panic!("a cache dir others may write was used");
        }
        Err(said) => assert!(said.contains("writable by group or others"), "{said}"),
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"root's own file");

    // A private directory holding a link left there: removed, never written through.
    let private = tempfile::tempdir().unwrap();
    let planted = private.path().join(format!("{key}.part"));
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    let m = Mount::new(store.path(), &[&cache_arg(private.path())]);
    assert_eq!(read_all(m.join("a")), expected(1.0));
    let (_, log) = m.stop();
    assert!(log.contains("a link or special file"), "{log}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"root's own file");
    assert_eq!(files(private.path(), "data"), 1);
}

#[test]
fn a_data_file_another_user_planted_is_not_served() {
    if !common::mount::root_fuse_ready() {
        return;
    }
    let store = tempfile::tempdir().unwrap();
    write_store(store.path(), 1.0);
    let key = key_of(store.path());
    // While the directory was shared, another user planted a complete array of their own,
    // with matching checksums; then the directory was made private.
    let cache = tempfile::tempdir().unwrap();
    chmod(cache.path(), 0o1777);
    let wrong = expected(2.0);
    for (ext, bytes) in [("sum", sums_of(&wrong)), ("data", wrong.clone())] {
        let path = cache.path().join(format!("{key}.{ext}"));
        let script = "cat > \"$0\"";
        as_nobody(&["sh", "-c", script, path.to_str().unwrap()], &bytes);
    }
    chmod(cache.path(), 0o700);
    let m = Mount::new(store.path(), &[&cache_arg(cache.path()), "-v"]);
    assert_eq!(read_all(m.join("a")), expected(1.0));
    let (_, log) = m.stop();
    assert!(log.contains("owned by uid 65534"), "{log}");
    assert!(!log.contains("served from backing file"), "{log}");
}

#[test]
fn a_byte_flipped_in_a_complete_backing_file_is_decoded_again() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_store(store.path(), 4.0);
    let arg = cache_arg(cache.path());
    let m = Mount::new(store.path(), &[&arg]);
    assert_eq!(read_all(m.join("a")), expected(4.0));
    drop(m);
    let data = file_with_ext(cache.path(), "data");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .read(true)
        .open(&data)
        .unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, 5000).unwrap();
    file.write_all_at(&[byte[0] ^ 0x10], 5000).unwrap();
    drop(file);

    let m = Mount::new(store.path(), &[&arg, "-v"]);
    assert_eq!(read_all(m.join("a")), expected(4.0));
    let (_, log) = m.stop();
    assert!(log.contains("fails its checksum at block 1"), "{log}");
    assert!(log.contains("decoded completely"), "{log}");
    // The file written again is served by the next mount.
    let m = Mount::new(store.path(), &[&arg, "-v"]);
    assert_eq!(read_all(m.join("a")), expected(4.0));
    let (_, log) = m.stop();
    assert!(log.contains("served from backing file"), "{log}");
}

/// Bytes the files of `dir` take on disk.
fn disk_use(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().blocks() * 512)
        .sum()
}

/// A mount of `store` with the cache directory `cache` of `budget` bytes, logging evictions.
fn mount_within(store: &Path, cache: &Path, budget: u64) -> Mount {
    let size = budget.to_string();
    Mount::new(store, &[&cache_arg(cache), "--cache-dir-size", &size, "-v"])
}

/// A store of three arrays `g1/a`, `g2/a`, `g3/a`, and an empty cache directory.
fn three_arrays() -> (tempfile::TempDir, tempfile::TempDir) {
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(store.path().join(".zgroup"), r#"{"zarr_format":2}"#).unwrap();
    for g in ["g1", "g2", "g3"] {
        write_store(&store.path().join(g), 1.0);
    }
    (store, cache)
}

#[test]
fn the_cache_dir_size_holds_for_arrays_a_live_mount_wrote() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (store, cache) = three_arrays();
    // Room for one array (its data and checksums), not two.
    let budget = N as u64 * 8 + 8192;
    let m = mount_within(store.path(), cache.path(), budget);
    for g in ["g1", "g2", "g3"] {
        assert_eq!(read_all(m.join(&format!("{g}/a"))), expected(1.0));
        let dir = cache.path().to_path_buf();
        timed("publish", move || {
            // The lock is let go just after the rename: the next array may evict this one.
            while files(&dir, "part") > 0 || files(&dir, "data") == 0 || lock_held(&dir) {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        });
        assert!(
            disk_use(cache.path()) <= budget,
            "{} bytes in the cache dir after {g}, budget {budget}",
            disk_use(cache.path())
        );
        // Nor does the daemon keep an evicted file open (its blocks would stay in use).
        let held: Vec<_> = std::fs::read_dir(format!("/proc/{}/fd", m.pid()))
            .unwrap()
            .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
            .filter(|t| t.starts_with(cache.path()) && t.to_string_lossy().ends_with("(deleted)"))
            .collect();
        assert!(held.is_empty(), "evicted files still open: {held:?}");
    }
    let (_, log) = m.stop();
    assert_eq!(log.matches("evicted").count(), 2, "{log}");
    assert_eq!(files(cache.path(), "data"), 1);
}

#[test]
fn arrays_written_at_once_hold_their_whole_size_in_the_cache_dir_size() {
    if !common::mount::fuse_ready() {
        return;
    }
    let (store, cache) = three_arrays();
    // Room for two arrays (data and checksums), not three.
    let budget = 2 * (N as u64 * 8 + 4096) + 4096;
    let m = mount_within(store.path(), cache.path(), budget);
    // All three are open (their backing files attached, nothing written yet) before any is
    // read.
    let paths = ["g1", "g2", "g3"].map(|g| m.join(&format!("{g}/a")));
    let dir = cache.path().to_path_buf();
    timed("read", move || {
        use std::io::Read;
        let opened = paths.map(|p| std::fs::File::open(p).unwrap());
        for mut file in opened {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).unwrap();
            assert_eq!(bytes, expected(1.0));
        }
        while files(&dir, "part") > 0 || lock_held(&dir) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    });
    assert!(
        disk_use(cache.path()) <= budget,
        "{} bytes in the cache dir, budget {budget}",
        disk_use(cache.path())
    );
    let (_, log) = m.stop();
    assert_eq!(
        log.matches("does not fit --cache-dir-size").count(),
        1,
        "{log}"
    );
    assert_eq!(files(cache.path(), "data"), 2);
}

#[test]
fn a_listed_chunk_answered_404_is_never_served_nor_kept_as_fill() {
    let store = tempfile::tempdir().unwrap();
    let root = store.path().join("s.zarr");
    write_store(&root, 3.0);
    let s3 = servers::s3_server(&[("flaky", std::slice::from_ref(&root))]);
    let proxy = servers::fault_proxy(&s3);
    servers::s3_credentials_env();
    let cache = tempfile::tempdir().unwrap();
    let url = Path::new("s3://flaky/s.zarr");
    let arg = cache_arg(cache.path());
    let through_proxy = ["--endpoint", &proxy.url, &arg, "--timeout", "5"];

    // One 404 for chunk 2, listed when the array was opened: asked again, served right.
    let m = Mount::new(url, &through_proxy);
    servers::fault(&proxy, "gone/1/flaky/s.zarr/a/2");
    assert_eq!(read_all(m.join("a")), expected(3.0));
    assert_eq!(servers::fault(&proxy, "ok"), 1, "no 404 was injected");
    let (_, log) = m.stop();
    assert!(log.contains("found when asked again"), "{log}");
    assert_eq!(files(cache.path(), "data"), 1);

    // Every ask answered 404: EIO, never the fill value; nothing of it kept.
    let other = tempfile::tempdir().unwrap();
    let arg = cache_arg(other.path());
    let through_proxy = ["--endpoint", &proxy.url, &arg, "--timeout", "5"];
    let m = Mount::new(url, &through_proxy);
    servers::fault(&proxy, "gone/1000/flaky/s.zarr/a/2");
    let path = m.join("a");
    let got = timed("read", move || std::fs::read(path));
    assert_eq!(got.unwrap_err().raw_os_error(), Some(libc::EIO));
    servers::fault(&proxy, "ok");
    let (_, log) = m.stop();
    assert!(log.contains("not read as the fill value"), "{log}");

    // Later mounts against the healthy server serve the right bytes.
    for dir in [cache.path(), other.path()] {
        let arg = cache_arg(dir);
        let m = Mount::new(url, &["--endpoint", &s3.url, &arg]);
        assert_eq!(read_all(m.join("a")), expected(3.0));
    }
}
