//! The LRU of decoded chunks and shard indexes with single-flight loading: both share one
//! byte budget, so `--cache-size` bounds them together.

use super::flight_lru::{CacheStats, FlightLru};
use super::{BufferPool, ChunkData, ChunkError};
use crate::codec::ShardIndex;
use crate::stats::{add, STATS};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::sync::Mutex;

/// Bytes charged per cached entry on top of its data (bookkeeping, absent-chunk markers).
const ENTRY_OVERHEAD: u64 = 96;

/// Identifies one chunk: the array's number in the view and the chunk's linear grid index.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct ChunkId {
    /// The array's number.
    pub array: u32,
    /// Linear (C-order) index of the chunk in the array's chunk grid.
    pub index: u64,
}

/// A shard's decoded index: `None` when the store holds no such shard.
pub type ShardIndexData = Option<Arc<ShardIndex>>;

/// What the cache holds under one key.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
enum Key {
    Chunk(ChunkId),
    /// The index of the shard with this store key, of array number N.
    Index(u32, Arc<str>),
}

#[derive(Clone)]
enum Entry {
    Chunk(ChunkData),
    Index(ShardIndexData),
}

type Outcome = Result<ChunkData, ChunkError>;

/// Spare buffers kept for decoding: at most this fraction of the cache budget...
const POOL_FRACTION: u64 = 8;
/// ...and at most this many bytes.
const POOL_MAX: u64 = 64 << 20;

/// Decoded chunks and shard indexes bounded by one byte budget, with the buffers of evicted
/// chunks kept for reuse.
pub struct ChunkCache {
    lru: FlightLru<Key, Entry>,
    pool: Arc<BufferPool>,
    /// Chunks the read-ahead workers loaded that no reader has asked for yet (bounded by
    /// [`PREFETCHED_MAX`]), to count read-ahead hits.
    prefetched: Mutex<HashSet<ChunkId>>,
    /// False until the first chunk is marked: readers skip the lock until then.
    any_prefetched: AtomicBool,
}

/// Read-ahead loads remembered for counting hits; beyond, the oldest are forgotten all at once.
const PREFETCHED_MAX: usize = 1 << 16;

fn charge(entry: &Entry) -> u64 {
    ENTRY_OVERHEAD
        + match entry {
            Entry::Chunk(data) => data.as_ref().map_or(0, |d| d.len() as u64),
            Entry::Index(index) => index
                .as_ref()
                .map_or(0, |i| ShardIndex::ENTRY_BYTES * i.len() as u64),
        }
}

impl ChunkCache {
    /// A cache holding at most `budget` bytes of decoded chunks and shard indexes.
    pub fn new(budget: u64) -> Self {
        let pool = Arc::new(BufferPool::new(
            (budget / POOL_FRACTION).min(POOL_MAX) as usize
        ));
        let spare = pool.clone();
        let lru = FlightLru::new(budget, charge).on_evict(move |entry: Entry| {
            // Only a buffer no reader still holds can be reused.
            if let Entry::Chunk(Some(data)) = entry {
                if let Ok(buf) = Arc::try_unwrap(data) {
                    spare.give(buf);
                }
            }
        });
        ChunkCache {
            lru,
            pool,
            prefetched: Mutex::default(),
            any_prefetched: AtomicBool::new(false),
        }
    }

    /// Spare buffers for decoding into.
    pub fn pool(&self) -> &BufferPool {
        &self.pool
    }

    /// The byte budget.
    pub fn budget(&self) -> u64 {
        self.lru.budget()
    }

    /// True when an entry of `data_bytes` bytes can be kept: one larger than the whole budget
    /// never is, so it would be loaded again on every read.
    pub fn fits(&self, data_bytes: u64) -> bool {
        data_bytes.saturating_add(ENTRY_OVERHEAD) <= self.budget()
    }

    /// Current counters.
    pub fn stats(&self) -> CacheStats {
        self.lru.stats()
    }

    /// True when the chunk is cached or being loaded (prefetch uses this to skip work).
    pub fn contains(&self, id: ChunkId) -> bool {
        self.lru.contains(&Key::Chunk(id))
    }

    fn lock_prefetched(&self) -> std::sync::MutexGuard<'_, HashSet<ChunkId>> {
        self.prefetched.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes that the read-ahead workers loaded chunk `id`: the next reader of it is a hit.
    pub fn mark_prefetched(&self, id: ChunkId) {
        self.any_prefetched.store(true, Ordering::Relaxed);
        let mut set = self.lock_prefetched();
        if set.len() >= PREFETCHED_MAX {
            set.clear();
        }
        set.insert(id);
    }

    /// Drops chunk `id`, recycling its buffer unless a reader still holds it.
    pub fn discard(&self, id: ChunkId) {
        self.lru.remove(&Key::Chunk(id));
    }

