//! Key-value access to a Zarr store: get, get a byte range, list. One file per backend.
//!
//! Nothing above this module knows where bytes come from. Keys are `/`-separated and relative to
//! the store root; [`check_key`] refuses keys that would leave it.

mod aws_profile;
mod client;
mod counting;
mod dir;
mod error;
mod faulty;
mod key;
mod location;
mod memory;
mod object;
mod remote_zip;
mod tls;
mod zip;

pub use client::RemoteOptions;
pub use counting::{CountingStore, RequestCounts};
pub use dir::DirStore;
pub use error::StoreError;
pub use faulty::{Fault, FaultyStore};
pub use key::{accept_key, accept_name, check_key, check_name};
pub use location::{LocalKind, Location};
pub use memory::{list_map, MemoryStore};
pub use object::ObjectStoreBackend;
pub use remote_zip::RemoteZip;
pub use zip::{ZipBytes, ZipStore};

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
    /// The object's version tag (an ETag), where the listing gives one.
    pub tag: Option<String>,
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

    /// The whole value of `key` like [`Store::get`], unless it is larger than `max` bytes: then
    /// [`StoreError::TooLarge`], decided before the value is read (one request, as `get`).
    /// Metadata objects are read this way, so that a hostile one is never allocated in full.
    fn get_bounded(&self, key: &str, max: u64) -> Result<Option<Object>, StoreError> {
        let got = self.get(key)?;
        if let Some(o) = &got {
            too_large(key, o.bytes.len() as u64, max)?;
        }
        Ok(got)
    }

    /// `len` bytes of `key` from `start` (fewer at the end of the value), or `None` when absent.
    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError>;

    /// [`Store::get_range`] into `buf`, replacing what it holds; false when `key` is absent.
    /// Backends that can read into memory they are given reuse `buf`'s.
    fn get_range_into(
        &self,
        key: &str,
        start: u64,
        len: u64,
        buf: &mut Vec<u8>,
    ) -> Result<bool, StoreError> {
        let got = self.get_range(key, start, len)?;
        let present = got.is_some();
        *buf = got.unwrap_or_default();
        Ok(present)
    }

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

    /// How many requests are worth having in flight at once while the hierarchy is walked:
    /// a few by default, many for remote stores (where each waits a network round trip), one
    /// for stores whose answers depend on the order of the calls (directories with links).
    fn parallelism(&self) -> usize {
        4
    }

    /// Modification time of the store as a whole (its root).
    fn mtime(&self) -> SystemTime;

    /// A short human description, e.g. the path or URL.
    fn describe(&self) -> String;
}

/// Refuses a value of `size` bytes at `key` when it is larger than `max` (see
/// [`Store::get_bounded`]).
pub fn too_large(key: &str, size: u64, max: u64) -> Result<(), StoreError> {
    if size > max {
        return Err(StoreError::TooLarge {
            what: key.to_string(),
            size,
            max,
        });
    }
    Ok(())
}

/// Opens the store a command-line argument names, with default remote options.
pub fn open(location: &str) -> Result<Box<dyn Store>, StoreError> {
    open_with(location, &RemoteOptions::default())
}

/// Opens the store a command-line argument names: a directory or `.zip` file (a path or a
/// `file://` URL), or a remote store (`s3://`, `gs://`, `az://`, `abfs://`, `http(s)://`, and
/// netCDF's `#mode=` URLs). Remote stores make no request here.
pub fn open_with(location: &str, remote: &RemoteOptions) -> Result<Box<dyn Store>, StoreError> {
    let parsed = location::parse(location)?;
    let Location::Local { path, kind } = &parsed else {
        let url = display_url(location);
        let object = ObjectStoreBackend::open(&parsed, &url, remote)?;
        if location::names_zip(location) {
            // The URL is the zip object itself: its key in `object` is the empty key.
            return Ok(Box::new(RemoteZip::new(Box::new(object), "", &url)));
        }
        return Ok(Box::new(object));
    };
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| StoreError::io(&shown, e))?;
    match kind {
        LocalKind::Dir if !meta.is_dir() => Err(StoreError::Invalid(format!(
            "{shown}: mode=file names a directory store, but this is not a directory"
        ))),
        LocalKind::Zip if !meta.is_file() => Err(StoreError::Invalid(format!(
            "{shown}: mode=zip names a zip file, but this is not a file"
        ))),
        _ if meta.is_dir() => Ok(Box::new(DirStore::new(path)?)),
        _ if meta.is_file() => Ok(Box::new(ZipStore::open(path)?)),
        _ => Err(StoreError::Invalid(format!(
            "{shown}: neither a directory nor a zip file"
        ))),
    }
}

/// True when `location` names a remote store (a URL other than `file://`).
pub fn is_remote(location: &str) -> bool {
    location.contains("://") && !location.starts_with("file://")
}

/// A store URL as shown to the user and named in the mount: without its `#mode=` fragment and
/// trailing `/`.
pub fn display_url(location: &str) -> String {
    let base = location.split('#').next().unwrap_or(location);
    base.trim_end_matches('/').to_string()
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
