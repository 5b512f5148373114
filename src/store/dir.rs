//! A store in a local directory.

use super::safe_open::{self, kind, open_beneath, NotRegular, Opened};
use super::{
    accept_name, check_key, join_key, Entry, EntryKind, Object, ObjectMeta, Store, StoreError,
};
use rustix::fs::{fstat, statat, AtFlags, FileType, OFlags, Stat};
use rustix::io::Errno;
use std::collections::HashMap;
use std::io::ErrorKind;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Keys are paths below a root directory, opened once: every key is resolved beneath that
/// directory's descriptor (see `safe_open`), so what the store holds is decided by the
/// directory, not by its path, and nothing outside it is ever opened.
///
/// Only regular files are values: a FIFO, socket or device is refused (an error for that key,
/// skipped with a warning in listings) and never waited on. Symbolic links are followed, as
/// every Zarr library does, while they stay inside the store (a relative target that never
/// climbs above the root), with three exceptions, each skipped with a warning:
/// - a link that leaves the store, or has an absolute target: a store must not expose files
///   its owner did not put in it. The kernel refuses them at every open, so metadata naming a
///   key through one (consolidated metadata, NCZarr lists) is refused too, and a directory or
///   link swapped in after the mount is refused the same way;
/// - a link to a directory that is the listed directory or one of its ancestors: a cycle, which
///   would make the hierarchy infinite;
/// - a link to a directory met inside a directory that was itself reached through a link,
///   unless it leads back up to a directory holding the listed one (by its real path): links
///   that fan out level after level would otherwise make the walk exponential. A path crosses
///   at most two links, and the second only back up, where the cycle rule ends it;
/// - a second link, in one directory, to a directory another link of that directory shows (the
///   directory is identified by device and inode): the first by name shows it.
///
/// Each rule looks only at the listed directory and its path, never at what was listed
/// before, so a listing shows the same whatever order directories are listed in (a mount loads
/// groups in the order they are used).
pub struct DirStore {
    root: PathBuf,
    /// The root directory, opened once.
    dir: OwnedFd,
    mtime: SystemTime,
}

impl DirStore {
    /// Opens the directory `root`.
    pub fn new(root: &Path) -> Result<Self, StoreError> {
        let opened = safe_open::open_path(root)
            .map_err(|e| StoreError::io(root.display().to_string(), e))?;
        Self::from_opened(root, opened)
    }

    /// The store in the directory `opened`, shown as `root`.
    pub(super) fn from_opened(root: &Path, opened: Opened) -> Result<Self, StoreError> {
        if !opened.is_dir() {
            return Err(StoreError::Invalid(format!(
                "{}: not a directory",
                root.display()
            )));
        }
        Ok(DirStore {
            root: root.to_path_buf(),
            mtime: opened.mtime().unwrap_or(SystemTime::UNIX_EPOCH),
            dir: opened.file.into(),
        })
    }

    /// Opens `key` beneath the root with `flags`; a key that leaves the store is refused.
    fn open(&self, key: &str, flags: OFlags) -> Result<Option<OwnedFd>, StoreError> {
        check_key(key)?;
        match open_beneath(self.dir.as_fd(), key, flags) {
            Err(e) if Errno::from_io_error(&e) == Some(Errno::XDEV) => {
                Err(StoreError::BadKey(key.to_string()))
            }
            r => absent_as_none(r, key),
        }
    }

    /// Opens the value of `key`: `None` when absent or a directory; an error naming what it is
    /// when it is not a regular file.
    fn open_value(&self, key: &str) -> Result<Option<Opened>, StoreError> {
        let Some(fd) = self.open(key, OFlags::PATH)? else {
            return Ok(None);
        };
        let opened = safe_open::reopen_checked(fd).map_err(|e| self.refused(key, e))?;
        Ok((!opened.is_dir()).then_some(opened))
    }

    fn refused(&self, key: &str, e: std::io::Error) -> StoreError {
        StoreError::Invalid(format!("{}: {key}: {e}", self.root.display()))
    }

    /// The status of `key`, through links inside the store (without opening the file itself).
    fn stat_through(&self, key: &str) -> std::io::Result<Stat> {
        Ok(fstat(open_beneath(self.dir.as_fd(), key, OFlags::PATH)?)?)
    }

