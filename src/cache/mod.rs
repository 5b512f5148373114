//! Decoded chunks: one LRU shared by every reader, bounded in bytes, loading each chunk once
//! however many readers want it at the same time.

mod buffer_pool;
mod chunk_cache;
mod chunk_reader;
mod flight_lru;
mod prefetch;
mod shard_index;
mod shard_reader;

pub use buffer_pool::BufferPool;
pub use chunk_cache::{ChunkCache, ChunkId};
pub use chunk_reader::ChunkReader;
pub use flight_lru::CacheStats;
pub use prefetch::{Job, Prefetcher};

use std::fmt;
use std::sync::Arc;

/// A decoded chunk: `None` when the store holds no such chunk (it reads as the fill value).
pub type ChunkData = Option<Arc<Vec<u8>>>;

/// Why a chunk could not be loaded; cheap to clone, so every waiting reader gets it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkError(Arc<str>);

impl ChunkError {
    /// An error with the given message (which names the node and the cause).
    pub fn new(msg: impl Into<String>) -> Self {
        ChunkError(Arc::from(msg.into()))
    }
}

impl fmt::Display for ChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ChunkError {}
