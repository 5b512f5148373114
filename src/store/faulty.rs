//! A store that injects faults into another, for tests: errors, short reads, corrupted bytes
//! and latency, on the keys a rule names, on every call, every Nth or the first N.

use super::{Layer, Request, Store, StoreError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One kind of fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The call fails with an I/O error naming the key ("injected fault").
    Error,
    /// The call fails as a remote server that kept answering with an error past the retries
    /// (a 503): a fault that may pass.
    Unavailable,
    /// A read returns only the first half of the bytes it would return.
    ShortRead,
    /// A read returns its bytes with one bit flipped in the middle byte.
    Corrupt,
    /// The call waits this long before it runs.
    Latency(Duration),
    /// The call panics (a bug in a backend or a library under it).
    Panic,
}

/// Injects `fault` into calls on keys containing `keys` (`""`: every key), or equal to it when
/// `exact`, on every `every`th matching call (1: all of them) among the first `first`.
struct Rule {
    keys: String,
    exact: bool,
    every: u64,
    first: u64,
    fault: Fault,
    seen: AtomicU64,
}

/// Another store with faults injected by rules, applied in the order they were added.
pub struct FaultyStore {
    inner: Arc<dyn Store>,
    rules: Vec<Rule>,
    calls: AtomicU64,
}

/// What a call does to bytes it returns.
#[derive(Default)]
pub struct Damage {
    short: bool,
    corrupt: bool,
}

impl Damage {
    fn apply(&self, mut bytes: Vec<u8>) -> Vec<u8> {
        if self.short {
            bytes.truncate(bytes.len() / 2);
        }
        if self.corrupt && !bytes.is_empty() {
            let mid = bytes.len() / 2;
            bytes[mid] ^= 0x10;
        }
        bytes
    }
}

impl FaultyStore {
    /// `inner` with no faults yet.
    pub fn new(inner: Arc<dyn Store>) -> Self {
        FaultyStore {
            inner,
            rules: Vec::new(),
            calls: AtomicU64::new(0),
        }
    }

    /// Adds a rule: `fault` on every `every`th call (at least 1) on keys containing `keys`.
    pub fn with(mut self, keys: &str, every: u64, fault: Fault) -> Self {
        self.rules.push(Rule {
            keys: keys.to_string(),
            exact: false,
            every: every.max(1),
            first: u64::MAX,
            fault,
            seen: AtomicU64::new(0),
        });
        self
    }

    /// Adds a rule: `fault` on the first `n` calls on exactly `key` (a listing's prefix `a/b`
    /// spares the objects `a/b/...`).
    pub fn first(mut self, key: &str, n: u64, fault: Fault) -> Self {
        self.rules.push(Rule {
            keys: key.to_string(),
            exact: true,
            every: 1,
            first: n,
            fault,
            seen: AtomicU64::new(0),
        });
        self
    }

    /// Calls made so far, of every kind.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Runs the rules for a call on `key`: sleeps, fails, or says how to damage what it reads.
    fn inject(&self, key: &str) -> Result<Damage, StoreError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let mut damage = Damage::default();
        for rule in &self.rules {
            let matches = if rule.exact {
                key == rule.keys
            } else {
                key.contains(&rule.keys)
            };
            if !matches {
                continue;
            }
            let seen = rule.seen.fetch_add(1, Ordering::Relaxed) + 1;
            if seen % rule.every != 0 || seen > rule.first {
                continue;
            }
            match &rule.fault {
                Fault::Error => {
                    return Err(StoreError::io(key, std::io::Error::other("injected fault")))
                }
                Fault::Unavailable => {
                    return Err(StoreError::Remote {
                        what: key.to_string(),
                        cause: "injected 503 Service Unavailable".into(),
                    })
                }
                Fault::ShortRead => damage.short = true,
                Fault::Corrupt => damage.corrupt = true,
                Fault::Latency(d) => std::thread::sleep(*d),
                Fault::Panic => panic!("injected panic reading {key}"),
            }
        }
        Ok(damage)
    }
}

impl Layer for FaultyStore {
    type Step = Damage;

    fn inner(&self) -> Result<&dyn Store, StoreError> {
        Ok(self.inner.as_ref())
    }

    fn before(&self, request: &Request<'_>) -> Result<Damage, StoreError> {
        self.inject(request.key())
    }

    fn after(&self, damage: &Damage, bytes: Vec<u8>) -> Vec<u8> {
        damage.apply(bytes)
    }

    fn describe(&self) -> String {
        format!("{} (with injected faults)", self.inner.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    fn store() -> Arc<dyn Store> {
        let mut s = MemoryStore::new();
        s.insert("a/c/0", vec![1, 2, 3, 4]);
        s.insert("b/c/0", vec![5, 6, 7, 8]);
        Arc::new(s)
    }

    #[test]
    fn rules_apply_to_their_keys_and_their_share_of_calls() {
        let s = FaultyStore::new(store())
            .with("a/", 2, Fault::Error)
            .with("b/", 1, Fault::ShortRead)
            .with("b/", 1, Fault::Corrupt);
        assert_eq!(s.get_range("a/c/0", 0, 9).unwrap(), Some(vec![1, 2, 3, 4]));
        let err = s.get_range("a/c/0", 0, 9).unwrap_err().to_string();
        assert!(
            err.contains("a/c/0") && err.contains("injected fault"),
            "{err}"
        );
        assert!(s.get("a/c/0").is_ok(), "every second call only");
        assert_eq!(s.get("b/c/0").unwrap().unwrap().bytes, vec![5, 6 ^ 0x10]);
        let (suffix, meta) = s.get_suffix("b/c/0", 2).unwrap().unwrap();
        assert_eq!((suffix, meta.size), (vec![7 ^ 0x10], 4));
        assert_eq!(s.calls(), 5);
    }

    #[test]
    fn a_first_rule_fails_its_first_calls_on_its_key_only() {
        let s = FaultyStore::new(store()).first("a", 1, Fault::Error);
        assert!(s.get("a/c/0").is_ok(), "a/c/0 is not a");
        assert!(s.list_dir("a").is_err());
        assert!(s.list_dir("a").is_ok(), "the first call only");
    }
}
