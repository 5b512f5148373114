//! Consolidated metadata: Zarr v2 `.zmetadata` and v3 `consolidated_metadata` in the root
//! `zarr.json`. When present, the hierarchy is read from it in one request instead of one per
//! node: [`Consolidated`] overlays the consolidated documents on the store for the walk.

use super::{MetaError, StoreRef};
use crate::store::{
    accept_key, list_sized, too_large, Entry, Object, ObjectMeta, Store, StoreError,
};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::time::SystemTime;

/// Metadata object names answered only from the consolidated documents.
const METADATA_NAMES: [&str; 4] = [".zarray", ".zgroup", ".zattrs", "zarr.json"];

/// The store as the consolidated metadata describes it.
pub struct Consolidated<'a> {
    inner: StoreRef<'a>,
    /// Each document's compact text, kept for the mount's life.
    objects: BTreeMap<String, Box<[u8]>>,
}

/// The largest consolidated metadata read (`.zmetadata`, or the root `zarr.json` holding v3
/// `consolidated_metadata`): larger objects are refused unread, with [`MetaError::TooLarge`].
pub const MAX_CONSOLIDATED_BYTES: u64 = 64 << 20;

/// Where v3 consolidated metadata lives, for warnings.
const V3_SOURCE: &str = "zarr.json consolidated_metadata";

/// Reads the consolidated metadata of `store`, if it has any; `root` is its root `zarr.json`
/// as the caller read it (`None`: absent), not asked for again. Keys that would leave the store
/// (`../x/.zarray`, `/abs/.zgroup`, the empty path) are left out, one warning each.
pub fn open<'a>(
    store: StoreRef<'a>,
    root: Option<&[u8]>,
) -> Result<Option<Consolidated<'a>>, MetaError> {
    let mut objects = BTreeMap::new();
    if let Some(object) = store.get_bounded(".zmetadata", MAX_CONSOLIDATED_BYTES)? {
        let doc: WithMetadata =
            super::lenient_json::deserialize(&object.bytes, true).map_err(|e| MetaError::Json {
                key: ".zmetadata".into(),
                reason: e.to_string(),
            })?;
        let meta = doc
            .metadata
            .ok_or_else(|| MetaError::field("metadata", ".zmetadata has no such object"))?;
        for (key, value) in meta.0 {
            if accept_key(".zmetadata", &key) {
                objects.insert(key, value);
            }
        }
    } else if let Some(root) = root {
        let Ok(root) = super::lenient_json::deserialize::<V3Root>(root, true) else {
            return Ok(None);
        };
        let Some(WithMetadata {
            metadata: Some(meta),
        }) = root.consolidated
        else {
            return Ok(None);
        };
        for (path, value) in meta.0 {
            if accept_key(V3_SOURCE, &path) {
                objects.insert(format!("{path}/zarr.json"), value);
            }
        }
        objects.insert(
            "zarr.json".into(),
            serde_json::to_vec(&root.rest)
                .unwrap_or_default()
                .into_boxed_slice(),
        );
    } else {
        return Ok(None);
    }
    Ok(Some(Consolidated {
        inner: store,
        objects,
    }))
}

/// A JSON object's members in order, each value written back compactly as soon as it is read,
/// so that a document naming a million nodes never stands whole in memory as a tree.
struct Members(Vec<(String, Box<[u8]>)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Each;
        impl<'de> Visitor<'de> for Each {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut out = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Value>()? {
                    let text = serde_json::to_vec(&value).unwrap_or_default();
                    out.push((key, text.into_boxed_slice()));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(Each)
    }
}

/// `.zmetadata`, or the `consolidated_metadata` of a v3 root `zarr.json`: their `metadata`.
#[derive(Deserialize)]
struct WithMetadata {
    metadata: Option<Members>,
}

/// A v3 root `zarr.json`: its `consolidated_metadata`, and the rest of the document.
struct V3Root {
    consolidated: Option<WithMetadata>,
    rest: Map<String, Value>,
}

impl<'de> Deserialize<'de> for V3Root {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Root;
        impl<'de> Visitor<'de> for Root {
            type Value = V3Root;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<V3Root, A::Error> {
                let (mut consolidated, mut rest) = (None, Map::new());
                while let Some(key) = map.next_key::<String>()? {
                    if key == "consolidated_metadata" {
                        consolidated = map.next_value()?;
                    } else {
                        rest.insert(key, map.next_value()?);
                    }
                }
                Ok(V3Root { consolidated, rest })
            }
        }
        d.deserialize_map(Root)
    }
}

fn is_metadata(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    METADATA_NAMES.contains(&name)
}

