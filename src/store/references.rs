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
}

impl ReferenceStore {
    /// Keys of `catalog`, kept in `home` at `location` (a path or URL), pointing at targets
    /// beside them or where `remote` allows.
    pub fn new(
        catalog: Box<dyn Catalog>,
        home: Arc<dyn Store>,
        location: &str,
        remote: &RemoteOptions,
    ) -> Result<Self, StoreError> {
        Ok(ReferenceStore {
            catalog,
            home,
            targets: Targets::new(location, remote)?,
            describe: location.to_string(),
            about: Vec::new(),
            version: None,
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

    /// `len` bytes from `start` of what `reference` names (fewer at its end).
    fn read(&self, reference: &Reference, start: u64, len: u64) -> Result<Vec<u8>, StoreError> {
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
        }
    }

    /// The size of what `reference` names.
    fn size(&self, reference: &Reference) -> Result<u64, StoreError> {
        Ok(match reference {
            Reference::Target {
                url, range: None, ..
            } => self.targets.head(url)?.size,
            other => listed_size(other),
        })
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
            other => self.read(other, 0, max.saturating_add(1))?,
        };
        super::too_large(key, bytes.len() as u64, max)?;
        Ok(Some(Object { bytes, mtime: None }))
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError> {
        match self.catalog.lookup(key)? {
            Some(reference) => self.read(&reference, start, len).map(Some),
            None => Ok(None),
        }
    }

    fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        match self.catalog.lookup(key)? {
            Some(reference) => Ok(Some(ObjectMeta {
                size: self.size(&reference)?,
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
        self.home.latency()
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
    }
    super::digest(&text)
}

/// The size a listing shows for `reference` (0 for a whole file, not asked for here).
pub fn listed_size(reference: &Reference) -> u64 {
    match reference {
        Reference::Inline(bytes) => bytes.len() as u64,
        Reference::Target { range, .. } => range.map_or(0, |(_, length)| length),
        Reference::Stored { length, .. } => *length,
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
}
