//! A store in a local directory.

use super::{accept_name, check_key, Entry, EntryKind, Object, ObjectMeta, Store, StoreError};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};
use std::time::SystemTime;

/// Keys are paths below a root directory.
///
/// Symbolic links are followed, as every Zarr library does, with three exceptions, each skipped
/// with a warning:
/// - a link that resolves outside the store root: a store must not expose files its owner did
///   not put in it. Such links are refused where listings meet them and again for every key
///   read, so metadata naming a key through one (consolidated metadata, NCZarr lists) is refused
///   too;
/// - a link to a directory that is the listed directory or one of its ancestors: a cycle, which
///   would make the hierarchy infinite;
/// - a second link to a directory already reached through another link (the directory is
///   identified by device and inode): links that fan out level after level would otherwise
///   make the walk exponential. The first link met, in the walk's breadth-first order, shows it.
pub struct DirStore {
    root: PathBuf,
    /// `root` with every link resolved: what "inside the store" means.
    canonical_root: PathBuf,
    /// Directory keys already checked to resolve inside the store.
    inside: RwLock<HashSet<String>>,
    /// Directories reached through a link, by (device, inode), with the key that showed them.
    linked: Mutex<HashMap<(u64, u64), String>>,
    mtime: SystemTime,
}

impl DirStore {
    /// Opens the directory `root`.
    pub fn new(root: &Path) -> Result<Self, StoreError> {
        let what = || root.display().to_string();
        let meta = std::fs::metadata(root).map_err(|e| StoreError::io(what(), e))?;
        let canonical_root = std::fs::canonicalize(root).map_err(|e| StoreError::io(what(), e))?;
        Ok(DirStore {
            root: root.to_path_buf(),
            canonical_root,
            inside: RwLock::new(HashSet::new()),
            linked: Mutex::new(HashMap::new()),
            mtime: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        })
    }

    fn join(&self, key: &str) -> PathBuf {
        if key.is_empty() {
            self.root.clone()
        } else {
            self.root.join(key)
        }
    }

