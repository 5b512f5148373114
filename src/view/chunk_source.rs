//! Where the view gets decoded chunks: through the cache, which runs the fetch stage on a miss
//! and keeps the shard indexes the fetch stage reads, within the same budget.

use super::{GridGeometry, SendBytes};
use crate::cache::read_ahead::{Job, Reading, Source};
use crate::cache::{ChunkCache, ChunkData, ChunkError, ChunkId, Keep, User};
use crate::codec::Target;
use crate::fetch::{
    ChunkReader, Encoded, FetchCause, FetchContext, FetchError, Landed, Loaded, ShardIndexIfStored,
    StoredChunk, StoredIndex,
};
use std::ops::Range;
use std::sync::Arc;

/// The cache lent to one fetch of array number `array`.
struct CacheContext<'a> {
    cache: &'a ChunkCache,
    array: u32,
}

impl FetchContext for CacheContext<'_> {
    fn buffer(&self, len: usize) -> Vec<u8> {
        crate::memory::buffers().take(len)
    }

    fn recycle(&self, buf: Vec<u8>) {
        crate::memory::buffers().give(buf)
    }

    fn shard_index(
        &self,
        key: &str,
        load: &mut dyn FnMut() -> Result<ShardIndexIfStored, FetchError>,
    ) -> Result<ShardIndexIfStored, FetchError> {
        self.cache
            .get_or_load_index(self.array, key, || load().map_err(ChunkError::new))
            .map_err(fetch_error)
    }

    fn forget_shard_index(&self, key: &str, stale: &Arc<StoredIndex>) {
        self.cache.forget_index(self.array, key, stale);
    }

    fn stored_chunk(
        &self,
        key: &str,
        load: &mut dyn FnMut() -> Result<StoredChunk, FetchError>,
    ) -> Result<StoredChunk, FetchError> {
        self.cache
            .get_or_load_stored(self.array, key, || load().map_err(ChunkError::new))
            .map_err(fetch_error)
    }

    fn carry(&self, bytes: u64) {
        self.cache.ledger().carry(bytes);
    }

    fn carried(&self, bytes: u64) {
        self.cache.ledger().carried(bytes);
    }
}

/// The fetch stage's own error back from the cache, or the panic of its loader.
fn fetch_error(e: ChunkError) -> FetchError {
    match e.downcast_ref::<FetchError>() {
        Some(f) => f.clone(),
        None => FetchError::new(FetchCause::Panicked, e.to_string()),
    }
}

