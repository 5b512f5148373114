//! Stalled metadata requests: lookups, `stat`, listings and `df` whose work waits on a slow
//! store (a group's first listing, a subtree loaded for `.header.cdl`, a variable-length array
//! sized by reading every chunk). With more of them than FUSE request threads, cached files
//! still `stat` and read and loaded directories still list; each stalled request gets EIO once
//! `--timeout` has passed while its work goes on, and a later request gets its result; a lookup
//! answered EIO that the view had counted is given back. The store is S3 (s3s-fs) behind the
//! fault proxy, told to hold every answer a second: each request succeeds within `--timeout`
//! (an attempt is cut after a third of it), but work of many requests in turn takes longer.
//! With every worker of the pool held, what the view has in memory is still answered: such
//! requests are answered on the request threads.

use crate::common;
use common::mount::{fuse_ready, read_start_direct, timed, Mount, OP_TIMEOUT};
use common::servers;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// `--timeout`, in seconds.
const TIMEOUT: u64 = 6;
/// How long the proxy holds each answer while stalled, in seconds.
const STALL: u64 = 1;
/// Arrays in `far`: its listing loads their documents 32 at a time, 10 rounds of [`STALL`].
const FAR_ARRAYS: usize = 320;
/// Elements (and chunks, none stored: every element is the fill value) of `strings`: sizing
/// it reads them ahead, the window doubling from one chunk up to 64 in flight, so about
/// 6 + (400 - 63) / 64 rounds of [`STALL`] in all: longer than `--timeout` (and than the tests'
/// guard: on a request thread, its `stat` would hold that thread until the guard fails).
const STRINGS: usize = 400;
/// The selection of `strings` looked up: all but its first and last elements.
const SLICE: &str = "strings[1:399]";
/// Requests the pool runs at once, at most (`MAX_WORKERS` of `fuse::requests`).
const POOL_WORKERS: usize = 1024;

const GROUP: &str = r#"{"zarr_format": 3, "node_type": "group", "attributes": {}}"#;

fn array_doc(data_type: &str, shape: usize, chunk: usize, fill: &str, codec: &str) -> String {
    format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [{shape}],
        "data_type": "{data_type}", "fill_value": {fill},
        "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [{chunk}]}}}},
        "chunk_key_encoding": {{"name": "default", "configuration": {{"separator": "/"}}}},
        "codecs": [{codec}]}}"#
    )
}

const BYTES: &str = r#"{"name": "bytes", "configuration": {"endian": "little"}}"#;