    /// The path of `key`, refusing keys that resolve outside the store through a link.
    fn path(&self, key: &str) -> Result<PathBuf, StoreError> {
        check_key(key)?;
        let (parent, _) = key.rsplit_once('/').unwrap_or(("", key));
        self.check_dir_inside(parent)?;
        let path = self.join(key);
        let is_link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink());
        if is_link && !self.resolves_inside(&path) {
            return Err(StoreError::BadKey(key.to_string()));
        }
        Ok(path)
    }

    /// Checks (once per directory) that the directory key `dir` resolves inside the store.
    fn check_dir_inside(&self, dir: &str) -> Result<(), StoreError> {
        let known = |set: &HashSet<String>| set.contains(dir);
        if dir.is_empty() || known(&self.inside.read().unwrap_or_else(|p| p.into_inner())) {
            return Ok(());
        }
        let path = self.join(dir);
        // An absent directory holds no keys: nothing to refuse.
        if path.exists() && !self.resolves_inside(&path) {
            return Err(StoreError::BadKey(dir.to_string()));
        }
        self.inside
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(dir.to_string());
        Ok(())
    }

    fn resolves_inside(&self, path: &Path) -> bool {
        std::fs::canonicalize(path).is_ok_and(|p| p.starts_with(&self.canonical_root))
    }

    /// Why the link `path`, the entry `key` of the listed directory key `dir`, is skipped, if
    /// it is.
    fn refuse_link(&self, dir: &str, key: &str, path: &Path) -> Option<String> {
        let target = std::fs::canonicalize(path).and_then(|t| Ok((std::fs::metadata(&t)?, t)));
        let Ok((meta, target)) = target else {
            return Some("a dangling link".into());
        };
        if !target.starts_with(&self.canonical_root) {
            return Some("a link to outside the store".into());
        }
        if !meta.is_dir() {
            return None;
        }
        let id = (meta.dev(), meta.ino());
        // A cycle when the target is `dir` itself or one of its ancestors.
        let mut ancestor = Some(dir);
        while let Some(a) = ancestor {
            if std::fs::metadata(self.join(a)).is_ok_and(|m| (m.dev(), m.ino()) == id) {
                return Some(
                    "a link to the directory itself or to one of its parents (a cycle)".into(),
                );
            }
            ancestor = (!a.is_empty()).then(|| a.rsplit_once('/').map_or("", |(p, _)| p));
        }
        let mut linked = self.linked.lock().unwrap_or_else(|p| p.into_inner());
        match linked.get(&id) {
            Some(first) if first != key => Some(format!(
                "a second link to the directory already shown as {first:?}"
            )),
            Some(_) => None,
            None => {
                linked.insert(id, key.to_string());
                None
            }
        }
    }
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
    fn get(&self, key: &str) -> Result<Option<Object>, StoreError> {
        self.get_bounded(key, u64::MAX)
    }

    fn get_bounded(&self, key: &str, max: u64) -> Result<Option<Object>, StoreError> {
        let path = self.path(key)?;
        let Some(mut file) = absent_as_none(File::open(path), key)? else {
            return Ok(None);
        };
        let meta = file.metadata().map_err(|e| StoreError::io(key, e))?;
        if meta.is_dir() {
            return Ok(None);
        }
        super::too_large(key, meta.len(), max)?;
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.read_to_end(&mut bytes)
            .map_err(|e| StoreError::io(key, e))?;
        Ok(Some(Object {
            bytes,
            mtime: meta.modified().ok(),
        }))
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let mut buf = Vec::new();
        Ok(self
            .get_range_into(key, start, len, &mut buf)?
            .then_some(buf))
    }

    fn get_range_into(
        &self,
        key: &str,
        start: u64,
        len: u64,
        buf: &mut Vec<u8>,
    ) -> Result<bool, StoreError> {
        let path = self.path(key)?;
        let Some(file) = absent_as_none(File::open(path), key)? else {
            return Ok(false);
        };
        let size = file.metadata().map_err(|e| StoreError::io(key, e))?.len();
        let end = start.saturating_add(len).min(size);
        buf.resize(end.saturating_sub(start) as usize, 0);
        file.read_exact_at(buf, start)
            .map_err(|e| StoreError::io(key, e))?;
        Ok(true)
    }

    fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        let path = self.path(key)?;
        Ok(absent_as_none(std::fs::metadata(path), key)?
            .filter(|m| m.is_file())
            .map(|m| ObjectMeta {
                size: m.len(),
                mtime: m.modified().ok(),
            }))
    }

    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        check_key(prefix)?;
        self.check_dir_inside(prefix)?;
        let Some(rd) = absent_as_none(std::fs::read_dir(self.join(prefix)), prefix)? else {
            return Ok(Vec::new());
        };
        let source = self.root.display().to_string();
        let mut out = Vec::new();
        for item in rd {
            let item = item.map_err(|e| StoreError::io(prefix, e))?;
            let Ok(name) = item.file_name().into_string() else {
                log::warn!(
                    "{source}: {prefix}/{:?}: skipped, the name is not UTF-8",
                    item.file_name()
                );
                continue;
            };
            if !accept_name(&source, &name) {
                continue;
            }
            let path = item.path();
            if item.file_type().is_ok_and(|t| t.is_symlink()) {
                let key = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}/{name}")
                };
                if let Some(why) = self.refuse_link(prefix, &key, &path) {
                    log::warn!("{source}: {:?} skipped: {why}", path.display());
                    continue;
                }
            }
            // Follow symbolic links, as Zarr libraries do.
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            let kind = if meta.is_dir() {
                EntryKind::Prefix
            } else {
                EntryKind::Object(meta.len())
            };
            out.push(Entry {
                name,
                kind,
                mtime: meta.modified().ok(),
                tag: None,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// One request at a time: of several links to one directory, the first listed is shown,
    /// so the walk must list in its own order to show the same paths every time.
    fn parallelism(&self) -> usize {
        1
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

    fn names(s: &DirStore, prefix: &str) -> Vec<String> {
        s.list_dir(prefix)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect()
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
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for i in 0..30 {
            std::fs::create_dir(root.join(format!("d{i}"))).unwrap();
        }
        for i in 0..29 {
            for l in ["l1", "l2"] {
                symlink(format!("../d{}", i + 1), root.join(format!("d{i}/{l}"))).unwrap();
            }
        }
        let s = DirStore::new(root).unwrap();
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
}
