//! Real FUSE mounts of the zarrfs binary, always unmounted, with timeouts instead of hangs.

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The longest any single filesystem operation in a test may take.
pub const OP_TIMEOUT: Duration = Duration::from_secs(60);

/// Set to 1 (as `.ci/run` does) to make a machine where FUSE tests cannot run fail them.
pub const REQUIRE_FUSE: &str = "ZARRFS_REQUIRE_FUSE";

/// Whether FUSE tests can run here. If not, says why on stderr, naming the test, and returns
/// false (the test then returns early); with `ZARRFS_REQUIRE_FUSE=1` it panics instead.
pub fn fuse_ready() -> bool {
    ready(fuse_missing())
}

/// Like [`fuse_ready`], for tests that also need root (mounting a tmpfs, namespaces).
pub fn root_fuse_ready() -> bool {
    let root = rustix::process::geteuid().is_root();
    ready(fuse_missing().or_else(|| (!root).then(|| "not running as root".to_string())))
}

fn ready(missing: Option<String>) -> bool {
    let Some(missing) = missing else {
        return true;
    };
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a FUSE test");
    if std::env::var(REQUIRE_FUSE).is_ok_and(|v| v == "1") {
        panic!("{test}: FUSE tests are required here ({REQUIRE_FUSE}=1), but {missing}");
    }
    // Straight to the process's stderr: the test harness captures eprintln! of passing tests.
    let _ = writeln!(
        std::io::stderr(),
        "skipping {test}: {missing} (set {REQUIRE_FUSE}=1 to fail instead)"
    );
    false
}

/// Why zarrfs cannot mount here, if it cannot.
fn fuse_missing() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse does not exist".into());
    }
    let helper = ["fusermount3", "fusermount"].iter().any(|tool| {
        std::env::var_os("PATH")
            .is_some_and(|dirs| std::env::split_paths(&dirs).any(|d| d.join(tool).is_file()))
    });
    if rustix::process::geteuid().is_root() {
        return (!has_cap_sys_admin() && !helper)
            .then(|| "root lacks CAP_SYS_ADMIN and there is no fusermount3".into());
    }
    let rw = rustix::fs::Access::READ_OK | rustix::fs::Access::WRITE_OK;
    if rustix::fs::access("/dev/fuse", rw).is_err() {
        return Some("not root, and /dev/fuse is not readable and writable".into());
    }
    (!helper).then(|| "not root, and no fusermount3 (Debian package fuse3)".into())
}

/// True when this process has CAP_SYS_ADMIN (needed by mount(2)).
fn has_cap_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let hex = s
                .lines()
                .find_map(|l| l.strip_prefix("CapEff:"))?
                .trim()
                .to_string();
            u64::from_str_radix(&hex, 16).ok()
        })
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}

/// True when `path` is currently a FUSE mount.
/// Read from the mount table, not asked of the mount: `statfs` would load the whole tree (the
/// totals `df` shows), which the tests of lazy loading must not do.
pub fn is_fuse_mount(path: &Path) -> bool {
    let Some(wanted) = path.to_str() else {
        return false;
    };
    std::fs::read_to_string("/proc/self/mounts").is_ok_and(|table| {
        table.lines().any(|line| {
            let mut fields = line.split(' ');
            let (_, point, fstype) = (fields.next(), fields.next(), fields.next());
            point == Some(wanted) && fstype.is_some_and(|t| t.starts_with("fuse"))
        })
    })
}

/// Lazily detaches whatever is mounted on `path`.
pub fn force_unmount(path: &Path) {
    let _ = rustix::mount::unmount(path, rustix::mount::UnmountFlags::DETACH);
}

/// Detaches on drop whatever a test left mounted on its mount point (live or dead).
pub struct Unmounted<'a>(pub &'a Path);

impl Drop for Unmounted<'_> {
    fn drop(&mut self) {
        force_unmount(self.0);
    }
}

/// A foreground zarrfs mount on a fresh temporary directory; unmounted and stopped on drop.
pub struct Mount {
    child: Option<Child>,
    /// zarrfs's stderr, read as it comes (a daemon that logged more than a pipe holds would
    /// block), whole once it exits.
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
    dir: tempfile::TempDir,
}

