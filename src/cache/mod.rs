//! Decoded chunks and shard indexes: one LRU shared by every reader, bounded by one byte budget,
//! loading each entry once however many readers want it at the same time.

mod chunk_cache;
mod decoding;
pub mod read_ahead;
mod users;

pub use crate::store::CacheStats;
pub use chunk_cache::{ChunkCache, ChunkId, Keep};
pub use users::User;

use std::error::Error;
use std::sync::Arc;

/// A decoded chunk: `None` when the store holds no such chunk (it reads as the fill value).
pub type ChunkData = Option<Arc<Vec<u8>>>;

/// Why an entry could not be loaded; cheap to clone, so every waiting reader gets it. It holds
/// the loader's own error (see [`ChunkError::downcast_ref`]), or says the loader panicked.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{0}")]
pub struct ChunkError(Arc<dyn Error + Send + Sync>);

/// The error of a loader that panicked.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Panicked(pub String);

impl ChunkError {
    /// Wraps the loader's error `e`.
    pub fn new(e: impl Error + Send + Sync + 'static) -> Self {
        ChunkError(Arc::new(e))
    }

    /// The loader's error, when it is a `T`.
    pub fn downcast_ref<T: Error + 'static>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl PartialEq for ChunkError {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}
