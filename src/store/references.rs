//! A store whose keys are references to bytes elsewhere: kerchunk reference sets and Icechunk
//! repositories. A [`Catalog`] says what each key refers to; [`ReferenceStore`] reads it, inline
//! or through [`Targets`].

use super::targets::Targets;
use super::{
    join_key, list_sized, Entry, Latency, Object, ObjectMeta, RemoteOptions, Store, StoreError,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

/// What one key of a reference store holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reference {
    /// The bytes themselves.
    Inline(Arc<[u8]>),
    /// A whole file (`range` `None`) or `range.1` bytes of it from `range.0`, by URL; with
    /// `recorded`, only while the file is as it was when it was referenced.
    Target {
        url: Arc<str>,
        range: Option<(u64, u64)>,
        recorded: Option<Recorded>,
    },
    /// `length` bytes from `offset` of `key` in the store that holds the references.
    Stored {
        key: String,
        offset: u64,
        length: u64,
    },
    /// A reference that could not be read (why): reading its key fails, the others read on.
    Malformed(Arc<str>),
}

/// What a target file was when it was referenced (Icechunk's virtual chunk checksums).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// Its ETag.
    ETag(String),
    /// Modified no later than this (seconds since the epoch).
    ModifiedBy(u64),
}

/// The references of a store, by key.
pub trait Catalog: Send + Sync {
    /// What `key` refers to, or `None` when the key is absent (a missing chunk).
    fn lookup(&self, key: &str) -> Result<Option<Reference>, StoreError>;

    /// The direct children of `prefix`, as [`Store::list_dir`] lists them.
    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError>;
}

/// Keys resolved through a [`Catalog`], bytes read inline, from the store holding the
/// references, or from the targets.
pub struct ReferenceStore {
    catalog: Box<dyn Catalog>,
    /// The store the references are in.
    home: Arc<dyn Store>,
    targets: Targets,
    describe: String,
    /// What [`Store::about`] says.
    about: Vec<(String, String)>,
    /// What [`Store::version`] says.
    version: Option<String>,
    /// What [`Store::latency`] says: where the references and their targets are.
    latency: Latency,
}

impl ReferenceStore {
    /// Keys of `catalog`, kept in `home` at `location` (a path or URL), pointing at targets
    /// beside them or where `remote` allows. `home_dir`, when given, is the directory holding
    /// the references, already open (a local JSON file's): its targets are read beneath it.
    pub fn new(
        catalog: Box<dyn Catalog>,
        home: Arc<dyn Store>,
        home_dir: Option<Arc<dyn Store>>,
        location: &str,
        remote: &RemoteOptions,
    ) -> Result<Self, StoreError> {
        let targets = Targets::new(location, home_dir, remote)?;
        // Remote references, or targets that may be remote: a chunk read is a network round
        // trip (the read-ahead, the time bound of requests and the request counts go by it).
        let latency = match home.latency() == Latency::Network || targets.any_remote() {
            true => Latency::Network,
            false => Latency::Local,
        };
        Ok(ReferenceStore {
            catalog,
            home,
            targets,
            describe: location.to_string(),
            about: Vec::new(),
            version: None,
            latency,
        })
    }

    /// The store, saying `about` of the version it shows.
    pub fn with_about(mut self, about: Vec<(String, String)>) -> Self {
        self.about = about;
        self
    }

    /// The store, its version named by `token` (see [`Store::version`]).
    pub fn with_version(mut self, token: String) -> Self {
        self.version = Some(token);
        self
    }

    /// `len` bytes from `start` of what `reference`, the reference of `key`, names (fewer at
    /// its end).
    fn read(
        &self,
        key: &str,
        reference: &Reference,
        start: u64,
        len: u64,
    ) -> Result<Vec<u8>, StoreError> {
        let within = |size: u64| (start.min(size), len.min(size.saturating_sub(start)));
        // Where a part of a recorded range starts in its object: past 2^64 is no place at all.
        let at = |offset: u64, s: u64| {
            offset.checked_add(s).ok_or_else(|| {
                StoreError::Invalid(format!(
                    "{}: a reference's offset {offset} is past any object's end",
                    self.describe
                ))
            })
        };
        match reference {
            Reference::Inline(bytes) => {
                let (s, n) = within(bytes.len() as u64);
                Ok(bytes[s as usize..(s + n) as usize].to_vec())
            }
            Reference::Target {
                url,
                range,
                recorded,
            } => {
                let recorded = recorded.as_ref();
                match range {
                    None => self.targets.read_part(url, start, len, recorded),
                    Some((offset, length)) => {
                        let (s, n) = within(*length);
                        self.targets.read(url, at(*offset, s)?, n, recorded)
                    }
                }
            }
            Reference::Stored {
                key,
                offset,
                length,
            } => {
                let (s, n) = within(*length);
                match self.home.get_range(key, at(*offset, s)?, n)? {
                    Some(b) if b.len() as u64 == n => Ok(b),
                    _ => Err(StoreError::Invalid(format!(
                        "{}/{key}: missing, or shorter than the {length} bytes from {offset} \
                         a manifest names",
                        self.home.describe()
                    ))),
                }
            }
            Reference::Malformed(why) => Err(self.malformed(key, why)),
        }
    }

