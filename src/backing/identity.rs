//! What a backing file is valid for.

use crate::store::{describe_objects, digest, Store, StoreError};
use std::collections::HashSet;

/// The format of the files in a cache directory, part of every key: files another version
/// wrote are never read (they age out of the LRU), and the arrays are decoded again.
const FORMAT: &[u8] = b"zarrfs backing files 3\0";

/// The identity of an array's decoded bytes: the store's location and version token (an
/// Icechunk snapshot, a reference file's version), the array's path, its metadata document,
/// and the name, size, modification time and version tag (the ETag remote listings give: it
/// changes with the content, even within the second the time is given in) of every object
/// under the prefix its chunk keys start with (its chunks or shards: `data/root/PATH/` in the
/// v3 drafts, the array's own directory otherwise). Computing it costs one listing of that
/// prefix (one request per directory under it), made when the array is first opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    key: String,
}

impl Identity {
    /// The identity of the array at `path` in `store` (opened from `location`), whose metadata
    /// document serializes to `metadata` and whose chunk keys start with `chunks` (without
    /// its final `/`), and the keys of the objects the listing showed.
    pub fn of(
        store: &dyn Store,
        location: &str,
        (path, chunks): (&str, &str),
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
        let listed = describe_objects(store, chunks, &mut text)?;
        let id = Identity { key: digest(&text) };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Entry, EntryKind, Object, ObjectMeta};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
            Identity::of(&OneChunk(tag), "s3://b/s.zarr", ("a", "a"), b"{}")
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
