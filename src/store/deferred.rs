//! A store opened on first use. Recognising a remote Icechunk repository or reference set takes
//! requests, and requests start the network runtime, whose threads must not be started before
//! the mount command daemonizes (threads do not survive fork) and blocks its signals.

use super::{Entry, Latency, Object, ObjectMeta, Store, StoreError};
use parking_lot::Mutex;
use std::sync::OnceLock;
use std::time::SystemTime;

/// How the store is opened.
type Opener = Box<dyn FnOnce() -> Result<Box<dyn Store>, StoreError> + Send>;

/// Forwards every call to the store `open` returns, opened by the first call.
pub struct Deferred {
    open: Mutex<Option<Opener>>,
    store: OnceLock<Result<Box<dyn Store>, String>>,
    describe: String,
    opened: SystemTime,
}

impl Deferred {
    /// The store `open` makes, shown as `describe` until then.
    pub fn new(describe: String, open: Opener) -> Self {
        Deferred {
            open: Mutex::new(Some(open)),
            store: OnceLock::new(),
            describe,
            opened: SystemTime::now(),
        }
    }

    fn inner(&self) -> Result<&dyn Store, StoreError> {
        let opened = self.store.get_or_init(|| {
            let open = self.open.lock().take();
            match open {
                Some(open) => open().map_err(|e| e.to_string()),
                None => Err(format!("{}: opening failed", self.describe)),
            }
        });
        match opened {
            Ok(store) => Ok(store.as_ref()),
            Err(e) => Err(StoreError::Invalid(e.clone())),
        }
    }
}

impl Store for Deferred {
    fn get(&self, key: &str) -> Result<Option<Object>, StoreError> {
        self.inner()?.get(key)
    }

    fn get_bounded(&self, key: &str, max: u64) -> Result<Option<Object>, StoreError> {
        self.inner()?.get_bounded(key, max)
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner()?.get_range(key, start, len)
    }

    fn get_range_into(
        &self,
        key: &str,
        start: u64,
        len: u64,
        buf: &mut Vec<u8>,
    ) -> Result<bool, StoreError> {
        self.inner()?.get_range_into(key, start, len, buf)
    }

    fn get_suffix(&self, key: &str, len: u64) -> Result<Option<(Vec<u8>, u64)>, StoreError> {
        self.inner()?.get_suffix(key, len)
    }

    fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        self.inner()?.head(key)
    }

    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        self.inner()?.list_dir(prefix)
    }

    fn etag(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.inner()?.etag(key)
    }

    fn about(&self) -> Vec<(String, String)> {
        self.inner().map(|s| s.about()).unwrap_or_default()
    }

    fn parallelism(&self) -> usize {
        self.inner().map_or(4, |s| s.parallelism())
    }

    /// Known without opening: what is deferred is always a remote store.
    fn latency(&self) -> Latency {
        Latency::Network
    }

    fn mtime(&self) -> SystemTime {
        self.store
            .get()
            .and_then(|s| s.as_ref().ok())
            .map_or(self.opened, |s| s.mtime())
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }
}
