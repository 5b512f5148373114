//! Parquet reference directories and Icechunk repositories on a real S3 server (s3s-fs)
//! behind the fault proxy, which injects 404s and 403s and counts the requests it passes: a
//! record file answering 404 once is read, never taken for missing chunks; an array's chunks
//! are listed from the record files the directory holds, several at a time and within the
//! timeout; a malformed record file or manifest is read once; a spec v1 `--ref` is looked up by
//! name, also in a bucket that may be read but not listed; a bucket answering 403 for what it
//! does not hold still mounts as plain Zarr, one failing (503) while its kind is told does not
//! mount.

use crate::common;

use common::servers::{self, Server};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use zarrfs::store::{RemoteOptions, Store, StoreError};
use zarrfs::view;

/// Remote options reaching S3 through `proxy`, with `timeout`.
fn through(proxy: &Server, timeout: Duration) -> RemoteOptions {
    RemoteOptions {
        endpoint: Some(proxy.url.clone()),
        timeout,
        ..RemoteOptions::default()
    }
}

/// A copy of the fixtures' `references` directory in a new directory (its Parquet set and the
/// netCDF files it refers to), changed by `change`.
fn references_copy(change: impl Fn(&Path)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let refs = dir.path().join("references");
    servers::copy_tree(&common::fixtures_dir().join("references"), &refs);
    change(&refs.join("combined.parq"));
    dir
}

/// The decoded bytes of `temp` of the Parquet set.
fn expected_temp() -> Vec<u8> {
    let path = common::fixtures_dir().join("references/expected/parquet/temp.npy");
    let npy = std::fs::read(path).unwrap();
    npy[common::npy_header_len(&npy)..].to_vec()
}

/// The number of requests `METHOD:/path` the proxy passed that contain `text`.
fn count(proxy: &Server, text: &str) -> u64 {
    servers::fault(proxy, &format!("count/{text}"))
}

/// The fixtures' Parquet set served by S3 behind a fault proxy, told `fault` first, and the
/// set opened through the proxy.
fn parquet_through_proxy(fault: &str) -> (Server, Server, Box<dyn Store>) {
    let fixtures = common::fixtures_dir();
    let s3 = servers::s3_server(&[("refs", &[fixtures.join("references")])]);
    let proxy = servers::fault_proxy(&s3);
    servers::s3_credentials_env();
    servers::fault(&proxy, fault);
    let remote = through(&proxy, Duration::from_secs(10));
    let store = zarrfs::store::open_with(PARQUET_URL, &remote).unwrap();
    (s3, proxy, store)
}

/// Where [`parquet_through_proxy`] serves the Parquet set.
const PARQUET_URL: &str = "s3://refs/references/combined.parq";

#[test]
fn a_record_file_answering_404_once_is_read_not_taken_for_missing_chunks() {
    // The first read of the record file of temp's first chunks answers 404.
    let (_s3, proxy, store) =
        parquet_through_proxy("gone/1/references/combined.parq/temp/refs.0.parq");
    let load = zarrfs::meta::LoadOptions { consolidated: true };
    let v = view::from_store(Arc::from(store), PARQUET_URL, 16 << 20, &load).unwrap();
    let temp = v.resolve("temp").unwrap();
    let expected = expected_temp();
    assert_eq!(v.read(temp, 0, expected.len() as u32).unwrap(), expected);
    assert_eq!(servers::fault(&proxy, "ok"), 1, "the 404 was injected");
    assert_eq!(
        count(
            &proxy,
            "GET:/refs/references/combined.parq/temp/refs.0.parq"
        ),
        2,
        "asked again once"
    );
}

#[test]
fn a_listed_record_file_answering_404_on_every_ask_is_a_fault_not_missing_chunks() {
    let (s3, proxy, store) = parquet_through_proxy("ok");
    let file = "GET:/refs/references/combined.parq/temp/refs.0.parq";
    servers::fault(&proxy, "gone/3/references/combined.parq/temp/refs.0.parq");
    let got = store.get("temp/0.0.0");
    let err = got.as_ref().map(|_| ()).unwrap_err().to_string();
    assert!(
        err.contains("refs.0.parq") && err.contains("a fault"),
        "{err}"
    );
    assert_eq!(count(&proxy, file), 3, "asked three times");
    // The fault is not kept: the next read finds the file, and the chunk's bytes are those
    // read straight from the server.
    let direct = RemoteOptions {
        endpoint: Some(s3.url.clone()),
        ..RemoteOptions::default()
    };
    let direct = zarrfs::store::open_with(PARQUET_URL, &direct).unwrap();
    let want = direct.get("temp/0.0.0").unwrap().expect("stored").bytes;
    assert_eq!(store.get("temp/0.0.0").unwrap().expect("found").bytes, want);
    assert_eq!(count(&proxy, file), 4);
}

