//! What a fetch borrows from the stages above it.

use super::{FetchError, ShardIndexIfStored, StoredIndex};
use std::sync::Arc;

/// A decoded stored chunk: `None` when the store holds no such chunk (it reads as the fill
/// value).
pub type StoredChunk = Option<Arc<Vec<u8>>>;

/// Decode buffers, a keeper of shard indexes and decoded stored chunks, and a count of the
/// bytes of requests in flight, lent by whoever caches (the view wires the chunk cache and its
/// read-ahead in); [`Uncached`] lends nothing.
pub trait FetchContext: Sync {
    /// A buffer of exactly `len` bytes to decode into (its old contents are overwritten): a
    /// fresh one unless the lender keeps some.
    fn buffer(&self, len: usize) -> Vec<u8> {
        vec![0; len]
    }
    /// Takes back a buffer a failed decode did not use (dropped unless the lender keeps it).
    fn recycle(&self, _buf: Vec<u8>) {}
    /// The index of shard `key`: kept from before, or from `load`, which is run at most once
    /// however many readers ask at the same time. Keeps nothing unless the lender does: runs
    /// `load`.
    fn shard_index(
        &self,
        _key: &str,
        load: &mut dyn FnMut() -> Result<ShardIndexIfStored, FetchError>,
    ) -> Result<ShardIndexIfStored, FetchError> {
        load()
    }
    /// Forgets the kept index of shard `key` if it is `stale` (the shard changed since it was
    /// read), so that the next [`FetchContext::shard_index`] reads it again.
    fn forget_shard_index(&self, _key: &str, _stale: &Arc<StoredIndex>) {}
    /// The decoded stored chunk `key` of a rectilinear grid, which holds several read chunks:
    /// kept from before, or from `load`, which is run at most once however many readers ask at
    /// the same time. Keeps nothing unless the lender does: runs `load`.
    fn stored_chunk(
        &self,
        _key: &str,
        load: &mut dyn FnMut() -> Result<StoredChunk, FetchError>,
    ) -> Result<StoredChunk, FetchError> {
        load()
    }
    /// Counts `bytes` of a request in flight (a ranged read's whole span, gaps included) until
    /// [`FetchContext::carried`] of as many.
    fn carry(&self, _bytes: u64) {}
    /// `bytes` counted by [`FetchContext::carry`] are handed out: no longer in flight.
    fn carried(&self, _bytes: u64) {}
}

/// Fresh buffers, no shard index kept: every fetch goes to the store.
pub struct Uncached;

impl FetchContext for Uncached {}
