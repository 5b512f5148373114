//! Remote stores (S3, GCS, Azure Blob, plain HTTP) on the `object_store` crate, behind the
//! synchronous [`Store`] trait: one shared tokio runtime runs the requests, and every call is
//! bounded by a deadline so a hung server never holds a caller forever.
//!
//! A call hands its request to the runtime as a task and waits for the answer on a channel,
//! with the deadline as the wait's timeout (then the task is aborted). The caller's thread never
//! enters the runtime: the deadline holds whatever the runtime's threads are doing, and callers
//! may be any threads, also threads of this or another tokio runtime (where `block_on` would
//! panic).

use super::client::RemoteOptions;
use super::location::Location;
use super::{
    check_key, too_large, Entry, EntryKind, Latency, Object, ObjectMeta, Store, StoreError,
    MAX_LISTED,
};
use crate::memory::{buffers, Buffers};
use futures::StreamExt;
use object_store::list::{PaginatedListOptions, PaginatedListStore};
use object_store::path::{Path, DELIMITER};
use object_store::{GetOptions, GetRange, GetResult, ListResult, ObjectStore, ObjectStoreExt};
use std::future::Future;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// The most pages one listing reads: S3 and GCS give 1,000 entries a page and Azure 5,000, so
/// that [`MAX_LISTED`] entries take far fewer.
const MAX_PAGES: usize = 1 << 13;

/// Threads of the network runtime: they only wait on sockets, sign requests and gather bodies.
const RUNTIME_THREADS: usize = 4;

/// Why the network runtime did not start (kept: every later request gets it).
#[derive(Debug, thiserror::Error)]
#[error("cannot start the network runtime: {0}")]
struct NoRuntime(std::io::Error);

/// The runtime every remote store shares, started on first use (after the mount command has
/// daemonized: threads do not survive fork).
fn runtime() -> Result<&'static tokio::runtime::Runtime, &'static NoRuntime> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, NoRuntime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(RUNTIME_THREADS)
                .thread_name("zarrfs-net")
                .enable_all()
                .build()
                .map_err(NoRuntime)
        })
        .as_ref()
}

/// A bucket, container or URL prefix read through `object_store`.
pub struct ObjectStoreBackend {
    inner: Arc<dyn ObjectStore>,
    /// The listing, page by page; `None` for plain HTTP, which cannot list.
    pages: Option<Arc<dyn PaginatedListStore>>,
    /// Key prefix inside the bucket (no leading or trailing `/`).
    prefix: String,
    /// The store's URL as shown to the user.
    url: String,
    /// The query of a plain-HTTP store's URL, sent with every request and never shown (it may
    /// hold a token).
    query: Option<String>,
    /// False for Azure Blob, which refuses suffix ranges (`bytes=-N`): a suffix is then read as
    /// the object's size and a plain range.
    suffix_ranges: bool,
    timeout: Duration,
    opened: SystemTime,
}

impl ObjectStoreBackend {
    /// The store at a remote `location` (shown to the user as `url`). No request is made yet.
    pub fn open(location: &Location, url: &str, opts: &RemoteOptions) -> Result<Self, StoreError> {
        let client = super::client::build(location, url, opts)?;
        Ok(ObjectStoreBackend {
            inner: client.store,
            pages: client.pages,
            prefix: client.prefix.to_string(),
            url: url.to_string(),
            query: match location {
                Location::Http { url } => url.query().map(str::to_string),
                _ => None,
            },
            suffix_ranges: !matches!(location, Location::Azure { .. }),
            timeout: opts.timeout,
            opened: SystemTime::now(),
        })
    }

    /// The object path of `key` (checked first: no request leaves the store's prefix).
    fn path(&self, key: &str) -> Result<Path, StoreError> {
        check_key(key)?;
        let full = match (self.prefix.is_empty(), key.is_empty()) {
            (true, _) => key.to_string(),
            (false, true) => self.prefix.clone(),
            (false, false) => format!("{}/{key}", self.prefix),
        };
        Path::parse(&full).map_err(|e| StoreError::Invalid(format!("{}: {e}", self.what(key))))
    }

