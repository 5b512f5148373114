//! Key-value access to a Zarr store: get, get a byte range, list. One file per backend.
//!
//! Nothing above this module knows where bytes come from. Keys are `/`-separated and relative to
//! the store root; [`check_key`] refuses keys that would leave it.

pub mod absent;
mod aws_profile;
mod client;
mod counting;
mod deferred;
mod dir;
mod error;
mod faulty;
mod flight_lru;
mod icechunk;
mod kerchunk;
mod key;
mod layer;
mod location;
mod memory;
mod object;
mod references;
mod remote_zip;
mod safe_open;
mod targets;
mod tls;
mod versions;
mod zip;

pub use client::RemoteOptions;
pub use counting::{CountingStore, RequestCounts};
pub use dir::DirStore;
pub use error::StoreError;
pub use faulty::{Fault, FaultyStore};
pub use flight_lru::{CacheStats, FlightLru};
pub use key::{accept_key, accept_name, check_key, check_name, join_key, shown_key};
pub use layer::{Layer, Request};
pub use location::{is_local_path, LocalKind, Location};
pub use memory::{list_map, list_sized, MemoryStore};
pub use object::ObjectStoreBackend;
pub use remote_zip::RemoteZip;
pub use tls::{Redirects, Within};
pub use versions::{describe_objects, digest};
pub use zip::{ZipBytes, ZipStore};

use std::path::Path;
use std::sync::Arc;
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

/// True for an ETag marked weak (`W/"x"`), which names content that may differ in its bytes:
/// it does not vouch for them, nor matches `If-Match`.
pub fn weak_etag(tag: &str) -> bool {
    tag.starts_with("W/")
}

/// An ETag without its quotes and weak marker (`W/"x"` and `"x"` name one version as far as
/// zarrfs can tell: proxies and CDNs mark responses weak on their own).
pub fn etag_text(tag: &str) -> &str {
    tag.strip_prefix("W/").unwrap_or(tag).trim_matches('"')
}

/// Size, modification time and version tag of one stored object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectMeta {
    /// Size in bytes.
    pub size: u64,
    /// Last modification time, where the store knows it.
    pub mtime: Option<SystemTime>,
    /// The object's ETag, where the store keeps one (remote stores).
    pub tag: Option<String>,
}

impl ObjectMeta {
    /// False when `other` shows another version of the object, as far as both tell: another
    /// ETag where both have one, else another size or modification time.
    pub fn same_version(&self, other: &ObjectMeta) -> bool {
        match (&self.tag, &other.tag, self.mtime, other.mtime) {
            (Some(a), Some(b), _, _) => etag_text(a) == etag_text(b),
            (_, _, Some(a), Some(b)) => self.size == other.size && a == b,
            _ => self.size == other.size,
        }
    }
}

/// A whole stored value and when it was last modified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    /// The value.
    pub bytes: Vec<u8>,
    /// Last modification time, where the store knows it.
    pub mtime: Option<SystemTime>,
}

/// How long a store takes to answer one request, as far as reading ahead is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Latency {
    /// A local file system (or memory): a request costs little more than the bytes it moves.
    Local,
    /// A network round trip per request (object storage, HTTP): many requests must be in
    /// flight at once to keep the link busy.
    Network,
}

/// A read-only key-value store.
pub trait Store: Send + Sync {
    /// The whole value of `key` (one request), or `None` when the key is absent.
    fn get(&self, key: &str) -> Result<Option<Object>, StoreError> {
        self.get_bounded(key, u64::MAX)
    }

    /// The whole value of `key` like [`Store::get`], unless it is larger than `max` bytes: then
    /// [`StoreError::TooLarge`], decided before the value is read where the store can (one
    /// request, as `get`). Metadata objects are read this way, so that a hostile one is never
    /// allocated in full.
    fn get_bounded(&self, key: &str, max: u64) -> Result<Option<Object>, StoreError>;

    /// `len` bytes of `key` from `start` (fewer at the end of the value), or `None` when absent.
    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError>;

    /// [`Store::get_range`] into `buf`, replacing what it holds; false when `key` is absent.
    /// Backends that can read into memory they are given reuse `buf`'s. With a `tag`, of the
    /// version of `key` whose (strong) ETag it is: stores that keep ETags read only that version
    /// (remote backends send `If-Match`) and answer [`StoreError::Changed`] when the object is
    /// another one now (and say so by [`Store::matches_tags`]); others ignore it.
    fn get_range_into(
        &self,
        key: &str,
        start: u64,
        len: u64,
        _tag: Option<&str>,
        buf: &mut Vec<u8>,
    ) -> Result<bool, StoreError> {
        let got = self.get_range(key, start, len)?;
        let present = got.is_some();
        *buf = got.unwrap_or_default();
        Ok(present)
    }

