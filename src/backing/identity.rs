//! What a backing file is valid for.

use crate::store::{join_key, EntryKind, Store, StoreError};
use std::collections::HashSet;
use std::time::UNIX_EPOCH;

/// The format of the files in a cache directory, part of every key: files another version
/// wrote are never read (they age out of the LRU), and the arrays are decoded again.
const FORMAT: &[u8] = b"zarrfs backing files 2\0";

/// The identity of an array's decoded bytes: the store's location and version token (an
/// Icechunk snapshot, a reference file's version), the array's path, its metadata document,
/// and the name, size, modification time and version tag (the ETag remote
/// listings give: it changes with the content, even within the second the time is given in) of
/// every object under the array's prefix (its chunks or shards). Computing it costs one listing of the array's prefix (one
/// request per directory level), made when the array is first opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    key: String,
}

impl Identity {
    /// The identity of the array at `path` in `store` (opened from `location`), whose metadata
    /// document serializes to `metadata`, and the keys of the objects the listing showed.
    pub fn of(
        store: &dyn Store,
        location: &str,
        path: &str,
        metadata: &[u8],
    ) -> Result<(Self, HashSet<String>), StoreError> {
        let mut text = FORMAT.to_vec();
        let version = store.version().unwrap_or_default();
        for part in [
            location.as_bytes(),
            version.as_bytes(),
            path.as_bytes(),
            metadata,
        ] {
            text.extend_from_slice(&(part.len() as u64).to_le_bytes());
            text.extend_from_slice(part);
        }
        let listed = list_objects(store, path, &mut text)?;
        let id = Identity {
            key: format!("{:016x}{:016x}", fnv1a(&text, 0), fnv1a(&text, 1)),
        };
        Ok((id, listed))
    }

    /// The identity of another file made from the same array (`kind`, e.g. `txt` for the
    /// text of a variable-length array): its own key, `KEY.kind`.
    pub fn of_kind(&self, kind: &str) -> Identity {
        Identity {
            key: format!("{}.{kind}", self.key),
        }
    }

    /// The file-name stem of the array's backing files.
    pub fn key(&self) -> &str {
        &self.key
    }
}

/// Appends the name, size, mtime and tag of every object below `prefix`, recursively, in
/// listing order; returns their keys.
fn list_objects(
    store: &dyn Store,
    prefix: &str,
    out: &mut Vec<u8>,
) -> Result<HashSet<String>, StoreError> {
    let mut listed = HashSet::new();
    let mut pending = vec![prefix.to_string()];
    while let Some(dir) = pending.pop() {
        let mut entries = store.list_dir(&dir)?;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for e in entries {
            let key = join_key(&dir, &e.name);
            match e.kind {
                EntryKind::Prefix => pending.push(key),
                EntryKind::Object(size) => {
                    let nanos = e
                        .mtime
                        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                        .map_or(0, |d| d.as_nanos());
                    out.extend_from_slice(key.as_bytes());
                    out.push(0);
                    out.extend_from_slice(&size.to_le_bytes());
                    out.extend_from_slice(&nanos.to_le_bytes());
                    out.extend_from_slice(e.tag.as_deref().unwrap_or("").as_bytes());
                    out.push(0);
                    listed.insert(key);
                }
            }
        }
    }
    Ok(listed)
}

/// 64-bit FNV-1a of `bytes`, seeded by `seed` (two seeds give a 128-bit key).
fn fnv1a(bytes: &[u8], seed: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Entry, Object, ObjectMeta};
    use std::time::{Duration, SystemTime};

    /// A store listing one chunk `0` of 8 bytes, modified at second 1, with version `tag`.
    struct OneChunk(Option<&'static str>);

    impl Store for OneChunk {
        fn get_bounded(&self, _: &str, _: u64) -> Result<Option<Object>, StoreError> {
            Ok(None)
        }
        fn get_range(&self, _: &str, _: u64, _: u64) -> Result<Option<Vec<u8>>, StoreError> {
            Ok(None)
        }
        fn head(&self, _: &str) -> Result<Option<ObjectMeta>, StoreError> {
            Ok(None)
        }
        fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
            Ok(match prefix {
                "a" => vec![Entry {
                    name: "0".into(),
                    kind: EntryKind::Object(8),
                    mtime: Some(UNIX_EPOCH + Duration::from_secs(1)),
                    tag: self.0.map(String::from),
                }],
                _ => Vec::new(),
            })
        }
        fn mtime(&self) -> SystemTime {
            UNIX_EPOCH
        }
        fn describe(&self) -> String {
            "one chunk".into()
        }
    }

    #[test]
    fn a_new_version_tag_alone_changes_the_identity() {
        let key = |tag| {
            Identity::of(&OneChunk(tag), "s3://b/s.zarr", "a", b"{}")
                .unwrap()
                .0
                .key()
                .to_string()
        };
        assert_eq!(key(Some("\"e1\"")), key(Some("\"e1\"")));
        assert_ne!(key(Some("\"e1\"")), key(Some("\"e2\"")));
        assert_ne!(key(Some("\"e1\"")), key(None));
    }
}
