//! The LRU of decoded chunks with single-flight loading.

use super::flight_lru::{CacheStats, FlightLru};
use super::{BufferPool, ChunkData, ChunkError};
use std::sync::Arc;

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

type Outcome = Result<ChunkData, ChunkError>;

/// Spare buffers kept for decoding: at most this fraction of the cache budget...
const POOL_FRACTION: u64 = 8;
/// ...and at most this many bytes.
const POOL_MAX: u64 = 64 << 20;

/// Decoded chunks bounded by a byte budget, with the buffers of evicted chunks kept for reuse.
pub struct ChunkCache {
    lru: FlightLru<ChunkId, ChunkData>,
    pool: Arc<BufferPool>,
}

fn charge(data: &ChunkData) -> u64 {
    ENTRY_OVERHEAD + data.as_ref().map_or(0, |d| d.len() as u64)
}

impl ChunkCache {
    /// A cache holding at most `budget` bytes of decoded chunks.
    pub fn new(budget: u64) -> Self {
        let pool = Arc::new(BufferPool::new(
            (budget / POOL_FRACTION).min(POOL_MAX) as usize
        ));
        let spare = pool.clone();
        let lru = FlightLru::new(budget, charge).on_evict(move |data: ChunkData| {
            // Only a buffer no reader still holds can be reused.
            if let Some(buf) = data.and_then(|d| Arc::try_unwrap(d).ok()) {
                spare.give(buf);
            }
        });
        ChunkCache { lru, pool }
    }

    /// Spare buffers for decoding into.
    pub fn pool(&self) -> &BufferPool {
        &self.pool
    }

    /// The byte budget.
    pub fn budget(&self) -> u64 {
        self.lru.budget()
    }

    /// Current counters.
    pub fn stats(&self) -> CacheStats {
        self.lru.stats()
    }

    /// True when the chunk is cached or being loaded (prefetch uses this to skip work).
    pub fn contains(&self, id: ChunkId) -> bool {
        self.lru.contains(&id)
    }

    /// Drops chunk `id`, recycling its buffer unless a reader still holds it.
    pub fn discard(&self, id: ChunkId) {
        self.lru.remove(&id);
    }

    /// The chunk `id`, from the cache, from a load already under way, or by running `load`.
    /// A panic inside `load` becomes an error for every waiting reader.
    pub fn get_or_load(&self, id: ChunkId, load: impl FnOnce() -> Outcome) -> Outcome {
        self.lru
            .get_or_load(id, || format!("chunk {}: decoder panicked", id.index), load)
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

    #[test]
    fn errors_and_panics_reach_the_reader_and_are_not_cached() {
        let cache = ChunkCache::new(1 << 20);
        let err = cache
            .get_or_load(id(1), || Err(ChunkError::new("corrupt")))
            .unwrap_err();
        assert_eq!(err.to_string(), "corrupt");
        let err = cache.get_or_load(id(1), || panic!("boom")).unwrap_err();
        assert!(err.to_string().contains("panicked"));
        assert!(cache.get_or_load(id(1), || data(3)).is_ok());
    }
}
