//! Decoded shard indexes of one array: a small LRU bounded in bytes, apart from the chunk LRU,
//! loading each shard's index once however many readers want it at the same time.

use super::flight_lru::FlightLru;
use super::ChunkError;
use crate::codec::ShardIndex;
use std::sync::Arc;

/// Bytes charged per cached index on top of its entries (key, bookkeeping, absence markers).
const ENTRY_OVERHEAD: u64 = 128;

/// A shard's decoded index, or `None` when the store has no such shard.
pub(super) type Index = Option<Arc<ShardIndex>>;

type Outcome = Result<Index, ChunkError>;

/// Shard indexes keyed by shard key, bounded by a byte budget.
pub(super) struct IndexCache(FlightLru<String, Index>);

fn charge(index: &Index) -> u64 {
    ENTRY_OVERHEAD + index.as_ref().map_or(0, |i| 16 * i.len() as u64)
}

impl IndexCache {
    /// A cache holding at most `budget` bytes of indexes.
    pub fn new(budget: u64) -> Self {
        IndexCache(FlightLru::new(budget, charge))
    }

    /// How many loads ran so far.
    #[cfg(test)]
    pub fn loads(&self) -> u64 {
        self.0.stats().loads
    }

    /// The index of shard `key`, from the cache, from a load under way, or by running `load`.
    /// Errors are not kept; a panic inside `load` becomes an error for every waiting reader.
    pub fn get_or_load(&self, key: &str, load: impl FnOnce() -> Outcome) -> Outcome {
        self.0.get_or_load(
            key.to_string(),
            || format!("shard {key}: index decoder panicked"),
            load,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(entries: usize) -> Outcome {
        let decoded = vec![0u8; 16 * entries];
        Ok(Some(Arc::new(ShardIndex::parse(&decoded, 0).unwrap())))
    }

    #[test]
    fn keeps_indexes_within_its_budget() {
        let cache = IndexCache::new(2 * (ENTRY_OVERHEAD + 16 * 10));
        for key in ["a", "b", "c"] {
            cache.get_or_load(key, || index(10)).unwrap();
        }
        assert_eq!(cache.loads(), 3);
        cache.get_or_load("c", || panic!("c is cached")).unwrap();
        cache.get_or_load("a", || index(10)).unwrap();
        assert_eq!(cache.loads(), 4);
        assert_eq!(cache.get_or_load("absent", || Ok(None)), Ok(None));
        cache
            .get_or_load("absent", || panic!("absence is cached"))
            .unwrap();
    }

    #[test]
    fn panics_become_errors_that_are_not_kept() {
        let cache = IndexCache::new(1 << 20);
        let err = cache.get_or_load("e", || panic!("boom")).unwrap_err();
        assert!(err.to_string().contains("panicked"), "{err}");
        assert!(cache.get_or_load("e", || index(1)).is_ok());
    }
}
