//! Fetching and decoding one chunk of one array: a stored chunk, or for a sharded array one
//! inner chunk of a shard.

use super::fetched::Fetched;
use super::listed::Listed;
use super::shard_reader::ShardReader;
use super::{FetchCause, FetchContext, FetchError, Landed};
use crate::codec::{copy_box, CodecError, Pipeline, ShardIndex, ShardedArray, Target};
use crate::meta::{ArrayMeta, ChunkGrid, MAX_CHUNK_BYTES};
use crate::stats::STATS;
use crate::store::{shown_key, Store};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Slack on top of twice the largest form of a chunk, for an encoded object's size bound.
const OBJECT_SLACK: u64 = 64 << 10;

/// What [`ChunkReader::load`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loaded {
    /// The chunk is decoded into the target.
    Decoded,
    /// The store holds no such chunk: it reads as the fill value; the target is left alone.
    Absent,
    /// This array's chunks do not decode into that room (see [`ChunkReader::load`]): nothing
    /// was fetched; an owned buffer takes them.
    Unsuited,
}

impl Loaded {
    /// A chunk loaded into a buffer of its own, put in `out`.
    fn put(chunk: Option<Vec<u8>>, out: &mut Vec<u8>) -> Self {
        match chunk {
            Some(chunk) => {
                *out = chunk;
                Loaded::Decoded
            }
            None => Loaded::Absent,
        }
    }
}

/// A chunk's stored bytes, fetched apart from their decoding (see [`ChunkReader::fetch`]), so
/// that requests can wait on the network while other threads decode.
pub struct Encoded(Option<Fetched>);

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
    /// Bytes of one decoded read chunk (0 for variable-length elements).
    chunk_bytes: u64,
    /// The largest stored object (whole chunk, or inner chunk range of a shard) this array
    /// accepts; larger ones are refused before they are read. Twice the largest form the chunk
    /// takes along its codec chain (decoded, serialized, between bytes codecs: this accounts for
    /// type-changing filters) plus 64 KiB: no compressor expands data by more than about 1% plus
    /// a header of at most a few hundred bytes (zstd, lz4, deflate, bzip2, blosc), checksums add
    /// at most 8 bytes and base64 a third. Variable-length chunks have no such bound and get
    /// [`MAX_CHUNK_BYTES`].
    max_object: u64,
    /// What [`ChunkReader::cached_bytes_per_chunk`] answers, worked out once.
    cached_bytes: u64,
    /// The objects a listing of the array showed: an absent answer for one of them is a fault.
    listed: Listed,
}

/// The most shard shapes a rectilinear grid may combine (each gets its own shard reading).
const MAX_SHARD_SHAPES: usize = 4096;

/// The reader of the uneven shards of a rectilinear grid (`array` reads its largest shard):
/// every shard edge must hold whole inner chunks, so that they tile the array regularly.
fn rectilinear_shards(meta: &ArrayMeta, array: ShardedArray) -> Result<ShardReader, FetchError> {
    let ChunkGrid::Rectilinear(edges) = &meta.grid else {
        return Ok(ShardReader::new(array));
    };
    let inner = array.read_chunk_shape().to_vec();
    let mut shapes: Vec<Vec<u64>> = vec![Vec::new()];
    for (axis, &n) in edges.lengths().iter().zip(&inner) {
        let mut sizes: Vec<u64> = axis.clone();
        sizes.sort_unstable();
        sizes.dedup();
        if let Some(bad) = sizes.iter().find(|&&e| e % n != 0) {
            return Err(FetchError::new(
                FetchCause::BadConfig,
                format!("shard edge {bad} does not hold whole inner chunks of {n}"),
            ));
        }
        shapes = shapes
            .iter()
            .flat_map(|s| sizes.iter().map(move |&e| [s.as_slice(), &[e]].concat()))
            .collect();
        if shapes.len() > MAX_SHARD_SHAPES {
            return Err(FetchError::new(
                FetchCause::BadConfig,
                format!("more than {MAX_SHARD_SHAPES} shard shapes"),
            ));
        }
    }
    let by_shape = shapes
        .into_iter()
        .map(|shape| {
            let reading = ShardedArray::new(&meta.codecs, &meta.dtype, &meta.fill_value, &shape)?;
            Ok((
                shape,
                reading.ok_or(CodecError::Unsupported("sharding".into()))?,
            ))
        })
        .collect::<Result<Vec<_>, CodecError>>()?;
    Ok(ShardReader::rectilinear(array, meta.grid.clone(), by_shape))
}

