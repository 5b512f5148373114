//! Where a daemon records its pid, keyed by its mount's device number (`major:minor`), so
//! `zarrfs unmount` can tell its mounts from others and wait for the daemon to exit. (fuser
//! unmounts the path once more as the daemon ends; a mount made at the same path before then
//! would vanish.)
//!
//! The directory is the user's own: one that another user owns or may write into (a
//! `/tmp/zarrfs-UID` made by someone else, with links planted in it) is refused, and files in it
//! are never opened through a symbolic link.

use super::error::RuntimeDirError;
use rustix::fs::{Mode, OFlags};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The directories pid files may be in, the preferred first: /run/zarrfs as root; else
/// `$XDG_RUNTIME_DIR/zarrfs` when that directory is the user's own, then the same in systemd's
/// `/run/user/UID` (where a session's `XDG_RUNTIME_DIR` points: found from cron or ssh too),
/// then `zarrfs-UID` in the temporary directory. A daemon writes in the first; its records are
/// looked for in all.
fn candidates() -> Vec<PathBuf> {
    let uid = rustix::process::geteuid();
    if uid.is_root() {
        return vec![PathBuf::from("/run/zarrfs")];
    }
    let session = PathBuf::from(format!("/run/user/{}", uid.as_raw()));
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .into_iter()
        .chain([session])
        .filter(|d| d.is_absolute() && check(d).is_ok())
        .map(|d| d.join("zarrfs"));
    let temporary = std::env::temp_dir().join(format!("zarrfs-{}", uid.as_raw()));
    let mut dirs: Vec<PathBuf> = runtime.chain([temporary]).collect();
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|d| seen.insert(d.clone()));
    dirs
}

/// The directory of pid files (and of log files when there is no syslog), created (mode 0700)
/// if missing. Refused when it is not the user's own.
pub fn dir() -> Result<PathBuf, RuntimeDirError> {
    let dir = candidates().swap_remove(0);
    claim(&dir)?;
    Ok(dir)
}

/// The directories of [`candidates`] that exist and are the user's own.
fn existing_dirs() -> impl Iterator<Item = PathBuf> {
    candidates().into_iter().filter(|d| check(d).is_ok())
}

/// Creates `dir` (mode 0700) unless it exists, then [`check`]s it.
fn claim(dir: &Path) -> Result<(), RuntimeDirError> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(cause) => {
            return Err(RuntimeDirError::Io {
                dir: dir.to_path_buf(),
                cause,
            })
        }
    }
    check(dir)
}

/// Refuses `dir` unless it is a directory (not a link to one) owned by this user that no other
/// user may write into.
fn check(dir: &Path) -> Result<(), RuntimeDirError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|cause| RuntimeDirError::Io {
        dir: dir.to_path_buf(),
        cause,
    })?;
    let uid = rustix::process::geteuid().as_raw();
    if !meta.is_dir() {
        return Err(RuntimeDirError::NotADirectory(dir.to_path_buf()));
    }
    if meta.uid() != uid {
        return Err(RuntimeDirError::NotOwned {
            dir: dir.to_path_buf(),
            owner: meta.uid(),
            uid,
        });
    }
    if meta.mode() & 0o022 != 0 {
        return Err(RuntimeDirError::Writable {
            dir: dir.to_path_buf(),
            mode: meta.mode() & 0o7777,
        });
    }
    Ok(())
}

/// Opens `path` for writing (appending, or truncated), mode 0600 (created so, or made so: a
/// log an earlier version left readable by others says which paths were looked up), and never
/// through a symbolic link (ELOOP instead).
pub fn open_private(path: &Path, append: bool) -> std::io::Result<File> {
    let how = if append {
        OFlags::APPEND
    } else {
        OFlags::TRUNC
    };
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC | how;
    let fd = rustix::fs::open(path, flags, Mode::from_raw_mode(0o600))?;
    rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o600))?;
    Ok(File::from(fd))
}

/// The device number of the mount at `path` (absolute, symlinks resolved), as `major:minor`,
/// from the mount table: the daemon never asks its own mount (a thread waiting on its own FUSE
/// mount when the process is killed would keep it from ever exiting).
pub fn device_of(path: &Path) -> Option<String> {
    super::mount_table::mounted_at(path).map(|m| m.dev)
}

