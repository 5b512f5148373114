//! An in-memory store, for tests and for building stores programmatically.

use super::{
    accept_name, check_key, join_key, Entry, EntryKind, Object, ObjectMeta, Store, StoreError,
};
use std::collections::BTreeMap;
use std::time::SystemTime;

/// Keys and values in a sorted map.
#[derive(Default)]
pub struct MemoryStore {
    items: BTreeMap<String, Vec<u8>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<Vec<u8>>) {
        self.items.insert(key.into(), value.into());
    }
}

/// The direct children of `prefix` among the keys of a sorted map of values (a memory store,
/// or metadata documents held in memory). Children whose names `check_name` refuses are left
/// out with a warning naming `source`.
pub fn list_map(source: &str, items: &BTreeMap<String, Vec<u8>>, prefix: &str) -> Vec<Entry> {
    list_sized(source, items, prefix, |v| v.len() as u64)
}

/// [`list_map`] for a map of any values, `size` giving the size listed for each.
pub fn list_sized<V>(
    source: &str,
    items: &BTreeMap<String, V>,
    prefix: &str,
    size: impl Fn(&V) -> u64,
) -> Vec<Entry> {
    let base = join_key(prefix, "");
    let mut out: BTreeMap<String, EntryKind> = BTreeMap::new();
    for (key, value) in items.range(base.clone()..) {
        let Some(rest) = key.strip_prefix(&base) else {
            break;
        };
        match rest.split_once('/') {
            Some((dir, _)) => out.insert(dir.to_string(), EntryKind::Prefix),
            None => out.insert(rest.to_string(), EntryKind::Object(size(value))),
        };
    }
    out.into_iter()
        .filter(|(name, _)| accept_name(source, name))
        .map(|(name, kind)| Entry {
            name,
            kind,
            mtime: None,
            tag: None,
        })
        .collect()
}

impl Store for MemoryStore {
    fn get_bounded(&self, key: &str, max: u64) -> Result<Option<Object>, StoreError> {
        check_key(key)?;
        let Some(bytes) = self.items.get(key) else {
            return Ok(None);
        };
        super::too_large(key, bytes.len() as u64, max)?;
        let bytes = bytes.clone();
        Ok(Some(Object { bytes, mtime: None }))
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError> {
        check_key(key)?;
        Ok(self.items.get(key).map(|v| {
            let s = (start as usize).min(v.len());
            let e = (start.saturating_add(len) as usize).min(v.len());
            v[s..e].to_vec()
        }))
    }

    /// The ETag is the value's CRC-32C (as S3's is the MD5 of an object put in one part).
    fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        check_key(key)?;
        Ok(self.items.get(key).map(|v| ObjectMeta {
            size: v.len() as u64,
            mtime: None,
            tag: Some(format!("{:08x}", crc32c::crc32c(v))),
        }))
    }

    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        check_key(prefix)?;
        Ok(list_map("memory", &self.items, prefix))
    }

    /// Nothing to wait on: one request at a time.
    fn parallelism(&self) -> usize {
        1
    }

    fn mtime(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH
    }

    fn describe(&self) -> String {
        "memory".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &MemoryStore) -> Vec<(String, EntryKind)> {
        s.list_dir("")
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.kind))
            .collect()
    }

    #[test]
    fn lists_children_once() {
        let mut s = MemoryStore::new();
        s.insert("a/.zarray", "{}");
        s.insert("a/0.0", "x");
        s.insert("b", "yy");
        s.insert("ab/c", "z");
        assert_eq!(
            names(&s),
            vec![
                ("a".into(), EntryKind::Prefix),
                ("ab".into(), EntryKind::Prefix),
                ("b".into(), EntryKind::Object(2))
            ]
        );
        assert_eq!(s.list_dir("a").unwrap().len(), 2);
        assert_eq!(s.get_range("b", 1, 10).unwrap().unwrap(), b"y");
        assert!(s.get("../b").is_err());
    }

    #[test]
    fn escaping_keys_are_not_listed() {
        let mut s = MemoryStore::new();
        s.insert("/abs/.zgroup", "{}");
        s.insert("../up/.zgroup", "{}");
        s.insert("ok/.zgroup", "{}");
        assert_eq!(names(&s), vec![("ok".into(), EntryKind::Prefix)]);
    }
}