/// The four int32 of `loaded/a`.
fn a_values() -> Vec<u8> {
    [5i32, 6, 7, 8]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A Zarr v3 tree without consolidated metadata: `loaded/a` (int32, one chunk), `far` (a
/// group of [`FAR_ARRAYS`] arrays) and `strings` (a variable-length string array of
/// [`STRINGS`] absent chunks of one element, fill value `NA`).
fn tree(root: &Path) {
    write(&root.join("zarr.json"), GROUP);
    write(&root.join("loaded/zarr.json"), GROUP);
    write(
        &root.join("loaded/a/zarr.json"),
        array_doc("int32", 4, 4, "0", BYTES),
    );
    write(&root.join("loaded/a/c/0"), a_values());
    write(&root.join("far/zarr.json"), GROUP);
    for i in 0..FAR_ARRAYS {
        let doc = array_doc("int32", 4, 4, "0", BYTES);
        write(&root.join(format!("far/x{i}/zarr.json")), doc);
    }
    let vlen = r#"{"name": "vlen-utf8", "configuration": {}}"#;
    let doc = array_doc("string", STRINGS, 1, "\"NA\"", vlen);
    write(&root.join("strings/zarr.json"), doc);
}

/// The names in directory `path`, sorted.
fn list(path: &Path) -> std::io::Result<Vec<String>> {
    let mut names = std::fs::read_dir(path)?
        .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<Vec<_>>>()?;
    names.sort();
    Ok(names)
}

/// The size `stat` shows of `path`.
fn size(path: &Path) -> std::io::Result<u64> {
    std::fs::metadata(path).map(|m| m.len())
}

/// The inodes `df` shows of the mount at `path`.
fn df_files(path: &Path) -> std::io::Result<u64> {
    rustix::fs::statvfs(path)
        .map(|s| s.f_files)
        .map_err(std::io::Error::from)
}

fn stats(mount: &Mount) -> Value {
    let path = mount.join(".zarrfs/stats");
    let text = timed("read stats", move || std::fs::read(path).unwrap());
    serde_json::from_slice(&text).unwrap()
}

/// `op`'s answer once its work is done: while that work takes longer than `--timeout`, as it
/// may on a loaded machine, the request gets EIO and the work goes on, so it is asked again.
fn eventually<T: Send + 'static>(
    what: &str,
    op: impl Fn() -> std::io::Result<T> + Clone + Send + 'static,
) -> T {
    for _ in 0..5 {
        match timed(what, op.clone()) {
            Err(e) if e.raw_os_error() == Some(libc::EIO) => continue,
            got => return got.unwrap_or_else(|e| panic!("{what}: {e}")),
        }
    }
    panic!("{what}: EIO five times over")
}

/// The lookups of selection files the kernel holds, as `.zarrfs/stats` counts them.
fn selection_lookups(mount: &Mount) -> u64 {
    stats(mount)["metadata"]["selection_lookups"]
        .as_u64()
        .unwrap()
}

type Stalled = Box<dyn FnOnce() -> std::io::Result<()> + Send>;

/// [`tree`] served by S3 in bucket `bucket` behind a fault proxy, mounted with `--timeout`
/// [`TIMEOUT`], two request threads and no look-ahead; the store's directory and the servers
/// are kept alive by the caller.
fn stalled_tree_mount(
    bucket: &str,
) -> (tempfile::TempDir, servers::Server, servers::Server, Mount) {
    let store = tempfile::tempdir().unwrap();
    let tree_dir = store.path().join("tree");
    tree(&tree_dir);
    let s3 = servers::s3_server(&[(bucket, std::slice::from_ref(&tree_dir))]);
    servers::s3_credentials_env();
    let proxy = servers::fault_proxy(&s3);
    let timeout = TIMEOUT.to_string();
    let args = [
        "--endpoint",
        &proxy.url,
        "--timeout",
        &timeout,
        "--threads",
        "2",
        "--no-look-ahead",
    ];
    let m = Mount::new(Path::new(&format!("s3://{bucket}/tree")), &args);
    (store, s3, proxy, m)
}

#[test]
fn more_stalled_metadata_requests_than_threads_leave_the_mount_answering_and_each_gets_eio() {
    if !fuse_ready() {
        return;
    }
    let (_store, _s3, proxy, m) = stalled_tree_mount("stalls");
    // `loaded` is listed and `loaded/a` read (its chunk cached) before the store stalls.
    let loaded = m.join("loaded");
    let names = list(&loaded).unwrap();
    assert!(names.contains(&"a.npy".to_string()), "{names:?}");
    assert_eq!(
        read_start_direct(m.join("loaded/a"), 16).unwrap(),
        a_values()
    );

    servers::fault(&proxy, &format!("sleep/{STALL}"));
    let (root, far) = (m.path().to_path_buf(), m.join("far"));
    let slice = m.join(SLICE);
    let stalled: Vec<(&str, Stalled)> = vec![
        ("stat strings", {
            let p = m.join("strings");
            Box::new(move || size(&p).map(drop))
        }),
        ("stat a selection of strings", {
            let p = slice.clone();
            Box::new(move || size(&p).map(drop))
        }),
        ("stat .header.cdl", {
            let p = m.join(".header.cdl");
            Box::new(move || size(&p).map(drop))
        }),
        ("ls far", {
            let p = far.clone();
            Box::new(move || list(&p).map(drop))
        }),
        ("stat far/x7", {
            let p = m.join("far/x7");
            Box::new(move || size(&p).map(drop))
        }),
        ("df", {
            let p = root.clone();
            Box::new(move || df_files(&p).map(drop))
        }),
    ];
    let stalled: Vec<_> = stalled
        .into_iter()
        .map(|(what, op)| (what, std::thread::spawn(op)))
        .collect();
    std::thread::sleep(Duration::from_millis(500));

    // Six stalled requests, two request threads: these used to wait behind them.
    let ls = timed("ls -l loaded", move || {
        std::process::Command::new("ls")
            .arg("-l")
            .arg(loaded)
            .output()
            .unwrap()
    });
    assert!(ls.status.success(), "{ls:?}");
    assert!(String::from_utf8_lossy(&ls.stdout).contains("a.npy"));
    assert_eq!(
        read_start_direct(m.join("loaded/a"), 16).unwrap(),
        a_values(),
        "a cached read"
    );
    let p = m.join("loaded/a[1:3]");
    assert_eq!(timed("stat a selection", move || size(&p)).unwrap(), 8);
    assert_eq!(
        read_start_direct(m.join("loaded/a[1:3]"), 16).unwrap(),
        a_values()[4..12]
    );

    for (what, op) in stalled {
        let got = timed(what, move || op.join().unwrap());
        assert!(
            matches!(&got, Err(e) if e.raw_os_error() == Some(libc::EIO)),
            "{what}: {got:?}"
        );
    }

    // The work went on: once the store answers again, later requests get its results.
    servers::fault(&proxy, "ok");
    let names = eventually("ls far", move || list(&far));
    let arrays = names.iter().filter(|n| n.starts_with('x')).count();
    assert_eq!(arrays, 3 * FAR_ARRAYS, "{names:?}");
    let p = m.join("strings");
    assert_eq!(
        eventually("stat strings", move || size(&p)),
        3 * STRINGS as u64
    );
    let got = read_start_direct(m.join("strings"), 4096).unwrap();
    assert_eq!(String::from_utf8(got).unwrap(), "NA\n".repeat(STRINGS));
    let p = slice.clone();
    let size_of_slice = eventually("stat a selection of strings", move || size(&p));
    assert_eq!(size_of_slice, 3 * (STRINGS as u64 - 2));
    let p = m.join(".header.cdl");
    let header_size = eventually("stat .header.cdl", move || size(&p));
    let p = m.join(".header.cdl");
    let header = timed("read .header.cdl", move || std::fs::read(p).unwrap());
    assert_eq!(header.len() as u64, header_size);
    assert!(
        header.starts_with(b"netcdf "),
        "{}",
        String::from_utf8_lossy(&header)
    );
    let p = m.path().to_path_buf();
    assert!(eventually("df", move || df_files(&p)) > FAR_ARRAYS as u64);

    // The kernel holds one lookup of each selection it was answered: `loaded/a[1:3]` and the
    // one of `strings` answered. Those answered EIO were counted by the view when their work
    // ended: they are given back (the kernel will never forget them).
    let start = Instant::now();
    while selection_lookups(&m) > 2 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "a lookup answered EIO is still counted: {}",
            stats(&m)["metadata"]
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, stderr) = m.stop();
    for what in [
        "lookup \"strings\"",
        &format!("lookup \"{SLICE}\""),
        "lookup \".header.cdl\"",
        "readdirplus",
        "lookup \"x7\"",
        "statfs",
    ] {
        let overdue = |l: &&str| l.contains(what) && l.contains("(see --timeout): EIO");
        assert!(
            stderr.lines().any(|l| overdue(&l)),
            "no log line for the overdue {what}:\n{stderr}"
        );
    }
}

