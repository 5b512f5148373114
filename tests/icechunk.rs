//! Icechunk repositories (format spec v1 and v2, written by icechunk 2.3) read byte-exact
//! through the view and through FUSE at every version (`main`, a tag, another branch, a snapshot
//! id), against zarr-python reading them through icechunk; the mounted version shown on the
//! root; unknown `--ref` names and corrupt metadata refused.

mod common;

#[test]
fn every_repository_version_reads_exactly_through_the_view() {
    common::check_all("icechunk/manifest.json", 9, common::view_check::check_store);
}

#[test]
fn every_repository_version_reads_exactly_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    common::check_all("icechunk/manifest.json", 9, common::fuse_check::check_store);
}

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use zarrfs::store::{RemoteOptions, Store};
use zarrfs::view::{self, ViewError, XattrReply, ROOT_INO};

fn fixture(name: &str) -> PathBuf {
    common::fixtures_dir().join("icechunk").join(name)
}

fn open(location: &Path, reference: Option<&str>) -> Result<Box<dyn Store>, String> {
    let remote = RemoteOptions {
        version: reference.map(String::from),
        ..RemoteOptions::default()
    };
    zarrfs::store::open_with(location.to_str().unwrap(), &remote).map_err(|e| e.to_string())
}

fn view_of(store: Box<dyn Store>) -> view::View {
    let load = zarrfs::meta::LoadOptions { consolidated: true };
    view::from_store(Arc::from(store), "repo", 16 << 20, &load).unwrap()
}

/// The snapshot id and message the manifest records for one case.
fn recorded(case: &str) -> (String, String) {
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("manifest.json")).unwrap()).unwrap();
    let s = doc["stores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == case)
        .unwrap();
    (
        s["snapshot"].as_str().unwrap().into(),
        s["message"].as_str().unwrap().into(),
    )
}

fn xattr(v: &view::View, name: &str) -> String {
    match v.getxattr(ROOT_INO, name, 4096).unwrap() {
        XattrReply::Data(d) => String::from_utf8(d).unwrap(),
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn the_mounted_version_is_shown_on_the_root() {
    for (repo, case, reference) in [
        ("repo_v2", "repo_v2_main", None),
        ("repo_v2", "repo_v2_tag", Some("v1")),
        ("repo_v1", "repo_v1_dev", Some("dev")),
    ] {
        let (id, message) = recorded(case);
        let v = view_of(open(&fixture(repo), reference).unwrap());
        assert_eq!(xattr(&v, "user.zarrfs.icechunk.snapshot"), id, "{case}");
        assert_eq!(xattr(&v, "user.zarrfs.icechunk.message"), message, "{case}");
        assert_eq!(
            xattr(&v, "user.zarrfs.icechunk.ref"),
            reference.unwrap_or("main")
        );
        assert!(xattr(&v, "user.zarrfs.icechunk.time").starts_with("20"));
        let spec = &repo[repo.len() - 1..];
        assert_eq!(xattr(&v, "user.zarrfs.icechunk.spec_version"), spec);
    }
    if !common::mount::fuse_ready() {
        return;
    }
    let (id, _) = recorded("repo_v1_tag");
    let m = common::mount::Mount::new(&fixture("repo_v1"), &["--ref", "v1"]);
    let out = Command::new("getfattr")
        .args(["-n", "user.zarrfs.icechunk.snapshot", "--only-values"])
        .arg(m.path())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), id);
}

#[test]
fn an_unknown_ref_is_refused_before_mounting_naming_branches_and_tags() {
    for repo in ["repo_v1", "repo_v2"] {
        for bad in ["nope", "AAAAAAAAAAAAAAAAAAAA"] {
            let err = open(&fixture(repo), Some(bad)).err().unwrap();
            assert!(
                err.contains(&format!("{bad:?}"))
                    && err.contains("branches: dev, main")
                    && err.contains("tags: v1"),
                "{repo}: {err}"
            );
        }
    }
    // Other stores have one version only.
    let fixtures = common::fixtures_dir();
    for other in [
        "references/single.json",
        "references/combined.parq",
        "temp.zarr",
    ] {
        let err = open(&fixtures.join(other), Some("main")).err().unwrap();
        assert!(err.contains("only Icechunk repositories"), "{other}: {err}");
    }
    let mountpoint = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zarrfs"))
        .args(["-f", "--ref", "v2"])
        .arg(fixture("repo_v2"))
        .arg(mountpoint.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no branch, tag or snapshot \"v2\""),
        "{stderr}"
    );
    assert!(!common::mount::is_fuse_mount(mountpoint.path()));
}

#[test]
fn a_deleted_tag_of_a_spec_v1_repository_does_not_resolve() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let status = Command::new("cp")
        .arg("-r")
        .arg(fixture("repo_v1"))
        .arg(&repo)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(open(&repo, Some("v1")).is_ok());
    // What icechunk's delete_tag leaves: the tag's ref.json, and a tombstone beside it.
    std::fs::write(repo.join("refs/tag.v1/ref.json.deleted"), b"").unwrap();
    let err = open(&repo, Some("v1")).err().unwrap();
    assert!(
        err.contains("no branch, tag or snapshot \"v1\"") && err.contains("tags: none"),
        "{err}"
    );
}