#[test]
fn a_record_file_removed_since_the_mount_reads_as_missing_chunks_and_is_not_asked_again() {
    let (s3, proxy, store) = parquet_through_proxy("ok");
    // Opened (its record files listed), none of them read yet.
    assert!(store.get(".zgroup").unwrap().is_some(), "opened");
    let record = "root/refs/references/combined.parq/temp/refs.0.parq";
    std::fs::remove_file(s3.dir.path().join(record)).unwrap();
    let file = "GET:/refs/references/combined.parq/temp/refs.0.parq";
    for _ in 0..3 {
        assert!(store.get("temp/0.0.0").unwrap().is_none(), "missing");
        assert!(store.get("temp/0.1.0").unwrap().is_none(), "missing");
    }
    assert_eq!(count(&proxy, file), 3, "asked three times, once");
}

/// A Parquet set whose `temp` has `4 * n` time steps of 2 chunks (`8 * n / 3` record files
/// of 3 chunks), of which the record files 0 to `present - 1` exist (copies of the first).
fn many_records(n: u64, present: u64) -> tempfile::TempDir {
    references_copy(|parq| {
        let zmetadata = parq.join(".zmetadata");
        let mut doc: Value = serde_json::from_slice(&std::fs::read(&zmetadata).unwrap()).unwrap();
        doc["metadata"]["temp/.zarray"]["shape"] = json!([4 * n, 8, 10]);
        std::fs::write(&zmetadata, serde_json::to_vec(&doc).unwrap()).unwrap();
        let first = std::fs::read(parq.join("temp/refs.0.parq")).unwrap();
        for k in 1..present {
            std::fs::write(parq.join(format!("temp/refs.{k}.parq")), &first).unwrap();
        }
    })
}

/// The names of chunks of `temp` a listing shows.
fn chunk_names(store: &dyn Store) -> Result<Vec<String>, StoreError> {
    let listed = store.list_dir("temp")?;
    let names = listed.into_iter().map(|e| e.name);
    Ok(names.filter(|n| !n.starts_with('.')).collect())
}

#[test]
fn an_array_s_chunks_are_listed_from_its_record_files_several_at_a_time() {
    // 267 possible record files, 40 of them present.
    let dir = many_records(100, 40);
    let s3 = servers::s3_server(&[("refs", &[dir.path().join("references")])]);
    let proxy = servers::fault_proxy(&s3);
    servers::s3_credentials_env();
    let url = "s3://refs/references/combined.parq";
    let open = || {
        let store = zarrfs::store::open_with(url, &through(&proxy, Duration::from_secs(20)));
        let store = store.unwrap();
        assert!(store.get(".zgroup").unwrap().is_some(), "opened");
        store
    };
    let records = "GET:/refs/references/combined.parq/temp/refs.";
    let names = chunk_names(open().as_ref()).unwrap();
    assert_eq!(
        count(&proxy, records),
        40,
        "only those present are asked for"
    );
    // Each record file's three rows: chunks 3k, 3k + 1, 3k + 2 of the 2 x 1 frames.
    let mut expected: Vec<String> = (0..120u64)
        .map(|n| format!("{}.{}.0", n / 2, n % 2))
        .collect();
    expected.sort();
    assert_eq!(names, expected);
    // Each answer held a while, so that reads made at once are seen at once.
    let store = open();
    servers::fault(&proxy, "sleep/0.3");
    servers::fault(&proxy, "peak");
    assert_eq!(chunk_names(store.as_ref()).unwrap(), expected);
    assert_eq!(count(&proxy, records), 80);
    assert!(
        servers::fault(&proxy, "peak") > 1,
        "one record file at a time"
    );
}

