//! Reading ahead, in one place: which chunks a reader will need next ([`ReaderState`], from its
//! reads so far and the chunk grid), how far ahead and with how many requests in flight
//! ([`ReadPolicy`], from what the store says it is), the one record of queued and loading chunks
//! ([`Ledger`]: a chunk is never queued twice, and a reader never waits behind other work), and
//! the workers ([`ReadAhead`]).
//!
//! Fetching is apart from decoding: fetchers wait on the store, as many at once as the store is
//! worth (dozens for object storage) and as the bytes in flight allow, and hand what they fetched
//! to decoders, one per core; each finished fetch lets the next queued chunk start, and queues
//! the next chunks of its reader's window ([`Continuation`]), without waiting for a reader. For
//! a local store fetching costs little more than the bytes it moves, so a fetcher decodes what
//! it fetched itself.

mod drop_behind;
mod ledger;
mod policy;
mod stream;

pub use ledger::{Continuation, Ledger, Reading};
pub use policy::{ReadPolicy, ReaderState};
pub use stream::Prediction;

use super::{ChunkCache, ChunkId};
use crate::fetch::{Encoded, FetchError, Landed};
use crate::stats::{add, STATS};
use parking_lot::Mutex;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// One array's chunks, as the read-ahead loads them.
pub trait Source: Send + Sync {
    /// Fetches the stored bytes of chunks `indexes` without decoding them (waiting on the
    /// store; nearby chunks of one group in one request), handing each chunk's answer to
    /// `landed` as soon as it is in, by its position in `indexes`: `Ok(None)` when the array
    /// fetches and decodes in one step. Shard indexes are kept in `cache`.
    fn fetch(&self, cache: &ChunkCache, indexes: &[u64], landed: Landed<'_, Option<Encoded>>);

    /// Chunks of one array with the same group (a shard) are worth fetching together; `None`:
    /// each alone.
    fn group(&self, index: u64) -> Option<u64> {
        let _ = index;
        None
    }

    /// Loads chunk `index` into `cache`, decoding `encoded` when given (else fetching it too).
    /// Errors are left for the reader of the chunk to meet (and report).
    fn load(&self, cache: &ChunkCache, index: u64, encoded: Option<Encoded>);
}

/// One chunk to load ahead.
pub struct Job {
    /// The chunk.
    pub id: ChunkId,
    /// Bytes it takes while fetched and not yet decoded (counted against the bytes in flight).
    pub bytes: u64,
    /// Where it comes from.
    pub source: Arc<dyn Source>,
    /// False for other work on the chunk ([`Job::run`]), which readers of the chunk neither
    /// take over nor wait for.
    claimable: bool,
    /// The reader's prediction this chunk belongs to: when its fetch is over, the next chunks
    /// of it are queued.
    then: Option<Arc<Continuation>>,
}

/// What the ledger files a job under: its chunk, and whether it loads the chunk into the cache
/// (readers may claim it) or does other work with it.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
struct Key {
    id: ChunkId,
    claimable: bool,
}

impl Key {
    /// The key of a job loading chunk `id` into the cache ([`Job::chunk`]).
    fn chunk(id: ChunkId) -> Self {
        Key {
            id,
            claimable: true,
        }
    }
}

impl Job {
    /// A job loading chunk `id` of `source` into the cache.
    pub fn chunk(id: ChunkId, bytes: u64, source: Arc<dyn Source>) -> Self {
        Job {
            id,
            bytes,
            source,
            claimable: true,
            then: None,
        }
    }

    /// This job, as a chunk of a reader's prediction that goes on with `then`.
    pub fn then(self, then: Arc<Continuation>) -> Self {
        Job {
            then: Some(then),
            ..self
        }
    }

    /// A job that runs `run` (fetching and decoding in one step) for chunk `id`: other work
    /// than loading it into the cache, e.g. filling a selection's buffer from it (which may
    /// itself load the chunk: readers of the chunk do not wait for this job).
    pub fn run(id: ChunkId, bytes: u64, run: impl FnOnce() + Send + 'static) -> Self {
        Job {
            id,
            bytes,
            source: Arc::new(Run(Mutex::new(Some(Box::new(run))))),
            claimable: false,
            then: None,
        }
    }

    fn key(&self) -> Key {
        Key {
            id: self.id,
            claimable: self.claimable,
        }
    }
}

/// The [`Source`] of [`Job::run`]: runs its work once.
struct Run(Mutex<Option<Box<dyn FnOnce() + Send>>>);

impl Source for Run {
    fn fetch(&self, _cache: &ChunkCache, indexes: &[u64], landed: Landed<'_, Option<Encoded>>) {
        (0..indexes.len()).for_each(|at| landed(at, Ok(None)));
    }

    fn load(&self, _cache: &ChunkCache, _index: u64, _encoded: Option<Encoded>) {
        let run = self.0.lock().take();
        if let Some(run) = run {
            run();
        }
    }
}

/// How much read-ahead work runs at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Fetches in flight at most.
    pub fetchers: usize,
    /// Threads decoding what was fetched (0: each fetcher decodes what it fetched).
    pub decoders: usize,
    /// Bytes of chunks fetched or being fetched and not yet decoded, at most (one chunk always
    /// may be).
    pub bytes_in_flight: u64,
}