/// Runs `load`, turning a panic (in a decoder, or in the store below) into an error: a bug
/// there fails one read, never a thread.
fn catch_panic_as_error<T>(load: impl FnOnce() -> Result<T, FetchError>) -> Result<T, FetchError> {
    catch_unwind(AssertUnwindSafe(load))
        .unwrap_or_else(|_| Err(FetchError::new(FetchCause::Panicked, "panicked")))
}

impl ChunkReader {
    /// A reader for the array at `path`; fails when its codec chain cannot be built or its
    /// read chunks are larger than [`MAX_CHUNK_BYTES`].
    pub fn new(
        store: Arc<dyn Store>,
        path: &str,
        meta: Arc<ArrayMeta>,
    ) -> Result<Self, FetchError> {
        let largest = meta.grid.largest_chunk(&meta.chunk_shape);
        let sharded = ShardedArray::new(&meta.codecs, &meta.dtype, &meta.fill_value, &largest)?;
        let rectilinear = meta.grid != ChunkGrid::Regular;
        if rectilinear && meta.dtype.is_variable() {
            return Err(FetchError::new(
                FetchCause::Unsupported,
                "variable-length elements in a rectilinear chunk grid",
            ));
        }
        // The most an inner chunk of a shard may take: through widening codecs, or as a shard
        // of its own (unknown), more than decoded.
        let inner_largest = |a: &ShardedArray| {
            a.inner_largest_form_len()
                .map_or(MAX_CHUNK_BYTES, |n| n as u64)
        };
        let (decoder, largest_form) = match sharded {
            Some(array) if rectilinear => {
                let largest = inner_largest(&array);
                let reader = rectilinear_shards(&meta, array)?;
                (Decoder::Sharded(Box::new(reader)), largest)
            }
            Some(array) => {
                let largest = inner_largest(&array);
                (Decoder::Sharded(Box::new(ShardReader::new(array))), largest)
            }
            None => {
                // A rectilinear grid's pipeline is sized by its largest stored chunk; each
                // chunk is decoded by a pipeline of its own shape.
                let stored = meta.grid.largest_chunk(&meta.chunk_shape);
                let pipeline = Pipeline::new(&meta.codecs, &meta.dtype, &stored)?;
                let largest = pipeline
                    .largest_form_len()
                    .map_or(MAX_CHUNK_BYTES, |n| n as u64);
                (Decoder::Whole(pipeline), largest)
            }
        };
        let shape = match &decoder {
            Decoder::Whole(_) => &largest[..],
            Decoder::Sharded(shards) => shards.read_chunk_shape(),
        };
        let chunk_bytes = shape
            .iter()
            .try_fold(meta.dtype.size().max(1) as u64, |acc, &d| {
                acc.checked_mul(d)
            })
            .filter(|&b| b <= MAX_CHUNK_BYTES)
            .ok_or_else(|| {
                FetchError::new(
                    FetchCause::BadConfig,
                    format!(
                        "chunk shape {shape:?} is too large to decode (over {} GiB)",
                        MAX_CHUNK_BYTES >> 30
                    ),
                )
            })?;
        let cut = rectilinear && matches!(decoder, Decoder::Whole(_));
        let (chunk_bytes, stored_bytes) = if meta.dtype.is_variable() {
            (0, 0)
        } else if cut {
            // The read chunks of a rectilinear grid tile its chunks: the grid's common divisor.
            let read = meta.chunk_shape.iter().product::<u64>() * meta.dtype.size() as u64;
            (read, chunk_bytes)
        } else {
            (chunk_bytes, 0)
        };
        let max_object = if meta.dtype.is_variable() {
            MAX_CHUNK_BYTES
        } else {
            largest_form.max(chunk_bytes) * 2 + OBJECT_SLACK
        };
        let index = match &decoder {
            Decoder::Whole(_) => 0,
            Decoder::Sharded(shards) => meta
                .grid
                .largest_chunk(&meta.chunk_shape)
                .iter()
                .zip(shards.read_chunk_shape())
                .try_fold(ShardIndex::ENTRY_BYTES, |acc, (&s, &i)| {
                    acc.checked_mul(s.div_ceil(i))
                })
                .unwrap_or(u64::MAX),
        };
        let cached_bytes = chunk_bytes
            .saturating_add(index)
            .saturating_add(stored_bytes);
        Ok(ChunkReader {
            store,
            path: path.to_string(),
            meta,
            decoder,
            chunk_bytes,
            max_object,
            cached_bytes,
            listed: Listed::default(),
        })
    }

