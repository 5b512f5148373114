//! Where a daemon records its pid, keyed by its mount's device number (`major:minor`), so
//! `zarrfs unmount` can tell its mounts from others and wait for the daemon to exit. (fuser
//! unmounts the path once more as the daemon ends; a mount made at the same path before then
//! would vanish.)

use std::path::{Path, PathBuf};

/// The directory of pid files (and of log files when there is no syslog): /run/zarrfs as root,
/// else a per-user temporary directory.
pub fn dir() -> PathBuf {
    let uid = rustix::process::geteuid().as_raw();
    if uid == 0 {
        PathBuf::from("/run/zarrfs")
    } else {
        std::env::temp_dir().join(format!("zarrfs-{uid}"))
    }
}

/// The device number of the mount at `path` (absolute, symlinks resolved), as `major:minor`,
/// from the mount table: the daemon never asks its own mount (a thread waiting on its own FUSE
/// mount when the process is killed would keep it from ever exiting).
pub fn device_of(path: &Path) -> Option<String> {
    super::mount_table::mounted_at(path).map(|m| m.dev)
}

fn path_for(dev: &str) -> PathBuf {
    dir().join(format!("{dev}.pid"))
}

/// A pid file that is removed when dropped.
pub struct PidFile(PathBuf);

impl PidFile {
    /// Records this process as the daemon of the mount at `mountpoint`.
    pub fn create(mountpoint: &Path) -> Option<PidFile> {
        let path = path_for(&device_of(mountpoint)?);
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

/// True when a zarrfs daemon recorded the mount of device `dev` (it may have died since).
pub fn recorded(dev: &str) -> bool {
    path_for(dev).exists()
}

/// Removes the record of device `dev` (left behind by a daemon that was killed).
pub fn forget(dev: &str) {
    let _ = std::fs::remove_file(path_for(dev));
}

/// The pid of the zarrfs daemon serving device `dev`, if it recorded one and still runs.
pub fn daemon_of(dev: &str) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(path_for(dev))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    (comm.trim() == "zarrfs").then_some(pid)
}
