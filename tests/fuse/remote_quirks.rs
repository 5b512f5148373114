//! Remote stores off the common path, against real servers on 127.0.0.1: S3 endpoints named by
//! the environment beside `--endpoint`, servers that ignore or half-honour byte ranges, bodies
//! that arrive slowly, listings of many pages.

use crate::common;

use common::mount::{eio, read_direct, unmount, Mount};
use common::servers;
use common::{all_fixture_cases, expected_data, fixture_case, StoreCase};
use std::path::Path;
use std::time::{Duration, Instant};
use zarrfs::store::{Location, ObjectStoreBackend, RemoteOptions, Store};

/// `--endpoint` (or an endpoint in the URL) wins over AWS_ENDPOINT_URL_S3, which the S3 client
/// otherwise prefers; an http:// endpoint from that variable alone is allowed plain http.
#[test]
fn an_explicit_endpoint_wins_over_the_environments() {
    let c = fixture_case("consolidated_v2_zarr2");
    let server = servers::s3_server(&[("endpoints", std::slice::from_ref(&c.store))]);
    servers::s3_credentials_env();
    let nobody = format!("http://127.0.0.1:{}", servers::free_port());
    let url = format!("s3://endpoints/{}", c.dir_name());
    let netcdf_url = format!("{}/endpoints/{}#mode=nczarr,s3", server.url, c.dir_name());
    let unset = ["AWS_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_ALLOW_HTTP"].map(|v| (v, None));
    let y = expected_data(&c, "y");
    for (store, args, endpoint_s3) in [
        (&url, vec!["--endpoint", &server.url], nobody.as_str()),
        (&netcdf_url, vec![], nobody.as_str()),
        (&url, vec![], server.url.as_str()),
    ] {
        let mut env = unset.to_vec();
        env.push(("AWS_ENDPOINT_URL_S3", Some(endpoint_s3)));
        let mount = Mount::try_with_env(Path::new(store), &args, &env)
            .unwrap_or_else(|e| panic!("{store} {args:?}, AWS_ENDPOINT_URL_S3={endpoint_s3}: {e}"));
        assert_eq!(read_direct(mount.join("y")).unwrap(), y, "{store} {args:?}");
    }
}

/// The store at plain-HTTP `url` with `timeout`, opened as it is (no reference set or
/// repository looked for).
fn http_store(url: &str, timeout: Duration) -> ObjectStoreBackend {
    let location = Location::Http {
        url: url.parse().unwrap(),
    };
    let options = RemoteOptions {
        timeout,
        ..RemoteOptions::default()
    };
    ObjectStoreBackend::open(&location, url, &options).unwrap()
}

/// 200,000 bytes of `(i % 251)` in file `name` of a new directory.
fn served_file(name: &str) -> (tempfile::TempDir, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.path().join(name), &bytes).unwrap();
    (dir, bytes)
}

/// A body that keeps arriving is read to its end even when it takes longer than an attempt may
/// wait for a byte (a third of the timeout), from a server that gives no ETag (so a cut body
/// cannot be resumed); one that stops arriving fails within the timeout.
#[test]
fn a_slow_body_is_read_while_it_keeps_coming_and_fails_in_time_once_it_stops() {
    let (dir, bytes) = served_file("slow");
    let timeout = Duration::from_secs(4);
    // 20 pieces 0.1 s apart: 2 s, more than the 1.33 s an attempt may wait for a byte.
    let drip = servers::quirky_http_server(dir.path(), &["drip=10000,0.1"]);
    let started = Instant::now();
    let got = http_store(&drip.url, timeout).get("slow").unwrap().unwrap();
    assert_eq!(got.bytes, bytes);
    assert!(
        started.elapsed() > timeout / 3,
        "the body came too fast to tell"
    );
    let stalled = servers::quirky_http_server(dir.path(), &["drip=10000,0.1", "stall-after=50000"]);
    let started = Instant::now();
    let err = http_store(&stalled.url, timeout).get("slow").unwrap_err();
    assert!(
        started.elapsed() < timeout + Duration::from_secs(1),
        "a stalled body failed after {:?}: {err}",
        started.elapsed()
    );
}

/// A server that answers a suffix range with the whole object (200) and HEAD with 405 (which
/// the HTTP client takes for "absent"): a shard's index is then an error, never "absent" (which
/// reads the whole shard as fill values). Plain ranges still read, an absent key is absent.
#[test]
fn a_failed_suffix_read_is_an_error_even_when_head_finds_nothing() {
    let (dir, bytes) = served_file("shard");
    let server = servers::quirky_http_server(dir.path(), &["suffix-ignored", "head-405"]);
    let store = http_store(&server.url, Duration::from_secs(10));
    let got = store
        .get_suffix("shard", 16)
        .map(|s| s.map(|(tail, _)| tail));
    assert!(
        matches!(got, Err(ref e) if e.to_string().contains("shard")),
        "{got:?}"
    );
    assert_eq!(
        store.get_range("shard", 1000, 64).unwrap().unwrap(),
        bytes[1000..1064]
    );
    assert_eq!(store.get_suffix("absent", 16).unwrap(), None);
}