    /// Refuses chunks that decode to more than `max` bytes, for a reader that can keep no
    /// more (the cache budget). This matters for variable-length chunks, whose size the
    /// metadata does not fix; a fixed-size chunk larger than that is refused up front by the
    /// view.
    pub fn limit_decoded(mut self, max: u64) -> Self {
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        self.decoder = match self.decoder {
            Decoder::Whole(pipeline) => Decoder::Whole(pipeline.limit_decoded(max)),
            Decoder::Sharded(shards) => Decoder::Sharded(Box::new(shards.limit_decoded(max))),
        };
        self
    }

    /// Tells the reader which objects (store keys) a listing of the array's prefix showed:
    /// from then on, a chunk or shard among them that the store answers as absent is asked
    /// for again, and read as the fill value only when a fresh listing no longer shows it
    /// (else the read fails). Only the first call counts. True when one of them was answered
    /// absent before, and so read as the fill value (which a cache above may keep).
    pub fn expect_listed(&self, keys: std::collections::HashSet<String>) -> bool {
        self.listed.set(keys)
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

    /// Bytes the cache holds per read chunk: the decoded chunk, plus for a sharded array one
    /// shard index (at worst one index per chunk read), and for a rectilinear grid decoded whole
    /// the largest stored chunk it is cut from (kept while its read chunks are cut, else decoded
    /// once per read chunk). 0 for variable-length elements, whose decoded size varies.
    pub fn cached_bytes_per_chunk(&self) -> u64 {
        self.cached_bytes
    }

    /// Fetches the stored bytes of the read chunks at `idxs` without decoding them, for one of
    /// [`ChunkReader::load`] to decode later (`encoded`), handing each chunk's answer to
    /// `landed` as soon as it has it: `Ok(None)` when this array fetches and decodes in one
    /// step (rectilinear or variable-length chunk objects: their loads fetch what they
    /// decode). Inner chunks of a shard that lie near each other come in one request (see
    /// `super::shard_reader::COALESCE_GAP`). Errors and panics as for [`ChunkReader::load`];
    /// `ctx` keeps the shard indexes.
    pub fn fetch(
        &self,
        idxs: &[Vec<u64>],
        ctx: &dyn FetchContext,
        landed: Landed<'_, Option<Encoded>>,
    ) {
        let answered: Vec<AtomicBool> = idxs.iter().map(|_| AtomicBool::new(false)).collect();
        let once = |at: usize, got| {
            if !answered[at].swap(true, Ordering::Relaxed) {
                landed(at, got);
            }
        };
        let fetched = catch_panic_as_error(|| {
            self.fetch_unguarded(idxs, ctx, &once);
            Ok(())
        });
        if let Err(e) = fetched {
            for (at, idx) in idxs.iter().enumerate() {
                once(at, Err(self.name_panic(e.clone(), idx)));
            }
        }
    }

    fn fetch_unguarded(
        &self,
        idxs: &[Vec<u64>],
        ctx: &dyn FetchContext,
        landed: Landed<'_, Option<Encoded>>,
    ) {
        match &self.decoder {
            Decoder::Sharded(shards) => {
                let keys = (&self.meta.chunk_keys, &self.listed);
                let landed = |at, got: Result<Option<Vec<u8>>, FetchError>| {
                    let got = got.map(|bytes| Some(Encoded(bytes.map(Fetched::from_vec))));
                    landed(at, got.map_err(|e| e.context(self.display_path())));
                };
                shards.fetch(&*self.store, keys, idxs, self.max_object, ctx, &landed);
            }
            Decoder::Whole(_) if self.decodes_whole_into() => {
                for (at, idx) in idxs.iter().enumerate() {
                    let key = self.meta.chunk_keys.key(idx);
                    let got = self.fetch_object(&key).map(|bytes| Some(Encoded(bytes)));
                    landed(at, got.map_err(|e| e.context(self.key_context(&key))));
                }
            }
            Decoder::Whole(_) => (0..idxs.len()).for_each(|at| landed(at, Ok(None))),
        }
    }

    /// True when a stored chunk decodes straight into memory it is given (see
    /// [`ChunkReader::load`]): whole chunk objects of a regular grid, fixed-size elements.
    pub fn decodes_whole_into(&self) -> bool {
        matches!(self.decoder, Decoder::Whole(_))
            && self.meta.grid == ChunkGrid::Regular
            && !self.meta.dtype.is_variable()
    }

    /// The shard holding read chunk `idx`, for a sharded array (whose nearby inner chunks are
    /// best fetched together: see [`ChunkReader::fetch`]); `None` otherwise.
    pub fn shard_of(&self, idx: &[u64]) -> Option<Vec<u64>> {
        match &self.decoder {
            Decoder::Sharded(shards) => shards.shard_of(idx),
            Decoder::Whole(_) => None,
        }
    }

    /// What errors about the chunk object `key` are prefixed with.
    fn key_context(&self, key: &str) -> String {
        format!("{}: chunk {key}", self.display_path())
    }

    /// Fetches (unless `encoded` holds its bytes already: see [`ChunkReader::fetch`]) and
    /// decodes the read chunk at grid index `idx` (in the grid of
    /// [`ChunkReader::read_chunk_shape`]) into `target`: an owned buffer (made exactly that
    /// chunk, for every array), or room for one decoded chunk, decoded whole or front first as
    /// its `Need` says, straight from the stored bytes with no buffer in between (whole chunk
    /// objects of a regular grid, fixed-size elements: else [`Loaded::Unsuited`]). Errors name
    /// the node and the key. A panic below (in the store or a decoder) becomes a
    /// [`FetchCause::Panicked`] error.
    pub fn load<'a>(
        &self,
        idx: &[u64],
        encoded: Option<Encoded>,
        target: impl Into<Target<'a>>,
        ctx: &dyn FetchContext,
    ) -> Result<Loaded, FetchError> {
        let target = target.into();
        catch_panic_as_error(|| self.load_unguarded(idx, encoded, target, ctx))
            .map_err(|e| self.name_panic(e, idx))
    }

