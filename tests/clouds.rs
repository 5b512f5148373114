//! gs:// and az:// against their emulators on 127.0.0.1: fake-gcs-server (plain HTTP, reached
//! with `--endpoint`) and Azurite (the account in the endpoint): every fixture reads
//! byte-exact, and a killed server gives EIO while cached data keeps reading. Also: a TLS
//! certificate the client does not trust fails at once, with a line naming SSL_CERT_FILE.

mod common;

use common::mount::{eio, ls_names, read_direct, unmount, Mount};
use common::servers::{self, Server};
use common::{all_fixture_cases, expected_bytes};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use zarrfs::store::{ObjectStoreBackend, RemoteOptions, Store, StoreError};

/// Every fixture mounted from `url_of(its name)` with `args`, checked as the local tests check
/// them (listing, metadata, every array's bytes).
fn check_every_fixture(url_of: impl Fn(&str) -> String, args: &[&str]) {
    let cases = all_fixture_cases();
    assert!(cases.len() >= 30, "too few fixture stores");
    let remote: Vec<_> = cases
        .iter()
        .map(|c| c.at(url_of(&c.dir_name()), args))
        .collect();
    common::fuse_check::check_stores(&remote);
}

fn fixture_stores() -> Vec<PathBuf> {
    all_fixture_cases().into_iter().map(|c| c.store).collect()
}

#[test]
fn every_fixture_reads_exactly_over_gcs() {
    let server = servers::gcs_server(&[("fixtures", &fixture_stores())]);
    check_every_fixture(
        |name| format!("gs://fixtures/{name}"),
        &["--endpoint", &server.url, "--anonymous"],
    );
}