/// The consolidated fixtures read byte-exact from `python -m http.server`, which answers every
/// range with the whole file (200): chunks are read whole, as zarr-python reads them there.
#[test]
fn consolidated_fixtures_read_exactly_from_a_server_that_ignores_ranges() {
    let server = servers::python_http_server(&common::fixtures_dir().join("dialects"));
    let cases: Vec<StoreCase> = all_fixture_cases()
        .into_iter()
        .filter(|c| c.name.starts_with("consolidated_") && c.options.is_empty())
        .map(|c| {
            let url = format!("{}/{}", server.url, c.dir_name());
            c.at(url, &[])
        })
        .collect();
    assert_eq!(cases.len(), 4);
    common::fuse_check::check_stores(&cases);
}

/// Over plain HTTP and over S3 (path-style, unsigned) from a server that ignores ranges: a range
/// reaching the object's end is cut out of the whole object, whose length its headers vouch
/// for; a range inside a longer object is refused with a line saying why, never answered with
/// other bytes.
#[test]
fn a_server_that_ignores_ranges_gives_whole_objects_and_refuses_parts() {
    let (dir, bytes) = served_file("obj");
    std::fs::create_dir(dir.path().join("bucket")).unwrap();
    std::fs::write(dir.path().join("bucket/obj"), &bytes).unwrap();
    let server = servers::python_http_server(dir.path());
    let s3 = Location::S3 {
        bucket: "bucket".into(),
        prefix: String::new(),
        endpoint: Some(server.url.clone()),
        region: None,
        virtual_hosted: false,
    };
    let unsigned = RemoteOptions {
        anonymous: true,
        ..RemoteOptions::default()
    };
    let stores = [
        http_store(&server.url, Duration::from_secs(10)),
        ObjectStoreBackend::open(&s3, "s3://bucket", &unsigned).unwrap(),
    ];
    let size = bytes.len() as u64;
    for store in &stores {
        let what = store.describe();
        let mut buf = Vec::new();
        assert!(store
            .get_range_into("obj", 0, size + 1, None, &mut buf)
            .unwrap());
        assert_eq!(buf, bytes, "{what}: whole");
        let tail = store.get_range("obj", size - 100, 100).unwrap().unwrap();
        assert_eq!(
            tail,
            bytes[bytes.len() - 100..],
            "{what}: the last 100 bytes"
        );
        assert_eq!(store.get_range("obj", size, 10).unwrap().unwrap(), b"");
        let (all, meta) = store.get_suffix("obj", size + 10).unwrap().unwrap();
        assert_eq!((all, meta.size), (bytes.clone(), size), "{what}: suffix");
        for part in [
            store.get_range("obj", 1000, 64).map(|_| ()),
            store
                .get_range_into("obj", 0, size - 1, None, &mut buf)
                .map(|_| ()),
            store.get_suffix("obj", 16).map(|_| ()),
        ] {
            let e = part.expect_err(&what).to_string();
            assert!(
                e.contains("obj") && e.to_lowercase().contains("range"),
                "{what}: {e}"
            );
        }
        assert!(!store
            .get_range_into("absent", 0, 10, None, &mut buf)
            .unwrap());
    }
}

/// A listing of many pages (S3 gives 1,000 keys a page) where each page comes well in time but
/// all of them take longer than the timeout: every child is listed.
#[test]
fn a_listing_of_many_pages_is_bounded_page_by_page() {
    let dir = tempfile::tempdir().unwrap();
    let many = dir.path().join("many");
    std::fs::create_dir(&many).unwrap();
    let names: Vec<String> = (0..9_000).map(|i| format!("k{i:05}")).collect();
    for name in &names {
        std::fs::write(many.join(name), b"").unwrap();
    }
    let s3 = servers::s3_server(&[("listing", &[many])]);
    servers::s3_credentials_env();
    let proxy = servers::fault_proxy(&s3);
    // 9 pages, each held 1 s: 9 s in all, past the timeout of 8 s, which leaves each page 7 s
    // for the server's own work on a loaded machine.
    servers::fault(&proxy, "sleep/1");
    let location = Location::S3 {
        bucket: "listing".into(),
        prefix: "many".into(),
        endpoint: Some(proxy.url.clone()),
        region: None,
        virtual_hosted: false,
    };
    let options = RemoteOptions {
        timeout: Duration::from_secs(8),
        ..RemoteOptions::default()
    };
    let store = ObjectStoreBackend::open(&location, "s3://listing/many", &options).unwrap();
    let started = Instant::now();
    let listed: Vec<String> = store
        .list_dir("")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(
        started.elapsed() > options.timeout,
        "the listing was too fast to tell"
    );
    assert_eq!(listed, names);
}

