//! A few hostile stores through a real FUSE mount: the daemon mounts them (no stack overflow, no
//! hang), lists each name once, fails the bad reads with EIO and serves the healthy bytes.

use crate::common;

/// What the root of a store holding one good array lists.
const ROOT_LISTING: [&str; 10] = [
    ".",
    "..",
    ".group.json",
    ".header.cdl",
    ".ncstream",
    ".zarrfs",
    ".zom.json",
    "good",
    "good.json",
    "good.npy",
];

use common::mount::{timed, Mount};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

const GOOD: [u8; 12] = [0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0];

fn hostile(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hostile")
        .join(name)
}

/// `ls -a` of `dir`, one name a line.
fn ls_a(dir: PathBuf) -> Vec<String> {
    timed("ls -a", move || {
        let out = Command::new("ls").arg("-a").arg(&dir).output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    })
}

fn read(path: PathBuf) -> std::io::Result<Vec<u8>> {
    timed("read", move || std::fs::read(path))
}

#[test]
fn escaping_consolidated_keys_mount_and_list_each_name_once() {
    let m = Mount::new(&hostile("keys_v3_consolidated_escape.zarr"), &[]);
    assert_eq!(ls_a(m.path().to_path_buf()), ROOT_LISTING);
    assert_eq!(read(m.join("good")).unwrap(), GOOD);
    let (status, stderr) = m.stop();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains(r#"refused key """#), "{stderr}");
}

#[test]
fn a_symlink_cycle_mounts() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(root.join(".zgroup"), r#"{"zarr_format": 2}"#).unwrap();
    std::fs::create_dir(root.join("good")).unwrap();
    std::fs::write(
        root.join("good/.zarray"),
        r#"{"zarr_format": 2, "shape": [6], "chunks": [6], "dtype": "<i2", "compressor": null, "filters": null, "fill_value": 0, "order": "C"}"#,
    )
    .unwrap();
    std::fs::write(root.join("good/0"), GOOD).unwrap();
    symlink(".", root.join("self1")).unwrap();
    symlink(".", root.join("self2")).unwrap();
    let m = Mount::new(root, &[]);
    assert_eq!(ls_a(m.path().to_path_buf()), ROOT_LISTING);
    assert_eq!(read(m.join("good")).unwrap(), GOOD);
}

#[test]
fn a_decompression_bomb_is_eio_and_its_neighbour_reads() {
    let m = Mount::new(&hostile("bomb_v2_zlib.zarr"), &[]);
    let err = read(m.join("bomb")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    assert_eq!(read(m.join("good")).unwrap(), GOOD);
    // The mount is still up and still answers after the failed read.
    assert_eq!(read(m.join("good")).unwrap(), GOOD);
}

#[test]
fn a_zip_member_changed_since_it_was_written_is_eio_and_its_neighbour_reads() {
    // Its neighbouring chunks, in the same page, are checked by tests/hostile.rs.
    let m = Mount::new(&hostile("zip_crc_stored.zip"), &[]);
    let err = read(m.join("bad")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    assert_eq!(read(m.join("good")).unwrap(), GOOD);
    let (status, stderr) = m.stop();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("bad/1: CRC-32"), "{stderr}");
}

#[test]
fn a_small_string_array_with_a_damaged_chunk_is_eio_not_empty() {
    // Its size is found at `stat` by reading every chunk; that failing, the files showed size
    // 0 and read as empty (exit status 0).
    let tmp = tempfile::tempdir().unwrap();
    let fixture = common::fixtures_dir().join("dialects/vlen_v3_zarr3.zarr");
    common::servers::copy_tree(&fixture, tmp.path());
    std::fs::write(tmp.path().join("strings/c/0/1"), b"garbage").unwrap();
    let m = Mount::new(tmp.path(), &[]);
    for name in ["strings", "strings.npy", "strings[:]", "strings[:].npy"] {
        for _ in 0..2 {
            let err = read(m.join(name)).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EIO), "{name}: {err}");
        }
    }
    let case = common::fixture_case("vlen_v3_zarr3");
    assert_eq!(
        read(m.join("raw")).unwrap(),
        common::expected_data(&case, "raw")
    );
}
