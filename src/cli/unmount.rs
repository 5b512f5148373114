//! `zarrfs unmount MOUNTPOINT`.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// How long `zarrfs unmount` waits for the daemon to finish after the unmount.
const DAEMON_EXIT_TIMEOUT: Duration = Duration::from_secs(10);

/// Unmounts `mountpoint` (umount2(2) as root, else through fusermount3/fusermount) and waits
/// for the zarrfs daemon serving it to exit, so the mount point is free for reuse at once.
pub fn unmount(mountpoint: &Path) -> Result<(), String> {
    let daemon = super::pidfile::daemon_of(mountpoint);
    unmount_only(mountpoint)?;
    if let Some(pid) = daemon {
        let deadline = Instant::now() + DAEMON_EXIT_TIMEOUT;
        while running(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    Ok(())
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

fn unmount_only(mountpoint: &Path) -> Result<(), String> {
    let shown = mountpoint.display();
    let c = CString::new(mountpoint.as_os_str().as_bytes())
        .map_err(|_| format!("{shown}: bad path"))?;
    // SAFETY: c is a valid NUL-terminated path.
    if unsafe { libc::umount2(c.as_ptr(), 0) } == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EPERM) => {
            for tool in ["fusermount3", "fusermount"] {
                if let Ok(status) = Command::new(tool).arg("-u").arg(mountpoint).status() {
                    return if status.success() {
                        Ok(())
                    } else {
                        Err(format!("{tool} -u {shown} failed"))
                    };
                }
            }
            Err(format!("{shown}: not permitted, and no fusermount3 to ask"))
        }
        Some(libc::EINVAL) => Err(format!("{shown}: not a mount point")),
        Some(libc::EBUSY) => Err(format!("{shown}: busy (a process is using it)")),
        _ => Err(format!("{shown}: {err}")),
    }
}
