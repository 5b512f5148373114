//! Reading an array's elements (`A`) and its NPY file (`A.npy`) by byte range, and decoding
//! ahead of a reader.

use super::backed::{read_through, ArrayBacking, ArrayIdentity, Backing};
use super::chunk_source::{ChunkSource, Dest};
use super::error::chunk_failed;
use super::held_chunks::HeldChunks;
use super::kinds::Reply;
use super::row_walk::RowWalk;
use super::{npy_header, GridGeometry, IoCause, ViewError};
use crate::cache::read_ahead::{Job, Prediction, ReadAhead};
use crate::cache::ChunkCache;
use crate::fetch::{ChunkReader, Loaded};
use crate::meta::{ArrayMeta, Document};
use crate::store::{shown_key, Store};
use std::sync::{Arc, OnceLock};

/// Most chunks one prediction queues (a prediction starts where the last one ended, so this
/// bounds one read's work, not the window).
pub(super) const MAX_PREFETCH_CHUNKS: usize = 256;
/// Chunks one read keeps at hand (its runs alternate between the chunks of a row).
const MAX_HELD_CHUNKS: usize = 8;

/// Why an array's data cannot be read, said once at mount and again at every open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    /// The kind of reason.
    pub cause: IoCause,
    /// The reason in words.
    pub reason: String,
}

/// Makes the chunk sources of a view's arrays, from its store and for its cache.
pub struct Sources {
    /// The store the chunks are read from.
    pub store: Arc<dyn Store>,
    /// The cache they are decoded into.
    pub cache: Arc<ChunkCache>,
}

impl Sources {
    /// The chunks of array number `id` at `path`, or why they cannot be read: the codec chain
    /// is unsupported or unusable, the geometry overflows, or one chunk (with its shard index)
    /// is larger than the whole cache, which would decode it again on every read.
    pub fn make(
        &self,
        id: u32,
        path: &str,
        meta: &Arc<ArrayMeta>,
    ) -> Result<ChunkSource, Unreadable> {
        let reader =
            ChunkReader::new(self.store.clone(), path, meta.clone()).map_err(|e| Unreadable {
                cause: e.cause.into(),
                reason: e.message,
            })?;
        let reader = reader.limit_decoded(self.cache.budget());
        let layout =
            GridGeometry::new(&meta.shape, reader.read_chunk_shape()).map_err(|e| Unreadable {
                cause: IoCause::BadConfig,
                reason: e.to_string(),
            })?;
        let need = reader.cached_bytes_per_chunk();
        if !self.cache.fits(need) {
            return Err(Unreadable {
                cause: IoCause::TooLargeForCache,
                reason: format!(
                    "one chunk takes {need} bytes in the cache, more than its whole budget of {} \
                     bytes; mount with a larger --cache-size",
                    self.cache.budget()
                ),
            });
        }
        Ok(ChunkSource {
            id,
            reader: Arc::new(reader),
            layout: Arc::new(layout),
            handle: 0,
        })
    }
}

/// One array as files: its chunks, geometry and NPY header.
pub struct ArrayFile {
    path: Box<str>,
    /// What its chunk source is made from: its number (keying its chunks in the cache) and
    /// metadata; `Err` holds why the data cannot be read (unsupported codec or data type, bad
    /// metadata, chunks too large for the cache).
    recipe: Result<(u32, Arc<ArrayMeta>), Unreadable>,
    sources: Arc<Sources>,
    /// The chunk source (codec chain, chunk reader, geometry), made at first use.
    source: OnceLock<Box<Result<ChunkSource, Unreadable>>>,
    /// The rows of the whole array, for reads whose rows go round more chunks than a read
    /// holds (see [`RowWalk::read_going_round`]), made at the first read.
    rows: OnceLock<Box<RowWalk>>,
    elem_size: u64,
    data_size: u64,
    /// The metadata the NPY header is made from, at each use (none for an array without a
    /// header), and the header's length.
    npy: Option<Arc<ArrayMeta>>,
    header_len: u64,
    /// The metadata document (part of the backing file's identity).
    metadata: Document,
    identity: ArrayIdentity,
    backing: ArrayBacking,
}

