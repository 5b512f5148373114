//! Live counters of the whole process (one mount), shown in `.zarrfs/stats`: store traffic,
//! decode work per codec, reads served and their sizes, prefetch use and errors by kind.
//!
//! Every stage counts into the one process-wide [`STATS`]; the cache's own counters (hits,
//! misses, evictions, bytes, entries) live with each cache and are added by the view. Adding a
//! plain counter is one line in the `counters!` list below.

use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// Plain monotonic counters.
        pub struct Counters {
            $($(#[$doc])* pub $name: AtomicU64,)*
        }

        impl Counters {
            const fn new() -> Self {
                Counters { $($name: AtomicU64::new(0),)* }
            }

            fn to_json(&self) -> Map<String, Value> {
                let mut out = Map::new();
                $(out.insert(stringify!($name).into(), json!(self.$name.load(Ordering::Relaxed)));)*
                out
            }
        }
    };
}

counters! {
    /// Requests sent to the store for chunk data and shard indexes.
    store_requests,
    /// Bytes those requests returned.
    store_bytes,
    /// Reads of files served.
    reads,
    /// Bytes those reads returned.
    read_bytes,
    /// Read-ahead fetches the workers started (each loads a chunk unless a reader takes it
    /// over).
    prefetch_loads,
    /// Read-ahead requests skipped because the chunk was already cached, queued or loading.
    prefetch_skipped,
    /// Read-ahead requests refused because the queue was full (logged at debug level).
    prefetch_refused,
    /// Times a fetcher waited because the bytes in flight were at their bound.
    prefetch_waits,
    /// Reads of chunks the read-ahead workers had loaded.
    prefetch_hits,
}

/// Buckets of the read-size histogram: sizes up to 2^0, 2^1, ... 2^(BUCKETS-1) bytes and above.
const BUCKETS: usize = 24;

/// Decode work of one codec.
#[derive(Clone, Copy, Default)]
struct CodecWork {
    calls: u64,
    bytes_out: u64,
    nanos: u64,
}

/// Every counter of the process.
pub struct Stats {
    /// The plain counters.
    pub counters: Counters,
    read_sizes: [AtomicU64; BUCKETS],
    codecs: Mutex<BTreeMap<String, CodecWork>>,
    errors: Mutex<BTreeMap<String, u64>>,
}

/// The counters of this process.
pub static STATS: Stats = Stats::new();

/// Adds `n` to `counter`.
pub fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Stats {
    /// Every counter at zero.
    const fn new() -> Self {
        Stats {
            counters: Counters::new(),
            read_sizes: [const { AtomicU64::new(0) }; BUCKETS],
            codecs: Mutex::new(BTreeMap::new()),
            errors: Mutex::new(BTreeMap::new()),
        }
    }

    /// Counts one read that returned `bytes` bytes.
    pub fn read(&self, bytes: u64) {
        add(&self.counters.reads, 1);
        add(&self.counters.read_bytes, bytes);
        let bucket = (64 - bytes.saturating_sub(1).leading_zeros() as usize).min(BUCKETS - 1);
        add(&self.read_sizes[bucket], 1);
    }

    /// Counts one store request that returned `bytes` bytes.
    pub fn fetched(&self, bytes: usize) {
        add(&self.counters.store_requests, 1);
        add(&self.counters.store_bytes, bytes as u64);
    }

    /// Runs one decode step of `codec`, counting its time and the bytes it returns (as `f`
    /// reports them).
    pub fn decode<T, E>(
        &self,
        codec: &str,
        f: impl FnOnce() -> Result<T, E>,
        bytes: impl Fn(&T) -> usize,
    ) -> Result<T, E> {
        let start = Instant::now();
        let out = f();
        let nanos = start.elapsed().as_nanos() as u64;
        if let Ok(v) = &out {
            let mut codecs = self.codecs.lock();
            let work = codecs.entry(codec.to_string()).or_default();
            work.calls += 1;
            work.bytes_out += bytes(v) as u64;
            work.nanos += nanos;
        }
        out
    }

    /// Counts one error of `kind`.
    pub fn error(&self, kind: &str) {
        *self.errors.lock().entry(kind.to_string()).or_default() += 1;
    }

    /// Everything as one JSON object.
    pub fn to_json(&self) -> Map<String, Value> {
        let mut out = self.counters.to_json();
        let sizes: Map<String, Value> = self
            .read_sizes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.load(Ordering::Relaxed), i))
            .filter(|&(n, _)| n > 0)
            .map(|(n, i)| {
                let label = if i == BUCKETS - 1 {
                    format!(">{}", 1u64 << (i - 1))
                } else {
                    format!("<={}", 1u64 << i)
                };
                (label, json!(n))
            })
            .collect();
        out.insert("read_sizes".into(), Value::Object(sizes));
        let codecs = self.codecs.lock();
        let decode: Map<String, Value> = codecs
            .iter()
            .map(|(name, w)| {
                (
                    name.clone(),
                    json!({"calls": w.calls, "bytes": w.bytes_out, "seconds": w.nanos as f64 / 1e9}),
                )
            })
            .collect();
        out.insert("decode".into(), Value::Object(decode));
        let errors = self.errors.lock();
        out.insert("errors".into(), json!(*errors));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_sizes_fall_in_power_of_two_buckets() {
        let s = Stats::new();
        s.read(1);
        s.read(4096);
        s.read(4097);
        s.read(u64::MAX);
        let j = s.to_json();
        assert_eq!(j["reads"], 4);
        assert_eq!(j["read_sizes"]["<=1"], 1);
        assert_eq!(j["read_sizes"]["<=4096"], 1);
        assert_eq!(j["read_sizes"]["<=8192"], 1);
        assert_eq!(j["read_sizes"][">4194304"], 1);
        let r: Result<Vec<u8>, ()> = s.decode("zstd", || Ok(vec![0; 10]), Vec::len);
        assert!(r.is_ok());
        assert_eq!(j["errors"], json!({}));
        assert_eq!(s.to_json()["decode"]["zstd"]["bytes"], 10);
    }
}