    /// The URL of `key`, for messages.
    fn what(&self, key: &str) -> String {
        super::display_key_url(&self.url, key)
    }

    /// Lists below `prefix` (its children only with `delimited`), handing each page to `each`;
    /// each page within the store's time bound, at most [`MAX_PAGES`] pages and
    /// [`MAX_LISTED`] entries (a server giving new page tokens without end fails the listing).
    fn list_pages(
        &self,
        prefix: &str,
        delimited: bool,
        mut each: impl FnMut(ListResult),
    ) -> Result<(), StoreError> {
        let Some(pages) = &self.pages else {
            return Err(StoreError::CannotList(self.what(prefix)));
        };
        let path = self.path(prefix)?;
        // Below `path/` (a paginated listing adds no delimiter of its own).
        let below = (!path.as_ref().is_empty()).then(|| format!("{path}/"));
        let mut token: Option<String> = None;
        let (mut pages_read, mut listed) = (0usize, 0usize);
        loop {
            if pages_read == MAX_PAGES {
                return Err(StoreError::TooMany {
                    what: self.what(prefix),
                    why: format!("the listing does not end (more than {MAX_PAGES} pages)"),
                });
            }
            pages_read += 1;
            let (pages, below) = (pages.clone(), below.clone());
            let options = PaginatedListOptions {
                delimiter: delimited.then(|| DELIMITER.into()),
                page_token: token.clone(),
                ..PaginatedListOptions::default()
            };
            let page = self.run(prefix, self.deadline(), async move {
                pages.list_paginated(below.as_deref(), options).await
            })?;
            let Some(page) = page else {
                return Ok(());
            };
            listed += page.result.objects.len() + page.result.common_prefixes.len();
            if listed > MAX_LISTED {
                return Err(StoreError::TooMany {
                    what: self.what(prefix),
                    why: format!("more than {MAX_LISTED} entries to list"),
                });
            }
            each(page.result);
            match page.page_token.filter(|t| !t.is_empty()) {
                Some(next) if token.as_ref() == Some(&next) => {
                    return Err(StoreError::Remote {
                        what: self.what(prefix),
                        cause: "the listing does not advance (the server gave the same page \
                                token twice)"
                            .into(),
                    })
                }
                Some(next) => token = Some(next),
                None => return Ok(()),
            }
        }
    }

    /// When an operation started now must be over.
    fn deadline(&self) -> Instant {
        Instant::now() + self.timeout
    }

