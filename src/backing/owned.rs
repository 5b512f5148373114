//! The cache directory belongs to the daemon: it is created private (0700) or refused when
//! someone else could write into it, and every file in it is opened without following a
//! symbolic link and checked on its open descriptor (a regular file of the daemon's user), so a
//! file planted there (a link to another file, a file of another user) is never served nor
//! written through: it is removed, and the array decoded again.

use rustix::fs::{Access, OFlags};
use rustix::io::Errno;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The daemon's effective user.
fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Creates `root` (mode 0700) or checks that it is a directory of the daemon's user that no
/// group or other user may write into (reached through a link only if the link is the user's
/// too); `PermissionDenied` with the reason otherwise.
pub fn claim_dir(root: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(root)?;
    let refuse = |why: String| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{why}; another user could plant files there, so it is refused (use a directory only this user can write, e.g. one zarrfs creates)"),
        ))
    };
    let link = std::fs::symlink_metadata(root)?;
    if link.file_type().is_symlink() && link.uid() != euid() {
        return refuse(format!(
            "a link owned by uid {}, not by this daemon's user (uid {})",
            link.uid(),
            euid()
        ));
    }
    let meta = std::fs::metadata(root)?;
    if !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a directory",
        ));
    }
    if meta.uid() != euid() {
        return refuse(format!(
            "owned by uid {}, not by this daemon's user (uid {})",
            meta.uid(),
            euid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return refuse(format!(
            "writable by group or others (mode {:o})",
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// True when the daemon may create files in `root` (false on a read-only file system or
/// directory).
pub fn writable_dir(root: &Path) -> bool {
    rustix::fs::access(root, Access::WRITE_OK).is_ok()
}

/// Opens the existing file `path` (for writing too with `write`) without following a link:
/// `None` when there is none. A link, a special file or a file of another user is removed
/// with a log line and counts as absent.
pub fn open_owned(path: &Path, write: bool) -> io::Result<Option<File>> {
    let opened = OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(open_flags(
            OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        ))
        .open(path);
    let file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        // A link (ELOOP) or a FIFO without a writer (ENXIO).
        Err(e) if matches!(Errno::from_io_error(&e), Some(Errno::LOOP | Errno::NXIO)) => {
            discard(path, "a link or special file");
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        discard(path, "not a regular file");
        return Ok(None);
    }
    if meta.uid() != euid() {
        discard(path, &format!("owned by uid {}", meta.uid()));
        return Ok(None);
    }
    Ok(Some(file))
}

/// Opens `path`, creating it (mode 0600) when absent, as [`open_owned`] does.
pub fn open_or_create(path: &Path) -> io::Result<File> {
    loop {
        if let Some(file) = open_owned(path, true)? {
            return Ok(file);
        }
        match create_new(path) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            other => return other,
        }
    }
}

/// `flags` as `OpenOptionsExt::custom_flags` takes them.
fn open_flags(flags: OFlags) -> i32 {
    flags.bits() as i32
}

/// Creates `path` afresh (mode 0600, `O_EXCL`: never through a link), removing what is there.
pub fn create_fresh(path: &Path) -> io::Result<File> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    create_new(path)
}

fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(open_flags(OFlags::NOFOLLOW | OFlags::CLOEXEC))
        .open(path)
}

/// Writes `path` through a fresh `PATH.tmp` that `fill` writes, synced, then renamed into
/// place; the temporary file is removed when that fails.
pub fn write_synced(path: &Path, fill: impl FnOnce(&File) -> io::Result<()>) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = Path::new(&tmp);
    let file = create_fresh(tmp)?;
    let written = fill(&file)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    written
}

fn discard(path: &Path, why: &str) {
    log::warn!(
        "cache dir: {} is {why}, not a file zarrfs wrote: removed, never read nor written through",
        path.display()
    );
    let _ = std::fs::remove_file(path);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_link_is_removed_not_followed_and_a_fresh_file_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let planted = dir.path().join("k.part");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        assert!(open_owned(&planted, true).unwrap().is_none());
        assert!(!planted.exists() && std::fs::symlink_metadata(&planted).is_err());
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let file = open_or_create(&planted).unwrap();
        file.set_len(3).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(&planted).unwrap().is_file());
    }

    #[test]
    fn a_directory_others_may_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cache");
        claim_dir(&root).unwrap();
        let mode = std::fs::metadata(&root).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let e = claim_dir(&root).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("writable by group or others"), "{e}");
        // A link to a directory of this user: the user's own link is followed, another's not.
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&root, &link).unwrap();
        claim_dir(&link).unwrap();
        if euid() == 0 {
            rustix::fs::chownat(
                rustix::fs::CWD,
                &link,
                Some(rustix::fs::Uid::from_raw(65534)),
                None,
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )
            .unwrap();
            let e = claim_dir(&link).unwrap_err();
            assert!(e.to_string().contains("a link owned by uid 65534"), "{e}");
        }
    }
}
