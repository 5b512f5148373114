//! kerchunk reference sets and an Icechunk repository served by a real S3 server (s3s-fs on
//! 127.0.0.1), their targets in the same bucket: read byte-exact through FUSE, virtual chunks
//! included (absolute, and relative `vcc://` ones through the repository's containers; the view
//! too for the repositories); a target in another bucket is EIO unless allowed.

use crate::common;

use common::servers;
use common::{load_manifest, StoreCase};
use std::path::PathBuf;

/// `case` mounted from `url`, with the server's endpoint.
fn at(case: &StoreCase, url: String, endpoint: &str) -> StoreCase {
    let mut c = case.clone();
    c.store = PathBuf::from(url);
    c.options
        .extend(["--endpoint".to_string(), endpoint.to_string()]);
    c
}

#[test]
fn reference_sets_and_repositories_read_exactly_over_s3() {
    if !common::mount::fuse_ready() {
        return;
    }
    let fixtures = common::fixtures_dir();
    let icechunk = fixtures.join("icechunk");
    let server = servers::s3_server(&[
        ("refs", &[fixtures.join("references")]),
        (
            "zarrfs-icechunk",
            &[
                icechunk.join("repo_v2"),
                icechunk.join("repo_v1"),
                icechunk.join("repo_many"),
                icechunk.join("raw.bin"),
            ],
        ),
    ]);
    servers::s3_credentials_env();
    let mut cases = Vec::new();
    let mut repositories = Vec::new();
    for c in load_manifest("references/manifest.json") {
        let file = c.store.file_name().unwrap().to_string_lossy().into_owned();
        cases.push(at(&c, format!("s3://refs/references/{file}"), &server.url));
    }
    for mut c in load_manifest("icechunk/manifest.json") {
        // The virtual chunks are in the repositories' bucket here: they read, but for the last
        // row of `sub/relative`, whose container (`vcc://nosuch/`) the repository does not define.
        for node in &mut c.nodes {
            if node.path.ends_with("relative") {
                node.ok_range = Some((0, 200));
            } else {
                node.expect = None;
                node.ok_range = None;
            }
        }
        let repo = c.store.file_name().unwrap().to_string_lossy().into_owned();
        repositories.push(at(&c, format!("s3://zarrfs-icechunk/{repo}"), &server.url));
    }
    assert_eq!(cases.len() + repositories.len(), 14);
    common::check_cases(&repositories, common::view_check::check_store);
    cases.extend(repositories);
    common::check_cases(&cases, common::fuse_check::check_store);
}

#[test]
fn reference_sets_and_repositories_read_exactly_over_plain_http() {
    if !common::mount::fuse_ready() {
        return;
    }
    // A server that cannot list: Parquet reference directories and Icechunk repositories (of
    // both spec versions) are read by name. Virtual chunks name S3 objects, EIO here as locally.
    let fixtures = common::fixtures_dir();
    let server = servers::http_server(&fixtures);
    let mut cases = Vec::new();
    for (manifest, dir) in [
        ("references/manifest.json", "references"),
        ("icechunk/manifest.json", "icechunk"),
    ] {
        for mut c in load_manifest(manifest) {
            let name = c.store.file_name().unwrap().to_string_lossy().into_owned();
            c.store = PathBuf::from(format!("{}/{dir}/{name}", server.url));
            cases.push(c);
        }
    }
    assert_eq!(cases.len(), 14);
    common::check_cases(&cases, common::fuse_check::check_store);
}

#[test]
fn a_target_in_another_bucket_is_read_only_when_allowed() {
    if !common::mount::fuse_ready() {
        return;
    }
    let fixtures = common::fixtures_dir();
    let icechunk = fixtures.join("icechunk");
    // The repository in one bucket, the file its virtual chunks name in another.
    let server = servers::s3_server(&[
        ("repos", &[icechunk.join("repo_v2")]),
        ("zarrfs-icechunk", &[icechunk.join("raw.bin")]),
    ]);
    servers::s3_credentials_env();
    let raw = std::fs::read(icechunk.join("raw.bin")).unwrap();
    let url = PathBuf::from("s3://repos/repo_v2");
    let m = common::mount::Mount::new(&url, &["--endpoint", &server.url]);
    let err = std::fs::read(m.join("sub/virtual")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
    let (_, log) = m.stop();
    assert!(
        log.lines()
            .any(|l| l.contains("s3://zarrfs-icechunk/raw.bin") && l.contains("--allow-target")),
        "{log}"
    );
    let allowed = [
        "--endpoint",
        &server.url,
        "--allow-target",
        "s3://zarrfs-icechunk",
    ];
    let m = common::mount::Mount::new(&url, &allowed);
    assert_eq!(std::fs::read(m.join("sub/virtual")).unwrap(), raw);
}

/// A reference set on local disk whose targets are on a server (the usual kerchunk use): its
/// store says its reads go over the network, so the mount treats it as a remote store: its
/// requests are counted in `.zarrfs/stats` (and read ahead and time-bounded as a remote
/// store's).
#[test]
fn a_local_reference_set_with_remote_targets_is_a_remote_store() {
    if !common::mount::fuse_ready() {
        return;
    }
    let fixtures = common::fixtures_dir();
    let server = servers::http_server(&fixtures);
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixtures.join("references/single.json")).unwrap())
            .unwrap();
    for (_, r) in doc["refs"].as_object_mut().unwrap() {
        if let Some(url) = r.get(0).and_then(|u| u.as_str()).map(String::from) {
            r[0] = format!("{}/references/{url}", server.url).into();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let refs = dir.path().join("refs.json");
    std::fs::write(&refs, serde_json::to_vec(&doc).unwrap()).unwrap();
    let remote = zarrfs::store::RemoteOptions {
        allow_targets: vec![server.url.clone()],
        ..Default::default()
    };
    let store = zarrfs::store::open_with(refs.to_str().unwrap(), &remote).unwrap();
    assert_eq!(store.latency(), zarrfs::store::Latency::Network);
    let npy = std::fs::read(fixtures.join("references/expected/single/temp.npy")).unwrap();
    let m = common::mount::Mount::new(&refs, &["--allow-target", &server.url]);
    assert_eq!(
        std::fs::read(m.join("temp")).unwrap(),
        npy[common::npy_header_len(&npy)..]
    );
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(m.join(".zarrfs/stats")).unwrap()).unwrap();
    let requests = stats["store"]["requests"].as_u64();
    assert!(requests.is_some_and(|n| n >= 4), "{stats}");
}