    /// Runs `fut` on the shared runtime until `deadline`; an absent key is `None`.
    fn run<T: Send + 'static>(
        &self,
        key: &str,
        deadline: Instant,
        fut: impl Future<Output = object_store::Result<T>> + Send + 'static,
    ) -> Result<Option<T>, StoreError> {
        let rt = runtime().map_err(|e| StoreError::Remote {
            what: self.what(key),
            cause: e.to_string(),
        })?;
        let (answer, answered) = mpsc::sync_channel(1);
        let task = rt.spawn(async move {
            let _ = answer.send(fut.await);
        });
        match answered.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Ok(v)) => Ok(Some(v)),
            Ok(Err(object_store::Error::NotFound { .. })) => Ok(None),
            Ok(Err(e)) => Err(self.error(key, e)),
            Err(RecvTimeoutError::Timeout) => {
                task.abort();
                Err(StoreError::TimedOut {
                    what: self.what(key),
                    after: self.timeout,
                })
            }
            Err(RecvTimeoutError::Disconnected) => Err(StoreError::Remote {
                what: self.what(key),
                cause: "the request was cancelled (the network runtime is shutting down)".into(),
            }),
        }
    }

    fn error(&self, key: &str, e: object_store::Error) -> StoreError {
        let what = self.what(key);
        let mut cause = full_cause(&e);
        if let Some(query) = &self.query {
            // The client's errors name the URL requested, query and all.
            cause = cause.replace(query.as_str(), "…");
        }
        if cause.contains("169.254.169.254") {
            cause.push_str(
                " (no AWS credentials in the environment or ~/.aws, so the EC2 instance \
                 metadata service was asked; use --anonymous for public buckets)",
            );
        }
        // A listing's 403 comes wrapped in a generic error.
        let refused = ["status code: 401", "status code: 403"]
            .iter()
            .any(|status| cause.contains(status));
        match e {
            object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. } => StoreError::Denied { what, cause },
            object_store::Error::Generic { .. } if refused => StoreError::Denied { what, cause },
            // Only reads of one version (`If-Match`) have preconditions.
            object_store::Error::Precondition { .. } => StoreError::Changed { what },
            _ => StoreError::Remote { what, cause },
        }
    }

    /// Size, modification time and ETag of `key`, within `deadline`.
    fn head_until(&self, key: &str, deadline: Instant) -> Result<Option<ObjectMeta>, StoreError> {
        let (path, inner) = (self.path(key)?, self.inner.clone());
        self.run(key, deadline, async move {
            Ok(version(&inner.head(&path).await?))
        })
    }

    /// `len` bytes of `key` from `start`, within `deadline`, written into `into`'s memory (its
    /// contents are dropped), and the object's version as the response gives it. A range
    /// starting at or past the end is refused by servers (416): when the read fails, the
    /// object's size tells whether that was the cause (then it is an empty read, as for local
    /// stores). A server that ignores ranges (see [`whole_for_range`]) is read whole where the
    /// object ends within the range. With `tag`, only the version with that ETag is read
    /// (`If-Match`): another one is [`StoreError::Changed`].
    fn range_until(
        &self,
        key: &str,
        (start, len): (u64, u64),
        tag: Option<&str>,
        deadline: Instant,
        into: Vec<u8>,
    ) -> Result<Option<(Vec<u8>, ObjectMeta)>, StoreError> {
        let path = self.path(key)?;
        if len == 0 {
            return Ok(self.head_until(key, deadline)?.map(|m| (Vec::new(), m)));
        }
        let end = start.saturating_add(len);
        let if_match = tag.map(str::to_string);
        let options = GetOptions {
            range: Some(GetRange::Bounded(start..end)),
            if_match: if_match.clone(),
            ..GetOptions::default()
        };
        let inner = self.inner.clone();
        let got = self.run(key, deadline, async move {
            let (got, skip) = match inner.get_opts(&path, options).await {
                Err(e) if range_ignored(&e) => {
                    let whole = whole_for_range(&*inner, &path, end, if_match).await?;
                    (whole, start)
                }
                got => (got?, 0),
            };
            let meta = version(&got.meta);
            let mut bytes = body(got, into, buffers()).await?;
            bytes.drain(..usize::try_from(skip).map_or(bytes.len(), |s| s.min(bytes.len())));
            Ok((bytes, meta))
        });
        match got {
            // A range from the object's end or past it, which some servers refuse: empty. A
            // GET that failed otherwise is that failure, even when a HEAD finds nothing there
            // (some servers answer HEAD with 404 or 405 for what GET serves): never "absent",
            // which would read as the fill value. (A GET finding nothing is `Ok(None)`.)
            Err(e) if !matches!(e, StoreError::TimedOut { .. } | StoreError::Changed { .. }) => {
                match self.head_until(key, deadline)? {
                    Some(meta) if meta.size <= start => Ok(Some((Vec::new(), meta))),
                    _ => Err(e),
                }
            }
            other => other,
        }
    }

    /// The last `len` bytes of the object `key` whose size and version `meta` gives, read as a
    /// plain range of that version (an object replaced in between has its suffix elsewhere).
    fn suffix_of(
        &self,
        key: &str,
        meta: ObjectMeta,
        len: u64,
        deadline: Instant,
    ) -> Result<Option<(Vec<u8>, ObjectMeta)>, StoreError> {
        let start = meta.size.saturating_sub(len);
        let range = (start, meta.size - start);
        match self.range_until(key, range, None, deadline, Vec::new())? {
            Some((_, seen)) if !seen.same_version(&meta) => Err(StoreError::Remote {
                what: self.what(key),
                cause: "replaced between the reads of its size and of its end".into(),
            }),
            got => Ok(got.map(|(b, _)| (b, meta))),
        }
    }
}

