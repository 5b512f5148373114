//! A store in a local directory.

use super::{accept_name, check_key, Entry, EntryKind, Object, ObjectMeta, Store, StoreError};
use std::collections::HashSet;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::SystemTime;

/// Keys are paths below a root directory.
///
/// Symbolic links are followed, as every Zarr library does, with two exceptions, each skipped
/// with a warning: a link that resolves outside the store root (a store must not expose files
/// its owner did not put in it), and a link to a directory that is the listed directory or one
/// of its ancestors (a cycle, which would make the hierarchy infinite). Links are checked where
/// listings meet them and again for every key read, so metadata naming a key through an
/// escaping link (consolidated metadata, NCZarr lists) is refused too.
pub struct DirStore {
    root: PathBuf,
    /// `root` with every link resolved: what "inside the store" means.
    canonical_root: PathBuf,
    /// Directory keys already checked to resolve inside the store.
    inside: RwLock<HashSet<String>>,
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

    /// Why the link `path`, found listing the directory key `dir`, is skipped, if it is.
    fn refuse_link(&self, dir: &str, path: &Path) -> Option<&'static str> {
        let Ok(target) = std::fs::canonicalize(path) else {
            return Some("a dangling link");
        };
        if !target.starts_with(&self.canonical_root) {
            return Some("a link to outside the store");
        }
        if !target.is_dir() {
            return None;
        }
        // A cycle when the target is `dir` itself or one of its ancestors.
        let mut ancestor = Some(dir);
        while let Some(a) = ancestor {
            if std::fs::canonicalize(self.join(a)).is_ok_and(|p| p == target) {
                return Some("a link to the directory itself or to one of its parents (a cycle)");
            }
            ancestor = (!a.is_empty()).then(|| a.rsplit_once('/').map_or("", |(p, _)| p));
        }
        None
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
        let path = self.path(key)?;
        let Some(mut file) = absent_as_none(File::open(path), key)? else {
            return Ok(None);
        };
        let meta = file.metadata().map_err(|e| StoreError::io(key, e))?;
        if meta.is_dir() {
            return Ok(None);
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.read_to_end(&mut bytes)
            .map_err(|e| StoreError::io(key, e))?;
        Ok(Some(Object {
            bytes,
            mtime: meta.modified().ok(),
        }))
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.path(key)?;
        let Some(file) = absent_as_none(File::open(path), key)? else {
            return Ok(None);
        };
        let size = file.metadata().map_err(|e| StoreError::io(key, e))?.len();
        let end = start.saturating_add(len).min(size);
        let mut buf = vec![0u8; end.saturating_sub(start) as usize];
        file.read_exact_at(&mut buf, start)
            .map_err(|e| StoreError::io(key, e))?;
        Ok(Some(buf))
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
                if let Some(why) = self.refuse_link(prefix, &path) {
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
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
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
}