/// Where [`ChunkSource::load`] puts a chunk's decoded bytes.
pub(super) enum Dest<'a> {
    /// Into the cache, and into this slot (`None`: absent, all fill value).
    Cache(&'a mut ChunkData),
    /// Into the cache, bytes `range` handed to the callback once, as soon as they are
    /// decoded: from the cache; from the chunk another reader decodes front to back; or
    /// decoding it here (front to back where its codec allows), the decode then going on to
    /// the chunk's end.
    Send(Range<usize>, SendBytes<'a>),
    /// Straight into the caller's room, leaving no cache entry, decoding the stored bytes
    /// when given (the read-ahead fetched them: see [`ChunkSource::claim`]).
    Room(Target<'a>, Option<Encoded>),
}

/// One array's chunks: its number in the cache, its reader and its read grid, and the file
/// handle its reads come through (0: none), told to the cache (see [`User`]).
#[derive(Clone)]
pub(super) struct ChunkSource {
    pub id: u32,
    pub reader: Arc<ChunkReader>,
    pub layout: Arc<GridGeometry>,
    pub handle: u64,
}

/// The read-ahead loads chunks the way readers do, from bytes it fetched apart.
impl Source for ChunkSource {
    fn fetch(&self, cache: &ChunkCache, indexes: &[u64], landed: Landed<'_, Option<Encoded>>) {
        let ctx = CacheContext {
            cache,
            array: self.id,
        };
        let idxs: Vec<Vec<u64>> = indexes
            .iter()
            .map(|&i| self.layout.chunk_coords(i))
            .collect();
        self.reader.fetch(&idxs, &ctx, landed);
    }

    fn group(&self, index: u64) -> Option<u64> {
        let shard = self.reader.shard_of(&self.layout.chunk_coords(index))?;
        Some(shard.iter().fold(0u64, |at, &i| {
            at.wrapping_mul(0x100_0000_01b3).wrapping_add(i)
        }))
    }

    fn load(&self, cache: &ChunkCache, index: u64, encoded: Option<Encoded>) {
        let _ = self.cached(cache, index, encoded, Some(&mut |_| {}), User::ReadAhead);
    }
}

impl ChunkSource {
    /// These chunks, read through file handle `fh`.
    pub(super) fn through(&self, fh: u64) -> Self {
        ChunkSource {
            handle: fh,
            ..self.clone()
        }
    }

    /// Who its reads are to the cache.
    pub(super) fn user(&self) -> User {
        User::Reader(self.handle)
    }

    /// The cache's name of chunk `chunk`.
    pub(super) fn id(&self, chunk: u64) -> ChunkId {
        ChunkId {
            array: self.id,
            index: chunk,
        }
    }

    /// Read-ahead jobs loading `chunks` into the cache, in order.
    pub fn jobs(&self, chunks: &[u64]) -> Vec<Job> {
        let shared = Arc::new(self.clone());
        let bytes = self.reader.cached_bytes_per_chunk().max(1);
        let job = |&chunk: &u64| Job::chunk(self.id(chunk), bytes, shared.clone());
        chunks.iter().map(job).collect()
    }

    /// What a reader about to load chunk `chunk` gets from the read-ahead: a hold on the chunk
    /// to keep while loading it, and the chunk's bytes when it fetched them (the reader decodes
    /// them), after waiting for a fetch or decode of it under way (see
    /// [`crate::cache::read_ahead::Ledger::claim`]).
    pub fn claim<'a>(&self, cache: &'a ChunkCache, chunk: u64) -> (Reading<'a>, Option<Encoded>) {
        cache.ledger().claim(self.id(chunk))
    }

    /// Loads chunk `chunk` (linear index in the read grid) where `dest` says: `Decoded` when
    /// its bytes went there, `Absent` when the store holds no such chunk (and, for
    /// [`Dest::Send`], when the chunk is shorter: nothing was sent), `Unsuited` when the room of
    /// [`Dest::Room`] does not suit this array's chunks.
    pub fn load(&self, cache: &ChunkCache, chunk: u64, dest: Dest) -> Result<Loaded, ChunkError> {
        let (range, send) = match dest {
            Dest::Cache(slot) => {
                let (_reading, encoded) = self.claim(cache, chunk);
                *slot = self.cached(cache, chunk, encoded, None, self.user())?;
                return Ok(slot.as_ref().map_or(Loaded::Absent, |_| Loaded::Decoded));
            }
            Dest::Room(target, encoded) => return self.decode(cache, chunk, encoded, target),
            Dest::Send(range, send) => (range, send),
        };
        if let Some(growing) = cache.growing(self.id(chunk), self.user()) {
            if let Some(bytes) = growing
                .wait_prefix(range.end)
                .and_then(|d| d.get(range.clone()))
            {
                send(bytes);
                return Ok(Loaded::Decoded);
            }
        }
        let mut pending = Some(send);
        let (_reading, encoded) = self.claim(cache, chunk);
        let mut watch = |done: &[u8]| {
            if let (Some(bytes), Some(send)) = (done.get(range.clone()), pending.as_mut()) {
                send(bytes);
                pending = None;
            }
        };
        let data = self.cached(cache, chunk, encoded, Some(&mut watch), self.user())?;
        let Some(send) = pending else {
            return Ok(Loaded::Decoded);
        };
        let sent = data.as_deref().and_then(|d| d.get(range)).map(send);
        Ok(sent.map_or(Loaded::Absent, |()| Loaded::Decoded))
    }

    /// Chunk `chunk` for `user` from the cache, or loaded into it (decoding `encoded` when given). With
    /// `watch`, front to back when its codec allows that at no cost, so that readers may use
    /// its first bytes meanwhile (through [`ChunkCache::growing`]), `watch` seeing the decoded
    /// part grow when this call decodes the chunk so.
    fn cached(
        &self,
        cache: &ChunkCache,
        chunk: u64,
        encoded: Option<Encoded>,
        watch: Option<SendBytes>,
        user: User,
    ) -> Result<ChunkData, ChunkError> {
        let keep = match (watch, self.reader.progressive_len()) {
            (Some(watch), Some(len)) => Keep::Growing(len, watch),
            _ => Keep::Whole(self.reader.cached_bytes_per_chunk()),
        };
        cache.get_or_load(self.id(chunk), user, keep, |target| {
            match self.decode(cache, chunk, encoded, target)? {
                Loaded::Decoded => Ok(true),
                Loaded::Absent => Ok(false),
                Loaded::Unsuited => Err(ChunkError::new(FetchError::new(
                    FetchCause::BadConfig,
                    "the chunk cannot be decoded front to back".to_string(),
                ))),
            }
        })
    }

    /// Chunk `chunk` fetched (unless `encoded` holds its stored bytes) and decoded into
    /// `target`, lending the reader the cache (see [`ChunkReader::load`]).
    fn decode(
        &self,
        cache: &ChunkCache,
        chunk: u64,
        encoded: Option<Encoded>,
        target: Target,
    ) -> Result<Loaded, ChunkError> {
        let ctx = CacheContext {
            cache,
            array: self.id,
        };
        let coords = self.layout.chunk_coords(chunk);
        let loaded = self.reader.load(&coords, encoded, target, &ctx);
        loaded.map_err(ChunkError::new)
    }
}
