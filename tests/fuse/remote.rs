//! Remote stores against real servers on 127.0.0.1: the fixtures read byte-exact over S3
//! (s3s-fs) and over plain HTTP (nginx), and faults (503s, a hung server, a killed server) give
//! retries or EIO within the store's time bound while the rest of the mount keeps answering.

use crate::common;

use common::mount::{eio, is_fuse_mount, ls_names, read_direct, timed, unmount, Mount, Unmounted};
use common::servers::{self, Server};
use common::{all_fixture_cases, expected_data, fixture_case, StoreCase};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use zarrfs::store::{EntryKind, RemoteOptions, Store, StoreError};

fn check(cases: &[StoreCase]) {
    common::fuse_check::check_stores(cases);
}

#[test]
fn every_fixture_reads_exactly_over_s3() {
    let cases = all_fixture_cases();
    assert!(cases.len() >= 30, "too few fixture stores");
    assert!(
        cases.iter().filter(|c| c.store.is_file()).count() >= 5,
        "too few zip stores"
    );
    for types in common::load_manifest("types/manifest.json") {
        assert!(
            cases.iter().any(|c| c.store == types.store),
            "{} (tests/fixtures/types/) is not read over S3",
            types.name
        );
    }
    let stores: Vec<PathBuf> = cases.iter().map(|c| c.store.clone()).collect();
    let server = servers::s3_server(&[("fixtures", &stores)]);
    servers::s3_credentials_env();
    let remote: Vec<StoreCase> = cases
        .iter()
        .map(|c| {
            let url = format!("s3://fixtures/{}", c.dir_name());
            c.at(url, &["--endpoint", &server.url])
        })
        .collect();
    check(&remote);
}

