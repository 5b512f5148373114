//! Getting one chunk's decoded bytes: the whole chunk object, or a shard's index then one inner
//! range, decoded through [`crate::codec`]. Nothing here caches: the stages above lend a
//! [`FetchContext`] (decode buffers, a place to keep shard indexes) and keep what comes back.

mod chunk_reader;
mod context;
mod error;
mod fetched;
mod listed;
mod shard_reader;

pub use chunk_reader::{ChunkReader, Encoded, Loaded};
pub use context::{FetchContext, StoredChunk, Uncached};
pub use error::{FetchCause, FetchError};

use crate::codec::ShardIndex;
use std::sync::Arc;

/// A shard's decoded index and the version of the shard it was read from.
#[derive(Debug, PartialEq, Eq)]
pub struct StoredIndex {
    /// Where each inner chunk lies in the shard.
    pub index: ShardIndex,
    /// The shard's strong ETag when the index was read, where the store gave one: its inner
    /// chunks are read from that version only.
    pub tag: Option<String>,
}

/// A shard's decoded index: `None` when the store holds no such shard.
pub type ShardIndexIfStored = Option<Arc<StoredIndex>>;

/// Where a fetch of several chunks hands each chunk's answer, by the chunk's position among
/// those asked for, as soon as it has it (from whichever thread got it).
pub type Landed<'a, T> = &'a (dyn Fn(usize, Result<T, FetchError>) + Sync);
