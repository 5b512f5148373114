//! The mount point: checked free (not a live or dead zarrfs mount), created when missing, and
//! removed again if zarrfs created it and the mount fails.

use super::error::MountError;
use super::mount_table::{self, MountEntry};
use super::pidfile;
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
    /// exists. Refuses a mount point that already carries a zarrfs mount, live or dead. What is
    /// mounted there is read from the mount table and the daemon's record, not asked of the
    /// mount, whose daemon may be stuck.
    pub fn claim(given: &Path) -> Result<MountPoint, MountError> {
        let mut created = false;
        let path = match mount_table::resolve(given) {
            Ok(path) => path,
            Err(e)
                if e.kind() == ErrorKind::NotFound && mount_table::parent_dir(given).is_dir() =>
            {
                std::fs::create_dir(given).map_err(|e| unusable(given, e))?;
                created = true;
                mount_table::resolve(given).map_err(|e| unusable(given, e))?
            }
            Err(e) => return Err(unusable(given, e)),
        };
        if let Some(entry) = mount_table::mounted_at(&path) {
            refuse_mounted(given, &path, &entry)?;
        }
        if !path.is_dir() {
            return Err(MountError::NotADirectory(given.to_path_buf()));
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

/// Refuses the mount point `path` (as `given`) carrying `entry` when that is a zarrfs mount,
/// live or dead, or a FUSE mount whose daemon is gone; another filesystem may be mounted over.
fn refuse_mounted(given: &Path, path: &Path, entry: &MountEntry) -> Result<(), MountError> {
    let zarrfs = entry.is_zarrfs();
    if zarrfs && pidfile::recorded(entry) {
        // The daemon's record tells, even when the daemon is stopped or stuck.
        return Err(match pidfile::daemon_of(entry) {
            Some(_) => MountError::AlreadyMounted(given.to_path_buf()),
            None => MountError::DeadZarrfsMount(given.to_path_buf()),
        });
    }
    // Without a record (another user's mount, another filesystem) only the mount itself tells
    // whether its daemon is gone.
    match (mount_table::answers(path), zarrfs) {
        (true, true) => Err(MountError::AlreadyMounted(given.to_path_buf())),
        (true, false) => Ok(()),
        (false, true) => Err(MountError::DeadZarrfsMount(given.to_path_buf())),
        (false, false) => Err(MountError::DeadFuseMount(given.to_path_buf())),
    }
}

fn unusable(given: &Path, cause: std::io::Error) -> MountError {
    MountError::MountPoint {
        path: given.to_path_buf(),
        cause,
    }
}
