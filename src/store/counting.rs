//! A store wrapper that counts the requests made through it, for the mount command's progress
//! line while a remote hierarchy is scanned.

use super::{Entry, Latency, Object, ObjectMeta, Store, StoreError};
use crate::stats::add;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

/// Running totals of one store's requests.
#[derive(Debug, Default)]
pub struct RequestCounts {
    requests: AtomicU64,
    objects: AtomicU64,
}

impl RequestCounts {
    /// Requests made so far (every get, range, head and listing).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Whole objects fetched so far (while the hierarchy loads: metadata objects).
    pub fn objects(&self) -> u64 {
        self.objects.load(Ordering::Relaxed)
    }

    fn request(&self) {
        add(&self.requests, 1);
    }

    /// Counts a whole object when `got` holds one.
    fn fetched(&self, got: Option<Object>) -> Result<Option<Object>, StoreError> {
        if got.is_some() {
            add(&self.objects, 1);
        }
        Ok(got)
    }
}

/// Passes every call to the wrapped store and counts it.
pub struct CountingStore {
    inner: Box<dyn Store>,
    counts: Arc<RequestCounts>,
}

impl CountingStore {
    /// Wraps `inner`; the returned counts can be read while the store is in use.
    pub fn new(inner: Box<dyn Store>) -> (Self, Arc<RequestCounts>) {
        let counts = Arc::new(RequestCounts::default());
        (
            CountingStore {
                inner,
                counts: counts.clone(),
            },
            counts,
        )
    }
}

impl Store for CountingStore {
    fn get(&self, key: &str) -> Result<Option<Object>, StoreError> {
        self.counts.request();
        self.counts.fetched(self.inner.get(key)?)
    }

    fn get_bounded(&self, key: &str, max: u64) -> Result<Option<Object>, StoreError> {
        self.counts.request();
        self.counts.fetched(self.inner.get_bounded(key, max)?)
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError> {
        self.counts.request();
        self.inner.get_range(key, start, len)
    }

    fn get_range_into(
        &self,
        key: &str,
        start: u64,
        len: u64,
        buf: &mut Vec<u8>,
    ) -> Result<bool, StoreError> {
        self.counts.request();
        self.inner.get_range_into(key, start, len, buf)
    }

    fn get_suffix(&self, key: &str, len: u64) -> Result<Option<(Vec<u8>, u64)>, StoreError> {
        self.counts.request();
        self.inner.get_suffix(key, len)
    }

    fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        self.counts.request();
        self.inner.head(key)
    }

    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        self.counts.request();
        self.inner.list_dir(prefix)
    }

    fn etag(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.inner.etag(key)
    }

    fn about(&self) -> Vec<(String, String)> {
        self.inner.about()
    }

    fn parallelism(&self) -> usize {
        self.inner.parallelism()
    }

    fn latency(&self) -> Latency {
        self.inner.latency()
    }

    fn mtime(&self) -> SystemTime {
        self.inner.mtime()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    #[test]
    fn counts_requests_and_fetched_objects() {
        let mut mem = MemoryStore::new();
        mem.insert("a/.zarray", b"{}".to_vec());
        let (store, counts) = CountingStore::new(Box::new(mem));
        assert_eq!(store.get("a/.zarray").unwrap().unwrap().bytes, b"{}");
        assert!(store.get("b").unwrap().is_none());
        assert_eq!(store.get_range("a/.zarray", 1, 5).unwrap().unwrap(), b"}");
        assert_eq!(store.list_dir("").unwrap().len(), 1);
        assert_eq!((counts.requests(), counts.objects()), (4, 1));
    }
}
