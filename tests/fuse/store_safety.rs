//! A local store's owner against the daemon reading it (issue 25, findings 1 and 3): links
//! swapped in after the mount never reach outside the store, and FIFOs, sockets and devices
//! fail alone (EIO or absent, with a log line) without blocking the mount or growing memory.
//! Mounted by root with `-o allow_other`, read and attacked as `nobody` with `setpriv`.

use crate::common;
use common::mount::{root_fuse_ready, timed, Mount};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A two-chunk uint8 array of 16 elements, chunk keys `c/0` and `c/1`.
const ARRAY: &str = r#"{"zarr_format": 3, "node_type": "array", "shape": [16], "data_type": "uint8",
  "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8]}},
  "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
  "fill_value": 0, "codecs": [{"name": "bytes"}]}"#;
const GROUP: &str = r#"{"zarr_format": 3, "node_type": "group"}"#;
const SECRET: &[u8; 8] = b"SECRET!!";

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Writes array `name` under `root` holding `data` twice (one copy per chunk).
fn write_array(root: &Path, name: &str, data: &[u8; 8]) {
    write(&root.join(name).join("zarr.json"), ARRAY.as_bytes());
    write(&root.join(name).join("c/0"), data);
    write(&root.join(name).join("c/1"), data);
}

/// `data` twice.
fn twice(data: [u8; 8]) -> Vec<u8> {
    [data, data].concat()
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn give_to_nobody(path: &Path) {
    let ok = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(path)
        .status()
        .unwrap();
    assert!(ok.success());
}

/// Runs `sh -c script` as `nobody`.
fn as_nobody(script: String) -> Output {
    timed("setpriv", move || {
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "sh",
                "-c",
            ])
            .arg(script)
            .output()
            .unwrap()
    })
}

fn sh_quote(p: &Path) -> String {
    format!("'{}'", p.display())
}

#[test]
fn links_swapped_in_after_the_mount_never_reach_outside_the_store() {
    if !root_fuse_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The owner's directory (theirs, with the store), and root's secrets beside it.
    let home = tmp.path().join("home");
    let store = home.join("store.zarr");
    write(&store.join("zarr.json"), GROUP.as_bytes());
    write_array(&store, "a", &[10, 11, 12, 13, 14, 15, 16, 17]);
    write_array(&store, "b", &[20, 21, 22, 23, 24, 25, 26, 27]);
    give_to_nobody(&home);
    let secrets = tmp.path().join("secrets");
    write(&secrets.join("1"), SECRET);
    write(&secrets.join("zarr.json"), GROUP.as_bytes());
    write_array(&secrets, "b", SECRET);
    for f in ["1", "zarr.json", "b/zarr.json", "b/c/0", "b/c/1"] {
        chmod(&secrets.join(f), 0o600);
    }
    chmod(tmp.path(), 0o755);
    let mount = Mount::new(&store, &["-o", "allow_other"]);
    // One chunk of an array, read by `nobody` with O_DIRECT (no readahead, no page cache).
    let read_chunk = |name: &str, chunk: u32| {
        let path = sh_quote(&mount.join(name));
        as_nobody(format!(
            "dd if={path} iflag=direct bs=8 skip={chunk} count=1 status=none"
        ))
    };

    // Reads chunk 0 of `array`, has `nobody` replace `path` (moved to `moved`) with a link to
    // root's secrets, and reads chunk 1.
    let swap_between_chunks = |array: &str, path: &Path, moved: &Path| {
        let got = read_chunk(array, 0);
        let swap = as_nobody(format!(
            "mv {0} {1} && ln -s {2} {0}",
            sh_quote(path),
            sh_quote(moved),
            sh_quote(&secrets)
        ));
        assert!(swap.status.success(), "{swap:?}");
        (got, read_chunk(array, 1))
    };

    // A chunk directory, read from once, then swapped for a link to root's secrets.
    let (first, got) = swap_between_chunks("a", &store.join("a/c"), &store.join("a/c.old"));
    assert_eq!(first.stdout, [10, 11, 12, 13, 14, 15, 16, 17], "{first:?}");
    assert_ne!(
        got.stdout, SECRET,
        "a secret was served through the swapped directory"
    );
    assert!(
        !got.status.success(),
        "a read through the link out: {got:?}"
    );
    assert!(
        String::from_utf8_lossy(&got.stderr).contains("Input/output error"),
        "{got:?}"
    );

    // The store root swapped for a link to root's secrets: the mount goes on serving the
    // directory it opened.
    let (first, got) = swap_between_chunks("b", &store, &home.join("store.old"));
    assert_eq!(first.stdout, [20, 21, 22, 23, 24, 25, 26, 27], "{first:?}");
    assert_ne!(
        got.stdout, SECRET,
        "a secret was served through the swapped root"
    );
    assert_eq!(got.stdout, [20, 21, 22, 23, 24, 25, 26, 27], "{got:?}");

    let (status, stderr) = mount.stop();
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.contains("a/c/1"),
        "no log line names the key:\n{stderr}"
    );
}

/// A FIFO at `path`.
fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mode = rustix::fs::Mode::from_raw_mode(0o644);
    rustix::fs::mknodat(rustix::fs::CWD, path, rustix::fs::FileType::Fifo, mode, 0).unwrap();
}