impl ArrayFile {
    /// The files of the array at `path`, readable when `recipe` is Ok (its chunk source is
    /// made from it by `sources` at first use). Their sizes come from
    /// `meta` whenever it could be parsed, so an array zarrfs cannot decode still shows its real
    /// size (and fails with EIO when opened) instead of looking empty; only an array whose
    /// metadata could not be parsed at all (e.g. an unknown data type: the item size is
    /// unknown) shows size 0.
    pub fn new(
        path: &str,
        meta: Option<&Arc<ArrayMeta>>,
        recipe: Result<(u32, Arc<ArrayMeta>), Unreadable>,
        sources: Arc<Sources>,
        metadata: Document,
    ) -> Self {
        let npy = meta.filter(|m| !m.dtype.is_variable()).cloned();
        let (elem_size, data_size, header_len) = match &npy {
            Some(meta) => (
                meta.dtype.size() as u64,
                meta.byte_size().unwrap_or(0),
                npy_header(&meta.dtype, &meta.shape).len() as u64,
            ),
            None => (1, 0, 0),
        };
        ArrayFile {
            path: path.into(),
            recipe,
            sources,
            source: OnceLock::new(),
            rows: OnceLock::new(),
            elem_size: elem_size.max(1),
            data_size,
            npy,
            header_len,
            metadata,
            identity: ArrayIdentity::default(),
            backing: ArrayBacking::default(),
        }
    }

    /// The chunk source, made now at the first call.
    fn source(&self) -> Result<&ChunkSource, &Unreadable> {
        self.source
            .get_or_init(|| {
                Box::new(match &self.recipe {
                    Ok((id, meta)) => self.sources.make(*id, &self.path, meta),
                    Err(u) => Err(u.clone()),
                })
            })
            .as_ref()
            .as_ref()
    }

    /// Attaches the array's backing file in `backing` (see [`crate::backing`]).
    pub fn attach_backing(&self, backing: &Backing) {
        let Ok(source) = self.source() else { return };
        if self.data_size > 0 {
            let label = self.display_path();
            let names = (&*self.path, label);
            let reader = &source.reader;
            if let Some(id) = self.identity.get(backing, names, &self.metadata, reader) {
                self.backing
                    .attach(backing, id, label, Some(self.data_size));
            }
        }
    }

    /// The backing file, once complete.
    pub fn complete_backing(&self) -> Option<Arc<crate::backing::BackingFile>> {
        self.backing.get().filter(|f| f.is_complete())
    }

    /// `A.npy` on local disk once the backing file is complete (see
    /// [`crate::backing::BackingFile::npy_file`]).
    pub fn npy_backing(&self) -> Option<std::fs::File> {
        self.complete_backing()?.npy_file(&self.header())
    }

    /// Size of `A`.
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// Size of `A.npy` (at most `u64::MAX`: of an array of nearly 2^64 bytes, the last bytes
    /// are past what a file offset can reach).
    pub fn npy_size(&self) -> u64 {
        self.header_len.saturating_add(self.data_size)
    }

    /// Length of the NPY header (where the data starts in `A.npy`).
    pub fn header_len(&self) -> u64 {
        self.header_len
    }

    /// The NPY header of `A.npy`, made now.
    pub(super) fn header(&self) -> Vec<u8> {
        self.npy
            .as_ref()
            .map_or_else(Vec::new, |m| npy_header(&m.dtype, &m.shape))
    }

    /// Where the band of chunks holding byte `offset` of `A` ends (see
    /// [`super::GridGeometry::band_len`]).
    pub fn band_end(&self, offset: u64) -> u64 {
        let Ok(source) = self.source() else {
            return self.data_size;
        };
        let band = source
            .layout
            .band_len()
            .max(1)
            .saturating_mul(self.elem_size);
        (offset / band + 1).saturating_mul(band)
    }

    /// How far ahead of a sequential reader to decode, in bytes of `A`: two bands of chunks
    /// (see [`super::GridGeometry::band_len`]) and at least four chunks.
    pub fn read_ahead_bytes(&self) -> u64 {
        let Ok(source) = self.source() else { return 0 };
        let l = &source.layout;
        l.band_len()
            .saturating_mul(2)
            .max(l.chunk_len().saturating_mul(4))
            .saturating_mul(self.elem_size)
    }

    /// Bytes of one decoded chunk of `A` (0 when the data cannot be read).
    pub fn chunk_bytes(&self) -> u64 {
        self.source()
            .map_or(0, |s| s.layout.chunk_len().saturating_mul(self.elem_size))
    }

    /// The chunks, when the data can be read; else logs why and fails with EIO.
    pub(super) fn readable(&self) -> Result<&ChunkSource, ViewError> {
        self.source().map_err(|u| {
            log::error!("{}: data cannot be read: {}", self.display_path(), u.reason);
            ViewError::Io(u.cause)
        })
    }

    /// The parsed metadata of an array of fixed-size elements, readable or not.
    pub(super) fn meta(&self) -> Option<&ArrayMeta> {
        self.npy.as_deref()
    }