#[test]
fn the_mount_command_counts_its_requests() {
    let c = fixture_case("consolidated_v2_zarr2");
    let server = servers::s3_server(&[("counted", std::slice::from_ref(&c.store))]);
    servers::s3_credentials_env();
    let url = format!("s3://counted/{}", c.dir_name());
    let mount = Mount::new(Path::new(&url), &["--endpoint", &server.url, "-v"]);
    let (status, stderr) = mount.stop();
    assert!(status.success());
    let line = stderr
        .lines()
        .find(|l| l.contains(&format!("{url}: scanned in")))
        .unwrap_or_else(|| panic!("no progress summary:\n{stderr}"));
    let numbers: Vec<u64> = line
        .split(|ch: char| !ch.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    let (requests, objects) = (numbers[numbers.len() - 2], numbers[numbers.len() - 1]);
    assert!(line.ends_with("metadata objects"), "{line}");
    // The consolidated metadata, then the node documents it does not hold (at least the root's).
    assert!(objects >= 1 && requests >= objects, "{line}");
}

#[test]
fn keys_come_from_the_aws_profile_files_when_the_environment_has_none() {
    let c = fixture_case("consolidated_v2_zarr2");
    let server = servers::s3_server(&[("profiled", std::slice::from_ref(&c.store))]);
    let dir = tempfile::tempdir().unwrap();
    let credentials = dir.path().join("credentials");
    std::fs::write(
        &credentials,
        format!(
            "[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n\
             [test]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            servers::ACCESS_KEY,
            servers::SECRET_KEY
        ),
    )
    .unwrap();
    let mnt = dir.path().join("mnt");
    let _guard = Unmounted(&mnt);
    let url = format!("s3://profiled/{}", c.dir_name());
    let mount = |profile: &str| {
        let (url, mnt, ep) = (url.clone(), mnt.clone(), server.url.clone());
        let (credentials, profile) = (credentials.clone(), profile.to_string());
        timed("zarrfs", move || {
            Command::new(env!("CARGO_BIN_EXE_zarrfs"))
                .args([&url, mnt.to_str().unwrap(), "--endpoint", &ep])
                .env_remove("AWS_ACCESS_KEY_ID")
                .env_remove("AWS_SECRET_ACCESS_KEY")
                .env("AWS_SHARED_CREDENTIALS_FILE", credentials)
                .env("AWS_CONFIG_FILE", "/nonexistent")
                .env("AWS_PROFILE", profile)
                .output()
                .unwrap()
        })
    };
    // The default profile's keys are refused: the mount fails and says why.
    let refused = mount("default");
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("profiled"));
    let ok = mount("test");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_eq!(read_direct(mnt.join("y")).unwrap(), expected_data(&c, "y"));
    let status = Command::new(env!("CARGO_BIN_EXE_zarrfs"))
        .arg("unmount")
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn netcdf_s3_urls_name_a_bucket_on_an_endpoint() {
    let demo = fixture_case("nczarr_gen4");
    let server = servers::s3_server(&[("data", std::slice::from_ref(&demo.store))]);
    servers::s3_credentials_env();
    let url = format!("{}/data/{}#mode=nczarr,s3", server.url, demo.dir_name());
    check(&[demo.at(url, &[])]);
}

/// An HTTP server over the dialect fixtures.
fn dialects_over_http() -> Server {
    servers::http_server(&common::fixtures_dir().join("dialects"))
}

/// The dialect fixtures whose name starts with `prefix` (and that take no options), checked
/// through FUSE from nginx at their URL plus `fragment`.
fn check_over_http(prefix: &str, fragment: &str, count: usize) {
    let server = dialects_over_http();
    let cases: Vec<StoreCase> = all_fixture_cases()
        .into_iter()
        .filter(|c| c.name.starts_with(prefix) && c.options.is_empty())
        .map(|c| {
            let url = format!("{}/{}{fragment}", server.url, c.dir_name());
            c.at(url, &[])
        })
        .collect();
    assert_eq!(cases.len(), count);
    check(&cases);
}

#[test]
fn consolidated_fixtures_read_exactly_over_http() {
    check_over_http("consolidated_", "", 4);
}

#[test]
fn nczarr_fixtures_read_exactly_over_http() {
    check_over_http("nczarr_", "#mode=nczarr", 6);
}

#[test]
fn zip_stores_read_exactly_over_http() {
    check_over_http("sharding_v3_zip", "", 1);
    check_over_http("names_v3", "#mode=zarr,zip", 1);
}

/// A zip of one 200,000-byte stored member `a/0` holding `(i + seed) % 251`.
fn zip_of(seed: u32) -> Vec<u8> {
    use std::io::Write;
    let mut buf = std::io::Cursor::new(Vec::new());
    let mut w = zip::ZipWriter::new(&mut buf);
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    w.start_file("a/0", stored).unwrap();
    let member: Vec<u8> = (0..200_000u32).map(|i| ((i + seed) % 251) as u8).collect();
    w.write_all(&member).unwrap();
    w.finish().unwrap();
    buf.into_inner()
}

#[test]
fn a_zip_replaced_on_the_server_is_refused_not_read_at_its_old_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("x.zip");
    std::fs::write(&zip, zip_of(0)).unwrap();
    let server = servers::s3_server(&[("zips", &[zip])]);
    servers::s3_credentials_env();
    let remote = RemoteOptions {
        endpoint: Some(server.url.clone()),
        ..RemoteOptions::default()
    };
    let store = zarrfs::store::open_with("s3://zips/x.zip", &remote).unwrap();
    let want = |seed: u32| -> Vec<u8> {
        (70_000..170_000u32)
            .map(|i| ((i + seed) % 251) as u8)
            .collect()
    };
    assert_eq!(
        store.get_range("a/0", 70_000, 100_000).unwrap().unwrap(),
        want(0)
    );
    // The same layout with other bytes: read at the offsets of the first, it would give them.
    let served = server.dir.path().join("root/zips/x.zip");
    std::fs::write(&served, zip_of(1)).unwrap();
    let refused = store.get_range("a/0", 70_000, 100_000).unwrap_err();
    assert!(
        refused.to_string().contains("replaced since it was opened"),
        "{refused}"
    );
}

