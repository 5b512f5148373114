//! The decoded chunks one read keeps at hand while its pieces alternate between a few of them,
//! and the one check every copy out of a decoded chunk makes.

use super::chunk_source::{ChunkSource, Dest};
use super::error::chunk_failed;
use super::{IoCause, ViewError};
use crate::cache::{ChunkCache, ChunkData};
use crate::memory::filling::FillingBuffer;
use std::sync::Arc;

/// A chunk held: decoded, or still being decoded front to back by a read-ahead worker.
enum Held {
    Whole(ChunkData),
    Growing(Arc<FillingBuffer>),
}

/// Up to `max` decoded chunks, the oldest dropped first.
pub(super) struct HeldChunks {
    held: Vec<(u64, Held)>,
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

    fn hold(&mut self, chunk: u64, held: Held) -> usize {
        if self.held.len() == self.max {
            self.held.remove(0);
        }
        self.held.push((chunk, held));
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
