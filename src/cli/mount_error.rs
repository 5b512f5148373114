//! Saying why the kernel refused a mount, and what to do about it.

use rustix::fs::{access, Access};
use rustix::io::Errno;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The FUSE device.
const DEV_FUSE: &str = "/dev/fuse";

/// A one-line explanation of a failed mount on `mountpoint`: a bare "Permission denied" becomes
/// what is not permitted (the /dev/fuse device, the missing fusermount3) and how to fix it.
pub fn explain(e: &std::io::Error, mountpoint: &Path) -> String {
    let base = format!("cannot mount on {}: {e}", mountpoint.display());
    let denied = e.kind() == std::io::ErrorKind::PermissionDenied
        || Errno::from_io_error(e) == Some(Errno::PERM);
    if !denied {
        return base;
    }
    if rustix::process::geteuid().is_root() {
        return format!(
            "{base} (root may not mount here: in a container, it needs the /dev/fuse device and \
             the SYS_ADMIN capability)"
        );
    }
    if !accessible(DEV_FUSE) {
        let (mode, uid, gid) =
            std::fs::metadata(DEV_FUSE).map_or((0, 0, 0), |m| (m.mode(), m.uid(), m.gid()));
        return format!(
            "{base}: this user may not open {DEV_FUSE} (mode {:03o}, owner uid {uid}, group gid \
             {gid}); ask an \
             administrator for access (mode 0666, as Debian's fuse3 package sets, or membership \
             of the group that owns it, often `fuse`), or mount as root",
            mode & 0o777
        );
    }
    if !["fusermount3", "fusermount"].iter().any(|t| on_path(t)) {
        return format!(
            "{base}: mounting as a user other than root needs fusermount3 (Debian package fuse3)"
        );
    }
    format!(
        "{base}: fusermount3 refused: it must be setuid root, and -o allow_other needs \
         user_allow_other in /etc/fuse.conf"
    )
}

/// True when this process may read and write `path`.
fn accessible(path: &str) -> bool {
    access(path, Access::READ_OK | Access::WRITE_OK).is_ok()
}

/// True when `tool` is an executable file in one of $PATH's directories.
fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|dirs| {
        std::env::split_paths(&dirs).any(|d| {
            std::fs::metadata(d.join(tool)).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_errors_are_passed_through() {
        let e = std::io::Error::from(Errno::NOENT);
        let said = explain(&e, Path::new("/m"));
        assert!(
            said.starts_with("cannot mount on /m: No such file"),
            "{said}"
        );
        assert!(!said.contains("/dev/fuse"), "{said}");
    }
}
