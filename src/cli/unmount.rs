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

/// How an unmount ended, beyond the mount being gone.
#[derive(Debug, PartialEq, Eq)]
pub enum Unmounted {
    /// The daemon has ended (or was gone already), or did not end in time.
    Done,
    /// The daemon, this pid, is stopped (SIGSTOP, a debugger) and ends only once continued; it was
    /// not waited for.
    DaemonStopped(i32),
}

/// Unmounts the zarrfs mount at `mountpoint` (umount2(2) as root, else through
/// fusermount3/fusermount) and waits for its daemon to exit, so the mount point is free for reuse
/// at once. Refuses what zarrfs did not mount. A dead mount (its daemon killed) is cleaned too.
/// The mount itself is never asked (its daemon may be stuck): the path is resolved and the mount
/// recognised from the mount table.
pub fn unmount(mountpoint: &Path) -> Result<Unmounted, UnmountError> {
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
    let daemon = pidfile::daemon_of(&entry);
    detach_soon(&path).map_err(|refusal| match refusal {
        Refusal::Busy => UnmountError::Busy(given()),
        cause => UnmountError::Failed {
            path: given(),
            cause,
        },
    })?;
    let Some(pid) = daemon else {
        // No daemon: the mount was dead, and its record is stale.
        pidfile::forget(&entry);
        return Ok(Unmounted::Done);
    };
    let deadline = Instant::now() + DAEMON_EXIT_TIMEOUT;
    loop {
        match state(pid) {
            State::Gone => return Ok(Unmounted::Done),
            State::Stopped => return Ok(Unmounted::DaemonStopped(pid)),
            State::Running if Instant::now() >= deadline => return Ok(Unmounted::Done),
            State::Running => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// What a process is doing, for the wait on a daemon.
enum State {
    /// Ended (a zombie, or no such process).
    Gone,
    /// Stopped by a signal or a debugger: it does nothing until continued.
    Stopped,
    Running,
}

/// The state of process `pid`, from /proc.
fn state(pid: i32) -> State {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return State::Gone;
    };
    // The state follows the parenthesised command name.
    let letter = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    match letter {
        Some('Z' | 'X') | None => State::Gone,
        Some('T' | 't') => State::Stopped,
        Some(_) => State::Running,
    }
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