    /// The size of what `reference`, the reference of `key`, names.
    fn size(&self, key: &str, reference: &Reference) -> Result<u64, StoreError> {
        Ok(match reference {
            Reference::Target {
                url, range: None, ..
            } => self.targets.head(url)?.size,
            Reference::Malformed(why) => return Err(self.malformed(key, why)),
            other => listed_size(other),
        })
    }

    /// Why `key`, whose reference is malformed (`why`), cannot be read.
    fn malformed(&self, key: &str, why: &str) -> StoreError {
        StoreError::Invalid(format!(
            "{}: key {key}: malformed reference: {why}",
            self.describe
        ))
    }
}

impl Store for ReferenceStore {
    fn get_bounded(&self, key: &str, max: u64) -> Result<Option<Object>, StoreError> {
        let Some(reference) = self.catalog.lookup(key)? else {
            return Ok(None);
        };
        let bytes = match &reference {
            Reference::Target {
                url,
                range: None,
                recorded: None,
            } => self.targets.read_whole(url, max)?,
            // One byte past `max` tells a value too large without reading all of it.
            other => self.read(key, other, 0, max.saturating_add(1))?,
        };
        super::too_large(key, bytes.len() as u64, max)?;
        Ok(Some(Object { bytes, mtime: None }))
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError> {
        match self.catalog.lookup(key)? {
            Some(reference) => self.read(key, &reference, start, len).map(Some),
            None => Ok(None),
        }
    }

    fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        match self.catalog.lookup(key)? {
            Some(reference) => Ok(Some(ObjectMeta {
                size: self.size(key, &reference)?,
                mtime: None,
                tag: None,
            })),
            None => Ok(None),
        }
    }

    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        self.catalog.list_dir(prefix)
    }

    fn version(&self) -> Option<String> {
        self.version.clone()
    }

    fn about(&self) -> Vec<(String, String)> {
        self.about.clone()
    }

    fn parallelism(&self) -> usize {
        self.home.parallelism().max(4)
    }

    fn latency(&self) -> Latency {
        self.latency
    }

    fn mtime(&self) -> SystemTime {
        self.home.mtime()
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }
}

/// [`list_sized`] of keys holding references: each listed with its size and tag.
pub fn list_references(
    source: &str,
    items: &BTreeMap<String, Reference>,
    prefix: &str,
) -> Vec<Entry> {
    let mut entries = list_sized(source, items, prefix, listed_size);
    for entry in &mut entries {
        if let Some(reference) = items.get(&join_key(prefix, &entry.name)) {
            entry.tag = Some(listed_tag(reference));
        }
    }
    entries
}

/// The version tag a listing shows for `reference`: a digest of where its bytes are (or of
/// the bytes themselves, inline), so a listing tells a key referring elsewhere from before.
pub fn listed_tag(reference: &Reference) -> String {
    let mut text = Vec::new();
    match reference {
        Reference::Inline(bytes) => {
            text.push(b'i');
            text.extend_from_slice(bytes);
        }
        Reference::Target { url, range, .. } => {
            text.push(b't');
            text.extend_from_slice(url.as_bytes());
            text.push(0);
            if let Some((offset, length)) = range {
                text.extend_from_slice(&offset.to_le_bytes());
                text.extend_from_slice(&length.to_le_bytes());
            }
        }
        Reference::Stored {
            key,
            offset,
            length,
        } => {
            text.push(b's');
            text.extend_from_slice(key.as_bytes());
            text.push(0);
            text.extend_from_slice(&offset.to_le_bytes());
            text.extend_from_slice(&length.to_le_bytes());
        }
        Reference::Malformed(why) => {
            text.push(b'm');
            text.extend_from_slice(why.as_bytes());
        }
    }
    super::digest(&text)
}

