//! Reading the inner chunks of a sharded array by byte range: the shard's index (one request:
//! the last bytes of the shard with its size, or its first bytes; decoded once and kept by the
//! [`FetchContext`] with the shard's ETag), then ranged reads of the inner chunks, of that
//! version of the shard only where the store holds reads to one ([`Store::matches_tags`]): one per chunk for a read, one per run
//! of nearby chunks for the read-ahead's batches, several in flight at once. A whole shard is
//! never read.

use super::fetched::Fetched;
use super::listed::Listed;
use super::{FetchCause, FetchContext, FetchError, Landed, ShardIndexIfStored, StoredIndex};
use crate::codec::ShardedArray;
use crate::meta::{ChunkGrid, ChunkKeys};
use crate::stats::STATS;
use crate::store::{weak_etag, Store, StoreError};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// Reads one sharded array's inner chunks.
pub(super) struct ShardReader {
    array: ShardedArray,
    /// The shard grid; for a rectilinear one, the reading of each shard shape it has.
    grid: ChunkGrid,
    by_shape: Vec<(Vec<u64>, ShardedArray)>,
    /// Set once the server refused to read a shard of the very version (ETag) its index was
    /// read again with (load-balanced servers whose backends disagree): shards are then read
    /// without `If-Match`.
    unmatched: AtomicBool,
}

impl ShardReader {
    /// Refuses variable-length inner chunks whose serialized form exceeds `max` bytes.
    pub fn limit_decoded(self, max: usize) -> Self {
        ShardReader {
            array: self.array.limit_decoded(max),
            grid: self.grid,
            by_shape: self
                .by_shape
                .into_iter()
                .map(|(shape, array)| (shape, array.limit_decoded(max)))
                .collect(),
            unmatched: self.unmatched,
        }
    }

    /// A reader for the array `array` describes (regular shards).
    pub fn new(array: ShardedArray) -> Self {
        ShardReader {
            array,
            grid: ChunkGrid::Regular,
            by_shape: Vec::new(),
            unmatched: AtomicBool::new(false),
        }
    }

    /// A reader for shards of a rectilinear `grid`, whose inner chunks tile every shard:
    /// `by_shape` reads the shards of each shape in it (`array`, one of them, gives the inner
    /// chunk shape).
    pub fn rectilinear(
        array: ShardedArray,
        grid: ChunkGrid,
        by_shape: Vec<(Vec<u64>, ShardedArray)>,
    ) -> Self {
        ShardReader {
            array,
            grid,
            by_shape,
            unmatched: AtomicBool::new(false),
        }
    }

    /// The reading of the shard holding inner chunk `idx`: its grid index and the inner
    /// chunk's number in its index.
    fn locate(&self, idx: &[u64]) -> Option<(&ShardedArray, Vec<u64>, usize)> {
        if self.grid == ChunkGrid::Regular {
            let (shard, inner) = self.array.locate(idx);
            return Some((&self.array, shard, inner));
        }
        let read = self.array.read_chunk_shape();
        let (shard, offset, shape) = self.grid.stored_chunk(idx, read);
        let local: Vec<u64> = offset.iter().zip(read).map(|(o, r)| o / r).collect();
        let (_, array) = self.by_shape.iter().find(|(s, _)| *s == shape)?;
        Some((array, shard, array.locate(&local).1))
    }

    /// The read grid's chunk shape: the inner chunk shape.
    pub fn read_chunk_shape(&self) -> &[u64] {
        self.array.read_chunk_shape()
    }

    /// Fetches and decodes the inner chunk at read-grid index `idx` of the array whose shards
    /// `keys` names (unless `encoded` holds its stored bytes, fetched ahead by
    /// [`ShardReader::fetch`]); `Ok(None)` when its shard (checked against `listed`) or its
    /// index entry is absent. Inner chunks stored in more than `max_len` bytes are refused unread.
    pub fn load(
        &self,
        store: &dyn Store,
        keys: (&ChunkKeys, &Listed),
        idx: &[u64],
        max_len: u64,
        (encoded, ctx): (Option<Option<Vec<u8>>>, &dyn FetchContext),
    ) -> Result<Option<Vec<u8>>, FetchError> {
        let stored = match encoded {
            Some(stored) => stored,
            None => {
                let got = Mutex::new(Ok(None));
                let idxs = [idx.to_vec()];
                self.fetch(store, keys, &idxs, max_len, ctx, &|_, g| *got.lock() = g);
                got.into_inner()?
            }
        };
        let Some(bytes) = stored else {
            return Ok(None);
        };
        let (array, shard, inner) = self.place(idx)?;
        let context = |e: FetchError| {
            e.context(format!("inner chunk {inner}"))
                .context(format!("shard {}", keys.0.key(&shard)))
        };
        let decoded = array.decode_inner(&bytes).map_err(|e| context(e.into()))?;
        Ok(Some(decoded))
    }

    /// [`ShardReader::locate`], or an error naming the chunk that lies in no shard.
    fn place(&self, idx: &[u64]) -> Result<(&ShardedArray, Vec<u64>, usize), FetchError> {
        self.locate(idx).ok_or_else(|| {
            FetchError::new(
                FetchCause::Corrupt,
                format!("inner chunk {idx:?} lies in no shard of the grid"),
            )
        })
    }

    /// The shard holding inner chunk `idx`, as the read-ahead groups chunks to fetch together.
    pub fn shard_of(&self, idx: &[u64]) -> Option<Vec<u64>> {
        self.locate(idx).map(|(_, shard, _)| shard)
    }