    /// The chunk `id`, from the cache, from a load already under way, or by running `load`.
    /// A panic inside `load` becomes an error for every waiting reader.
    pub fn get_or_load(&self, id: ChunkId, load: impl FnOnce() -> Outcome) -> Outcome {
        if self.any_prefetched.load(Ordering::Relaxed) && self.lock_prefetched().remove(&id) {
            add(&STATS.counters.prefetch_hits, 1);
        }
        let entry = self.lru.get_or_load(
            Key::Chunk(id),
            || format!("chunk {}: decoder panicked", id.index),
            || load().map(Entry::Chunk),
        )?;
        match entry {
            Entry::Chunk(data) => Ok(data),
            Entry::Index(_) => unreachable!("chunk keys hold chunks"),
        }
    }

    /// The index of shard `key` of array number `array`, kept like a chunk.
    pub fn get_or_load_index(
        &self,
        array: u32,
        key: &str,
        load: impl FnOnce() -> Result<ShardIndexData, ChunkError>,
    ) -> Result<ShardIndexData, ChunkError> {
        let entry = self.lru.get_or_load(
            Key::Index(array, Arc::from(key)),
            || format!("shard {key}: index decoder panicked"),
            || load().map(Entry::Index),
        )?;
        match entry {
            Entry::Index(index) => Ok(index),
            Entry::Chunk(_) => unreachable!("index keys hold indexes"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn id(index: u64) -> ChunkId {
        ChunkId { array: 0, index }
    }

    fn data(n: usize) -> Outcome {
        Ok(Some(Arc::new(vec![7; n])))
    }

    #[test]
    fn stays_within_its_budget_and_evicts_least_recent() {
        let cache = ChunkCache::new(3 * (1000 + ENTRY_OVERHEAD));
        for i in 0..3 {
            cache.get_or_load(id(i), || data(1000)).unwrap();
        }
        cache.get_or_load(id(0), || panic!("0 is cached")).unwrap();
        cache.get_or_load(id(3), || data(1000)).unwrap();
        assert!(cache.stats().used <= cache.budget());
        assert!(cache.contains(id(0)) && !cache.contains(id(1)));
        // Larger than the whole budget: returned, not kept.
        assert_eq!(
            cache
                .get_or_load(id(9), || data(10_000))
                .unwrap()
                .unwrap()
                .len(),
            10_000
        );
        assert!(!cache.contains(id(9)));
    }

    #[test]
    fn discarded_chunks_leave_and_their_buffers_are_recycled() {
        let cache = ChunkCache::new(1 << 20);
        cache.get_or_load(id(1), || data(1000)).unwrap();
        let held = cache.get_or_load(id(2), || data(1000)).unwrap();
        cache.discard(id(1));
        cache.discard(id(2));
        assert_eq!(cache.stats().used, 0);
        assert!(!cache.contains(id(1)) && !cache.contains(id(2)));
        assert_eq!(
            cache.pool().take(1000),
            vec![7; 1000],
            "1's buffer is recycled"
        );
        assert_eq!(cache.pool().take(1000), vec![0; 1000], "2's is still held");
        drop(held);
    }

    fn index(entries: usize) -> Result<ShardIndexData, ChunkError> {
        let decoded = vec![0u8; 16 * entries];
        Ok(Some(Arc::new(ShardIndex::parse(&decoded, 0).unwrap())))
    }

    #[test]
    fn shard_indexes_share_the_budget_with_chunks() {
        let cache = ChunkCache::new(2 * (1000 + ENTRY_OVERHEAD));
        cache.get_or_load(id(0), || data(1000)).unwrap();
        cache.get_or_load_index(0, "s", || index(60)).unwrap();
        cache
            .get_or_load_index(0, "s", || panic!("the index is cached"))
            .unwrap();
        assert_eq!(cache.stats().used, 1000 + 960 + 2 * ENTRY_OVERHEAD);
        cache.get_or_load(id(1), || data(1000)).unwrap();
        assert!(cache.stats().used <= cache.budget());
        assert!(!cache.contains(id(0)), "the chunk made room");
        assert_eq!(cache.get_or_load_index(1, "absent", || Ok(None)), Ok(None));
        let err = cache
            .get_or_load_index(0, "e", || panic!("boom"))
            .unwrap_err();
        assert!(err.to_string().contains("index decoder panicked"), "{err}");
    }

    #[test]
    fn errors_and_panics_reach_the_reader_and_are_not_cached() {
        let cache = ChunkCache::new(1 << 20);
        let err = cache
            .get_or_load(id(1), || {
                Err(ChunkError::new(super::super::Panicked("corrupt".into())))
            })
            .unwrap_err();
        assert_eq!(err.to_string(), "corrupt");
        let err = cache.get_or_load(id(1), || panic!("boom")).unwrap_err();
        assert!(err.to_string().contains("panicked"));
        assert!(cache.get_or_load(id(1), || data(3)).is_ok());
    }
}
