//! Fetching and decoding one chunk of one array.

use super::{ChunkData, ChunkError};
use crate::codec::Pipeline;
use crate::meta::ArrayMeta;
use crate::store::Store;
use std::sync::Arc;

/// Knows where an array's chunks live and how to decode them.
pub struct ChunkReader {
    store: Arc<dyn Store>,
    path: String,
    meta: Arc<ArrayMeta>,
    pipeline: Pipeline,
}

impl ChunkReader {
    /// A reader for the array at `path`; fails when its codec chain cannot be built.
    pub fn new(store: Arc<dyn Store>, path: &str, meta: Arc<ArrayMeta>) -> Result<Self, String> {
        let pipeline = Pipeline::new(&meta.codecs, &meta.dtype, &meta.chunk_shape)
            .map_err(|e| e.to_string())?;
        Ok(ChunkReader {
            store,
            path: path.to_string(),
            meta,
            pipeline,
        })
    }

    /// The array's metadata.
    pub fn meta(&self) -> &ArrayMeta {
        &self.meta
    }

    /// Fetches and decodes the chunk at grid index `idx`; `Ok(None)` when the store has none.
    pub fn load(&self, idx: &[u64]) -> Result<ChunkData, ChunkError> {
        let key = self.meta.chunk_keys.key(idx);
        let fail = |cause: String| {
            ChunkError::new(format!("{}: chunk {key}: {cause}", self.display_path()))
        };
        let Some(encoded) = self.store.get(&key).map_err(|e| fail(e.to_string()))? else {
            return Ok(None);
        };
        let decoded = self
            .pipeline
            .decode(&encoded)
            .map_err(|e| fail(e.to_string()))?;
        Ok(Some(Arc::new(decoded)))
    }

    fn display_path(&self) -> &str {
        if self.path.is_empty() {
            "/"
        } else {
            &self.path
        }
    }
}