    /// How many components of the key `prefix` are symbolic links, counted up to two: the
    /// links the listed directory was reached through.
    fn links_on_path(&self, prefix: &str) -> usize {
        let mut parent = String::new();
        let mut links = 0;
        for name in prefix.split('/').filter(|n| !n.is_empty()) {
            let is_link = open_beneath(self.dir.as_fd(), &parent, OFlags::PATH)
                .and_then(|fd| Ok(statat(fd, name, AtFlags::SYMLINK_NOFOLLOW)?))
                .is_ok_and(|stat| kind(&stat) == FileType::Symlink);
            links += usize::from(is_link);
            if links == 2 {
                break;
            }
            if !parent.is_empty() {
                parent.push('/');
            }
            parent.push_str(name);
        }
        links
    }

    /// True when the directory `id` (device, inode) holds the directory at key `prefix` in
    /// the file system, whatever links the key goes through: it is met going up from it by
    /// `..`, below the store's root.
    fn holds(&self, prefix: &str, id: (u64, u64)) -> bool {
        let Ok(root) = fstat(&self.dir) else {
            return false;
        };
        let Ok(mut dir) = open_beneath(self.dir.as_fd(), prefix, OFlags::PATH) else {
            return false;
        };
        // A store is far less deep than this; the bound only guards a changing tree.
        for _ in 0..4096 {
            let Ok(parent) = rustix::fs::openat(
                &dir,
                "..",
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            ) else {
                return false;
            };
            let Ok(stat) = fstat(&parent) else {
                return false;
            };
            let at = (stat.st_dev, stat.st_ino);
            if at == id {
                return true;
            }
            if at == (root.st_dev, root.st_ino) {
                return false;
            }
            dir = parent;
        }
        false
    }

    /// Why the link at `key` in the listed directory (key `prefix`) is skipped, if it is; else
    /// the status of its target. `linked` holds the directories other links of the listing
    /// show, by (device, inode); `links_on_path` counts the links the listed directory was
    /// reached through.
    fn refuse_link(
        &self,
        prefix: &str,
        key: &str,
        linked: &mut HashMap<(u64, u64), String>,
        links_on_path: &mut dyn FnMut() -> usize,
    ) -> Result<Stat, Skipped> {
        let stat = self
            .stat_through(key)
            .map_err(|e| match Errno::from_io_error(&e) {
                Some(Errno::XDEV) => Skipped::LinkOut,
                Some(Errno::NOENT) => Skipped::Dangling,
                _ => Skipped::Unresolvable(e),
            })?;
        if kind(&stat) != FileType::Directory {
            return Ok(stat);
        }
        let id = (stat.st_dev, stat.st_ino);
        // A cycle when the target is `prefix` itself or one of its ancestors.
        let mut ancestor = Some(prefix);
        while let Some(a) = ancestor {
            if self
                .stat_through(a)
                .is_ok_and(|m| (m.st_dev, m.st_ino) == id)
            {
                return Err(Skipped::Cycle);
            }
            ancestor = (!a.is_empty()).then(|| a.rsplit_once('/').map_or("", |(p, _)| p));
        }
        let followed = match links_on_path() {
            0 => true,
            1 => self.holds(prefix, id),
            _ => false,
        };
        if !followed {
            return Err(Skipped::SecondLink(prefix.to_string()));
        }
        match linked.get(&id) {
            Some(first) => Err(Skipped::Shown(first.clone())),
            None => {
                linked.insert(id, key.to_string());
                Ok(stat)
            }
        }
    }

    /// The listing entry of `name` in the directory `dir` (key `prefix`), or why it is skipped.
    /// `linked` and `links_on_path` are as [`DirStore::refuse_link`] takes them.
    fn entry(
        &self,
        dir: &OwnedFd,
        prefix: &str,
        name: &str,
        linked: &mut HashMap<(u64, u64), String>,
        links_on_path: &mut dyn FnMut() -> usize,
    ) -> Result<Entry, Skipped> {
        let stat = statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map_err(Skipped::Stat)?;
        let stat = if kind(&stat) == FileType::Symlink {
            self.refuse_link(prefix, &join_key(prefix, name), linked, links_on_path)?
        } else {
            stat
        };
        // Anything but a directory or a regular file is refused here.
        safe_open::check_type(&stat).map_err(Skipped::Type)?;
        let kind = match kind(&stat) {
            FileType::Directory => EntryKind::Prefix,
            _ => EntryKind::Object(stat.st_size.max(0) as u64),
        };
        Ok(Entry {
            name: name.to_string(),
            kind,
            mtime: safe_open::mtime(&stat),
            tag: None,
        })
    }
}