    /// Ok when the data can be read; else logs why and fails with EIO.
    pub fn check_readable(&self) -> Result<(), ViewError> {
        self.readable().map(|_| ())
    }

    /// The path as logs show it.
    pub fn display_path(&self) -> &str {
        shown_key(&self.path)
    }

    /// Bytes `offset..offset+len` of `A` (fewer at the end of the file), read through file
    /// handle `fh` (0: none), into `reply`: copied from the backing file where it holds them,
    /// else decoded (and then written into the backing file).
    pub fn read_data(
        &self,
        cache: &ChunkCache,
        fh: u64,
        offset: u64,
        len: u64,
        reply: Reply,
    ) -> Result<(), ViewError> {
        let end = offset.saturating_add(len).min(self.data_size);
        let Some(file) = self.backing.get() else {
            return self.read_decoded(cache, fh, offset, end, reply);
        };
        let into_reply = reply.into_reply;
        read_through(
            &file,
            &self.path,
            (offset, end),
            reply.out,
            |from, to, out| self.read_decoded(cache, fh, from, to, Reply::new(out, into_reply)),
        )
    }

    /// Bytes `offset..end` of `A`, read through file handle `fh`, into `reply`: chunk by chunk
    /// when its rows go round more chunks than a read holds (see
    /// [`RowWalk::read_going_round`]); else decoded from the chunks run by run: the first
    /// run straight into the reply when it is a whole chunk nobody decoded yet and
    /// `into_reply`; a read that is one run (and not such a chunk) answered early from its
    /// chunk; every other run, and any of those that cannot go so, copied from its chunk.
    fn read_decoded(
        &self,
        cache: &ChunkCache,
        fh: u64,
        offset: u64,
        end: u64,
        reply: Reply,
    ) -> Result<(), ViewError> {
        let source = &self.readable()?.through(fh);
        let (out, mut send) = (reply.out, reply.send);
        if offset >= end {
            return Ok(());
        }
        // The chunks this read has fetched: runs alternate between a few of them.
        let mut held = HeldChunks::new(MAX_HELD_CHUNKS, cache);
        let rows = self.rows.get_or_init(|| {
            Box::new(RowWalk::whole(
                &source.reader.meta().shape,
                source.reader.read_chunk_shape(),
            ))
        });
        let es = self.elem_size;
        let read = (source, cache, self.display_path());
        if rows.read_going_round(read, (offset, end, es), out, &mut held)? {
            return Ok(());
        }
        let fill = &source.reader.meta().fill_value;
        out.reserve((end - offset) as usize);
        let runs = source.layout.runs(offset / es, end.div_ceil(es));
        let mut runs = runs.enumerate().peekable();
        while let Some((i, run)) = runs.next() {
            let (start, stop) = (run.start * es, (run.start + run.len) * es);
            let (from, to) = (start.max(offset), stop.min(end));
            let at = (run.chunk_offset * es + (from - start)) as usize;
            let span = (at, (to - from) as usize);
            // Only the read's first chunk may be decoded straight into `out`: the view has queued
            // the others on the read-ahead workers, and the cache waits for their loads instead
            // of decoding them a second time.
            let first = i == 0;
            let whole =
                reply.into_reply && run.chunk_offset == 0 && run.len == source.layout.chunk_len();
            // A read that is one run (not a whole chunk for the reply) is answered from it.
            if let Some(send) = send.take_if(|_| first && !whole && runs.peek().is_none()) {
                let sent = source.load(cache, run.chunk, Dest::Send(at..at + span.1, send));
                if sent.map_err(chunk_failed)? == Loaded::Decoded {
                    return Ok(());
                }
            }
            let into_here = first && whole && (from, to) == (start, stop);
            if into_here && self.decode_into(cache, source, run.chunk, (from, to), out)? {
                continue;
            }
            match held.bytes(source, cache, run.chunk, span, self.display_path())? {
                Some(bytes) => out.extend_from_slice(bytes),
                None => extend_with_fill(out, fill, from, to - from),
            }
        }
        Ok(())
    }

