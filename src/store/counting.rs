//! A store wrapper that counts the requests made through it, for the mount command's progress
//! line while a remote hierarchy is scanned.

use super::{Layer, Request, Store, StoreError};
use crate::stats::add;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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
}

/// Passes every call to the wrapped store and counts its requests.
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

impl Layer for CountingStore {
    type Step = ();

    fn inner(&self) -> Result<&dyn Store, StoreError> {
        Ok(self.inner.as_ref())
    }

    fn before(&self, _request: &Request<'_>) -> Result<(), StoreError> {
        add(&self.counts.requests, 1);
        Ok(())
    }

    fn found(&self) {
        add(&self.counts.objects, 1);
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