/// Why a listing skips an entry (with a warning).
#[derive(Debug, thiserror::Error)]
enum Skipped {
    /// Its status could not be read.
    #[error("{0}")]
    Stat(Errno),
    /// A link leaving the store, or with an absolute target.
    #[error("a link to outside the store (or with an absolute target): links must stay inside it")]
    LinkOut,
    /// A link to nothing.
    #[error("a dangling link")]
    Dangling,
    /// A link whose target could not be read.
    #[error("an unresolvable link ({0})")]
    Unresolvable(std::io::Error),
    /// A link to the listed directory or one of its ancestors.
    #[error("a link to the directory itself or to one of its parents (a cycle)")]
    Cycle,
    /// A link inside the listed directory (key given), itself reached through a link.
    #[error(
        "a link inside {0:?}, which is itself reached through a link: a path crosses one link, \
         and a second only back up to a directory holding it"
    )]
    SecondLink(String),
    /// A second link to a directory the first (name given) already shows.
    #[error("a second link to the directory already shown as {0:?}")]
    Shown(String),
    /// Neither a regular file nor a directory (a FIFO, socket or device).
    #[error(transparent)]
    Type(NotRegular),
}

/// `Ok(None)` for "not there" errors, which a store reports as an absent key.
fn absent_as_none<T>(r: std::io::Result<T>, key: &str) -> Result<Option<T>, StoreError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => Ok(None),
        Err(e) if e.kind() == ErrorKind::IsADirectory => Ok(None),
        Err(e) => Err(StoreError::io(key, e)),
    }
}

impl Store for DirStore {
    fn get_bounded(&self, key: &str, max: u64) -> Result<Option<Object>, StoreError> {
        let Some(opened) = self.open_value(key)? else {
            return Ok(None);
        };
        super::too_large(key, opened.size(), max)?;
        let bytes = safe_open::read_to_size(&opened).map_err(|e| StoreError::io(key, e))?;
        Ok(Some(Object {
            bytes,
            mtime: opened.mtime(),
        }))
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let mut buf = Vec::new();
        Ok(self
            .get_range_into(key, start, len, None, &mut buf)?
            .then_some(buf))
    }

    fn get_range_into(
        &self,
        key: &str,
        start: u64,
        len: u64,
        _tag: Option<&str>,
        buf: &mut Vec<u8>,
    ) -> Result<bool, StoreError> {
        let Some(opened) = self.open_value(key)? else {
            return Ok(false);
        };
        let end = start.saturating_add(len).min(opened.size());
        buf.resize(end.saturating_sub(start) as usize, 0);
        opened
            .file
            .read_exact_at(buf, start)
            .map_err(|e| StoreError::io(key, e))?;
        Ok(true)
    }

    fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        let Some(fd) = self.open(key, OFlags::PATH)? else {
            return Ok(None);
        };
        let stat = fstat(fd).map_err(|e| StoreError::io(key, e.into()))?;
        safe_open::check_type(&stat).map_err(|e| self.refused(key, std::io::Error::other(e)))?;
        Ok((kind(&stat) == FileType::RegularFile).then(|| ObjectMeta {
            size: stat.st_size.max(0) as u64,
            mtime: safe_open::mtime(&stat),
            tag: None,
        }))
    }

    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        let Some(fd) = self.open(prefix, OFlags::RDONLY | OFlags::DIRECTORY)? else {
            return Ok(Vec::new());
        };
        let source = self.root.display().to_string();
        let listing =
            rustix::fs::Dir::read_from(&fd).map_err(|e| StoreError::io(prefix, e.into()))?;
        let mut names = Vec::new();
        for item in listing {
            let item = item.map_err(|e| StoreError::io(prefix, e.into()))?;
            let raw = item.file_name().to_bytes();
            if raw == b"." || raw == b".." {
                continue;
            }
            let Ok(name) = std::str::from_utf8(raw) else {
                log::warn!(
                    "{source}: {prefix}/{:?}: skipped, the name is not UTF-8",
                    String::from_utf8_lossy(raw)
                );
                continue;
            };
            if accept_name(&source, name) {
                names.push(name.to_string());
            }
        }
        // By name, so that of two links to one directory the same one shows every time.
        names.sort();
        let mut linked = HashMap::new();
        let mut links_on_path = None;
        let mut links_on_path = || *links_on_path.get_or_insert_with(|| self.links_on_path(prefix));
        let mut out = Vec::new();
        for name in &names {
            match self.entry(&fd, prefix, name, &mut linked, &mut links_on_path) {
                Ok(entry) => out.push(entry),
                Err(why) => {
                    let path = self.root.join(prefix).join(name);
                    log::warn!("{source}: {:?} skipped: {why}", path.display());
                }
            }
        }
        Ok(out)
    }

    /// A few requests at once: they are system calls, so as many as there are cores.
    fn parallelism(&self) -> usize {
        std::thread::available_parallelism().map_or(2, |n| n.get().min(4))
    }

    fn mtime(&self) -> SystemTime {
        self.mtime
    }

    fn describe(&self) -> String {
        self.root.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    use crate::store::listed_names as names;

    /// `d0..d{n-1}` in a fresh directory, each but the last holding two links, `l1` and `l2`,
    /// to the next.
    fn linked_dirs(n: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..n {
            std::fs::create_dir(dir.path().join(format!("d{i}"))).unwrap();
        }
        for i in 0..n - 1 {
            for l in ["l1", "l2"] {
                let link = dir.path().join(format!("d{i}/{l}"));
                symlink(format!("../d{}", i + 1), link).unwrap();
            }
        }
        dir
    }

    #[test]
    fn cycles_and_links_out_of_the_store_are_skipped() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/x"), "x").unwrap();
        symlink(".", root.join("self1")).unwrap();
        symlink(".", root.join("self2")).unwrap();
        symlink("..", root.join("a/up")).unwrap();
        symlink("../../a", root.join("a/b/loop")).unwrap();
        symlink("a/b", root.join("inside")).unwrap();
        symlink(outside.path(), root.join("out")).unwrap();
        symlink(outside.path().join("secret"), root.join("a/leak")).unwrap();
        let s = DirStore::new(root).unwrap();
        assert_eq!(names(&s, ""), ["a", "inside"]);
        assert_eq!(names(&s, "a"), ["b"]);
        assert_eq!(names(&s, "a/b"), ["x"]);
        // Reached another way, `loop` is no cycle yet; one level further it is.
        assert_eq!(names(&s, "inside"), ["loop", "x"]);
        assert_eq!(names(&s, "inside/loop/b"), ["x"]);
        assert_eq!(s.get("inside/x").unwrap().unwrap().bytes, b"x");
        // Keys named by metadata rather than listings are refused too.
        assert!(matches!(s.get("out/secret"), Err(StoreError::BadKey(_))));
        assert!(matches!(s.get("a/leak"), Err(StoreError::BadKey(_))));
        assert!(s.list_dir("out").is_err());
    }

    #[test]
    fn a_directory_is_followed_through_one_link_only() {
        // d0..d29, each holding two links to the next: 2^30 paths, one copy of each directory.
        let dir = linked_dirs(30);
        let s = DirStore::new(dir.path()).unwrap();
        // In the walk's breadth-first order: d0 and d1 first, then d0/l1 (which is d1).
        assert_eq!(names(&s, "d0"), ["l1"]);
        assert_eq!(names(&s, "d1"), ["l1"]);
        assert_eq!(names(&s, "d0"), ["l1"], "listing again shows the same");
        assert_eq!(
            names(&s, "d0/l1"),
            Vec::<String>::new(),
            "d2 is shown as d1/l1"
        );
    }

    #[test]
    fn which_links_show_does_not_depend_on_the_order_of_listing() {
        let dir = linked_dirs(4);
        let root = dir.path();
        symlink("..", root.join("d1/up")).unwrap();
        symlink("../d0", root.join("d1/back")).unwrap();
        let walk = |order: &[&str]| {
            let s = DirStore::new(root).unwrap();
            order
                .iter()
                .map(|p| (p.to_string(), names(&s, p)))
                .collect::<HashMap<_, _>>()
        };
        let order = ["d0/l1/l1", "d0/l1", "d1", "d0", "d0/l1/back"];
        let reversed: Vec<&str> = order.iter().rev().copied().collect();
        let shown = walk(&order);
        assert_eq!(shown, walk(&reversed));
        // d0/l1 is d1 reached through a link: its links to d2 lead sideways, not up; `back`
        // (d0) and `up` (the root) are directories its key passes through: cycles.
        assert_eq!(shown["d0/l1"], Vec::<String>::new());
        assert_eq!(shown["d1"], ["back", "l1"]);
        assert_eq!(shown["d0"], ["l1"]);
    }

    #[test]
    fn a_device_is_refused_by_its_type_unopened() {
        // Device 0:0 has no driver: an open would fail (ENXIO) before any type check.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        let (device, mode) = (FileType::CharacterDevice, rustix::fs::Mode::empty());
        let node = dir.path().join("a/0");
        if let Err(e) = rustix::fs::mknodat(rustix::fs::CWD, &node, device, mode, 0) {
            return eprintln!("skipped: mknod needs CAP_MKNOD ({e})");
        }
        let s = DirStore::new(dir.path()).unwrap();
        for e in [s.get("a/0").err(), s.get_range("a/0", 0, 4).err()] {
            let e = e.unwrap().to_string();
            assert!(
                e.ends_with("a/0: a character device, not a regular file: refused"),
                "{e}"
            );
        }
    }
}