    /// Decodes chunk `chunk`, bytes `from..to` of `A`, straight into `out` when nobody has
    /// decoded it: no cache entry, no copy. False when that does not apply.
    fn decode_into(
        &self,
        cache: &ChunkCache,
        source: &ChunkSource,
        chunk: u64,
        (from, to): (u64, u64),
        out: &mut Vec<u8>,
    ) -> Result<bool, ViewError> {
        if !source.reader.decodes_whole_into() || cache.contains(source.id(chunk)) {
            return Ok(false);
        }
        // Bytes the read-ahead fetched are decoded here; a chunk it was loading is in the
        // cache now.
        let (_reading, encoded) = source.claim(cache, chunk);
        if encoded.is_none() && cache.contains(source.id(chunk)) {
            return Ok(false);
        }
        let at = out.len();
        out.resize(at + (to - from) as usize, 0);
        let room = Dest::Room((&mut out[at..]).into(), encoded);
        let loaded = source.load(cache, chunk, room);
        if loaded != Ok(Loaded::Decoded) {
            out.truncate(at);
        }
        let fill = &source.reader.meta().fill_value;
        match loaded.map_err(chunk_failed)? {
            Loaded::Decoded => {}
            Loaded::Absent => extend_with_fill(out, fill, from, to - from),
            Loaded::Unsuited => return Ok(false),
        }
        Ok(true)
    }

    /// The chunks behind the predicted byte ranges of `A` (data offsets, not `A.npy`), in order,
    /// at most [`MAX_PREFETCH_CHUNKS`].
    pub fn chunks_for(&self, prediction: &Prediction) -> Vec<u64> {
        let es = self.elem_size;
        let mut chunks: Vec<u64> = Vec::new();
        let Ok(source) = self.source() else {
            return chunks;
        };
        let add_range = |from: u64, to: u64, chunks: &mut Vec<u64>| {
            let (first, last) = (from / es, to.min(self.data_size).div_ceil(es));
            for chunk in source.layout.chunks_in(first, last, MAX_PREFETCH_CHUNKS) {
                if chunks.len() < MAX_PREFETCH_CHUNKS && !chunks.contains(&chunk) {
                    chunks.push(chunk);
                }
            }
        };
        match *prediction {
            Prediction::None => {}
            Prediction::Range(from, to) => add_range(from, to, &mut chunks),
            Prediction::Strided {
                start,
                stride,
                len,
                count,
            } => {
                for k in 0..count {
                    let at = start.saturating_add(k.saturating_mul(stride));
                    add_range(at, at.saturating_add(len), &mut chunks);
                    if chunks.len() >= MAX_PREFETCH_CHUNKS {
                        break;
                    }
                }
            }
        }
        chunks
    }

    /// Where chunk `chunk`'s last byte ends `A`.
    pub fn chunk_end_byte(&self, chunk: u64) -> u64 {
        self.source()
            .map_or(0, |s| s.layout.chunk_end(chunk) * self.elem_size)
    }

    /// Drops `chunks`, which the reads through file handle `fh` are done with, from the cache,
    /// but those another reader has used (see [`ChunkCache::discard`]).
    pub fn discard(&self, cache: &ChunkCache, chunks: &[u64], fh: u64) {
        let Ok(source) = self.source() else { return };
        chunks.iter().for_each(|&c| cache.discard(source.id(c), fh));
    }

    /// Queues `chunks` for the read-ahead, in order (`urgent`: a read waits for them, so they
    /// go before anything queued).
    pub fn prefetch(&self, pool: &ReadAhead, chunks: &[u64], urgent: bool) {
        let jobs = self.jobs(chunks);
        if urgent {
            // Each goes to the front: the last first, so they leave in order.
            jobs.into_iter()
                .rev()
                .for_each(|job| pool.submit_urgent(job));
        } else {
            for job in jobs {
                if !pool.submit(job) {
                    break;
                }
            }
        }
    }

    /// Queues `ahead`, the chunks reader `reader` is predicted to read next, in order, and
    /// leaves `beyond` (the rest of its window, less `ahead`) for their finished fetches to
    /// queue (see [`crate::cache::read_ahead::Continuation`]).
    pub fn predict(&self, pool: &ReadAhead, reader: u64, ahead: &[u64], beyond: &[u64]) {
        let then = pool.continuation(reader);
        let beyond = beyond.iter().filter(|c| !ahead.contains(c)).copied();
        then.replace(self.jobs(&beyond.collect::<Vec<_>>()));
        for job in self.jobs(ahead) {
            pool.submit(job.then(then.clone()));
        }
    }

    /// Read-ahead jobs loading `chunks` (none when the data cannot be read).
    fn jobs(&self, chunks: &[u64]) -> Vec<Job> {
        self.source()
            .map_or_else(|_| Vec::new(), |s| s.jobs(chunks))
    }
}

/// Appends `len` bytes of the repeated element `fill`, starting at file byte `at`.
pub(super) fn extend_with_fill(out: &mut Vec<u8>, fill: &[u8], at: u64, len: u64) {
    if fill.iter().all(|&b| b == fill[0]) {
        out.resize(out.len() + len as usize, fill[0]);
        return;
    }
    let es = fill.len() as u64;
    out.extend((0..len).map(|i| fill[((at + i) % es) as usize]));
}
