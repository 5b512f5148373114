//! Remote stores against real servers on 127.0.0.1: the fixtures read byte-exact over S3
//! (s3s-fs) and over plain HTTP (nginx), and faults (503s, a hung server, a killed server) give
//! retries or EIO within the store's time bound while the rest of the mount keeps answering.

mod common;

use common::mount::{is_fuse_mount, timed, Mount};
use common::servers::{self, Server};
use common::{expected_bytes, load_manifest, StoreCase};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The stores of both manifests that live in directories (zip stores are read from local files
/// only), with the name of the manifest they come from.
fn directory_cases() -> Vec<StoreCase> {
    let mut cases = load_manifest("manifest.json");
    cases.extend(load_manifest("dialects/manifest.json"));
    cases.retain(|c| c.store.is_dir());
    cases
}

/// `case` mounted from `url` instead of its local directory, with extra options.
fn remote_case(case: &StoreCase, url: String, extra: &[&str]) -> StoreCase {
    let mut c = case.clone();
    c.store = PathBuf::from(url);
    c.options.extend(extra.iter().map(|s| s.to_string()));
    c
}

fn dir_name(case: &StoreCase) -> String {
    case.store
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

fn check(cases: &[StoreCase]) {
    let errors: Vec<String> = cases
        .iter()
        .flat_map(common::fuse_check::check_store)
        .collect();
    assert!(
        errors.is_empty(),
        "{} problems:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

/// A fixture store's cases by name.
fn case(name: &str) -> StoreCase {
    directory_cases()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap()
}

/// The expected `A` bytes of array `path` of `case`.
fn expected_data(case: &StoreCase, path: &str) -> Vec<u8> {
    expected_bytes(case.nodes.iter().find(|n| n.path == path).unwrap()).1
}

/// Reads a whole mounted file with O_DIRECT: the request reaches zarrfs, not the page cache.
fn read_direct(path: PathBuf) -> std::io::Result<Vec<u8>> {
    timed("read", move || {
        use std::io::Read;
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)?;
        let mut out = Vec::new();
        f.read_to_end(&mut out)?;
        Ok(out)
    })
}

/// Reads a whole mounted file through the page cache (which keeps what was read before).
fn read_cached(path: PathBuf) -> std::io::Result<Vec<u8>> {
    timed("read", move || std::fs::read(path))
}

fn eio(r: std::io::Result<Vec<u8>>) -> bool {
    matches!(r, Err(e) if e.raw_os_error() == Some(libc::EIO))
}

/// `ls -R` of the mount succeeds and names `file`.
fn ls_names(mount: &Mount, file: &str) {
    let root = mount.path().to_path_buf();
    let out = timed("ls -R", move || {
        Command::new("ls").arg("-R").arg(root).output().unwrap()
    });
    assert!(out.status.success(), "ls -R failed");
    assert!(String::from_utf8_lossy(&out.stdout).contains(file));
}

/// `zarrfs unmount` ends the mount while its server is dead or hung.
fn unmount(mount: Mount) {
    let path = mount.path().to_path_buf();
    let p = path.clone();
    let status = timed("zarrfs unmount", move || {
        Command::new(env!("CARGO_BIN_EXE_zarrfs"))
            .arg("unmount")
            .arg(p)
            .status()
            .unwrap()
    });
    assert!(status.success(), "zarrfs unmount failed");
    assert!(!is_fuse_mount(&path), "still mounted after zarrfs unmount");
    let (status, _) = mount.stop();
    assert!(status.success(), "zarrfs exited with {status}");
}

#[test]
fn every_directory_fixture_reads_exactly_over_s3() {
    let cases = directory_cases();
    assert!(cases.len() >= 25, "too few fixture stores");
    let stores: Vec<PathBuf> = cases.iter().map(|c| c.store.clone()).collect();
    let server = servers::s3_server(&[("fixtures", &stores)]);
    servers::s3_credentials_env();
    let remote: Vec<StoreCase> = cases
        .iter()
        .map(|c| {
            let url = format!("s3://fixtures/{}", dir_name(c));
            remote_case(c, url, &["--endpoint", &server.url])
        })
        .collect();
    check(&remote);
}

#[test]
fn netcdf_s3_urls_name_a_bucket_on_an_endpoint() {
    let demo = case("nczarr_gen4");
    let server = servers::s3_server(&[("data", std::slice::from_ref(&demo.store))]);
    servers::s3_credentials_env();
    let url = format!("{}/data/{}#mode=nczarr,s3", server.url, dir_name(&demo));
    check(&[remote_case(&demo, url, &[])]);
}

/// An HTTP server over the dialect fixtures.
fn dialects_over_http() -> Server {
    servers::http_server(&common::fixtures_dir().join("dialects"))
}

#[test]
fn consolidated_fixtures_read_exactly_over_http() {
    let server = dialects_over_http();
    let cases: Vec<StoreCase> = directory_cases()
        .into_iter()
        .filter(|c| c.name.starts_with("consolidated_") && c.options.is_empty())
        .map(|c| {
            let url = format!("{}/{}", server.url, dir_name(&c));
            remote_case(&c, url, &[])
        })
        .collect();
    assert_eq!(cases.len(), 4);
    check(&cases);
}

#[test]
#[ignore = "needs robust-meta branch"]
fn nczarr_fixtures_read_exactly_over_http() {
    let server = dialects_over_http();
    let cases: Vec<StoreCase> = directory_cases()
        .into_iter()
        .filter(|c| c.name.starts_with("nczarr_"))
        .map(|c| {
            let url = format!("{}/{}#mode=nczarr", server.url, dir_name(&c));
            remote_case(&c, url, &[])
        })
        .collect();
    assert_eq!(cases.len(), 4);
    check(&cases);
}

#[test]
#[ignore = "needs robust-meta branch"]
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
    assert!(stderr.contains("consolidated"), "{stderr}");
}

/// nginx over the dialect fixtures behind a fault-injecting proxy, and a mount of
/// `consolidated_v2_zarr2` through it.
fn faulty_mount(extra: &[&str]) -> (Server, Server, Mount, StoreCase) {
    let http = dialects_over_http();
    let proxy = servers::fault_proxy(&http);
    let c = case("consolidated_v2_zarr2");
    let url = format!("{}/{}", proxy.url, dir_name(&c));
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
    assert_eq!(read_cached(mount.join("y")).unwrap(), y);
    servers::fault(&proxy, "sleep/60");
    assert!(
        eio(read_direct(mount.join("g1/x"))),
        "a hung read is not EIO"
    );
    // Metadata and cached chunks are answered from memory.
    ls_names(&mount, "z.npy");
    assert!(std::fs::metadata(mount.join("g1/x")).unwrap().len() > 0);
    assert_eq!(read_cached(mount.join("y")).unwrap(), y);
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
    let c = case("consolidated_v3_zarr3");
    let mut server = servers::s3_server(&[("killed", std::slice::from_ref(&c.store))]);
    servers::s3_credentials_env();
    let url = format!("s3://killed/{}", dir_name(&c));
    let mount = Mount::new(
        Path::new(&url),
        &["--endpoint", &server.url, "--timeout", "5"],
    );
    let y = expected_data(&c, "y");
    assert_eq!(read_cached(mount.join("y")).unwrap(), y);
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
    assert_eq!(read_cached(mount.join("y")).unwrap(), y);
    assert!(eio(read_direct(mount.join("g1/g2/z"))));
    unmount(mount);
}