    fn load_unguarded(
        &self,
        idx: &[u64],
        encoded: Option<Encoded>,
        target: Target,
        ctx: &dyn FetchContext,
    ) -> Result<Loaded, FetchError> {
        let (pipeline, target) = match (&self.decoder, target) {
            (Decoder::Whole(pipeline), Target::Room(room, _))
                if !self.decodes_whole_into() || room.len() != pipeline.decoded_len() =>
            {
                return Ok(Loaded::Unsuited)
            }
            (Decoder::Whole(_), Target::Owned(out)) if self.meta.grid != ChunkGrid::Regular => {
                return Ok(Loaded::put(self.load_part(idx, ctx)?, out))
            }
            (Decoder::Whole(pipeline), target) => (pipeline, target),
            (Decoder::Sharded(_), Target::Room(..)) => return Ok(Loaded::Unsuited),
            (Decoder::Sharded(shards), Target::Owned(out)) => {
                let keys = &self.meta.chunk_keys;
                let encoded = encoded.map(|Encoded(bytes)| bytes.map(Fetched::into_vec));
                let loaded = shards
                    .load(
                        &*self.store,
                        (keys, &self.listed),
                        idx,
                        self.max_object,
                        (encoded, ctx),
                    )
                    .map_err(|e| e.context(self.display_path()))?;
                return Ok(Loaded::put(loaded, out));
            }
        };
        let key = self.meta.chunk_keys.key(idx);
        let context = |e: FetchError| e.context(self.key_context(&key));
        let stored = match encoded {
            Some(Encoded(bytes)) => Ok(bytes),
            None => self.fetch_object(&key),
        };
        let Some(encoded) = stored.map_err(context)? else {
            return Ok(Loaded::Absent);
        };
        let decoded = match target {
            // A buffer from the lender, given back when the decode fails.
            Target::Owned(out) if !self.meta.dtype.is_variable() => {
                let mut buf = ctx.buffer(pipeline.decoded_len());
                let decoded = pipeline.decode(&encoded, &mut buf);
                match decoded {
                    Ok(()) => *out = buf,
                    Err(_) => ctx.recycle(buf),
                }
                decoded
            }
            target => pipeline.decode(&encoded, target),
        };
        decoded.map_err(|e| context(e.into()))?;
        Ok(Loaded::Decoded)
    }