/// A key that object_store cannot take as a path (here one with an ASCII control character)
/// fails the listing of its prefix, with a line naming the prefix and the key: object_store
/// parses every key of a page and offers no way to skip one (docs/remote.md).
#[test]
fn a_key_object_store_refuses_fails_its_listing_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("odd");
    std::fs::create_dir(&odd).unwrap();
    for name in ["fine", "bad\u{7f}name"] {
        std::fs::write(odd.join(name), b"").unwrap();
    }
    let s3 = servers::s3_server(&[("refused", &[odd])]);
    servers::s3_credentials_env();
    let location = Location::S3 {
        bucket: "refused".into(),
        prefix: "odd".into(),
        endpoint: Some(s3.url.clone()),
        region: None,
        virtual_hosted: false,
    };
    let store =
        ObjectStoreBackend::open(&location, "s3://refused/odd", &RemoteOptions::default()).unwrap();
    let e = store.list_dir("").unwrap_err().to_string();
    assert!(e.contains("s3://refused/odd") && e.contains("bad"), "{e}");
    assert!(store.get("fine").unwrap().is_some());
}

/// A store URL's query (a token) goes with every request but is shown nowhere: not in the
/// mount's name (/proc/mounts, readable by all), not in the log, also where a request failed.
#[test]
fn a_url_query_is_sent_but_never_shown() {
    let c = fixture_case("consolidated_v3_zarr3");
    let secret = "sig=S3CR3T";
    let query = format!("query={secret}");
    let mut server =
        servers::quirky_http_server(&common::fixtures_dir().join("dialects"), &[&query]);
    let url = format!("{}/{}?{secret}", server.url, c.dir_name());
    let mount = Mount::new(Path::new(&url), &["-v", "--timeout", "5"]);
    assert_eq!(
        read_direct(mount.join("y")).unwrap(),
        expected_data(&c, "y")
    );
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let shown = format!("{}/{}?…", server.url, c.dir_name());
    assert!(
        mounts.contains(&shown) && !mounts.contains("S3CR3T"),
        "{mounts}"
    );
    server.kill();
    assert!(eio(read_direct(mount.join("g1/x"))));
    let stderr = unmount(mount);
    assert!(stderr.contains("g1/x") && stderr.contains("?…"), "{stderr}");
    assert!(!stderr.contains("S3CR3T"), "{stderr}");
}

/// A Zarr v3 array of 8 `uint8` at the root of `dir`: one shard (`c/0`) of four inner chunks
/// of 2, its index at its end, no checksum; `values[i]` is element i, and the inner chunks lie
/// in the shard in the order `order` gives.
fn sharded(dir: &Path, values: [u8; 8], order: [usize; 4]) {
    let meta = r#"{"zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2],
            "codecs": [{"name": "bytes"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]}"#;
    std::fs::write(dir.join("zarr.json"), meta).unwrap();
    let (mut data, mut index) = (Vec::new(), vec![0u8; 64]);
    for chunk in order {
        let at = data.len() as u64;
        data.extend_from_slice(&values[2 * chunk..2 * chunk + 2]);
        index[16 * chunk..16 * chunk + 8].copy_from_slice(&at.to_le_bytes());
        index[16 * chunk + 8..16 * chunk + 16].copy_from_slice(&2u64.to_le_bytes());
    }
    std::fs::create_dir_all(dir.join("c")).unwrap();
    std::fs::write(dir.join("c/0"), [data, index].concat()).unwrap();
}

/// The view of the store at `url`.
fn view_at(url: &str) -> zarrfs::view::View {
    let store = zarrfs::store::open(url).unwrap();
    let load = zarrfs::meta::LoadOptions { consolidated: true };
    zarrfs::view::from_store(std::sync::Arc::from(store), url, 16 << 20, &load).unwrap()
}