#[test]
fn listing_an_array_s_record_files_stops_at_the_timeout() {
    let dir = many_records(100, 200);
    let s3 = servers::s3_server(&[("refs", &[dir.path().join("references")])]);
    let proxy = servers::fault_proxy(&s3);
    servers::s3_credentials_env();
    let url = "s3://refs/references/combined.parq";
    let store = zarrfs::store::open_with(url, &through(&proxy, Duration::from_secs(2))).unwrap();
    assert!(store.get(".zgroup").unwrap().is_some(), "opened");
    // 200 record files, each held 0.5 s: 12.5 s at 8 at a time, past the 2 s bound.
    servers::fault(&proxy, "sleep/0.5");
    let got = chunk_names(store.as_ref());
    let err = got.as_ref().map_err(|e| e.to_string()).unwrap_err();
    assert!(
        err.contains("record files takes longer than --timeout (2 s)"),
        "{got:?}"
    );
    let asked = count(&proxy, "GET:/refs/references/combined.parq/temp/refs.");
    assert!(asked < 200, "{asked} record files asked for");
    // Nothing goes on asking once the listing has failed.
    std::thread::sleep(Duration::from_secs(3));
    let later = count(&proxy, "GET:/refs/references/combined.parq/temp/refs.");
    assert_eq!(later, asked);
}

#[test]
fn a_malformed_record_file_or_manifest_is_read_once() {
    let dir = references_copy(|parq| {
        std::fs::write(parq.join("temp/refs.0.parq"), b"not a parquet file").unwrap();
    });
    let repos = tempfile::tempdir().unwrap();
    let repo = repos.path().join("repo_v2");
    servers::copy_tree(&common::fixtures_dir().join("icechunk/repo_v2"), &repo);
    for entry in std::fs::read_dir(repo.join("manifests")).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    }
    let s3 = servers::s3_server(&[
        ("refs", &[dir.path().join("references")]),
        ("repos", &[repo]),
    ]);
    let proxy = servers::fault_proxy(&s3);
    servers::s3_credentials_env();
    let remote = through(&proxy, Duration::from_secs(10));
    for (url, key, file) in [
        (
            "s3://refs/references/combined.parq",
            "temp/0.0.0",
            "GET:/refs/references/combined.parq/temp/refs.0.parq",
        ),
        (
            "s3://repos/repo_v2",
            "temp/c/0/0",
            "GET:/repos/repo_v2/manifests/",
        ),
    ] {
        let store = zarrfs::store::open_with(url, &remote).unwrap();
        for _ in 0..3 {
            let got = store.get(key);
            assert!(matches!(got, Err(StoreError::Invalid(_))), "{url}: {got:?}");
        }
        assert_eq!(count(&proxy, file), 1, "{url}");
    }
}

#[test]
fn a_spec_v1_ref_is_looked_up_by_name_not_among_every_tag() {
    let repos = tempfile::tempdir().unwrap();
    let repo = repos.path().join("repo_v1");
    servers::copy_tree(&common::fixtures_dir().join("icechunk/repo_v1"), &repo);
    let main = std::fs::read(repo.join("refs/branch.main/ref.json")).unwrap();
    for i in 0..30 {
        let tag = repo.join(format!("refs/tag.t{i:02}"));
        std::fs::create_dir_all(&tag).unwrap();
        std::fs::write(tag.join("ref.json"), &main).unwrap();
    }
    let s3 = servers::s3_server(&[("repos", &[repo])]);
    let proxy = servers::fault_proxy(&s3);
    servers::s3_credentials_env();
    let url = "s3://repos/repo_v1";
    let mut remote = through(&proxy, Duration::from_secs(10));
    let store = zarrfs::store::open_with(url, &remote).unwrap();
    assert!(store.get("zarr.json").unwrap().is_some(), "opened");
    assert_eq!(count(&proxy, "/refs/tag."), 0, "main is a branch");
    remote.version = Some("t17".into());
    let store = zarrfs::store::open_with(url, &remote).unwrap();
    assert!(store.get("zarr.json").unwrap().is_some(), "opened");
    // The tag's tombstone looked for, then its ref.json read.
    assert_eq!(count(&proxy, "/refs/tag."), 2);
    assert_eq!(count(&proxy, "/refs/tag.t17/"), 2);
    // An unknown name lists the branches and tags, to name them.
    remote.version = Some("nosuch".into());
    let store = zarrfs::store::open_with(url, &remote).unwrap();
    let err = store.get("zarr.json").unwrap_err().to_string();
    assert!(err.contains("main") && err.contains("t29"), "{err}");
}