/// The daemon's resident memory in KiB.
fn vm_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn read_file(path: PathBuf) -> std::io::Result<Vec<u8>> {
    timed("read", move || std::fs::read(path))
}

fn eio(r: &std::io::Result<Vec<u8>>) -> bool {
    matches!(r, Err(e) if e.raw_os_error() == Some(libc::EIO))
}

/// A store in `dir` with one healthy array, `good`.
fn store_with_good(dir: &Path) -> PathBuf {
    let store = dir.join("store.zarr");
    write(&store.join("zarr.json"), GROUP.as_bytes());
    write_array(&store, "good", &[1, 2, 3, 4, 5, 6, 7, 8]);
    store
}

#[test]
fn fifos_and_sockets_fail_alone_and_never_block() {
    if !root_fuse_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let store = store_with_good(tmp.path());
    // A FIFO as a chunk, as a group's and as an array's metadata, a socket as a chunk.
    write(&store.join("fifo_chunk/zarr.json"), ARRAY.as_bytes());
    mkfifo(&store.join("fifo_chunk/c/0"));
    mkfifo(&store.join("fifo_group/zarr.json"));
    mkfifo(&store.join("fifo_array/zarr.json"));
    write(&store.join("fifo_array/c/0"), &[0; 8]);
    write(&store.join("fifo_array/c/1"), &[0; 8]);
    write(&store.join("socket_chunk/zarr.json"), ARRAY.as_bytes());
    std::fs::create_dir_all(store.join("socket_chunk/c")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(store.join("socket_chunk/c/0")).unwrap();
    let mount = Mount::new(&store, &[]);
    assert_eq!(
        read_file(mount.join("good")).unwrap(),
        twice([1, 2, 3, 4, 5, 6, 7, 8])
    );
    let fifo = read_file(mount.join("fifo_chunk"));
    assert!(eio(&fifo), "{fifo:?}");
    let socket = read_file(mount.join("socket_chunk"));
    assert!(eio(&socket), "{socket:?}");
    assert!(!mount.join("fifo_array").is_file());
    // Reads went on answering (a FIFO used to hold a request thread for good).
    for _ in 0..16 {
        assert!(eio(&read_file(mount.join("fifo_chunk"))));
    }
    assert_eq!(
        read_file(mount.join("good")).unwrap(),
        twice([1, 2, 3, 4, 5, 6, 7, 8])
    );
    let (status, stderr) = mount.stop();
    assert!(
        status.success(),
        "SIGTERM did not end the daemon cleanly:\n{stderr}"
    );
    for key in [
        "fifo_chunk/c/0",
        "fifo_group/zarr.json",
        "fifo_array/zarr.json",
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains(key) && l.contains("a FIFO, not a regular file")),
            "no log line names {key}:\n{stderr}"
        );
    }
    // A socket is refused by its type too (it is never opened: that would fail, ENXIO).
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("socket_chunk/c/0") && l.contains("a socket, not a regular file")),
        "{stderr}"
    );
}

#[test]
fn a_device_as_metadata_is_refused_unread() {
    if !root_fuse_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let store = store_with_good(tmp.path());
    // /dev/zero (character device 1:5) as an array's metadata and as a chunk: a tarball
    // unpacked by root keeps device nodes. Device 0:0 has no driver: opening it fails (ENXIO),
    // so its log line tells whether it was opened before its type was checked.
    std::fs::create_dir_all(store.join("zero/c")).unwrap();
    for array in ["zero_chunk", "nodriver_chunk"] {
        write(&store.join(array).join("zarr.json"), ARRAY.as_bytes());
        std::fs::create_dir_all(store.join(array).join("c")).unwrap();
    }
    for (node, dev) in [
        ("zero/zarr.json", rustix::fs::makedev(1, 5)),
        ("zero_chunk/c/0", rustix::fs::makedev(1, 5)),
        ("nodriver/zarr.json", 0),
        ("nodriver_chunk/c/0", 0),
    ] {
        std::fs::create_dir_all(store.join(node).parent().unwrap()).unwrap();
        let (char_device, mode) = (
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::from_raw_mode(0o644),
        );
        let made = rustix::fs::mknodat(rustix::fs::CWD, store.join(node), char_device, mode, dev);
        assert!(made.is_ok(), "mknod {node}: {made:?}");
    }
    let mount = Mount::new(&store, &[]);
    assert_eq!(
        read_file(mount.join("good")).unwrap(),
        twice([1, 2, 3, 4, 5, 6, 7, 8])
    );
    assert!(!mount.join("zero").is_file());
    assert!(!mount.join("nodriver").is_file());
    assert!(eio(&read_file(mount.join("zero_chunk"))));
    assert!(eio(&read_file(mount.join("nodriver_chunk"))));
    let rss = vm_rss_kib(mount.pid());
    assert!(rss < 512 << 10, "the daemon holds {rss} KiB");
    let (status, stderr) = mount.stop();
    assert!(status.success(), "{stderr}");
    for node in ["zero/zarr.json", "nodriver/zarr.json", "nodriver_chunk/c/0"] {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains(node) && l.contains("a character device")),
            "no log line names {node} as a character device:\n{stderr}"
        );
    }
}
