//! `zarrfs unmount MOUNTPOINT`.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

/// Unmounts `mountpoint`: umount2(2) as root, else through fusermount3/fusermount.
pub fn unmount(mountpoint: &Path) -> Result<(), String> {
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