/// A copy of the spec v2 repository in which `damage` has changed some files.
fn damaged(damage: impl Fn(&Path)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("cp")
        .arg("-r")
        .arg(fixture("repo_v2"))
        .arg(dir.path().join("repo"))
        .status()
        .unwrap();
    assert!(status.success());
    damage(&dir.path().join("repo"));
    dir
}

/// Every file of `dir` of the repository, cut to `keep` of its bytes (or rewritten by `f`).
fn rewrite_all(repo: &Path, dir: &str, f: impl Fn(Vec<u8>) -> Vec<u8>) {
    for entry in std::fs::read_dir(repo.join(dir)).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, f(bytes)).unwrap();
    }
}

#[test]
fn corrupt_manifests_and_chunks_fail_the_chunks_they_hold() {
    let truncated = |b: Vec<u8>| b[..b.len() / 2].to_vec();
    // A valid header and zstd frame around bytes that are no flatbuffer.
    let garbage = |b: Vec<u8>| {
        let mut out = b[..39].to_vec();
        out.extend(zstd::encode_all(&[0x5au8; 300][..], 1).unwrap());
        out
    };
    let expected = |name: &str| {
        let npy = std::fs::read(fixture(&format!("expected/repo_v2_main/{name}.npy"))).unwrap();
        npy[common::npy_header_len(&npy)..].to_vec()
    };
    for (what, dir, f) in [
        (
            "truncated manifests",
            "manifests",
            &truncated as &dyn Fn(Vec<u8>) -> Vec<u8>,
        ),
        ("garbage manifests", "manifests", &garbage),
        ("truncated chunks", "chunks", &truncated),
    ] {
        let copy = damaged(|repo| rewrite_all(repo, dir, f));
        let v = view_of(open(&copy.path().join("repo"), None).unwrap());
        let temp = v.resolve("temp").unwrap();
        let got = v.read(temp, 0, 4096);
        assert!(matches!(got, Err(ViewError::Io(_))), "{what}: {got:?}");
        // The metadata is in the snapshot, untouched.
        let json = v.resolve("temp.json").unwrap();
        assert!(v.read(json, 0, 1 << 16).is_ok(), "{what}");
        if dir == "chunks" {
            // Inline chunks do not need the chunk files.
            let small = v.resolve("small").unwrap();
            assert_eq!(v.read(small, 0, 4096).unwrap(), expected("small"), "{what}");
        }
    }
}

#[test]
fn a_corrupt_snapshot_or_repository_file_is_refused_at_mount() {
    let truncated = |b: Vec<u8>| b[..b.len() / 2].to_vec();
    for (what, damage) in [
        (
            "truncated snapshots",
            Box::new(move |repo: &Path| rewrite_all(repo, "snapshots", truncated))
                as Box<dyn Fn(&Path)>,
        ),
        (
            "truncated repo file",
            Box::new(|repo: &Path| {
                let bytes = std::fs::read(repo.join("repo")).unwrap();
                std::fs::write(repo.join("repo"), &bytes[..bytes.len() / 2]).unwrap();
            }),
        ),
        (
            "no header",
            Box::new(|repo: &Path| rewrite_all(repo, "snapshots", |b| b[39..].to_vec())),
        ),
    ] {
        let copy = damaged(damage);
        let err = open(&copy.path().join("repo"), None).err().unwrap();
        assert!(
            err.contains("not a readable Icechunk file"),
            "{what}: {err}"
        );
    }
}

#[test]
fn slices_of_a_branch_read_exactly_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    let npy = std::fs::read(fixture("expected/repo_v1_dev/temp.npy")).unwrap();
    let temp = &npy[common::npy_header_len(&npy)..];
    // temp is (8, 64) float32: temp[2:6,5] crosses both row chunks (4 rows each).
    let want: Vec<u8> = (2..6)
        .flat_map(|r| temp[(r * 64 + 5) * 4..(r * 64 + 6) * 4].to_vec())
        .collect();
    let m = common::mount::Mount::new(&fixture("repo_v1"), &["--ref", "dev"]);
    assert_eq!(std::fs::read(m.join("temp[2:6,5]")).unwrap(), want);
    assert_eq!(std::fs::read(m.join("temp[y=7]")).unwrap(), temp[7 * 256..]);
}

#[test]
fn relative_virtual_chunks_resolve_through_the_repository_containers() {
    if !common::mount::fuse_ready() {
        return;
    }
    for repo in ["repo_v2", "repo_v1"] {
        let m = common::mount::Mount::new(&fixture(repo), &[]);
        // `vcc://bucket/raw.bin` is s3://zarrfs-icechunk/raw.bin, outside the repository's
        // directory: refused by the allowed-targets rule, naming the resolved URL.
        let err = std::fs::read(m.join("sub/relative[0]")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO), "{repo}");
        // `vcc://nosuch/raw.bin`: a container the repository does not define.
        let err = std::fs::read(m.join("sub/relative[5]")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO), "{repo}");
        let (_, log) = m.stop();
        assert!(
            log.lines()
                .any(|l| l.contains("s3://zarrfs-icechunk/raw.bin")
                    && l.contains("--allow-target")
                    && !l.contains("vcc://")),
            "{repo}: {log}"
        );
        assert!(
            log.lines()
                .any(|l| l.contains("vcc://nosuch/raw.bin") && l.contains("\"nosuch\"")),
            "{repo}: {log}"
        );
    }
}
