//! `zarrfs unmount MOUNTPOINT`, and detaching a mount (also on SIGINT/SIGTERM).

use super::error::UnmountError;
use super::{mount_table, pidfile};
use rustix::io::Errno;
use rustix::mount::{unmount as unmount_syscall, UnmountFlags};
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// How long `zarrfs unmount` waits for the daemon to finish after the unmount.
const DAEMON_EXIT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a busy mount is tried again before an unmount (`zarrfs unmount`, or a signal to the
/// daemon) gives up on it.
const BUSY_GRACE: Duration = Duration::from_secs(1);

/// Why a mount was not detached.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A process has a file open or its working directory in the mount (EBUSY).
    #[error("busy")]
    Busy,
    /// The path holds a NUL byte.
    #[error("bad path")]
    BadPath,
    /// Nothing is mounted there (EINVAL).
    #[error("not a mount point")]
    NotMountPoint,
    /// umount2(2) failed otherwise.
    #[error(transparent)]
    Failed(std::io::Error),
    /// fusermount3 (or fusermount) said why it failed.
    #[error("{tool}: {said}")]
    HelperRefused { tool: &'static str, said: String },
    /// fusermount3 (or fusermount) could not be run.
    #[error("{tool}: {cause}")]
    HelperFailed {
        tool: &'static str,
        cause: std::io::Error,
    },
    /// Not root, and no fusermount3 or fusermount on the PATH.
    #[error("not permitted, and no fusermount3 to ask (Debian package fuse3)")]
    NoHelper,
}

/// Unmounts the zarrfs mount at `mountpoint` (umount2(2) as root, else through
/// fusermount3/fusermount) and waits for its daemon to exit, so the mount point is free for reuse
/// at once. Refuses what zarrfs did not mount. A dead mount (its daemon killed) is cleaned too.
pub fn unmount(mountpoint: &Path) -> Result<(), UnmountError> {
    let given = || mountpoint.to_path_buf();
    let path = mount_table::resolve(mountpoint).map_err(|cause| UnmountError::Resolve {
        path: given(),
        cause,
    })?;
    let entry = mount_table::mounted_at(&path).ok_or_else(|| UnmountError::NotMounted(given()))?;
    if !entry.is_zarrfs() {
        return Err(UnmountError::NotZarrfs {
            path: given(),
            fstype: entry.fstype,
        });
    }
    let daemon = pidfile::daemon_of(&entry.dev);
    detach_soon(&path).map_err(|refusal| match refusal {
        Refusal::Busy => UnmountError::Busy(given()),
        cause => UnmountError::Failed {
            path: given(),
            cause,
        },
    })?;
    match daemon {
        Some(pid) => {
            let deadline = Instant::now() + DAEMON_EXIT_TIMEOUT;
            while running(pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        // No daemon: the mount was dead, and its record is stale.
        None => pidfile::forget(&entry.dev),
    }
    Ok(())
}

/// [`detach`], tried again for up to [`BUSY_GRACE`] while the mount is busy: a file closed an
/// instant ago can still be held by a process that is starting another program (it holds copies
/// of its parent's files until the new program runs).
pub fn detach_soon(path: &Path) -> Result<(), Refusal> {
    let deadline = Instant::now() + BUSY_GRACE;
    loop {
        match detach(path, false) {
            Err(Refusal::Busy) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            done => return done,
        }
    }
}

/// True while process `pid` exists and is not a zombie.
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Detaches the mount at `mountpoint`; `lazy` detaches it even while busy (MNT_DETACH: it
/// disappears from the tree at once and is released when its last user leaves).
pub fn detach(mountpoint: &Path, lazy: bool) -> Result<(), Refusal> {
    if mountpoint.as_os_str().as_bytes().contains(&0) {
        return Err(Refusal::BadPath);
    }
    let flags = if lazy {
        UnmountFlags::DETACH
    } else {
        UnmountFlags::empty()
    };
    match unmount_syscall(mountpoint, flags) {
        Ok(()) => Ok(()),
        Err(Errno::PERM) => fusermount(mountpoint, lazy),
        Err(Errno::BUSY) => Err(Refusal::Busy),
        Err(Errno::INVAL) => Err(Refusal::NotMountPoint),
        Err(e) => Err(Refusal::Failed(e.into())),
    }
}

/// Unmounting as a user other than root: the setuid helper does it.
fn fusermount(mountpoint: &Path, lazy: bool) -> Result<(), Refusal> {
    for tool in ["fusermount3", "fusermount"] {
        let mut cmd = Command::new(tool);
        cmd.arg("-u");
        if lazy {
            cmd.arg("-z");
        }
        match cmd.arg(mountpoint).output() {
            Ok(out) if out.status.success() => return Ok(()),
            Ok(out) => {
                let said = String::from_utf8_lossy(&out.stderr);
                return Err(if said.contains("busy") {
                    Refusal::Busy
                } else {
                    Refusal::HelperRefused {
                        tool,
                        said: said.trim().to_string(),
                    }
                });
            }
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(cause) => return Err(Refusal::HelperFailed { tool, cause }),
        }
    }
    Err(Refusal::NoHelper)
}