/// True when `e` says that the server answered a range request with the whole object (200), as
/// servers without range support do (`python -m http.server`, xpublish): the HTTP client's
/// NotSupported, or the cloud clients' "non-partial response" (an error type of object_store's
/// own, known by its text).
fn range_ignored(e: &object_store::Error) -> bool {
    match e {
        object_store::Error::NotSupported { .. } => true,
        object_store::Error::Generic { source, .. } => {
            source.to_string().contains("non-partial response")
        }
        _ => false,
    }
}

/// True when `e` says that the server refused the byte range asked for as such (416 Range Not
/// Satisfiable, 501 Not Implemented; 500 Internal Server Error, which s3s-fs answers to a suffix
/// longer than the object), or answered it with a `Content-Range` the client could not take: a
/// plain range may still be read.
fn range_refused(e: &object_store::Error) -> bool {
    let cause = full_cause(e);
    [
        "status code: 416",
        "status code: 500",
        "status code: 501",
        "Content-Range",
        "CONTENT_RANGE",
    ]
    .iter()
    .any(|sign| cause.contains(sign))
}

/// A server that ignores ranges answered a range ending at `end` with the whole object.
#[derive(Debug, thiserror::Error)]
#[error(
    "the server ignores byte ranges (it answers them with the whole object): the object, \
     {size} bytes, runs past the range asked for (to byte {end}), so it is not read whole for it"
)]
struct RangesIgnored {
    size: u64,
    end: u64,
}

/// The whole object at `path` for a range ending at `end` from a server that ignores ranges:
/// one plain GET (of the version `if_match` names, if any), taken only when the object ends
/// within the range (no more is moved than from the object's start), refused from its headers
/// otherwise. Its body is then checked against the length its headers announce, as every body
/// is, before the range is cut out of it.
async fn whole_for_range(
    inner: &dyn ObjectStore,
    path: &Path,
    end: u64,
    if_match: Option<String>,
) -> object_store::Result<GetResult> {
    let options = GetOptions {
        if_match,
        ..GetOptions::default()
    };
    let got = inner.get_opts(path, options).await?;
    if got.meta.size > end {
        return Err(object_store::Error::Generic {
            store: "HTTP",
            source: Box::new(RangesIgnored {
                size: got.meta.size,
                end,
            }),
        });
    }
    Ok(got)
}

/// A response whose body ends short of the length its headers announced.
#[derive(Debug, thiserror::Error)]
#[error("the response's body ends after {0} of the {1} bytes its headers announced")]
struct ShorterThanAnnounced(usize, usize);

/// A response whose body runs past the length its headers announced.
#[derive(Debug, thiserror::Error)]
#[error("the response's body is longer than the {0} bytes its headers announced")]
struct LongerThanAnnounced(usize);

/// The body of a response, gathered into `into`'s memory (emptied first): a spare buffer
/// given by the caller is reused instead of fresh pages, or, too small, exchanged for one of
/// `spares` with room (at most twice the body). A body longer than announced is refused as
/// soon as it is.
async fn body(
    got: GetResult,
    mut into: Vec<u8>,
    spares: &Buffers,
) -> object_store::Result<Vec<u8>> {
    let len = (got.range.end - got.range.start) as usize;
    if into.capacity() == 0 {
        // No spare given (a metadata or shard read, not given back): the pool is left alone.
        into = Vec::with_capacity(len);
    } else if into.capacity() < len {
        // Growing would copy the old capacity's bytes for nothing: the spare is kept for a
        // smaller body, and one with room taken instead.
        let room = spares.take_about(len);
        spares.give(std::mem::replace(&mut into, room));
    }
    into.clear();
    let mut frames = got.into_stream();
    while let Some(frame) = frames.next().await {
        let frame = frame?;
        if into.len() + frame.len() > len {
            return Err(object_store::Error::Generic {
                store: "HTTP",
                source: Box::new(LongerThanAnnounced(len)),
            });
        }
        into.extend_from_slice(&frame);
    }
    if into.len() != len {
        return Err(object_store::Error::Generic {
            store: "HTTP",
            source: Box::new(ShorterThanAnnounced(into.len(), len)),
        });
    }
    Ok(into)
}

