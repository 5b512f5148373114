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
    /// The mount's id (the table's first field).
    pub id: u64,
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
                && super::pidfile::recorded(self))
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

/// How many links one resolution follows, as the kernel does in one lookup.
const MAX_LINKS: usize = 40;

/// `path` made absolute with symlinks resolved, without looking at what is mounted on it: the
/// parent directory is resolved and the name appended, and the name is followed only when it is a
/// link, not a mount point. (A FUSE mount's root is answered by its daemon, which may be dead,
/// or alive and stuck: stat would then wait for ever.)
pub fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    let mut path = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        // `/`, or a path ending in `..`: no name to keep apart.
        let Some(name) = path.file_name() else {
            return std::fs::canonicalize(&path);
        };
        let parent = std::fs::canonicalize(parent_dir(&path))?;
        let resolved = parent.join(name);
        if mounted_at(&resolved).is_some() {
            return Ok(resolved);
        }
        match std::fs::read_link(&resolved) {
            Ok(target) => path = parent.join(target),
            // Not a link.
            Err(e) if e.kind() == ErrorKind::InvalidInput => return Ok(resolved),
            Err(e) => return Err(e),
        }
    }
    Err(Errno::LOOP.into())
}

/// The directory holding `path`: its parent, or `.` for a bare name.
pub fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// True when the filesystem at `path` answers; false when it is a FUSE mount whose daemon is
/// gone (statfs always asks the daemon, where stat may be answered from cached attributes). It
/// waits for a daemon that is alive but stuck.
pub fn answers(path: &Path) -> bool {
    rustix::fs::statfs(path).err() != Some(Errno::NOTCONN)
}

/// Parses `36 35 98:0 /root /mnt opts [optional...] - fstype source superopts`.
fn parse_line(line: &str) -> Option<MountEntry> {
    let (before, after) = line.split_once(" - ")?;
    let mut fields = before.split(' ');
    let id = fields.next()?.parse().ok()?;
    let dev = fields.nth(1)?.to_string();
    let mount_point = PathBuf::from(unescape(fields.nth(1)?));
    let fstype = after.split(' ').next()?.to_string();
    Some(MountEntry {
        id,
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
                id: 512,
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

    /// Links are followed, relative or absolute and in chains, from the resolved parent.
    #[test]
    fn resolves_links_from_the_parent_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir(base.join("real")).unwrap();
        std::fs::create_dir(base.join("sub")).unwrap();
        std::os::unix::fs::symlink("../real", base.join("sub/up")).unwrap();
        std::os::unix::fs::symlink(base.join("sub/up"), base.join("chain")).unwrap();
        std::os::unix::fs::symlink("loop", base.join("loop")).unwrap();
        for (given, wanted) in [
            (base.join("real"), base.join("real")),
            (base.join("sub/up"), base.join("real")),
            (base.join("sub/../chain/"), base.join("real")),
            (base.join("real/.."), base.clone()),
        ] {
            assert_eq!(resolve(&given).unwrap(), wanted, "{}", given.display());
        }
        let missing = resolve(&base.join("missing")).unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        let looped = resolve(&base.join("loop")).unwrap_err();
        assert_eq!(Errno::from_io_error(&looped), Some(Errno::LOOP));
    }
}
