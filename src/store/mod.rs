//! Key-value access to a Zarr store: get, get a byte range, list. One file per backend.
//!
//! Nothing above this module knows where bytes come from. Keys are `/`-separated and relative to
//! the store root; [`check_key`] refuses keys that would leave it.

mod dir;
mod error;
mod faulty;
mod key;
mod memory;
mod zip;

pub use dir::DirStore;
pub use error::StoreError;
pub use faulty::{Fault, FaultyStore};
pub use key::check_key;
pub use memory::{list_map, MemoryStore};
pub use zip::ZipStore;

use std::path::Path;
use std::time::SystemTime;

/// What a listing says of one child of a prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A stored object, with its size in bytes.
    Object(u64),
    /// A prefix holding further keys (a directory).
    Prefix,
}

/// One child of a listed prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The child's name (one key segment, no `/`).
    pub name: String,
    /// Object or prefix.
    pub kind: EntryKind,
    /// Last modification time, where the store knows it.
    pub mtime: Option<SystemTime>,
}

/// Size and modification time of one stored object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectMeta {
    /// Size in bytes.
    pub size: u64,
    /// Last modification time, where the store knows it.
    pub mtime: Option<SystemTime>,
}

/// A whole stored value and when it was last modified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    /// The value.
    pub bytes: Vec<u8>,
    /// Last modification time, where the store knows it.
    pub mtime: Option<SystemTime>,
}

/// A read-only key-value store.
pub trait Store: Send + Sync {
    /// The whole value of `key` (one request), or `None` when the key is absent.
    fn get(&self, key: &str) -> Result<Option<Object>, StoreError>;

    /// `len` bytes of `key` from `start` (fewer at the end of the value), or `None` when absent.
    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError>;

    /// The last `len` bytes of `key` (all of it when shorter) and the value's total size, or
    /// `None` when absent. Remote backends answer it in one request (a shard's index).
    fn get_suffix(&self, key: &str, len: u64) -> Result<Option<(Vec<u8>, u64)>, StoreError> {
        let Some(meta) = self.head(key)? else {
            return Ok(None);
        };
        let start = meta.size.saturating_sub(len);
        Ok(self
            .get_range(key, start, meta.size - start)?
            .map(|bytes| (bytes, meta.size)))
    }

    /// Size and modification time of `key`, or `None` when absent.
    fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError>;

    /// The direct children of `prefix` (`""` for the root, else a key without trailing `/`),
    /// sorted by name. An absent prefix lists as empty.
    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError>;

    /// Modification time of the store as a whole (its root).
    fn mtime(&self) -> SystemTime;

    /// A short human description, e.g. the path or URL.
    fn describe(&self) -> String;
}

/// Opens the store a command-line argument names: a directory or a `.zip` file.
pub fn open(location: &str) -> Result<Box<dyn Store>, StoreError> {
    let path = Path::new(location);
    let meta = std::fs::metadata(path).map_err(|e| StoreError::io(location, e))?;
    if meta.is_dir() {
        Ok(Box::new(DirStore::new(path)?))
    } else if meta.is_file() {
        Ok(Box::new(ZipStore::open(path)?))
    } else {
        Err(StoreError::Invalid(format!(
            "{location}: neither a directory nor a zip file"
        )))
    }
}

/// The name a store shows for an array at its root: the file name without its extension
/// (`/data/temp.zarr` → `temp`).
pub fn stem(location: &str) -> String {
    let trimmed = location.trim_end_matches('/');
    let name = Path::new(trimmed)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.is_empty() || name == "." || name == ".." {
        "array".to_string()
    } else {
        name
    }
}