    /// The stored bytes of the inner chunks at `idxs` (each `Ok(None)` when absent, as for
    /// [`ShardReader::load`]), each handed to `landed` as soon as its request is answered,
    /// with one ranged request for inner chunks of one shard that lie near each other (at most
    /// [`COALESCE_GAP`] apart, [`COALESCE_MAX`] in one request), as zarr-python and
    /// object_store coalesce. Inner chunks are read from the version of the shard their index
    /// was read from (where the store holds reads to a version): a shard rewritten since has its index read
    /// again and its chunks with it, up to [`SHARD_READS`] times. A server that refuses the
    /// version its index was read again with (the same ETag as before) has its shards read
    /// without a version from then on: the shard did not change.
    pub fn fetch(
        &self,
        store: &dyn Store,
        keys: (&ChunkKeys, &Listed),
        idxs: &[Vec<u64>],
        max_len: u64,
        ctx: &dyn FetchContext,
        landed: Landed<'_, Option<Vec<u8>>>,
    ) {
        // The chunks asked for again, by position in `idxs` (`None`: all of them, the first time).
        let mut again: Option<Vec<usize>> = None;
        // The ETag each shard's read was refused for, by shard key.
        let mut refused: HashMap<String, Option<String>> = HashMap::new();
        for read in 1..=SHARD_READS {
            let asked: Vec<Vec<u64>>;
            let asked = match &again {
                Some(again) => {
                    asked = again.iter().map(|&at| idxs[at].clone()).collect();
                    &asked[..]
                }
                None => idxs,
            };
            let changed = Mutex::new(Vec::new());
            let used = self.fetch_once(store, keys, asked, max_len, ctx, &|i, got| {
                let at = again.as_ref().map_or(i, |again| again[i]);
                match got {
                    Err(e) if read < SHARD_READS && shard_changed(&e) => {
                        changed.lock().push((at, e))
                    }
                    got => landed(at, got),
                }
            });
            let changed = changed.into_inner();
            if changed.is_empty() {
                return;
            }
            let mut forgotten = Vec::new();
            for (at, e) in &changed {
                let Some((_, shard, _)) = self.locate(&idxs[*at]) else {
                    continue;
                };
                let key = keys.0.key(&shard);
                let Some(stale) = used.get(&key).filter(|_| !forgotten.contains(&key)) else {
                    continue;
                };
                if refused.get(&key) == Some(&stale.tag) {
                    if !self.unmatched.swap(true, Ordering::Relaxed) {
                        log::warn!(
                            "{e}, again with the ETag its index was just read with: the server \
                             refuses its own ETags (If-Match); shards are read without it"
                        );
                    }
                } else {
                    log::info!("{e}: its index is read again");
                    ctx.forget_shard_index(&key, stale);
                    refused.insert(key.clone(), stale.tag.clone());
                }
                forgotten.push(key);
            }
            again = Some(changed.into_iter().map(|(at, _)| at).collect());
        }
    }

    /// One read of [`ShardReader::fetch`]: each wanted inner chunk through its shard's index,
    /// kept or read; returns the indexes used that name a version of their shard, by shard key.
    fn fetch_once(
        &self,
        store: &dyn Store,
        (keys, listed): (&ChunkKeys, &Listed),
        idxs: &[Vec<u64>],
        max_len: u64,
        ctx: &dyn FetchContext,
        landed: Landed<'_, Option<Vec<u8>>>,
    ) -> HashMap<String, Arc<StoredIndex>> {
        let mut used = HashMap::new();
        // Each shard's index, asked for once: another reader may drop the kept one (rewritten
        // shard) and load a newer one meanwhile, and a run's chunks must all be cut from the
        // version whose tag the run is read with.
        let mut indexes: HashMap<String, Result<ShardIndexIfStored, FetchError>> = HashMap::new();
        let mut wanted: Vec<Wanted> = Vec::new();
        for (at, idx) in idxs.iter().enumerate() {
            let (array, shard, inner) = match self.place(idx) {
                Ok(place) => place,
                Err(e) => {
                    landed(at, Err(e));
                    continue;
                }
            };
            let key = keys.key(&shard);
            let context = |e: FetchError| e.context(format!("shard {key}"));
            let index = indexes.entry(key.clone()).or_insert_with(|| {
                ctx.shard_index(&key, &mut || {
                    listed.confirm(store, &key, || load_index(array, store, &key))
                })
                .map_err(context)
            });
            let index = match index.clone() {
                Ok(Some(index)) => index,
                Ok(None) => {
                    landed(at, Ok(None));
                    continue;
                }
                Err(e) => {
                    landed(at, Err(e));
                    continue;
                }
            };
            if index.tag.is_some() && !used.contains_key(&key) {
                used.insert(key.clone(), index.clone());
            }
            let Some(range) = index.index.get(inner) else {
                landed(at, Ok(None));
                continue;
            };
            let len = range.end - range.start;
            if len > max_len {
                landed(
                    at,
                    Err(context(
                        FetchError::new(
                            FetchCause::Oversized,
                            format!(
                            "{len} bytes, more than any encoding of it takes ({max_len}); not read"
                        ),
                        )
                        .context(format!("inner chunk {inner}")),
                    )),
                );
                continue;
            }
            let tag = match self.unmatched.load(Ordering::Relaxed) {
                true => None,
                false => index.tag.clone(),
            };
            wanted.push(Wanted {
                key,
                range,
                at,
                inner,
                tag,
            });
        }
        wanted.sort_by(|a, b| (&a.key, a.range.start).cmp(&(&b.key, b.range.start)));
        let mut runs: Vec<&[Wanted]> = Vec::new();
        let mut rest = wanted.as_slice();
        while let Some(first) = rest.first() {
            let (start, mut end, mut n) = (first.range.start, first.range.end, 1);
            while let Some(w) = rest.get(n) {
                let near = w.key == first.key && w.range.start <= end.saturating_add(COALESCE_GAP);
                if !near || w.range.end.max(end) - start > COALESCE_MAX {
                    break;
                }
                end = end.max(w.range.end);
                n += 1;
            }
            let (run, later) = rest.split_at(n);
            runs.push(run);
            rest = later;
        }
        // The run holding the first chunk asked for (the one a reader may wait for) goes first.
        if let Some(at) = runs.iter().position(|run| run.iter().any(|w| w.at == 0)) {
            runs[..=at].rotate_right(1);
        }
        read_runs(store, &runs, ctx, &|run, got| hand_out(run, got, landed));
        used
    }
}

