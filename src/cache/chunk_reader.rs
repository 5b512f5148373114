//! Fetching and decoding one chunk of one array: a stored chunk, or for a sharded array one
//! inner chunk of a shard.

use super::shard_reader::ShardReader;
use super::{BufferPool, ChunkData, ChunkError};
use crate::codec::{Pipeline, ShardedArray};
use crate::meta::{ArrayMeta, MAX_CHUNK_BYTES};
use crate::store::Store;
use std::sync::Arc;

/// How an array's read chunks are decoded.
enum Decoder {
    /// Each stored chunk is one read chunk, decoded whole.
    Whole(Pipeline),
    /// The read chunks are the inner chunks of shards, read by byte range.
    Sharded(Box<ShardReader>),
}

/// Knows where an array's chunks live and how to decode them.
pub struct ChunkReader {
    store: Arc<dyn Store>,
    path: String,
    meta: Arc<ArrayMeta>,
    decoder: Decoder,
}

impl ChunkReader {
    /// A reader for the array at `path`; fails when its codec chain cannot be built.
    pub fn new(store: Arc<dyn Store>, path: &str, meta: Arc<ArrayMeta>) -> Result<Self, String> {
        let sharded = ShardedArray::new(
            &meta.codecs,
            &meta.dtype,
            &meta.fill_value,
            &meta.chunk_shape,
        )
        .map_err(|e| e.to_string())?;
        let decoder = match sharded {
            Some(array) => Decoder::Sharded(Box::new(ShardReader::new(array))),
            None => Decoder::Whole(
                Pipeline::new(&meta.codecs, &meta.dtype, &meta.chunk_shape)
                    .map_err(|e| e.to_string())?,
            ),
        };
        let reader = ChunkReader {
            store,
            path: path.to_string(),
            meta,
            decoder,
        };
        let bytes = reader
            .read_chunk_shape()
            .iter()
            .try_fold(reader.meta.dtype.size().max(1) as u64, |acc, &d| {
                acc.checked_mul(d)
            })
            .filter(|&b| b <= MAX_CHUNK_BYTES);
        if bytes.is_none() {
            return Err(format!(
                "chunk shape {:?} is too large to decode (over {} GiB)",
                reader.read_chunk_shape(),
                MAX_CHUNK_BYTES >> 30
            ));
        }
        Ok(reader)
    }

    /// The array's metadata.
    pub fn meta(&self) -> &ArrayMeta {
        &self.meta
    }

    /// The shape of the chunks [`ChunkReader::load`] returns, which tile the array: the inner
    /// chunk shape for a sharded array, else the array's chunk shape.
    pub fn read_chunk_shape(&self) -> &[u64] {
        match &self.decoder {
            Decoder::Whole(_) => &self.meta.chunk_shape,
            Decoder::Sharded(shards) => shards.read_chunk_shape(),
        }
    }

    /// Fetches and decodes the read chunk at grid index `idx` (in the grid of
    /// [`ChunkReader::read_chunk_shape`]): exactly that shape's size in bytes, or `Ok(None)` when
    /// the store has none (it reads as the fill value).
    pub fn load(&self, idx: &[u64], pool: &BufferPool) -> Result<ChunkData, ChunkError> {
        let pipeline = match &self.decoder {
            Decoder::Whole(pipeline) => pipeline,
            Decoder::Sharded(shards) => {
                let keys = &self.meta.chunk_keys;
                return shards.load(&*self.store, keys, self.display_path(), idx);
            }
        };
        let key = self.meta.chunk_keys.key(idx);
        let fail = |cause: String| {
            ChunkError::new(format!("{}: chunk {key}: {cause}", self.display_path()))
        };
        let Some(encoded) = self.store.get(&key).map_err(|e| fail(e.to_string()))? else {
            return Ok(None);
        };
        let encoded = encoded.bytes;
        if self.meta.dtype.is_variable() {
            let decoded = pipeline.decode(&encoded).map_err(|e| fail(e.to_string()))?;
            return Ok(Some(Arc::new(decoded)));
        }
        let mut buf = pool.take(pipeline.decoded_len());
        match pipeline.decode_into(&encoded, &mut buf) {
            Ok(()) => Ok(Some(Arc::new(buf))),
            Err(e) => {
                pool.give(buf);
                Err(fail(e.to_string()))
            }
        }
    }

    /// Decodes the stored chunk at `idx` straight into `out` (exactly one decoded chunk), with no
    /// intermediate buffer and no caching. `Ok(None)` when this array cannot do that (sharded or
    /// variable-length); `Ok(Some(false))` when the chunk is absent (it reads as fill value).
    pub fn load_into(&self, idx: &[u64], out: &mut [u8]) -> Result<Option<bool>, ChunkError> {
        let Decoder::Whole(pipeline) = &self.decoder else {
            return Ok(None);
        };
        if self.meta.dtype.is_variable() || pipeline.decoded_len() != out.len() {
            return Ok(None);
        }
        let key = self.meta.chunk_keys.key(idx);
        let fail = |cause: String| {
            ChunkError::new(format!("{}: chunk {key}: {cause}", self.display_path()))
        };
        let Some(encoded) = self.store.get(&key).map_err(|e| fail(e.to_string()))? else {
            return Ok(Some(false));
        };
        let encoded = encoded.bytes;
        pipeline
            .decode_into(&encoded, out)
            .map_err(|e| fail(e.to_string()))?;
        Ok(Some(true))
    }

    fn display_path(&self) -> &str {
        if self.path.is_empty() {
            "/"
        } else {
            &self.path
        }
    }
}