impl Store for Consolidated<'_> {
    fn get_bounded(&self, key: &str, max: u64) -> Result<Option<Object>, StoreError> {
        match self.objects.get(key) {
            Some(v) => {
                too_large(key, v.len() as u64, max)?;
                let bytes = v.to_vec();
                Ok(Some(Object { bytes, mtime: None }))
            }
            None if is_metadata(key) => Ok(None),
            None => self.inner.get_bounded(key, max),
        }
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.get_range(key, start, len)
    }

    fn get_suffix(&self, key: &str, len: u64) -> Result<Option<(Vec<u8>, ObjectMeta)>, StoreError> {
        match self.objects.get(key) {
            Some(v) => {
                let start = v.len().saturating_sub(len as usize);
                let meta = ObjectMeta {
                    size: v.len() as u64,
                    mtime: None,
                    tag: None,
                };
                Ok(Some((v[start..].to_vec(), meta)))
            }
            None if is_metadata(key) => Ok(None),
            None => self.inner.get_suffix(key, len),
        }
    }

    fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        match self.objects.get(key) {
            Some(v) => Ok(Some(ObjectMeta {
                size: v.len() as u64,
                mtime: None,
                tag: None,
            })),
            None if is_metadata(key) => Ok(None),
            None => self.inner.head(key),
        }
    }

    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        let objects = &self.objects;
        Ok(list_sized("consolidated metadata", objects, prefix, |v| {
            v.len() as u64
        }))
    }

    fn version(&self) -> Option<String> {
        self.inner.version()
    }

    fn about(&self) -> Vec<(String, String)> {
        self.inner.about()
    }

    fn parallelism(&self) -> usize {
        self.inner.parallelism()
    }

    fn latency(&self) -> crate::store::Latency {
        self.inner.latency()
    }

    fn mtime(&self) -> SystemTime {
        self.inner.mtime()
    }

    fn describe(&self) -> String {
        format!("{} (consolidated metadata)", self.inner.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    fn open(s: &MemoryStore) -> Result<Option<Consolidated<'_>>, MetaError> {
        let root = s.get("zarr.json").unwrap().map(|o| o.bytes);
        super::open(StoreRef::Borrowed(s), root.as_deref())
    }

    #[test]
    fn v2_documents_come_from_zmetadata() {
        let mut s = MemoryStore::new();
        s.insert(".zmetadata", r#"{"metadata": {".zgroup": {"zarr_format": 2}, "a/.zarray": {"x": 1}, "a/.zattrs": {"v": 1}}, "zarr_consolidated_format": 1}"#);
        s.insert("a/.zattrs", r#"{"v": 2}"#);
        s.insert("a/0", "chunk");
        let c = open(&s).unwrap().unwrap();
        assert_eq!(c.get("a/.zattrs").unwrap().unwrap().bytes, br#"{"v":1}"#);
        assert!(c.get("b/.zgroup").unwrap().is_none());
        assert_eq!(c.get("a/0").unwrap().unwrap().bytes, b"chunk");
        assert_eq!(
            c.list_dir("")
                .unwrap()
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>(),
            [".zgroup", "a"]
        );
    }

    #[test]
    fn escaping_keys_are_left_out() {
        let mut s = MemoryStore::new();
        s.insert(".zmetadata", r#"{"metadata": {".zgroup": {"zarr_format": 2}, "../../escape/.zarray": {}, "/abs/.zgroup": {}, "": {}, "ok/.zgroup": {}}}"#);
        let c = open(&s).unwrap().unwrap();
        assert_eq!(
            c.objects.keys().collect::<Vec<_>>(),
            [".zgroup", "ok/.zgroup"]
        );
        let mut s = MemoryStore::new();
        s.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group", "consolidated_metadata": {"metadata": {"": {"node_type": "group"}, "..": {}, "a//b": {}, "g": {"node_type": "group"}}}}"#);
        let c = open(&s).unwrap().unwrap();
        assert_eq!(
            c.objects.keys().collect::<Vec<_>>(),
            ["g/zarr.json", "zarr.json"]
        );
    }

    #[test]
    fn v3_documents_come_from_the_root() {
        let mut s = MemoryStore::new();
        s.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group", "consolidated_metadata": {"kind": "inline", "metadata": {"g": {"node_type": "group"}, "g/a": {"node_type": "array"}}}}"#);
        let c = open(&s).unwrap().unwrap();
        assert!(c.get("g/a/zarr.json").unwrap().is_some());
        let root: Value =
            serde_json::from_slice(&c.get("zarr.json").unwrap().unwrap().bytes).unwrap();
        assert!(root.get("consolidated_metadata").is_none());
    }
}
