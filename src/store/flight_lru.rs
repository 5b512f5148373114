//! An LRU bounded in bytes whose misses load each key once, however many readers want it at
//! the same time (single-flight): under the chunk cache, and under the parsed manifests and
//! reference records of the stores that have them.

use lru::LruCache;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::Hash;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

/// Counters for tests and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from the cache (including by waiting for another reader's load).
    pub hits: u64,
    /// Loads run.
    pub loads: u64,
    /// Bytes currently charged.
    pub used: u64,
    /// Values evicted to stay within the budget.
    pub evictions: u64,
    /// Values currently held.
    pub entries: u64,
}

/// One load in progress; readers of the same key wait for its outcome.
type Flight<V, E> = OnceLock<Result<V, E>>;

struct Inner<K, V, E> {
    lru: LruCache<K, V>,
    inflight: HashMap<K, Arc<Flight<V, E>>>,
    stats: CacheStats,
}

/// Called with each value the LRU evicts.
type Evicted<V> = Box<dyn Fn(V) + Send + Sync>;

/// Values bounded by a byte budget; `charge` says what one value costs. Loads fail with `E`.
pub struct FlightLru<K: Hash + Eq, V, E> {
    budget: u64,
    charge: fn(&V) -> u64,
    evicted: Option<Evicted<V>>,
    inner: Mutex<Inner<K, V, E>>,
}

impl<K: Hash + Eq + Clone, V: Clone, E: Clone> FlightLru<K, V, E> {
    /// A cache holding at most `budget` bytes as counted by `charge`.
    pub fn new(budget: u64, charge: fn(&V) -> u64) -> Self {
        FlightLru {
            budget,
            charge,
            evicted: None,
            inner: Mutex::new(Inner {
                lru: LruCache::unbounded(),
                inflight: HashMap::new(),
                stats: CacheStats::default(),
            }),
        }
    }

    /// Hands every evicted value to `f` (outside the lock).
    pub fn on_evict(mut self, f: impl Fn(V) + Send + Sync + 'static) -> Self {
        self.evicted = Some(Box::new(f));
        self
    }

    /// The byte budget.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Current counters.
    pub fn stats(&self) -> CacheStats {
        let inner = self.inner.lock();
        CacheStats {
            entries: inner.lru.len() as u64,
            ..inner.stats
        }
    }

    /// The cached value of `key`, if any, leaving its place in the LRU and the counters alone.
    pub fn peek(&self, key: &K) -> Option<V> {
        self.inner.lock().lru.peek(key).cloned()
    }

    /// True when `key` is cached or being loaded.
    pub fn contains(&self, key: &K) -> bool {
        let inner = self.inner.lock();
        inner.lru.contains(key) || inner.inflight.contains_key(key)
    }

    /// Drops `key` from the cache when `drop` says so of its value (a load under way is left
    /// alone); the evict hook gets it.
    pub fn remove_if(&self, key: &K, drop: impl FnOnce(&V) -> bool) {
        let gone = {
            let mut inner = self.inner.lock();
            let gone = match inner.lru.peek(key) {
                Some(v) if drop(v) => inner.lru.pop(key),
                _ => None,
            };
            if let Some(v) = &gone {
                inner.stats.used -= (self.charge)(v);
            }
            gone
        };
        if let (Some(v), Some(f)) = (gone, &self.evicted) {
            f(v);
        }
    }

    /// The value of `key`: cached, from a load already under way, or by running `load`. Errors
    /// are not kept; a panic inside `load` becomes the error `panicked()` for every waiter.
    pub fn get_or_load(
        &self,
        key: K,
        panicked: impl FnOnce() -> E,
        load: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        let flight = {
            let mut inner = self.inner.lock();
            if let Some(value) = inner.lru.get(&key) {
                let value = value.clone();
                inner.stats.hits += 1;
                return Ok(value);
            }
            if let Some(flight) = inner.inflight.get(&key) {
                let flight = flight.clone();
                inner.stats.hits += 1;
                drop(inner);
                return flight.wait().clone();
            }
            let flight = Arc::new(Flight::new());
            inner.inflight.insert(key.clone(), flight.clone());
            inner.stats.loads += 1;
            flight
        };

        let outcome = catch_unwind(AssertUnwindSafe(load)).unwrap_or_else(|_| Err(panicked()));

        let mut gone = Vec::new();
        {
            let mut inner = self.inner.lock();
            inner.inflight.remove(&key);
            if let Ok(value) = &outcome {
                let cost = (self.charge)(value);
                if cost <= self.budget {
                    inner.stats.used += cost;
                    if let Some(old) = inner.lru.put(key, value.clone()) {
                        inner.stats.used -= (self.charge)(&old);
                        gone.push(old);
                    }
                    while inner.stats.used > self.budget {
                        match inner.lru.pop_lru() {
                            Some((_, old)) => {
                                inner.stats.used -= (self.charge)(&old);
                                inner.stats.evictions += 1;
                                gone.push(old);
                            }
                            None => break,
                        }
                    }
                }
            }
        }
        if let Some(f) = &self.evicted {
            gone.into_iter().for_each(f);
        }
        let _ = flight.set(outcome.clone());
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Barrier;

    #[test]
    fn concurrent_readers_load_once() {
        let cache = Arc::new(FlightLru::<u32, u32, ()>::new(1 << 20, |_| 8));
        let loads = Arc::new(AtomicU32::new(0));
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (cache, loads, barrier) = (cache.clone(), loads.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    cache.get_or_load(
                        1,
                        || (),
                        || {
                            loads.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(50));
                            Ok(42)
                        },
                    )
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap(), Ok(42));
        }
        assert_eq!(loads.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn evicted_values_are_handed_back() {
        let gone = Arc::new(Mutex::new(Vec::new()));
        let sink = gone.clone();
        let cache =
            FlightLru::<u32, u32, ()>::new(16, |_| 8).on_evict(move |v| sink.lock().push(v));
        for k in 0..4 {
            cache.get_or_load(k, || (), || Ok(k * 10)).unwrap();
        }
        assert_eq!(*gone.lock(), vec![0, 10]);
        assert!(cache.stats().used <= cache.budget());
    }
}
