//! The decoded chunks one read keeps at hand while its pieces alternate between a few of them
//! (within an eighth of the cache: a chunk held may have left the cache), and the one check
//! every copy out of a decoded chunk makes.

use super::chunk_source::{ChunkSource, Dest};
use super::error::chunk_failed;
use super::{IoCause, ViewError};
use crate::cache::{ChunkCache, ChunkData};
use crate::memory::filling::FillingBuffer;
use std::sync::Arc;

/// The share of the cache budget one read holds at most (besides the chunk it uses).
const BUDGET_SHARE: u64 = 8;

/// A chunk held: decoded, or still being decoded front to back by a read-ahead worker.
enum Held {
    Whole(ChunkData),
    Growing(Arc<FillingBuffer>),
}

impl Held {
    /// Bytes it holds.
    fn size(&self) -> u64 {
        match self {
            Held::Whole(data) => data.as_ref().map_or(0, |d| d.capacity() as u64),
            Held::Growing(chunk) => chunk.size() as u64,
        }
    }
}

/// Up to `max` decoded chunks within `max_bytes` (at least one chunk), the oldest dropped
/// first.
pub(super) struct HeldChunks {
    held: Vec<(u64, Held)>,
    max: usize,
    max_bytes: u64,
}

impl HeldChunks {
    /// Room for `max` chunks (at least one) within a share of `cache`'s budget.
    pub fn new(max: usize, cache: &ChunkCache) -> Self {
        HeldChunks {
            held: Vec::new(),
            max: max.max(1),
            max_bytes: cache.budget() / BUDGET_SHARE,
        }
    }

    /// True when `chunks` chunks of `chunk_bytes` bytes can be held together.
    pub fn keeps(&self, chunks: u64, chunk_bytes: u64) -> bool {
        chunks <= self.max as u64 && chunks.saturating_mul(chunk_bytes) <= self.max_bytes
    }

    fn hold(&mut self, chunk: u64, held: Held) -> usize {
        self.held.push((chunk, held));
        let mut bytes: u64 = self.held.iter().map(|(_, h)| h.size()).sum();
        while self.held.len() > 1 && (self.held.len() > self.max || bytes > self.max_bytes) {
            bytes -= self.held.remove(0).1.size();
        }
        self.held.len() - 1
    }

    /// Chunk `chunk` (`None`: absent, all fill value), held or fetched through `source`.
    pub fn get(
        &mut self,
        source: &ChunkSource,
        cache: &ChunkCache,
        chunk: u64,
    ) -> Result<ChunkData, ViewError> {
        let whole = self.held.iter().rev().find_map(|(c, held)| match held {
            Held::Whole(data) if *c == chunk => Some(data),
            _ => None,
        });
        if let Some(data) = whole {
            return Ok(data.clone());
        }
        let data = cached(source, cache, chunk)?;
        self.hold(chunk, Held::Whole(data.clone()));
        Ok(data)
    }

    /// Bytes `at..at+len` of decoded chunk `chunk` of `node` (`None`: the chunk is absent, all
    /// fill value): from a held chunk, from the cache, or, while a read-ahead worker decodes
    /// the chunk front to back, as soon as its decoded part covers them.
    pub fn bytes(
        &mut self,
        source: &ChunkSource,
        cache: &ChunkCache,
        chunk: u64,
        (at, len): (usize, usize),
        node: &str,
    ) -> Result<Option<&[u8]>, ViewError> {
        let end = at.saturating_add(len);
        let slot = match self.held.iter().rposition(|(c, _)| *c == chunk) {
            Some(slot) => slot,
            None => match cache.growing(source.id(chunk), source.user()) {
                Some(growing) => self.hold(chunk, Held::Growing(growing)),
                None => self.hold(chunk, Held::Whole(cached(source, cache, chunk)?)),
            },
        };
        if let Held::Growing(growing) = &self.held[slot].1 {
            if growing.wait_prefix(end).is_none() {
                // The decode failed: the cache loads the chunk again, or says why.
                self.held[slot].1 = Held::Whole(cached(source, cache, chunk)?);
            }
        }
        let data = match &self.held[slot].1 {
            Held::Whole(None) => return Ok(None),
            Held::Whole(Some(data)) => data.as_slice(),
            // Failed since the wait above: what it decoded is not served.
            Held::Growing(growing) => growing.wait_prefix(end).ok_or_else(|| {
                log::error!("{node}: chunk {chunk} failed to decode while it was read");
                ViewError::Io(IoCause::Corrupt)
            })?,
        };
        chunk_bytes(data, at, len, node, chunk).map(Some)
    }
}

/// Chunk `c` (`None`: absent) from the cache, or loaded into it.
pub fn cached(source: &ChunkSource, cache: &ChunkCache, c: u64) -> Result<ChunkData, ViewError> {
    let mut data = None;
    let loaded = source.load(cache, c, Dest::Cache(&mut data));
    loaded.map_err(chunk_failed)?;
    Ok(data)
}

/// Bytes `at..at+len` of decoded chunk `chunk` of `node`; a chunk that decoded to fewer bytes
/// is corrupt (EIO, logged).
fn chunk_bytes<'a>(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_within_a_share_of_the_cache_and_at_least_one_chunk() {
        let cache = ChunkCache::new(8 * 1000);
        let mut held = HeldChunks::new(64, &cache);
        let chunk = |n| Held::Whole(Some(Arc::new(vec![0u8; n])));
        let chunks = |held: &HeldChunks| held.held.iter().map(|h| h.0).collect::<Vec<_>>();
        for c in 0..3 {
            held.hold(c, chunk(400));
        }
        assert_eq!(chunks(&held), [1, 2], "1000 bytes at most");
        held.hold(9, chunk(5000));
        assert_eq!(chunks(&held), [9], "one chunk whatever its size");
        assert!(held.keeps(2, 500) && !held.keeps(3, 500) && !held.keeps(65, 1));
    }
}
