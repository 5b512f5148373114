//! Ordinary tools on a mount: dd, od, cp, numpy; and the mount is read-only (EROFS).

use crate::common;

use common::mount::{python, timed, Mount};
use common::{expected_bytes, load_manifest, StoreCase};
use std::path::Path;
use std::process::Command;

fn demo_case() -> StoreCase {
    load_manifest("manifest.json")
        .into_iter()
        .find(|c| c.name == "demo")
        .unwrap()
}

/// The file every test here reads.
const FILE: &str = "surface/temperature";

/// The expected `.npy` and raw bytes of [`FILE`].
fn expected_file(case: &StoreCase) -> (Vec<u8>, Vec<u8>) {
    expected_bytes(case.nodes.iter().find(|n| n.path == FILE).unwrap())
}

/// Runs `program args` once on the mounted file and once on a local copy of the expected bytes;
/// returns both outputs.
fn same_output(
    program: &str,
    args: &[&str],
    mounted: &Path,
    expected: &[u8],
) -> (Vec<u8>, Vec<u8>) {
    let local = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(local.path(), expected).unwrap();
    let run = |file: &Path| {
        let (program, args, file) = (
            program.to_string(),
            args.iter()
                .map(|a| a.replace("{}", file.to_str().unwrap()))
                .collect::<Vec<_>>(),
            file.to_path_buf(),
        );
        timed(&program.clone(), move || {
            let out = Command::new(&program)
                .args(&args)
                .arg_if_absent(&file)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{program} {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            out.stdout
        })
    };
    (run(mounted), run(local.path()))
}

trait ArgIfAbsent {
    fn arg_if_absent(&mut self, file: &Path) -> &mut Self;
}

impl ArgIfAbsent for Command {
    /// Appends the file unless an argument already names it (`if={}`).
    fn arg_if_absent(&mut self, file: &Path) -> &mut Self {
        let named = self
            .get_args()
            .any(|a| a.to_string_lossy().contains(file.to_str().unwrap()));
        if !named {
            self.arg(file);
        }
        self
    }
}

#[test]
fn dd_od_and_cp_see_the_expected_bytes() {
    if !common::mount::fuse_ready() {
        return;
    }
    let case = demo_case();
    let mount = Mount::new(&case.store, &[]);
    let (npy, data) = expected_file(&case);
    let file = mount.join(FILE);
    for args in [
        vec!["if={}", "bs=1000", "skip=3", "count=5", "status=none"],
        vec!["if={}", "bs=1M", "status=none"],
        vec![
            "if={}",
            "bs=4096",
            "skip=1",
            "count=1",
            "status=none",
            "iflag=direct",
        ],
    ] {
        let (got, want) = same_output("dd", &args, &file, &data);
        assert!(!want.is_empty());
        assert_eq!(got, want, "dd {args:?}");
    }
    let (got, want) = same_output(
        "od",
        &["-A", "d", "-t", "f4", "-j", "4093", "-N", "4000"],
        &file,
        &data,
    );
    assert_eq!(got, want, "od");

    let dest = tempfile::tempdir().unwrap();
    let (src, dst) = (mount.path().to_path_buf(), dest.path().join("copy"));
    let out = timed("cp -r", move || {
        Command::new("cp")
            .arg("-r")
            .arg(&src)
            .arg(&dst)
            .output()
            .unwrap()
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(dest.path().join("copy").join(FILE)).unwrap(),
        data
    );
    assert_eq!(
        std::fs::read(dest.path().join("copy").join(format!("{FILE}.npy"))).unwrap(),
        npy
    );
}

#[test]
fn numpy_loads_and_memmaps_the_mounted_files() {
    if !common::mount::fuse_ready() {
        return;
    }
    let case = demo_case();
    let mount = Mount::new(&case.store, &[]);
    let node = case.nodes.iter().find(|n| n.path == FILE).unwrap();
    let script = r#"
import sys, json, numpy as np
npy, raw, expected = sys.argv[1:4]
want = np.load(expected)
a = np.load(npy, mmap_mode="r")
assert a.dtype == want.dtype and a.shape == want.shape, (a.dtype, a.shape)
assert np.array_equal(a, want, equal_nan=True)
m = np.memmap(raw, dtype=want.dtype, mode="r", shape=want.shape)
assert np.array_equal(m[:, 3, :], want[:, 3, :], equal_nan=True)
assert np.array_equal(m[..., 5], want[..., 5], equal_nan=True)
print("ok")
"#;
    let args = [
        mount.join(&format!("{FILE}.npy")),
        mount.join(FILE),
        node.npy.clone().unwrap(),
    ];
    let out = python(script, args.map(|p| p.display().to_string()).to_vec());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "ok",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_mount_is_read_only() {
    if !common::mount::fuse_ready() {
        return;
    }
    let case = demo_case();
    let mount = Mount::new(&case.store, &[]);
    let file = mount.join(FILE);
    let erofs = |r: std::io::Result<()>, what: &str| match r {
        Err(e) if e.raw_os_error() == Some(libc::EROFS) => {}
        other => panic!("{what}: expected EROFS, got {other:?}"),
    };
    erofs(std::fs::write(mount.join("new"), b"x"), "create");
    erofs(std::fs::create_dir(mount.join("dir")), "mkdir");
    erofs(std::fs::remove_file(&file), "unlink");
    erofs(std::fs::remove_dir(mount.join("surface")), "rmdir");
    erofs(std::fs::rename(&file, mount.join("moved")), "rename");
    erofs(
        std::fs::OpenOptions::new()
            .write(true)
            .open(&file)
            .map(drop),
        "open for writing",
    );
    erofs(
        std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .map(drop),
        "open for appending",
    );
    use std::os::unix::fs::PermissionsExt;
    erofs(
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o777)),
        "chmod",
    );
    // And nothing changed.
    let (_, data) = expected_file(&case);
    assert_eq!(std::fs::read(&file).unwrap(), data);
}