/// A GCS emulator named by the environment alone (GOOGLE_BASE_URL, GOOGLE_ALLOW_HTTP): the
/// client settings read from the environment stay in force beside zarrfs's own.
#[test]
fn gcs_settings_from_the_environment_stay() {
    let stores = consolidated_v3();
    let server = servers::gcs_server(&[("from-env", &stores)]);
    std::env::set_var("GOOGLE_BASE_URL", &server.url);
    std::env::set_var("GOOGLE_ALLOW_HTTP", "true");
    let case = all_fixture_cases()
        .into_iter()
        .find(|c| c.name == "consolidated_v3_zarr3")
        .unwrap();
    let url = format!("gs://from-env/{}", case.dir_name());
    let errors = common::fuse_check::check_store(&case.at(url, &["--anonymous"]));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn every_fixture_reads_exactly_over_azure() {
    let server = servers::azurite(&[("fixtures", &fixture_stores())]);
    servers::azurite_credentials_env();
    let endpoint = format!("{}/{}", server.url, servers::AZURITE_ACCOUNT);
    check_every_fixture(
        |name| format!("az://fixtures/{name}"),
        &["--endpoint", &endpoint],
    );
}

/// A mount of `consolidated_v3_zarr3` from `url` on `server`: once the server is killed, an
/// uncached array gives EIO, the listing and the cached array keep answering, and
/// `zarrfs unmount` ends the mount.
fn killed_server_gives_eio(mut server: Server, url: &str, args: &[&str]) {
    let c = all_fixture_cases()
        .into_iter()
        .find(|c| c.name == "consolidated_v3_zarr3")
        .unwrap();
    let expected = |path: &str| expected_bytes(c.nodes.iter().find(|n| n.path == path).unwrap()).1;
    let mut all_args = vec!["--timeout", "15"];
    all_args.extend(args);
    let mount = Mount::new(Path::new(url), &all_args);
    let y = expected("y");
    assert_eq!(read_direct(mount.join("y")).unwrap(), y);
    server.kill();
    assert!(
        eio(read_direct(mount.join("g1/x"))),
        "a read after the server died is not EIO"
    );
    ls_names(&mount, "x.json");
    assert_eq!(read_direct(mount.join("y")).unwrap(), y);
    let stderr = unmount(mount);
    assert!(
        stderr.lines().any(|l| l.contains("g1/x")),
        "no log line names the failed key:\n{stderr}"
    );
}

fn consolidated_v3() -> Vec<PathBuf> {
    all_fixture_cases()
        .into_iter()
        .filter(|c| c.name == "consolidated_v3_zarr3")
        .map(|c| c.store)
        .collect()
}

#[test]
fn a_killed_gcs_server_gives_eio_while_cached_data_keeps_reading() {
    let server = servers::gcs_server(&[("killed", &consolidated_v3())]);
    let endpoint = server.url.clone();
    let name = consolidated_v3()[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let url = format!("gs://killed/{name}");
    killed_server_gives_eio(server, &url, &["--endpoint", &endpoint, "--anonymous"]);
}

#[test]
fn a_killed_azurite_gives_eio_while_cached_data_keeps_reading() {
    let server = servers::azurite(&[("killed", &consolidated_v3())]);
    servers::azurite_credentials_env();
    let endpoint = format!("{}/{}", server.url, servers::AZURITE_ACCOUNT);
    let name = consolidated_v3()[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    killed_server_gives_eio(
        server,
        &format!("az://killed/{name}"),
        &["--endpoint", &endpoint],
    );
}

/// A TLS server whose certificate is signed by a private CA: it counts the connections it
/// accepts (in `connections`) and answers every request that gets through the handshake with
/// 404.
const TLS_SERVER: &str = r#"
import os, socket, ssl, sys, threading
port, cert, key, counter = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(64)
count = 0
def answer(conn):
    try:
        with ctx.wrap_socket(conn, server_side=True) as tls:
            tls.recv(65536)
            tls.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    except Exception:
        pass
while True:
    conn, _ = srv.accept()
    count += 1
    with open(counter + ".new", "w") as f:
        f.write(str(count))
    os.replace(counter + ".new", counter)
    threading.Thread(target=answer, args=(conn,), daemon=True).start()
"#;

/// A private CA and a certificate for 127.0.0.1 signed by it, made with openssl in `dir`.
fn certificates(dir: &Path) {
    let script = "set -e\n\
        openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
          -subj /CN=zarrfs-test-ca 2>/dev/null\n\
        openssl req -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr \
          -subj /CN=127.0.0.1 2>/dev/null\n\
        printf 'subjectAltName=IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\n' > leaf.ext\n\
        openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
          -out leaf.pem -days 2 -extfile leaf.ext 2>/dev/null\n";
    let out = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Connections the TLS server has accepted so far, once there are at least `at_least` (some
/// the caller knows were made) and no new one came for a moment.
fn connections(counter: &Path, at_least: u64) -> u64 {
    let read = || std::fs::read_to_string(counter).map_or(0, |t| t.trim().parse().unwrap());
    let settled = Instant::now() + Duration::from_secs(30);
    let mut last = read();
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = read();
        if (now == last && now >= at_least) || Instant::now() > settled {
            return now;
        }
        last = now;
    }
}

#[test]
fn an_untrusted_certificate_fails_at_once_naming_ssl_cert_file() {
    let dir = tempfile::tempdir().unwrap();
    certificates(dir.path());
    let script = dir.path().join("tls.py");
    std::fs::write(&script, TLS_SERVER).unwrap();
    let counter = dir.path().join("connections");
    let mut server = None;
    for _ in 0..5 {
        let port = servers::free_port();
        let mut child = Command::new("python3")
            .arg(&script)
            .arg(port.to_string())
            .arg(dir.path().join("leaf.pem"))
            .arg(dir.path().join("leaf.key"))
            .arg(&counter)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
            && Instant::now() < deadline
            && child.try_wait().unwrap().is_none()
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        if child.try_wait().unwrap().is_none() {
            server = Some((child, port));
            break;
        }
    }
    let (mut child, port) = server.expect("the TLS server did not start");
    // The readiness probe above was one connection.
    let probes = connections(&counter, 1);
    let url = format!("https://127.0.0.1:{port}/x.zarr");
    let store = ObjectStoreBackend::open(
        &zarrfs::store::Location::Http {
            url: url.parse().unwrap(),
        },
        &url,
        &RemoteOptions::default(),
    )
    .unwrap();
    let err = store.get("zarr.json").unwrap_err();
    let attempts = connections(&counter, probes + 1) - probes;
    let text = err.to_string();
    assert!(
        matches!(err, StoreError::Remote { .. }) && text.contains("SSL_CERT_FILE"),
        "{text}"
    );
    assert!(text.contains("certificate"), "{text}");
    assert_eq!(attempts, 1, "a certificate error was retried: {text}");
    // The cure: the CA named in SSL_CERT_FILE. The request then reaches the server (404).
    std::env::set_var("SSL_CERT_FILE", dir.path().join("ca.pem"));
    let trusted = ObjectStoreBackend::open(
        &zarrfs::store::Location::Http {
            url: url.parse().unwrap(),
        },
        &url,
        &RemoteOptions::default(),
    )
    .unwrap();
    let got = trusted.get("zarr.json");
    std::env::remove_var("SSL_CERT_FILE");
    assert!(matches!(got, Ok(None)), "{:?}", got.map(|o| o.is_some()));
    let _ = child.kill();
    let _ = child.wait();
}

/// The files below `dir`, as store keys relative to it with their sizes, sorted by key.
fn files_below(dir: &Path, key: &str, out: &mut Vec<(String, u64)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let key = if key.is_empty() {
            name
        } else {
            format!("{key}/{name}")
        };
        if entry.file_type().unwrap().is_dir() {
            files_below(&entry.path(), &key, out);
        } else {
            out.push((key, entry.metadata().unwrap().len()));
        }
    }
}

/// The one recursive listing of each object store names every object below a prefix, keyed
/// from the store's root, with its size (the cache directory's identity of an array).
#[test]
fn recursive_listings_name_every_object_below_a_prefix() {
    let fixture = common::fixtures_dir().join("v3_codecs.zarr");
    let mut want = Vec::new();
    files_below(&fixture, "", &mut want);
    want.sort();
    let s3 = servers::s3_server(&[("listed", std::slice::from_ref(&fixture))]);
    servers::s3_credentials_env();
    let gcs = servers::gcs_server(&[("listed", std::slice::from_ref(&fixture))]);
    let azure = servers::azurite(&[("listed", std::slice::from_ref(&fixture))]);
    servers::azurite_credentials_env();
    let azure_url = format!("{}/{}", azure.url, servers::AZURITE_ACCOUNT);
    for (scheme, endpoint, anonymous) in [
        ("s3", &s3.url, false),
        ("gs", &gcs.url, true),
        ("az", &azure_url, false),
    ] {
        let options = RemoteOptions {
            endpoint: Some(endpoint.clone()),
            anonymous,
            ..RemoteOptions::default()
        };
        let url = format!("{scheme}://listed/v3_codecs.zarr");
        let store = zarrfs::store::open_with(&url, &options).unwrap();
        for prefix in ["", "gzip", "key_default_dot"] {
            let got: Vec<(String, u64)> = store
                .list_below(prefix)
                .unwrap()
                .into_iter()
                .map(|(key, e)| match e.kind {
                    zarrfs::store::EntryKind::Object(size) => (key, size),
                    other => panic!("{key}: {other:?}"),
                })
                .collect();
            let below: Vec<_> = want
                .iter()
                .filter(|(k, _)| prefix.is_empty() || k.starts_with(&format!("{prefix}/")))
                .cloned()
                .collect();
            assert!(below.len() > 1, "{prefix}");
            assert_eq!(got, below, "{url} below {prefix:?}");
        }
    }
}
