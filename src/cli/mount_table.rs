//! The kernel's table of mounts (`/proc/self/mountinfo`): what is mounted on a path, and whether
//! zarrfs mounted it.

use rustix::io::Errno;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// The filesystem type of a zarrfs mount: `fuse.` and the default subtype.
pub const ZARRFS_FSTYPE: &str = "fuse.zarrfs";

/// One mount of the table.
#[derive(Debug, PartialEq)]
pub struct MountEntry {
    /// Device number as `major:minor`.
    pub dev: String,
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// Filesystem type (`fuse.zarrfs`, `tmpfs`, ...).
    pub fstype: String,
}

impl MountEntry {
    /// True for a mount zarrfs made: its type is `fuse.zarrfs`, or (with `-o subtype=`) it is a
    /// FUSE mount whose device a zarrfs daemon recorded.
    pub fn is_zarrfs(&self) -> bool {
        self.fstype == ZARRFS_FSTYPE
            || ((self.fstype == "fuse" || self.fstype.starts_with("fuse."))
                && super::pidfile::recorded(&self.dev))
    }
}

/// The topmost mount whose mount point is `path` (absolute, symlinks resolved).
pub fn mounted_at(path: &Path) -> Option<MountEntry> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    table
        .lines()
        .rev()
        .filter_map(parse_line)
        .find(|m| m.mount_point == path)
}

/// `path` made absolute with symlinks resolved, even when it is a dead FUSE mount (whose root
/// cannot be looked at: ENOTCONN), by resolving its parent.
pub fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    match std::fs::canonicalize(path) {
        Err(e) if is_dead_mount_error(&e) => {
            let name = path.file_name().ok_or(e)?;
            Ok(std::fs::canonicalize(parent_dir(path))?.join(name))
        }
        other => other,
    }
}

/// The directory holding `path`: its parent, or `.` for a bare name.
pub fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// True when the filesystem at `path` answers; false when it is a FUSE mount whose daemon is
/// gone (statfs always asks the daemon, where stat may be answered from cached attributes).
pub fn answers(path: &Path) -> bool {
    match rustix::fs::statfs(path) {
        Ok(_) => true,
        Err(e) => !is_dead_mount_error(&e.into()),
    }
}

/// True for the error a FUSE mount gives once its daemon is gone.
pub fn is_dead_mount_error(e: &std::io::Error) -> bool {
    Errno::from_io_error(e) == Some(Errno::NOTCONN) || e.kind() == ErrorKind::NotConnected
}

/// Parses `36 35 98:0 /root /mnt opts [optional...] - fstype source superopts`.
fn parse_line(line: &str) -> Option<MountEntry> {
    let (before, after) = line.split_once(" - ")?;
    let mut fields = before.split(' ');
    let dev = fields.nth(2)?.to_string();
    let mount_point = PathBuf::from(unescape(fields.nth(1)?));
    let fstype = after.split(' ').next()?.to_string();
    Some(MountEntry {
        dev,
        mount_point,
        fstype,
    })
}

/// Undoes the table's octal escapes (`\040` for a space, `\011`, `\012`, `\134`).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            let text = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(text, 8).ok()
        });
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mountinfo_lines_with_escaped_paths() {
        let line = "512 30 0:77 / /tmp/my\\040mnt ro,nosuid,nodev shared:300 - fuse.zarrfs \
                    /data/x.zarr ro,user_id=0,group_id=0";
        assert_eq!(
            parse_line(line),
            Some(MountEntry {
                dev: "0:77".into(),
                mount_point: PathBuf::from("/tmp/my mnt"),
                fstype: "fuse.zarrfs".into(),
            })
        );
        let tmpfs = "40 30 0:33 / /tmp/t rw - tmpfs tmpfs rw,size=10k";
        let entry = parse_line(tmpfs).unwrap();
        assert_eq!(entry.fstype, "tmpfs");
        assert!(!entry.is_zarrfs());
        assert_eq!(unescape("a\\134b\\011"), "a\\b\t");
        assert_eq!(unescape("trailing\\04"), "trailing\\04");
    }
}
