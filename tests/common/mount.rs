//! Real FUSE mounts of the zarrfs binary, always unmounted, with timeouts instead of hangs.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const FUSE_SUPER_MAGIC: i64 = 0x6573_5546;
/// The longest any single filesystem operation in a test may take.
pub const OP_TIMEOUT: Duration = Duration::from_secs(60);

/// True when `path` is currently a FUSE mount.
pub fn is_fuse_mount(path: &Path) -> bool {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    unsafe { libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type == FUSE_SUPER_MAGIC }
}

/// Lazily detaches whatever is mounted on `path`.
pub fn force_unmount(path: &Path) {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
}

/// A foreground zarrfs mount on a fresh temporary directory; unmounted and stopped on drop.
pub struct Mount {
    child: Option<Child>,
    dir: tempfile::TempDir,
}

impl Mount {
    /// Mounts `store` with extra command-line `args`; panics (after cleaning up) if it fails.
    pub fn new(store: &Path, args: &[&str]) -> Mount {
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_zarrfs"))
            .arg("-f")
            .args(args)
            .arg(store)
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut m = Mount {
            child: Some(child),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !is_fuse_mount(m.path()) {
            if let Some(status) = m.child.as_mut().unwrap().try_wait().unwrap() {
                let out = m.child.take().unwrap().wait_with_output().unwrap();
                panic!(
                    "zarrfs exited ({status}) before mounting: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            assert!(
                Instant::now() < deadline,
                "mount of {} did not appear",
                store.display()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        m
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
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let out = wait_with_timeout(child, Duration::from_secs(20));
        (
            out.status,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

fn wait_with_timeout(mut child: Child, limit: Duration) -> std::process::Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            wait_with_timeout(child, Duration::from_secs(10));
        }
        if is_fuse_mount(self.dir.path()) {
            force_unmount(self.dir.path());
        }
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