/// The read-ahead workers of one mount.
pub struct ReadAhead {
    cache: Arc<ChunkCache>,
    /// The generation of its workers (see [`Ledger::begin`]).
    generation: u64,
}

impl ReadAhead {
    /// Starts the workers `limits` asks for, loading into `cache` (whose [`Ledger`] they work
    /// from); the workers of a read-ahead started before on `cache` leave.
    pub fn start(cache: Arc<ChunkCache>, limits: Limits) -> Self {
        let generation = cache.ledger().begin();
        for i in 0..limits.fetchers.max(1) {
            let cache = cache.clone();
            let _ = std::thread::Builder::new()
                .name(format!("fetch-{i}"))
                .spawn(move || fetcher(&cache, &limits, generation));
        }
        for i in 0..limits.decoders {
            let cache = cache.clone();
            let _ = std::thread::Builder::new()
                .name(format!("decode-{i}"))
                .spawn(move || decoder(&cache, generation));
        }
        ReadAhead { cache, generation }
    }

    /// Queues `job` at the back unless its chunk is cached, queued or loading already; false
    /// when the queue is full and refused it.
    pub fn submit(&self, job: Job) -> bool {
        self.queue(job, false)
    }

    /// Queues `job` like [`ReadAhead::submit`] but at the front: a read waits for it.
    pub fn submit_urgent(&self, job: Job) {
        self.queue(job, true);
    }

    /// The continuation of reader `reader`'s prediction (see [`Continuation`]).
    pub fn continuation(&self, reader: u64) -> Arc<Continuation> {
        self.cache.ledger().continuation(reader)
    }

    /// Reader `reader` is gone: nothing more of its prediction is queued.
    pub fn forget(&self, reader: u64) {
        self.cache.ledger().forget(reader);
    }

    fn queue(&self, job: Job, urgent: bool) -> bool {
        let cache = &self.cache;
        let queued = cache.ledger().queue(job, urgent, |id| cache.contains(id));
        !matches!(queued, ledger::Queued::Full(_))
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        self.cache.ledger().close(self.generation);
    }
}

/// How many chunks of a reader's prediction a finished fetch of one of them queues: two, so the
/// chunks in flight double every round trip until the window or the bytes in flight bound them.
const NEXT_PER_FETCH: usize = 2;

/// A fetch of a chunk of `then` is over: queues its next chunks (ones cached or queued already
/// are passed over, never queued twice).
fn go_on(cache: &ChunkCache, then: &Arc<Continuation>) {
    then.queue_next(cache.ledger(), NEXT_PER_FETCH, |id| cache.contains(id));
}

/// Tells the ledger a job is done with when dropped, also when a load panics.
struct Done<'a> {
    cache: &'a ChunkCache,
    key: Key,
}

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.cache.ledger().done(self.key);
        if self.cache.contains(self.key.id) {
            self.cache.mark_prefetched(self.key.id);
        }
    }
}

fn fetcher(cache: &ChunkCache, limits: &Limits, generation: u64) {
    while let Some(batch) = cache.ledger().next_fetch(limits, generation) {
        add(&STATS.counters.prefetch_loads, batch.len() as u64);
        let source = batch[0].source.clone();
        let indexes: Vec<u64> = batch.iter().map(|job| job.id.index).collect();
        let jobs: Vec<Mutex<Option<Job>>> =
            batch.into_iter().map(|j| Mutex::new(Some(j))).collect();
        // Each chunk goes on as soon as its request is answered, whatever the rest of the batch.
        let landed = |at: usize, got: Result<Option<Encoded>, FetchError>| {
            if let Some(job) = jobs.get(at).and_then(|job| job.lock().take()) {
                land(cache, limits, job, got);
            }
        };
        if catch_unwind(AssertUnwindSafe(|| source.fetch(cache, &indexes, &landed))).is_err() {
            log::debug!("read-ahead: a fetch panicked");
        }
        // A chunk the fetch did not answer for is given up: its readers load it themselves.
        for job in jobs.into_iter().filter_map(Mutex::into_inner) {
            let lost = FetchError::new(crate::fetch::FetchCause::Panicked, "not fetched");
            land(cache, limits, job, Err(lost));
        }
    }
}

/// The fetch of `job` is over with `got`: the next chunks of its reader's prediction are
/// queued, and the chunk goes to the decoders or is loaded here (see [`Ledger::fetched`]).
fn land(cache: &ChunkCache, limits: &Limits, job: Job, got: Result<Option<Encoded>, FetchError>) {
    let done = Done {
        cache,
        key: job.key(),
    };
    if let Some(then) = &job.then {
        go_on(cache, then);
    }
    let encoded = match got {
        Ok(encoded) => encoded,
        Err(e) => {
            log::debug!("read-ahead: {e}");
            return;
        }
    };
    match cache.ledger().fetched(job, encoded, limits.decoders > 0) {
        Some((job, encoded)) => {
            let _ = catch_unwind(AssertUnwindSafe(|| {
                job.source.load(cache, job.id.index, encoded)
            }));
        }
        // The decoders have it now.
        None => std::mem::forget(done),
    }
}

fn decoder(cache: &ChunkCache, generation: u64) {
    while let Some((job, encoded)) = cache.ledger().next_decode(generation) {
        let _done = Done {
            cache,
            key: job.key(),
        };
        let _ = catch_unwind(AssertUnwindSafe(|| {
            job.source.load(cache, job.id.index, Some(encoded))
        }));
    }
}