    /// The last `len` bytes of `key` (all of it when shorter) and the value's size and version
    /// (its total size, and its ETag where the store keeps one), or `None` when absent. Remote
    /// backends answer it in one request (a shard's index).
    fn get_suffix(&self, key: &str, len: u64) -> Result<Option<(Vec<u8>, ObjectMeta)>, StoreError> {
        let Some(meta) = self.head(key)? else {
            return Ok(None);
        };
        let start = meta.size.saturating_sub(len);
        Ok(self
            .get_range(key, start, meta.size - start)?
            .map(|bytes| (bytes, meta)))
    }

    /// [`Store::get_range`] with the object's version as of the read: remote backends take it
    /// from the response itself, others ask [`Store::head`] after the read (so a change before
    /// or during the read shows).
    fn get_range_versioned(
        &self,
        key: &str,
        start: u64,
        len: u64,
    ) -> Result<Option<(Vec<u8>, ObjectMeta)>, StoreError> {
        let Some(bytes) = self.get_range(key, start, len)? else {
            return Ok(None);
        };
        Ok(self.head(key)?.map(|meta| (bytes, meta)))
    }

    /// True for stores whose [`Store::get_range_into`] with a tag reads only that version
    /// (remote backends: `If-Match`); elsewhere a read's version is of no use to later reads,
    /// and not asked for where that costs a request.
    fn matches_tags(&self) -> bool {
        false
    }

    /// Size, modification time and ETag of `key`, or `None` when absent.
    fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError>;

    /// The direct children of `prefix` (`""` for the root, else a key without trailing `/`),
    /// sorted by name. An absent prefix lists as empty.
    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError>;

    /// Every object below `prefix` (`""`: the whole store, else a key without trailing `/`),
    /// as its key and entry, sorted by key. Stores that list a prefix recursively do so in one
    /// paged listing; others walk [`Store::list_dir`] one directory at a time.
    fn list_below(&self, prefix: &str) -> Result<Vec<(String, Entry)>, StoreError> {
        versions::walk_below(self, prefix)
    }

    /// A token naming the version of the whole store, for stores that know one beyond what
    /// their listings tell (an Icechunk snapshot id, the version of a reference file): data
    /// cached under one token is never taken for another's.
    fn version(&self) -> Option<String> {
        None
    }