/// How many threads of process `pid` are named `name`.
fn threads_named(pid: u32, name: &str) -> usize {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == name)
        .count()
}

#[test]
fn with_every_worker_held_by_the_stalled_store_what_is_in_memory_is_still_answered() {
    if !fuse_ready() {
        return;
    }
    let (_store, _s3, proxy, m) = stalled_tree_mount("held");
    // `loaded` is loaded by the lookup of `a.npy`: the kernel knows no other name in it.
    size(&m.join("loaded/a.npy")).unwrap();

    servers::fault(&proxy, &format!("sleep/{}", 100 * TIMEOUT));
    // More lookups in `far` than the pool has workers: each holds its worker while `far` loads
    // from the stalled store (a load that fails is made again by the next: for as long as the
    // store stalls).
    let stalled = POOL_WORKERS + 64;
    let lookups: Vec<_> = (0..stalled)
        .map(|i| {
            let p = m.join(&format!("far/x{i}"));
            std::thread::spawn(move || size(&p))
        })
        .collect();
    let pid = m.pid();
    let started = Instant::now();
    while threads_named(pid, "request") < POOL_WORKERS {
        assert!(
            started.elapsed() < OP_TIMEOUT,
            "{} request workers",
            threads_named(pid, "request")
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // A request handed to the pool now would wait for a worker, past its deadline (EIO).
    let p = m.join("loaded/a");
    assert_eq!(timed("stat loaded/a", move || size(&p)).unwrap(), 16);
    let p = m.join("loaded");
    assert_eq!(
        timed("ls loaded", move || list(&p)).unwrap(),
        [
            ".group.json",
            ".header.cdl",
            ".ncstream",
            ".zom.json",
            "a",
            "a.json",
            "a.npy"
        ]
    );
    // Those that need the store are on the pool: each gets EIO at its deadline.
    for lookup in lookups {
        let got = timed("stat far/x..", move || lookup.join().unwrap());
        assert!(
            matches!(&got, Err(e) if e.raw_os_error() == Some(libc::EIO)),
            "{got:?}"
        );
    }

    servers::fault(&proxy, "ok");
    let far = m.join("far");
    let names = eventually("ls far", move || list(&far));
    let arrays = names.iter().filter(|n| n.starts_with('x')).count();
    assert_eq!(arrays, 3 * FAR_ARRAYS, "{names:?}");
    let (_, stderr) = m.stop();
    let overdue: Vec<&str> = (stderr.lines())
        .filter(|l| l.contains("(see --timeout): EIO"))
        .collect();
    // Each a lookup in `far` (the one whose load failed with the store's error as its deadline
    // came may have been answered that error instead).
    let far_lookups = overdue.iter().filter(|l| l.contains("lookup \"x"));
    assert_eq!(far_lookups.count(), overdue.len(), "{overdue:#?}");
    assert!(overdue.len() >= POOL_WORKERS, "{overdue:#?}");
}
