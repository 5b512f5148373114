//! Stores laid over another store: every call goes to the same method of the store under them,
//! with a step of their own before each request (counting, injecting faults, opening on first
//! use), so that a wrapped store takes the path it takes alone.

use super::{Entry, Latency, Object, ObjectMeta, Store, StoreError};
use std::time::{SystemTime, UNIX_EPOCH};

/// A request a [`Layer`] sees before the store under it is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// A whole value (get).
    Get(&'a str),
    /// `len` bytes of a value from `start`.
    Range { key: &'a str, start: u64, len: u64 },
    /// The last `len` bytes of a value.
    Suffix { key: &'a str, len: u64 },
    /// A value's size and time.
    Head(&'a str),
    /// The children of a prefix.
    List(&'a str),
}

impl Request<'_> {
    /// The key asked for (a listing's prefix).
    pub fn key(&self) -> &str {
        match *self {
            Request::Get(key) | Request::Head(key) | Request::List(key) => key,
            Request::Range { key, .. } | Request::Suffix { key, .. } => key,
        }
    }
}

/// A store over another one; it is a [`Store`] that forwards every method to [`Layer::inner`].
pub trait Layer: Send + Sync {
    /// What the step before a request hands to the bytes the request reads; it is dropped once
    /// the request is over.
    type Step: Default;

    /// The store under this one.
    fn inner(&self) -> Result<&dyn Store, StoreError>;

    /// Runs before each request; an error fails the request unmade. By default it does
    /// nothing.
    fn before(&self, request: &Request<'_>) -> Result<Self::Step, StoreError> {
        let _ = request;
        Ok(Self::Step::default())
    }

    /// The bytes a read returns, after the step before it (as they are, unless overridden).
    fn after(&self, step: &Self::Step, bytes: Vec<u8>) -> Vec<u8> {
        let _ = step;
        bytes
    }

    /// A whole object was found by a get.
    fn found(&self) {}

    /// As [`Store::parallelism`]: the inner store's.
    fn parallelism(&self) -> usize {
        self.inner().map_or(4, |s| s.parallelism())
    }

    /// As [`Store::latency`]: the inner store's.
    fn latency(&self) -> Latency {
        self.inner().map_or(Latency::Local, |s| s.latency())
    }

    /// As [`Store::mtime`]: the inner store's.
    fn mtime(&self) -> SystemTime {
        self.inner().map_or(UNIX_EPOCH, |s| s.mtime())
    }

    /// As [`Store::describe`]: the inner store's.
    fn describe(&self) -> String {
        self.inner().map(|s| s.describe()).unwrap_or_default()
    }
}

impl<L: Layer> Store for L {
    fn get_bounded(&self, key: &str, max: u64) -> Result<Option<Object>, StoreError> {
        let step = self.before(&Request::Get(key))?;
        let got = self.inner()?.get_bounded(key, max)?;
        Ok(got.map(|o| whole(self, &step, o)))
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let step = self.before(&Request::Range { key, start, len })?;
        let got = self.inner()?.get_range(key, start, len)?;
        Ok(got.map(|b| self.after(&step, b)))
    }

    fn get_range_versioned(
        &self,
        key: &str,
        start: u64,
        len: u64,
    ) -> Result<Option<(Vec<u8>, ObjectMeta)>, StoreError> {
        let step = self.before(&Request::Range { key, start, len })?;
        let got = self.inner()?.get_range_versioned(key, start, len)?;
        Ok(got.map(|(b, meta)| (self.after(&step, b), meta)))
    }

    fn get_range_into(
        &self,
        key: &str,
        start: u64,
        len: u64,
        tag: Option<&str>,
        buf: &mut Vec<u8>,
    ) -> Result<bool, StoreError> {
        let step = self.before(&Request::Range { key, start, len })?;
        let present = self.inner()?.get_range_into(key, start, len, tag, buf)?;
        if present {
            *buf = self.after(&step, std::mem::take(buf));
        }
        Ok(present)
    }

    fn get_suffix(&self, key: &str, len: u64) -> Result<Option<(Vec<u8>, ObjectMeta)>, StoreError> {
        let step = self.before(&Request::Suffix { key, len })?;
        let got = self.inner()?.get_suffix(key, len)?;
        Ok(got.map(|(b, meta)| (self.after(&step, b), meta)))
    }

    fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        let _step = self.before(&Request::Head(key))?;
        self.inner()?.head(key)
    }

    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        let _step = self.before(&Request::List(prefix))?;
        self.inner()?.list_dir(prefix)
    }

    fn list_below(&self, prefix: &str) -> Result<Vec<(String, Entry)>, StoreError> {
        let _step = self.before(&Request::List(prefix))?;
        self.inner()?.list_below(prefix)
    }

    fn matches_tags(&self) -> bool {
        self.inner().is_ok_and(|s| s.matches_tags())
    }

    fn version(&self) -> Option<String> {
        self.inner().ok()?.version()
    }

    fn about(&self) -> Vec<(String, String)> {
        self.inner().map(|s| s.about()).unwrap_or_default()
    }

    fn parallelism(&self) -> usize {
        Layer::parallelism(self)
    }

    fn latency(&self) -> Latency {
        Layer::latency(self)
    }

    fn mtime(&self) -> SystemTime {
        Layer::mtime(self)
    }

    fn describe(&self) -> String {
        Layer::describe(self)
    }
}

/// A whole object a get found, told to the layer and passed through [`Layer::after`].
fn whole<L: Layer>(layer: &L, step: &L::Step, o: Object) -> Object {
    layer.found();
    Object {
        bytes: layer.after(step, o.bytes),
        mtime: o.mtime,
    }
}