/// Reads of a batch's inner chunks from one shard, at most: a shard rewritten while it is read
/// (its index read again, and its chunks) more times than that fails the read.
pub const SHARD_READS: usize = 3;

/// True when `e` says that a shard is no longer the version its index was read from.
fn shard_changed(e: &FetchError) -> bool {
    matches!(e.store, Some(StoreError::Changed { .. }))
}

/// Hands the inner chunks of `run` to `landed`, from `got`, the run's bytes, which are let go
/// then: a run of one chunk is its bytes, else each chunk's are copied into a spare buffer.
fn hand_out(run: &[Wanted], got: RunBytes, landed: Landed<'_, Option<Vec<u8>>>) {
    let (key, start) = (&run[0].key, run[0].range.start);
    match got {
        Ok(bytes) if run.len() == 1 => landed(run[0].at, Ok(Some(bytes.into_vec()))),
        Ok(bytes) => {
            for w in run {
                let part = &bytes[(w.range.start - start) as usize..(w.range.end - start) as usize];
                let mut own = crate::memory::buffers().take_empty(part.len());
                own.extend_from_slice(part);
                landed(w.at, Ok(Some(own)));
            }
        }
        Err(e) => {
            for w in run {
                let e = e.clone().context(format!("inner chunk {}", w.inner));
                landed(w.at, Err(e.context(format!("shard {key}"))));
            }
        }
    }
}

/// An inner chunk to fetch.
struct Wanted {
    /// Its shard's key.
    key: String,
    /// Its byte range in the shard.
    range: std::ops::Range<u64>,
    /// Its position among the chunks asked for.
    at: usize,
    /// Its index in the shard.
    inner: usize,
    /// The shard's ETag its index was read with, if any.
    tag: Option<String>,
}

/// The bytes of one run of nearby inner chunks, from its first chunk's start.
type RunBytes = Result<Fetched, FetchError>;

/// Bytes of a request counted in flight by a [`FetchContext`] while this lives.
struct Carried<'a>(&'a dyn FetchContext, u64);

impl<'a> Carried<'a> {
    fn new(ctx: &'a dyn FetchContext, bytes: u64) -> Self {
        ctx.carry(bytes);
        Carried(ctx, bytes)
    }
}

impl Drop for Carried<'_> {
    fn drop(&mut self) {
        self.0.carried(self.1);
    }
}

/// Ranged requests of one batch in flight at once, at most.
const RUNS_AT_ONCE: usize = 8;

/// Reads each run of nearby inner chunks (one ranged request each, from its first chunk's
/// start to its furthest end) and hands it to `landed` as soon as it is in, up to
/// [`RUNS_AT_ONCE`] requests at a time, started in the order given: a batch costs about one
/// round trip, not one per run, and the run of the chunk a reader may be waiting for (put
/// first by the caller) starts at once and is handed out without waiting for the others. Each
/// run's whole span, gaps included, is counted in flight by `ctx` until `landed` returns.
fn read_runs(
    store: &dyn Store,
    runs: &[&[Wanted]],
    ctx: &dyn FetchContext,
    landed: &(dyn Fn(&[Wanted], RunBytes) + Sync),
) {
    let read = |run: &[Wanted]| {
        let start = run[0].range.start;
        let end = run.iter().map(|w| w.range.end).max().unwrap_or(start);
        let _carried = Carried::new(ctx, end - start);
        let (key, tag) = (&run[0].key, run[0].tag.as_deref());
        landed(run, read_exact(store, (key, tag), start, end - start));
    };
    if runs.len() <= 1 {
        return runs.iter().for_each(|run| read(run));
    }
    let next = AtomicUsize::new(0);
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(run) = runs.get(i) else { break };
        read(run);
    };
    std::thread::scope(|scope| {
        for _ in 1..runs.len().min(RUNS_AT_ONCE) {
            // A thread that cannot start leaves its share to the others and this one.
            let _ = std::thread::Builder::new()
                .name("fetch-range".into())
                .spawn_scoped(scope, work);
        }
        work();
    });
}

/// Inner chunks of one shard at most this far apart are fetched in one request...
pub const COALESCE_GAP: u64 = 1 << 20;
/// ...of at most this many bytes.
pub const COALESCE_MAX: u64 = 16 << 20;