fn file_name(dev: &str) -> String {
    format!("{dev}.pid")
}

/// A pid file that is removed when dropped.
pub struct PidFile(PathBuf);

impl PidFile {
    /// Records this process as the daemon of the mount at `mountpoint`; says why not (as a
    /// warning) when it cannot.
    pub fn create(mountpoint: &Path) -> Option<PidFile> {
        let dev = device_of(mountpoint)?;
        let written = dir().map_err(|e| e.to_string()).and_then(|dir| {
            let path = dir.join(file_name(&dev));
            write_pid(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(path)
        });
        match written {
            Ok(path) => Some(PidFile(path)),
            Err(why) => {
                log::warn!(
                    "no pid file for {}: {why}; `zarrfs unmount` will not wait for this daemon \
                     to end",
                    mountpoint.display()
                );
                None
            }
        }
    }
}

/// Writes this process's pid into `path`, not through a link.
fn write_pid(path: &Path) -> std::io::Result<()> {
    open_private(path, false)?.write_all(std::process::id().to_string().as_bytes())
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// True when a zarrfs daemon recorded the mount of device `dev` (it may have died since).
pub fn recorded(dev: &str) -> bool {
    existing_dirs().any(|d| d.join(file_name(dev)).exists())
}

/// Removes the records of device `dev` (left behind by a daemon that was killed).
pub fn forget(dev: &str) {
    for dir in existing_dirs() {
        let _ = std::fs::remove_file(dir.join(file_name(dev)));
    }
}

/// The pid of the zarrfs daemon serving device `dev`, if it recorded one and still runs.
pub fn daemon_of(dev: &str) -> Option<i32> {
    existing_dirs().find_map(|dir| {
        let text = std::fs::read_to_string(dir.join(file_name(dev))).ok()?;
        let pid: i32 = text.trim().parse().ok()?;
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        (comm.trim() == "zarrfs").then_some(pid)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_private_file_left_readable_by_others_is_made_private() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("0:40.log");
        std::fs::write(&log, "old\n").unwrap();
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
        open_private(&log, true).unwrap();
        let mode = std::fs::metadata(&log).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "old\n");
    }

    /// A directory another user owns, or may write into, or a link to one of ours, is refused;
    /// a missing one is created for this user alone.
    #[test]
    fn only_a_directory_of_the_users_own_is_used() {
        let tmp = tempfile::tempdir().unwrap();
        let fresh = tmp.path().join("fresh");
        claim(&fresh).unwrap();
        let meta = std::fs::symlink_metadata(&fresh).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o700);
        claim(&fresh).unwrap();

        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = claim(&open).unwrap_err();
        assert!(matches!(err, RuntimeDirError::Writable { .. }), "{err}");

        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&fresh, &link).unwrap();
        let err = claim(&link).unwrap_err();
        assert!(matches!(err, RuntimeDirError::NotADirectory(_)), "{err}");

        // Another user's: as root, one given to nobody; otherwise root's own /.
        let theirs = if rustix::process::geteuid().is_root() {
            let dir = tmp.path().join("theirs");
            std::fs::create_dir(&dir).unwrap();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
            let nobody = Some(rustix::fs::Uid::from_raw(65534));
            rustix::fs::chown(&dir, nobody, None).unwrap();
            dir
        } else {
            PathBuf::from("/")
        };
        let err = claim(&theirs).unwrap_err();
        assert!(matches!(err, RuntimeDirError::NotOwned { .. }), "{err}");
        assert!(err.to_string().contains("owned by uid"), "{err}");
    }

    /// A pid file planted as a link to another file is not written through.
    #[test]
    fn a_planted_link_is_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let planted = tmp.path().join("0:42.pid");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let err = write_pid(&planted).unwrap_err();
        assert_eq!(
            rustix::io::Errno::from_io_error(&err),
            Some(rustix::io::Errno::LOOP)
        );
        assert!(open_private(&planted, true).is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");

        let plain = tmp.path().join("0:43.pid");
        std::fs::write(&plain, b"a longer old content").unwrap();
        write_pid(&plain).unwrap();
        let written = std::fs::read_to_string(&plain).unwrap();
        assert_eq!(written, std::process::id().to_string());
    }
}
