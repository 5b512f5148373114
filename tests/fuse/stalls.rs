//! Stalled remote reads (issue 25, finding 5, and the reader cut off by a second signal):
//! with more stalled reads than FUSE request threads, `ls`, `stat` and cached reads still
//! answer, every stalled read gets EIO within `--timeout`, and a reader still waiting when the
//! daemon ends gets "Transport endpoint is not connected". The server is nginx behind the
//! fault proxy, told to hold every answer.

use crate::common;
use common::mount::{fuse_ready, pread_direct, read_start_direct, timed, Mount};
use common::servers::{self, Server};
use common::{expected_data, fixture_case, StoreCase};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CASE: &str = "consolidated_v2_zarr2";

fn case() -> StoreCase {
    fixture_case(CASE)
}

/// nginx over the dialect fixtures, the fault proxy in front, and the URL of this file's store
/// through the proxy.
fn proxied_store() -> (Server, Server, String) {
    let http = servers::http_server(&common::fixtures_dir().join("dialects"));
    let proxy = servers::fault_proxy(&http);
    let name = case()
        .store
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let url = format!("{}/{name}", proxy.url);
    (http, proxy, url)
}

/// [`proxied_store`] and a mount through the proxy.
fn proxied_mount(args: &[&str]) -> (Server, Server, Mount) {
    let (http, proxy, url) = proxied_store();
    let mount = Mount::new(Path::new(&url), args);
    (http, proxy, mount)
}

#[test]
fn more_stalled_reads_than_threads_leave_the_mount_answering_and_each_gets_eio_in_time() {
    if !fuse_ready() {
        return;
    }
    const TIMEOUT: u64 = 3;
    const READERS: usize = 8;
    let timeout = TIMEOUT.to_string();
    let (_http, proxy, mount) = proxied_mount(&["--threads", "2", "--timeout", &timeout]);
    let c = case();
    let y = expected_data(&c, "y");
    // `y` is read (and its chunks cached) before the server hangs.
    assert_eq!(read_start_direct(mount.join("y"), y.len()).unwrap(), y);
    servers::fault(&proxy, "sleep/600");
    let done = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let (path, done) = (mount.join("g1/x"), done.clone());
            std::thread::spawn(move || {
                let started = Instant::now();
                let got = pread_direct(&path, 4096);
                done.fetch_add(1, Ordering::SeqCst);
                (got, started.elapsed())
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    // With every request thread held by a stalled read, these used to wait behind them.
    let root = mount.path().to_path_buf();
    let ls = timed("ls -lR", move || {
        Command::new("ls").arg("-lR").arg(root).output().unwrap()
    });
    assert!(ls.status.success(), "{ls:?}");
    assert!(String::from_utf8_lossy(&ls.stdout).contains("z.npy"));
    assert!(std::fs::metadata(mount.join("g1/g2/z")).unwrap().len() > 0);
    assert_eq!(
        read_start_direct(mount.join("y"), y.len()).unwrap(),
        y,
        "a cached read"
    );
    assert_eq!(
        done.load(Ordering::SeqCst),
        0,
        "the mount answered only after a stalled read ended"
    );
    for r in readers {
        let (got, took) = r.join().unwrap();
        assert!(
            matches!(&got, Err(e) if e.raw_os_error() == Some(libc::EIO)),
            "{got:?}"
        );
        // The bound the user set, plus slack for a loaded machine: not twice it (the old code
        // answered the last of them after four times the bound).
        assert!(
            took < Duration::from_secs(TIMEOUT + 2),
            "a stalled read took {took:?} with --timeout {TIMEOUT}"
        );
    }
    servers::fault(&proxy, "ok");
    let (_, stderr) = mount.stop();
    assert!(
        stderr.contains("--timeout"),
        "no log line for the overdue reads:\n{stderr}"
    );
}

#[test]
fn a_reader_cut_off_by_the_second_signal_is_told_the_transport_is_not_connected() {
    if !fuse_ready() {
        return;
    }
    let (_http, proxy, mount) = proxied_mount(&["--timeout", "60"]);
    servers::fault(&proxy, "sleep/600");
    let path = mount.join("y");
    let reader = std::thread::spawn(move || pread_direct(&path, 4096));
    std::thread::sleep(Duration::from_millis(500));
    let pid = mount.pid() as i32;
    // The first signal finds the mount busy (the reader holds a file); the second detaches it
    // and ends the daemon.
    let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    std::thread::sleep(Duration::from_millis(500));
    let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    let got = timed("the cut-off read", move || reader.join().unwrap());
    assert!(
        matches!(&got, Err(e) if e.raw_os_error() == Some(libc::ENOTCONN)),
        "{got:?}"
    );
    servers::fault(&proxy, "ok");
}

/// Pids of the processes whose command line names `path`.
fn processes_naming(path: &std::path::Path) -> Vec<i32> {
    let needle = path.as_os_str().as_encoded_bytes().to_vec();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.windows(needle.len()).any(|w| w == needle))
        })
        .collect()
}

#[test]
fn a_mount_command_interrupted_while_the_store_loads_leaves_no_mount_behind() {
    if !fuse_ready() {
        return;
    }
    let (_http, proxy, url) = proxied_store();
    servers::fault(&proxy, "sleep/600");
    let mnt = tempfile::tempdir().unwrap();
    // In the background (no -f): Ctrl-C reaches the mount command, not the new session.
    let mut command = Command::new(env!("CARGO_BIN_EXE_zarrfs"))
        .args(["--timeout", "120"])
        .arg(&url)
        .arg(mnt.path())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let _ = kill(Pid::from_raw(command.id() as i32), Signal::SIGINT);
    let _ = command.wait();
    // The store answers again: a loading left running would now mount.
    servers::fault(&proxy, "ok");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !processes_naming(mnt.path()).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = processes_naming(mnt.path());
    for pid in &left {
        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    std::thread::sleep(Duration::from_millis(200));
    let mounted = common::mount::is_fuse_mount(mnt.path());
    if mounted {
        common::mount::force_unmount(mnt.path());
    }
    assert!(
        left.is_empty(),
        "the background process outlived its mount command"
    );
    assert!(
        !mounted,
        "a mount appeared after the mount command was interrupted"
    );
}

#[test]
fn a_signal_while_the_store_loads_ends_the_mount_command() {
    if !fuse_ready() {
        return;
    }
    let (_http, proxy, url) = proxied_store();
    servers::fault(&proxy, "sleep/600");
    let mnt = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_zarrfs"))
        .args(["-f", "--timeout", "120"])
        .arg(&url)
        .arg(mnt.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    servers::fault(&proxy, "ok");
    let status = status.expect("SIGTERM did not end a mount whose store was still loading");
    assert_eq!(status.code(), Some(1));
    assert!(!common::mount::is_fuse_mount(mnt.path()));
}