/// Reads and decodes the index of shard `key` (read as `array` says), with the shard's strong
/// ETag where the store gives one and reads can be held to it ([`Store::matches_tags`]; a weak
/// one does not vouch for bytes, nor matches `If-Match`); `None` when the shard is absent.
fn load_index(
    array: &ShardedArray,
    store: &dyn Store,
    key: &str,
) -> Result<ShardIndexIfStored, FetchError> {
    let (len, at_start) = array.index_place();
    let matches = store.matches_tags();
    let fetched = if at_start {
        // The shard's size is not known: entries past its end show when read (truncated). Its
        // version is asked for only where later reads can be held to it: that may cost a
        // request of its own.
        if matches {
            let got = store.get_range_versioned(key, 0, len)?;
            got.map(|(b, meta)| (b, u64::MAX, meta.tag))
        } else {
            let got = store.get_range(key, 0, len)?;
            got.map(|b| (b, u64::MAX, None))
        }
    } else {
        let got = store.get_suffix(key, len)?;
        got.map(|(b, meta)| (b, meta.size, meta.tag))
    };
    let Some((encoded, size, tag)) = fetched else {
        return Ok(None);
    };
    let tag = tag.filter(|t| matches && !weak_etag(t));
    STATS.fetched(encoded.len());
    if (encoded.len() as u64) < len {
        let got = encoded.len() as u64;
        array.index_range(got.min(size))?;
        return Err(truncated(encoded.len(), len, 0));
    }
    let index = array
        .decode_index(&encoded, size)
        .map_err(|e| FetchError::from(e).context("index"))?;
    Ok(Some(Arc::new(StoredIndex { index, tag })))
}

fn truncated(got: usize, len: u64, start: u64) -> FetchError {
    FetchError::new(
        FetchCause::Corrupt,
        format!("truncated shard: {got} of {len} bytes at offset {start}"),
    )
}