#[test]
fn an_unlisted_hierarchy_over_http_fails_with_a_clear_line() {
    let server = dialects_over_http();
    let dir = tempfile::tempdir().unwrap();
    let out = timed("zarrfs", {
        let (url, mnt) = (
            format!("{}/sharding_v3.zarr", server.url),
            dir.path().to_path_buf(),
        );
        move || {
            Command::new(env!("CARGO_BIN_EXE_zarrfs"))
                .arg(url)
                .arg(mnt)
                .output()
                .unwrap()
        }
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(!is_fuse_mount(dir.path()));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("consolidate"), "{stderr}");
}

/// nginx over the dialect fixtures behind a fault-injecting proxy, and a mount of
/// `consolidated_v2_zarr2` through it.
fn faulty_mount(extra: &[&str]) -> (Server, Server, Mount, StoreCase) {
    let http = dialects_over_http();
    let proxy = servers::fault_proxy(&http);
    let c = fixture_case("consolidated_v2_zarr2");
    let url = format!("{}/{}", proxy.url, c.dir_name());
    let mount = Mount::new(Path::new(&url), extra);
    (http, proxy, mount, c)
}

#[test]
fn server_errors_are_retried() {
    let (_http, proxy, mount, c) = faulty_mount(&[]);
    assert_eq!(servers::fault(&proxy, "fail/2"), 0);
    let got = read_direct(mount.join("y")).expect("read after two 503s");
    assert_eq!(got, expected_data(&c, "y"));
    assert_eq!(
        servers::fault(&proxy, "ok"),
        2,
        "the proxy failed no request"
    );
    assert_eq!(
        read_direct(mount.join("g1/x")).unwrap(),
        expected_data(&c, "g1/x")
    );
}

#[test]
fn a_hung_server_gives_eio_in_bounded_time_and_the_rest_keeps_answering() {
    let (_http, proxy, mount, c) = faulty_mount(&["--timeout", "2"]);
    let y = expected_data(&c, "y");
    assert_eq!(read_direct(mount.join("y")).unwrap(), y);
    servers::fault(&proxy, "sleep/60");
    assert!(
        eio(read_direct(mount.join("g1/x"))),
        "a hung read is not EIO"
    );
    // Metadata and cached chunks are answered from memory.
    ls_names(&mount, "z.npy");
    assert!(std::fs::metadata(mount.join("g1/x")).unwrap().len() > 0);
    assert_eq!(read_direct(mount.join("y")).unwrap(), y);
    assert!(eio(read_direct(mount.join("g1/g2/z"))));
    unmount(mount);
}

#[test]
fn server_errors_past_the_retries_give_eio_then_reads_recover() {
    let (_http, proxy, mount, c) = faulty_mount(&["--timeout", "5"]);
    servers::fault(&proxy, "fail/1000");
    assert!(
        eio(read_direct(mount.join("y"))),
        "persistent 503s are not EIO"
    );
    let failed = servers::fault(&proxy, "ok");
    assert!(failed > 1, "no retry: {failed} failed requests");
    assert_eq!(
        read_direct(mount.join("y")).unwrap(),
        expected_data(&c, "y")
    );
    let (_, stderr) = mount.stop();
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("/y") && l.contains("503")),
        "no log line names the key and the cause:\n{stderr}"
    );
}