/// The error and its sources, one line.
pub(super) fn full_cause(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// The object's modification time; `None` when the server gave none (object_store then
/// says 1970-01-01), which must not pass for a time before any other.
fn mtime(meta: &object_store::ObjectMeta) -> Option<SystemTime> {
    (meta.last_modified.timestamp_nanos_opt() != Some(0))
        .then(|| SystemTime::from(meta.last_modified))
}

/// The size, modification time and ETag `object_store` read off a response.
fn version(meta: &object_store::ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        size: meta.size,
        mtime: mtime(meta),
        tag: meta.e_tag.clone(),
    }
}

/// The children one page of the listing of `dir` names. A "folder marker" (an empty object
/// named `dir/`, which S3 and GCS consoles and some tools write) is the directory itself, not a
/// child of it.
fn entries(page: ListResult, dir: &Path) -> impl Iterator<Item = Entry> + '_ {
    let prefixes = page.common_prefixes.into_iter().filter_map(|p| {
        Some(Entry {
            name: p.filename()?.to_string(),
            kind: EntryKind::Prefix,
            mtime: None,
            tag: None,
        })
    });
    let objects = page
        .objects
        .into_iter()
        .filter(move |m| m.location != *dir)
        .filter_map(object_entry);
    prefixes.chain(objects)
}

/// The entry a listing shows for object `m`.
fn object_entry(m: object_store::ObjectMeta) -> Option<Entry> {
    Some(Entry {
        name: m.location.filename()?.to_string(),
        kind: EntryKind::Object(m.size),
        mtime: mtime(&m),
        tag: m.e_tag,
    })
}

/// The store key of object `location` below the store's root path `root`.
fn key_below(root: &Path, location: &Path) -> Option<String> {
    let key = match root.as_ref() {
        "" => location.as_ref(),
        r => location.as_ref().strip_prefix(r)?.strip_prefix('/')?,
    };
    (!key.is_empty()).then(|| key.to_string())
}

/// Requests in flight at once while a remote hierarchy is walked.
const WALK_PARALLELISM: usize = 32;