/// Exactly `len` bytes of `key` from `start`, of the version whose ETag is `tag` if given, in
/// a spare buffer; fewer (a truncated shard) is an error.
fn read_exact(
    store: &dyn Store,
    (key, tag): (&str, Option<&str>),
    start: u64,
    len: u64,
) -> Result<Fetched, FetchError> {
    let fill = |buf: &mut Vec<u8>| store.get_range_into(key, start, len, tag, buf);
    let bytes = Fetched::with(len as usize, fill)?.ok_or_else(|| {
        FetchError::new(FetchCause::Store, "the shard disappeared while being read")
    })?;
    STATS.fetched(bytes.len());
    if bytes.len() as u64 != len {
        return Err(truncated(bytes.len(), len, start));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use crate::codec::sharding_testutil::{index, index_len, shard, spec};
    use crate::fetch::{
        ChunkReader, Encoded, FetchCause, FetchContext, FetchError, Loaded, ShardIndexIfStored,
        Uncached,
    };
    use crate::meta::{ArrayMeta, ChunkKeys, DataType, KeyStyle};
    use crate::store::{Layer, MemoryStore, Request, Store, StoreError};
    use parking_lot::{Condvar, Mutex};
    use serde_json::json;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// A memory store that records every read.
    #[derive(Default)]
    struct Recording {
        inner: MemoryStore,
        reads: Mutex<Vec<(String, u64, u64)>>,
    }

    impl Recording {
        fn take(&self) -> Vec<(String, u64, u64)> {
            std::mem::take(&mut self.reads.lock())
        }
    }

    impl Layer for Recording {
        type Step = ();

        fn inner(&self) -> Result<&dyn Store, StoreError> {
            Ok(&self.inner)
        }

        /// Records gets, ranges and suffixes as (key, start, length); a suffix of an absent
        /// object is not recorded.
        fn before(&self, request: &Request<'_>) -> Result<(), StoreError> {
            let read = match *request {
                Request::Get(key) => Some((key, 0, u64::MAX)),
                Request::Range { key, start, len } => Some((key, start, len)),
                Request::Suffix { key, len } => self.inner.head(key)?.map(|meta| {
                    let n = len.min(meta.size);
                    (key, meta.size - n, n)
                }),
                Request::Head(_) | Request::List(_) => None,
            };
            if let Some((key, start, len)) = read {
                self.reads.lock().push((key.into(), start, len));
            }
            Ok(())
        }
    }

    /// Keeps every shard index it is given, like the cache does.
    #[derive(Default)]
    struct Keeping(Mutex<HashMap<String, ShardIndexIfStored>>);

    impl FetchContext for Keeping {
        fn shard_index(
            &self,
            key: &str,
            load: &mut dyn FnMut() -> Result<ShardIndexIfStored, FetchError>,
        ) -> Result<ShardIndexIfStored, FetchError> {
            if let Some(index) = self.0.lock().get(key) {
                return Ok(index.clone());
            }
            let index = load()?;
            self.0.lock().insert(key.into(), index.clone());
            Ok(index)
        }
    }

    /// Element (y, x) of the 8×6 `u16` test array, as little-endian bytes of its 2×3 inner
    /// chunk at read-grid index (`ry`, `rx`).
    fn inner_chunk(ry: u64, rx: u64) -> Vec<u8> {
        (2 * ry..2 * ry + 2)
            .flat_map(|y| {
                (3 * rx..3 * rx + 3).flat_map(move |x| ((y * 100 + x) as u16).to_le_bytes())
            })
            .collect()
    }

    /// An 8×6 `u16` array in shards of 4×6 made of 2×3 inner chunks; shard `c/0/0` holds
    /// `chunks` (C order), shard `c/1/0` is absent.
    fn reader(
        chunks: &[Option<Vec<u8>>],
        at_start: bool,
        stored: impl FnOnce(Vec<u8>) -> Vec<u8>,
    ) -> (ChunkReader, Arc<Recording>) {
        let mut store = Recording::default();
        store
            .inner
            .insert("arr/c/0/0", stored(shard(chunks, at_start)));
        let store = Arc::new(store);
        (reader_over(store.clone(), at_start), store)
    }

    /// The array of [`reader`] over `store`.
    fn reader_over(store: Arc<dyn Store>, at_start: bool) -> ChunkReader {
        let meta = ArrayMeta {
            shape: vec![8, 6],
            chunk_shape: vec![4, 6],
            grid: crate::meta::ChunkGrid::Regular,
            dtype: DataType::UInt(2),
            fill_value: vec![7, 0],
            codecs: vec![spec(&[2, 3], json!(["bytes"]), at_start)],
            chunk_keys: ChunkKeys {
                prefix: "arr/".into(),
                style: KeyStyle::Default,
                separator: '/',
            },
        };
        ChunkReader::new(store, "arr", Arc::new(meta)).unwrap()
    }

    fn full_shard() -> Vec<Option<Vec<u8>>> {
        [(0, 0), (0, 1), (1, 0), (1, 1)]
            .iter()
            .map(|&(y, x)| Some(inner_chunk(y, x)))
            .collect()
    }

    /// Read chunk `idx` loaded into a buffer of its own; `None` when absent.
    fn load(
        reader: &ChunkReader,
        idx: &[u64],
        encoded: Option<Encoded>,
        ctx: &dyn FetchContext,
    ) -> Result<Option<Vec<u8>>, FetchError> {
        let mut out = Vec::new();
        let loaded = reader.load(idx, encoded, &mut out, ctx)?;
        Ok((loaded == Loaded::Decoded).then_some(out))
    }

    /// The answers of [`ChunkReader::fetch`] of `idxs`, in their order.
    fn fetch_all(
        reader: &ChunkReader,
        idxs: &[Vec<u64>],
        ctx: &dyn FetchContext,
    ) -> Vec<Result<Option<Encoded>, FetchError>> {
        let got: Vec<Mutex<Option<_>>> = idxs.iter().map(|_| Mutex::new(None)).collect();
        reader.fetch(idxs, ctx, &|at, answer| *got[at].lock() = Some(answer));
        got.into_iter()
            .map(|g| g.into_inner().expect("every chunk answered"))
            .collect()
    }

    /// Fetches `idxs` through `ctx` and checks that each decodes to the inner chunk written
    /// there.
    fn assert_fetched_as_written(reader: &ChunkReader, idxs: &[Vec<u64>], ctx: &dyn FetchContext) {
        for (idx, got) in idxs.iter().zip(fetch_all(reader, idxs, ctx)) {
            let encoded = got.unwrap().expect("fetched");
            let decoded = load(reader, idx, Some(encoded), &Uncached).unwrap();
            assert_eq!(decoded, Some(inner_chunk(idx[0], idx[1])), "{idx:?}");
        }
    }

    #[test]
    fn reads_only_the_index_once_and_the_inner_chunks_asked_for() {
        for at_start in [false, true] {
            let (reader, store) = reader(&full_shard(), at_start, |s| s);
            assert_eq!(reader.read_chunk_shape(), &[2, 3]);
            let size = (index_len(4) + 4 * 12) as u64;
            let (index_at, data_at) = if at_start { (0, 68) } else { (size - 68, 0) };
            let ctx = Keeping::default();
            let data = load(&reader, &[0, 1], None, &ctx).unwrap().unwrap();
            assert_eq!(*data, inner_chunk(0, 1));
            let key = "arr/c/0/0".to_string();
            assert_eq!(
                store.take(),
                vec![(key.clone(), index_at, 68), (key.clone(), data_at + 12, 12)]
            );
            assert_eq!(
                load(&reader, &[1, 0], None, &ctx).unwrap().unwrap(),
                inner_chunk(1, 0)
            );
            assert_eq!(
                store.take(),
                vec![(key, data_at + 24, 12)],
                "the index is cached"
            );
            assert_eq!(load(&reader, &[3, 1], None, &ctx), Ok(None), "absent shard");
            // One request finds it absent (a suffix read starts with `head`, not recorded).
            let absent = "arr/c/1/0".to_string();
            let expected = if at_start {
                vec![(absent, 0, 68)]
            } else {
                vec![]
            };
            assert_eq!(store.take(), expected);
        }
    }

    #[test]
    fn nearby_inner_chunks_are_fetched_in_one_request_and_decode_as_loaded_alone() {
        // Inner chunks 0, 1 and 3 of the shard (2 absent): one request from the first to the
        // last, the gap included; each decodes to its own bytes.
        let mut chunks = full_shard();
        chunks[2] = None;
        let (reader, store) = reader(&chunks, false, |s| s);
        let ctx = Keeping::default();
        let idxs = vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1], vec![3, 0]];
        let fetched = fetch_all(&reader, &idxs, &ctx);
        let reads = store.take();
        assert_eq!(reads.len(), 2, "the index, then one range: {reads:?}");
        assert_eq!((reads[1].1, reads[1].2), (0, 36), "{reads:?}");
        let expected = [
            Some(inner_chunk(0, 0)),
            Some(inner_chunk(0, 1)),
            None,
            Some(inner_chunk(1, 1)),
            None,
        ];
        for ((idx, got), want) in idxs.iter().zip(fetched).zip(expected) {
            let encoded = got.unwrap().expect("fetched apart");
            let decoded = load(&reader, idx, Some(encoded), &Uncached).unwrap();
            assert_eq!(decoded, want, "{idx:?}");
        }
        assert_eq!(
            store.take(),
            vec![],
            "decoding fetched bytes makes no request"
        );
    }

    /// A memory store whose ranged reads each wait until two are in flight together; one
    /// left alone fails after 10 s.
    #[derive(Default)]
    struct Pairing {
        inner: MemoryStore,
        arrived: Mutex<usize>,
        both: Condvar,
    }

    impl Layer for Pairing {
        type Step = ();

        fn inner(&self) -> Result<&dyn Store, StoreError> {
            Ok(&self.inner)
        }

        fn before(&self, request: &Request<'_>) -> Result<(), StoreError> {
            if !matches!(request, Request::Range { .. }) {
                return Ok(());
            }
            let mut arrived = self.arrived.lock();
            *arrived += 1;
            self.both.notify_all();
            let deadline = Instant::now() + Duration::from_secs(10);
            while *arrived < 2 {
                if self.both.wait_until(&mut arrived, deadline).timed_out() {
                    return Err(StoreError::Invalid(
                        "ranged reads made one at a time".into(),
                    ));
                }
            }
            Ok(())
        }
    }

    #[test]
    fn ranged_reads_of_one_batch_are_in_flight_together() {
        // One inner chunk in each of the two shards: two requests, made at once.
        let mut store = Pairing::default();
        let shard_of = |rows: [u64; 2]| {
            let chunks: Vec<_> = rows
                .iter()
                .flat_map(|&y| [Some(inner_chunk(y, 0)), Some(inner_chunk(y, 1))])
                .collect();
            shard(&chunks, false)
        };
        store.inner.insert("arr/c/0/0", shard_of([0, 1]));
        store.inner.insert("arr/c/1/0", shard_of([2, 3]));
        let reader = reader_over(Arc::new(store), false);
        assert_fetched_as_written(&reader, &[vec![0, 1], vec![3, 0]], &Keeping::default());
    }

    /// A memory store whose ranged reads of shard `arr/c/1/0` wait until `go` (5 s at most,
    /// then counted in `gave_up`).
    #[derive(Default)]
    struct Gated {
        inner: MemoryStore,
        go: Mutex<bool>,
        opened: Condvar,
        gave_up: std::sync::atomic::AtomicU32,
    }

    impl Layer for Gated {
        type Step = ();

        fn inner(&self) -> Result<&dyn Store, StoreError> {
            Ok(&self.inner)
        }

        fn before(&self, request: &Request<'_>) -> Result<(), StoreError> {
            if !matches!(
                request,
                Request::Range {
                    key: "arr/c/1/0",
                    ..
                }
            ) {
                return Ok(());
            }
            let mut go = self.go.lock();
            let deadline = Instant::now() + Duration::from_secs(5);
            while !*go {
                if self.opened.wait_until(&mut go, deadline).timed_out() {
                    self.gave_up
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    break;
                }
            }
            Ok(())
        }
    }

    #[test]
    fn each_run_is_handed_out_as_soon_as_it_is_in() {
        // One inner chunk in each of two shards: two runs. The second waits until the first
        // chunk is handed out, which must not wait for the second.
        let mut store = Gated::default();
        for (key, rows) in [("arr/c/0/0", [0, 1]), ("arr/c/1/0", [2, 3])] {
            let chunks: Vec<_> = rows
                .iter()
                .flat_map(|&y| [Some(inner_chunk(y, 0)), Some(inner_chunk(y, 1))])
                .collect();
            store.inner.insert(key, shard(&chunks, false));
        }
        let store = Arc::new(store);
        let reader = reader_over(store.clone(), false);
        let idxs = vec![vec![0, 1], vec![3, 0]];
        let got: Vec<Mutex<Option<Vec<u8>>>> = idxs.iter().map(|_| Mutex::new(None)).collect();
        reader.fetch(&idxs, &Keeping::default(), &|at, answer| {
            let encoded = answer.unwrap().expect("fetched");
            let decoded = load(&reader, &idxs[at], Some(encoded), &Uncached).unwrap();
            *got[at].lock() = decoded;
            if at == 0 {
                *store.go.lock() = true;
                store.opened.notify_all();
            }
        });
        assert_eq!(store.gave_up.load(std::sync::atomic::Ordering::Relaxed), 0);
        for (idx, got) in idxs.iter().zip(got) {
            assert_eq!(got.into_inner(), Some(inner_chunk(idx[0], idx[1])));
        }
    }

    /// Keeps shard indexes, and counts the bytes in flight.
    #[derive(Default)]
    struct Carrying {
        keeping: Keeping,
        now: std::sync::atomic::AtomicU64,
    }

    impl FetchContext for Carrying {
        fn shard_index(
            &self,
            key: &str,
            load: &mut dyn FnMut() -> Result<ShardIndexIfStored, FetchError>,
        ) -> Result<ShardIndexIfStored, FetchError> {
            self.keeping.shard_index(key, load)
        }

        fn carry(&self, bytes: u64) {
            self.now
                .fetch_add(bytes, std::sync::atomic::Ordering::SeqCst);
        }

        fn carried(&self, bytes: u64) {
            self.now
                .fetch_sub(bytes, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn each_run_counts_in_flight_whole_until_its_chunks_are_handed_out() {
        // Inner chunks 0 and 3 of shard c/0/0 (12 bytes each, 24 bytes apart): one run of 48
        // bytes. Inner chunk 0 of shard c/1/0: a run of 12, which waits until the first run is
        // handed out.
        let mut store = Gated::default();
        for key in ["arr/c/0/0", "arr/c/1/0"] {
            store.inner.insert(key, shard(&full_shard(), false));
        }
        let store = Arc::new(store);
        let reader = reader_over(store.clone(), false);
        let ctx = Carrying::default();
        let idxs = vec![vec![0, 0], vec![1, 1], vec![2, 0]];
        let seen: Vec<Mutex<u64>> = idxs.iter().map(|_| Mutex::new(0)).collect();
        reader.fetch(&idxs, &ctx, &|at, answer| {
            assert!(answer.unwrap().is_some(), "chunk {at}");
            *seen[at].lock() = ctx.now.load(std::sync::atomic::Ordering::SeqCst);
            if at == 1 {
                *store.go.lock() = true;
                store.opened.notify_all();
            }
        });
        let seen: Vec<u64> = seen.into_iter().map(Mutex::into_inner).collect();
        assert!(
            seen[0] >= 48 && seen[1] >= 48,
            "the gap counts too: {seen:?}"
        );
        assert_eq!(seen[2], 12, "the first run was let go when handed out");
        assert_eq!(ctx.now.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    /// A memory store that reads ranges of a version as a remote one does (`If-Match`), where
    /// `matches`: such a read answers [`StoreError::Changed`] when the value is another one now,
    /// or always where `refuses` (its own ETags too). Elsewhere it keeps no versions; a range
    /// with its version is read the trait's way then (the range, then a head), as local stores
    /// read it. Reads of a version, suffix reads (shard indexes) and heads are counted.
    #[derive(Default)]
    struct Versioned {
        inner: MemoryStore,
        matches: bool,
        refuses: bool,
        tagged: AtomicU32,
        suffixes: AtomicU32,
        heads: AtomicU32,
    }

    impl Versioned {
        /// A store holding `bytes` at the shard key `arr/c/0/0`, holding reads to versions.
        fn matching(bytes: Vec<u8>) -> Self {
            let mut store = Versioned {
                matches: true,
                ..Versioned::default()
            };
            store.inner.insert("arr/c/0/0", bytes);
            store
        }
    }

    impl Store for Versioned {
        fn get_bounded(
            &self,
            key: &str,
            max: u64,
        ) -> Result<Option<crate::store::Object>, StoreError> {
            self.inner.get_bounded(key, max)
        }

        fn get_range(
            &self,
            key: &str,
            start: u64,
            len: u64,
        ) -> Result<Option<Vec<u8>>, StoreError> {
            self.inner.get_range(key, start, len)
        }

        fn get_range_into(
            &self,
            key: &str,
            start: u64,
            len: u64,
            tag: Option<&str>,
            buf: &mut Vec<u8>,
        ) -> Result<bool, StoreError> {
            if let Some(tag) = tag.filter(|_| self.matches) {
                self.tagged.fetch_add(1, Ordering::Relaxed);
                let now = self.inner.head(key)?.and_then(|meta| meta.tag);
                if self.refuses || now.is_some_and(|now| now != tag) {
                    let what = key.to_string();
                    return Err(StoreError::Changed { what });
                }
            }
            self.inner.get_range_into(key, start, len, None, buf)
        }

        fn get_suffix(
            &self,
            key: &str,
            len: u64,
        ) -> Result<Option<(Vec<u8>, crate::store::ObjectMeta)>, StoreError> {
            self.suffixes.fetch_add(1, Ordering::Relaxed);
            self.inner.get_suffix(key, len)
        }

        fn matches_tags(&self) -> bool {
            self.matches
        }

        fn head(&self, key: &str) -> Result<Option<crate::store::ObjectMeta>, StoreError> {
            self.heads.fetch_add(1, Ordering::Relaxed);
            self.inner.head(key)
        }

        fn list_dir(&self, prefix: &str) -> Result<Vec<crate::store::Entry>, StoreError> {
            self.inner.list_dir(prefix)
        }

        fn mtime(&self) -> std::time::SystemTime {
            self.inner.mtime()
        }

        fn describe(&self) -> String {
            "versioned memory".into()
        }
    }

    /// Hands out `first` for the first index asked for, then keeps those it loads: another
    /// reader replaced the kept index between two lookups.
    struct Swapping {
        first: Mutex<Option<ShardIndexIfStored>>,
        keeping: Keeping,
    }

    impl FetchContext for Swapping {
        fn shard_index(
            &self,
            key: &str,
            load: &mut dyn FnMut() -> Result<ShardIndexIfStored, FetchError>,
        ) -> Result<ShardIndexIfStored, FetchError> {
            match self.first.lock().take() {
                Some(first) => Ok(first),
                None => self.keeping.shard_index(key, load),
            }
        }

        fn forget_shard_index(&self, key: &str, _stale: &Arc<crate::fetch::StoredIndex>) {
            self.keeping.0.lock().remove(key);
        }
    }

    #[test]
    fn a_batch_reads_each_shard_through_one_index_even_if_the_kept_one_is_replaced() {
        // Version A of the shard holds its inner chunks last to first, version B (stored now)
        // first to last. The batch's first chunk sees A's index, which then gives way to B's:
        // its chunks must not be cut at A's offsets out of B's bytes.
        let chunks = full_shard();
        let mut old = Vec::new();
        let mut entries = vec![(0, 0); 4];
        for (i, chunk) in chunks.iter().enumerate().rev() {
            let chunk = chunk.as_ref().unwrap();
            entries[i] = (old.len() as u64, chunk.len() as u64);
            old.extend_from_slice(chunk);
        }
        old.extend(index(&entries));
        let before = Versioned::matching(old);
        let keeping = Keeping::default();
        let reader = reader_over(Arc::new(before), false);
        let got = load(&reader, &[0, 0], None, &keeping).unwrap();
        assert_eq!(got, Some(inner_chunk(0, 0)));
        let first = keeping.0.lock().remove("arr/c/0/0").unwrap();
        assert!(first.as_ref().unwrap().tag.is_some());

        let now = Versioned::matching(shard(&chunks, false));
        let reader = reader_over(Arc::new(now), false);
        let ctx = Swapping {
            first: Mutex::new(Some(first)),
            keeping: Keeping::default(),
        };
        assert_fetched_as_written(&reader, &[vec![0, 0], vec![0, 1]], &ctx);
    }

    #[test]
    fn a_server_refusing_its_own_etag_is_read_without_it_after_one_index_read_again() {
        let store = Arc::new(Versioned {
            refuses: true,
            ..Versioned::matching(shard(&full_shard(), false))
        });
        let reader = reader_over(store.clone(), false);
        let ctx = Swapping {
            first: Mutex::new(None),
            keeping: Keeping::default(),
        };
        let count = |n: &AtomicU32| n.load(Ordering::Relaxed);
        for round in 0..2 {
            assert_fetched_as_written(&reader, &[vec![0, 0], vec![1, 1]], &ctx);
            // Refused with the index read first, then with the same ETag read again; no more.
            assert_eq!(
                (count(&store.tagged), count(&store.suffixes)),
                (2, 2),
                "{round}"
            );
        }
    }

    #[test]
    fn an_index_at_the_start_costs_one_request_where_reads_keep_no_version() {
        for matches in [false, true] {
            let store = Arc::new(Versioned {
                matches,
                ..Versioned::matching(shard(&full_shard(), true))
            });
            let tag = store.inner.head("arr/c/0/0").unwrap().unwrap().tag;
            assert!(tag.is_some());
            let reader = reader_over(store.clone(), true);
            let ctx = Keeping::default();
            let got = load(&reader, &[0, 1], None, &ctx).unwrap();
            assert_eq!(got, Some(inner_chunk(0, 1)), "{matches}");
            // Without versions the index is read alone; with them, the version it was read
            // from is kept for the inner chunks' reads.
            let kept = ctx.0.lock()["arr/c/0/0"].as_ref().unwrap().tag.clone();
            let heads = store.heads.load(Ordering::Relaxed);
            match matches {
                false => assert_eq!((heads, kept), (0, None)),
                true => assert_eq!((heads, kept), (1, tag)),
            }
        }
    }

    #[test]
    fn an_index_at_the_start_reaching_past_the_end_fails_at_the_read() {
        let past = |mut s: Vec<u8>| {
            let entries = [(68, 12), (80, 12), (92, 12), (104, 100)];
            s.splice(0..68, index(&entries));
            s
        };
        let (reader, _) = reader(&full_shard(), true, past);
        assert_eq!(
            load(&reader, &[0, 0], None, &Uncached).unwrap().unwrap(),
            inner_chunk(0, 0)
        );
        let err = load(&reader, &[1, 1], None, &Uncached).unwrap_err();
        assert_eq!(err.cause, FetchCause::Corrupt);
        assert!(err.message.contains("truncated shard"), "{err}");
    }

    #[test]
    fn missing_inner_chunks_read_as_fill() {
        let mut chunks = full_shard();
        chunks[2] = None;
        let (reader, _) = reader(&chunks, false, |s| s);
        assert_eq!(load(&reader, &[1, 0], None, &Uncached), Ok(None));
        assert_eq!(
            load(&reader, &[1, 1], None, &Uncached).unwrap().unwrap(),
            inner_chunk(1, 1)
        );
    }

    #[test]
    fn damaged_shards_are_errors_naming_array_shard_and_cause() {
        fn with_index(mut shard: Vec<u8>, entries: &[(u64, u64)]) -> Vec<u8> {
            shard.truncate(shard.len() - 68);
            shard.extend(index(entries));
            shard
        }
        type Damage = fn(Vec<u8>) -> Vec<u8>;
        let cases: [(&str, Damage); 4] = [
            ("crc32c", |mut s| {
                s[50] ^= 1;
                s
            }),
            ("past the end", |s| {
                with_index(s, &[(0, 12), (12, 12), (24, 12), (36, 1 << 40)])
            }),
            ("shorter than its 68-byte index", |s| s[..40].to_vec()),
            ("inner chunk 1: bytes", |s| {
                with_index(s, &[(0, 12), (12, 11), (24, 12), (36, 12)])
            }),
        ];
        for (expected, damage) in cases {
            let (reader, _) = reader(&full_shard(), false, damage);
            let err = load(&reader, &[0, 1], None, &Uncached)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("arr: shard arr/c/0/0: "), "{err}");
            assert!(err.contains(expected), "{err}");
        }
    }
}