/// A shard rewritten after its index was read (its inner chunks elsewhere, other values, the
/// same size): an inner chunk read then is refused by the server for the old version's ETag
/// (If-Match, 412), and read again through the new index, never at the old offsets of the
/// new object.
#[test]
fn a_shard_rewritten_after_its_index_was_read_is_read_through_its_new_index() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("a.zarr");
    std::fs::create_dir(&root).unwrap();
    sharded(&root, [10, 11, 12, 13, 14, 15, 16, 17], [0, 1, 2, 3]);
    let server = servers::http_server(dir.path());
    let v = view_at(&format!("{}/a.zarr", server.url));
    let a = v.resolve("a").unwrap();
    assert_eq!(v.read(a, 6, 2).unwrap(), [16, 17]);
    // nginx's ETag is the file's time and size: the time is set a second on.
    sharded(&root, [30, 31, 32, 33, 34, 35, 36, 37], [3, 2, 1, 0]);
    let shard = std::fs::File::options()
        .write(true)
        .open(root.join("c/0"))
        .unwrap();
    let modified = shard.metadata().unwrap().modified().unwrap();
    shard
        .set_modified(modified + Duration::from_secs(1))
        .unwrap();
    assert_eq!(v.read(a, 2, 2).unwrap(), [32, 33]);
    // The chunks not read before come from the new version too (the one read before is kept).
    assert_eq!(v.read(a, 0, 6).unwrap(), [30, 31, 32, 33, 34, 35]);
}

/// A server that refuses suffix ranges (416) but serves plain ones: a shard's index is read as
/// the shard's size and a plain range.
#[test]
fn a_shard_index_is_read_from_a_server_that_refuses_suffix_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("a.zarr");
    std::fs::create_dir(&root).unwrap();
    sharded(&root, [10, 11, 12, 13, 14, 15, 16, 17], [2, 0, 3, 1]);
    let server = servers::quirky_http_server(dir.path(), &["suffix-416"]);
    let v = view_at(&format!("{}/a.zarr", server.url));
    let a = v.resolve("a").unwrap();
    assert_eq!(v.read(a, 0, 8).unwrap(), [10, 11, 12, 13, 14, 15, 16, 17]);
}

/// A suffix read that fails otherwise than by its range (denied, a server error after the
/// retries) is that failure: not read again as the object's size and a plain range, whose
/// HEAD's error would replace it.
#[test]
fn a_suffix_read_failing_otherwise_than_by_its_range_is_that_failure() {
    let (dir, _) = served_file("shard");
    let server = servers::quirky_http_server(dir.path(), &[]);
    let proxy = servers::fault_proxy(&server);
    let store = http_store(&proxy.url, Duration::from_secs(10));
    for (fault, expected) in [("deny", "access denied"), ("busy", "503")] {
        servers::fault(&proxy, &format!("{fault}/1000/shard"));
        let err = store.get_suffix("shard", 16).unwrap_err().to_string();
        assert!(err.contains(expected), "{fault}: {err}");
        assert_eq!(servers::fault(&proxy, "count/HEAD:"), 0, "{fault}: {err}");
    }
    servers::fault(&proxy, "ok");
    assert_eq!(store.get_suffix("shard", 16).unwrap().unwrap().0.len(), 16);
}

/// A listing whose server gives a new page token on every page ends, with an error naming it,
/// after a bounded number of pages.
#[test]
fn a_listing_that_never_ends_is_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    // Without the bound, the listing would end after 8,300 pages of one key.
    let server = servers::quirky_http_server(dir.path(), &["endless-listing=8300"]);
    let s3 = Location::S3 {
        bucket: "b".into(),
        prefix: String::new(),
        endpoint: Some(server.url.clone()),
        region: None,
        virtual_hosted: false,
    };
    let unsigned = RemoteOptions {
        anonymous: true,
        ..RemoteOptions::default()
    };
    let store = ObjectStoreBackend::open(&s3, "s3://b", &unsigned).unwrap();
    let err = store.list_dir("").unwrap_err();
    assert!(
        matches!(err, zarrfs::store::StoreError::TooMany { .. }),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(
        err.contains("s3://b") && err.contains("does not end"),
        "{err}"
    );
    let pages = zarrfs::store::open(&format!("{}/pages", server.url))
        .unwrap()
        .get("")
        .unwrap()
        .unwrap();
    assert_eq!(String::from_utf8(pages.bytes).unwrap(), "8192");
}

/// A Parquet reference directory in a bucket whose listing never ends mounts, its record
/// files read without a listing (as for one too large to list).
#[test]
fn a_parquet_set_whose_listing_never_ends_mounts_without_it() {
    let root = tempfile::tempdir().unwrap();
    let refs = root.path().join("b/references");
    servers::copy_tree(&common::fixtures_dir().join("references"), &refs);
    let server = servers::quirky_http_server(root.path(), &["endless-listing=9000"]);
    let unsigned = RemoteOptions {
        anonymous: true,
        endpoint: Some(server.url.clone()),
        ..RemoteOptions::default()
    };
    let url = "s3://b/references/combined.parq";
    let store = zarrfs::store::open_with(url, &unsigned).unwrap();
    let got = store.get(".zgroup");
    assert!(got.as_ref().is_ok_and(Option::is_some), "{got:?}");
    assert!(store.get("temp/0.0.0").unwrap().is_some());
}
