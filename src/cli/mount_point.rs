//! The mount point: checked free (not a live or dead zarrfs mount), created when missing, and
//! removed again if zarrfs created it and the mount fails.

use super::error::MountError;
use super::mount_table;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// A directory ready to mount on.
#[derive(Debug, Clone)]
pub struct MountPoint {
    /// Absolute, symlinks resolved.
    pub path: PathBuf,
    /// True when zarrfs created it.
    created: bool,
}

impl MountPoint {
    /// Checks that `given` can take a new mount, creating it if it is missing and its parent
    /// exists. Refuses a mount point that already carries a zarrfs mount, live or dead.
    pub fn claim(given: &Path) -> Result<MountPoint, MountError> {
        let mut created = false;
        match std::fs::metadata(given) {
            Err(e) if mount_table::is_dead_mount_error(&e) => return Err(dead_mount(given)),
            Err(e)
                if e.kind() == ErrorKind::NotFound && mount_table::parent_dir(given).is_dir() =>
            {
                std::fs::create_dir(given).map_err(|e| unusable(given, e))?;
                created = true;
            }
            _ => {}
        }
        let path = std::fs::canonicalize(given).map_err(|e| unusable(given, e))?;
        if !path.is_dir() {
            return Err(MountError::NotADirectory(given.to_path_buf()));
        }
        if !mount_table::answers(&path) {
            return Err(dead_mount(given));
        }
        if mount_table::mounted_at(&path).is_some_and(|m| m.is_zarrfs()) {
            return Err(MountError::AlreadyMounted(given.to_path_buf()));
        }
        Ok(MountPoint { path, created })
    }

    /// Removes the mount point after a failed mount, if zarrfs created it (and it is empty).
    pub fn release(&self) {
        if self.created {
            let _ = std::fs::remove_dir(&self.path);
        }
    }
}

fn unusable(given: &Path, cause: std::io::Error) -> MountError {
    MountError::MountPoint {
        path: given.to_path_buf(),
        cause,
    }
}

/// What to say about a mount point whose FUSE daemon is gone (ENOTCONN).
fn dead_mount(given: &Path) -> MountError {
    let zarrfs = mount_table::resolve(given)
        .ok()
        .and_then(|p| mount_table::mounted_at(&p))
        .is_some_and(|m| m.is_zarrfs());
    if zarrfs {
        MountError::DeadZarrfsMount(given.to_path_buf())
    } else {
        MountError::DeadFuseMount(given.to_path_buf())
    }
}