#[test]
fn a_killed_s3_server_gives_eio_while_cached_data_keeps_reading() {
    let c = fixture_case("consolidated_v3_zarr3");
    let mut server = servers::s3_server(&[("killed", std::slice::from_ref(&c.store))]);
    servers::s3_credentials_env();
    let url = format!("s3://killed/{}", c.dir_name());
    let mount = Mount::new(
        Path::new(&url),
        &["--endpoint", &server.url, "--timeout", "5"],
    );
    let y = expected_data(&c, "y");
    assert_eq!(read_direct(mount.join("y")).unwrap(), y);
    let open_before = std::fs::File::open(mount.join("g1/x")).unwrap();
    server.kill();
    let read_open = timed("read", move || {
        use std::io::Read;
        let mut f = open_before;
        let mut out = Vec::new();
        f.read_to_end(&mut out).map(|_| out)
    });
    assert!(eio(read_open), "a read after the server died is not EIO");
    ls_names(&mount, "x.json");
    assert_eq!(read_direct(mount.join("y")).unwrap(), y);
    assert!(eio(read_direct(mount.join("g1/g2/z"))));
    unmount(mount);
}

/// The store calls over S3 and HTTP against the same files read directly: whole values, ranges
/// (also past the end), suffixes, sizes, absent keys, listings, refused keys; and 32 threads
/// reading ranges at once through one store.
#[test]
fn remote_stores_answer_like_the_files_under_many_concurrent_callers() {
    let c = fixture_case("sharding_v3");
    let s3 = servers::s3_server(&[("contract", std::slice::from_ref(&c.store))]);
    servers::s3_credentials_env();
    let http = dialects_over_http();
    let name = c.dir_name();
    let options = RemoteOptions {
        endpoint: Some(s3.url.clone()),
        ..RemoteOptions::default()
    };
    let stores: Vec<Arc<dyn Store>> = vec![
        Arc::from(zarrfs::store::open_with(&format!("s3://contract/{name}"), &options).unwrap()),
        Arc::from(zarrfs::store::open(&format!("{}/{name}", http.url)).unwrap()),
    ];
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    collect_files(&c.store, "", &mut files);
    assert!(files.len() > 5);
    for store in &stores {
        let what = store.describe();
        for (key, bytes) in &files {
            let got = store.get(key).unwrap().unwrap();
            assert_eq!(&got.bytes, bytes, "{what}: get {key}");
            assert!(got.mtime.is_some(), "{what}: {key} has no mtime");
            let size = bytes.len() as u64;
            assert_eq!(
                store.head(key).unwrap().unwrap().size,
                size,
                "{what}: head {key}"
            );
            let (lo, hi) = (size / 3, size.min(size / 3 + 17));
            assert_eq!(
                store.get_range(key, lo, hi - lo).unwrap().unwrap(),
                bytes[lo as usize..hi as usize],
                "{what}: range {key}"
            );
            assert_eq!(
                store.get_range(key, size, 10).unwrap().unwrap(),
                b"",
                "{what}: range past the end of {key}"
            );
            // A spare buffer given to get_range_into is filled in place, not swapped for a
            // fresh one: the read-ahead's fetches reuse memory this way.
            let mut spare = Vec::with_capacity(bytes.len() + 64);
            spare.extend_from_slice(b"left over from an earlier fetch");
            let memory = spare.as_ptr();
            assert!(store
                .get_range_into(key, 0, size + 1, None, &mut spare)
                .unwrap());
            assert_eq!(&spare, bytes, "{what}: range into a spare buffer, {key}");
            assert_eq!(
                spare.as_ptr(),
                memory,
                "{what}: the spare's memory is reused"
            );
            assert!(!store
                .get_range_into("no/such/key", 0, 4, None, &mut spare)
                .unwrap());
            let (tail, meta) = store.get_suffix(key, 16).unwrap().unwrap();
            assert_eq!(meta.size, size, "{what}: suffix size of {key}");
            assert_eq!(
                tail,
                bytes[size.saturating_sub(16) as usize..],
                "{what}: suffix {key}"
            );
            let (all, _) = store.get_suffix(key, size + 100).unwrap().unwrap();
            assert_eq!(&all, bytes, "{what}: suffix longer than {key}");
        }
        assert!(store.get("no/such/key").unwrap().is_none(), "{what}");
        assert!(store.head("no/such/key").unwrap().is_none(), "{what}");
        assert!(store.get_range("no/such/key", 0, 4).unwrap().is_none());
        for bad in ["../x", "/etc/passwd", "a//b"] {
            assert!(
                matches!(store.get(bad), Err(StoreError::BadKey(_))),
                "{what}: {bad}"
            );
        }
        let threads: Vec<_> = (0..32)
            .map(|t| {
                let (store, files) = (store.clone(), files.clone());
                std::thread::spawn(move || {
                    for (i, (key, bytes)) in files.iter().enumerate().skip(t % 3) {
                        let start = ((i + t) % bytes.len().max(1)) as u64;
                        let got = store.get_range(key, start, 64).unwrap().unwrap();
                        let end = (start as usize + 64).min(bytes.len());
                        assert_eq!(got, bytes[start as usize..end], "{key} at {start}");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
    // S3 lists with a delimiter; plain HTTP cannot list.
    let listed = stores[0].list_dir("").unwrap();
    let local: Vec<String> = std::fs::read_dir(&c.store)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(listed.len(), local.len(), "{listed:?}");
    assert!(listed.iter().all(|e| local.contains(&e.name)
        && (e.kind == EntryKind::Prefix) == c.store.join(&e.name).is_dir()));
    assert!(stores[0].list_dir("no/such").unwrap().is_empty());
    assert!(matches!(
        stores[1].list_dir(""),
        Err(StoreError::CannotList(_))
    ));
}

/// A server whose response runs past the length its headers announce (a range of 4 bytes, a
/// body of 1 MiB) is refused as soon as the body passes the 4 bytes, not read whole.
#[test]
fn a_body_longer_than_its_headers_announce_is_refused() {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicBool, Ordering};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let server = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(mut conn) = conn else { continue };
                let mut request = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                let _ = request.read_line(&mut line);
                let head = line.starts_with("HEAD");
                let ours = line.split(' ').nth(1) == Some("/s/k");
                while request.read_line(&mut line).is_ok_and(|n| n > 2) {}
                let answer = if !ours {
                    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        .to_string()
                } else if head {
                    "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\n".to_string()
                } else {
                    format!(
                        "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-3/4\r\n\
                         Content-Length: {}\r\nConnection: close\r\n\r\n",
                        1 << 20
                    )
                };
                let _ = conn.write_all(answer.as_bytes());
                if ours && !head {
                    let _ = conn.write_all(&vec![b'x'; 1 << 20]);
                }
            }
        })
    };
    let store = zarrfs::store::open(&format!("http://127.0.0.1:{port}/s")).unwrap();
    let got = store.get_range("k", 0, 4);
    let mut spare = Vec::with_capacity(1 << 21);
    let into = store.get_range_into("k", 0, 4, None, &mut spare);
    stop.store(true, Ordering::SeqCst);
    let _ = std::net::TcpStream::connect(("127.0.0.1", port));
    server.join().unwrap();
    for (what, result) in [
        ("get_range", got.map(|_| ())),
        ("get_range_into", into.map(|_| ())),
    ] {
        let e = result.expect_err(what);
        assert!(
            e.to_string()
                .contains("longer than the 4 bytes its headers announced"),
            "{what}: {e}"
        );
    }
    assert!(
        spare.len() <= 4,
        "get_range_into kept {} bytes",
        spare.len()
    );
}

/// Store calls made from inside tokio runtimes (a caller's own async code, on a current-thread
/// runtime and from many tasks of a multi-thread one) answer like any other: a call waits for
/// its request without entering the store's own runtime from the caller's thread.
#[test]
fn remote_stores_answer_callers_inside_tokio_runtimes() {
    let c = fixture_case("sharding_v3");
    let s3 = servers::s3_server(&[("inside", std::slice::from_ref(&c.store))]);
    servers::s3_credentials_env();
    let options = RemoteOptions {
        endpoint: Some(s3.url.clone()),
        ..RemoteOptions::default()
    };
    let name = c.dir_name();
    let store: Arc<dyn Store> =
        Arc::from(zarrfs::store::open_with(&format!("s3://inside/{name}"), &options).unwrap());
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    collect_files(&c.store, "", &mut files);
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for (key, bytes) in &files {
        let got = current.block_on(async { store.get(key) }).unwrap().unwrap();
        assert_eq!(&got.bytes, bytes, "{key}");
    }
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let (key, bytes) = files[i % files.len()].clone();
            let store = store.clone();
            multi.spawn(async move {
                let got = store.get_range(&key, 0, 64).unwrap().unwrap();
                assert_eq!(got, bytes[..bytes.len().min(64)], "{key}");
            })
        })
        .collect();
    for task in tasks {
        multi.block_on(task).unwrap();
    }
}