impl Mount {
    /// Mounts `store` with extra command-line `args`; panics (after cleaning up) if it fails.
    pub fn new(store: &Path, args: &[&str]) -> Mount {
        Mount::try_new(store, args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Mounts `store` with extra command-line `args`; what zarrfs said when it exits before
    /// mounting.
    pub fn try_new(store: &Path, args: &[&str]) -> Result<Mount, String> {
        Mount::try_with_env(store, args, &[])
    }

    /// [`Mount::try_new`] with environment variables set (`Some`) or removed (`None`) for
    /// zarrfs alone.
    pub fn try_with_env(
        store: &Path,
        args: &[&str],
        env: &[(&str, Option<&str>)],
    ) -> Result<Mount, String> {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zarrfs"));
        for (name, value) in env {
            match value {
                Some(v) => cmd.env(name, v),
                None => cmd.env_remove(name),
            };
        }
        let mut child = cmd
            .arg("-f")
            .args(args)
            .arg(store)
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut pipe = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = pipe.read_to_end(&mut text);
            text
        });
        let mut m = Mount {
            child: Some(child),
            stderr: Some(stderr),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !is_fuse_mount(m.path()) {
            if let Some(status) = m.child.as_mut().unwrap().try_wait().unwrap() {
                m.child = None;
                return Err(format!(
                    "zarrfs exited ({status}) before mounting: {}",
                    m.stderr_text()
                ));
            }
            assert!(
                Instant::now() < deadline,
                "mount of {} did not appear",
                store.display()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(m)
    }

    /// Process id of the zarrfs daemon.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `rel` below the mount point.
    pub fn join(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Stops zarrfs with SIGTERM and returns its exit status and stderr.
    pub fn stop(mut self) -> (std::process::ExitStatus, String) {
        let child = self.child.take().unwrap();
        let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
        let status = wait_with_timeout(child, Duration::from_secs(20));
        (status, self.stderr_text())
    }

    /// All zarrfs wrote on stderr, once it has exited.
    fn stderr_text(&mut self) -> String {
        let text = self.stderr.take().map(|t| t.join().unwrap_or_default());
        String::from_utf8_lossy(&text.unwrap_or_default()).into_owned()
    }
}

fn wait_with_timeout(mut child: Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait().unwrap()
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
            wait_with_timeout(child, Duration::from_secs(10));
        }
        // Whatever is mounted on our own directory is ours; a dead mount answers nothing, not
        // even statfs, so detach without asking (EINVAL when nothing is mounted).
        force_unmount(self.dir.path());
    }
}

/// Runs `f` on another thread and panics if it takes longer than [`OP_TIMEOUT`].
pub fn timed<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(OP_TIMEOUT)
        .unwrap_or_else(|_| panic!("{what}: no answer within {OP_TIMEOUT:?}"))
}

/// Runs `cmd` to its end with its output piped, killing it (and failing the test) after `limit`.
pub fn run_within(cmd: &mut Command, limit: Duration) -> std::process::Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            panic!("{cmd:?} did not finish within {limit:?}");
        }
    }
}

/// A command's status and output, for a failed assertion.
pub fn describe(out: &std::process::Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Reads a whole mounted file with O_DIRECT: the request reaches zarrfs, not the page cache.
pub fn read_direct(path: std::path::PathBuf) -> std::io::Result<Vec<u8>> {
    timed("read", move || {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)?;
        let mut out = Vec::new();
        f.read_to_end(&mut out)?;
        Ok(out)
    })
}

/// The first `len` bytes of `path`, read once with O_DIRECT (the request reaches zarrfs, never
/// the page cache).
pub fn pread_direct(path: &Path, len: usize) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)?;
    let mut buf = vec![0u8; len];
    let n = f.read_at(&mut buf, 0)?;
    buf.truncate(n);
    Ok(buf)
}

/// [`pread_direct`] within the tests' time guard.
pub fn read_start_direct(path: std::path::PathBuf, len: usize) -> std::io::Result<Vec<u8>> {
    timed("read", move || pread_direct(&path, len))
}

/// True when `r` failed with EIO.
pub fn eio(r: std::io::Result<Vec<u8>>) -> bool {
    matches!(r, Err(e) if e.raw_os_error() == Some(libc::EIO))
}

/// `ls -R` of the mount succeeds and names `file`.
pub fn ls_names(mount: &Mount, file: &str) {
    let root = mount.path().to_path_buf();
    let out = timed("ls -R", move || {
        Command::new("ls").arg("-R").arg(root).output().unwrap()
    });
    assert!(out.status.success(), "ls -R failed");
    assert!(String::from_utf8_lossy(&out.stdout).contains(file));
}

/// `zarrfs unmount` ends the mount while its server is dead or hung; returns zarrfs's stderr.
pub fn unmount(mount: Mount) -> String {
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
    let (status, stderr) = mount.stop();
    assert!(status.success(), "zarrfs exited with {status}");
    stderr
}

/// Runs `script` with `args` in python3, within the operation timeout.
pub fn python(script: &'static str, args: Vec<String>) -> std::process::Output {
    timed("python3", move || {
        Command::new("python3")
            .arg("-c")
            .arg(script)
            .args(args)
            .output()
            .unwrap()
    })
}