/// The size a listing shows for `reference` (0 for a whole file, not asked for here, and for a
/// malformed reference).
pub fn listed_size(reference: &Reference) -> u64 {
    match reference {
        Reference::Inline(bytes) => bytes.len() as u64,
        Reference::Target { range, .. } => range.map_or(0, |(_, length)| length),
        Reference::Stored { length, .. } => *length,
        Reference::Malformed(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::DirStore;
    use std::time::Duration;

    /// One key, `x`, referring to what it holds.
    struct One(Reference);

    impl Catalog for One {
        fn lookup(&self, key: &str) -> Result<Option<Reference>, StoreError> {
            Ok((key == "x").then(|| self.0.clone()))
        }

        fn list_dir(&self, _prefix: &str) -> Result<Vec<Entry>, StoreError> {
            Ok(Vec::new())
        }
    }

    #[test]
    fn a_virtual_chunk_is_served_only_while_its_file_is_as_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..100).collect();
        let file = dir.path().join("data.bin");
        std::fs::write(&file, &data).unwrap();
        let set_mtime = |secs| {
            let f = std::fs::File::options().write(true).open(&file).unwrap();
            f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
                .unwrap();
        };
        set_mtime(1_000_000);
        let store = |recorded| {
            let reference = Reference::Target {
                url: "data.bin".into(),
                range: Some((10, 20)),
                recorded: Some(recorded),
            };
            let home = Arc::new(DirStore::new(dir.path()).unwrap());
            let location = dir.path().join("refs.json");
            let remote = RemoteOptions::default();
            ReferenceStore::new(
                Box::new(One(reference)),
                home,
                None,
                location.to_str().unwrap(),
                &remote,
            )
            .unwrap()
        };
        let by_time = store(Recorded::ModifiedBy(1_000_000));
        assert_eq!(by_time.get("x").unwrap().unwrap().bytes, data[10..30]);
        assert_eq!(by_time.get_range("x", 5, 5).unwrap().unwrap(), data[15..20]);
        let large = by_time.get_bounded("x", 19);
        assert!(
            matches!(large, Err(StoreError::TooLarge { .. })),
            "{large:?}"
        );
        set_mtime(1_000_001);
        assert!(
            by_time.get("x").is_err(),
            "modified since it was referenced"
        );
        let by_tag = store(Recorded::ETag("abc".into()));
        assert!(by_tag.get("x").is_err(), "a local file has no ETag");
    }

    /// An HTTP server on 127.0.0.1 serving the bytes 0..8 at every path (byte ranges
    /// honoured), with the ETag `W/"v1"` at `/weak.bin` and `"v1"` elsewhere; its port. It
    /// serves until the test process ends.
    fn etag_server() -> u16 {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let mut request = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                let _ = request.read_line(&mut line);
                let tag = match line.split(' ').nth(1) {
                    Some("/weak.bin") => "W/\"v1\"",
                    _ => "\"v1\"",
                };
                let (mut start, mut end) = (0usize, 7usize);
                let mut header = String::new();
                while request.read_line(&mut header).is_ok_and(|n| n > 2) {
                    let lower = header.trim().to_ascii_lowercase();
                    if let Some((a, b)) = lower
                        .strip_prefix("range: bytes=")
                        .and_then(|r| r.split_once('-'))
                    {
                        start = a.parse().unwrap_or(0);
                        end = b.parse::<usize>().map_or(7, |b| b.min(7));
                    }
                    header.clear();
                }
                let body: Vec<u8> = (start as u8..=end as u8).collect();
                let head = format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {start}-{end}/8\r\n\
                     Content-Length: {}\r\nETag: {tag}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = conn.write_all(head.as_bytes());
                let _ = conn.write_all(&body);
            }
        });
        port
    }

    /// ETags are compared strongly, as `If-Match` compares them: a weak one on either side
    /// does not tell the bytes are the same.
    #[test]
    fn a_weak_etag_matches_no_recorded_one() {
        let port = etag_server();
        let store = |path: &str, recorded: &str| {
            let reference = Reference::Target {
                url: format!("http://127.0.0.1:{port}/{path}").into(),
                range: Some((2, 4)),
                recorded: Some(Recorded::ETag(recorded.into())),
            };
            let location = format!("http://127.0.0.1:{port}/refs.json");
            let home = Arc::new(crate::store::MemoryStore::new());
            let remote = RemoteOptions::default();
            ReferenceStore::new(Box::new(One(reference)), home, None, &location, &remote).unwrap()
        };
        for recorded in ["\"v1\"", "v1"] {
            let got = store("strong.bin", recorded).get("x").unwrap().unwrap();
            assert_eq!(got.bytes, [2, 3, 4, 5], "{recorded}");
        }
        for (path, recorded) in [
            ("weak.bin", "\"v1\""),
            ("weak.bin", "W/\"v1\""),
            ("strong.bin", "W/\"v1\""),
        ] {
            let got = store(path, recorded).get("x");
            let err = got.as_ref().map_err(|e| e.to_string()).unwrap_err();
            assert!(err.contains("weak ETag"), "{path} {recorded}: {got:?}");
        }
    }
}