/// Every file below `dir` as (key, bytes).
fn collect_files(dir: &Path, prefix: &str, out: &mut Vec<(String, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let key = common::join(prefix, &e.file_name().into_string().unwrap());
        if e.file_type().unwrap().is_dir() {
            collect_files(&e.path(), &key, out);
        } else {
            out.push((key, std::fs::read(e.path()).unwrap()));
        }
    }
}

/// Metadata objects over their size bound are refused from the response's headers, unread:
/// over S3 a node document one byte too large leaves its node out, and consolidated metadata
/// one byte too large is ignored (the bucket is listed instead).
#[test]
fn oversized_metadata_is_refused_over_s3() {
    use zarrfs::meta::MAX_DOCUMENT_BYTES;
    use zarrfs::meta::{load_hierarchy, LoadOptions, MetaError, MAX_CONSOLIDATED_BYTES};
    let local = tempfile::tempdir().unwrap();
    let store = local.path().join("big.zarr");
    let array = r#"{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<i2", "compressor": null, "fill_value": 0, "order": "C", "filters": null}"#;
    for (key, bytes) in [(".zgroup", r#"{"zarr_format": 2}"#), ("a/.zarray", array)] {
        std::fs::create_dir_all(store.join(key).parent().unwrap()).unwrap();
        std::fs::write(store.join(key), bytes).unwrap();
    }
    // Sparse files of zeros: not JSON, were they read.
    for (key, len) in [
        ("big/.zarray", MAX_DOCUMENT_BYTES + 1),
        (".zmetadata", MAX_CONSOLIDATED_BYTES + 1),
    ] {
        std::fs::create_dir_all(store.join(key).parent().unwrap()).unwrap();
        let f = std::fs::File::create(store.join(key)).unwrap();
        f.set_len(len).unwrap();
    }
    let s3 = servers::s3_server(&[("big", std::slice::from_ref(&store))]);
    servers::s3_credentials_env();
    let options = RemoteOptions {
        endpoint: Some(s3.url.clone()),
        ..RemoteOptions::default()
    };
    let remote = zarrfs::store::open_with("s3://big/big.zarr", &options).unwrap();
    match remote.get_bounded("big/.zarray", MAX_DOCUMENT_BYTES) {
        Err(StoreError::TooLarge { size, max, .. }) => {
            assert_eq!((size, max), (MAX_DOCUMENT_BYTES + 1, MAX_DOCUMENT_BYTES))
        }
        other => panic!("{other:?}"),
    }
    let small = remote.get_bounded("a/.zarray", 64).unwrap_err();
    assert!(matches!(small, StoreError::TooLarge { .. }), "{small}");
    let got = remote.get_bounded("a/.zarray", array.len() as u64).unwrap();
    assert_eq!(got.unwrap().bytes, array.as_bytes());
    assert!(matches!(
        MetaError::from(
            remote
                .get_bounded(".zmetadata", MAX_CONSOLIDATED_BYTES)
                .unwrap_err()
        ),
        MetaError::TooLarge(_)
    ));
    let h = load_hierarchy(remote.as_ref(), &LoadOptions::default()).unwrap();
    let paths: Vec<_> = h.nodes.iter().map(|n| n.path.as_str()).collect();
    assert_eq!(paths, ["", "a"]);
}
