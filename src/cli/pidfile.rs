//! Where a daemon records its pid, keyed by its mount's device number (`major:minor`), so
//! `zarrfs unmount` can tell its mounts from others and wait for the daemon to exit. A record
//! also holds the daemon's start time and its mount's id and mount point: it describes a mount
//! only while these match (a device number is reused by later mounts), and its daemon only while
//! a process with that pid started then (a pid is reused too). (fuser
//! unmounts the path once more as the daemon ends; a mount made at the same path before then
//! would vanish.)
//!
//! The directory is the user's own: one that another user owns or may write into (a
//! `/tmp/zarrfs-UID` made by someone else, with links planted in it) is refused, and files in it
//! are never opened through a symbolic link.

use super::error::RuntimeDirError;
use super::mount_table::MountEntry;
use rustix::fs::{Mode, OFlags};
use std::ffi::OsStr;
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
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

/// What a pid file holds: `PID START MOUNT_ID` on the first line, the mount point after it.
#[derive(Debug, PartialEq)]
struct Record {
    pid: i32,
    /// When the process started, in clock ticks after boot (`/proc/PID/stat`).
    start: u64,
    mount_id: u64,
    mount_point: PathBuf,
}

impl Record {
    /// This process as the daemon of `entry`.
    fn of_this_process(entry: &MountEntry) -> Option<Record> {
        let pid = i32::try_from(std::process::id()).ok()?;
        Some(Record {
            pid,
            start: start_time(pid)?,
            mount_id: entry.id,
            mount_point: entry.mount_point.clone(),
        })
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = format!("{} {} {}\n", self.pid, self.start, self.mount_id).into_bytes();
        out.extend_from_slice(self.mount_point.as_os_str().as_bytes());
        out
    }

    fn parse(bytes: &[u8]) -> Option<Record> {
        let at = bytes.iter().position(|&b| b == b'\n')?;
        let first = std::str::from_utf8(&bytes[..at]).ok()?;
        let mut fields = first.split(' ');
        let record = Record {
            pid: fields.next()?.parse().ok()?,
            start: fields.next()?.parse().ok()?,
            mount_id: fields.next()?.parse().ok()?,
            mount_point: PathBuf::from(OsStr::from_bytes(&bytes[at + 1..])),
        };
        fields.next().is_none().then_some(record)
    }

    /// True when this record was made for `entry` (same mount id and mount point; the device
    /// number is the file's name).
    fn describes(&self, entry: &MountEntry) -> bool {
        self.mount_id == entry.id && self.mount_point == entry.mount_point
    }

    /// True while the process that wrote this record runs.
    fn alive(&self) -> bool {
        start_time(self.pid) == Some(self.start)
    }
}

/// When process `pid` started, in clock ticks after boot: the 22nd field of `/proc/PID/stat`,
/// the 20th after the parenthesised command name.
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The record in `path`, if it holds one.
fn read_record(path: &Path) -> Option<Record> {
    Record::parse(&std::fs::read(path).ok()?)
}

/// A pid file that is removed when dropped, unless another daemon's record has replaced it.
pub struct PidFile {
    path: PathBuf,
    record: Record,
}