impl Store for ObjectStoreBackend {
    /// The size the response's headers announce is checked before its body is read.
    fn get_bounded(&self, key: &str, max: u64) -> Result<Option<Object>, StoreError> {
        let (path, inner) = (self.path(key)?, self.inner.clone());
        let got = self.run(key, self.deadline(), async move {
            let got = inner.get_opts(&path, GetOptions::default()).await?;
            if got.meta.size > max {
                return Ok(Err(got.meta.size));
            }
            let mtime = mtime(&got.meta);
            let bytes = body(got, Vec::new(), buffers()).await?;
            Ok(Ok(Object { bytes, mtime }))
        })?;
        match got {
            Some(Err(size)) => too_large(&self.what(key), size, max).map(|()| None),
            Some(Ok(object)) => Ok(Some(object)),
            None => Ok(None),
        }
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.get_range_versioned(key, start, len)?.map(|(b, _)| b))
    }

    /// One request: the version is the response's own.
    fn get_range_versioned(
        &self,
        key: &str,
        start: u64,
        len: u64,
    ) -> Result<Option<(Vec<u8>, ObjectMeta)>, StoreError> {
        self.range_until(key, (start, len), None, self.deadline(), Vec::new())
    }

    /// One request (with `If-Match: tag` where a tag is given), within the store's time bound,
    /// into `buf`'s memory.
    fn get_range_into(
        &self,
        key: &str,
        start: u64,
        len: u64,
        tag: Option<&str>,
        buf: &mut Vec<u8>,
    ) -> Result<bool, StoreError> {
        let spare = std::mem::take(buf);
        let got = self.range_until(key, (start, len), tag, self.deadline(), spare)?;
        let present = got.is_some();
        *buf = got.map(|(b, _)| b).unwrap_or_default();
        Ok(present)
    }

    fn matches_tags(&self) -> bool {
        true
    }

    fn get_suffix(&self, key: &str, len: u64) -> Result<Option<(Vec<u8>, ObjectMeta)>, StoreError> {
        let path = self.path(key)?;
        let deadline = self.deadline();
        if !self.suffix_ranges {
            return match self.head_until(key, deadline)? {
                Some(meta) => self.suffix_of(key, meta, len, deadline),
                None => Ok(None),
            };
        }
        let options = GetOptions {
            range: Some(GetRange::Suffix(len)),
            ..GetOptions::default()
        };
        let inner = self.inner.clone();
        let got = self.run(key, deadline, async move {
            Ok(match inner.get_opts(&path, options).await {
                Err(e) if range_ignored(&e) || range_refused(&e) => Err(e),
                got => {
                    let got = got?;
                    let meta = version(&got.meta);
                    Ok((body(got, Vec::new(), buffers()).await?, meta))
                }
            })
        });
        match got {
            Ok(Some(Ok(found))) => Ok(Some(found)),
            Ok(None) => Ok(None),
            // A server that ignores ranges (it answered with the whole object): the suffix is
            // read whole only when it is the whole object (see `whole_for_range`).
            Ok(Some(Err(ignored))) if range_ignored(&ignored) => {
                match self.head_until(key, deadline)? {
                    Some(meta) if len == 0 || meta.size <= len => {
                        self.suffix_of(key, meta, len, deadline)
                    }
                    _ => Err(self.error(key, ignored)),
                }
            }
            // A suffix the server refuses (an empty one, one longer than the value, or any: a
            // server may take plain ranges only): the object's size, then a plain range. A GET
            // that failed when a HEAD finds nothing there is that failure (as in
            // `range_until`): never "absent". Any other failure (denied, an unavailable server
            // after the retries) is the read's.
            Ok(Some(Err(refused))) => {
                // A 500 stands for a refused range only where the suffix is longer than the
                // object (as s3s-fs answers it); otherwise it is the server's failure.
                let failed = full_cause(&refused).contains("status code: 500");
                let e = self.error(key, refused);
                match self.head_until(key, deadline)? {
                    Some(meta) if failed && meta.size > len => Err(e),
                    Some(meta) => {
                        log::debug!("{e}: read as its size and a plain range");
                        self.suffix_of(key, meta, len, deadline)
                    }
                    None => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        self.head_until(key, self.deadline())
    }

    /// Page by page, each within the store's time bound: a prefix with many children takes as
    /// many pages as it needs, while a page that does not come in time fails the listing.
    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        let path = self.path(prefix)?;
        let mut out = Vec::new();
        self.list_pages(prefix, true, |page| out.extend(entries(page, &path)))?;
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out.dedup_by(|a, b| a.name == b.name);
        Ok(out)
    }

    /// One listing without a delimiter: every object below `prefix`, page by page.
    fn list_below(&self, prefix: &str) -> Result<Vec<(String, Entry)>, StoreError> {
        let root = self.path("")?;
        let mut out = Vec::new();
        self.list_pages(prefix, false, |page| {
            for m in page.objects {
                if let Some(key) = key_below(&root, &m.location) {
                    out.extend(object_entry(m).map(|entry| (key, entry)));
                }
            }
        })?;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|a, b| a.0 == b.0);
        Ok(out)
    }

    fn parallelism(&self) -> usize {
        WALK_PARALLELISM
    }

    fn latency(&self) -> Latency {
        Latency::Network
    }

    fn mtime(&self) -> SystemTime {
        self.opened
    }

    fn describe(&self) -> String {
        self.url.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::location::parse;

    fn open(url: &str, opts: &RemoteOptions) -> Result<ObjectStoreBackend, StoreError> {
        ObjectStoreBackend::open(&parse(url).unwrap(), url, opts)
    }

    #[test]
    fn builds_every_backend_without_a_request() {
        let anonymous = RemoteOptions {
            anonymous: true,
            ..RemoteOptions::default()
        };
        for url in [
            "s3://bucket/a/b.zarr",
            "gs://bucket/a/b.zarr",
            "abfs://container@account.dfs.core.windows.net/a/b.zarr",
            "https://example.org/data/b.zarr",
            "https://s3.eu-west-1.amazonaws.com/bucket/b.zarr#mode=zarr,s3",
            "https://s3.cn-north-1.amazonaws.com.cn/bucket/b.zarr#mode=zarr,s3",
            "https://ap-1.s3-accesspoint.eu-west-2.amazonaws.com/b.zarr#mode=zarr,s3",
        ] {
            let store = open(url, &anonymous).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(store.describe(), url);
            assert_eq!(store.what("c/0"), format!("{url}/c/0"));
        }
        let s3 = open("s3://bucket/a/b.zarr", &anonymous).unwrap();
        assert_eq!(s3.path("c/0.0").unwrap().as_ref(), "a/b.zarr/c/0.0");
        assert_eq!(s3.path("").unwrap().as_ref(), "a/b.zarr");
    }

    #[test]
    fn refuses_keys_and_options_that_do_not_fit() {
        let http = open("http://127.0.0.1:9/x.zarr", &RemoteOptions::default()).unwrap();
        // Checked before any request (nothing listens on port 9).
        assert!(matches!(http.get("../y"), Err(StoreError::BadKey(_))));
        assert!(matches!(http.list_dir(""), Err(StoreError::CannotList(_))));
        let endpoint = RemoteOptions {
            endpoint: Some("http://127.0.0.1:9000".into()),
            ..RemoteOptions::default()
        };
        let err = open("https://example.org/x", &endpoint).err().unwrap();
        assert!(err.to_string().contains("--endpoint"), "{err}");
        // An emulator's endpoint for gs:// (fake-gcs-server), plain http allowed.
        assert!(open("gs://bucket/x", &endpoint).is_ok());
    }

    #[test]
    fn a_body_shorter_or_longer_than_announced_is_refused() {
        let store = object_store::memory::InMemory::new();
        let rt = runtime().unwrap();
        let path = Path::from("k");
        rt.block_on(store.put(&path, vec![7u8; 100].into()))
            .unwrap();
        let read = |announced: u64| {
            rt.block_on(async {
                let mut got = store.get(&path).await.unwrap();
                got.range = 0..announced;
                body(got, Vec::new(), &Buffers::new(0)).await
            })
        };
        assert_eq!(read(100).unwrap(), vec![7u8; 100]);
        let short = read(105).unwrap_err().to_string();
        assert!(short.contains("ends after 100 of the 105"), "{short}");
        assert!(read(95).is_err(), "longer than announced");
    }

    #[test]
    fn a_server_giving_no_modification_time_gives_none() {
        let meta = |secs| object_store::ObjectMeta {
            location: Path::from("k"),
            last_modified: chrono::DateTime::from_timestamp(secs, 0).unwrap(),
            size: 1,
            e_tag: None,
            version: None,
        };
        assert_eq!(mtime(&meta(0)), None, "object_store's stand-in for none");
        assert!(mtime(&meta(1_700_000_000)).is_some());
    }

    #[test]
    fn a_spare_too_small_for_a_body_is_kept_and_one_with_room_taken() {
        let store = object_store::memory::InMemory::new();
        let bytes: Vec<u8> = (0..100u8).collect();
        let rt = runtime().unwrap();
        let path = Path::from("k");
        rt.block_on(store.put(&path, bytes.clone().into())).unwrap();
        let read = |into: Vec<u8>, spares: &Buffers| {
            rt.block_on(async { body(store.get(&path).await.unwrap(), into, spares).await })
                .unwrap()
        };
        let spares = Buffers::new(1 << 20);
        let too_big = Vec::with_capacity(1000);
        let too_big_at = too_big.as_ptr();
        spares.give(too_big);
        let got = read(Vec::with_capacity(10), &spares);
        assert_eq!(got, bytes);
        assert_ne!(
            got.as_ptr(),
            too_big_at,
            "a spare over twice the body is not taken"
        );
        assert_eq!(spares.held(), 1000 + 10, "the small spare is kept");
        let roomy = Vec::with_capacity(150);
        let roomy_at = roomy.as_ptr();
        spares.give(roomy);
        let got = read(Vec::with_capacity(10), &spares);
        assert_eq!(
            (got.as_ptr(), &got),
            (roomy_at, &bytes),
            "the spare with room"
        );
        assert_eq!(spares.held(), 1000 + 10 + 10);
        let got = read(Vec::new(), &spares);
        assert_eq!(got, bytes);
        assert_eq!(
            spares.held(),
            1000 + 10 + 10,
            "no spare given: the pool left alone"
        );
    }
}