#[test]
fn a_spec_v1_ref_resolves_in_a_bucket_that_may_be_read_but_not_listed() {
    // S3 answers 403 for a key such a bucket does not hold: a tombstone or a branch that is not
    // there is absent, not a failure; an unknown name is told as such.
    let repos = tempfile::tempdir().unwrap();
    let repo = repos.path().join("repo_v1");
    servers::copy_tree(&common::fixtures_dir().join("icechunk/repo_v1"), &repo);
    let main = std::fs::read(repo.join("refs/branch.main/ref.json")).unwrap();
    std::fs::create_dir_all(repo.join("refs/tag.t1")).unwrap();
    std::fs::write(repo.join("refs/tag.t1/ref.json"), &main).unwrap();
    let s3 = servers::s3_server(&[("repos", &[repo])]);
    let proxy = servers::fault_proxy(&s3);
    servers::s3_credentials_env();
    servers::fault(&proxy, "unlisted");
    let url = "s3://repos/repo_v1";
    let mut remote = through(&proxy, Duration::from_secs(10));
    let expected = zarrfs::store::open_with(url, &remote).unwrap();
    let expected = expected.get("zarr.json").unwrap().unwrap().bytes;
    for name in ["main", "t1"] {
        remote.version = Some(name.into());
        let store = zarrfs::store::open_with(url, &remote).unwrap();
        let got = store.get("zarr.json");
        assert_eq!(got.unwrap().unwrap().bytes, expected, "{name}");
    }
    remote.version = Some("nosuch".into());
    let store = zarrfs::store::open_with(url, &remote).unwrap();
    let err = store.get("zarr.json").unwrap_err().to_string();
    assert!(
        err.contains("no branch, tag or snapshot \"nosuch\""),
        "{err}"
    );
    assert!(servers::fault(&proxy, "ok") == 0 && count(&proxy, "ref.json.deleted") >= 2);
}

#[test]
fn a_bucket_answering_403_for_what_it_does_not_hold_mounts_as_plain_zarr() {
    let case = common::fixture_case("consolidated_v2_zarr2");
    let s3 = servers::s3_server(&[("plain", std::slice::from_ref(&case.store))]);
    let proxy = servers::fault_proxy(&s3);
    servers::s3_credentials_env();
    // As S3 answers a key that does not exist when the bucket may not be listed.
    let repo = format!("deny/1000/plain/{}/repo", case.dir_name());
    servers::fault(&proxy, &repo);
    let url = format!("s3://plain/{}", case.dir_name());
    let at = case.at(url, &["--endpoint", &proxy.url]);
    common::check_cases(&[at], common::view_check::check_store);
    assert!(servers::fault(&proxy, "ok") >= 1, "the 403 was injected");
}

#[test]
fn a_server_error_while_telling_the_kind_of_store_fails_the_open() {
    // An Icechunk repository whose `repo` file answers 503 on every try: not taken for absent,
    // which would mount the repository as plain Zarr.
    let repos = tempfile::tempdir().unwrap();
    let repo = repos.path().join("repo_v2");
    servers::copy_tree(&common::fixtures_dir().join("icechunk/repo_v2"), &repo);
    let s3 = servers::s3_server(&[("repos", &[repo])]);
    let proxy = servers::fault_proxy(&s3);
    servers::s3_credentials_env();
    servers::fault(&proxy, "busy/1000/repos/repo_v2/repo");
    let url = "s3://repos/repo_v2";
    let store = zarrfs::store::open_with(url, &through(&proxy, Duration::from_secs(10)));
    let got = store.unwrap().get("zarr.json");
    let err = got.as_ref().map_err(|e| e.to_string()).unwrap_err();
    assert!(
        err.contains("repos/repo_v2/repo") && err.contains("503"),
        "{got:?}"
    );
    assert!(servers::fault(&proxy, "ok") >= 2, "HEAD and GET failed");
}
