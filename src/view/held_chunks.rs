//! The decoded chunks one read keeps at hand while its pieces alternate between a few of them,
//! and the one check every copy out of a decoded chunk makes.

use super::chunk_source::ChunkSource;
use super::error::chunk_failed;
use super::{IoCause, ViewError};
use crate::cache::{ChunkCache, ChunkData};

/// Up to `max` decoded chunks, the oldest dropped first.
pub(super) struct HeldChunks {
    held: Vec<(u64, ChunkData)>,
    max: usize,
}

impl HeldChunks {
    /// Room for `max` chunks (at least one).
    pub fn new(max: usize) -> Self {
        HeldChunks {
            held: Vec::new(),
            max: max.max(1),
        }
    }

    /// True when chunk `chunk` is held.
    pub fn contains(&self, chunk: u64) -> bool {
        self.held.iter().any(|(c, _)| *c == chunk)
    }

    /// Chunk `chunk` (`None`: absent, all fill value), held or fetched through `source`.
    pub fn get(
        &mut self,
        source: &ChunkSource,
        cache: &ChunkCache,
        chunk: u64,
    ) -> Result<&ChunkData, ViewError> {
        let slot = match self.held.iter().rposition(|(c, _)| *c == chunk) {
            Some(slot) => slot,
            None => {
                if self.held.len() == self.max {
                    self.held.remove(0);
                }
                let data = source.chunk(cache, chunk).map_err(chunk_failed)?;
                self.held.push((chunk, data));
                self.held.len() - 1
            }
        };
        Ok(&self.held[slot].1)
    }
}

/// Bytes `at..at+len` of decoded chunk `chunk` of `node`; a chunk that decoded to fewer bytes
/// is corrupt (EIO, logged).
pub(super) fn chunk_bytes<'a>(
    data: &'a [u8],
    at: usize,
    len: usize,
    node: &str,
    chunk: u64,
) -> Result<&'a [u8], ViewError> {
    data.get(at..at.saturating_add(len)).ok_or_else(|| {
        log::error!(
            "{node}: chunk {chunk} decoded to {} bytes, too few",
            data.len()
        );
        ViewError::Io(IoCause::Corrupt)
    })
}
