//! Where the view gets decoded chunks: through the cache, which runs the fetch stage on a miss
//! and keeps the shard indexes the fetch stage reads, within the same budget.

use super::Layout;
use crate::cache::{ChunkCache, ChunkData, ChunkError, ChunkId};
use crate::fetch::{ChunkReader, FetchCause, FetchContext, FetchError, Index};
use std::sync::Arc;

/// The cache lent to one fetch of array number `array`.
struct CacheContext<'a> {
    cache: &'a ChunkCache,
    array: u32,
}

impl FetchContext for CacheContext<'_> {
    fn buffer(&self, len: usize) -> Vec<u8> {
        self.cache.pool().take(len)
    }

    fn recycle(&self, buf: Vec<u8>) {
        self.cache.pool().give(buf)
    }

    fn shard_index(
        &self,
        key: &str,
        load: &mut dyn FnMut() -> Result<Index, FetchError>,
    ) -> Result<Index, FetchError> {
        self.cache
            .get_or_load_index(self.array, key, || load().map_err(ChunkError::new))
            .map_err(|e| match e.downcast_ref::<FetchError>() {
                Some(f) => f.clone(),
                None => FetchError::new(FetchCause::Panicked, e.to_string()),
            })
    }
}

/// One array's chunks: its number in the cache, its reader and its read grid.
#[derive(Clone)]
pub(super) struct ChunkSource {
    pub id: u32,
    pub reader: Arc<ChunkReader>,
    pub layout: Arc<Layout>,
}

impl ChunkSource {
    /// Chunk `chunk` (linear index in the read grid), from the cache or fetched into it.
    pub fn chunk(&self, cache: &ChunkCache, chunk: u64) -> Result<ChunkData, ChunkError> {
        let id = ChunkId {
            array: self.id,
            index: chunk,
        };
        cache.get_or_load(id, || {
            let ctx = CacheContext {
                cache,
                array: self.id,
            };
            self.reader
                .load(&self.layout.chunk_coords(chunk), &ctx)
                .map(|data| data.map(Arc::new))
                .map_err(ChunkError::new)
        })
    }
}
