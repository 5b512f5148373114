//! The tool-facing views through a real mount: `getfattr -d` and `os.getxattr` on arrays and
//! groups, EROFS on `setfattr`, `.zom.json` readable, and `df`'s totals.

use crate::common;

use common::mount::{timed, Mount};
use common::{load_manifest, npy_header_len, StoreCase};
use std::process::Command;

fn demo_case() -> StoreCase {
    load_manifest("manifest.json")
        .into_iter()
        .find(|c| c.name == "demo")
        .unwrap()
}

fn run(program: &str, args: Vec<String>) -> std::process::Output {
    let program = program.to_string();
    timed(&program.clone(), move || {
        Command::new(&program).args(&args).output().unwrap()
    })
}

#[test]
fn getfattr_and_python_see_the_metadata_and_setfattr_is_refused() {
    if !common::mount::fuse_ready() {
        return;
    }
    let case = demo_case();
    let mount = Mount::new(&case.store, &[]);
    let file = mount.join("surface/temperature");
    let node = case
        .nodes
        .iter()
        .find(|n| n.path == "surface/temperature")
        .unwrap();
    let json = node.json.as_ref().unwrap();

    let out = run("getfattr", vec!["-d".into(), file.to_str().unwrap().into()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for name in [
        "user.zarr.shape",
        "user.zarr.dtype",
        "user.zarr.chunks",
        "user.zarr.dimension_names",
        "user.zarr.fill_value",
        "user.zarr.codecs",
        "user.zarr.format",
    ] {
        assert!(text.contains(&format!("{name}=")), "{name} missing: {text}");
    }
    let shape = serde_json::to_string(&json["shape"]).unwrap();
    assert!(
        text.contains(&format!("user.zarr.shape=\"{shape}\"")),
        "{text}"
    );

    // Python's os.getxattr probes the size first, then reads.
    let npy = std::fs::read(node.npy.as_ref().unwrap()).unwrap();
    let header = String::from_utf8_lossy(&npy[..npy_header_len(&npy)]).into_owned();
    let script = "import os, sys; print(os.getxattr(sys.argv[1], 'user.zarr.dtype').decode()); \
                  print(sorted(os.listxattr(sys.argv[1])))";
    let out = run(
        "python3",
        vec!["-c".into(), script.into(), file.to_str().unwrap().into()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let dtype = text.lines().next().unwrap();
    assert!(
        header.contains(&format!("'descr': '{dtype}'")),
        "{dtype} vs {header}"
    );
    assert!(text.contains("'user.zarr.shape'"), "{text}");

    let group = mount.join("surface");
    let out = run(
        "getfattr",
        vec![
            "--only-values".into(),
            "-n".into(),
            "user.zarr.attributes".into(),
            group.to_str().unwrap().into(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let attrs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let expected = case.nodes.iter().find(|n| n.path == "surface").unwrap();
    let want = expected.json.as_ref().and_then(|j| j.get("attributes"));
    assert_eq!(
        Some(&attrs),
        want,
        "the manifest records the group's attributes"
    );

    let out = run(
        "getfattr",
        vec![
            "-n".into(),
            "user.nosuch".into(),
            file.to_str().unwrap().into(),
        ],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("No such attribute"),
        "{out:?}"
    );
    let out = run(
        "setfattr",
        vec![
            "-n".into(),
            "user.x".into(),
            "-v".into(),
            "1".into(),
            file.to_str().unwrap().into(),
        ],
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Read-only file system"),
        "{out:?}"
    );

    let zom: serde_json::Value =
        serde_json::from_slice(&std::fs::read(mount.join(".zom.json")).unwrap()).unwrap();
    assert_eq!(
        zom["members"]["surface"]["members"]["temperature"]["shape"],
        json["shape"]
    );
    mount.stop();
}

#[test]
fn df_shows_the_decoded_size_of_the_arrays() {
    if !common::mount::fuse_ready() {
        return;
    }
    let case = demo_case();
    let total = common::decoded_total(&case);
    let mount = Mount::new(&case.store, &[]);
    let script = "import os, sys; s = os.statvfs(sys.argv[1]); print(s.f_frsize, s.f_blocks, s.f_bfree, s.f_files)";
    let out = run(
        "python3",
        vec![
            "-c".into(),
            script.into(),
            mount.path().to_str().unwrap().into(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let nums: Vec<u64> = String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(|s| s.parse().unwrap())
        .collect();
    let (frsize, blocks, free, files) = (nums[0], nums[1], nums[2], nums[3]);
    assert_eq!(blocks, total.div_ceil(frsize), "{nums:?}, {total} bytes");
    assert_eq!(free, 0);
    assert!(files > case.nodes.len() as u64, "{files}");
    mount.stop();
}

#[test]
fn stats_file_shows_fresh_counters_to_cat() {
    if !common::mount::fuse_ready() {
        return;
    }
    let case = demo_case();
    let mount = Mount::new(&case.store, &[]);
    let stats = mount.join(".zarrfs/stats");
    let read = |p: &std::path::Path| -> serde_json::Value {
        let out = run("cat", vec![p.to_str().unwrap().into()]);
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let before = read(&stats);
    let data = std::fs::read(mount.join("surface/temperature")).unwrap();
    let after = read(&stats);
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap();
    assert!(
        n(&after, "read_bytes") >= n(&before, "read_bytes") + data.len() as u64,
        "{before} {after}"
    );
    assert!(
        n(&after["cache"], "misses") > n(&before["cache"], "misses"),
        "{after}"
    );
    assert!(n(&after, "store_bytes") > n(&before, "store_bytes"));
    mount.stop();
}

#[test]
fn previews_show_through_the_mount_and_no_previews_hides_them() {
    if !common::mount::fuse_ready() {
        return;
    }
    let case = demo_case();
    let node = case
        .nodes
        .iter()
        .find(|n| n.path == "surface/temperature")
        .unwrap();
    assert!(node.has_preview());
    let mount = Mount::new(&case.store, &[]);
    let png_path = mount.join("surface/temperature.png");
    // `stat` does not render the picture: size 0 until opened; reads use direct I/O.
    assert_eq!(std::fs::metadata(&png_path).unwrap().len(), 0);
    let bytes = std::fs::read(&png_path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    // Rendered, its size shows at the next stat (the 0 before was not cached).
    assert_eq!(
        std::fs::metadata(&png_path).unwrap().len(),
        bytes.len() as u64
    );
    let (w, h) = (
        u32::from_be_bytes(bytes[16..20].try_into().unwrap()),
        u32::from_be_bytes(bytes[20..24].try_into().unwrap()),
    );
    let npy = std::fs::read(node.npy.as_ref().unwrap()).unwrap();
    let (_, shape) = common::npy_descr_shape(&npy);
    let n = shape.len();
    assert_eq!(
        (u64::from(h), u64::from(w)),
        (shape[n - 2].min(1024), shape[n - 1].min(1024))
    );
    mount.stop();

    let mount = Mount::new(&case.store, &["--no-previews"]);
    assert!(!mount.join("surface/temperature.png").exists());
    let names: Vec<String> = std::fs::read_dir(mount.join("surface"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".png")), "{names:?}");
    assert!(names.iter().any(|n| n == "temperature.npy"), "{names:?}");
    mount.stop();

    // A store that is one array: its files are in the root, listed with the view.
    let root_array = common::fixtures_dir().join("temp.zarr");
    let root_names = |args: &[&str]| {
        let mount = Mount::new(&root_array, args);
        let names: Vec<String> = std::fs::read_dir(mount.join(""))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        mount.stop();
        names
    };
    assert!(root_names(&[]).iter().any(|n| n.ends_with(".png")));
    let hidden = root_names(&["--no-previews"]);
    assert!(hidden.iter().all(|n| !n.ends_with(".png")), "{hidden:?}");
    assert!(hidden.iter().any(|n| n.ends_with(".npy")), "{hidden:?}");
}