impl PidFile {
    /// Records this process as the daemon of the mount at `mountpoint`; says why not (as a
    /// warning) when it cannot.
    pub fn create(mountpoint: &Path) -> Option<PidFile> {
        let entry = super::mount_table::mounted_at(mountpoint)?;
        let record = Record::of_this_process(&entry)?;
        let written = dir().map_err(|e| e.to_string()).and_then(|dir| {
            let path = dir.join(file_name(&entry.dev));
            write_record(&path, &record).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(path)
        });
        match written {
            Ok(path) => Some(PidFile { path, record }),
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

/// Writes `record` into `path`, not through a link.
fn write_record(path: &Path, record: &Record) -> std::io::Result<()> {
    open_private(path, false)?.write_all(&record.to_bytes())
}

impl Drop for PidFile {
    fn drop(&mut self) {
        // A later mount of the same device number may have replaced it with its own.
        if read_record(&self.path).is_some_and(|r| r == self.record) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The pid files of `entry`'s device number that describe `entry`, with their records.
fn records(entry: &MountEntry) -> impl Iterator<Item = (PathBuf, Record)> + '_ {
    existing_dirs().filter_map(|dir| {
        let path = dir.join(file_name(&entry.dev));
        let record = read_record(&path).filter(|r| r.describes(entry))?;
        Some((path, record))
    })
}

/// True when a zarrfs daemon recorded the mount `entry` (it may have died since).
pub fn recorded(entry: &MountEntry) -> bool {
    records(entry).next().is_some()
}

/// Removes the records of `entry` (left behind by a daemon that was killed).
pub fn forget(entry: &MountEntry) {
    for (path, _) in records(entry) {
        let _ = std::fs::remove_file(path);
    }
}

/// The pid of the zarrfs daemon serving `entry`, if it recorded one and still runs.
pub fn daemon_of(entry: &MountEntry) -> Option<i32> {
    records(entry).find_map(|(_, r)| r.alive().then_some(r.pid))
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

    /// A record describes the mount it was made for (its id and mount point) and its daemon
    /// only while a process with that pid and start time runs.
    #[test]
    fn a_record_describes_only_its_mount_and_its_living_daemon() {
        let entry = MountEntry {
            id: 77,
            dev: "0:99".into(),
            mount_point: PathBuf::from("/mnt/a b\nc"),
            fstype: "fuse.zarrfs".into(),
        };
        let record = Record::of_this_process(&entry).unwrap();
        let parsed = Record::parse(&record.to_bytes()).unwrap();
        assert_eq!(parsed, record);
        assert!(record.describes(&entry) && record.alive());
        let elsewhere = MountEntry {
            mount_point: PathBuf::from("/mnt/other"),
            ..entry
        };
        assert!(!record.describes(&elsewhere));
        let later = MountEntry {
            id: 78,
            ..elsewhere
        };
        assert!(!Record {
            mount_point: later.mount_point.clone(),
            ..record
        }
        .describes(&later));
        let reused = Record::parse(b"1 0 77\n/m").unwrap();
        assert!(!reused.alive(), "pid 1 did not start at tick 0");
        assert_eq!(Record::parse(b"123"), None);
    }

    /// A pid file that a later mount of the same device number rewrote is left to it.
    #[test]
    fn a_pid_file_rewritten_by_another_daemon_is_not_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let record = |pid| Record {
            pid,
            start: 5,
            mount_id: 6,
            mount_point: PathBuf::from("/m"),
        };
        let path = tmp.path().join("0:50.pid");
        write_record(&path, &record(10)).unwrap();
        let ours = PidFile {
            path: path.clone(),
            record: record(10),
        };
        write_record(&path, &record(11)).unwrap();
        drop(ours);
        assert_eq!(read_record(&path), Some(record(11)));
        let theirs = PidFile {
            path: path.clone(),
            record: record(11),
        };
        drop(theirs);
        assert!(!path.exists());
    }

    /// A pid file planted as a link to another file is not written through.
    #[test]
    fn a_planted_link_is_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let planted = tmp.path().join("0:42.pid");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let record = Record {
            pid: 1,
            start: 2,
            mount_id: 3,
            mount_point: PathBuf::from("/m"),
        };
        let err = write_record(&planted, &record).unwrap_err();
        assert_eq!(
            rustix::io::Errno::from_io_error(&err),
            Some(rustix::io::Errno::LOOP)
        );
        assert!(open_private(&planted, true).is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");

        let plain = tmp.path().join("0:43.pid");
        std::fs::write(&plain, b"a longer old content").unwrap();
        write_record(&plain, &record).unwrap();
        assert_eq!(std::fs::read(&plain).unwrap(), b"1 2 3\n/m");
    }
}
