//! Where a daemon records its pid, keyed by its mount's device number, so `zarrfs unmount` can
//! wait for it to exit. (fuser unmounts the path once more as the daemon ends; a mount made at
//! the same path before then would vanish.)

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The directory of pid files: /run/zarrfs as root, else a per-user temporary directory.
fn dir() -> PathBuf {
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    if uid == 0 {
        PathBuf::from("/run/zarrfs")
    } else {
        std::env::temp_dir().join(format!("zarrfs-{uid}"))
    }
}

/// The pid file of the mount at `mountpoint`.
fn path_for(mountpoint: &Path) -> Option<PathBuf> {
    let dev = std::fs::metadata(mountpoint).ok()?.dev();
    Some(dir().join(format!("{}:{}.pid", libc::major(dev), libc::minor(dev))))
}

/// A pid file that is removed when dropped.
pub struct PidFile(PathBuf);

impl PidFile {
    /// Records this process as the daemon of the mount at `mountpoint`.
    pub fn create(mountpoint: &Path) -> Option<PidFile> {
        let path = path_for(mountpoint)?;
        std::fs::create_dir_all(path.parent()?).ok()?;
        std::fs::write(&path, std::process::id().to_string()).ok()?;
        Some(PidFile(path))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The pid of the zarrfs daemon serving `mountpoint`, if it recorded one and still runs.
pub fn daemon_of(mountpoint: &Path) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(path_for(mountpoint)?)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    (comm.trim() == "zarrfs").then_some(pid)
}