    /// Facts about the version of the data the store shows (an Icechunk snapshot: its id,
    /// message and time), as (name, value) pairs, shown on the mount's root.
    fn about(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// How many requests are worth having in flight at once while the hierarchy is walked:
    /// a few by default, many for remote stores (where each waits a network round trip), one
    /// for stores whose answers depend on the order of the calls (directories with links).
    fn parallelism(&self) -> usize {
        4
    }

    /// How far away the store's bytes are: the read-ahead sizes its requests in flight by it.
    fn latency(&self) -> Latency {
        Latency::Local
    }

    /// Modification time of the store as a whole (its root).
    fn mtime(&self) -> SystemTime;

    /// A short human description, e.g. the path or URL.
    fn describe(&self) -> String;
}

/// The most entries one listing holds: a longer one fails ([`StoreError::TooMany`]) rather
/// than grow without bound (a server giving page after page, an array of more chunks than
/// memory holds names for).
pub const MAX_LISTED: usize = 1 << 22;

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
/// netCDF's `#mode=` URLs); a kerchunk reference set (a JSON file, or a Parquet directory) or an
/// Icechunk repository at any of those places is recognised from its layout. Remote stores make
/// no request here: they are recognised and opened on first use.
pub fn open_with(location: &str, remote: &RemoteOptions) -> Result<Box<dyn Store>, StoreError> {
    let parsed = location::parse(location)?;
    let Location::Local { path, kind } = &parsed else {
        let url = display_url(location);
        let object = ObjectStoreBackend::open(&parsed, &url, remote)?;
        if location::names_zip(location) {
            // The URL is the zip object itself: its key in `object` is the empty key.
            no_version(remote, &url)?;
            return Ok(Box::new(RemoteZip::new(Box::new(object), "", &url)));
        }
        // Recognising a reference set or repository takes requests: on first use.
        let (shown, remote) = (url.clone(), remote.clone());
        let json = location::names_json(location);
        return Ok(Box::new(deferred::Deferred::new(
            url,
            Box::new(move || {
                if json {
                    // A JSON reference set: the object itself, as for zip files.
                    no_version(&remote, &shown)?;
                    let refs = kerchunk::open_json(Arc::new(object), "", &shown, &remote)?;
                    return Ok(Box::new(refs) as Box<dyn Store>);
                }
                recognise(Box::new(object), &shown, &remote)
            }),
        )));
    };
    let shown = path.display().to_string();
    // Opened once, without blocking, and its type checked on the descriptor: a FIFO or a
    // device named as the store is refused, never waited on or read.
    let opened = safe_open::open_path(path).map_err(|e| StoreError::io(&shown, e))?;
    match kind {
        LocalKind::Dir if !opened.is_dir() => Err(StoreError::Invalid(format!(
            "{shown}: mode=file names a directory store, but this is not a directory"
        ))),
        LocalKind::Zip if opened.is_dir() => Err(StoreError::Invalid(format!(
            "{shown}: mode=zip names a zip file, but this is not a file"
        ))),
        _ if opened.is_dir() => recognise(
            Box::new(DirStore::from_opened(path, opened)?),
            &shown,
            remote,
        ),
        _ if *kind != LocalKind::Zip && starts_like_json(&opened.file) => {
            let (dir, name) = match (path.parent(), path.file_name()) {
                (Some(d), Some(n)) if !d.as_os_str().is_empty() => (d, n),
                (_, Some(n)) => (Path::new("."), n),
                _ => return Err(StoreError::Invalid(format!("{shown}: not a file name"))),
            };
            let home = Arc::new(DirStore::new(dir)?);
            let key = name.to_string_lossy();
            no_version(remote, &shown)?;
            Ok(Box::new(kerchunk::open_json(home, &key, &shown, remote)?))
        }
        _ => {
            no_version(remote, &shown)?;
            Ok(Box::new(ZipStore::from_opened(path, opened)?))
        }
    }
}

/// A directory or prefix as it is: an Icechunk repository, a Parquet reference directory (a
/// `.zmetadata` with a `record_size`, no `.zgroup`) or a Zarr store.
fn recognise(
    store: Box<dyn Store>,
    location: &str,
    remote: &RemoteOptions,
) -> Result<Box<dyn Store>, StoreError> {
    if icechunk::is_repository(store.as_ref())? {
        let repo = Arc::from(store);
        return Ok(Box::new(icechunk::open(repo, location, remote)?));
    }
    let index = probe(store.as_ref(), ".zmetadata")? && !probe(store.as_ref(), ".zgroup")?;
    if index {
        let zmetadata = store.get_bounded(".zmetadata", 1 << 30)?;
        if zmetadata.is_some_and(|z| kerchunk::is_reference_index(&z.bytes)) {
            let home = Arc::from(store);
            no_version(remote, location)?;
            return Ok(Box::new(kerchunk::open_parquet(home, location, remote)?));
        }
    }
    no_version(remote, location)?;
    Ok(store)
}

/// Whether `key` is in `store`, as recognising the kind of a store asks: a HEAD, or where that
/// fails, a one-byte read, whose answer counts. Access denied counts as "absent" (logged): a
/// bucket that lets objects be read but not listed (S3 then answers 403 for a key that does not
/// exist) is not a reason to refuse the mount, nor is a server that refuses HEAD. Any other
/// failure (a server error after the retries, a timeout) is an error: taking the key for
/// absent would mount an Icechunk repository or a Parquet reference set as plain Zarr.
pub(crate) fn probe(store: &dyn Store, key: &str) -> Result<bool, StoreError> {
    let failed = match store.head(key) {
        Ok(found) => return Ok(found.is_some()),
        Err(e @ StoreError::TimedOut { .. }) => return Err(e),
        Err(e) => e,
    };
    match store.get_range(key, 0, 1) {
        Ok(found) => Ok(found.is_some()),
        Err(e @ StoreError::Denied { .. }) => {
            log::debug!("{failed}; {e}: taken as absent while recognising the store");
            Ok(false)
        }
        Err(e) => {
            log::debug!("{failed}");
            Err(e)
        }
    }
}

/// Refuses `--ref` for a store that is not an Icechunk repository (it shows one version only).
fn no_version(remote: &RemoteOptions, location: &str) -> Result<(), StoreError> {
    match &remote.version {
        Some(name) => Err(StoreError::Invalid(format!(
            "{location}: --ref {name}: only Icechunk repositories have versions to choose from, \
             and this is not one"
        ))),
        None => Ok(()),
    }
}

/// True when `file` starts (after white space) with `{`: a JSON document, not a zip.
fn starts_like_json(file: &std::fs::File) -> bool {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; 64];
    let n = file.read_at(&mut head, 0).unwrap_or(0);
    head[..n].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// The names `store` lists under `prefix`, for tests.
#[cfg(test)]
pub(crate) fn listed_names(store: &dyn Store, prefix: &str) -> Vec<String> {
    let listed = store.list_dir(prefix).unwrap();
    listed.into_iter().map(|e| e.name).collect()
}

/// What stands for a URL's query where the URL is shown.
const HIDDEN_QUERY: &str = "?…";

/// A store URL as shown to the user, in log lines and messages, and named in the mount (which
/// /proc/mounts shows to every user): without its `#mode=` fragment and trailing `/`, and with
/// its query, which may hold a secret (an Azure SAS token, a presigned `X-Amz-Signature`,
/// `?token=`), shown as `?…`, and a `user:password@` before its host shown as `…@`. The query
/// goes into requests only.
pub fn display_url(location: &str) -> String {
    let base = location.split('#').next().unwrap_or(location);
    let hidden;
    let base = match base.split_once("://") {
        Some((scheme, rest)) => {
            let authority = rest.split(['/', '?']).next().unwrap_or(rest);
            match authority.rsplit_once('@') {
                Some((_, host)) => {
                    hidden = format!("{scheme}://…@{host}{}", &rest[authority.len()..]);
                    hidden.as_str()
                }
                None => base,
            }
        }
        None => base,
    };
    match base.split_once('?') {
        Some((path, _)) => format!("{}{HIDDEN_QUERY}", path.trim_end_matches('/')),
        None => base.trim_end_matches('/').to_string(),
    }
}

/// The URL of `key` below a store URL that [`display_url`] gives, as shown: the hidden query
/// stays at the end (`https://h/x.zarr/c/0?…`).
fn display_key_url(url: &str, key: &str) -> String {
    let (base, query) = match url.strip_suffix(HIDDEN_QUERY) {
        Some(base) => (base, HIDDEN_QUERY),
        None => (url, ""),
    };
    match key {
        "" => url.to_string(),
        key => format!("{}/{key}{query}", base.trim_end_matches('/')),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A URL's query (a token, a signature) is never shown, nor its fragment.
    #[test]
    fn urls_are_shown_without_their_query() {
        for (url, shown, key) in [
            (
                "https://h/x.zarr/#mode=zarr",
                "https://h/x.zarr",
                "https://h/x.zarr/c/0",
            ),
            (
                "https://acct.blob.core.windows.net/c/x.zarr?sv=2024&sig=SECRET#mode=zarr",
                "https://acct.blob.core.windows.net/c/x.zarr?…",
                "https://acct.blob.core.windows.net/c/x.zarr/c/0?…",
            ),
            (
                "http://h/x.zarr/?token=SECRET",
                "http://h/x.zarr?…",
                "http://h/x.zarr/c/0?…",
            ),
            (
                "https://me:SECRET@h/x.zarr",
                "https://…@h/x.zarr",
                "https://…@h/x.zarr/c/0",
            ),
            (
                "https://me:SECRET@h?q=1",
                "https://…@h?…",
                "https://…@h/c/0?…",
            ),
        ] {
            assert_eq!(display_url(url), shown, "{url}");
            assert_eq!(display_key_url(shown, "c/0"), key, "{url}");
            assert_eq!(display_key_url(shown, ""), shown, "{url}");
        }
    }

    #[test]
    fn versions_are_told_apart_as_far_as_both_sides_tell() {
        let at = |s| Some(SystemTime::UNIX_EPOCH + Duration::from_secs(s));
        let meta = |size, mtime, tag: Option<&str>| ObjectMeta {
            size,
            mtime,
            tag: tag.map(String::from),
        };
        // ETags decide where both have one: quoted or not, weak or not, one version.
        let a = meta(10, at(1), Some("\"abc\""));
        assert!(a.same_version(&meta(10, at(2), Some("W/\"abc\""))));
        assert!(a.same_version(&meta(10, at(1), Some("abc"))));
        assert!(!a.same_version(&meta(10, at(1), Some("\"abd\""))));
        // Else the size and the modification time, where both are known.
        assert!(a.same_version(&meta(10, at(1), None)));
        assert!(!a.same_version(&meta(10, at(2), None)));
        assert!(!a.same_version(&meta(11, at(1), None)));
        assert!(a.same_version(&meta(10, None, None)));
        assert!(!a.same_version(&meta(9, None, None)));
    }
}
