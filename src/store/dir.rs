//! A store in a local directory.

use super::{check_key, Entry, EntryKind, Object, ObjectMeta, Store, StoreError};
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Keys are paths below a root directory. Symbolic links are followed (as every Zarr library does).
pub struct DirStore {
    root: PathBuf,
    mtime: SystemTime,
}

impl DirStore {
    /// Opens the directory `root`.
    pub fn new(root: &Path) -> Result<Self, StoreError> {
        let meta =
            std::fs::metadata(root).map_err(|e| StoreError::io(root.display().to_string(), e))?;
        Ok(DirStore {
            root: root.to_path_buf(),
            mtime: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        })
    }

    fn path(&self, key: &str) -> Result<PathBuf, StoreError> {
        check_key(key)?;
        Ok(if key.is_empty() {
            self.root.clone()
        } else {
            self.root.join(key)
        })
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
        let path = self.path(prefix)?;
        let Some(rd) = absent_as_none(std::fs::read_dir(path), prefix)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for item in rd {
            let item = item.map_err(|e| StoreError::io(prefix, e))?;
            let Ok(name) = item.file_name().into_string() else {
                log::warn!(
                    "{prefix}/{:?}: skipped, the name is not UTF-8",
                    item.file_name()
                );
                continue;
            };
            // Follow symbolic links, as Zarr libraries do.
            let Ok(meta) = std::fs::metadata(item.path()) else {
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