    /// Read chunk `idx` of a rectilinear grid: the stored chunk holding it, decoded by a
    /// pipeline of that chunk's shape (once while `ctx` keeps it, for all the read chunks it
    /// holds), and the read chunk's box copied out of it.
    fn load_part(
        &self,
        idx: &[u64],
        ctx: &dyn FetchContext,
    ) -> Result<Option<Vec<u8>>, FetchError> {
        let read = &self.meta.chunk_shape;
        let (chunk, offset, stored) = self.meta.grid.stored_chunk(idx, read);
        let key = self.meta.chunk_keys.key(&chunk);
        let context = |e: FetchError| e.context(self.key_context(&key));
        let mut decode = || {
            let Some(encoded) = self.fetch_object(&key).map_err(context)? else {
                return Ok(None);
            };
            let mut whole = Vec::new();
            Pipeline::new(&self.meta.codecs, &self.meta.dtype, &stored)
                .and_then(|pipeline| pipeline.decode(&encoded, &mut whole))
                .map_err(|e| context(e.into()))?;
            Ok(Some(Arc::new(whole)))
        };
        let Some(whole) = ctx.stored_chunk(&key, &mut decode)? else {
            return Ok(None);
        };
        let mut buf = ctx.buffer(self.chunk_bytes as usize);
        let elem = self.meta.dtype.size();
        copy_box(
            (&whole, &stored, &offset),
            (&mut buf, read, &[]),
            read,
            elem,
        );
        Ok(Some(buf))
    }

    /// The decoded length of a chunk when [`ChunkReader::load`] of a whole chunk front first
    /// may decode it step by step as fast as in one go (zstd, on chunks with no content
    /// checksum), so that readers may use its first bytes meanwhile; `None` otherwise.
    pub fn progressive_len(&self) -> Option<usize> {
        match &self.decoder {
            Decoder::Whole(p)
                if !self.meta.dtype.is_variable() && self.meta.grid == ChunkGrid::Regular =>
            {
                let len = p.decoded_len();
                p.streams(len).then_some(len)
            }
            _ => None,
        }
    }

    /// Puts node and chunk in front of the message of an error from a caught panic (other
    /// errors name them already).
    fn name_panic(&self, e: FetchError, idx: &[u64]) -> FetchError {
        if e.cause != FetchCause::Panicked {
            return e;
        }
        match &self.decoder {
            Decoder::Whole(_) => {
                let key = self.meta.chunk_keys.key(idx);
                e.context(self.key_context(&key))
            }
            Decoder::Sharded(_) => e.context(format!("{}: chunk {idx:?}", self.display_path())),
        }
    }

    /// The whole object `key`, refused unread beyond the array's largest object (`max_object`);
    /// an absent answer is checked against the listing (see [`ChunkReader::expect_listed`]).
    fn fetch_object(&self, key: &str) -> Result<Option<Fetched>, FetchError> {
        self.listed
            .confirm(&*self.store, key, || self.fetch_object_once(key))
    }

    fn fetch_object_once(&self, key: &str) -> Result<Option<Fetched>, FetchError> {
        let bound = self.max_object;
        let fill = |buf: &mut Vec<u8>| {
            self.store
                .get_range_into(key, 0, bound.saturating_add(1), None, buf)
        };
        // Any spare: the length is known only once the object is read.
        let Some(bytes) = Fetched::with(0, fill)? else {
            return Ok(None);
        };
        STATS.fetched(bytes.len());
        if bytes.len() as u64 > bound {
            return Err(FetchError::new(
                FetchCause::Oversized,
                format!("the stored object is larger than {bound} bytes, more than any encoding of its chunk takes; not read"),
            ));
        }
        Ok(Some(bytes))
    }

    fn display_path(&self) -> &str {
        shown_key(&self.path)
    }
}
